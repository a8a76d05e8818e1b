"""Local route: generated row kernels against the NumPy reference (zoo models and Hypothesis
models), exact-score recovery on the 2-D OU, the FitResult it returns, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import _random_inputs, _rows_py, assert_rel_close, sde_models

import dynosed_sym as ds
from dynosed_sym.assembly.local import local_rows
from dynosed_sym.reference import local_residual_reference, local_rows_reference


# --------------------------------------------------------------------------- kernels vs reference
def test_local_rows_match_reference(model, cmodel, model_points):
    P = model_points(model, 40, seed=3)
    S, J, g = _random_inputs(model, P, seed=4)
    A, b = local_rows(cmodel, P, S, J, g)
    A_ref, b_ref = local_rows_reference(model, P, S, J, g)
    assert_rel_close(A, A_ref, 1e-11, "A")
    assert_rel_close(b, b_ref, 1e-11, "b")
    # the pure-Python kernels (py_func) agree with the compiled ones
    A_py, b_py = _rows_py(cmodel.module, P, S, J, g, model.n)
    np.testing.assert_allclose(A_py, A, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(A).max()))
    np.testing.assert_allclose(b_py, b, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(b).max()))
    A2 = np.empty_like(A)
    b2 = np.empty_like(b)
    cmodel.module.local_rows.py_func(P, S, J, g, A2, b2)
    np.testing.assert_array_equal(A2, A)


def test_residual_is_affine_with_rows(models, model_points):
    """A θ − b equals the residual computed from the unsplit drift, at any θ."""
    model = models["lorenz"]
    P = model_points(model, 10, seed=1)
    S, J, g = _random_inputs(model, P, seed=2)
    A, b = local_rows(ds.compile_model(model), P, S, J, g)
    theta = np.array([3.0, -2.0, 0.5])
    R = local_residual_reference(model, P, S, J, theta, g)
    np.testing.assert_allclose(A @ theta - b, R, rtol=1e-12, atol=1e-10)


def test_local_symbolic_rows_of_lorenz(models):
    loc = models["lorenz"].derivation.local
    s0, s1, s2 = loc.score
    x, y, z = models["lorenz"].state
    assert sp.simplify(loc.a[0] - (s0 * (y - x) - 1)) == 0
    assert sp.simplify(loc.a[1] - s1 * x) == 0
    assert sp.simplify(loc.a[2] - (-s2 * z - 1)) == 0


@settings(max_examples=150)
@given(sde_models(), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_local_rows_hypothesis_models(hyp_dir, model, M, seed):
    """Random affine models (constant, full or state-dependent D): py_func rows = reference."""
    loaded = ds.compile_model(model, hyp_dir)
    P = np.random.default_rng(seed).uniform(-2.0, 2.0, (M, model.d))
    S, J, g = _random_inputs(model, P, seed + 1)
    A, b = _rows_py(loaded.module, P, S, J, g, model.n)
    A_ref, b_ref = local_rows_reference(model, P, S, J, g)
    assert_rel_close(A, A_ref, 1e-10, "A")
    assert_rel_close(b, b_ref, 1e-10, "b")


@settings(max_examples=3)
@given(sde_models(), hnp.arrays(np.float64, (20, 3), elements=st.floats(-2, 2)))
def test_local_rows_hypothesis_compiled(hyp_dir, model, raw):
    cm = ds.compile_model(model, hyp_dir)
    P = np.ascontiguousarray(raw[:, : model.d])
    S, J, g = _random_inputs(model, P, 0)
    A, b = local_rows(cm, P, S, J, g)
    A_ref, b_ref = local_rows_reference(model, P, S, J, g)
    assert_rel_close(A, A_ref, 1e-10, "A")
    assert_rel_close(b, b_ref, 1e-10, "b")


@pytest.fixture(scope="session")
def hyp_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hypothesis_local"))


def test_step_functions_use_almost_everywhere_derivatives(tmp_path):
    """Heaviside/sign/floor drifts: DiracDelta terms are dropped, the kernel prints and runs."""
    x = sp.Symbol("x", real=True)
    k = sp.Symbol("k", real=True)
    m = ds.SDEModel(
        [x], [k], [k * sp.Heaviside(x) + sp.floor(x) - x], diffusion=sp.Abs(x) + 1, name="steps"
    )
    cm = ds.compile_model(m, str(tmp_path))
    P = np.array([[0.3], [-1.7]])
    A, b = local_rows(cm, P, np.array([[0.5], [1.0]]), np.array([[[-1.0]], [[-2.0]]]), np.zeros(2))
    # a = s·H(x); β = s²D + J D + 2 s sign(x) − s(floor(x) − x) + 1
    np.testing.assert_allclose(A[:, 0], [0.5, 0.0])
    s, J, xv = np.array([0.5, 1.0]), np.array([-1.0, -2.0]), P[:, 0]
    D = np.abs(xv) + 1
    np.testing.assert_allclose(
        b, s * s * D + J * D + 2 * s * np.sign(xv) - s * (np.floor(xv) - xv) + 1
    )


# --------------------------------------------------------------------------- exact scores (OU)
def _ou_exact(model, P, ou_cov):
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    Prec = np.linalg.inv(ou_cov(M, 1.0))
    return -P @ Prec.T, np.broadcast_to(-Prec, (P.shape[0], 2, 2)).copy()


def test_ou_exact_scores_recover_identifiable_entries(models, ou_cov):
    """Exact scores and Jacobians at probes: the assembly alone, identifiable entries to 1e-6."""
    P = np.random.default_rng(0).normal(size=(12, 2))
    full = models["ou2d"]
    fit = ds.fit_local(
        full,
        None,
        P,
        scores=ds.Scores(score=_ou_exact(full, P, ou_cov)),
        solver=ds.Solver(lam=1e-12),
    )
    M11, M12, M21, M22 = fit.theta
    assert fit.report.rank == 3 and not fit.report.unique
    assert str(fit.report.null_space[0]) == "0.707·M12 − 0.707·M21"  # a tie: by position
    assert abs(M11 + 1.0) < 1e-6 and abs(M22 + 1.0) < 1e-6 and abs(M12 + M21) < 1e-6
    fit = ds.fit_local(
        models["ou2d_m12"],
        None,
        P,
        scores=ds.Scores(score=_ou_exact(full, P, ou_cov)),
        solver=ds.Solver(lam=1e-12),
    )
    assert fit.report.unique and abs(fit.theta[0] - 0.5) < 1e-6
    assert fit.report.residual_norm < 1e-10
    # the default λ = 1e-6 costs about λ/σ_min² (here ≈ 2e-6)
    fit = ds.fit_local(full, None, P, scores=ds.Scores(score=_ou_exact(full, P, ou_cov)))
    assert np.abs(fit.theta[[0, 3]] + 1.0).max() < 1e-5


def test_local_fit_result(models, ou_samples):
    model = models["ou2d_m12"]
    X = ou_samples(np.array([[-1.0, 0.5], [-0.5, -1.0]]), 1.0, 50_000, seed=0)
    fit = ds.fit_local(
        model, X, np.array([[0.0, 0.0], [1.0, 0.5], [-0.5, 1.0]]), scores=ds.Scores(temperature=9.0)
    )
    assert fit.route == "local" and fit.n_samples == 50_000
    assert fit.A.shape == (3, 1) and fit.b.shape == (3,)
    assert (
        fit.info["score"] == "kernel"
        and fit.info["temperature"] == 9.0
        and fit.info["blocks"] == 32
    )
    assert isinstance(fit.report, ds.IdentifiabilityReport)
    assert fit.report.singular_noise is not None and fit.report.residual_ratio is not None
    assert fit.scores.score.shape == (3, 2) and fit.scores.n_blocks == 32
    assert "local route" in fit.summary()
    # rows scaled by 1/√M: ‖Aθ − b‖² is the mean squared residual
    R = local_residual_reference(
        model, fit.probes, fit.scores.score, fit.scores.jacobian, fit.theta
    )
    np.testing.assert_allclose(np.sum((fit.A @ fit.theta - fit.b) ** 2), np.mean(R**2), rtol=1e-10)


def test_local_defaults_resolved_estimator_and_the_earlier_fit(models, ou_samples):
    """fit_local defaults: V-statistic, resolved estimator (the unidentified pair M12, M21 of the
    all-free OU with the ridge's component along the unresolved direction — the same estimate as
    the Tikhonov solve, docs/design-statistics.md §8 —, infinite intervals, loadings reported);
    statistic="v", estimator="ridge" is the Tikhonov solve of the same system, bit for bit."""
    from dynosed_sym.solve.linear import solve_tikhonov

    model = models["ou2d"]
    X = ou_samples(np.array([[-1.0, 0.5], [-0.5, -1.0]]), 1.0, 200_000, seed=2)
    balls = ds.Balls(np.array([[0.0, 0.0], [1.0, 0.3], [-0.4, 1.0], [0.6, -1.0]]), 1.0)
    Xin = balls.restrict(X)
    fit = ds.fit_local(model, Xin, balls, scores=ds.Scores(score="score_matching"))
    assert fit.info["statistic"] == "v" and fit.info["estimator"] == "resolved"
    rep = fit.report
    assert rep.rank == 3 and rep.status[1] == rep.status[2] == "not identifiable"
    null = rep.null_vectors[:, 0]
    assert np.isinf(fit.conf_int()[1:3]).all() and rep.loading[1] > 0.5
    old = ds.fit_local(
        model,
        Xin,
        balls,
        scores=ds.Scores(score="score_matching"),
        solver=ds.Solver(statistic="v", estimator="ridge"),
    )
    assert np.array_equal(old.A, fit.A)
    assert np.array_equal(old.theta, solve_tikhonov(old.A, old.b, 1e-6))
    # along the unresolved direction the ridge's component (V-statistic on R: the whole estimate)
    assert null @ fit.theta == pytest.approx(null @ old.theta, rel=1e-9)
    # on R the resolved estimator has no λ: the two differ by O(λ/σ²) there only
    np.testing.assert_allclose(fit.theta, old.theta, rtol=1e-5)


def test_local_fit_dataframe_and_balls(models, ou_samples):
    import pandas as pd

    model = models["ou2d"]
    X = ou_samples(np.array([[-1.0, 0.5], [-0.5, -1.0]]), 1.0, 20_000, seed=1)
    balls = ds.Balls(np.array([[0.0, 0.0], [1.0, 0.0]]), 1.0)
    Xin = balls.restrict(X)
    fit = ds.fit_local(
        model,
        pd.DataFrame(Xin[:, ::-1], columns=["y", "x"]),
        balls,
        scores=ds.Scores(score="score_matching"),
    )
    assert fit.info["radius"] == 1.0 and fit.info["degree"] == 2
    fit2 = ds.fit_local(
        model, Xin, balls.centres, scores=ds.Scores(score="score_matching", radius=1.0)
    )
    np.testing.assert_array_equal(fit.theta, fit2.theta)


def test_callable_score_and_jackknife(models):
    model = models["ou2d_m12"]
    X = np.zeros((64, 2))

    def exact(X, P):
        return -P, np.broadcast_to(-np.eye(2), (P.shape[0], 2, 2))

    fit = ds.fit_local(
        model,
        X,
        np.array([[1.0, 2.0], [0.5, -1.0]]),
        scores=ds.Scores(score=exact),
        execution=ds.Execution(n_blocks=4),
    )
    assert abs(fit.theta[0] - 0.5) < 1e-5
    assert fit.info["score"] == "callable"


# --------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def small(models):
    X = np.random.default_rng(0).standard_normal((2000, 2))
    return models["ou2d"], X


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (lambda: {"scores": ds.Scores(temperature=0.0)}, "temperature"),
        (lambda: {"scores": ds.Scores(temperature=-3)}, "temperature"),
        (lambda: {"scores": ds.Scores(temperature="warm")}, "temperature"),
        (lambda: {"solver": ds.Solver(lam=-1.0)}, "lam"),
        (lambda: {"scores": ds.Scores(score="magic")}, "score must be"),
        (lambda: {"scores": ds.Scores(score="score_matching")}, "radius"),
        (lambda: {"scores": ds.Scores(score="score_matching", radius=0.0)}, "radius"),
        (lambda: {"execution": ds.Execution(n_blocks=-1)}, "n_blocks"),
        (lambda: {"dlogp_dt": np.zeros(3)}, "dlogp_dt"),
        (lambda: {"dlogp_dt": np.array([np.nan, 0.0])}, "dlogp_dt"),
    ],
)
def test_bad_arguments(small, kwargs, match):
    """Each bad setting, built inside the call, is refused with a DataError naming it."""
    model, X = small
    with pytest.raises(ds.DataError, match=match):
        ds.fit_local(model, X, np.array([[0.0, 0.0], [0.5, 0.5]]), **kwargs())


@pytest.mark.parametrize(
    "probes, match",
    [
        (np.zeros((3, 3)), "shape"),
        (np.zeros((0, 2)), "no probe"),
        (np.array([[np.inf, 0.0]]), "NaN or inf"),
    ],
)
def test_bad_probes(small, probes, match):
    model, X = small
    with pytest.raises(ds.DataError, match=match):
        ds.fit_local(model, X, probes)


def test_bad_score_arrays(small):
    model, X = small
    P = np.zeros((2, 2))
    with pytest.raises(ds.DataError, match="scores have shape"):
        ds.fit_local(
            model, None, P, scores=ds.Scores(score=(np.zeros((3, 2)), np.zeros((2, 2, 2))))
        )
    with pytest.raises(ds.DataError, match="Jacobians have shape"):
        ds.fit_local(model, None, P, scores=ds.Scores(score=(np.zeros((2, 2)), np.zeros((2, 2)))))
    with pytest.raises(ds.DataError, match="not finite"):
        ds.fit_local(
            model, None, P, scores=ds.Scores(score=(np.full((2, 2), np.nan), np.zeros((2, 2, 2))))
        )
    with pytest.raises(ds.DataError, match="X is required"):
        ds.fit_local(model, None, P)


def test_empty_ball_and_far_probe(small):
    model, X = small
    with pytest.raises(ds.DataError, match="holds 0 data point"):
        ds.fit_local(
            model,
            X,
            ds.Balls(np.array([[9.0, 9.0]]), 1.0),
            scores=ds.Scores(score="score_matching"),
        )
    far = r"lie outside the data: probe 0 \(x = \[40\.  0\.\]\) is .* standard deviations from"
    with pytest.raises(ds.DataError, match=far):
        ds.fit_local(model, X, np.array([[40.0, 0.0]]), scores=ds.Scores(temperature=49.0))
    # within the data's spread but beyond any kernel weight at this T
    with pytest.raises(ds.DataError, match="kernel widths .* from the nearest data point"):
        ds.fit_local(
            model, X, np.array([[X[:, 0].max() + 1.0, 0.0]]), scores=ds.Scores(temperature=1e4)
        )


def test_kernel_wider_than_ball_warns(small):
    model, X = small
    balls = ds.Balls(np.array([[0.0, 0.0]]), 0.5)
    with pytest.warns(UserWarning, match="ball radius"):
        ds.fit_local(model, balls.restrict(X), balls, scores=ds.Scores(temperature=4.0))


def test_not_affine_raises(tmp_path):
    x = sp.Symbol("x", real=True)
    k = sp.Symbol("k", real=True)
    m = ds.SDEModel([x], [k], [-(k**2) * x], diffusion=1, name="nonaffine_local")
    with pytest.raises(ds.NotAffineError, match="k"):
        ds.fit_local(
            m,
            None,
            np.zeros((2, 1)),
            scores=ds.Scores(score=(np.zeros((2, 1)), np.zeros((2, 1, 1)))),
            execution=ds.Execution(out_dir=str(tmp_path)),
        )
