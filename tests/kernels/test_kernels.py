"""Compiled kernels against the NumPy reference; thread-count independence."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features, median_lengthscale
from dynosed_sym.assembly.stein import assemble_global
from dynosed_sym.data.sources import iter_blocks
from dynosed_sym.reference import drift_reference, stein_system_reference

RTOL = 1e-10


def assert_rel_close(got, ref, rtol=RTOL, what=""):
    """max |got − ref| ≤ rtol · max |ref| (relative to the largest entry)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    scale = np.abs(ref).max()
    err = np.abs(got - ref).max()
    assert np.isfinite(err) and err <= rtol * scale, (
        f"{what}: max abs error {err:.3g} > {rtol:g} × max |ref| = {rtol * scale:.3g}"
    )


def global_system(cm, X, m, ell, seed, n_blocks=7):
    feats = draw_features(cm.model.d, m, ell, seed=seed)
    A, b, A_blocks, b_blocks, counts = assemble_global(
        cm, iter_blocks(X, cm.model, n_blocks=n_blocks), feats
    )
    return feats, A, b, A_blocks, b_blocks, counts


# --------------------------------------------------------------------------- drift
def test_drift_vs_reference(model, cmodel, model_points):
    X = model_points(model, 1003, seed=1)
    rng = np.random.default_rng(2)
    for theta in (model.nominal, model.nominal + rng.standard_normal(model.n)):
        assert_rel_close(cmodel.drift(X, theta), drift_reference(model, X, theta), what="drift")


def test_drift_theta_as_dict_matches_array(models, compiled):
    m = models["lorenz"]
    X = np.random.default_rng(0).standard_normal((10, 3))
    th = m.theta_vector({"sigma": 1.0, "rho": 2.0, "beta": 3.0})
    np.testing.assert_array_equal(
        compiled["lorenz"].drift(X, th), compiled["lorenz"].drift(X, [1.0, 2.0, 3.0])
    )


# --------------------------------------------------------------------------- A, b
@pytest.mark.parametrize("N, m", [(1003, 300), (37, 128)])
def test_global_system_vs_reference(model, cmodel, model_points, N, m):
    """A, b of the compiled fill agree with the NumPy formulas of docs/method.md §2 to 1e-10
    relative.

    N not a multiple of the sample tile and m not a multiple of the feature block exercise
    the remainder paths; several data blocks exercise the accumulation over blocks.
    """
    X = model_points(model, N, seed=5)
    ell = median_lengthscale(X, seed=0)
    feats, A, b, A_blocks, b_blocks, counts = global_system(cmodel, X, m, ell, seed=9)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    assert A.shape == (m, model.n) and b.shape == (m,)
    assert_rel_close(A, A_ref, what=f"A ({model.name})")
    assert_rel_close(b, b_ref, what=f"b ({model.name})")
    # per-block systems are the means over their blocks
    assert counts.sum() == N
    edges = np.concatenate([[0], np.cumsum(counts)])
    for blk in (0, len(counts) - 1):
        Ab_ref, bb_ref = stein_system_reference(
            model, X[edges[blk] : edges[blk + 1]], feats.omega, feats.phase
        )
        assert_rel_close(A_blocks[blk], Ab_ref, what="A block")
        assert_rel_close(b_blocks[blk], bb_ref, what="b block")
    # the total is the count-weighted mean of the blocks
    assert_rel_close(np.tensordot(counts / N, A_blocks, axes=1), A, rtol=1e-12, what="block mean")


def test_global_system_default_features_lorenz(models, compiled):
    """The default m = 2048 on simulated Lorenz data, with the median length scale."""
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 500, seed=3)
    ell = median_lengthscale(X, seed=0)
    feats, A, b, *_ = global_system(compiled["lorenz"], X, 2048, ell, seed=0)
    A_ref, b_ref = stein_system_reference(m, X, feats.omega, feats.phase)
    assert_rel_close(A, A_ref, what="A")
    assert_rel_close(b, b_ref, what="b")


def test_fit_uses_the_same_system(models):
    """fit_global's A, b are the assembled system for its bandwidth and seed."""
    m = models["limit_cycle"]
    X = 1.2 * np.random.default_rng(4).standard_normal((400, 2))
    fit = ds.fit_global(m, X, features=ds.Features(n_features=256, bandwidth=0.7, seed=5))
    feats = draw_features(2, 256, 0.7, seed=5)
    A_ref, b_ref = stein_system_reference(m, X, feats.omega, feats.phase)
    assert_rel_close(fit.A, A_ref, what="fit.A")
    assert_rel_close(fit.b, b_ref, what="fit.b")


def test_state_dependent_diffusion_system(tmp_path):
    """A state-dependent, non-diagonal D goes through the cos factors and the tables correctly."""
    x, y = sp.symbols("x y", real=True)
    a, c = sp.symbols("a c", real=True)
    m = ds.SDEModel(
        [x, y],
        [a, c],
        [a * x - x**3 + y / 3, c * y - y**3],
        diffusion=sp.Matrix(
            [
                [sp.Rational(1, 5) * (1 + x**2), x * y / 20],
                [x * y / 20, sp.Rational(1, 10) + sp.sin(y) ** 2],
            ]
        ),
        name="sd_full",
    )
    cm = ds.compile_model(m, str(tmp_path))
    X = np.random.default_rng(1).standard_normal((501, 2))
    feats, A, b, *_ = global_system(cm, X, 200, 1.0, seed=2)
    A_ref, b_ref = stein_system_reference(m, X, feats.omega, feats.phase)
    assert_rel_close(A, A_ref, what="A")
    assert_rel_close(b, b_ref, what="b")


# every function SDEModel accepts (model.SUPPORTED_FUNCTIONS), in a bounded, well-defined use
_x = sp.Symbol("x", real=True)
SUPPORTED_USES = {
    "sin": sp.sin(_x),
    "cos": sp.cos(_x),
    "tan": sp.tan(_x / 4),
    "asin": sp.asin(_x / 10),
    "acos": sp.acos(_x / 10),
    "atan": sp.atan(_x),
    "atan2": sp.atan2(_x, 2),
    "sinh": sp.sinh(_x / 2),
    "cosh": sp.cosh(_x / 2),
    "tanh": sp.tanh(_x),
    "asinh": sp.asinh(_x),
    "acosh": sp.acosh(2 + _x**2),
    "atanh": sp.atanh(_x / 10),
    "exp": sp.exp(-(_x**2)),
    "log": sp.log(1 + _x**2),
    "erf": sp.erf(_x),
    "erfc": sp.erfc(_x),
    "Abs": sp.Abs(_x),
    "sign": sp.sign(_x),
    "floor": sp.floor(_x),
    "ceiling": sp.ceiling(_x),
    "Min": sp.Min(_x, 1),
    "Max": sp.Max(_x, -1),
    "Heaviside": sp.Heaviside(_x),
}


def test_supported_function_list_is_covered():
    from dynosed_sym.model import SUPPORTED_FUNCTIONS

    assert {f.__name__ for f in SUPPORTED_FUNCTIONS} == set(SUPPORTED_USES)


def _fn_model(name):
    kk = sp.Symbol("k", real=True)
    return ds.SDEModel([_x], [kk], [kk * SUPPORTED_USES[name] - _x], diffusion=1, name=f"fn_{name}")


@pytest.mark.parametrize("name", sorted(SUPPORTED_USES))
def test_supported_function_generated_code_vs_reference(name, tmp_path_factory):
    """Each supported function prints to code that agrees with the reference (pure Python run)."""
    m = _fn_model(name)
    cm = ds.compile_model(m, str(tmp_path_factory.getbasetemp() / "fn_models"))
    X = np.random.default_rng(0).uniform(-3, 3, (64, 1))
    X[:3, 0] = [0.0, 1.0, -1.0]  # the special points of sign, Heaviside, floor ...
    theta = np.array([1.3])
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        cm.module.drift_point.py_func(X[i], theta, out[i])
    assert_rel_close(out, drift_reference(m, X, theta), rtol=1e-13, what=name)


def test_all_supported_functions_compile_with_numba(tmp_path):
    """A model using every supported function: the jitted kernels compile, agree with py_func."""
    names = sorted(SUPPORTED_USES)
    params = sp.symbols(f"k0:{len(names)}", real=True)
    drift = [sum(p * SUPPORTED_USES[nm] for p, nm in zip(params, names)) - _x]
    m = ds.SDEModel([_x], list(params), drift, diffusion=1, name="all_functions")
    cm = ds.compile_model(m, str(tmp_path))
    X = np.random.default_rng(0).uniform(-3, 3, (50, 1))
    X[:3, 0] = [0.0, 1.0, -1.0]
    theta = np.linspace(0.5, 1.5, m.n)
    jit = cm.drift(X, theta)
    py = np.empty_like(X)
    for i in range(X.shape[0]):
        cm.module.drift_point.py_func(X[i], theta, py[i])
    assert_rel_close(jit, py, rtol=1e-13, what="jit vs py_func")
    s_jit, c_jit = cm.stein_features(X)
    s_py = np.empty_like(s_jit)
    c_py = np.empty_like(c_jit)
    for i in range(X.shape[0]):
        cm.module.stein_features_point.py_func(X[i], s_py[i], c_py[i])
    assert_rel_close(s_jit, s_py, rtol=1e-13, what="stein features jit vs py_func")


# --------------------------------------------------------------------------- thread independence
def _max_threads():
    return min(2, numba.config.NUMBA_NUM_THREADS)


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


# bitwise identity across thread counts: model_points are plausible states, not a stationary
# sample, so the fit's stationarity check may flag the fitted drift (a StationarityWarning)
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@pytest.mark.parametrize("name", ["lorenz", "grn_bcell"])
def test_bitwise_identical_across_thread_counts(
    name, models, compiled, model_points, restore_threads
):
    if _max_threads() < 2:
        pytest.skip("needs 2 Numba threads")
    m, cm = models[name], compiled[name]
    X = model_points(m, 2001, seed=8)
    results = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        feats, A, b, A_blocks, b_blocks, _ = global_system(cm, X, 700, 3.0, seed=1)
        fit = ds.fit_global(m, X, features=ds.Features(n_features=700, seed=1))
        s, c = cm.stein_features(X)
        results.append(
            (A, b, A_blocks, b_blocks, fit.theta, fit.A, fit.b, cm.drift(X, m.nominal), s, c)
        )
    for a1, a2 in zip(*results):
        assert np.array_equal(a1, a2), "result depends on the number of Numba threads"
