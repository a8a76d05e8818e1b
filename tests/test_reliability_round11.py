"""Reliability round eleven: the standard errors of data of extreme scales, the identifiability
check's candidate times, the command line's probe count and a time course given to
check_stationarity — each fixed, or refused with a message naming the argument or the option
(docs/reliability.md, one row each).

Oracles: the same fit on the unscaled data (a power-of-two scale is exact, and the drift of
``ou2d`` maps to itself under x ↦ cx with θ ↦ θ/c²), the sandwich formula in plain NumPy, and
the exact transient law of the OU process (Van Loan's exponential, tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.solve import uncertainty as unc
from dynosed_sym.solve.misspecification import block_weights

FEATURES = ds.Features(n_features=64)
RIDGE = ds.Solver(lam=0.0, estimator="ridge")  # its intervals are the sandwich's


@pytest.fixture(scope="module")
def ou(models):
    """ou2d and exact N(0, I) samples of it (M = −I), as tests/test_reliability.py's."""
    return models["ou2d"], np.random.default_rng(22).standard_normal((3000, 2))


def _fit(model, X, solver=RIDGE):
    return ds.fit_global(model, X, features=FEATURES, solver=solver)


def _fit_scaled(model, X, solver=RIDGE):
    # the same D with data × c: the drift M/c² relaxes over ~c² time units, which the fit's
    # stationarity check reads, rightly, as the picture of a diverging process
    with pytest.warns(ds.StationarityWarning, match="confines the samples only over"):
        return _fit(model, X, solver)


@pytest.mark.parametrize("k", [90, 120, 150])
def test_standard_errors_of_data_scaled_by_1e90_to_1e150(ou, k):
    """Data × 10⁹⁰ … 10¹⁵⁰: θ̂ ≈ M/c² was right, but the sandwich covariance was formed in θ's
    own units — influences of size 1/c², squared to ≈ 10⁻³⁶⁰ — so the standard errors read 0
    and every interval was the point θ̂.  Now the sandwich is formed in units of powers of two:
    SE·c² and the interval·c² are the unscaled data's, the same p-value and statuses."""
    model, X = ou
    c = 10.0**k
    ref, got = _fit(model, X), _fit_scaled(model, X * c)
    np.testing.assert_allclose(got.theta * c**2, ref.theta, rtol=0, atol=1e-9)
    se, ci = got.report.std_errors, got.report.ci
    assert np.all(se > 0)  # (they were 0)
    np.testing.assert_allclose(se * c**2, ref.report.std_errors, rtol=1e-6)
    np.testing.assert_allclose(ci * c**2, ref.report.ci, rtol=1e-6)
    assert np.all((ci[:, 0] < got.theta) & (got.theta < ci[:, 1]))
    np.testing.assert_allclose(got.report.p_value, ref.report.p_value, rtol=1e-6)
    assert got.report.status == ref.report.status


@pytest.mark.parametrize("e", [300, 498])  # data × ≈ 2e90, 1.6e150
def test_standard_errors_of_data_scaled_by_a_power_of_two_are_exact(ou, e):
    """A power-of-two scale is exact in the assembly, the solve and now the sandwich: the
    standard errors and intervals of data × 2^e are the unscaled data's × 2^-2e, bit for bit."""
    model, X = ou
    c = 2.0**e
    ref, got = _fit(model, X), _fit_scaled(model, X * c)
    np.testing.assert_array_equal(got.theta * c**2, ref.theta)
    np.testing.assert_array_equal(got.report.std_errors * c**2, ref.report.std_errors)
    np.testing.assert_array_equal(got.report.ci * c**2, ref.report.ci)


def test_the_scaled_sandwich_is_the_plain_formula_bit_for_bit():
    """Wherever the covariance is a normal number the powers of two change no bit: the sandwich
    equals Σ_b w_b IF_b IF_bᵀ / (B − 1) of the block influences, in plain NumPy, on systems of
    scales 10⁻⁵ … 10⁵; and its standard errors √C_jj·u_j are the diagonal's square roots."""
    rng = np.random.default_rng(0)
    B, m, n = 20, 12, 4
    for _ in range(20):
        A_blocks = rng.standard_normal((B, m, n)) * 10.0 ** rng.uniform(-5, 5)
        b_blocks = rng.standard_normal((B, m)) * 10.0 ** rng.uniform(-5, 5)
        counts = rng.integers(50, 100, B).astype(float)
        w = counts / counts.sum()
        A, b = np.tensordot(w, A_blocks, 1), w @ b_blocks
        theta = np.linalg.lstsq(A, b, rcond=None)[0]
        IF = unc.block_influence(A, b, theta, 1e-6, A_blocks, b_blocks)
        plain = (IF * block_weights(counts)[:, None]).T @ IF / (B - 1)
        cov = unc.sandwich_covariance(A, b, theta, 1e-6, A_blocks, b_blocks, counts)
        np.testing.assert_array_equal(cov, plain)
        C, u = unc.scaled_sandwich(A, b, theta, 1e-6, A_blocks, b_blocks, counts)
        np.testing.assert_array_equal(np.sqrt(np.diag(C)) * u, np.sqrt(np.diag(plain)))
        assert np.all(np.log2(u) == np.round(np.log2(u)))  # powers of two


@pytest.mark.xfail(
    strict=True,
    reason="left (docs/reliability.md, round eleven): the resolved estimator's standard errors "
    "come from solve/weak.py's weak_intervals (variances a0, bias², the Fieller set in "
    "solve/intervals.py), formed in θ's own units; they still read 0 at data × 1e90",
)
def test_resolved_estimator_standard_errors_of_data_scaled_by_1e90(ou):
    model, X = ou
    c = 2.0**300
    solver = ds.Solver(lam=0.0)
    ref, got = _fit(model, X, solver), _fit_scaled(model, X * c, solver)
    np.testing.assert_allclose(got.report.std_errors * c**2, ref.report.std_errors, rtol=1e-6)
