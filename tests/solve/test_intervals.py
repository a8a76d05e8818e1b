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
    FACTOR_Z,
    IDENTIFIED,
    NOT_IDENTIFIABLE,
    check_prior_scale,
    data_factor_ranges,
    data_factors,
    direction_factor_ranges,
    prior_scale_ml,
    sandwich_resolution,
    strength_labels,
)
from dynosed_sym.solve.report import analyse
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


@pytest.mark.parametrize("scale", [2.0**-500, 1e-150, 1e-90, 1.0, 1e90, 1e150, 2.0**500])
def test_prior_scale_ml_is_scale_equivariant_to_the_ends_of_double_range(rng, scale):
    """τ(cθ, c·se) = c·τ(θ, se), also where squares leave double range (data ×1e150 gave
    infinite search bounds)."""
    theta = rng.normal(0.0, 0.7, 8)
    se = rng.uniform(0.05, 0.5, 8)
    tau, ok = prior_scale_ml(theta, se)
    tau_c, ok_c = prior_scale_ml(theta * scale, se * scale)
    assert ok and ok_c and np.isfinite(tau_c)
    assert tau_c == pytest.approx(tau * scale, rel=1e-5)


def test_sandwich_resolution_on_a_known_geometry():
    """One unresolved direction u: loading |u_j|, sandwich intervals, the whole line where the
    loading is ≥ 0.5, and the data factor (q/t)² of the direction for the parameters on it."""
    u = np.array([0.05, 0.3, np.sqrt(1 - 0.05**2 - 0.3**2)])
    V = np.linalg.qr(np.column_stack([u, np.eye(3)[:, :2]]))[0]
    V = np.column_stack([V[:, 1:], V[:, 0]])  # resolved first, u last
    resolved = np.array([True, True, False])
    theta = np.array([1.0, -0.5, 0.2])
    se = np.array([0.01, 0.2, np.inf])
    t = np.array([30.0, 10.0, 0.5])
    res = sandwich_resolution(theta, se, V, resolved, q=2.0, t=t, t_resolve=2.0)
    np.testing.assert_allclose(res.loading, np.abs(u), rtol=1e-12)
    np.testing.assert_allclose(
        res.ci[:2], np.column_stack([theta[:2] - 2 * se[:2], theta[:2] + 2 * se[:2]])
    )
    assert np.isinf(res.ci[2]).all() and res.status == [IDENTIFIED, IDENTIFIED, NOT_IDENTIFIABLE]
    np.testing.assert_allclose(res.data_factor, [1.0, 16.0, 16.0])  # (2/0.5)² where u_j² ≥ 1 %
    # its range from t = 0.5 ± 1.645: (2/2.145)² < 1 → 1, no upper end (t − 1.645 < 0)
    np.testing.assert_allclose(res.data_factor_range, [[1.0, 1.0], [1.0, np.inf], [1.0, np.inf]])
    assert res.strength[0] == "yes ±2%" and res.strength[2] == "no (≥1× N)"
    # a direction with negative curvature estimate: no N is named
    assert (
        data_factors(V, resolved, np.array([30.0, 10.0, -1.0]), 2.0).tolist()
        == [1.0] + [np.inf] * 2
    )
    assert strength_labels([1.0], [[-np.inf, np.inf]], [np.inf]) == ["no (flat)"]


def test_data_factor_ranges_by_hand():
    """The range of the factor of data from t ± 1.645 (q = 2.5): t = 0.1 → [(2.5/1.745)², ∞),
    t = 2.2 → [1, (2.5/0.555)²], t = −0.3 → flat; a parameter takes the largest ends over the
    directions it loads on (share ≥ 1 %), [1, 1] where it loads on none; the labels."""
    V = np.eye(4)
    resolved = np.array([True, False, False, False])
    t = np.array([40.0, 0.1, 2.2, -0.3])
    V[:, 1:3] = np.linalg.qr(np.array([[0, 0], [1, 1], [1, -1], [0, 0]], float))[0]
    r = data_factor_ranges(V, resolved, t, 2.5)
    lo1, hi2 = (2.5 / (0.1 + FACTOR_Z)) ** 2, (2.5 / (2.2 - FACTOR_Z)) ** 2
    np.testing.assert_allclose(r, [[1, 1], [lo1, np.inf], [lo1, np.inf], [np.inf, np.inf]])
    # the second direction alone: [1, (2.5/0.555)²]
    V2 = np.eye(3)
    r2 = data_factor_ranges(V2, np.array([True, True, False]), np.array([9, 9, 2.2]), 2.5)
    np.testing.assert_allclose(r2[2], [1.0, hi2])
    labels = strength_labels([1.0] * 4, [[-np.inf, np.inf]] * 4, r)
    assert labels == ["no (≈1× N)", "no (≥2.1× N)", "no (≥2.1× N)", "no (flat)"]
    assert strength_labels([1.0], [[-np.inf, np.inf]], [[1.0, hi2]]) == ["no (≈1–20× N)"]


def test_data_factor_range_does_not_overstate_the_data_needed():
    """With t ~ N(t_true, 1) (the noise the range assumes), the range's lower end exceeds the true
    factor (q/t_true)² — the label claims more data than needed — in at most 5 % of draws (it
    can only when t_true > t + 1.645), and a finite upper end falls below it in at most 5 %."""
    rng = np.random.default_rng(11)
    q = 2.6
    for t_true in (0.2, 0.7, 1.5, 2.3):
        t = t_true + rng.standard_normal(20_000)
        lo, hi = direction_factor_ranges(t, q).T
        for k in range(5):  # the parameter's range is its direction's
            np.testing.assert_array_equal(
                data_factor_ranges(np.eye(1), np.array([False]), t[k : k + 1], q)[0],
                [lo[k], hi[k]],
            )
        truth = max((q / t_true) ** 2, 1.0)
        over = np.mean(np.isfinite(lo) & (lo > truth * (1 + 1e-12)))
        under = np.mean(np.isfinite(hi) & (hi < truth * (1 - 1e-12)))
        assert over <= 0.05 + 0.005 and under <= 0.05 + 0.005, (t_true, over, under)


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


def test_lorenz_small_n_is_not_zeroed(models):
    """Lorenz at N = 300, where σ's direction is the weakest: σ̂ keeps a value near the truth (a
    direction b determines is never set to 0) and its interval, finite or not, covers it."""
    m = models["lorenz"]
    fit = ds.fit_global(
        m, ds.simulate(m, m.nominal, 300, seed=10_096), features=ds.Features(seed=96)
    )
    assert abs(fit.theta[0] / 10.0 - 1) < 0.15
    lo, hi = fit.conf_int()[0]
    assert lo <= 10.0 <= hi


# ================================================================================ FitResult
@pytest.fixture(scope="module")
def loaded_ou(models, ou_samples):
    """All-free OU whose null direction loads on every entry (M = [[−1, 1], [0, −2]], Σ ≠ I)."""
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    return M, ds.fit_global(
        models["ou2d"], ou_samples(M, 1.0, 20_000, 3), features=ds.Features(seed=0)
    )


def test_summary_table_and_records_show_loading_bias_and_combinations(loaded_ou):
    M, fit = loaded_ou
    rep = fit.report
    assert rep.rank == 3 and rep.estimator == "resolved" and rep.prior_scale_method == "ml"
    assert np.all(rep.loading > 0.05) and np.all(rep.bias_sd > 0)
    text = fit.summary(truth=M.ravel())
    for word in ("bias.sd", "loading", "τ = ", "profile-Fieller", "yes ±"):
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
    # profile-Fieller: the interval contains θ̂ and is at least as wide as θ̂ ± t·√(se² + bias²)
    ci = fit.conf_int()
    t = stats.t.ppf(0.975, 31)
    fin = np.isfinite(ci[:, 0])
    assert np.all((ci[fin, 0] < fit.theta[fin]) & (fit.theta[fin] < ci[fin, 1]))
    width = ci[fin, 1] - ci[fin, 0]
    assert np.all(width >= 2 * t * np.hypot(fit.std_errors, rep.bias_sd)[fin] * (1 - 1e-12))
    assert np.all(fit.conf_int(level=0.99)[fin, 1] > ci[fin, 1])
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
    plain = ds.fit_global(
        models["ou2d"], X, features=ds.Features(seed=0), solver=ds.Solver(prior_scale=None)
    )
    assert np.array_equal(plain.theta, fit.theta)
    assert np.all(plain.report.bias_sd == 0) and "variance only" in plain.summary()
    fin = np.isfinite(fit.report.ci[:, 0])
    assert np.all(
        (plain.report.ci[fin, 1] - plain.theta[fin]) < (fit.report.ci[fin, 1] - fit.theta[fin])
    )
    ridge = ds.fit_global(
        models["ou2d"], X, features=ds.Features(seed=0), solver=ds.Solver(estimator="ridge")
    )
    assert (
        np.all(ridge.report.bias_sd == 0) and "do not include the regularisation" in ridge.summary()
    )
    # β_j² is affine in τ²: each unresolved component's τ_i² = τ²·(projection) + (ẑ_i² + se_i²)/a_i²
    # (the part the data give, independent of τ), and both τ·loading and the noise the unresolved
    # columns carry are linear in τ_i² (the formula itself:
    # test_unresolved_noise_variance_is_the_influence_spread_over_the_prior)
    bias2 = {
        tau: ds.fit_global(
            models["ou2d"], X, features=ds.Features(seed=0), solver=ds.Solver(prior_scale=tau)
        ).report.bias_sd
        ** 2
        for tau in (0.0, 2.0, 4.0)
    }
    step2, step4 = bias2[2.0] - bias2[0.0], bias2[4.0] - bias2[0.0]
    loading2 = fit.report.loading**2
    assert np.all(step2 > 4.0 * loading2 * (1 - 1e-9))  # τ·loading plus the columns' noise
    np.testing.assert_allclose(step4, 4.0 * step2, rtol=1e-9)


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
        fit = ds.fit_global(
            models["ou2d"], ou_samples(M, 1.0, 2000, 7000 + k), features=ds.Features(seed=k)
        )
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
    when that noise is small beside its own, and the parameters' intervals include it.  Where the
    tilt reaches a or c by 0.1 or more, the flat direction rests on ω alone and its carriers get
    the whole line (:func:`dynosed_sym.solve.flat.lone_carriers`): 159 finite intervals of 180 at
    stop 53, against ≥ 162 before.  Oracle: exact stationary samples; each stated combination's
    truth from its reported coefficients."""
    model = models["limit_cycle"]
    truth = np.array([1.0, 1.0, 2.0])
    finite, combos, n_sets = [], [], 0
    for N, sets in ((5000, 60), (20_000, 30)):
        for k in range(sets):
            rep = ds.fit_global(
                model, _stuart_landau_exact(N, 500 + k), features=ds.Features(seed=k)
            ).report
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
    assert len(finite) >= 1.6 * n_sets  # a and c keep finite intervals in most data sets
    assert np.mean(finite) >= 0.95
    assert len(combos) < 10 or np.mean(combos) >= 0.85


def test_report_holds_combination_objects_whose_coefficients_give_the_text(loaded_ou):
    """The report's estimable combinations and unresolved directions are Combination objects:
    the printed text is read back from their coefficients (row j of Q over Q_jj; the null
    vectors), their value and interval are the report's arrays, and to_dict/to_json carry the
    text with the coefficients."""
    import json

    from test_combinations import parse  # the text reader of tests/solve/test_combinations.py

    _, fit = loaded_ou
    rep, names = fit.report, fit.model.param_names
    text = str(rep)
    stated = [j for j, c in enumerate(rep.combinations) if c is not None]
    assert stated
    for j in stated:
        c = rep.combinations[j]
        assert isinstance(c, ds.Combination) and c.names == tuple(names) and c.pivot == j
        np.testing.assert_allclose(c.vector, rep.resolution[j])
        read = parse(str(c))
        q = rep.resolution[j] / rep.resolution[j, j]
        for k, nm in enumerate(names):
            assert abs(read.get(nm, 0.0) - q[k]) <= 5e-3 * abs(q[k]) + 1e-3, (str(c), q)
        assert c.value == rep.combination_estimate[j] and c.level == rep.ci_level
        np.testing.assert_array_equal(c.interval, rep.combination_ci[j])
        assert f"{names[j]} is determined only in combination: {c} = {c.value:.4g}" in text
    for i, c in enumerate(rep.null_space):
        assert isinstance(c, ds.Combination)
        np.testing.assert_array_equal(c.vector, rep.null_vectors[:, i])
        assert f"unresolved combination: {c}" in text
        u = rep.null_vectors[:, i] / np.linalg.norm(rep.null_vectors[:, i])
        u = u * np.sign(u[np.argmax(np.abs(u))])
        read = parse(str(c))
        for k, nm in enumerate(names):
            assert abs(read.get(nm, 0.0) - u[k]) <= 5e-3 * abs(u[k]) + 1e-3
    d = json.loads(fit.to_json())
    assert d["report"]["null_space"] == [str(c) for c in rep.null_space]
    np.testing.assert_allclose(d["report"]["null_space_coefficients"], rep.null_vectors.T)
    for j, rec in enumerate(d["parameters"]):
        c = rep.combinations[j]
        assert rec["combination"] == (None if c is None else str(c))
        if c is not None:
            np.testing.assert_allclose(rec["combination_coefficients"], c.vector)
