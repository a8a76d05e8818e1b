"""The misspecification p-value (Imhof's formula) against exact laws, a long simulation and its own
accuracy bookkeeping: bounds instead of numbers below the integration accuracy, a flag and a
ConvergenceWarning when the integral does not converge."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import sympy as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats
from strategies import noisy_column_fit

import dynosed_sym as ds
from dynosed_sym.routes.result import FitResult
from dynosed_sym.solve import misspecification as ms
from dynosed_sym.solve.linear import solve_tikhonov
from dynosed_sym.solve.report import analyse

x, y = sp.symbols("x y", real=True)
p0, p1, p2 = sp.symbols("p0 p1 p2", real=True)
#: any 3-parameter model: FitResult only reads its names for the summary and the JSON
MODEL3 = ds.SDEModel([x, y], [p0, p1, p2], [p0 * x + p1 * y, p2 * y], diffusion=1, name="m3")


def test_equal_weights_give_the_exact_F_law():
    """h equal weights: T = μχ²_h / (μχ²_{kh}/k) is exactly F(h, k·h).  Every p-value is within
    1e-8 of scipy's F tail, or a bound above it."""
    rng = np.random.default_rng(0)
    compared = 0
    for h in (1, 2, 5, 31):
        for k in (1, 4, 31):
            mu = np.full(h, 10.0 ** rng.uniform(-6, 6))
            for t in np.geomspace(0.02, 300.0, 21):
                p = ms.ratio_tail(mu, k, t)
                ref = stats.f.sf(t, h, k * h)
                assert p.converged, (h, k, t, p.message)
                if p.bound:
                    assert ref <= p.value and p.value >= ms.IMHOF_FLOOR, (h, k, t, p, ref)
                    assert ref < 1e-9, (h, k, t, ref)  # a bound only where the number is tiny
                else:
                    assert abs(p.value - ref) <= 1e-8, (h, k, t, p.value, ref)
                    assert p.error <= 1e-10
                    compared += 1
    assert compared >= 200


def test_two_weights_against_a_long_simulation():
    """μ = (1, 0.2), k = 5 (no closed form): P(T > t) against 4·10⁶ exact draws of T, within 5
    binomial standard errors."""
    mu, k, n = np.array([1.0, 0.2]), 5, 4_000_000
    rng = np.random.default_rng(1)
    num = rng.standard_normal((n, 2)) ** 2 @ mu
    den = 2.0 * rng.standard_gamma(k / 2.0, (n, 2)) @ mu / k  # χ²_k = 2·Gamma(k/2)
    T = num / den
    for t in (0.3, 1.0, 3.0, 8.0, 20.0):
        p = ms.ratio_tail(mu, k, t)
        assert p.converged and not p.bound
        se = np.sqrt(p.value * (1.0 - p.value) / n)
        assert abs(np.mean(T > t) - p.value) <= 5.0 * se, (t, np.mean(T > t), p.value, se)


def test_tiny_p_value_is_a_bound_not_a_number():
    p = ms.ratio_tail(np.ones(3), 31, 1e4)  # the F tail there is ~1e-100
    assert p.bound and p.converged and p.value == ms.IMHOF_FLOOR
    assert stats.f.sf(1e4, 3, 93) < p.value
    assert str(p) == "p < 1e-12"
    assert str(ms.ratio_tail(np.ones(3), 31, 1.0)).startswith("p = 0.3")


@settings(max_examples=40)
@given(
    log_mu=st.lists(st.floats(-8.0, 0.0), min_size=1, max_size=6),
    k=st.integers(1, 40),
    t1=st.floats(0.01, 60.0),
    ratio=st.floats(1.0, 10.0),
)
# weights equal to the last bits (μ = 1 and 10^−2.2e−16): their breakpoints once made a
# subinterval a few ulps wide, where QUADPACK reported "extremely bad integrand behaviour"
@example(log_mu=[0.0, -2.0, -0.09375, -2.220446049250313e-16], k=18, t1=49.0, ratio=1.0)
def test_p_value_is_a_decreasing_function_of_t_in_the_unit_interval(log_mu, k, t1, ratio):
    mu = 10.0 ** np.array(log_mu)
    r1, r2 = ms.ratio_tail(mu, k, t1), ms.ratio_tail(mu, k, t1 * ratio)
    for r in (r1, r2):
        assert r.converged and 0.0 <= r.value <= 1.0 and r.error < 1e-9
    if r1.bound:  # P(T > t2) ≤ P(T > t1) < bound
        assert r2.bound and r2.value <= r1.value
    elif not r2.bound:
        assert r2.value <= r1.value + r1.error + r2.error


@settings(max_examples=30)
@given(
    pairs=st.lists(st.tuples(st.floats(-6.0, 0.0), st.integers(-4, 4)), min_size=1, max_size=4),
    k=st.integers(2, 40),
    t=st.floats(0.1, 60.0),
)
def test_weights_equal_to_the_last_bits_give_the_p_value_of_equal_weights(pairs, k, t):
    """Each weight twice, once moved by a few ulps: the p-value of exactly equal weights."""
    mu = 10.0 ** np.array([lm for lm, _ in pairs])
    near = mu * (1.0 + np.array([u for _, u in pairs]) * np.finfo(float).eps)
    exact = ms.ratio_tail(np.concatenate([mu, mu]), k, t)
    close = ms.ratio_tail(np.concatenate([mu, near]), k, t)
    assert exact.converged and close.converged, (exact.message, close.message)
    if exact.bound or close.bound:  # both at the floor's edge: bounds or numbers below ~1e-11
        assert min(exact.value, close.value) <= 10.0 * ms.IMHOF_FLOOR
    else:
        assert abs(exact.value - close.value) <= exact.error + close.error + 1e-12


def test_integral_that_does_not_converge_is_flagged():
    p = ms.ratio_tail(np.array([1.0, 0.3, 0.01]), 7, 2.0, limit=1)
    assert not p.converged and "subdivisions" in p.message


def _blocks(rng, B=16, m=24, n=3, offset=0.0):
    A0 = rng.standard_normal((m, n))
    theta = rng.standard_normal(n)
    A_blocks = A0[None] + 0.05 * rng.standard_normal((B, m, n))
    b_blocks = A_blocks @ theta + 0.05 * rng.standard_normal((B, m)) + offset * A0[:, 0] ** 2
    counts = np.full(B, 100.0)
    return A_blocks.mean(0), b_blocks.mean(0), A_blocks, b_blocks, counts


def _fit(rng, offset=0.0):
    A, b, A_blocks, b_blocks, counts = _blocks(rng, offset=offset)
    theta = solve_tikhonov(A, b, 0.0)
    rep = analyse(A, b, theta, 0.0, MODEL3.param_names, A_blocks, b_blocks, counts)
    return FitResult(MODEL3, theta, A, b, rep, "global", 1600, {"lam": 0.0})


def test_report_shows_a_bound_for_a_grossly_misspecified_system():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        fit = _fit(np.random.default_rng(2), offset=5.0)
    rep = fit.report
    assert rep.p_value_bound and rep.p_value_converged and rep.p_value == ms.IMHOF_FLOOR
    assert "p < 1e-12" in str(rep) and "p < 1e-12" in fit.summary()
    rec = json.loads(fit.to_json())["report"]
    assert rec["p_value"] == 1e-12 and rec["p_value_bound"] is True
    assert rec["p_value_converged"] is True
    good = _fit(np.random.default_rng(3))
    assert not good.report.p_value_bound and "p = " in str(good.report)


def test_report_flags_an_unconverged_p_value(monkeypatch):
    monkeypatch.setattr(ms, "IMHOF_LIMIT", 1)
    with pytest.warns(ds.ConvergenceWarning, match="Imhof integral did not converge"):
        fit = _fit(np.random.default_rng(4))
    rep = fit.report
    assert not rep.p_value_converged and "subdivisions" in rep.p_value_message
    assert isinstance(rep.p_value, float) and 0.0 <= rep.p_value <= 1.0
    assert "(p-value integral did not converge: " in str(rep)
    assert "(p-value integral did not converge: " in fit.summary()
    rec = fit.to_dict()["report"]
    assert rec["p_value_converged"] is False and "subdivisions" in rec["p_value_message"]


def _T_at(A, b, theta, A_blocks, b_blocks, w, Ur):
    """NumPy oracle of the test's statistic T at θ (module docstring of misspecification)."""
    r = A @ theta - b
    e = np.einsum("bmn,n->bm", A_blocks, theta) - b_blocks - r[None]
    e = e - (e @ Ur) @ Ur.T
    return (w.size - 1) * float(r @ r) / float(w @ (e * e).sum(axis=1))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-3, 1.0))
def test_profile_along_reaches_the_smallest_statistic_on_the_line(seed, scale):
    """Profiled along v, T is the minimum over θ + z·v of the oracle's T (a dense grid in
    z = tan(u), which reaches |z| → ∞), never above it and never above T at z = 0."""
    rng = np.random.default_rng(seed)
    B, m, n = 8, 12, 3
    A_blocks = rng.normal(size=(B, m, n))
    A_blocks[:, :, 2] *= scale  # a weak column
    b_blocks = rng.normal(size=(B, m)) + 0.3
    w = np.full(B, 1.0 / B)
    A, b = w @ A_blocks.reshape(B, -1), w @ b_blocks
    A, b = A.reshape(m, n), b
    theta = np.linalg.lstsq(A[:, :2], b, rcond=None)[0]
    theta = np.append(theta, 0.0)
    U = np.linalg.svd(A, full_matrices=False)[0]
    Ur = U[:, :2]
    v = np.linalg.svd(A)[2][-1]
    stat, _, _, z = ms.misspecification_profile(
        A, b, theta, 0.0, A_blocks, b_blocks, np.full(B, 10), rank=2, U=U, along=v[:, None]
    )
    plain, _, _ = ms.misspecification_test(
        A, b, theta, 0.0, A_blocks, b_blocks, np.full(B, 10), rank=2, U=U
    )
    from scipy.optimize import minimize_scalar

    def T(u):  # z = tan(u) reaches |z| → ∞ at the ends
        return _T_at(A, b, theta + np.tan(u) * v, A_blocks, b_blocks, w, Ur)

    us = np.linspace(-np.pi / 2 + 1e-9, np.pi / 2 - 1e-9, 4001)
    i = int(np.argmin([T(u) for u in us]))
    lo, hi = us[max(i - 1, 0)], us[min(i + 1, us.size - 1)]
    fine = minimize_scalar(T, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    grid = min(T(us[i]), fine.fun)
    assert stat <= plain * (1 + 1e-12)
    assert stat <= grid * (1 + 1e-9)
    assert stat >= grid * (1 - 1e-6)
    # the component reported is where T is taken (inf: the limit of the direction alone)
    at = np.inf if np.isinf(z[0]) else _T_at(A, b, theta + z[0] * v, A_blocks, b_blocks, w, Ur)
    assert np.isinf(z[0]) or at == pytest.approx(stat, rel=1e-9)
    # beyond |z| no p-value is integrated; the statistic is the same
    skipped = ms.misspecification_profile(
        A,
        b,
        theta,
        0.0,
        A_blocks,
        b_blocks,
        np.full(B, 10),
        rank=2,
        U=U,
        along=v[:, None],
        p_wanted=lambda zz: bool(np.any(np.abs(zz) > abs(z[0]))),
    )
    assert skipped[1] is None and skipped[0] == stat


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), exponent=st.sampled_from([-100, 0, 80]))
def test_profile_along_two_directions_is_the_joint_minimum_at_any_scale(seed, exponent):
    """Along two directions the profiled T is the joint infimum: never above a multi-start
    Nelder–Mead minimum of the oracle's T(z₁, z₂), equal to the oracle at the z it reports, and
    the same when the data are scaled by 10^±100 (the plain test's scale invariance)."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    B, m, n = 10, 14, 4
    A_blocks = rng.normal(size=(B, m, n))
    A_blocks[:, :, 2:] *= 0.05  # two weak columns
    b_blocks = rng.normal(size=(B, m)) + 0.3
    w = np.full(B, 1.0 / B)
    A, b = w @ A_blocks.reshape(B, -1), w @ b_blocks
    A = A.reshape(m, n)
    theta = np.append(np.linalg.lstsq(A[:, :2], b, rcond=None)[0], [0.0, 0.0])
    U, _, Vt = np.linalg.svd(A, full_matrices=False)
    Ur, VU = U[:, :2], Vt[2:].T
    counts = np.full(B, 10)
    args = (theta, 0.0, A_blocks, b_blocks, counts)
    stat, _, _, z = ms.misspecification_profile(A, b, *args, rank=2, U=U, along=VU)

    def T(zz):
        return _T_at(A, b, theta + VU @ zz, A_blocks, b_blocks, w, Ur)

    best = min(
        minimize(
            T, x0, method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000}
        ).fun
        for x0 in rng.normal(scale=30.0, size=(6, 2))
    )
    assert stat <= best * (1 + 1e-7)
    if np.all(np.isfinite(z)):
        assert T(z) == pytest.approx(stat, rel=1e-7)
    c = 10.0**exponent
    scaled = ms.misspecification_profile(
        A * c, b * c, theta, 0.0, A_blocks * c, b_blocks * c, counts, rank=2, U=U, along=VU
    )
    assert scaled[0] == pytest.approx(stat, rel=1e-9)


def test_a_flat_direction_never_makes_a_rejected_model_consistent():
    """A model misspecified off the range of A (b has a component δ = 1 outside it) with one
    column that is structurally flat in the population: the test at the estimate rejects; the
    test profiled along the flat direction as well "fits" in most of these sets (its limit T is
    the column's curvature against its noise, whatever b is).  Where the least-squares component
    along the noise column is most of the estimate (the misfit's share on it over a tiny
    singular value), the report takes that direction for the drift's open overall scale and the
    verdict is "undetermined" (the cost of the rule, docs/design-statistics.md §7); otherwise
    INCONSISTENT stays.  A rejected model is never "consistent" (`-s` prints the counts quoted in
    the docs: 6 INCONSISTENT, 19 undetermined, 15 consistent)."""
    from dynosed_sym.solve.ustat import solve_system

    B, m, n, Nb = 40, 8, 3, 100
    verdicts = {"INCONSISTENT": 0, "undetermined": 0, "consistent": 0}
    for seed in range(40):
        rng = np.random.default_rng(seed)
        A_pop = rng.standard_normal((m, n))
        A_pop[:, 2] = 0.0  # the flat column
        b_pop = A_pop @ np.array([1.0, -0.5, 0.0]) + np.linalg.svd(A_pop)[0][:, -1]
        s = 1.0 / np.sqrt(Nb)
        A_blocks = A_pop[None] + s * rng.standard_normal((B, m, n))
        b_blocks = b_pop[None] + s * rng.standard_normal((B, m))
        counts = np.full(B, Nb)
        A, b = A_blocks.mean(0), b_blocks.mean(0)
        est = solve_system(A, b, A_blocks, b_blocks, counts, 1e-9)
        rep = analyse(
            A, b, est.theta, 1e-9, ["a", "b", "c"], A_blocks, b_blocks, counts, estimate=est
        )
        verdicts[rep.verdict] += 1
        text = str(rep)
        if rep.p_value < 0.01:
            assert rep.consistent is not True, text
            opened = rep.misspec_open_scale
            if rep.verdict == "undetermined":
                assert opened[1] >= 0.01 and rep.consistent is None, text
                assert "UNDETERMINED" in text and "INCONSISTENT:" not in text, text
            else:
                assert rep.verdict == "INCONSISTENT" and "INCONSISTENT:" in text, text
                if opened is not None and opened[1] >= 0.01:  # the profile fits: said, not taken
                    assert "the rejection stands" in text, text
        else:
            assert rep.verdict == "consistent" and rep.misspec_open_scale is None, text
    print(f"\nverdicts of 40 misspecified systems: {verdicts}")
    assert verdicts["INCONSISTENT"] + verdicts["undetermined"] >= 20, verdicts


def _noisy_columns(seed, delta, signal=0.03):
    """The weak-column system (``strategies.noisy_column_fit``): its report and the test's
    p-value at the Tikhonov solution."""
    rep, est, (A, b, A_blocks, b_blocks, counts) = noisy_column_fit(seed, delta, signal)
    at_tikhonov = ms.misspecification_test(
        A, b, est.theta_tikhonov, 1e-9, A_blocks, b_blocks, counts, rep.rank, U=est.left_vectors
    )[1]
    return rep, at_tikhonov


def test_noisy_columns_do_not_reject_a_correct_model():
    """The noise of (A_b − A)θ grows with θ, so a test taken at the attenuated least-squares θ
    sees too little of it and rejects a correct model (here 15 of 200 at p < 0.01); the
    verdict's test is profiled along the resolved directions (``verdict_test``), whose infimum
    is at most the statistic at the truth: at most 5 of 200 (the level's 2, and its binomial
    spread).  With b off the columns' range the profiled test has less power than the test at
    the attenuated θ (a larger θ carries more noise and can hold a larger residual): off by 0.5
    it rejects 16 of 40 where the latter rejects 39, off by 1, 38 and 40 (``-s`` prints the
    counts quoted in docs/design-statistics.md §7)."""
    rejected, at_tikhonov, profiled = 0, 0, 0
    for seed in range(200):
        rep, p_tik = _noisy_columns(seed, 0.0)
        rejected += rep.p_value < 0.01
        at_tikhonov += p_tik.value < 0.01
        profiled += rep.misspec_profiled
        # undetermined only where the test rejects (verdicts.profile_unresolved)
        assert rep.consistent == (rep.p_value >= 0.01) or (
            rep.verdict == "undetermined" and rep.p_value < 0.01
        )
        assert rep.residual_ratio == pytest.approx(np.sqrt(rep.misspec_stat))
    assert at_tikhonov >= 10  # the attenuation the profile is for is there
    assert rejected <= 5
    assert profiled >= 150  # (rank 3 of 3 in most sets: profiled along every direction)
    print(f"\ncorrect model: {at_tikhonov} of 200 rejected at Tikhonov, {rejected} profiled")
    for delta in (0.5, 1.0):
        runs = [_noisy_columns(seed, delta) for seed in range(40)]
        power = sum(rep.p_value < 0.01 for rep, _ in runs)
        power_tik = sum(p.value < 0.01 for _, p in runs)
        print(f"b off the range by {delta}: {power} of 40 profiled, {power_tik} at Tikhonov")
        assert power <= power_tik
    assert power >= 30  # (off by 1)
    # what the profile does not remove: attenuation along unresolved directions (most of these
    # data sets resolve nothing), quoted in the docs as a limitation
    weak = [_noisy_columns(seed, 0.0, signal=0.015)[0] for seed in range(200)]
    print(
        f"half the signal: {sum(r.p_value < 0.01 for r in weak)} of 200 rejected, "
        f"{sum(r.verdict == 'INCONSISTENT' for r in weak)} INCONSISTENT"
    )
    for delta in (0.5, 1.0):
        runs = [_noisy_columns(seed, delta)[0] for seed in range(40)]
        undetermined = sum(rep.verdict == "undetermined" for rep in runs)
        print(f"b off the range by {delta}: {undetermined} of 40 undetermined")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(0, 3), scale=st.floats(1e-2, 1.0))
def test_verdict_test_is_the_infimum_over_the_resolved_span_or_the_plain_test(seed, k, scale):
    """``verdict_test`` along k directions: T at the θ it returns equals the oracle's T there,
    that θ differs from the start by a combination of the directions, and no random point of
    their span (nor the start) has a smaller T; with no directions, or an infimum only in a
    limit, it is the plain test at the start, bit for bit."""
    rng = np.random.default_rng(seed)
    B, m, n = 10, 14, 3
    A_blocks = rng.normal(size=(B, m, n)) * np.array([1.0, 0.5, scale])
    b_blocks = rng.normal(size=(B, m)) + 0.3
    counts = np.full(B, 10)
    w = np.full(B, 1.0 / B)
    A, b = A_blocks.mean(0), b_blocks.mean(0)
    U, _, Vt = np.linalg.svd(A, full_matrices=False)
    rank = 2
    theta = np.linalg.lstsq(A, b, rcond=None)[0]
    along = Vt[:k].T if k else None
    stat, p, h, at = ms.verdict_test(
        A, b, theta, 0.0, A_blocks, b_blocks, counts, rank, U=U, along=along
    )
    plain = ms.misspecification_test(A, b, theta, 0.0, A_blocks, b_blocks, counts, rank, U=U)
    Ur = U[:, :rank]
    if k == 0 or np.array_equal(at, theta):
        assert (stat, p.value, h) == (plain[0], plain[1].value, plain[2])
        return
    assert _T_at(A, b, at, A_blocks, b_blocks, w, Ur) == pytest.approx(stat, rel=1e-8)
    z = np.linalg.lstsq(along, at - theta, rcond=None)[0]
    np.testing.assert_allclose(along @ z, at - theta, atol=1e-9 * (1 + np.abs(at).max()))
    assert stat <= plain[0] * (1 + 1e-12)
    for zz in rng.normal(size=(50, k)) * (1 + np.abs(z).max()):
        assert stat <= _T_at(A, b, theta + along @ zz, A_blocks, b_blocks, w, Ur) * (1 + 1e-9)


def test_u_and_v_verdicts_agree_when_a_leading_direction_is_unresolved():
    """A pure-noise column with the largest σ: the leading singular direction is unresolved and
    the trailing ones are resolved.  The test projects its noise off the *resolved* directions'
    left vectors, for the U-statistic's solve (which keeps them) and the ridge's (one SVD in the
    report), so the two estimators' verdicts are the same test (the GRN's differed before)."""
    from dynosed_sym.solve.ustat import solve_system

    B, m, Nb, checked = 32, 30, 100, 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        A_pop = rng.standard_normal((m, 3)) * np.array([0.0, 1.0, 0.7])
        b_pop = A_pop @ np.array([0.0, 1.0, -0.5])
        noise = rng.standard_normal((B, m, 3)) * np.array([100.0, 1.0, 1.0]) / np.sqrt(Nb)
        A_blocks = A_pop[None] + noise
        b_blocks = b_pop[None] + rng.standard_normal((B, m)) / np.sqrt(Nb)
        counts = np.full(B, Nb)
        A, b = A_blocks.mean(0), b_blocks.mean(0)
        reps = {}
        for stat, est_name in (("u", "resolved"), ("v", "ridge")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = solve_system(
                    A, b, A_blocks, b_blocks, counts, 1e-9, statistic=stat, estimator=est_name
                )
                reps[stat] = analyse(
                    A, b, est.theta, 1e-9, ["a", "b", "c"], A_blocks, b_blocks, counts, estimate=est
                )
        t = reps["u"].direction_t
        if not (t[0] < reps["u"].resolve_threshold < min(t[1:])):
            continue  # not the case under test
        checked += 1
        assert reps["u"].rank == reps["v"].rank == 2
        assert reps["u"].p_value == pytest.approx(reps["v"].p_value, rel=1e-9)
        assert reps["u"].misspec_stat == pytest.approx(reps["v"].misspec_stat, rel=1e-9)
    assert checked >= 5


def test_profile_along_without_an_eigenvector_is_no_profile():
    """Block deviations 1e-155 times the residual put D at the subnormal scale, where SciPy's
    eigh returns no eigenvector (an IndexError): now no profile, as for a singular D."""
    rng = np.random.default_rng(0)
    B, m, n, s = 6, 8, 2, 1e-155
    w = np.full(B, 1.0 / B)
    A_blocks = s * rng.normal(size=(B, m, n))
    A = (w @ A_blocks.reshape(B, -1)).reshape(m, n)
    r, e = rng.normal(size=m), s * rng.normal(size=(B, m))
    got_r, got_e, z = ms.profile_along(A, A_blocks, r, e, np.zeros((m, 0)), w, [[1.0], [0.0]])
    assert got_r is r and got_e is e and np.array_equal(z, [0.0])
