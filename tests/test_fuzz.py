"""Fuzzing: random models and random, often hostile, inputs — each family with an oracle or an
invariant that a wrong answer breaks.

Complements tests/model/test_hypothesis_models.py (affine models: split, fill, noise) and the
Hypothesis tests of the local route with:

* non-affine drifts (parameters inside exp, sin, tanh, powers and rational functions) and
  state-dependent *full* noise matrices G(x): drift, ∂f/∂θ, G(x) and the gradient solver's Stein
  residual and Jacobian against NumPy references (``.py_func`` point kernels);
* affine drifts with a full state-dependent G(x): global A, b and local rows vs the reference;
* exact laws: N(0, I) data are exact stationary samples of ou2d (M = −I) and limit_cycle
  (a = −1/10, c = 0, any ω); both routes resolve exactly the identifiable directions, the truth
  lies in the 1 − 10⁻⁶ interval and the misspecification test does not reject;
* the entry points on valid and hostile input (one defect at a time): valid input must fit, and
  the fit is invariant under rescaling the state and the model together (x ↦ c·x with time
  rescaled, θ_k ↦ θ_k/c^(p_k+1), c a power of two: the residual scales exactly, θ̂ maps
  exactly); each defect of the data or of an argument gives the DataError that names it;
* random model declarations: valid ones are accepted (and derive and print), invalid ones raise
  the ModelError naming the component and the offending atom;
* the gradient solver on an affine model equals the linear solve (hostile data and starts:
  the errors of the linear route, a flagged non-convergence);
* a non-affine model by both gradient solvers: valid input ends at a stationary point of the
  loss on the reported linearisation, or is flagged unconverged with a ConvergenceWarning; on
  exact samples of its stationary law (a 1-D gradient drift) the truth — zero for an added
  parameter — lies in the 1 − 10⁻⁶ interval.

* dtypes and scales (issue 22): data of every dtype in every container fit exactly as their
  numbers as float64, or the DataError names the column and the first row; data × 10^k
  (k = −300 … 300) fit equivariantly (θ̂ ÷ c²) or are refused as beyond double precision;
  simulate's θ and inputs in every form give the same samples or a ModelError naming them.

Examples per CI run (``dynosed`` profile): 150 + 100 + 40 + 150 + 100 + 60 + 60 + 20 + 17·8 +
60 + 40 = 916.
"""

from __future__ import annotations

import re
import types
import warnings
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from hypothesis import event, example, given, settings
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
    corrected_profile,
    sample_1d,
    tanh_model,
)

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.data.blocks import block_edges
from dynosed_sym.options import option_objects
from dynosed_sym.reference import local_rows_reference
from dynosed_sym.routes import global_route, local_route
from dynosed_sym.routes.global_route import MOVED as GLOBAL_OPTIONS
from dynosed_sym.routes.local_route import MOVED as LOCAL_OPTIONS
from dynosed_sym.solve.gauss_newton import corrected_gauss_newton
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
    # the gradient solver's residual r(θ) and Jacobian, per data block, against NumPy sums
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


# --------------------------------------------------------------------------- exact laws
# Standard normal data are exact stationary samples of both zoo models used below: ou2d
# (dx = Mx dt + √2 dW) at M = −I, and limit_cycle (D = 1/10, p ∝ exp((a r²/2 − c r⁴/4)/D)) at
# a = −1/10, c = 0 (a parameter on a basis function with zero truth), any ω (invisible).
EXACT = {"ou2d": np.array([-1.0, 0.0, 0.0, -1.0]), "limit_cycle": np.array([-0.1, 0.0, np.nan])}
#: rank and free parameters of the population system (structural check, README)
RANK = {"ou2d": 3, "limit_cycle": 2}
FREE = {"ou2d": {"M12", "M21"}, "limit_cycle": {"omega"}}
#: degree p in x of the term each parameter multiplies: for x ↦ c·x with time rescaled by c²
#: (same D) the drift becomes f(y/c)/c, i.e. θ_k ↦ θ_k / c^(p_k + 1)
DEGREE = {"ou2d": np.array([1, 1, 1, 1]), "limit_cycle": np.array([1, 3, 1])}
#: probe points of the local route where N(0, I) data are dense
NEAR_ORIGIN = st.lists(  # (distinct points: a repeated probe is refused, its data counted twice)
    st.tuples(st.floats(-0.7, 0.7), st.floats(-0.7, 0.7)), min_size=1, max_size=10, unique=True
).map(np.array)


def _local_kw(draw):
    """Valid estimator settings of the local route (scale-dependent ones marked for rescaling)."""
    score = draw(st.sampled_from(["kernel", "kernel", "local_gaussian", "score_matching"]))
    if score == "score_matching":
        return {"score": score, "radius": 1.5, "degree": draw(st.sampled_from([2, 3]))}
    return {"score": score, "temperature": draw(st.sampled_from([1.0, 2.0]))}


def _fit_global(model, X, kw):
    """fit_global with the flat settings ``kw`` built into its option objects within the call
    (``options.option_objects``, as an application reading flat settings does): a bad setting is
    the call's DataError."""
    return ds.fit_global(model, X, **option_objects("fit_global", kw, GLOBAL_OPTIONS))


def _fit_local(model, X, P, kw):
    """fit_local with the flat settings ``kw`` built into its option objects within the call."""
    return ds.fit_local(model, X, P, **option_objects("fit_local", kw, LOCAL_OPTIONS))


def _rescaled(kw, c):
    """The same settings for data multiplied by c (lengths × c, precisions ÷ c²)."""
    out = dict(kw)
    if "temperature" in out:
        out["temperature"] = kw["temperature"] / c**2
    for key in ("radius", "bandwidth"):
        if isinstance(out.get(key), float):
            out[key] = kw[key] * c
    return out


@settings(max_examples=40)
@given(st.data())
def test_exact_laws_are_recovered(compiled, models, data):
    """Exact N(0, I) samples (N ≥ 1500): both routes resolve exactly the identifiable directions,
    the truth — zero for limit_cycle's c — lies in the 1 − 10⁻⁶ interval of every identified
    parameter, and the misspecification test does not reject the true model."""
    name = data.draw(st.sampled_from(["ou2d", "limit_cycle"]))
    model = models[name]
    X = np.random.default_rng(data.draw(st.integers(0, 2**31))).standard_normal(
        (data.draw(st.integers(1500, 4000)), 2)
    )
    lam = data.draw(st.sampled_from([0.0, 1e-6]))
    route = data.draw(st.sampled_from(["global", "local"]))
    if route == "global":
        fit = ds.fit_global(
            model,
            X,
            features=ds.Features(
                n_features=data.draw(st.sampled_from([64, 256])),
                bandwidth=data.draw(st.sampled_from(["median", "median", 1.0])),
                seed=data.draw(st.integers(0, 5)),
            ),
            solver=ds.Solver(lam=lam),
        )
        rep = fit.report
        assert rep.rank <= RANK[name]  # never more than the model's identifiable directions
        if rep.rank < RANK[name]:
            # the rank is a t test on each direction's curvature: a weakly resolved direction may
            # miss it by chance (limit_cycle's c at N = 1500), a lost clear one must not
            t = np.sort(rep.direction_t)[::-1][rep.rank]
            event("global: a borderline direction left unresolved")
            assert t >= 0.5 * rep.resolve_threshold, (t, fit.summary())
    else:
        P = np.random.default_rng(data.draw(st.integers(0, 2**31))).uniform(-0.7, 0.7, (10, 2))
        scores = ds.Scores(
            score="local_gaussian", temperature=data.draw(st.sampled_from([1.0, 2.0]))
        )
        fit = ds.fit_local(model, X, P, scores=scores, solver=ds.Solver(lam=lam))
        assert fit.report.rank <= RANK[name]  # few probes may resolve fewer directions
    assert FREE[name] <= set(fit.report.free_params)
    ci = fit.conf_int(level=1 - 1e-6)
    truth = EXACT[name]
    known = np.isfinite(truth)
    assert np.all((ci[known, 0] <= truth[known]) & (truth[known] <= ci[known, 1])), fit.summary(
        truth=np.nan_to_num(truth)
    )
    assert fit.report.p_value >= 1e-6 and not fit.report.p_value_bound


# --------------------------------------------------------------------------- hostile inputs
#: (expected outcome, message) per defect and route: "fit" (valid input: must not raise),
#: "raise" (a DataError whose message matches), "either" (a fit, or a DataError that matches)
OUTCOMES = {
    None: ("fit", ""),
    "tiny": ("fit", ""),
    "nan": ("raise", r"^X: \d+ row\(s\) contain NaN or inf"),
    "inf": ("raise", r"^X: \d+ row\(s\) contain NaN or inf"),
    "dup_rows": ("raise", r"^X: all \d+ samples are the same point"),
    "cols": ("raise", r"^X: has \d+ columns but model '\w+' has 2 state variables"),
    "1d": ("raise", r"^X: expected a 2-D array \(N, 2\), got 1 dimension"),
    "3d": ("raise", r"^X: expected a 2-D array \(N, 2\), got 3 dimension"),
}
GLOBAL_OUTCOMES = {
    "subnormal": ("fit", ""),
    "const_col": ("fit", ""),
    "huge": ("raise", r"^X: \d+ row\(s\) lie so far from the origin compared with the kernel"),
    "offset3": ("fit", ""),
    "offset": ("raise", r"^X: \d+ row\(s\) lie so far from the origin compared with the kernel"),
    "few_rows": ("raise", r"^X: [01] sample\(s\); at least 2 are needed"),
    "rows": ("fit", ""),
    "scale": (
        "either",
        r"^X: |^the assembled global system|Stein feature .* not finite"
        r"|^the drift (at θ = .*)?is not finite",
    ),
    "lam": ("raise", r"^(Solver\.)?lam must be (non-negative|finite|a number)"),
    "n_features": ("raise", r"^(Features\.)?n_features must be (at least 1|an integer)"),
    "bandwidth": (
        "raise",
        r"^(Features\.)?bandwidth must be (positive|finite|'median' or a positive number)",
    ),
    # (it said the rows "lie so far from the origin": ω² overflowed in the precision bound)
    "bandwidth_tiny": (
        "raise",
        r"^(Features\.)?bandwidth=1e-300 is below 1e-150: the squared kernel frequen",
    ),
    "seed": ("raise", r"^(Features\.)?seed must be at least 0"),
    "n_blocks": ("raise", r"^(Execution\.)?n_blocks must be at least 1"),
}
_FEATURES_VANISH = r"^the assembled system's entries are too small for double precision"
_SCORE_FAILS = (
    r"^kernel score: probe \d+|^local Gaussian score: |^score matching: "
    r"|^kernel score: column '\w+' of X is constant"
    r"|^kernel score: \d+ of \d+ probe\(s\) lie outside the data"
)
LOCAL_OUTCOMES = {
    "huge": ("fit", ""),  # one far outlier carries no kernel weight at the probes
    # a column of zeros to double precision: the local Gaussian score refuses it by name
    # (_subnormal_expected); the kernel and score-matching scores may fit
    "subnormal": ("either", _SCORE_FAILS),
    "const_col": ("either", _SCORE_FAILS),
    "offset3": ("raise", _SCORE_FAILS),  # the data far from the probes
    "offset": ("raise", _SCORE_FAILS),
    "few_rows": ("raise", r"^X: 0 sample\(s\); at least 1 are needed"),
    "rows": ("either", _SCORE_FAILS),
    "scale": ("either", _SCORE_FAILS),
    "lam": GLOBAL_OUTCOMES["lam"],
    "temperature": ("raise", r"^Scores\.temperature must be (positive|finite), got"),
    "temperature_huge": (
        "raise",
        r"^kernel score: probe \d+ .* (effective data point|kernel widths)",
    ),
    "score": ("raise", r"^score must be 'kernel', 'local_gaussian', 'score_matching'"),
    "probes_nan": ("raise", r"^probes: contain NaN or inf"),
    "probes_shape": ("raise", r"^probes: expected an array of shape \(M, 2\)"),
    "probes_empty": ("raise", r"^probes: no probe points"),
    "radius": ("raise", r"^Scores\.radius must be a positive number or one per probe"),
    "degree": ("raise", r"^Scores\.degree must be at least 2, got [01]$"),
}
DATA_DEFECTS = [None] * 14 + [
    "tiny",
    "nan",
    "inf",
    "huge",
    "subnormal",
    "const_col",
    "offset3",
    "offset",
    "dup_rows",
    "cols",
    "1d",
    "3d",
    "few_rows",
    "rows",
    "scale",
]
ARG_DEFECTS = {
    "global": {
        "lam": [-1.0, np.inf, np.nan, "a"],
        "n_features": [0, -3, 2.5],
        "bandwidth": [0.0, -1.0, np.nan, np.inf, "mean"],
        "bandwidth_tiny": [1e-300],
        "seed": [-1],
        "n_blocks": [0],
    },
    "local": {
        "lam": [-1.0, np.inf, np.nan],
        "temperature": [0.0, -1.0, np.inf, np.nan],
        "temperature_huge": [1e300],
        "score": ["nope", 3],
        "probes_nan": [np.array([[np.nan, 0.0]])],
        "probes_shape": [np.zeros((2, 3)), np.zeros(5)],
        "probes_empty": [np.zeros((0, 2))],
        "radius": [-1.0, 0.0],
        "degree": [0, 1],
    },
}


@st.composite
def hostile_inputs(draw, route):
    """(X, defect, value): N(0, I) samples (exact for the models above) with at most one defect of
    the data, or one invalid argument ``defect = value``."""
    args = ARG_DEFECTS[route]
    defect = draw(st.sampled_from(DATA_DEFECTS + sorted(args)))
    N = draw(st.integers(20 if route == "global" else 50, 200))
    if defect == "few_rows":
        N = draw(st.integers(0, 1)) if route == "global" else 0
    elif defect == "rows":
        N = draw(st.integers(2, 5) if route == "global" else st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    X = rng.standard_normal((N, 2))
    i, j = (int(rng.integers(max(N, 1))), int(rng.integers(2)))
    value = None
    if defect in args:
        value = draw(st.sampled_from(args[defect]))
    elif defect in ("nan", "inf"):
        X[i, j] = np.nan if defect == "nan" else draw(st.sampled_from([np.inf, -np.inf]))
    elif defect == "huge":
        X[i, j] = draw(st.sampled_from([1e300, -1e200, 1e154, 1e20]))
    elif defect == "tiny":
        X[i, j] = draw(st.sampled_from([1e-300, 5e-324, -1e-200]))
    elif defect == "subnormal":
        X[:, j] *= 1e-310
    elif defect == "const_col":
        X[:, j] = draw(st.sampled_from([0.0, 1.0, -3.5]))
    elif defect == "offset3":
        X += 1e3
    elif defect == "offset":
        X += 10.0 ** draw(st.sampled_from([8, 12, 16]))
    elif defect == "dup_rows":
        X[:] = X[i]
    elif defect == "scale":
        value = draw(st.sampled_from([-300, -150, -100, -30, 30, 100, 150, 300]))
        with np.errstate(over="ignore", under="ignore"):
            X *= 10.0**value
    elif defect == "cols":
        X = np.ones((N, 2 + draw(st.sampled_from([-1, 1]))))
    elif defect == "1d":
        X = X.ravel()
    elif defect == "3d":
        X = X.reshape(N, 2, 1)
    return X, defect, value


#: highest power of each state variable in the drift (models/*.py and nonaffine_compiled below):
#: the limit cycle's c·x·r² holds x³ and y³, the tanh model's e·x0² holds x0²
STATE_DEGREE = {"ou2d": (1, 1), "limit_cycle": (3, 3), "fuzz_tanh": (2, 1)}


def _overflow_expected(X, model, expected):
    """A value whose power in the drift overflows double precision: refused before anything
    else, naming its row, column and the term, with any bandwidth (it used to be "a Stein feature
    (drift term) is not finite at sample …" with bandwidth=1e300).  Otherwise ``expected``."""
    i, j = np.unravel_index(np.argmax(np.abs(X)), X.shape)
    power = STATE_DEGREE[model.name][j]
    with np.errstate(over="ignore"):
        if np.isfinite(abs(X[i, j]) ** power):
            return expected
    col = str(model.state[j])
    return (
        "raise",
        rf"^X: value \S+ in column '{col}', row {i}, is too large for model "
        rf"'{model.name}': its term {col}\*\*{power} would be about 1e\d+ there, beyond double "
        "precision",
    )


def _subnormal_expected(X, kw, expected):
    """The local Gaussian score inverts the local covariance: a column scaled by 1e-310 has none
    (its variance is cancellation noise of either sign, which was once inverted into a system of
    size 1e301), and the refusal names the column."""
    if kw.get("score") != "local_gaussian":
        return expected
    j = int(np.argmin(np.abs(X).max(axis=0)))
    return (
        "raise",
        rf"^kernel score: probe \d+ .* effective data point|^local Gaussian score: the "
        rf"kernel-weighted data around probe \d+ are degenerate \(singular covariance: column "
        rf"{j} of X has no spread there",
    )


def _outcome(route, defect):
    table = GLOBAL_OUTCOMES if route == "global" else LOCAL_OUTCOMES
    return table.get(defect) or OUTCOMES[defect]


def _assert_finite_fit(fit):
    assert np.isfinite(fit.theta).all()
    assert np.isfinite(fit.A).all() and np.isfinite(fit.b).all()
    assert np.isfinite(fit.report.singular_values).all()
    assert fit.summary()


def _run(route, expected, call):
    """Call ``call()``; check the outcome against ``expected`` = (kind, pattern)."""
    kind, pattern = expected
    try:
        fit = call()
    except ds.DynosedError as exc:
        event(f"{route}: {type(exc).__name__}")
        assert kind != "fit", f"valid input raised {type(exc).__name__}: {exc}"
        assert isinstance(exc, ds.DataError), f"{type(exc).__name__}: {exc}"
        assert re.search(pattern, str(exc)), f"unexpected message: {exc}"
        return None
    event(f"{route}: fit")
    assert kind != "raise", f"expected a DataError matching {pattern!r}, got a fit"
    _assert_finite_fit(fit)
    return fit


def _search_warnings(caught):
    """The ConvergenceWarnings of the gradient search among recorded warnings (its search, or
    the corrected Gauss–Newton loop's fall-back to the V-statistic optimum)."""
    return [
        w
        for w in caught
        if issubclass(w.category, ds.ConvergenceWarning)
        and ("gradient search" in str(w.message) or "Gauss–Newton" in str(w.message))
    ]


def _assert_rescaling_invariance(fit, fit_c, c, degree):
    """x ↦ c·x (model rewritten by time scaling, θ_k ↦ θ_k/c^(p_k+1), λ = 0): the residual scales
    by 1/c², and so θ̂ maps exactly when A has full column rank.  With every parameter scaled
    alike (A unchanged) the report is the same too: rank, scaled SEs, test statistic; the solve
    works in powers of two, so the estimate maps bit for bit.  (With unequal scalings the rank,
    judged on the singular values of A in the given units, may differ near its threshold, and the
    resolved estimator's shrinkage of unresolved directions is unit-dependent: only fits resolved
    in full are compared then, on the estimate.)"""
    S = c ** -(degree + 1.0)
    uniform = np.all(degree == degree[0])
    if not uniform and not (fit.report.rank == fit_c.report.rank == fit.theta.size):
        # the resolved estimator shrinks the unresolved directions in the given units: like any
        # regularised estimate it is equivariant under unequal parameter scalings only when
        # nothing is shrunk (full resolved rank)
        event("rescaling: unequal scalings of a rank-deficient fit (not compared)")
        return
    r, r_c = fit.A @ fit.theta - fit.b, fit_c.A @ fit_c.theta - fit_c.b
    tol = 1e-9 * (np.abs(fit.b).max() + np.abs(fit.A).max() * np.abs(fit.theta).max())
    assert np.abs(r_c * c**2 - r).max() <= tol + 1e-300
    sv = np.linalg.svd(fit.A, compute_uv=False)
    if fit.A.shape[0] >= fit.A.shape[1] and sv[-1] > 1e-6 * sv[0]:
        event("rescaling: θ̂ compared")
        np.testing.assert_allclose(fit_c.theta / S, fit.theta, rtol=1e-7, atol=1e-9)
    if uniform:
        event("rescaling: report compared")
        rep, rep_c = fit.report, fit_c.report
        assert rep_c.rank == rep.rank and rep_c.free_params == rep.free_params
        if rep.std_errors is not None:
            np.testing.assert_allclose(rep_c.std_errors / S, rep.std_errors, rtol=1e-6)
            np.testing.assert_allclose(rep_c.misspec_stat, rep.misspec_stat, rtol=1e-6)


# hostile and degenerate data, and local fits at a few probes of N(0, I) data: the fitted drift
# may have no stationary law consistent with the data, and the fits say so with a
# StationarityWarning (asserted where it matters: tests/routes/test_fit_stationarity.py)
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@settings(max_examples=150)
@given(st.data())
def test_entry_points_on_hostile_and_valid_input(compiled, models, data):
    """Valid input fits (and the fit is invariant under rescaling the state and the model
    together); every defect gives the DataError that names it."""
    name = data.draw(st.sampled_from(["ou2d", "limit_cycle"]))
    model = models[name]
    route = data.draw(st.sampled_from(["global", "local"]))
    X, defect, value = data.draw(hostile_inputs(route))
    lam = data.draw(st.sampled_from([0.0] * 4 + [1e-6, 1e300]))
    if route == "global":
        kw = {
            "lam": lam,
            "n_features": data.draw(st.sampled_from([64] * 6 + [1, 7])),
            "bandwidth": data.draw(st.sampled_from(["median"] * 6 + [1.0, 1e300])),
            "seed": data.draw(st.integers(0, 5)),
        }
    else:
        kw = {"lam": lam, **_local_kw(data.draw)}
        P = data.draw(NEAR_ORIGIN)
    if defect in ARG_DEFECTS[route]:
        key = "probes" if defect.startswith("probes") else defect.removesuffix("_tiny")
        key = key.removesuffix("_huge")
        if key == "probes":
            P = value
        else:
            if key in ("radius", "degree"):
                kw = {"lam": lam, "score": "score_matching", "radius": 1.5, "degree": 2}
            if key == "temperature":
                kw = {"lam": lam, "score": "kernel"}
            kw[key] = value
    expected = _outcome(route, defect)
    if kw.get("bandwidth") == 1e300 and defect in ("huge", "offset"):
        expected = ("either", expected[1])  # nothing is far compared with a 1e300 length scale
    if kw.get("bandwidth") == 1e300 and expected[0] != "raise":
        # features constant to double precision: a fit, or the DataError that says so
        expected = ("either", "|".join(filter(None, [expected[1], _FEATURES_VANISH])))
    if route == "global" and defect == "huge":
        expected = _overflow_expected(X, model, expected)
    if route == "local" and defect == "subnormal":
        expected = _subnormal_expected(X, kw, expected)
    if route == "global":
        fit = _run(route, expected, lambda: _fit_global(model, X, kw))
    else:
        fit = _run(route, expected, lambda: _fit_local(model, X, P, kw))
    if fit is None or defect is not None or lam != 0.0 or kw.get("bandwidth") == 1e300:
        return
    c = 2.0 ** data.draw(st.sampled_from([-6, -3, -1, 1, 2, 5]))
    kw_c = _rescaled(kw, c)
    if route == "global":
        fit_c = _fit_global(model, c * X, kw_c)
    else:
        fit_c = _fit_local(model, c * X, c * P, kw_c)
    _assert_rescaling_invariance(fit, fit_c, c, DEGREE[name])


@pytest.mark.parametrize("seed", range(5))
def test_underdetermined_fit_does_not_claim_a_confident_wrong_interval(models, seed):
    """With fewer features than parameters, c of limit_cycle is partly in the null space: the
    minimum-norm θ̂ of before (issue 13) put it at a biased value with a finite interval that
    excluded the truth by ~15 standard errors.  The default (resolved) estimator's honest
    interval, which includes the bias from the unresolved directions, must contain the truth."""
    X = np.random.default_rng(5 + seed).standard_normal((3000, 2))  # exact samples: c = 0
    fit = ds.fit_global(
        models["limit_cycle"],
        X,
        features=ds.Features(n_features=1, seed=seed),
        solver=ds.Solver(lam=0.0),
    )
    lo, hi = fit.conf_int(level=1 - 1e-6)[1]
    assert lo <= 0.0 <= hi


# --------------------------------------------------------------------------- hostile declarations
def _bad_atoms(xs):
    t, z, k = sp.symbols("t z k", real=True)
    g = sp.Function("g")
    return [
        (t, r"depends on time t"),
        (z, r"symbol z is"),
        (g(xs[0]), r"undefined function g\(\)"),
        (sp.gamma(xs[0]), r"function gamma\(\) cannot be compiled"),
        (sp.Piecewise((xs[0], xs[0] > 0), (0, True)), r"Piecewise\(\) cannot be compiled"),
        (sp.Mod(xs[0], 2), r"function Mod\(\) cannot be compiled"),
        (sp.I * xs[0], r"complex numbers are not supported"),
        (sp.zoo, r"contains an infinity or NaN"),
        (sp.Integral(xs[0], xs[0]), r"unevaluated Integral cannot be compiled"),
        (k, r"symbol k is"),
    ]


@st.composite
def declarations(draw):
    """A declaration and the ModelError messages it must raise (none: it must be accepted)."""
    d = draw(st.integers(1, 2))
    n = draw(st.integers(0, 2))
    xs, ps, comps = _affine_drift(draw, d, n, coefs=[1])
    errors = []
    if draw(st.sampled_from([False, False, True])):
        atom, msg = draw(st.sampled_from(_bad_atoms(xs)))
        j = draw(st.integers(0, d - 1))
        comps[j] += atom
        errors.append(rf"^drift\[{j}\] \(dx{j}\): .*{msg}")
    diff = draw(
        st.sampled_from(["ok", "ok", "state", "state", "param", "bad_atom", "neg", "matrix"])
    )
    if diff == "ok":
        D = sp.Rational(1, 2)
    elif diff == "param":
        D = 1 + (ps[0] ** 2 if n else xs[0] ** 2)
        if n:
            errors.append(r"^diffusion D\[0,0\]: parameter p0 appears in the diffusion")
    elif diff == "bad_atom":
        atom, msg = draw(st.sampled_from(_bad_atoms(xs)))
        D = 1 + atom**2
        if atom != sp.I * xs[0]:  # (i x)² = −x²: D = 1 − x² is real and not negative everywhere
            errors.append(rf"^diffusion D\[0,0\]: .*{msg}")
    elif diff == "neg":
        D = -1 - xs[0] ** 2
        errors.append(r"^diffusion D\[0,0\] = .* is negative for every state")
    elif diff == "matrix":
        D = sp.Matrix(d, d, lambda i, j: draw(st.sampled_from([0, 1, 2, xs[0], -1])))
        if D != D.T:
            errors.append(r"^diffusion D is not symmetric")
        elif D.is_zero_matrix:
            errors.append(r"^diffusion D is identically zero")  # no information about f
        elif not D.free_symbols:
            if min(np.linalg.eigvalsh(np.array(D.tolist(), dtype=float))) < 0:
                errors.append(r"^diffusion D is not positive semi-definite")
        else:  # state-dependent and symmetric: judged where it is evaluated
            errors.append(r"^diffusion D")
            errors.append(None)
    else:
        D = [1 + xs[j] ** 2 / 2 for j in range(d)]
    return xs, ps, comps, D, errors


@settings(max_examples=100)
@given(declarations())
def test_declarations_are_accepted_or_named(fuzz_dir, decl):
    """A valid declaration is accepted (and derives and prints); an invalid one raises the
    ModelError that names the offending component and atom."""
    xs, ps, comps, D, errors = decl
    try:
        model = ds.SDEModel(list(xs), list(ps), comps, diffusion=D, name="fuzz_decl")
    except ds.ModelError as exc:
        event("ModelError")
        patterns = [e for e in errors if e is not None]
        assert patterns, f"a valid declaration was rejected: {exc}"
        assert any(re.search(p, str(exc)) for p in patterns), f"unexpected message: {exc}"
        return
    event("accepted")
    assert not errors or None in errors, f"accepted, expected an error matching {errors}"
    der = model.derivation  # an accepted model derives and prints without error
    assert der.is_affine
    from dynosed_sym.codegen.render import render_module
    from dynosed_sym.codegen.spec import build_spec

    assert "def drift_point" in render_module(build_spec(model))


# --------------------------------------------------------------------------- a few compiled
THETA0 = {  # starting point → expected outcome
    None: ("fit", ""),
    (0.5, -1.0, 2.0, 0.0): ("fit", ""),
    (1e10, 0.0, 0.0, -1e10): ("fit", ""),
    (np.nan, 0.0, 0.0, 0.0): ("model", r"^theta0: value of 'M11' is not finite"),
    (0.0, 1.0): ("model", r"^theta0: expected 4 values"),
}


# hostile data (a constant column, tiny scales): the fitted drift may have no stationary law
# consistent with them, and the fits say so with a StationarityWarning, as they should
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@settings(max_examples=60)
@given(st.data())
def test_gradient_route_on_an_affine_model_is_the_linear_solve(compiled, models, data):
    """The gradient solver on hostile data and starting points (ou2d, solver='gradient'): the
    errors of the linear route, and on valid input the linear solve's optimum."""
    model = models["ou2d"]
    X, defect, _ = data.draw(hostile_inputs("global"))
    if defect in ARG_DEFECTS["global"]:
        defect = None  # (arguments are covered above; keep the data)
    theta0 = data.draw(st.sampled_from(sorted(THETA0, key=str)))
    kind, pattern = THETA0[theta0]
    kw = dict(features=ds.Features(n_features=32))
    solver = ds.Solver(lam=data.draw(st.sampled_from([0.0, 1e-6])))
    gradient = replace(solver, method="gradient", theta0=theta0)
    expected = _outcome("global", defect)
    if kind == "model":  # the starting point is checked before the data
        with pytest.raises(ds.ModelError, match=pattern):
            ds.fit_global(model, X, solver=gradient, **kw)
        event("gradient: ModelError (theta0)")
        return
    projection = data.draw(st.booleans())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ds.ConvergenceWarning)
        fit = _run(
            "gradient",
            expected,
            lambda: ds.fit_global(model, X, solver=replace(gradient, projection=projection), **kw),
        )
    if fit is None:
        return
    assert fit.converged == (not _search_warnings(caught))
    if fit.info.get("gn_stop") == "fell back":
        # the corrected loop's fixed point is not the estimator's trade against the V-statistic
        # optimum (found by Hypothesis: a start (0.5, −1, 2, 0), λ = 0, rank 2 of 4): flagged,
        # warned, and what is reported is that optimum — for an affine drift the linear V fit's
        event("gradient: fell back to the V-statistic optimum (flagged)")
        assert not fit.converged
        if defect in (None, "tiny", "const_col"):
            v = ds.fit_global(model, X, solver=replace(solver, statistic="v"), **kw)
            d = v.A @ (fit.theta - v.theta)
            assert np.linalg.norm(d) <= 1e-6 * (np.linalg.norm(v.b) + 1e-300)
        return
    if not fit.converged:
        event("gradient: not converged (flagged)")
        assert theta0 is not None and abs(theta0[0]) > 1e3, "a start near the optimum converges"
        return
    if defect not in (None, "tiny", "const_col"):
        return  # degenerate data (1e±100 scales, subnormal columns) that fit: finite suffices
    lin = ds.fit_global(model, X, solver=solver, **kw)
    # the same objective; along weakly resolved directions the optimum is flat, so compare fits
    d = lin.A @ (fit.theta - lin.theta)
    assert np.linalg.norm(d) <= 1e-6 * (np.linalg.norm(lin.b) + 1e-300)
    np.testing.assert_allclose(fit.A, lin.A, rtol=1e-9, atol=1e-12 * np.abs(lin.A).max())


@pytest.fixture(scope="module")
def nonaffine_compiled(fuzz_dir):
    """dx = (a tanh(kx) − x + e x²) dt + √2 dW₁, dy = −y dt + √2 dW₂: not affine in k, emitted
    once; its gradient kernels compile on the first example and are shared by the two families
    below.  For e = 0 the stationary law is p ∝ cosh(kx)^(a/k) exp(−(x² + y²)/2), sampled
    exactly; e is a parameter on a basis function with zero truth (even, where the law is
    symmetric: not confounded with the odd tanh; an e x³ term would be, with a·tanh(kx) ≈
    ak·x − ak³x³/3)."""
    model = tanh_model()
    cm = ds.compile_model(model, fuzz_dir)
    assert not cm.is_affine
    return model, fuzz_dir


NA_THETA0 = {
    None: ("fit", ""),
    (2.0, 0.7, 0.0): ("fit", ""),
    (0.5, -1.0, 0.1): ("fit", ""),
    # (SciPy's trust region squared θ: overflow warnings, then whatever the search did)
    (1e300, 1.0, 0.0): ("model", r"^theta0: value of 'p0' is 1e\+300, beyond 1\.34e\+154"),
    (np.nan, 0.0, 0.0): ("model", r"^theta0: value of 'p0' is not finite"),
    (1.0,): ("model", r"^theta0: expected 3 values"),
}


@settings(max_examples=60)
@given(st.data())
def test_truly_nonaffine_fits_end_at_a_stationary_point(nonaffine_compiled, data):
    """A non-affine model (no linear route) on hostile data and starting points, by the global and
    the local gradient solvers: named errors; on valid input a fit whose θ̂, when the search
    converged, is a stationary point of the loss on the reported linearisation
    (‖Aᵀ(Aθ̂ − b) + λθ̂‖ ≈ 0), and a flag with a ConvergenceWarning when it did not."""
    model, out = nonaffine_compiled
    route = data.draw(st.sampled_from(["global", "local"]))
    X, defect, value = data.draw(hostile_inputs(route))
    theta0 = data.draw(st.sampled_from(sorted(NA_THETA0, key=str)))
    kind, pattern = NA_THETA0[theta0]
    lam = data.draw(st.sampled_from([0.0, 1e-6]))
    solver = ds.Solver(theta0=theta0, lam=lam, n_starts=data.draw(st.sampled_from([1, 1, 2])))
    kw = dict(execution=ds.Execution(out_dir=out))
    expected = _outcome(route, defect) if defect not in ARG_DEFECTS[route] else ("fit", "")
    if route == "global" and defect == "huge":
        expected = _overflow_expected(X, model, expected)
    if kind == "model":
        expected = ("model", pattern)
    elif kind == "either" and expected[0] != "raise":  # a data or a starting-point failure
        expected = (kind, "|".join(filter(None, [expected[1], pattern])))
    # the gradient search's own optimum (V-statistic, ridge): the default corrected fixed point
    # is checked against the affine solve in tests/solve/test_ustat.py
    solver = replace(solver, statistic="v", estimator="ridge")
    if route == "global":

        def call():
            return ds.fit_global(
                model,
                X,
                features=ds.Features(n_features=32),
                solver=replace(solver, projection=data.draw(st.booleans())),
                **kw,
            )
    else:
        P = data.draw(NEAR_ORIGIN)
        local = ds.Scores(score="kernel", temperature=1.0)

        def call():
            return ds.fit_local(model, X, P, scores=local, solver=solver, **kw)

    if expected[0] == "model":
        with pytest.raises(ds.ModelError, match=expected[1]):
            call()
        event(f"{route}: ModelError (theta0)")
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ds.ConvergenceWarning)
        fit = _run(route, expected, call)
    if fit is None:
        return
    assert fit.converged == (not _search_warnings(caught))
    if not fit.converged:
        event(f"{route}: not converged (flagged)")
        assert "NOT CONVERGED" in fit.summary()
        return
    if not (defect in (None, "tiny") or defect in ARG_DEFECTS[route]):
        return  # degenerate data (a zero column, 1e-300 scales) that fit: finite is all we ask
    r = fit.A @ fit.theta - fit.b
    grad = fit.A.T @ r + lam * fit.theta
    nA, nr = np.linalg.norm(fit.A), np.linalg.norm(r)
    if nr <= 1e-6 * (np.linalg.norm(fit.b) + nA * np.linalg.norm(fit.theta)):
        event(f"{route}: residual at rounding level")  # nothing left to fit: no direction
        return
    # ‖Aᵀr‖ ≤ ‖A‖‖r‖ always; far below it, r has (almost) no component left in the range of A
    assert np.linalg.norm(grad) <= 1e-5 * (nA * nr + lam * np.linalg.norm(fit.theta))


@pytest.mark.parametrize("projection", [True, False])
def test_nonaffine_data_too_narrow_for_double_precision(nonaffine_compiled, projection):
    """Data spread over 1e-150 with D = 1: the Stein system's diffusion part is ≈ 1e300 and the
    drift parameters that balance it overflow.  It said "the gradient solver's residual is not
    finite at θ = [0.5 -1 nan] … start from a theta0 of moderate size" (fuzz seed 26556; the
    projected e = −(A_aᵀA_a)⁻¹A_aᵀr was 1e151·4e299) or "the drift at θ = … is not finite at
    sample 0"; now the data's scale is named before the search."""
    model, out = nonaffine_compiled
    X = np.random.default_rng(0).standard_normal((20, 2)) * 1e-150
    solver = ds.Solver(
        theta0=(0.5, -1.0, 0.1), lam=0.0, statistic="v", estimator="ridge", projection=projection
    )
    kw = dict(
        features=ds.Features(n_features=32), solver=solver, execution=ds.Execution(out_dir=out)
    )
    with pytest.raises(ds.DataError, match=r"^X: the diffusion part of the Stein system has "):
        ds.fit_global(model, X, **kw)
    # the same data at order one fit; 20 samples may stop the search early, and then the result
    # says so (flag and warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = ds.fit_global(model, X * 1e150, **kw)
    assert np.isfinite(fit.theta).all()
    warned = any(issubclass(w.category, ds.ConvergenceWarning) for w in caught)
    assert warned == (not fit.converged)


@pytest.mark.parametrize("column", [0, 1])
def test_local_gaussian_score_names_a_subnormal_column(models, column):
    """A column scaled by 1e-310 (fuzz seeds 19529, 2268): its local variance is rounding noise
    of either sign; where it came out positive it was inverted, and the fit ended at "the
    assembled local system A θ = b has entries of size 3.4e+301 … rescale the state
    variables".  The local Gaussian score now refuses it, naming the column."""
    X = np.random.default_rng(1).standard_normal((100, 2))
    P = np.random.default_rng(2).uniform(-0.7, 0.7, (10, 2))
    kw = {
        "scores": ds.Scores(score="local_gaussian", temperature=1.0),
        "solver": ds.Solver(lam=0.0),
    }
    ds.fit_local(models["ou2d"], X, P, **kw)  # valid data fit
    X[:, column] *= 1e-310
    with pytest.raises(ds.DataError, match=rf"singular covariance: column {column} of X has no"):
        ds.fit_local(models["ou2d"], X, P, **kw)


@settings(max_examples=20)
@given(
    a=st.floats(1.5, 3.0),  # a·k ≥ 0.75 (bimodal above 1): data reach where tanh bends
    k=st.floats(0.5, 1.2),
    start=st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3),
    route=st.sampled_from(["global", "local"]),
    seed=st.integers(0, 2**31),
)
# the plain corrected Gauss–Newton iteration oscillated here (G' ≈ −0.71 at the fixed point):
# 50 steps ended at a step of 7.2e-9 > 3.5e-10, unconverged; Anderson-accelerated: 9 steps
@example(a=1.5, k=1.0, start=[0.0, 0.0, 0.0], route="global", seed=11549)
# drawn in a later run: the plain loop stopped at 50 steps unconverged here too
@example(a=2.0, k=1.0, start=[0.0, 0.0, 0.0], route="global", seed=457655)
# the corrected loss has no finite minimiser here (k → 0, a → ∞ with a·k → 0.574): the loop ran
# off with steps growing to 368 and stopped at its 50-step cap; now it descends and says so
# (tests/solve/test_fixedpoint.py::test_tanh_fit_without_a_finite_minimiser_says_so)
@example(a=1.5, k=0.5, start=[0.0, 0.0, 0.0], route="global", seed=729013)
# a far, flat minimum (k ≈ 50) and a rank-2 fixed point on the way (k = 1.36, k unresolved): a
# first version of the runaway stop called it "no finite minimiser"; it converges (12 steps)
@example(a=2.5, k=0.96875, start=[0.0, 0.0, 0.0], route="global", seed=342)
# a local minimum at k ≈ 3.4 where the loss flattens: there too the step grew for 8 steps (to
# 0.45, θ ≈ 3); only a step as large as θ itself now counts toward a runaway (19 steps)
@example(a=3.0, k=1.0, start=[0.0, 0.0, 0.0], route="global", seed=1431)
# a = 2.75 on the same sample: with η also halved while steps grew, the line-searched loop crawled
# and stopped at 50 steps (the plain loop had jumped to a rank-2 point in 7); now 8 steps
@example(a=2.75, k=1.0, start=[0.0, 0.0, 0.0], route="global", seed=1431)
def test_nonaffine_exact_law_and_a_zero_parameter(nonaffine_compiled, a, k, start, route, seed):
    """Exact samples of a non-affine gradient drift: the search converges, the truth — e = 0
    for the added x² term — lies in the 1 − 10⁻⁶ interval of every identified parameter, and the
    misspecification test does not reject the true model.  Or, where the sample gives the
    corrected loss no finite minimiser (k → 0 with a·k fixed), the fit says so, and the loss's
    profile, computed in NumPy, confirms it (_no_finite_minimiser)."""
    model, out = nonaffine_compiled
    truth = np.array([a, k, 0.0])
    x = sample_1d(lambda g: a / k * np.log(np.cosh(k * g)) - g**2 / 2, 2000, seed)
    X = np.column_stack([x[:, 0], np.random.default_rng(seed).standard_normal(x.shape[0])])
    theta0 = truth * (1.0 + np.array(start)) + [0.0, 0.0, 0.1 * start[2]]
    if route == "global":
        calls = []
        with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as mp:
            warnings.simplefilter("always", ds.ConvergenceWarning)
            mp.setattr(global_route, "corrected_gauss_newton", _recording(calls))
            fit = ds.fit_global(
                model,
                X,
                solver=ds.Solver(theta0=theta0),
                features=ds.Features(n_features=64),
                execution=ds.Execution(out_dir=out),
            )
        if not fit.converged:
            # the data may give the corrected loss no finite minimiser (k → 0, a → ∞): then the
            # loop must say so, and the NumPy profile of the loss must confirm it
            _no_finite_minimiser(fit, caught, calls)
            event("global: no finite minimiser (flagged, confirmed by the profile)")
            return
    if route == "local":
        P = np.array([[u, v] for u in (-1.2, -0.4, 0.4, 1.2) for v in (-0.5, 0.5)])
        calls = []
        with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as mp:
            warnings.simplefilter("always", ds.ConvergenceWarning)
            mp.setattr(local_route, "corrected_gauss_newton", _recording(calls))
            fit = ds.fit_local(
                model,
                X,
                P,
                solver=ds.Solver(theta0=theta0),
                scores=ds.Scores(score="local_gaussian", temperature=4.0),
                execution=ds.Execution(out_dir=out),
            )
        if not fit.converged:
            # was an OPEN BUG (stop 25): the loop oscillated without a fixed point here (a = 1.5,
            # k = 0.5); it is the same missing minimiser as on the global route
            _no_finite_minimiser(fit, caught, calls)
            event("local: no finite minimiser (flagged, confirmed by the profile)")
            return
    assert fit.converged
    assert fit.report.p_value >= 1e-6
    if fit.report.rank < model.n:
        # a direction left unresolved: the linearised intervals of the other parameters do not
        # account for it (see the xfail above; issue 13, honest intervals)
        event("not identifiable: intervals not checked")
        return
    event("identifiable: intervals checked")
    ci = fit.conf_int(level=1 - 1e-6)
    assert np.all((ci[:, 0] <= truth) & (truth <= ci[:, 1])), fit.summary(truth=truth)


def _recording(calls):
    """corrected_gauss_newton, recording (linearisation, start, loop's last iterate) of each
    call."""

    def recorded(linearisation, theta0, lam, **kw):
        out = corrected_gauss_newton(linearisation, theta0, lam, **kw)
        calls.append((linearisation, np.array(theta0, dtype=float), out[2]["last"]))
        return out

    return recorded


def _no_finite_minimiser(fit, caught, calls):
    """An unconverged global tanh fit is accepted only as a flagged runaway toward a limit of k
    (0, a → ∞, or ∞) along which the corrected loss, minimised over a and e in NumPy
    (strategies.corrected_profile), falls monotonically from the start's k: no finite minimiser
    on that side, so none the descending loop could have reached."""
    messages = [str(w.message) for w in caught if issubclass(w.category, ds.ConvergenceWarning)]
    assert len(messages) == 1 and "appears to have no finite minimiser" in messages[0], messages
    assert fit.info["gn_stop"] == "runaway" and "NOT CONVERGED" in fit.summary(), fit.info
    ((linearisation, theta0, theta),) = calls
    k0 = theta0[1]
    toward = 1e-3 if abs(theta[1]) < abs(k0) else 1e3
    values = [corrected_profile(linearisation, k) for k in k0 * np.geomspace(1.0, toward, 25)]
    assert all(v[2] > 0 for v in values)
    assert np.all(np.diff([v[0] for v in values]) < 0), [v[0] for v in values]


# --------------------------------------------------------------------------- dtypes and scales
# Every input of fit_global, fit_local and simulate, in every container and dtype a user may
# hand over, and the data at every scale from 1e-300 to 1e300.  The oracle is the fit on the
# same numbers, correctly typed (or correctly scaled): the typed input must give exactly that
# result — or, for a type the package refuses (booleans, complex, dates, text), the DataError
# that names the column and the first row.  Never any error, never a silent cast.
_COL = r"in column '(?P<col>[xy])', row (?P<row>\d+)"
REFUSED = {
    "bool": r"^X: holds boolean values " + _COL,
    "complex": r"^X: holds complex numbers " + _COL,
    "datetime": r"^X: holds dates/times " + _COL,
    "timedelta": r"^X: holds time spans " + _COL,
    "text_cell": r"^X: holds text " + _COL + r": 'n/a\?'",
    "numeric_text": r"^X: holds numbers stored as text " + _COL,
    "bigint": r"^X: value " + _COL + r" is beyond the double-precision range",
    "none_cell": r"^X: 1 row\(s\) contain NaN or inf \(rows (?P<row>\d+)\)",
    "nan_cell": r"^X: 1 row\(s\) contain NaN or inf \(rows (?P<row>\d+)\)",
}
CONVERTED = ["float32", "float16", "longdouble", "int64", "int8", "uint16", "object", "mixed"]


def typed(X, kind, rng):
    """(candidate, reference, cell): ``X`` (N, 2) in the dtype ``kind``; the reference is the
    same numbers as float64 (None for a refused kind); cell: the (row, column) named."""
    N = X.shape[0]
    i, j = int(rng.integers(N)), int(rng.integers(2))
    if kind in ("float32", "float16", "longdouble"):
        cand = X.astype(kind)
        return cand, cand.astype(float), None
    if kind in ("int64", "int8"):
        cand = np.round(X * 16).astype(kind)
        return cand, cand.astype(float), None
    if kind == "uint16":
        cand = np.round((X + 8) * 64).astype(kind)
        return cand, cand.astype(float), None
    if kind == "object":  # Python floats
        return X.astype(object), X, None
    if kind == "mixed":  # Python ints, NumPy scalars and Fractions in one object array
        from fractions import Fraction

        cand = X.astype(object)
        cand[i, j] = int(round(X[i, j]))
        cand[(i + 1) % N, 1 - j] = np.float32(X[(i + 1) % N, 1 - j])
        cand[(i + 2) % N, j] = Fraction(3, 8)
        return cand, np.array(cand.tolist(), dtype=float), None
    if kind == "bool":
        return X > 0, None, (0, 0)
    if kind == "complex":
        cand = X + 0j
        if rng.integers(2):
            cand[i, j] += 1e-3j
            return cand, None, (i, j)
        return cand, None, (0, 0)  # all imaginary parts zero: still refused
    if kind == "datetime":
        return np.round(X * 1e6).astype("int64").astype("datetime64[us]"), None, (0, 0)
    if kind == "timedelta":
        return np.round(X * 1e6).astype("int64").astype("timedelta64[us]"), None, (0, 0)
    if kind == "text_cell":
        cand = X.astype(object)
        cand[i, j] = "n/a?"
        return cand, None, (i, j)
    if kind == "numeric_text":
        return X.astype(str), None, (0, 0)
    if kind == "bigint":
        cand = X.astype(object)
        cand[i, j] = 10**400
        return cand, None, (i, j)
    if kind == "none_cell":
        cand = X.astype(object)
        cand[i, j] = None
        return cand, None, (i, j)
    if kind == "nan_cell":
        cand = X.copy()
        cand[i, j] = np.nan
        return cand, None, (i, j)
    raise AssertionError(kind)


def contained(arr, how, rng):
    """``arr`` as an ndarray, a DataFrame (state columns in random order, an extra column) or
    nested lists."""
    if how == "ndarray":
        return arr
    if how == "list":
        return arr.tolist()
    import pandas as pd

    df = pd.DataFrame({s: pd.Series(arr[:, j], dtype=arr.dtype) for j, s in enumerate("xy")})
    df["extra"] = "label"
    return df[list(rng.permutation(["x", "y", "extra"]))]


def outcome(call):
    """("fit", θ) or ("error", exception type, message) of ``call()``; anything else fails."""
    try:
        fit = call()
    except ds.DynosedError as exc:
        return ("error", type(exc).__name__, str(exc))
    assert np.isfinite(fit.theta).all()
    return ("fit", fit.theta.tobytes())


def _typed_call(route, model, P, X):
    if route == "global":
        return lambda: ds.fit_global(model, X, features=ds.Features(n_features=64, seed=1))
    return lambda: ds.fit_local(
        model, X, P, scores=ds.Scores(score="local_gaussian", temperature=2.0)
    )


# equality with the float64 fit is the oracle; local fits at a few probes of N(0, I) data (and
# data of one limit_cycle shape) may give a StationarityWarning for the fitted drift, as they should
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@pytest.mark.parametrize("kind", CONVERTED + sorted(REFUSED))
@settings(max_examples=8)
@given(data=st.data())
def test_typed_inputs_fit_as_their_numbers_or_are_named(compiled, models, kind, data):
    """Data of any dtype in any container: the fit equals, bit for bit, the fit on the same
    numbers as float64 — or, for a dtype the package refuses, the DataError names the column and
    the first row, with the value's kind.  (ndarray, DataFrame with shuffled and extra columns,
    nested lists; float16/32, long double, signed and unsigned integers, Python objects;
    booleans, complex, datetime64, timedelta64, text, numbers stored as text, integers beyond
    double range, None and NaN cells.)"""
    name = data.draw(st.sampled_from(["ou2d", "limit_cycle"]))
    model = models[name]
    route = data.draw(st.sampled_from(["global", "local"]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    X = rng.standard_normal((data.draw(st.integers(150, 300)), 2))
    P = rng.uniform(-0.5, 0.5, (data.draw(st.integers(2, 6)), 2))
    how = data.draw(st.sampled_from(["ndarray", "DataFrame", "list"]))
    cand, ref, cell = typed(X, kind, rng)
    if how == "list" and kind in ("datetime", "timedelta"):
        how = "ndarray"  # (their lists hold Python datetimes: the same refusal, other words)
    event(f"{route}: {how}")
    got = outcome(_typed_call(route, model, P, contained(cand, how, rng)))
    if ref is not None:
        assert got == outcome(_typed_call(route, model, P, ref)), (kind, how, got)
        return
    assert got[0] == "error" and got[1] == "DataError", (kind, how, got)
    match = re.search(REFUSED[kind], got[2])
    assert match, (kind, how, got[2])
    row, col = cell
    if kind == "complex" and how == "DataFrame" and col == 1:
        row, col = 0, 0  # columns are read one by one: column x is complex too (imaginary 0)
    assert int(match.group("row")) == row, got[2]
    if "col" in match.groupdict():
        assert match.group("col") == "xy"[col], got[2]


SCALE_ERRORS = (
    r"^X: the median pairwise distance (overflows|is zero)"
    r"|^X: the samples are spread over a scale of .*rescale the state variables"
    r"|^the assembled (global|local) system A θ = b has entries of size .*rescale"
)


# equivariance is the oracle; local fits at a few probes of N(0, I) data may flag their fitted
# drift (a StationarityWarning) at every scale alike
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@settings(max_examples=60)
@given(st.data())
def test_scaled_data_fit_equivariantly_or_are_refused(compiled, models, data):
    """ou2d on N(0, I) data × c, c = 10^k from 1e-300 to 1e300 (the bandwidth, the kernel
    precision T/c² and the probes scaled with the data, λ = 0): the estimate is the unscaled one
    ÷ c² to rounding (the drift Mx maps to itself under x ↦ cx, D fixed, so M ↦ M/c²), or the
    DataError that says the values are beyond double precision."""
    model = models["ou2d"]
    route = data.draw(st.sampled_from(["global", "local"]))
    limit = 300 if route == "global" else 150  # (T/c² must be a positive double)
    k = data.draw(st.integers(-limit, limit))
    c = 10.0**k
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    X = rng.standard_normal((data.draw(st.integers(300, 600)), 2))
    P = rng.uniform(-0.5, 0.5, (6, 2))
    as_frame = data.draw(st.booleans())
    if route == "global":

        def fit(s):
            Xs = X * s
            if as_frame:
                import pandas as pd

                Xs = pd.DataFrame(Xs, columns=["x", "y"])
            return ds.fit_global(
                model, Xs, features=ds.Features(n_features=64, seed=2), solver=ds.Solver(lam=0.0)
            )
    else:

        def fit(s):
            return ds.fit_local(
                model,
                X * s,
                P * s,
                scores=ds.Scores(score="local_gaussian", temperature=2.0 / s**2),
                solver=ds.Solver(lam=0.0),
            )

    ref = fit(1.0)
    try:
        got = fit(c)
    except ds.DataError as exc:
        event(f"{route}: refused")
        assert re.search(SCALE_ERRORS, str(exc)), (k, str(exc))
        return
    event(f"{route}: fit")
    assert got.report.rank == ref.report.rank, (k, got.summary(), ref.summary())
    scaled = got.theta * c**2
    assert np.abs(scaled - ref.theta).max() <= 1e-6 * np.abs(ref.theta).max(), (k, scaled)


_THETA_KINDS = ["float32", "int64", "object", "list", "dict", "dict_np", "bool", "complex", "text"]


def _typed_theta(theta, names, kind):
    """(candidate, reference or None, pattern): θ in the form ``kind``."""
    if kind == "float32":
        cand = np.asarray(theta, np.float32)
        return cand, cand.astype(float), None
    if kind == "int64":
        return np.asarray(theta).astype(np.int64), np.asarray(theta, dtype=np.int64) * 1.0, None
    if kind == "object":
        return np.asarray(theta, dtype=object), np.asarray(theta), None
    if kind == "list":
        return list(theta), np.asarray(theta), None
    if kind == "dict":
        return dict(zip(names, theta)), np.asarray(theta), None
    if kind == "dict_np":
        return dict(zip(names, np.float32(theta))), np.float32(theta).astype(float), None
    if kind == "bool":
        return dict(zip(names, [True] + list(theta[1:]))), None, r"^theta\['M11'\]: holds boolean"
    if kind == "complex":
        return np.asarray(theta) + 0j, None, r"^theta: holds complex numbers at 'M11'"
    return [str(t) for t in theta], None, r"^theta: holds numbers stored as text at 'M11'"


# equality with the float64 simulation is the oracle; its burn-in is a few steps on purpose
# (fast), so the chains have not settled and the StationarityWarning is expected
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@settings(max_examples=40)
@given(st.data())
def test_typed_simulate_inputs(compiled, models, aniso, data):
    """simulate's θ (array, list, dict, NumPy or Python scalars, float32 or int) and known
    inputs give bit for bit the samples of the same numbers as float64; booleans, complex and
    text are refused naming the parameter or input."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    kind = data.draw(st.sampled_from(_THETA_KINDS))
    event(kind)
    theta = [-1.0, 0.5, -0.5, -1.0] if kind != "int64" else [-2, 1, -1, -2]
    cand, ref, pattern = _typed_theta(theta, ["M11", "M12", "M21", "M22"], kind)
    seed = int(rng.integers(1000))

    def run(th, s=1.5):
        return ds.simulate(aniso, th, 64, inputs={"s": s}, burn_in=5, thin=1, seed=seed)

    if ref is None:
        with pytest.raises(ds.ModelError, match=pattern):
            run(cand)
        return
    np.testing.assert_array_equal(run(cand), run(ref))
    s_kind = data.draw(st.sampled_from(["float32", "int", "object", "bool", "complex", "str"]))
    s_cand = {
        "float32": np.float32(1.5),
        "int": 2,
        "object": np.array(1.5, dtype=object),
        "bool": True,
        "complex": 1.5 + 0j,
        "str": "1.5",
    }[s_kind]
    if s_kind in ("bool", "complex", "str"):
        with pytest.raises(ds.ModelError, match=r"^inputs\['s'\]: holds "):
            run(ref, s_cand)
    else:
        np.testing.assert_array_equal(run(ref, s_cand), run(ref, float(s_cand)))
