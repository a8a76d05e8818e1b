"""Property tests over randomly generated models.

Models: dimension 1-3, 1-4 parameters; every drift component is a sum of
``coefficient · parameter · basis`` terms and parameter-free terms, with polynomial,
rational and transcendental (bounded arguments) basis functions; diffusion is a
constant isotropic or diagonal D, a constant full D given through a noise matrix G,
or a state-dependent diagonal D such as 0.1·(1 + x²).

Checks: the affine split is exact (symbolically and numerically), and the generated
kernels agree with the NumPy reference.  Numba compilation takes seconds per model,
so most examples run the generated point kernels through ``.py_func`` (pure
Python; the model-independent fill ``accumulate_stein`` is compiled once per
session), and a separate test compiles a few models for real.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_global
from dynosed_sym.codegen import CompiledModel
from dynosed_sym.reference import drift_reference, lambdified, stein_system_reference

STATE = sp.symbols("x0:3", real=True)
PARAMS = sp.symbols("p0:4", real=True)
COEFS = [sp.Integer(1), sp.Integer(-1), sp.Integer(2), sp.Rational(-1, 2), sp.Rational(3, 4),
         sp.Float("0.3"), sp.Float("-1.7")]


def _basis(kind, xi, xj):
    if kind == "poly":
        return [xi, xi**2, xi * xj, xi**3, -xi * xj**2, sp.Integer(1)]
    if kind == "rational":
        return [1 / (1 + xi**2), xi / (1 + xj**2), xi * xj / (2 + xi**2 + xj**2)]
    return [sp.sin(xi), sp.cos(xj), sp.exp(sp.sin(xi)), sp.exp(-(xi**2)), sp.tanh(xi),
            sp.sin(xi) * sp.cos(xj), sp.exp(sp.cos(xi + xj) / 2)]


@st.composite
def basis_functions(draw, d):
    xs = STATE[:d]
    i = draw(st.integers(0, d - 1))
    j = draw(st.integers(0, d - 1))
    kind = draw(st.sampled_from(["poly", "rational", "transcendental"]))
    return draw(st.sampled_from(_basis(kind, xs[i], xs[j])))


@st.composite
def sde_models(draw, name="hyp"):
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 4))
    xs, ps = STATE[:d], PARAMS[:n]
    comps = [sp.Integer(0)] * d
    # every parameter appears at least once, then some extra parameter terms
    placements = [(k, draw(st.integers(0, d - 1))) for k in range(n)]
    placements += draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, d - 1)), max_size=3))
    for k, j in placements:
        comps[j] += draw(st.sampled_from(COEFS)) * ps[k] * draw(basis_functions(d))
    for j in range(d):
        for _ in range(draw(st.integers(0, 2))):
            comps[j] += draw(st.sampled_from(COEFS)) * draw(basis_functions(d))
    kind = draw(st.sampled_from(["isotropic", "diagonal", "noise", "state_diagonal"]))
    kw = {}
    if kind == "isotropic":
        kw["diffusion"] = draw(st.sampled_from([sp.Rational(1, 10), sp.Integer(1), sp.Float("0.3")]))
    elif kind == "diagonal":
        kw["diffusion"] = [draw(st.sampled_from([sp.Rational(1, 10), sp.Integer(2), sp.Float("0.25")]))
                           for _ in range(d)]
    elif kind == "noise":
        G = sp.zeros(d, d)
        for a in range(d):
            G[a, a] = draw(st.sampled_from([sp.Integer(1), sp.Rational(1, 2), sp.sqrt(2)]))
            for b in range(a):
                G[a, b] = draw(st.sampled_from([sp.Integer(0), sp.Integer(1), sp.Rational(-1, 3)]))
        kw["noise"] = G
    else:
        entries = []
        for j in range(d):
            xj = xs[draw(st.integers(0, d - 1))]
            entries.append(draw(st.sampled_from([
                sp.Rational(1, 10) * (1 + xj**2),
                sp.Rational(1, 5) + sp.sin(xj) ** 2 / 10,
                sp.Float("0.05") * sp.exp(-(xj**2)) + sp.Rational(1, 20),
                sp.Rational(1, 4),
            ])))
        kw["diffusion"] = entries
    return ds.SDEModel(list(xs), list(ps), comps, name=name, **kw)


@st.composite
def models_and_data(draw, max_rows=40):
    model = draw(sde_models())
    N = draw(st.integers(5, max_rows))
    X = draw(hnp.arrays(np.float64, (N, model.d),
                        elements=st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False)))
    theta = draw(hnp.arrays(np.float64, (model.n,),
                            elements=st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)))
    m = draw(st.sampled_from([16, 37, 128, 130]))
    ell = draw(st.floats(0.3, 3.0))
    seed = draw(st.integers(0, 2**32 - 1))
    return model, X, theta, m, ell, seed


@pytest.fixture(scope="session")
def hyp_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hypothesis_generated"))


def assert_rel_close(got, ref, rtol, what):
    # Relative to the largest entry; below the smallest normal double (tiny inputs such as
    # x = 1e-160 squared) subnormals carry no relative precision, so the scale is floored there.
    scale = max(np.abs(ref).max(), np.finfo(float).tiny)
    err = np.abs(np.asarray(got) - ref).max()
    assert err <= rtol * scale, f"{what}: max abs error {err:.3g} > {rtol:g} × {scale:.3g}"


# --------------------------------------------------------------------------- affine split
@settings(max_examples=300)
@given(models_and_data())
def test_affine_split_exact(case):
    model, X, theta, *_ = case
    assert model.is_affine
    residual = model.U * sp.Matrix(model.params) + model.v - model.drift
    for e in residual:
        assert sp.expand(e) == 0 or sp.simplify(e) == 0, f"U θ + v − f = {e}"
    # numerically, through independent lambdified functions
    L = lambdified(model)
    U, v, f = L.U(X), L.v(X), L.f(X, theta)
    np.testing.assert_allclose(np.einsum("ijk,k->ij", U, theta) + v, f, rtol=1e-12,
                               atol=1e-12 * max(1.0, np.abs(f).max()))


# --------------------------------------------------------------------------- generated code
class PyFuncModel(CompiledModel):
    """A CompiledModel whose per-sample kernels run as pure Python (``.py_func``)."""

    def drift(self, X, theta):
        out = np.empty_like(X)
        for i in range(X.shape[0]):
            self.module.drift_point.py_func(X[i], theta, out[i])
        return out

    def stein_features(self, X):
        s = np.empty((X.shape[0], self.n_sin))
        c = np.empty((X.shape[0], self.n_cos))
        for i in range(X.shape[0]):
            self.module.stein_features_point.py_func(X[i], s[i], c[i])
        return s, c


def _check_against_reference(cm, X, theta, m, ell, seed):
    model = cm.model
    assert_rel_close(cm.drift(X, theta), drift_reference(model, X, theta), 1e-10, "drift")
    feats = draw_features(model.d, m, ell, seed=seed)
    half = X.shape[0] // 2
    blocks = [X[:half], X[half:]] if half else [X]
    A, b, *_ = assemble_global(cm, blocks, feats)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    assert_rel_close(A, A_ref, 1e-10, "A")
    assert_rel_close(b, b_ref, 1e-10, "b")


@settings(max_examples=400)
@given(models_and_data())
def test_generated_kernels_match_reference_py_func(hyp_dir, case):
    model, X, theta, m, ell, seed = case
    loaded = ds.compile_model(model, hyp_dir)  # emits and imports; no Numba compilation yet
    cm = PyFuncModel(model, loaded.module, loaded.path)
    _check_against_reference(cm, X, theta, m, ell, seed)
    if model.diffusion_is_constant:
        assert cm.noise_matrix is not None
        G = cm.noise_matrix
        np.testing.assert_allclose(G @ G.T / 2, np.array(model.D.evalf(), dtype=float), atol=1e-12)
    else:
        # state-dependent noise: the generated G(x) satisfies ½ G Gᵀ = D(x)
        assert loaded.module.STATE_DEPENDENT_NOISE
        Dx = lambdified(model).D(X)
        Gx = np.empty((model.d, loaded.module.NOISE_DIM))
        for i in range(X.shape[0]):
            loaded.module.noise_point.py_func(X[i], Gx)
            np.testing.assert_allclose(Gx @ Gx.T / 2, Dx[i], rtol=1e-12, atol=1e-14)


@settings(max_examples=4)
@given(models_and_data(max_rows=200))
def test_compiled_kernels_match_reference(hyp_dir, case):
    """A few models through the real Numba compiler (seconds each)."""
    model, X, theta, m, ell, seed = case
    cm = ds.compile_model(model, hyp_dir)
    _check_against_reference(cm, X, theta, m, ell, seed)
    py = PyFuncModel(model, cm.module, cm.path)
    s_jit, c_jit = cm.stein_features(X)
    s_py, c_py = py.stein_features(X)
    np.testing.assert_allclose(s_jit, s_py, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(s_py).max()))
    np.testing.assert_allclose(c_jit, c_py, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(c_py).max()))


@settings(max_examples=30)
@given(sde_models())
def test_render_deterministic(model):
    from dynosed_sym.codegen.render import render_module
    from dynosed_sym.codegen.spec import build_spec

    # a fresh model object from the same declaration: nothing cached is shared
    noise = {"noise": model.G} if model.G is not None else {"diffusion": model.D}
    twin = ds.SDEModel(list(model.state), list(model.params), list(model.drift), name=model.name,
                       **noise)
    assert render_module(build_spec(model)) == render_module(build_spec(twin))
