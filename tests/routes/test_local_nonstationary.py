"""Non-stationary snapshots in both routes: an OU process started from a Gaussian, whose law
N(μ_t, Σ_t) and ∂ₜlog p are known exactly, is recovered when ∂ₜlog p is given and measurably
biased (and flagged inconsistent) when it is omitted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_array
from dynosed_sym.reference import stein_system_reference

M_TRUE = np.array([[-1.0, 0.5], [-0.5, -1.0]])
THETA = M_TRUE.reshape(-1)


class TransientOU:
    """Law at time t of dx = Mx dt + √2 dW, x(0) ~ N(μ0, Σ0): N(μ_t, Σ_t), exactly."""

    def __init__(self, t=0.4, mu0=(2.0, -1.0), S0=((0.3, 0.1), (0.1, 0.2))):
        D = np.eye(2)
        S_inf = scipy.linalg.solve_continuous_lyapunov(M_TRUE, -2 * D)
        E = scipy.linalg.expm(M_TRUE * t)
        self.mu = E @ np.asarray(mu0)
        self.S = S_inf + E @ (np.asarray(S0) - S_inf) @ E.T
        self.mu_dot = M_TRUE @ self.mu
        self.S_dot = M_TRUE @ self.S + self.S @ M_TRUE.T + 2 * D
        self.P = np.linalg.inv(self.S)

    def score(self, X):
        return -(X - self.mu) @ self.P

    def jacobian(self, M):
        return np.broadcast_to(-self.P, (M, 2, 2)).copy()

    def dlogp_dt(self, X):
        """∂ₜlog N(x; μ_t, Σ_t) = −½Tr(Σ⁻¹Σ̇) + yᵀΣ⁻¹μ̇ + ½yᵀΣ⁻¹Σ̇Σ⁻¹y, y = x − μ."""
        Y = X - self.mu
        Q = self.P @ self.S_dot @ self.P
        return (
            -0.5 * np.trace(self.P @ self.S_dot)
            + Y @ (self.P @ self.mu_dot)
            + 0.5 * np.einsum("ij,jk,ik->i", Y, Q, Y)
        )

    def sample(self, n, seed):
        return np.random.default_rng(seed).multivariate_normal(self.mu, self.S, n)


@pytest.fixture(scope="module")
def law():
    return TransientOU()


def test_dlogp_dt_formula_matches_finite_difference(law):
    X = law.sample(7, 0)
    h = 1e-5

    def logp(t):
        o = TransientOU(t)
        Y = X - o.mu
        return -0.5 * np.log(np.linalg.det(o.S)) - 0.5 * np.einsum("ij,jk,ik->i", Y, o.P, Y)

    np.testing.assert_allclose(
        (logp(0.4 + h) - logp(0.4 - h)) / (2 * h), law.dlogp_dt(X), rtol=1e-7
    )


def test_local_exact_with_and_without_dlogp(models, law):
    model = models["ou2d"]
    P = law.sample(12, 1)
    score = (law.score(P), law.jacobian(12))
    fit = ds.fit_local(
        model,
        None,
        P,
        scores=ds.Scores(score=score),
        dlogp_dt=law.dlogp_dt(P),
        solver=ds.Solver(lam=1e-12),
    )
    # the transient law pins down all four entries (rank 4), exactly
    assert fit.report.rank == 4
    np.testing.assert_allclose(fit.theta, THETA, atol=1e-8)
    assert fit.report.residual_norm < 1e-9
    # a callable gives the same rows
    fit_c = ds.fit_local(
        model,
        None,
        P,
        scores=ds.Scores(score=score),
        dlogp_dt=law.dlogp_dt,
        solver=ds.Solver(lam=1e-12),
    )
    np.testing.assert_array_equal(fit_c.theta, fit.theta)
    omitted = ds.fit_local(
        model, None, P, scores=ds.Scores(score=score), solver=ds.Solver(lam=1e-12)
    )
    assert np.abs(omitted.theta - THETA).max() > 1.0
    assert omitted.report.residual_norm > 0.1


def test_global_dlogp_rows_match_reference(models, law):
    model = models["ou2d"]
    cm = ds.compile_model(model)
    X = law.sample(300, 2)
    g = law.dlogp_dt(X)
    feats = draw_features(2, 64, 1.3, seed=5)
    A, b, *_ = assemble_array(cm, X, np.array([0, 150, 300]), feats, g)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase, dlogp_dt=g)
    np.testing.assert_allclose(A, A_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, b_ref, rtol=1e-10, atol=1e-12)
    A0, b0, *_ = assemble_array(cm, X, np.array([0, 150, 300]), feats)
    np.testing.assert_array_equal(A0, A)  # ∂ₜlog p only moves b
    assert np.abs(b0 - b).max() > 1e-3


def test_global_recovers_with_dlogp_and_is_biased_without(models, law):
    model = models["ou2d"]
    X = law.sample(100_000, 3)
    fit = ds.fit_global(model, X, dlogp_dt=law.dlogp_dt, features=ds.Features(seed=0))
    assert fit.info["dlogp_dt"] == "given"
    assert fit.report.rank == 4 and fit.report.consistent
    np.testing.assert_allclose(fit.theta, THETA, atol=0.05)
    fit_a = ds.fit_global(model, X, dlogp_dt=law.dlogp_dt(X), features=ds.Features(seed=0))
    np.testing.assert_array_equal(fit_a.theta, fit.theta)
    assert fit.stationarity.verdict == "not checked"  # a transient snapshot: θ̂ itself only
    with pytest.warns(ds.StationarityWarning):  # read as stationary, the snapshot has no law
        omitted = ds.fit_global(model, X, features=ds.Features(seed=0))
    assert np.abs(omitted.theta - THETA).max() > 0.5
    assert not omitted.report.consistent
    # with only M12 free the bias is as plain
    m12 = models["ou2d_m12"]
    assert (
        abs(
            ds.fit_global(m12, X, dlogp_dt=law.dlogp_dt, features=ds.Features(seed=0)).theta[0]
            - 0.5
        )
        < 0.03
    )
    with pytest.warns(ds.StationarityWarning):  # read as stationary, no M12 balances it
        assert abs(ds.fit_global(m12, X, features=ds.Features(seed=0)).theta[0] - 0.5) > 0.5


def test_global_dlogp_bad_input(models, law, tmp_path):
    model = models["ou2d"]
    X = law.sample(500, 4)
    with pytest.raises(ds.DataError, match="one value per sample"):
        ds.fit_global(model, X, dlogp_dt=np.zeros(3))
    with pytest.raises(ds.DataError, match="not finite"):
        ds.fit_global(model, X, dlogp_dt=np.full(500, np.nan))
    path = tmp_path / "x.npy"
    np.save(path, X)
    with pytest.raises(ds.DataError, match="in memory"):
        ds.fit_global(model, str(path), dlogp_dt=law.dlogp_dt)
