"""The Birge ratio: every interval's noise part times S = max(1, √T) (docs/design-statistics.md §7).

Oracle: a linear moment system whose b carries, besides the block noise, a systematic error of the
same shape as that noise, c times its size (the assumption behind the ratio).  Unscaled, the
intervals are too short by about √(1 + c²) and miss the truth; scaled, they cover.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynosed_sym.solve.misspecification import birge_ratio
from dynosed_sym.solve.report import analyse
from dynosed_sym.solve.uncertainty import t_quantile
from dynosed_sym.solve.ustat import solve_system


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.0, max_value=1e300, allow_nan=False))
def test_birge_ratio_is_root_of_the_statistic_above_one(stat):
    S = birge_ratio(stat)
    assert S >= 1.0
    assert S == (1.0 if stat <= 1.0 else pytest.approx(np.sqrt(stat), rel=1e-15))
    assert birge_ratio(stat * 4.0 + 4.0) >= S  # monotone


@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), -3.0])
def test_birge_ratio_without_a_statistic_is_one(bad):
    assert birge_ratio(bad) == 1.0


def _system(seed, c, B=32, m=12, n=3, Nb=200):
    """Block means of A θ = b with a systematic error of b shaped like the noise of b̄."""
    rng = np.random.default_rng(seed)
    A_pop = rng.standard_normal((m, n)) + 2.0 * np.eye(m, n)
    theta = np.array([1.0, -0.5, 2.0])
    s = 1.0 / np.sqrt(Nb)
    A_blocks = A_pop[None] + 0.3 * s * rng.standard_normal((B, m, n))
    b_sys = c * (s / np.sqrt(B)) * rng.standard_normal(m)  # noise of b̄ is s/√B per entry
    b_blocks = (A_pop @ theta + b_sys)[None] + s * rng.standard_normal((B, m))
    counts = np.full(B, Nb)
    return A_blocks.mean(0), b_blocks.mean(0), A_blocks, b_blocks, counts, theta


def _report(seed, c):
    A, b, A_blocks, b_blocks, counts, theta = _system(seed, c)
    est = solve_system(A, b, A_blocks, b_blocks, counts, 1e-9)
    rep = analyse(A, b, est.theta, 1e-9, ["a", "b", "c"], A_blocks, b_blocks, counts, estimate=est)
    return rep, est.theta, theta


def test_intervals_are_the_unscaled_ones_widened_about_the_estimate():
    """Where the model is wrong (c = 4): S = √T > 1, the printed note, and every interval is the
    one of the same report with S = 1 widened S-fold about θ̂ (the profile-Fieller sets and the
    sandwich alike); which intervals are bounded does not change."""
    rep, theta_hat, _ = _report(0, 4.0)
    S = rep.interval_scale
    assert S == pytest.approx(np.sqrt(rep.misspec_stat), rel=1e-15) and S > 1.5
    assert f"Birge ratio S = {S:.3g}" in str(rep)
    plain = dataclasses.replace(rep, interval_scale=1.0)
    for level in (0.9, 0.95, 0.99):
        wide, narrow = rep.intervals(theta_hat, level), plain.intervals(theta_hat, level)
        assert np.array_equal(np.isfinite(wide), np.isfinite(narrow))
        np.testing.assert_allclose(wide - theta_hat[:, None], S * (narrow - theta_hat[:, None]))
    np.testing.assert_allclose(rep.intervals(theta_hat, 0.95), rep.ci, rtol=1e-12)
    sandwich = dataclasses.replace(rep, fieller=None)
    half = np.diff(sandwich.intervals(theta_hat, 0.95), axis=1)[:, 0] / 2
    q = t_quantile(0.95, rep.dof)
    np.testing.assert_allclose(half, S * q * np.hypot(rep.std_errors, rep.bias_sd), rtol=1e-12)


def test_the_ratio_restores_coverage_under_noise_shaped_error():
    """100 data sets with c = 3 (300 intervals): unscaled, the intervals are about √10 too short
    and cover well under 90 %; scaled by S at least 90 % (95 % nominal); with c = 0 (a correct
    model) S stays near 1."""
    cover_scaled = cover_plain = 0
    S_correct = []
    for seed in range(100):
        rep, theta_hat, truth = _report(seed, 3.0)
        plain = dataclasses.replace(rep, interval_scale=1.0).intervals(theta_hat, 0.95)
        cover_scaled += int(np.sum((rep.ci[:, 0] <= truth) & (truth <= rep.ci[:, 1])))
        cover_plain += int(np.sum((plain[:, 0] <= truth) & (truth <= plain[:, 1])))
        if seed < 40:
            S_correct.append(_report(1000 + seed, 0.0)[0].interval_scale)
    print(
        f"\ncovered: scaled {cover_scaled}/300, unscaled {cover_plain}/300; "
        f"mean S with c = 0: {np.mean(S_correct):.3f}"
    )
    assert cover_plain <= 0.75 * 300
    assert cover_scaled >= 0.90 * 300  # 95 % nominal; 300 intervals of 100 sets
    assert 1.0 <= np.mean(S_correct) <= 1.25


def test_the_bootstrap_intervals_are_widened_about_the_replicates_median():
    """The block bootstrap of a rejected fit: percentile intervals S-fold about the median of the
    same replicates (same seed), the replicates' spread itself unchanged."""
    rep, _, _ = _report(0, 4.0)
    S = rep.interval_scale
    assert S > 1.5
    plain = dataclasses.replace(rep, interval_scale=1.0)
    wide, narrow = rep.bootstrap(n_boot=50, seed=1), plain.bootstrap(n_boot=50, seed=1)
    np.testing.assert_array_equal(wide.thetas, narrow.thetas)
    np.testing.assert_array_equal(wide.se, narrow.se)
    mid = np.median(narrow.thetas, axis=0)[:, None]
    np.testing.assert_allclose(wide.ci - mid, S * (narrow.ci - mid), rtol=1e-12)
