"""Honest intervals (dynosed_sym.solve.intervals, issue 13): loadings on unresolved directions, the
bias scale τ, estimable combinations, and their calibration.

Oracles: a brute-force likelihood grid (τ), hand-built resolution geometry, a linear-Gaussian
simulation whose parameters are drawn from the scale prior the intervals assume, and exact
stationary OU laws.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dynosed_sym as ds
from dynosed_sym.solve.combinations import estimable_combination
from dynosed_sym.solve.intervals import (
    COMBINATION,
    IDENTIFIED,
    NOT_IDENTIFIABLE,
    check_prior_scale,
    honest_intervals,
    prior_scale_ml,
)
from dynosed_sym.solve.report import analyse
from dynosed_sym.solve.uncertainty import t_quantile
from dynosed_sym.solve.ustat import solve_system


def test_prior_scale_ml_is_the_likelihood_maximum(rng):
    theta = rng.normal(0.0, 0.7, 12)
    se = rng.uniform(0.05, 0.5, 12)
    tau, converged = prior_scale_ml(theta, se)
    grid = np.linspace(1e-3, 3.0, 30001)
    v = grid[:, None] ** 2 + se[None] ** 2
    ll = -0.5 * np.sum(np.log(v) + theta[None] ** 2 / v, axis=1)
    assert converged and abs(tau - grid[np.argmax(ll)]) < 2e-4
    # estimates all well inside their noise: the likelihood is largest at τ = 0
    assert prior_scale_ml(0.1 * se * rng.standard_normal(12), se)[0] == 0.0
    assert prior_scale_ml(np.zeros(3), np.ones(3)) == (0.0, True)


def test_honest_intervals_on_a_known_geometry():
    """One unresolved direction u: loading |u_j|, bias τ|u_j|, intervals, statuses, combinations."""
    u = np.array([0.05, 0.3, np.sqrt(1 - 0.05**2 - 0.3**2)])
    V = np.linalg.qr(np.column_stack([u, np.eye(3)[:, :2]]))[0]
    V = np.column_stack([V[:, 1:], V[:, 0]])  # resolved first, u last
    resolved = np.array([True, True, False])
    theta = np.array([1.0, -0.5, 0.2])
    se = np.array([0.01, 0.2, np.inf])
    names = ["p", "q", "r"]
    res = honest_intervals(
        theta, se, V, resolved, names, level=0.95, dof=31, prior_scale=1.0, t_quantile=t_quantile
    )
    np.testing.assert_allclose(res.loading, np.abs(u), rtol=1e-12)
    np.testing.assert_allclose(res.bias_sd, np.abs(u), rtol=1e-12)
    q = stats.t.ppf(0.975, 31)
    half = q * np.sqrt(se[:2] ** 2 + u[:2] ** 2)
    np.testing.assert_allclose(res.ci[:2], np.column_stack([theta[:2] - half, theta[:2] + half]))
    assert np.isinf(res.ci[2]).all()
    # p: bias 0.05 > se 0.01 → only in combination; q: 0.3 > 0.2 too; r: loading ≥ 0.5
    assert res.status == [COMBINATION, COMBINATION, NOT_IDENTIFIABLE]
    Q = np.eye(3) - np.outer(u, u)
    c = Q[0] / Q[0, 0]
    assert c[1] < 0 and c[2] < c[1]  # terms by decreasing size
    assert res.combinations[0] == f"p − {-c[2]:.3g}·r − {-c[1]:.3g}·q"
    np.testing.assert_allclose(res.combination_estimate[0], theta[0] / Q[0, 0])
    np.testing.assert_allclose(
        res.combination_ci[0], [(theta[0] - q * se[0]) / Q[0, 0], (theta[0] + q * se[0]) / Q[0, 0]]
    )
    # a small τ: the bias stays below the noise of q, which is then identified
    small = honest_intervals(
        theta, se, V, resolved, names, level=0.95, dof=31, prior_scale=0.5, t_quantile=t_quantile
    )
    assert small.status[1] == IDENTIFIED and small.combinations[1] is None
    # one scale per parameter: bias_j = ‖row j of (I − Q) ∘ τ‖
    tau = np.array([1.0, 2.0, 3.0])
    per = honest_intervals(
        theta, se, V, resolved, names, level=0.95, dof=31, prior_scale=tau, t_quantile=t_quantile
    )
    np.testing.assert_allclose(per.bias_sd, np.linalg.norm(np.outer(u, u) * tau, axis=1))


def test_estimable_combination_text():
    row = np.array([0.0001, 0.98, -0.02, 0.5, 0.003])
    text = estimable_combination(row, ["a", "b", "c", "d", "e"], 1, max_terms=2)
    assert text == "b + 0.51·d − 0.0204·c + … (2 smaller terms)"  # e above tol, a below


@pytest.mark.parametrize(
    "bad", ["mle", -1.0, float("nan"), [1.0, 2.0], {"x": 1.0}, {"p": 1.0}, "1.0", True]
)
def test_bad_prior_scale_names_the_argument(bad):
    with pytest.raises(ds.DataError, match="prior_scale"):
        check_prior_scale(bad, ["p", "q", "r"])
    assert check_prior_scale({"p": 1, "q": 2, "r": 0}, ["p", "q", "r"]).tolist() == [1, 2, 0]


def test_intervals_are_calibrated_when_theta_follows_the_scale_prior():
    """Linear-Gaussian oracle: θ* ~ N(0, τ²I), b̂ = Aθ* + block noise, a direction A does not see.
    The honest intervals (given τ) cover θ*_j in 95 % of draws — including the parameters loading
    on the invisible direction — where variance-only intervals do not."""
    rng = np.random.default_rng(7)
    m, n, B, tau = 40, 6, 32, 1.0
    u = np.array([0.35, 0.4, 0.4, 0.4, 0.45, 0.0])
    u[-1] = np.sqrt(1 - u @ u)  # the invisible direction: every loading below 0.5
    V0 = np.linalg.qr(np.column_stack([u, rng.standard_normal((n, n - 1))]))[0]
    U0 = np.linalg.qr(rng.standard_normal((m, m)))[0][:, :n]
    A0 = U0[:, :5] @ np.diag([3.0, 2.0, 1.5, 1.0, 0.8]) @ V0[:, 1:].T
    cover_honest = np.zeros(n)
    cover_plain = np.zeros(n)
    finite = np.zeros(n)
    R = 400
    for _ in range(R):
        theta = tau * rng.standard_normal(n)
        Ab = A0[None] + 0.05 * rng.standard_normal((B, m, n))
        bb = np.einsum("mn,n->m", A0, theta)[None] + 0.05 * rng.standard_normal((B, m))
        counts = np.full(B, 100.0)
        A, b = Ab.mean(0), bb.mean(0)
        est = solve_system(A, b, Ab, bb, counts, 1e-6)
        for scale, cover in ((tau, cover_honest), (None, cover_plain)):
            rep = analyse(
                A,
                b,
                est.theta,
                1e-6,
                list("abcdef"),
                Ab,
                bb,
                counts,
                estimate=est,
                prior_scale=scale,
            )
            ok = np.isfinite(rep.ci[:, 0])
            cover += ok & (rep.ci[:, 0] <= theta) & (theta <= rep.ci[:, 1])
        finite += ok
    assert finite.min() > 0.95 * R  # the invisible direction loads < 0.5 on every parameter
    frac = cover_honest / finite
    print("\nhonest coverage", frac.round(3), "variance-only", (cover_plain / finite).round(3))
    assert np.all(np.abs(frac - 0.95) < 3 * np.sqrt(0.95 * 0.05 / R) + 0.01), frac
    assert np.min(cover_plain / finite) < 0.8


def test_not_identifiable_parameters_get_the_posterior_mean(models):
    """Lorenz at N = 300 with σ's direction just below the rank threshold: σ is not identifiable
    (infinite interval) and its point estimate is the empirical-Bayes posterior mean along that
    direction, close to the truth, where the resolved estimate (0 along it) says σ ≈ 0; the
    identified parameters keep the resolved estimate."""
    m = models["lorenz"]
    fit = ds.fit_global(m, ds.simulate(m, m.nominal, 300, seed=10_096), seed=96)
    rep = fit.report
    assert rep.status[0] == "not identifiable" and np.isinf(fit.conf_int()[0]).all()
    Ab, bb, counts = rep._blocks
    zero = solve_system(fit.A, fit.b, Ab, bb, counts, 1e-6)  # prior_scale=None: 0 along U
    assert abs(zero.theta[0]) < 2.0
    assert abs(fit.theta[0] / 10.0 - 1) < 0.15
    np.testing.assert_array_equal(fit.theta[1:], zero.theta[1:])


def test_posterior_mean_keeps_zero_along_a_pure_noise_direction():
    """A direction whose singular value is below its own noise (r ≤ 1) carries no signal: the
    parameter living on it keeps the resolved estimate 0 along it, whatever τ."""
    from dynosed_sym.solve.directions import Directions
    from dynosed_sym.solve.intervals import fill_free

    rng = np.random.default_rng(3)
    B, m = 16, 12
    A0 = np.zeros((m, 2))
    A0[:, 0] = rng.standard_normal(m)
    Ab = A0[None] + 0.01 * rng.standard_normal((B, m, 2))
    bb = Ab[:, :, 0] * 2.0 + 0.01 * rng.standard_normal((B, m))
    counts = np.full(B, 10.0)
    A, b = Ab.mean(0), bb.mean(0)
    est = solve_system(A, b, Ab, bb, counts, 1e-6)
    dirs = Directions(
        np.array([1.0, 1e-3]), np.eye(2), np.array([0.01, 2e-3]), np.array([True, False])
    )
    out, tau, _ = fill_free(est.theta, est.bread, (A, b, Ab, bb, counts), dirs, 1e6)
    assert tau == 1e6 and np.array_equal(out, est.theta)


# ================================================================================ FitResult
@pytest.fixture(scope="module")
def loaded_ou(models, ou_samples):
    """All-free OU whose null direction loads on every entry (M = [[−1, 1], [0, −2]], Σ ≠ I)."""
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    return M, ds.fit_global(models["ou2d"], ou_samples(M, 1.0, 20_000, 3), seed=0)


def test_summary_table_and_records_show_loading_bias_and_combinations(loaded_ou):
    M, fit = loaded_ou
    rep = fit.report
    assert rep.rank == 3 and rep.estimator == "resolved" and rep.prior_scale_method == "ml"
    assert np.all(rep.loading > 0.05) and np.all(rep.bias_sd > 0)
    text = fit.summary(truth=M.ravel())
    for word in ("bias.sd", "loading", "τ = ", "√(std.err² + bias.sd²)"):
        assert word in text
    flagged = [nm for nm, st in zip(fit.model.param_names, rep.status) if st == COMBINATION]
    assert flagged, rep.status
    for nm, combo in zip(fit.model.param_names, rep.combinations):
        if nm in flagged and combo is not None:
            assert f"{nm} is determined only in combination: {nm} " in text
        elif nm in flagged:  # the unresolved directions' noise in it is not small: none stated
            assert f"{nm} is determined only in combination with the unresolved" in text
    assert any(c is not None for c in rep.combinations)
    df = fit.to_dataframe()
    for col in ("loading", "bias_sd", "status", "combination", "combination_low"):
        assert col in df.columns
    assert df["status"].tolist() == rep.status
    np.testing.assert_allclose(fit.conf_int(), rep.ci)
    half = fit.conf_int()[:, 1] - fit.theta
    t = stats.t.ppf(0.975, 31)
    fin = np.isfinite(half)
    np.testing.assert_allclose(
        half[fin], t * np.hypot(fit.std_errors, rep.bias_sd)[fin], rtol=1e-12
    )
    import json

    rec = json.loads(fit.to_json())
    assert rec["report"]["estimator"] == "resolved" and rec["report"]["prior_scale"] > 0
    assert [p["status"] for p in rec["parameters"]] == rep.status
    # the combination's interval covers the true value of the combination
    Q = rep.resolution
    for j, st in enumerate(rep.status):
        if st == COMBINATION and rep.combinations[j] is not None:
            true = Q[j] @ M.ravel() / Q[j, j]
            lo, hi = rep.combination_ci[j]
            assert lo <= true <= hi


def test_prior_scale_none_and_ridge_do_not_widen(loaded_ou, models, ou_samples):
    M, fit = loaded_ou
    X = ou_samples(M, 1.0, 20_000, 3)
    plain = ds.fit_global(models["ou2d"], X, seed=0, prior_scale=None)
    assert np.array_equal(plain.theta, fit.theta)
    assert np.all(plain.report.bias_sd == 0) and "variance only" in plain.summary()
    fin = np.isfinite(fit.report.ci[:, 0])
    assert np.all(
        (plain.report.ci[fin, 1] - plain.theta[fin]) < (fit.report.ci[fin, 1] - fit.theta[fin])
    )
    ridge = ds.fit_global(models["ou2d"], X, seed=0, estimator="ridge")
    assert (
        np.all(ridge.report.bias_sd == 0) and "do not include the regularisation" in ridge.summary()
    )
    given = ds.fit_global(models["ou2d"], X, seed=0, prior_scale=2.0)
    # τ·loading, and the noise the unresolved directions' columns carry, ∝ τ² (the formula itself:
    # test_unresolved_noise_variance_is_the_influence_spread_over_the_prior)
    extra2 = given.report.bias_sd**2 - (2.0 * given.report.loading) ** 2
    twice = ds.fit_global(models["ou2d"], X, seed=0, prior_scale=4.0)
    extra4 = twice.report.bias_sd**2 - (4.0 * twice.report.loading) ** 2
    assert np.all(extra2 > 0)
    np.testing.assert_allclose(extra4, 4.0 * extra2, rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    "M, lower_only",
    [
        (np.array([[-1.0, 0.5], [-0.5, -1.0]]), False),  # Σ = I: the null direction is M12 − M21
        (np.array([[-1.0, 1.0], [0.0, -2.0]]), True),  # the null direction loads on every entry
    ],
)
def test_exact_ou_coverage_of_honest_intervals(models, ou_samples, M, lower_only):
    """All-free OU from its exact stationary law, 100 data sets of N = 2000: the finite 95 %
    intervals cover the truth within binomial error of 95 % (three standard errors; where
    the null direction loads on identified entries the τ prior makes them conservative, so only
    the lower bound applies)."""
    truth = M.ravel()
    cover, finite = np.zeros(4), np.zeros(4)
    R = 100
    for k in range(R):
        fit = ds.fit_global(models["ou2d"], ou_samples(M, 1.0, 2000, 7000 + k), seed=k)
        ci = fit.conf_int()
        ok = np.isfinite(ci[:, 0])
        finite += ok
        cover += ok & (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    frac = cover.sum() / finite.sum()
    print(f"\nexact OU M = {M.tolist()}: coverage {cover}/{finite} = {frac:.3f}")
    se = np.sqrt(0.95 * 0.05 / finite.sum())
    assert frac >= 0.95 - 3 * se
    if not lower_only:
        assert frac <= 0.95 + 3 * se


def test_unresolved_noise_variance_is_the_influence_spread_over_the_prior(rng):
    """Oracle: the block influence is affine in θ, so the extra covariance of the influence under
    z ~ N(0, Cov z) along the unresolved directions equals the sum over the columns of a square
    root of Cov z of the squared influence differences (computed here with block_influence)."""
    from dynosed_sym.solve.intervals import unresolved_noise_variance
    from dynosed_sym.solve.uncertainty import block_influence, block_weights

    B, m, n = 8, 30, 4
    A_blocks = rng.normal(size=(B, m, n))
    A_blocks[:, :, 3] *= 0.05  # a column of (mostly) noise
    b_blocks = rng.normal(size=(B, m))
    counts = rng.integers(50, 100, B).astype(float)
    w = counts / counts.sum()
    A, b = np.einsum("b,bmn->mn", w, A_blocks), w @ b_blocks
    theta = rng.normal(size=n)
    bread = np.linalg.inv(A.T @ A)
    VU = np.linalg.qr(rng.normal(size=(n, 2)))[0]
    tau = np.array([0.5, 1.0, 2.0, 3.0])
    got = unresolved_noise_variance(A, A_blocks, counts, bread, VU, tau)
    Cz = VU.T @ np.diag(tau**2) @ VU
    L = np.linalg.cholesky(Cz)
    base = block_influence(A, b, theta, 0.0, A_blocks, b_blocks, bread)
    want = np.zeros(n)
    for i in range(L.shape[1]):
        d = block_influence(A, b, theta + VU @ L[:, i], 0.0, A_blocks, b_blocks, bread) - base
        want += np.einsum("b,bi->i", block_weights(counts), d * d) / (B - 1)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def _stuart_landau_exact(n, seed, D=0.1):
    """Exact draws of p ∝ exp((r²/2 − r⁴/4)/D) (a = c = 1): r² ~ N(1, 2D) truncated at 0."""
    rng = np.random.default_rng(seed)
    sd = np.sqrt(2 * D)
    s = stats.truncnorm.rvs(-1.0 / sd, np.inf, loc=1.0, scale=sd, size=n, random_state=rng)
    phi = rng.uniform(0.0, 2 * np.pi, n)
    return np.sqrt(s)[:, None] * np.column_stack([np.cos(phi), np.sin(phi)])


@pytest.mark.slow
def test_limit_cycle_intervals_see_the_noise_of_an_invisible_parameter(models):
    """The rotation ω is invisible to a snapshot; at N = 5000–20,000 its noisy column tilts the
    unresolved direction towards a and c, which are then determined only in combination.  The
    sandwich at θ̂ (ω̂ ≈ 0) misses the noise the true ω (= 2) puts into them through that column:
    before the unresolved-noise term the stated combinations' 95 % intervals covered their truth
    in 3 of 14 (N = 20,000) and 1 of 42 (N = 5000) data sets.  Now a combination is stated only
    when that noise is small beside its own, and the parameters' intervals include it.  Oracle:
    exact stationary samples; each stated combination's truth from its reported coefficients."""
    model = models["limit_cycle"]
    truth = np.array([1.0, 1.0, 2.0])
    finite, combos, n_sets = [], [], 0
    for N, sets in ((5000, 60), (20_000, 30)):
        for k in range(sets):
            rep = ds.fit_global(model, _stuart_landau_exact(N, 500 + k), seed=k).report
            n_sets += 1
            ci = rep.ci
            ok = np.isfinite(ci[:, 0])
            finite += list((ci[ok, 0] <= truth[ok]) & (truth[ok] <= ci[ok, 1]))
            for j, status in enumerate(rep.status):
                lo, hi = rep.combination_ci[j]
                if status == COMBINATION and np.isfinite(lo):
                    value = rep.resolution[j] @ truth / rep.resolution[j, j]
                    combos.append(lo <= value <= hi)
    print(
        f"\nfinite intervals {sum(finite)}/{len(finite)}, combinations {sum(combos)}/{len(combos)}"
    )
    assert len(finite) >= 1.8 * n_sets  # a and c keep finite intervals in most data sets
    assert np.mean(finite) >= 0.95
    assert len(combos) < 10 or np.mean(combos) >= 0.85
