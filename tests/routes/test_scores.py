"""Score estimators: kernel (docs/method.md §2) and its local-Gaussian variant, local score
matching, user callables; closed forms against the NumPy reference, jackknife replicates,
Gaussian truth."""

from __future__ import annotations

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.reference import kernel_score_reference
from dynosed_sym.routes.scores import (
    CallableScore,
    KernelScore,
    ScoreMatching,
    estimate_scores,
    kernel_score,
    monomial_exponents,
    score_matching,
)

SIGMA = np.array([[1.0, 0.3], [0.3, 0.5]])
PREC = np.linalg.inv(SIGMA)


@pytest.fixture(scope="module")
def gauss():
    return np.random.default_rng(7).multivariate_normal([0.0, 0.0], SIGMA, 400_000)


PROBES = np.array([[0.2, 0.1], [-0.5, 0.3], [1.0, -0.2]])


# --------------------------------------------------------------------------- kernel estimator
@pytest.mark.parametrize("T", [0.5, 4.0, 49.0, 400.0])
def test_kernel_matches_reference(T):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3000, 3)) * [1.0, 2.0, 0.5]
    P = rng.standard_normal((7, 3))
    S, J = KernelScore(T, min_effective=0.0)(X, P)  # also probes with a single effective point
    S_ref, J_ref = kernel_score_reference(X, P, T)
    np.testing.assert_allclose(S, S_ref, rtol=1e-9, atol=1e-9 * T)
    np.testing.assert_allclose(J, J_ref, rtol=1e-9, atol=1e-9 * T * T)
    np.testing.assert_allclose(J, np.swapaxes(J, 1, 2), atol=1e-12 * T * T)


def test_kernel_jackknife_replicates_equal_direct_estimates():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((400, 2))
    P = rng.standard_normal((4, 2)) * 0.5
    for est in (KernelScore(3.0), KernelScore(3.0, deconvolve=True)):
        e = est.estimate(X, P, n_blocks=8)
        assert e.n_blocks == 8
        edges = np.linspace(0, 400, 9).round().astype(int)
        for b in (0, 3, 7):
            keep = np.concatenate([X[: edges[b]], X[edges[b + 1] :]])
            S, J = est(keep, P)
            np.testing.assert_allclose(e.score_blocks[b], S, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(e.jacobian_blocks[b], J, rtol=1e-10, atol=1e-12)


def test_kernel_converges_to_smoothed_gaussian_score(gauss):
    """Dense data: the kernel score is the score of N(0, Σ + I/T) (its smoothing bias)."""
    T = 20.0
    S, J = kernel_score(gauss, PROBES, T)
    smoothed = np.linalg.inv(SIGMA + np.eye(2) / T)
    np.testing.assert_allclose(S, -PROBES @ smoothed, atol=0.08)
    np.testing.assert_allclose(J, np.broadcast_to(-smoothed, J.shape), atol=0.25)


def test_local_gaussian_close_to_exact_gaussian_score(gauss):
    """Dense data: the deconvolved kernel estimator recovers the exact score and Jacobian."""
    S = estimate_scores(gauss, PROBES, "local_gaussian", temperature=4.0).score
    e = KernelScore(4.0, deconvolve=True).estimate(gauss, PROBES)
    np.testing.assert_allclose(e.score, -PROBES @ PREC, atol=0.06)
    np.testing.assert_allclose(e.jacobian, np.broadcast_to(-PREC, e.jacobian.shape), atol=0.15)
    np.testing.assert_allclose(S, e.score)


def test_kernel_far_probe_raises():
    X = np.random.default_rng(0).standard_normal((500, 2))
    # ~27 kernel widths out: the nearest point alone carries weight
    with pytest.raises(ds.DataError, match="effective data point"):
        kernel_score(X, np.array([[30.0, 0.0]]), 1.0)
    # ~190 kernel widths out: every kernel weight underflows; the shift by the nearest point
    # would otherwise turn the rounding of far-away data into an estimate
    for T in (49.0, 1.0):
        with pytest.raises(ds.DataError, match="kernel widths .* from the nearest data point"):
            kernel_score(X, np.array([[30.0 * np.sqrt(49.0 / T), 0.0]]), T)
    with pytest.raises(ds.DataError, match="probe 0 .* kernel widths"):
        KernelScore(4.0, deconvolve=True).estimate(X + 1e16, np.zeros((1, 2)))


@pytest.mark.parametrize("T", [0.0, -1.0, np.inf, np.nan, "hot"])
def test_bad_temperature(T):
    with pytest.raises(ds.DataError, match="temperature"):
        KernelScore(T)


# --------------------------------------------------------------------------- score matching
def test_monomials():
    E = monomial_exponents(2, 2)
    assert E.tolist() == [[1, 0], [0, 1], [2, 0], [1, 1], [0, 2]]
    assert monomial_exponents(3, 3).shape == (3 + 6 + 10, 3)
    assert monomial_exponents(7, 2).shape == (35, 7)


def test_score_matching_gaussian(gauss):
    S, J = score_matching(gauss, PROBES, radius=1.0)
    np.testing.assert_allclose(S, -PROBES @ PREC, atol=0.08)
    np.testing.assert_allclose(J, np.broadcast_to(-PREC, J.shape), atol=0.15)


def test_score_matching_boundary_weight_removes_truncation_bias(gauss):
    """Data cut off at a ball's edge: the weighted objective is unbiased, the plain one is not."""
    c, r = PROBES[0], 0.7
    Xin = gauss[((gauss - c) ** 2).sum(axis=1) < r * r]
    exact_J = -PREC
    weighted = ScoreMatching(r).estimate(Xin, c[None])
    plain = ScoreMatching(r, weight_power=0).estimate(Xin, c[None])
    err_w = np.abs(weighted.jacobian[0] - exact_J).max()
    err_p = np.abs(plain.jacobian[0] - exact_J).max()
    assert err_w < 0.25, err_w
    assert err_p > 3 * err_w, (err_p, err_w)
    np.testing.assert_allclose(weighted.score[0], -PREC @ c, atol=0.1)


def test_score_matching_cubic_basis_on_non_gaussian(sampler_1d):
    """p ∝ exp(−x⁴/4 − x²/2): the cubic local log-density beats the quadratic one."""
    X = sampler_1d(lambda x: -(x**4) / 4 - x**2 / 2, 400_000, seed=3)
    P = np.array([[0.9]])
    s_true = -(0.9**3) - 0.9
    j_true = -3 * 0.81 - 1
    e2 = ScoreMatching(0.8, degree=2).estimate(X, P)
    e3 = ScoreMatching(0.8, degree=3).estimate(X, P)
    assert abs(e3.score[0, 0] - s_true) < 0.1
    assert abs(e3.jacobian[0, 0, 0] - j_true) < 0.35
    assert abs(e2.score[0, 0] - s_true) > abs(e3.score[0, 0] - s_true)


def test_score_matching_jackknife_replicates_equal_direct_estimates():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3000, 2))
    P = np.array([[0.0, 0.0], [0.3, -0.2]])
    est = ScoreMatching(1.2)
    e = est.estimate(X, P, n_blocks=5)
    edges = np.linspace(0, 3000, 6).round().astype(int)
    for b in range(5):
        keep = np.concatenate([X[: edges[b]], X[edges[b + 1] :]])
        S, J = est(keep, P)
        np.testing.assert_allclose(e.score_blocks[b], S, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(e.jacobian_blocks[b], J, rtol=1e-9, atol=1e-12)


def test_score_matching_empty_ball_raises():
    X = np.random.default_rng(0).standard_normal((1000, 2))
    with pytest.raises(ds.DataError, match="holds 0 data point"):
        score_matching(X, np.array([[20.0, 20.0]]), radius=1.0)


@pytest.mark.parametrize(
    "kw",
    [
        {"radius": 0.0},
        {"radius": -1},
        {"radius": None},
        {"radius": 1.0, "degree": 1},
        {"radius": 1.0, "weight_power": 0.5},
    ],
)
def test_score_matching_bad_arguments(kw):
    with pytest.raises(ds.DataError):
        ScoreMatching(**kw)


# --------------------------------------------------------------------------- interface
def test_callable_estimator_and_jackknife():
    calls = []

    def exact(X, P):
        calls.append(X.shape[0])
        return -P, np.broadcast_to(-np.eye(2), (P.shape[0], 2, 2))

    X = np.zeros((100, 2))
    e = CallableScore(exact).estimate(X, PROBES, n_blocks=4)
    assert calls == [100, 75, 75, 75, 75]
    np.testing.assert_array_equal(e.score_blocks[2], -PROBES)


def test_callable_bad_return():
    with pytest.raises(ds.DataError, match="pair"):
        CallableScore(lambda X, P: 3)(np.zeros((5, 2)), PROBES)
    with pytest.raises(ds.DataError, match="shape"):
        CallableScore(lambda X, P: (np.zeros((3, 3)), np.zeros((3, 2, 2))))(
            np.zeros((5, 2)), PROBES
        )


def test_unknown_estimator_name():
    with pytest.raises(ds.DataError, match="score must be"):
        estimate_scores(np.zeros((5, 2)), PROBES, "parzen")
    with pytest.raises(ds.DataError, match="radius"):
        estimate_scores(np.zeros((5, 2)), PROBES, "score_matching")
