"""Gradient solver of the local loss for non-affine drifts (fit_local, nonaffine.LocalProblem).

Oracles: the NumPy/SymPy local residual of docs/method.md §2 (reference.local_residual_reference,
which derives nothing through the package), central finite differences of the compiled residual, the
affine rows (local_rows) and linear solve for affine models, and exact stationary laws.
"""

import warnings
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import PARAMS, assert_rel_close, sample_1d, sde_models

import dynosed_sym as ds
from dynosed_sym.assembly.local import local_rows
from dynosed_sym.errors import DataError
from dynosed_sym.reference import local_residual_reference
from dynosed_sym.solve.gradient import LocalProblem, separable_params

x, y = sp.symbols("x y", real=True)
a, k, b, rho = sp.symbols("a k b rho", real=True)


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("gen_nonaffine_local"))


def test_local_residual_kernel_matches_reference_and_finite_differences(gen_dir):
    # non-affine in a, k, rho (a·tanh(kx), ρ·x·exp(−ky²)) with a state-dependent diffusion, so
    # the ∇·D, ∂ᵢDᵢⱼ and ∇·∇·D terms of β₀ are exercised too
    m = ds.SDEModel(
        [x, y],
        [a, k, rho],
        [a * sp.tanh(k * x) - x + rho * y, -y + rho * x * sp.exp(-k * y**2)],
        diffusion=sp.Matrix([[1 + x**2 / 4, x * y / 8], [x * y / 8, 1 + y**2 / 4]]),
        name="jac_check_local",
    )
    cm = ds.compile_model(m, gen_dir)
    rng = np.random.default_rng(4)
    M = 40
    P, S = rng.standard_normal((M, 2)), rng.standard_normal((M, 2))
    # random J: D is symmetric, so only J's symmetric part enters Tr(D ∇s)
    J = rng.standard_normal((M, 2, 2))
    g = rng.standard_normal(M)
    th = np.array([1.3, 0.8, -0.4])
    prob = LocalProblem(cm, P, S[None], J[None], g)
    r, Jr = prob.evaluate(th)
    np.testing.assert_allclose(
        r * np.sqrt(M), local_residual_reference(m, P, S, J, th, g), rtol=1e-11, atol=1e-11
    )
    h = 1e-6
    Jfd = np.column_stack(
        [
            (prob.evaluate(th + h * e, cols=())[0] - prob.evaluate(th - h * e, cols=())[0])
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    assert np.abs(Jr - Jfd).max() < 1e-7 * np.abs(Jr).max()
    # the local loss (1/M) Σ R² = ‖r‖² and its gradient 2Jᵀr
    loss = lambda t: float(np.sum(prob.evaluate(t, cols=())[0] ** 2))  # noqa: E731
    gfd = np.array([(loss(th + h * e) - loss(th - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(2 * Jr.T @ r, gfd, rtol=1e-6, atol=1e-12)
    # column selection and the replicate systems of the linearisation
    np.testing.assert_array_equal(prob.evaluate(th, cols=[2, 0])[1], Jr[:, [2, 0]])
    prob2 = LocalProblem(cm, P, np.stack([S, -S]), np.stack([J, 2 * J]), g)
    A2, b2 = prob2.linearisation(th)
    r_rep, J_rep = LocalProblem(cm, P, -S[None], 2 * J[None], g).evaluate(th)
    np.testing.assert_allclose(A2[0], Jr, rtol=1e-14)
    np.testing.assert_allclose(A2[1], J_rep, rtol=1e-14)
    np.testing.assert_allclose(b2[1], J_rep @ th - r_rep, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["lorenz", "limit_cycle"])
def test_local_residual_of_affine_models_equals_rows(compiled, model_points, name):
    """For an affine drift R(θ) = a(x)ᵀθ − β(x) and ∂R/∂θ = a(x): two independent symbolic paths."""
    cm = compiled[name]
    m = cm.model
    P = model_points(m, 30, 0)
    rng = np.random.default_rng(1)
    S, J, g = (
        rng.standard_normal((30, m.d)),
        rng.standard_normal((30, m.d, m.d)),
        rng.standard_normal(30),
    )
    A, bb = local_rows(cm, P, S, J, g)
    th = rng.standard_normal(m.n)
    r, Jr = LocalProblem(cm, P, S[None], J[None], g).evaluate(th)
    scale = np.sqrt(30)
    np.testing.assert_allclose(Jr * scale, A, rtol=1e-12, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(r * scale, A @ th - bb, rtol=1e-10, atol=1e-10 * np.abs(bb).max())


@st.composite
def nonaffine_models(draw):
    """A random affine model of test_hypothesis_models plus one term non-affine in θ."""
    base = draw(sde_models(name="hyp_nonaffine"))
    d, n = base.d, base.n
    xs, ps = base.state, list(base.params)
    if n == 1:  # room for a second parameter inside a nonlinearity
        ps.append(PARAMS[1])
    k, l = draw(st.permutations(range(len(ps))))[:2]
    xi, xj = xs[draw(st.integers(0, d - 1))], xs[draw(st.integers(0, d - 1))]
    term = draw(
        st.sampled_from(
            [
                ps[k] * sp.tanh(ps[l] * xi),
                ps[k] * sp.exp(-(ps[l] ** 2) * xi**2),
                ps[k] ** 2 * xi * xj,
                ps[k] * xi / (1 + ps[l] ** 2 * xj**2),
                ps[k] * sp.sin(ps[l] * xi + xj),
            ]
        )
    )
    drift = list(base.drift)
    drift[draw(st.integers(0, d - 1))] += term
    kw = {"noise": base.G} if base.G is not None else {"diffusion": base.D}
    return ds.SDEModel(list(xs), ps, drift, name="hyp_nonaffine", **kw)


@settings(max_examples=40)
@given(nonaffine_models(), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_local_residual_hypothesis_models(gen_dir, model, M, seed):
    """Random non-affine models: the generated point kernel (py_func, not compiled) gives the
    reference residual, and its θ-gradient matches central differences of itself."""
    assert not model.is_affine
    module = ds.compile_model(model, gen_dir).module
    rng = np.random.default_rng(seed)
    P = rng.uniform(-2.0, 2.0, (M, model.d))
    S, J, g = (
        rng.standard_normal((M, model.d)),
        rng.standard_normal((M, model.d, model.d)),
        rng.standard_normal(M),
    )
    th = rng.uniform(-2.0, 2.0, model.n)

    def kernel(t):
        R, dR = np.empty(M), np.empty((M, model.n))
        for i in range(M):
            module.local_residual_point.py_func(P[i], S[i], J[i], g[i], t, R[i : i + 1], dR[i])
        return R, dR

    R, dR = kernel(th)
    assert_rel_close(R, local_residual_reference(model, P, S, J, th, g), 1e-10, "R")
    h = 1e-6
    dR_fd = np.column_stack(
        [(kernel(th + h * e)[0] - kernel(th - h * e)[0]) / (2 * h) for e in np.eye(model.n)]
    )
    assert_rel_close(dR, dR_fd, 1e-6, "dR/dθ")


def _tanh_scores(P, tru):
    """Exact score of p ∝ cosh(kx)^(a/k) exp(−x²/2) and its derivative at probes (M, 1)."""
    t = np.tanh(tru[1] * P[:, 0])
    return (tru[0] * t - P[:, 0])[:, None], (tru[0] * tru[1] * (1 - t**2) - 1)[:, None, None]


def test_tanh_1d_exact_scores_from_poor_start(gen_dir):
    m = ds.SDEModel([x], [a, k], [a * sp.tanh(k * x) - x], diffusion=1, name="tanh_bi_local")
    tru = np.array([3.0, 0.7])
    P = np.linspace(-4, 4, 17)[:, None]
    S, J = _tanh_scores(P, tru)
    fit = ds.fit_local(
        m,
        None,
        P,
        scores=ds.Scores(score=(S, J)),
        solver=ds.Solver(lam=0.0, theta0=[1.0, 0.1]),
        execution=ds.Execution(out_dir=gen_dir),
    )
    assert fit.info["solver"] == "gradient" and fit.route == "local"
    np.testing.assert_allclose(fit.theta, tru, rtol=1e-9)
    assert fit.report.rank == 2
    # the report is taken on the linearisation at the optimum: A = ∂r/∂θ, b = Aθ̂ − r(θ̂) = Aθ̂
    np.testing.assert_allclose(fit.A @ fit.theta, fit.b, atol=1e-10)
    # multi-start from a start on the wrong side (k < 0 mirrors tanh) still finds the truth
    fit3 = ds.fit_local(
        m,
        None,
        P,
        scores=ds.Scores(score=(S, J)),
        solver=ds.Solver(lam=0.0, theta0=[-1.0, -0.3], n_starts=4, seed=1),
        execution=ds.Execution(out_dir=gen_dir),
    )
    assert np.abs(fit3.theta - tru).max() < 1e-8 or np.abs(fit3.theta - tru * [-1, -1]).max() < 1e-8
    # nominal values are a starting point; neither theta0 nor nominal: NotAffineError naming theta0
    mn = ds.SDEModel(
        [x], [a, k], [a * sp.tanh(k * x) - x], diffusion=1, name="tanh_bi_local", nominal=[1.0, 0.1]
    )
    np.testing.assert_allclose(
        ds.fit_local(
            mn,
            None,
            P,
            scores=ds.Scores(score=(S, J)),
            solver=ds.Solver(lam=0.0),
            execution=ds.Execution(out_dir=gen_dir),
        ).theta,
        tru,
        rtol=1e-9,
    )
    with pytest.raises(ds.NotAffineError, match="theta0"):
        ds.fit_local(
            m, None, P, scores=ds.Scores(score=(S, J)), execution=ds.Execution(out_dir=gen_dir)
        )
    with pytest.raises(ds.NotAffineError):
        ds.fit_local(
            m,
            None,
            P,
            scores=ds.Scores(score=(S, J)),
            solver=ds.Solver(method="linear", theta0=[1.0, 0.1]),
            execution=ds.Execution(out_dir=gen_dir),
        )
    with pytest.raises(DataError, match=r"Solver\.method"):
        ds.fit_local(
            m,
            None,
            P,
            scores=ds.Scores(score=(S, J)),
            solver=ds.Solver(method="newton", theta0=[1.0, 0.1]),
            execution=ds.Execution(out_dir=gen_dir),
        )
    with pytest.raises(DataError, match="n_starts"):
        ds.fit_local(
            m,
            None,
            P,
            scores=ds.Scores(score=(S, J)),
            solver=ds.Solver(theta0=[1.0, 0.1], n_starts=0),
            execution=ds.Execution(out_dir=gen_dir),
        )


def test_local_variable_projection_same_optimum(gen_dir, tmp_path):
    m = ds.SDEModel([x], [a, k, b], [a * sp.tanh(k * x) - b * x], diffusion=1, name="tanh_ab_local")
    assert separable_params(m) == [2]
    tru = np.array([3.0, 0.7, 1.0])
    X = sample_1d(lambda g: tru[0] / tru[1] * np.log(np.cosh(tru[1] * g)) - g**2 / 2, 20_000, 0)
    P = ds.choose_probes(X, 20, seed=0)
    scores = ds.Scores(score="score_matching", radius=1.5, degree=4)
    kw = dict(scores=scores, execution=ds.Execution(out_dir=gen_dir))
    theta0 = [1.0, 0.1, 2.0]
    vp = ds.fit_local(m, X, P, solver=ds.Solver(theta0=theta0, projection=True), **kw)
    full = ds.fit_local(m, X, P, solver=ds.Solver(theta0=theta0, projection=False), **kw)
    assert vp.info["projected"] == "b" and "projected" not in full.info
    # printed at generation, read when fitting
    assert ds.compile_model(m, gen_dir).module.SEPARABLE == (2,)
    np.testing.assert_allclose(vp.theta, full.theta, rtol=1e-6)
    np.testing.assert_allclose(vp.std_errors, full.std_errors, rtol=1e-4)
    # a streamed X (memory-mapped .npy, read in chunks) gives the same scores and noise blocks,
    # hence the same fit and jackknife
    path = tmp_path / "X.npy"
    np.save(path, X)
    st = ds.fit_local(
        m,
        str(path),
        P,
        scores=scores,
        solver=ds.Solver(theta0=theta0, projection=True),
        execution=ds.Execution(out_dir=gen_dir, chunk_rows=3000),
    )
    np.testing.assert_allclose(st.theta, vp.theta, rtol=1e-9)
    np.testing.assert_allclose(st.std_errors, vp.std_errors, rtol=1e-6)


def test_affine_model_through_local_gradient_route_matches_linear_solve(gen_dir):
    m = ds.SDEModel(
        [x, y],
        [a, b, rho],
        [-a * x + rho * y, -b * y + x**2 / 4],
        diffusion=1,
        name="affine2d_local",
    )
    X = np.random.default_rng(2).standard_normal((20_000, 2))
    P = ds.choose_probes(X, 15, seed=0)
    kw = dict(scores=ds.Scores(temperature=4.0), execution=ds.Execution(out_dir=gen_dir))
    lin = ds.fit_local(m, X, P, **kw)
    grad = ds.fit_local(m, X, P, solver=ds.Solver(method="gradient", projection=False), **kw)
    proj = ds.fit_local(m, X, P, solver=ds.Solver(method="gradient"), **kw)
    assert (
        grad.info["solver"] == "gradient"
        and "solver" not in lin.info
        and proj.info["projected"] == "a,b,rho"
    )
    np.testing.assert_allclose(grad.theta, lin.theta, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(proj.theta, lin.theta, rtol=1e-8, atol=1e-10)
    for fit in (grad, proj):
        np.testing.assert_allclose(fit.A, lin.A, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fit.b, lin.b, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(fit.std_errors, lin.std_errors, rtol=1e-4)
        assert fit.report.rank == lin.report.rank == 3


# ------------------------------------------------------------------ 2-D, exact stationary law
# f = −∇V with V = ½x² + ½y² − ρxy − (a/k) log cosh(kx), D = I: p ∝ exp(−V) exactly (bimodal in
# x). Exact draws: y | x ~ N(ρx, 1), and the x-marginal ∝ cosh(kx)^(a/k) exp(−(1 − ρ²)x²/2) by
# inverse CDF on a fine grid.
TRUTH_2D = np.array([2.0, 0.7, 0.5])


def sample_grad2d(n, seed, tru=TRUTH_2D):
    xs = sample_1d(
        lambda g: tru[0] / tru[1] * np.log(np.cosh(tru[1] * g)) - (1 - tru[2] ** 2) * g**2 / 2,
        n,
        seed,
    )
    ys = tru[2] * xs + np.random.default_rng(seed + 1000).standard_normal(xs.shape)
    return np.hstack([xs, ys])


def test_gradient_drift_2d_both_routes(gen_dir):
    """Both routes recover (a, k, ρ) of the 2-D gradient model from exact draws.

    Local route: score matching (degree 4, radius 1.8) at 60 k-means probes, 2·10⁵ draws; global
    route: the first 10⁵ draws.  k is the weakly determined parameter (its reported standard
    error is about three times the others' in relative terms).  Asserted for data seed 0:
    within 4 reported standard errors, and 10 % (local) / 4 % (global).
    """
    m = ds.SDEModel(
        [x, y],
        [a, k, rho],
        [-x + rho * y + a * sp.tanh(k * x), -y + rho * x],
        diffusion=1,
        name="grad2d_local",
    )
    X = sample_grad2d(200_000, 0)
    start = [0.5, 0.2, 0.0]
    # exact scores s = −∇V at the probes: the residual vanishes at the truth, recovered exactly
    P = ds.choose_probes(X[:20_000], 60, seed=0)
    t = np.tanh(TRUTH_2D[1] * P[:, 0])
    S = np.column_stack(
        [-P[:, 0] + TRUTH_2D[2] * P[:, 1] + TRUTH_2D[0] * t, -P[:, 1] + TRUTH_2D[2] * P[:, 0]]
    )
    Jx = np.zeros((60, 2, 2))
    Jx[:, 0, 0] = -1 + TRUTH_2D[0] * TRUTH_2D[1] * (1 - t**2)
    Jx[:, 0, 1] = Jx[:, 1, 0] = TRUTH_2D[2]
    Jx[:, 1, 1] = -1
    exact = ds.fit_local(
        m,
        None,
        P,
        scores=ds.Scores(score=(S, Jx)),
        solver=ds.Solver(lam=0.0, theta0=start),
        execution=ds.Execution(out_dir=gen_dir),
    )
    np.testing.assert_allclose(exact.theta, TRUTH_2D, rtol=1e-9)

    local = ds.fit_local(
        m,
        X,
        P,
        scores=ds.Scores(score="score_matching", radius=1.8, degree=4),
        solver=ds.Solver(theta0=start),
        execution=ds.Execution(out_dir=gen_dir),
    )
    glob = ds.fit_global(
        m, X[:100_000], solver=ds.Solver(theta0=start), execution=ds.Execution(out_dir=gen_dir)
    )
    for fit, tol in ((local, 0.10), (glob, 0.04)):
        err = np.abs(fit.theta / TRUTH_2D - 1)
        print(
            f"2-D gradient model, {fit.route} route: relative errors {np.round(err, 4)}, "
            f"|error|/std.err {np.round(np.abs(fit.theta - TRUTH_2D) / fit.std_errors, 2)}"
        )
        assert fit.info["solver"] == "gradient" and fit.info["projected"] == "rho"
        assert fit.report.rank == 3 and fit.report.unique
        assert err.max() < tol
        assert np.all(np.abs(fit.theta - TRUTH_2D) < 4 * fit.std_errors)


def test_local_search_stopped_by_max_nfev_is_flagged(gen_dir):
    """The local gradient solver reports a search stopped by max_nfev (flag, summary line,
    ConvergenceWarning), and a normal fit as converged."""
    m = ds.SDEModel([x], [a, k], [a * sp.tanh(k * x) - x], diffusion=1, name="tanh_bi_local")
    tru = np.array([3.0, 0.7])
    P = np.linspace(-4, 4, 17)[:, None]
    S, J = _tanh_scores(P, tru)
    kw = dict(scores=ds.Scores(score=(S, J)), execution=ds.Execution(out_dir=gen_dir))
    solver = ds.Solver(lam=0.0, theta0=[1.0, 0.1])
    with pytest.warns(ds.ConvergenceWarning, match="gradient search did not converge"):
        fit = ds.fit_local(m, None, P, solver=replace(solver, max_nfev=2, n_starts=2), **kw)
    assert fit.converged is False and fit.info["converged"] is False
    assert "start 0: The maximum number of function evaluations" in fit.info["message"]
    assert "NOT CONVERGED: start 0:" in fit.summary().splitlines()[1]
    assert fit.to_dict()["converged"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        ok = ds.fit_local(m, None, P, solver=solver, **kw)
    assert ok.converged and ok.info["status"] in (1, 2, 3, 4)
    np.testing.assert_allclose(ok.theta, tru, rtol=1e-9)
    assert "NOT CONVERGED" not in ok.summary()
