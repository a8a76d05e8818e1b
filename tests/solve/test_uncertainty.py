"""Uncertainty on a fit: sandwich covariance, block bootstrap, intervals, misspecification test."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dynosed_sym as ds
from dynosed_sym.solve import uncertainty as unc
from dynosed_sym.solve.linear import solve_tikhonov

x, y = sp.symbols("x y", real=True)
M11, M12, M22 = sp.symbols("M11 M12 M22", real=True)
OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])

#: 2-D OU with three of the four entries of M free (M21 = −0.5 known): identifiable, exactly sampled
OU3 = ds.SDEModel(
    [x, y],
    [M11, M12, M22],
    [M11 * x + M12 * y, -sp.Rational(1, 2) * x + M22 * y],
    diffusion=1,
    name="ou3",
    nominal=[-1.0, 0.5, -1.0],
)


def _random_blocks(rng, B=12, m=30, n=3):
    A0 = rng.standard_normal((m, n))
    theta = rng.standard_normal(n)
    A_blocks = A0[None] + 0.1 * rng.standard_normal((B, m, n))
    b_blocks = np.einsum("bmn,n->bm", A0[None] + 0 * A_blocks, theta) + 0.1 * rng.standard_normal(
        (B, m)
    )
    counts = rng.integers(50, 100, B).astype(float)
    w = counts / counts.sum()
    return np.tensordot(w, A_blocks, axes=1), w @ b_blocks, A_blocks, b_blocks, counts


# ================================================================================ linearisation
def test_block_influence_is_the_derivative_of_the_solution(rng):
    """IF_b equals the finite-difference derivative of θ̂ in the direction of block b's deviation."""
    A, b, A_blocks, b_blocks, counts = _random_blocks(rng)
    lam = 1e-3
    theta = solve_tikhonov(A, b, lam)
    IF = unc.block_influence(A, b, theta, lam, A_blocks, b_blocks)
    eps = 1e-6
    for k in (0, 5, 11):
        th_eps = solve_tikhonov(A + eps * (A_blocks[k] - A), b + eps * (b_blocks[k] - b), lam)
        np.testing.assert_allclose((th_eps - theta) / eps, IF[k], rtol=1e-4, atol=1e-8)


def test_sandwich_covariance_formula(rng):
    A, b, A_blocks, b_blocks, counts = _random_blocks(rng)
    theta = solve_tikhonov(A, b, 1e-6)
    cov = unc.sandwich_covariance(A, b, theta, 1e-6, A_blocks, b_blocks, counts)
    IF = unc.block_influence(A, b, theta, 1e-6, A_blocks, b_blocks)
    w = counts / counts.sum()
    np.testing.assert_allclose(cov, (IF * w[:, None]).T @ IF / (len(counts) - 1))
    assert np.all(np.linalg.eigvalsh(cov) >= -1e-15)
    np.testing.assert_allclose(
        unc.hinv(A, 1e-6), np.linalg.inv(A.T @ A + 1e-6 * np.eye(3)), rtol=1e-8
    )


def test_confidence_intervals_student_t():
    ci = unc.confidence_intervals(np.array([1.0, 2.0]), np.array([0.5, np.inf]), 0.95, 31)
    q = stats.t.ppf(0.975, 31)
    np.testing.assert_allclose(ci[0], [1 - 0.5 * q, 1 + 0.5 * q])
    assert np.isinf(ci[1]).all()


def test_bootstrap_is_seeded_and_zero_for_identical_blocks(rng):
    A, b, A_blocks, b_blocks, counts = _random_blocks(rng)
    r1 = unc.block_bootstrap(A_blocks, b_blocks, counts, 1e-6, n_boot=50, seed=3)
    r2 = unc.block_bootstrap(A_blocks, b_blocks, counts, 1e-6, n_boot=50, seed=3)
    np.testing.assert_array_equal(r1.thetas, r2.thetas)
    assert r1.thetas.shape == (50, 3) and r1.ci.shape == (3, 2) and np.all(r1.se > 0)
    same = unc.block_bootstrap(
        np.repeat(A[None], 8, 0), np.repeat(b[None], 8, 0), np.ones(8), 1e-6, n_boot=20, seed=0
    )
    np.testing.assert_allclose(same.se, 0.0, atol=1e-10)


# ================================================================================ FitResult
@pytest.fixture(scope="module")
def lorenz_fit(models):
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 3000, seed=11)
    return m, X, ds.fit_global(m, X, features=ds.Features(seed=0))


def test_fit_report_has_standard_errors_and_p_value(lorenz_fit):
    m, X, fit = lorenz_fit
    rep = fit.report
    assert (
        rep.std_errors.shape == (3,)
        and np.all(np.isfinite(rep.std_errors))
        and np.all(rep.std_errors > 0)
    )
    assert (
        rep.ci.shape == (3, 2)
        and np.all(rep.ci[:, 0] < fit.theta)
        and np.all(fit.theta < rep.ci[:, 1])
    )
    assert rep.n_blocks == 32 and rep.covariance.shape == (3, 3)
    assert 0.0 <= rep.p_value <= 1.0 and rep.misspec_dim >= 1.0
    np.testing.assert_allclose(fit.std_errors, np.sqrt(np.diag(rep.covariance)))
    np.testing.assert_allclose(fit.conf_int(), rep.ci)
    wide = fit.conf_int(level=0.99)
    assert np.all(wide[:, 0] < rep.ci[:, 0])
    assert "misspecification test" in str(rep)


def test_summary_shows_se_ci_and_bootstrap(lorenz_fit):
    m, X, fit = lorenz_fit
    text = fit.summary(truth=m.nominal)
    assert "std.err" in text and "95% CI" in text and "boot.se" not in text
    res = fit.bootstrap(n_boot=100, seed=1)
    assert res.thetas.shape == (100, 3)
    text = fit.summary()
    assert "boot.se" in text and "bootstrap 95% CI" in text
    assert "boot.se" not in fit.summary(bootstrap=False)
    np.testing.assert_allclose(fit.conf_int(method="bootstrap"), res.ci)
    # bootstrap and sandwich agree roughly (both estimate the same spread from 32 blocks)
    ratio = res.se / fit.std_errors
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio
    with pytest.raises(ds.DynosedError):
        fit.conf_int(method="jackknife")


def test_not_identifiable_parameters_get_infinite_intervals(models, ou_samples):
    fit = ds.fit_global(
        models["ou2d"], ou_samples(OU_M, 1.0, 20_000, 0), features=ds.Features(seed=0)
    )
    se = fit.std_errors
    assert np.isinf(se[1]) and np.isinf(se[2]) and np.all(np.isfinite(se[[0, 3]]))
    assert "(−∞, ∞)" in fit.summary()


def test_streamed_fit_gives_the_same_uncertainty(lorenz_fit, tmp_path):
    m, X, fit = lorenz_fit
    path = tmp_path / "x.npy"
    np.save(path, X)
    streamed = ds.fit_global(m, str(path), features=ds.Features(seed=0))
    np.testing.assert_allclose(streamed.std_errors, fit.std_errors, rtol=1e-9)
    np.testing.assert_allclose(streamed.report.p_value, fit.report.p_value, rtol=1e-8)


# ================================================================================ calibration
@pytest.mark.slow
def test_calibration_on_exactly_sampled_ou(ou_samples):
    """95 % intervals cover the truth in 90–99 % of 200 replications; SEs match the spread."""
    truth = OU3.nominal
    R, N = 200, 2000
    est, se, cover, cover_boot, pvals = [], [], [], [], []
    for rep in range(R):
        X = ou_samples(OU_M, 1.0, N, 10_000 + rep)
        fit = ds.fit_global(OU3, X, features=ds.Features(n_features=256, seed=rep))
        ci = fit.conf_int()
        boot = fit.bootstrap(n_boot=100, seed=rep)
        est.append(fit.theta)
        se.append(fit.std_errors)
        cover.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
        cover_boot.append((boot.ci[:, 0] <= truth) & (truth <= boot.ci[:, 1]))
        pvals.append(fit.report.p_value)
    est, se = np.array(est), np.array(se)
    coverage = np.mean(cover, axis=0)
    coverage_boot = np.mean(cover_boot, axis=0)
    spread = est.std(axis=0, ddof=1)
    ratio = np.sqrt(np.mean(se**2, axis=0)) / spread
    pvals = np.array(pvals)
    print(f"\ncalibration, OU with 3 free entries, {R} replications at N = {N}, m = 256:")
    print(f"  sandwich 95% coverage {dict(zip(OU3.param_names, coverage.round(3)))}")
    print(f"  bootstrap 95% coverage {dict(zip(OU3.param_names, coverage_boot.round(3)))}")
    print(f"  predicted se / empirical sd {dict(zip(OU3.param_names, ratio.round(3)))}")
    print(
        f"  p-values: P(p<0.05) = {np.mean(pvals < 0.05):.3f}, P(p<0.01) = "
        f"{np.mean(pvals < 0.01):.3f}, "
        f"KS distance to uniform {stats.kstest(pvals, 'uniform').statistic:.3f}"
    )
    assert np.all((coverage >= 0.90) & (coverage <= 0.99)), coverage
    assert np.all(np.abs(ratio - 1.0) < 0.25), ratio
    assert np.all(coverage_boot >= 0.85), coverage_boot
    assert np.mean(pvals < 0.05) < 0.10 and np.mean(pvals < 0.01) < 0.03
    assert stats.kstest(pvals, "uniform").statistic < 0.12


@pytest.mark.slow
def test_p_value_uniform_under_rank_deficient_true_model(models, ou_samples):
    """All four OU entries free (rank 3): the test projects out only resolved directions."""
    pvals = np.array(
        [
            ds.fit_global(
                models["ou2d"],
                ou_samples(OU_M, 1.0, 3000, 500 + s),
                features=ds.Features(n_features=256, seed=s),
            ).report.p_value
            for s in range(150)
        ]
    )
    print(
        f"\nrank-deficient OU: P(p<0.05) = {np.mean(pvals < 0.05):.3f}, "
        f"KS distance {stats.kstest(pvals, 'uniform').statistic:.3f}"
    )
    assert np.mean(pvals < 0.05) < 0.11
    assert stats.kstest(pvals, "uniform").statistic < 0.15


@pytest.mark.slow
def test_misspecified_lorenz_detected(models):
    """Lorenz data fitted without the x·y term of dz: inconsistent in ≥ 95 % of draws at N = 5000;
    the true model consistent in ≥ 90 %."""
    true = models["lorenz"]
    xs, ys, zs = true.state
    sigma, rho, beta = true.params
    lacking = ds.SDEModel(
        [xs, ys, zs],
        [sigma, rho, beta],
        [sigma * (ys - xs), xs * (rho - zs) - ys, -beta * zs],
        diffusion=sp.Rational(3, 10),
        name="lorenz_without_xy",
    )
    draws = 20
    p_true, p_bad, cons_true, cons_bad = [], [], [], []
    for s in range(draws):
        X = ds.simulate(true, true.nominal, 5000, seed=700 + s)
        good, bad = (
            ds.fit_global(true, X, features=ds.Features(seed=s)),
            ds.fit_global(lacking, X, features=ds.Features(seed=s)),
        )
        p_true.append(good.report.p_value)
        p_bad.append(bad.report.p_value)
        cons_true.append(good.report.consistent)
        cons_bad.append(bad.report.consistent)
    p_true, p_bad = np.array(p_true), np.array(p_bad)
    print(
        f"\nLorenz, {draws} draws at N = 5000: true model consistent {np.mean(cons_true):.2f}, "
        f"p ≥ 0.01 in {np.mean(p_true >= 0.01):.2f} (median p {np.median(p_true):.2f}); "
        f"without x·y: inconsistent {1 - np.mean(cons_bad):.2f}, p < 0.01 in "
        f"{np.mean(p_bad < 0.01):.2f} "
        f"(max p {p_bad.max():.2g})"
    )
    assert np.mean(cons_true) >= 0.90 and np.mean(p_true >= 0.01) >= 0.90
    assert 1 - np.mean(cons_bad) >= 0.95 and np.mean(p_bad < 0.01) >= 0.95


@settings(max_examples=200, deadline=None)
@given(
    level=st.floats(0.5, 1 - 1e-9),  # below 0.5 a level is refused (an alpha given as level)
    dof=st.one_of(st.integers(1, 10**6).map(float), st.floats(0.5, 1e4), st.just(np.inf)),
    n=st.integers(1, 10**4),
)
def test_quantiles_are_scipy_stats_bit_for_bit(level, dof, n):
    """t_quantile and resolve_quantile take scipy.special's functions (scipy.stats is slow to
    import): the numbers of scipy.stats.t.ppf / norm.ppf, bit for bit."""
    from dynosed_sym.solve.directions import MIN_DOF, RESOLVE_LEVEL, resolve_quantile

    p = 0.5 + level / 2.0
    want = stats.t.ppf(p, dof) if np.isfinite(dof) else stats.norm.ppf(p)
    assert unc.t_quantile(level, dof) == float(want)
    if np.isfinite(dof) and dof >= MIN_DOF:
        alpha = (1.0 - RESOLVE_LEVEL) / n
        assert resolve_quantile(dof, None, n) == float(stats.t.ppf(1.0 - alpha / 2.0, dof))
