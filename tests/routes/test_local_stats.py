"""Statistical behaviour of the local route with estimated scores.

* exact Gaussian (OU) samples restricted to balls: score matching recovers the identifiable
  entries within 10 %;
* the kernel estimator's bias–variance trade-off over the temperature T (the table of the demo);
* the reference paper's Lorenz experiment (slow): ten balls on the attractor, dense and sparse.

Run with ``-s`` to see the tables.
"""

from __future__ import annotations

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.apps.demo import local_examples as demo

RING = np.vstack(
    [
        [0.0, 0.0],
        1.6
        * np.column_stack(
            [np.cos(np.arange(6) * np.pi / 3 + 0.3), np.sin(np.arange(6) * np.pi / 3 + 0.3)]
        ),
    ]
)


def test_ou_zoo_models_score_matching_in_balls(models):
    """Stationary law N(0, I) of the zoo OU, 2·10⁶ exact samples, seven balls of radius 1."""
    balls = ds.Balls(RING, 1.0)
    X = balls.restrict(np.random.default_rng(0).standard_normal((2_000_000, 2)))
    fit = ds.fit_local(models["ou2d"], X, balls, scores=ds.Scores(score="score_matching"))
    M11, M12, M21, M22 = fit.theta
    assert fit.report.rank == 3
    assert "M12" in str(fit.report.null_space[0]) and "M21" in str(fit.report.null_space[0])
    assert abs(M11 + 1) < 0.1 and abs(M22 + 1) < 0.1 and abs(M12 + M21) < 0.1
    fit = ds.fit_local(models["ou2d_m12"], X, balls, scores=ds.Scores(score="score_matching"))
    assert fit.report.unique and abs(fit.theta[0] - 0.5) < 0.05


def test_ou_triangular_score_matching_in_balls():
    """M = [[a, b], [0, c]] (all identifiable, correlated Σ), 10⁶ exact samples in seven balls."""
    model, L = demo._ou_triangular()
    balls = ds.Balls(demo.OU_BALL_CENTRES, 1.0)
    X = balls.restrict(np.random.default_rng(1).standard_normal((1_000_000, 2)) @ L.T)
    fit = ds.fit_local(model, X, balls, scores=ds.Scores(score="score_matching"))
    assert fit.report.unique
    np.testing.assert_allclose(fit.theta, model.nominal, rtol=0.1)
    # the estimated Jacobian is close to the exact precision matrix
    Prec = np.linalg.inv(L @ L.T)
    assert np.abs(fit.scores.jacobian + Prec).max() < 0.3


def test_kernel_bias_variance_over_temperature():
    with pytest.warns(ds.StationarityWarning, match="no stationary law"):
        # far from the best T the estimates are far off: some have no stationary law at all
        rows = demo.kernel_temperature_table(n_draws=6)
    print("\n    T   |bias|    |sd|   RMSE  max|ŝ−s|  max|Ĵ−J|")
    for T, r in rows.items():
        print(
            f"{T:5}  {np.linalg.norm(r['bias']):6.3f}  {np.linalg.norm(r['sd']):6.3f}  "
            f"{np.linalg.norm(r['rmse']):6.3f}  {r['score_err']:7.3f}  {r['jac_err']:7.3f}"
        )
    Ts = list(rows)
    bias = np.array([np.linalg.norm(rows[T]["bias"]) for T in Ts])
    sd = np.array([np.linalg.norm(rows[T]["sd"]) for T in Ts])
    rmse = np.array([np.linalg.norm(rows[T]["rmse"]) for T in Ts])
    # small T: the smoothing bias dominates and shrinks as T grows; large T: the variance grows
    assert np.all(np.diff(bias[:4]) < 0) and bias[0] > 3 * bias[3]
    assert np.all(np.diff(sd) > 0) and sd[-1] > 50 * sd[0]
    best = int(np.argmin(rmse))
    assert 0 < best < len(Ts) - 1, f"RMSE minimal at the edge T = {Ts[best]}"
    # near the best T the estimated scores and Jacobians are close to the exact Gaussian ones
    assert rows[Ts[best]]["score_err"] < 0.2 and rows[Ts[best]]["jac_err"] < 0.5


@pytest.mark.slow
def test_lorenz_ten_balls_dense_and_sparse(models):
    """One draw of the demo's Lorenz experiment (10⁸ steady-state samples, ten balls of radius 2).

    Dense: score matching within 3 %; the kernel estimators at T* = |λ_min|/D ≈ 49 within three
    jackknife standard errors of the truth (their spread over draws is ≈ 8 %, see the demo).
    Sparse (1000 points per ball): at T = 49 the estimates are far off, and the report says so —
    the directions are not resolved above the noise (infinite standard errors).
    """
    model = models["lorenz"]
    truth = model.nominal
    centres = ds.choose_probes(
        ds.simulate(model, truth, 200_000, seed=0), 10, method="random", seed=1, min_separation=5.0
    )
    balls = ds.Balls(centres, 2.0)
    X = demo._lorenz_in_balls(model, balls, 100_000_000, seed=7)
    assert balls.counts(X).min() > 50_000
    sm = ds.fit_local(model, X, balls, scores=ds.Scores(score="score_matching"))
    np.testing.assert_allclose(sm.theta, truth, rtol=0.03)
    for est in ("kernel", "local_gaussian"):
        fit = ds.fit_local(model, X, balls, scores=ds.Scores(temperature=49.0, score=est))
        z = (fit.theta - truth) / fit.report.std_errors
        assert np.all(np.abs(z) < 3), (est, fit.theta, fit.report.std_errors)
        assert np.all(fit.report.std_errors < 0.2 * truth)
    errors, resolved = [], []
    for s in range(5):
        fit = ds.fit_local(
            model,
            balls.restrict(X, max_per_ball=1000, seed=s),
            balls,
            scores=ds.Scores(temperature=49.0),
        )
        errors.append(fit.theta / truth - 1)
        resolved.append(fit.report.rank)
    assert np.max(np.abs(np.mean(errors, axis=0))) > 0.15
    assert min(resolved) < 3
