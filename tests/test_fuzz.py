"""Fuzzing (issue 9): random models and random, often hostile, inputs.

Complements tests/test_hypothesis_models.py (affine models: split, fill, noise — 734
examples) and the Hypothesis tests of tests/test_local.py (local rows — 153 examples) with:

* non-affine drifts (parameters inside exp, sin, tanh, powers and rational functions) and
  state-dependent *full* noise matrices G(x): drift, ∂f/∂θ, G(x) and the gradient route's
  Stein residual and Jacobian against NumPy references (``.py_func`` point kernels, the
  model-independent fill compiled once);
* affine drifts with a full state-dependent G(x): global A, b and local rows vs the reference;
* the entry points ``fit_global`` / ``fit_local`` on random arrays with NaN, inf, huge and tiny
  values, constant columns, wrong shapes and random argument values: every call returns a
  finite fit or raises a DynosedError — nothing else (also for a compiled non-affine model,
  by the global and the local gradient routes, with hostile starting points);
* random model declarations with undeclared symbols, time, unsupported and undefined
  functions, parameters in D: SDEModel returns a model whose derivation and emitted module
  work, or raises ModelError.

Examples per CI run (``dynosed`` profile): 150 + 100 + 150 + 100 + 80 + 80 = 660 here, 1547
with the two files above.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import sympy as sp
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import (
    COEFS,
    PARAMS,
    STATE,
    PyFuncModel,
    _check_against_reference,
    _random_inputs,
    _rows_py,
    assert_rel_close,
    basis_functions,
)

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.data.blocks import block_edges
from dynosed_sym.reference import local_rows_reference
from dynosed_sym.solve.gradient import GlobalProblem


# --------------------------------------------------------------------------- strategies
def _nonaffine_terms(p, xi, xj):
    return [
        p**2 * xi,
        sp.exp(p / 2) * xj,
        sp.sin(p * xi),
        sp.tanh(p * xi - xj),
        p * xi / (1 + p**2),
        sp.exp(-((p * xi) ** 2)),
        p**3 * sp.cos(xj),
    ]


@st.composite
def noise_matrices(draw, xs):
    """A state-dependent G(x) (d×d, full below the diagonal): D = ½GGᵀ is PSD by construction."""
    d = len(xs)
    G = sp.zeros(d, d)
    for i in range(d):
        G[i, i] = draw(st.sampled_from([sp.Integer(1), sp.Rational(1, 2), 1 + xs[i] ** 2 / 4]))
        for j in range(i):
            G[i, j] = draw(
                st.sampled_from([sp.Integer(0), sp.sin(xs[j]) / 2, xs[i] / 3, sp.Rational(1, 3)])
            )
    if not any(e.free_symbols for e in G):
        G[0, 0] = 1 + sp.cos(xs[0]) ** 2
    return G


@st.composite
def nonaffine_models(draw):
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 3))
    xs, ps = STATE[:d], PARAMS[:n]
    comps = [sp.Integer(0)] * d
    for k in range(n):  # every parameter enters non-affinely once, plus affine extras
        j, i, jj = (draw(st.integers(0, d - 1)) for _ in range(3))
        comps[j] += draw(st.sampled_from(COEFS)) * draw(
            st.sampled_from(_nonaffine_terms(ps[k], xs[i], xs[jj]))
        )
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        j = draw(st.integers(0, d - 1))
        comps[j] += (
            draw(st.sampled_from(COEFS))
            * ps[draw(st.integers(0, n - 1))]
            * draw(basis_functions(d))
        )
    for j in range(d):
        comps[j] += -xs[j]
    kind = draw(st.sampled_from(["isotropic", "state_noise"]))
    kw = (
        {"diffusion": draw(st.sampled_from([sp.Rational(1, 10), sp.Integer(1)]))}
        if kind == "isotropic"
        else {"noise": draw(noise_matrices(xs))}
    )
    return ds.SDEModel(list(xs), list(ps), comps, name="fuzz_na", **kw)


def _affine_drift(draw, d, n, coefs=COEFS):
    """State, parameters and an affine drift −x + Σ_k c_k θ_k φ_k(x) (each θ_k in one component)."""
    xs, ps = STATE[:d], PARAMS[:n]
    comps = [-xs[j] for j in range(d)]
    for k in range(n):
        j = draw(st.integers(0, d - 1))
        comps[j] += draw(st.sampled_from(coefs)) * ps[k] * draw(basis_functions(d))
    return xs, ps, comps


@st.composite
def affine_models_state_noise(draw):
    xs, ps, comps = _affine_drift(draw, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    return ds.SDEModel(list(xs), list(ps), comps, noise=draw(noise_matrices(xs)), name="fuzz_gx")


def _data(draw, d, max_rows=30):
    N = draw(st.integers(4, max_rows))
    return draw(
        hnp.arrays(
            np.float64,
            (N, d),
            elements=st.floats(-2.5, 2.5, allow_nan=False, allow_subnormal=False),
        )
    )


@pytest.fixture(scope="session")
def fuzz_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz_generated"))


def _py_module(module):
    """The generated module with its batch kernels replaced by loops over ``.py_func``."""
    ns = types.SimpleNamespace(
        **{k: getattr(module, k) for k in dir(module) if not k.startswith("__")}
    )

    def loop(point):
        def run(X, *args):
            *ins, out = args
            for i in range(X.shape[0]):
                point.py_func(X[i], *ins, out[i])

        return run

    ns.drift = loop(module.drift_point)
    ns.drift_jacobian = loop(module.drift_jacobian_point)

    def stein_features(X, out_sin, out_cos):
        for i in range(X.shape[0]):
            module.stein_features_point.py_func(X[i], out_sin[i], out_cos[i])

    ns.stein_features = stein_features
    return ns


def _lambdified(model):
    xs, ps = list(model.state), list(model.params)
    f = sp.lambdify(xs + ps, model.drift.tolist(), "numpy")
    jac = sp.lambdify(xs + ps, model.drift.jacobian(ps).tolist(), "numpy")
    D = sp.lambdify(xs, model.D.tolist(), "numpy")

    def vec(fn, shape, X, *extra):
        vals = fn(*[X[:, j] for j in range(X.shape[1])], *extra)
        out = np.empty((X.shape[0],) + shape)
        for idx in np.ndindex(shape):
            out[(slice(None),) + idx] = vals[idx[0]][idx[1]]
        return out

    d, n = model.d, model.n
    return (
        lambda X, th: vec(f, (d, 1), X, *th)[:, :, 0],
        lambda X, th: vec(jac, (d, n), X, *th),
        lambda X: vec(D, (d, d), X),
    )


# --------------------------------------------------------------------------- non-affine kernels
@settings(max_examples=150)
@given(nonaffine_models(), st.data())
def test_nonaffine_kernels_match_reference(fuzz_dir, model, data):
    X = _data(data.draw, model.d)
    theta = data.draw(
        hnp.arrays(np.float64, (model.n,), elements=st.floats(-2.0, 2.0, allow_nan=False))
    )
    loaded = ds.compile_model(model, fuzz_dir)  # emit + import; no Numba compilation
    mod = _py_module(loaded.module)
    f_ref, jac_ref, D_ref = _lambdified(model)
    F = np.empty_like(X)
    mod.drift(X, theta, F)
    assert_rel_close(F, f_ref(X, theta), 1e-11, "drift")
    Jf = np.empty((X.shape[0], model.d, model.n))
    mod.drift_jacobian(X, theta, Jf)
    assert_rel_close(Jf, jac_ref(X, theta), 1e-11, "∂f/∂θ")
    if loaded.module.STATE_DEPENDENT_NOISE:
        Gx = np.empty((model.d, loaded.module.NOISE_DIM))
        Dx = D_ref(X)
        for i in range(X.shape[0]):
            loaded.module.noise_point.py_func(X[i], Gx)
            np.testing.assert_allclose(Gx @ Gx.T / 2, Dx[i], rtol=1e-12, atol=1e-13)
    # the gradient route's residual r(θ) and Jacobian, per data block, against NumPy sums
    m = data.draw(st.sampled_from([8, 37, 130]))
    feats = draw_features(
        model.d, m, data.draw(st.floats(0.4, 3.0)), seed=data.draw(st.integers(0, 2**31))
    )
    cm = types.SimpleNamespace(model=model, module=mod)
    edges = block_edges(X.shape[0], 3)
    r, J = GlobalProblem(cm, X, feats, edges).sums(theta)
    arg = X @ feats.omega.T + feats.phase
    S, C = np.sin(arg), np.cos(arg)
    wf = f_ref(X, theta) @ feats.omega.T
    wDw = np.einsum("rj,ijl,rl->ir", feats.omega, D_ref(X), feats.omega)
    wJ = np.einsum("rj,ijk->irk", feats.omega, jac_ref(X, theta))
    scale = np.sqrt(2.0 / m)
    for g in range(edges.size - 1):
        rows = slice(edges[g], edges[g + 1])
        assert_rel_close(
            r[g], -scale * (S[rows] * wf[rows] + C[rows] * wDw[rows]).sum(axis=0), 1e-10, "r(θ)"
        )
        assert_rel_close(J[g], -scale * np.einsum("ir,irk->rk", S[rows], wJ[rows]), 1e-10, "∂r/∂θ")


# --------------------------------------------------------------------------- affine, full G(x)
@settings(max_examples=100)
@given(affine_models_state_noise(), st.data())
def test_state_dependent_full_noise_matches_reference(fuzz_dir, model, data):
    X = _data(data.draw, model.d)
    theta = np.linspace(-1.0, 1.5, model.n)
    loaded = ds.compile_model(model, fuzz_dir)
    cm = PyFuncModel(model, loaded.module, loaded.path)
    _check_against_reference(
        cm,
        X,
        theta,
        data.draw(st.sampled_from([16, 130])),
        data.draw(st.floats(0.4, 3.0)),
        data.draw(st.integers(0, 2**31)),
    )
    S, J, g = _random_inputs(model, X, data.draw(st.integers(0, 2**31)))
    A, b = _rows_py(loaded.module, X, S, J, g, model.n)
    A_ref, b_ref = local_rows_reference(model, X, S, J, g)
    # the oracle's A is R(e_k) − R(0): its rounding is relative to |R|, i.e. to max(|A|, |b|)
    scale = max(np.abs(A_ref).max(), np.abs(b_ref).max(), np.finfo(float).tiny)
    assert np.abs(A - A_ref).max() <= 1e-10 * scale, "local A"
    assert_rel_close(b, b_ref, 1e-10, "local b")


# --------------------------------------------------------------------------- hostile inputs
@st.composite
def hostile_arrays(draw, d):
    shape_kind = draw(st.sampled_from(["ok"] * 12 + ["cols", "1d", "3d", "rows"]))
    N = draw(st.integers(0, 60)) if shape_kind == "rows" else draw(st.integers(20, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    X = rng.standard_normal((N, d))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        what = draw(
            st.sampled_from(
                [
                    "nan",
                    "inf",
                    "huge",
                    "tiny",
                    "scale",
                    "const_col",
                    "offset",
                    "dup_rows",
                    "subnormal",
                ]
            )
        )
        if N == 0:
            break
        i, j = draw(st.integers(0, N - 1)), draw(st.integers(0, d - 1))
        if what == "nan":
            X[i, j] = np.nan
        elif what == "inf":
            X[i, j] = draw(st.sampled_from([np.inf, -np.inf]))
        elif what == "huge":
            X[i, j] = draw(st.sampled_from([1e300, -1e200, 1e154, 1e20]))
        elif what == "tiny":
            X[i, j] = draw(st.sampled_from([1e-300, 5e-324, -1e-200]))
        elif what == "scale":
            with np.errstate(over="ignore", under="ignore"):
                X *= 10.0 ** draw(st.integers(-300, 300))
        elif what == "const_col":
            X[:, j] = draw(st.sampled_from([0.0, 1.0, -3.5]))
        elif what == "offset":
            X += 10.0 ** draw(st.integers(3, 16))
        elif what == "dup_rows":
            X[:] = X[i]
        else:
            X[:, j] *= 1e-310
    if shape_kind == "cols":
        X = np.ones((N, d + draw(st.sampled_from([-1, 1]))))
    elif shape_kind == "1d":
        X = X.ravel()
    elif shape_kind == "3d":
        X = X.reshape(N, d, 1)
    return X


def _assert_finite_fit(fit):
    assert np.isfinite(fit.theta).all()
    assert np.isfinite(fit.A).all() and np.isfinite(fit.b).all()
    assert np.isfinite(fit.report.singular_values).all()
    fit.summary()


@settings(max_examples=150)
@given(st.data())
def test_entry_points_never_crash(compiled, models, data):
    """Each call returns a finite fit or raises a DynosedError (any other exception fails)."""
    name = data.draw(st.sampled_from(["ou2d_m12", "limit_cycle"]))
    model = models[name]
    X = data.draw(hostile_arrays(model.d))
    route = data.draw(st.sampled_from(["global", "local"]))
    lam = data.draw(st.sampled_from([1e-6] * 6 + [0.0, -1.0, np.inf, 1e300]))
    try:
        if route == "global":
            fit = ds.fit_global(
                model,
                X,
                lam=lam,
                n_features=data.draw(st.sampled_from([64] * 6 + [1, 0, -3, 7])),
                bandwidth=data.draw(
                    st.sampled_from(["median"] * 8 + [1.0, 0.0, -1.0, 1e-300, 1e300, np.nan])
                ),
                seed=data.draw(st.integers(0, 5)),
            )
        else:
            M = data.draw(st.integers(1, 6))
            if np.ndim(X) == 2 and X.shape[0] >= M and data.draw(st.booleans()):
                P = X[:M].copy()  # probes on the data (hostile when the data are)
            else:
                P = data.draw(hnp.arrays(np.float64, (M, model.d), elements=st.floats(-1.5, 1.5)))
            kw = data.draw(
                st.sampled_from(
                    [{"temperature": 1.0}] * 4
                    + [
                        {"temperature": 0.0},
                        {"temperature": 1e300},
                        {"score": "local_gaussian", "temperature": 1.0},
                        {"score": "score_matching", "radius": 2.0},
                        {"score": "score_matching", "radius": 2.0, "degree": 3},
                    ]
                )
            )
            fit = ds.fit_local(model, X, P, lam=lam, **kw)
    except ds.DynosedError as exc:
        event(f"{route}: {type(exc).__name__}")
        return
    event(f"{route}: fit")
    _assert_finite_fit(fit)


# --------------------------------------------------------------------------- hostile declarations
def _bad_atoms(xs):
    t, z, k = sp.symbols("t z k", real=True)
    g = sp.Function("g")
    return [
        t,
        z,
        g(xs[0]),
        sp.gamma(xs[0]),
        sp.Piecewise((xs[0], xs[0] > 0), (0, True)),
        sp.Mod(xs[0], 2),
        sp.I * xs[0],
        sp.zoo,
        sp.Integral(xs[0], xs[0]),
        k,
    ]


@st.composite
def declarations(draw):
    d = draw(st.integers(1, 2))
    n = draw(st.integers(0, 2))
    xs, ps, comps = _affine_drift(draw, d, n, coefs=[1])
    if draw(st.sampled_from([False, False, True])):
        comps[draw(st.integers(0, d - 1))] += draw(st.sampled_from(_bad_atoms(xs)))
    diff = draw(
        st.sampled_from(["ok", "ok", "state", "state", "param", "bad_atom", "neg", "matrix"])
    )
    if diff == "ok":
        D = sp.Rational(1, 2)
    elif diff == "param":
        D = 1 + (ps[0] ** 2 if n else xs[0] ** 2)
    elif diff == "bad_atom":
        D = 1 + draw(st.sampled_from(_bad_atoms(xs))) ** 2
    elif diff == "neg":
        D = -1 - xs[0] ** 2
    elif diff == "matrix":
        D = sp.Matrix(d, d, lambda i, j: draw(st.sampled_from([0, 1, 2, xs[0], -1])))
    else:
        D = [1 + xs[j] ** 2 / 2 for j in range(d)]
    return xs, ps, comps, D


@settings(max_examples=100)
@given(declarations())
def test_declarations_are_accepted_or_named(fuzz_dir, decl):
    xs, ps, comps, D = decl
    try:
        model = ds.SDEModel(list(xs), list(ps), comps, diffusion=D, name="fuzz_decl")
    except ds.ModelError as exc:
        assert str(exc)
        event("ModelError")
        return
    event("accepted")
    der = model.derivation  # an accepted model derives and prints without error
    assert der.is_affine
    from dynosed_sym.codegen.render import render_module
    from dynosed_sym.codegen.spec import build_spec

    assert "def drift_point" in render_module(build_spec(model))


# --------------------------------------------------------------------------- a few compiled
@settings(max_examples=80)
@given(st.data())
def test_compiled_nonaffine_gradient_fit_never_crashes(compiled, models, data):
    """The gradient route on hostile data for a compiled zoo model (solver='gradient'):
    finite or a DynosedError."""
    model = models["ou2d_m12"]
    X = data.draw(hostile_arrays(model.d))
    theta0 = data.draw(st.sampled_from([None, [0.5], [1e300], [np.nan], [0.0, 1.0]]))
    try:
        fit = ds.fit_global(model, X, n_features=32, solver="gradient", theta0=theta0)
    except ds.DynosedError as exc:
        event(type(exc).__name__)
        return
    event("fit")
    _assert_finite_fit(fit)


@pytest.fixture(scope="module")
def nonaffine_compiled(fuzz_dir):
    """A small non-affine model (θ inside exp, a square and sin), emitted once; its gradient
    kernels compile on the first example and are shared by the rest."""
    x, y = STATE[:2]
    a, b = PARAMS[:2]
    model = ds.SDEModel(
        [x, y],
        [a, b],
        [-sp.exp(a) * x + y, -x - b**2 * y + sp.sin(b * x) / 4],
        diffusion=sp.Rational(1, 2),
        nominal=[0.0, 1.0],
        name="fuzz_na_fit",
    )
    cm = ds.compile_model(model, fuzz_dir)
    assert not cm.is_affine
    return model, fuzz_dir


@settings(max_examples=80)
@given(st.data())
def test_compiled_truly_nonaffine_fits_never_crash(nonaffine_compiled, data):
    """A non-affine model (no linear route at all) on hostile data and starting points, by the
    global and the local gradient routes: finite or a DynosedError."""
    model, out = nonaffine_compiled
    X = data.draw(hostile_arrays(model.d))
    theta0 = data.draw(
        st.sampled_from(
            [[1.0], [40.0, 0.0], [1e300, 1.0], [np.nan, 0.0]] + [[0.5, -1.0]] * 3 + [None] * 4
        )
    )
    n_starts = data.draw(st.sampled_from([1, 1, 2]))
    route = data.draw(st.sampled_from(["global", "local"]))
    try:
        if route == "global":
            fit = ds.fit_global(
                model,
                X,
                n_features=32,
                theta0=theta0,
                n_starts=n_starts,
                projection=data.draw(st.booleans()),
                out_dir=out,
            )
        else:
            M = data.draw(st.integers(1, 4))
            if np.ndim(X) == 2 and X.shape[0] >= M and data.draw(st.booleans()):
                P = X[:M].copy()  # probes on the data (hostile when the data are)
            else:
                P = data.draw(hnp.arrays(np.float64, (M, model.d), elements=st.floats(-1.5, 1.5)))
            kw = data.draw(
                st.sampled_from(
                    [{"temperature": 1.0}] * 3
                    + [{"temperature": 1e300}, {"score": "score_matching", "radius": 2.0}]
                )
            )
            fit = ds.fit_local(model, X, P, theta0=theta0, n_starts=n_starts, out_dir=out, **kw)
    except ds.DynosedError as exc:
        event(f"{route}: {type(exc).__name__}")
        return
    event(f"{route}: fit")
    _assert_finite_fit(fit)
