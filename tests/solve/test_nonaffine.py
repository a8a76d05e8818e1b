"""Gradient solver of the global loss for non-affine drifts (dynosed_sym.solve.gradient)."""

import time
import warnings
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
from strategies import sample_1d, sample_2d

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features, median_lengthscale
from dynosed_sym.data.blocks import block_edges
from dynosed_sym.solve.gradient import GlobalProblem, separable_params

x, y = sp.symbols("x y", real=True)
a, k, b, rho = sp.symbols("a k b rho", real=True)
OU_M12 = np.array([[-1.0, 0.5], [-0.5, -1.0]])


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("gen_nonaffine"))


def test_tanh_1d_recovered_from_poor_start(gen_dir):
    # dx = (a tanh(kx) − x) dt + √2 dW: p ∝ cosh(kx)^(a/k) exp(−x²/2), bimodal
    m = ds.SDEModel([x], [a, k], [a * sp.tanh(k * x) - x], diffusion=1, name="tanh_bi")
    assert not m.is_affine
    tru = np.array([3.0, 0.7])
    X = sample_1d(lambda g: tru[0] / tru[1] * np.log(np.cosh(tru[1] * g)) - g**2 / 2, 10_000, 0)
    fit = ds.fit_global(
        m, X, solver=ds.Solver(theta0=[1.0, 0.1]), execution=ds.Execution(out_dir=gen_dir)
    )
    assert fit.info["solver"] == "gradient"
    err = np.abs(fit.theta / tru - 1)
    print("tanh 1-D relative errors", err, "std.err/truth", fit.std_errors / tru)
    assert err.max() < 0.05
    rep = fit.report
    assert rep.rank == 2 and rep.consistent
    assert np.all(np.abs(fit.theta - tru) < 4 * fit.std_errors)
    assert "gradient" in fit.summary(truth=tru)


def test_no_start_raises_not_affine(gen_dir):
    m = ds.SDEModel([x], [k], [-(k**2) * x], diffusion=1, name="ksq")
    with pytest.raises(ds.NotAffineError, match="theta0"):
        ds.fit_global(
            m,
            np.random.default_rng(0).standard_normal((50, 1)),
            execution=ds.Execution(out_dir=gen_dir),
        )
    # nominal values are a starting point
    m2 = ds.SDEModel([x], [k], [-(k**2) * x], diffusion=1, name="ksq", nominal=[0.5])
    fit = ds.fit_global(
        m2,
        np.random.default_rng(0).standard_normal((4000, 1)),
        execution=ds.Execution(out_dir=gen_dir),
    )
    assert abs(abs(fit.theta[0]) - 1.0) < 0.1


def test_compiled_jacobian_matches_finite_differences(gen_dir):
    m = ds.SDEModel(
        [x, y],
        [a, k, rho],
        [a * sp.tanh(k * x) - x + rho * y, -y + rho * x * sp.exp(-k * y**2)],
        diffusion=sp.Matrix([[1 + x**2 / 4, 0], [0, 1]]),
        name="jac_check",
    )
    cm = ds.compile_model(m, gen_dir)
    X = np.random.default_rng(1).standard_normal((3000, 2))
    feats = draw_features(2, 256, median_lengthscale(X), seed=3)
    prob = GlobalProblem(cm, X, feats, block_edges(X.shape[0], 4))
    th = np.array([1.3, 0.8, -0.4])
    r, J = prob.evaluate(th)
    h = 1e-6
    Jfd = np.column_stack(
        [
            (prob.evaluate(th + h * e, cols=())[0] - prob.evaluate(th - h * e, cols=())[0])
            / (2 * h)
            for e in np.eye(3)
        ]
    )
    assert np.abs(J - Jfd).max() < 1e-7 * np.abs(J).max()
    # the loss ‖r‖² and its gradient 2Jᵀr
    loss = lambda t: float(np.sum(prob.evaluate(t, cols=())[0] ** 2))  # noqa: E731
    gfd = np.array([(loss(th + h * e) - loss(th - h * e)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(2 * J.T @ r, gfd, rtol=1e-5, atol=1e-12)


def test_variable_projection_same_optimum_and_faster(gen_dir):
    m = ds.SDEModel([x], [a, k, b], [a * sp.tanh(k * x) - b * x], diffusion=1, name="tanh_ab")
    assert separable_params(m) == [2]  # b only: a's column tanh(kx) depends on k
    tru = np.array([3.0, 0.7, 1.0])
    X = sample_1d(lambda g: tru[0] / tru[1] * np.log(np.cosh(tru[1] * g)) - g**2 / 2, 10_000, 0)
    solver = ds.Solver(theta0=[1.0, 0.1, 2.0])
    kw = dict(execution=ds.Execution(out_dir=gen_dir))
    ds.fit_global(m, X[:200], solver=solver, **kw)  # warm the kernels
    t0 = time.perf_counter()
    vp = ds.fit_global(m, X, solver=replace(solver, projection=True), **kw)
    t1 = time.perf_counter()
    full = ds.fit_global(m, X, solver=replace(solver, projection=False), **kw)
    t2 = time.perf_counter()
    print(
        f"variable projection {t1 - t0:.3f} s ({vp.info['nfev']} evaluations), "
        f"full search {t2 - t1:.3f} s ({full.info['nfev']} evaluations)"
    )
    assert vp.info["projected"] == "b" and "projected" not in full.info
    np.testing.assert_allclose(vp.theta, full.theta, rtol=1e-5)


def test_affine_model_through_gradient_route_matches_linear_solve(gen_dir):
    m = ds.SDEModel(
        [x, y], [a, b, rho], [-a * x + rho * y, -b * y + x**2 / 4], diffusion=1, name="affine2d"
    )
    X = np.random.default_rng(2).standard_normal((5000, 2))
    lin = ds.fit_global(
        m, X, execution=ds.Execution(out_dir=gen_dir), features=ds.Features(n_features=512)
    )
    grad = ds.fit_global(
        m,
        X,
        execution=ds.Execution(out_dir=gen_dir),
        features=ds.Features(n_features=512),
        solver=ds.Solver(method="gradient", projection=False),
    )
    proj = ds.fit_global(
        m,
        X,
        execution=ds.Execution(out_dir=gen_dir),
        features=ds.Features(n_features=512),
        solver=ds.Solver(method="gradient"),
    )
    assert grad.info["solver"] == "gradient" and "solver" not in lin.info
    np.testing.assert_allclose(grad.theta, lin.theta, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(proj.theta, lin.theta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(grad.A, lin.A, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad.b, lin.b, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad.std_errors, lin.std_errors, rtol=1e-4)


def test_gradient_drift_2d_recovered(gen_dir):
    # f = −∇V with V = ½x² + ½y² − ρxy − (a/k) log cosh(kx), D = I: p ∝ exp(−V) exactly
    m = ds.SDEModel(
        [x, y],
        [a, k, rho],
        [-x + rho * y + a * sp.tanh(k * x), -y + rho * x],
        diffusion=1,
        name="grad2d",
    )
    tru = np.array([2.0, 0.7, 0.5])

    def logp(u, v):
        return -(
            0.5 * u**2 + 0.5 * v**2 - tru[2] * u * v - tru[0] / tru[1] * np.log(np.cosh(tru[1] * u))
        )

    X = sample_2d(logp, 20_000, 0, lim=9.0)
    fit = ds.fit_global(
        m, X, solver=ds.Solver(theta0=[0.5, 0.2, 0.0]), execution=ds.Execution(out_dir=gen_dir)
    )
    err = np.abs(fit.theta / tru - 1)
    print("2-D gradient drift relative errors", err, "std.err/truth", fit.std_errors / tru)
    assert err.max() < 0.1
    assert fit.report.rank == 3
    assert np.all(np.abs(fit.theta - tru) < 4 * fit.std_errors)


@pytest.mark.parametrize("projection", [True, False])
def test_search_stopped_by_max_nfev_is_flagged(gen_dir, projection):
    """A search stopped by max_nfev: FitResult.converged False, NOT CONVERGED in the summary, a
    ConvergenceWarning; the same fit without the cap converges and says nothing."""
    m = ds.SDEModel([x], [a, k, b], [a * sp.tanh(k * x) - b * x], diffusion=1, name="tanh_ab")
    tru = np.array([3.0, 0.7, 1.0])
    X = sample_1d(lambda g: tru[0] / tru[1] * np.log(np.cosh(tru[1] * g)) - g**2 / 2, 4000, 0)
    solver = ds.Solver(theta0=[1.0, 0.1, 2.0], projection=projection)
    kw = dict(features=ds.Features(n_features=256), execution=ds.Execution(out_dir=gen_dir))
    with pytest.warns(ds.ConvergenceWarning, match="gradient search did not converge"):
        fit = ds.fit_global(m, X, solver=replace(solver, max_nfev=2), **kw)
    assert fit.converged is False and fit.info["converged"] is False
    assert (
        fit.info["status"] == 0 and "maximum number of function evaluations" in fit.info["message"]
    )
    text = fit.summary()
    assert "NOT CONVERGED: The maximum number of function evaluations" in text.splitlines()[1]
    assert "NOT CONVERGED" in repr(fit)
    assert fit.to_dict()["converged"] is False and fit.to_dataframe().attrs["converged"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        ok = ds.fit_global(m, X, solver=solver, **kw)
    assert ok.converged and ok.info["converged"] and ok.info["status"] in (1, 2, 3, 4)
    assert "NOT CONVERGED" not in ok.summary() and ok.to_dict()["converged"] is True
    with pytest.raises(ds.DataError, match="max_nfev"):
        ds.fit_global(m, X, solver=replace(solver, max_nfev=0), **kw)


def test_linear_solve_is_converged(compiled, models, ou_samples):
    fit = ds.fit_global(
        models["ou2d_m12"], ou_samples(OU_M12, 1.0, 2000, 0), features=ds.Features(n_features=64)
    )
    assert fit.converged and "converged" not in fit.info and "NOT CONVERGED" not in fit.summary()


def test_start_outside_the_drifts_domain_names_theta():
    """A start (theta0) at which the drift is undefined (x/a at a = 0) was reported as "the drift
    is not finite at sample 0", blaming the data: the message now names θ."""
    x, a = sp.symbols("x a", real=True)
    m = ds.SDEModel([x], [a], [-x / a], diffusion=sp.Rational(1, 2), name="div_start")
    X = np.random.default_rng(0).standard_normal((400, 1))
    with pytest.raises(ds.DataError, match=r"^the drift at θ = \[0\.\] is not finite at sample 0"):
        ds.fit_global(m, X, solver=ds.Solver(theta0=[0.0]))
