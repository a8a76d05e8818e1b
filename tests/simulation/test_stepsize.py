"""The step-size check of ``ds.simulate`` (``simulation/stepsize.py``).

Oracles: the exact stationary covariance of each scheme applied to a linear drift, from a
discrete Lyapunov equation (SciPy) with the scheme's one-step matrix — not from the scalar
formula under test; the exact stationary laws of an OU process and of the CIR process, against
which the simulator's own samples are biased by the predicted factor.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.simulation import simulate_time_course
from dynosed_sym.simulation.functions import model_functions
from dynosed_sym.simulation.stepsize import (
    STEP_BIAS_TARGET,
    STEP_BIAS_WARN,
    check_step_size,
    euler_bias,
    variance_ratio,
)


def _rk4_matrix(W):
    eye = np.eye(W.shape[0])
    return eye + W + W @ W / 2 + W @ W @ W / 6 + W @ W @ W @ W / 24


def _scheme_covariance(M, dt, scheme, sigma2=1.0):
    """Stationary covariance of the scheme for dx = Mx dt + σ dW (records half-way through the
    noise kick for the splitting), by a discrete Lyapunov equation."""
    d = M.shape[0]
    a = sigma2 * dt
    if scheme == "splitting":  # y' = R y + R ξ + ξ', cov ξ = a/2
        R = _rk4_matrix(dt * M)
        Q = a / 2 * (R @ R.T + np.eye(d))
    else:  # x' = (I + dt M) x + √a η
        R = np.eye(d) + dt * M
        Q = a * np.eye(d)
    return scipy.linalg.solve_discrete_lyapunov(R, Q)


@settings(max_examples=60, deadline=None)
@given(
    gamma=st.floats(0.05, 50.0),
    omega=st.floats(0.0, 50.0),
    dt=st.floats(1e-3, 0.05),
    scheme=st.sampled_from(["splitting", "euler"]),
)
def test_ratio_matches_the_schemes_exact_covariance(gamma, omega, dt, scheme):
    """A damped rotation M = [[−γ, −ω], [ω, −γ]] (normal, eigenvalues −γ ± iω): the scheme's
    stationary variance over the SDE's σ²/2γ is the ratio at z = (γ − iω)·dt."""
    M = np.array([[-gamma, -omega], [omega, -gamma]])
    W = dt * M
    R = _rk4_matrix(W) if scheme == "splitting" else np.eye(2) + W
    z = complex(gamma * dt, -omega * dt)
    ratio = float(variance_ratio(z, scheme))
    if np.abs(np.linalg.eigvals(R)).max() >= 1 - 1e-12:
        assert not np.isfinite(ratio) or ratio > 1e3
        return
    cov = _scheme_covariance(M, dt, scheme)
    exact = 1.0 / (2 * gamma)
    np.testing.assert_allclose(ratio, np.trace(cov) / 2 / exact, rtol=1e-7)


def test_ratio_limits():
    """Small steps: 1 + z²/3 (splitting), 1 + z/2 (Euler); unstable beyond RK4's real-axis limit
    (≈ 2.785) and Euler's 2."""
    z = 1e-3
    np.testing.assert_allclose(variance_ratio(z, "splitting") - 1, z * z / 3, rtol=1e-3)
    np.testing.assert_allclose(variance_ratio(z, "euler") - 1, z / 2, rtol=1e-3)
    assert np.isinf(variance_ratio(2.8, "splitting"))
    assert np.isfinite(variance_ratio(2.7, "splitting"))
    assert np.isinf(variance_ratio(2.01, "euler")) and np.isfinite(variance_ratio(1.99, "euler"))
    with pytest.raises(ValueError, match="scheme"):
        variance_ratio(0.1, "heun")


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 4),
    stiff=st.floats(1.0, 200.0),
    dt=st.floats(1e-4, 5e-3),
)
def test_euler_bias_is_exact_for_a_linear_drift(seed, d, stiff, dt):
    """Any stable M (non-normal, rates up to ``stiff``), any constant D: the Lyapunov reading of
    the Euler step's extra spreading, fed the scheme's exact covariance, gives the scheme's exact
    stationary covariance (discrete Lyapunov equation) minus the SDE's (continuous one)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d))
    M = A - (np.linalg.eigvals(A).real.max() + rng.uniform(0.2, 2.0)) * np.eye(d)
    M *= stiff / max(1.0, np.abs(np.linalg.eigvals(M)).max())
    # Euler unstable or nearly so: no stationary law of the scheme
    assume(np.abs(np.linalg.eigvals(np.eye(d) + dt * M)).max() < 0.999)
    L = rng.standard_normal((d, d))
    D = L @ L.T / d + 0.01 * np.eye(d)
    S = scipy.linalg.solve_continuous_lyapunov(M, -2 * D)
    R = np.eye(d) + dt * M
    Sd = scipy.linalg.solve_discrete_lyapunov(R, 2 * D * dt)
    E, Sigma = euler_bias(M, 2 * D, M @ Sd @ M.T, dt)
    np.testing.assert_allclose(Sigma, S, rtol=1e-8, atol=1e-10 * np.abs(S).max())
    np.testing.assert_allclose(E, Sd - S, rtol=1e-6, atol=1e-9 * np.abs(S).max())
    assert euler_bias(-M, 2 * D, M @ Sd @ M.T, dt) is None  # unstable J̄: no Lyapunov reading


@pytest.fixture(scope="module")
def ou_rates():
    x, y = sp.symbols("x y", real=True)
    a, b = sp.symbols("a b", real=True)
    return ds.SDEModel(
        state=[x, y], params=[a, b], drift=[-a * x, -b * y], diffusion=1, name="ou_rates_step"
    )


@pytest.fixture(scope="module")
def cir():
    """dx = a(μ − x) dt + √(2 s x) dW: Gamma law, mean μ, variance sμ/a (Euler–Maruyama path)."""
    x = sp.Symbol("x", positive=True)
    a = sp.Symbol("a", positive=True)
    return ds.SDEModel(
        state=[x], params=[a], drift=[a * (10 - x)], diffusion=x / 2, name="cir_step"
    )


def _simulate(model, theta, dt, seed=3, others=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X = ds.simulate(model, theta, 20000, dt=dt, seed=seed, burn_in=3000)
    if others is not None:
        others.extend(w for w in caught if w.category is not ds.StepSizeWarning)
    return X, [w for w in caught if w.category is ds.StepSizeWarning]


def test_stiff_ou_warns_with_the_bias_its_samples_show(ou_rates):
    """Rate 100 at dt = 0.01 (z = 1): the simulated variance is 1.33× the exact 1/λ, as the
    check states, and the suggested step gives a law within the check's 1 %."""
    others = []
    X, caught = _simulate(ou_rates, [1.0, 100.0], 0.01, others=others)
    predicted = float(variance_ratio(1.0, "splitting"))
    se = np.sqrt(2 / X.shape[0]) * predicted  # of a Gaussian variance estimate, relative
    assert abs(X[:, 1].var() * 100.0 - predicted) < 4 * se
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "dt=0.01" in text and f"≈ {predicted - 1:.0%}" in text
    assert "fastest relaxation rate ≈ 100 per time unit" in text
    assert caught[0].filename == __file__  # names the caller's line
    # the moments' imbalance this causes is not blamed on the burn-in
    for w in others:
        if w.category is ds.StationarityWarning:
            assert "alone puts the scheme's stationary law ≈ 33% off" in str(w.message)
            assert "increase burn_in" not in str(w.message)
    check = check_step_size(model_functions(ou_rates), np.array([1.0, 100.0]), X, 0.01, "splitting")
    assert check.suggested_dt < 0.01
    assert variance_ratio(100.0 * check.suggested_dt, "splitting") - 1 <= STEP_BIAS_TARGET
    X2, caught2 = _simulate(ou_rates, [1.0, 100.0], check.suggested_dt)
    assert caught2 == []
    assert abs(X2[:, 1].var() * 100.0 - 1.0) < 4 * np.sqrt(2 / X2.shape[0]) + STEP_BIAS_TARGET


def test_moderate_rates_do_not_warn(ou_rates):
    """Rate 30 at dt = 0.01: the splitting's bias is 3 %, below the 5 % at which it warns."""
    assert variance_ratio(0.3, "splitting") - 1 < STEP_BIAS_WARN
    _, caught = _simulate(ou_rates, [1.0, 30.0], 0.01)
    assert caught == []


def test_cir_euler_steps(cir):
    """State-dependent noise (Euler–Maruyama): rate 20 at dt = 0.01 inflates the Gamma law's
    variance sμ/a = 0.25 by 2/(2 − 0.2) = 1.11, which the check states; at dt = 0.001 no
    warning."""
    X, caught = _simulate(cir, [20.0], 0.01)
    exact = 10 * 0.5 / 20.0  # s μ / a with D = x/2 = s x, s = 1/2
    predicted = float(variance_ratio(0.2, "euler"))
    assert abs(X[:, 0].var() / exact - predicted) < 5 * np.sqrt(2 / X.shape[0]) * predicted
    assert len(caught) == 1 and "Euler–Maruyama" in str(caught[0].message)
    assert f"≈ {predicted - 1:.0%}" in str(caught[0].message)
    _, caught = _simulate(cir, [20.0], 0.001)
    assert caught == []


def test_a_noisy_cycle_with_state_dependent_noise_does_not_warn():
    """The sweep's predator–prey family (Lotka–Volterra with a logistic prey, noise ∝ the
    populations: Euler steps) at its dt = 0.01: its mean Jacobian is not stable (a cycle), so the
    sources are compared directly, below the warning threshold (read row by row from the local
    eigenvalues, as for constant noise, it looked 11 % off: nearly imaginary eigenvalues)."""
    from dynosed_sym.apps.bench.calibration_families import family

    model, truth, protocol = family("predprey")
    assert model_functions(model).noise(np.ones((1, model.d))) is not None  # the Euler path
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.StepSizeWarning)
        warnings.simplefilter("ignore", ds.StationarityWarning)
        X = ds.simulate(
            model, truth, 4000, dt=protocol.dt, burn_in=protocol.burn_in, x0=protocol.x0, seed=0
        )
    check = check_step_size(model_functions(model), truth, X, protocol.dt, "euler")
    assert 0 < check.bias < STEP_BIAS_WARN


def test_bundled_models_at_their_defaults_do_not_warn(models):
    """Lorenz (fastest contraction ≈ 23 per time unit) and the GRN at dt = 0.01."""
    for name in ["lorenz", "grn_bcell"]:
        m = models[name]
        with warnings.catch_warnings():
            warnings.simplefilter("error", ds.StepSizeWarning)
            ds.simulate(m, m.nominal, 2000, seed=0)


def test_unstable_rows_dominate(ou_rates):
    """Rows where the step is locally unstable count as a 1000 % bias, and the check says how many
    rows are unstable."""
    fn = model_functions(ou_rates)
    X = np.random.default_rng(0).standard_normal((50, 2))
    check = check_step_size(fn, np.array([1.0, 300.0]), X, 0.01, "splitting")
    assert check.unstable == 1.0 and check.bias == 10.0 and check.too_large
    assert variance_ratio(300.0 * check.suggested_dt, "splitting") - 1 <= STEP_BIAS_TARGET


def test_time_course_snapshots_recorded_at_the_steps_end(ou_rates):
    """``simulate_time_course`` records the state at the end of a step, whose law is first-order
    in dt: a rate of 50 at dt = 0.01 (z = 0.5) inflates the settled fast coordinate's variance by
    2z/(1 − R₄(−z)²) = 1.58, which the snapshots show and one warning states (for the worst
    snapshot, naming the caller's line); at dt = 0.0005 no warning and the exact variance."""
    times = [0.5, 1.0, 2.0]
    initial = (np.zeros(2), 0.01 * np.eye(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tc = simulate_time_course(ou_rates, [1.0, 50.0], times, 20000, initial=initial, seed=2)
    steps = [w for w in caught if w.category is ds.StepSizeWarning]
    predicted = float(variance_ratio(0.5, "end"))
    np.testing.assert_allclose(
        predicted, 1 / (1 - (1 - 0.5 + 0.125 - 0.5**3 / 6 + 0.5**4 / 24) ** 2)
    )
    for X in tc.snapshots:  # the SDE's variance along y has settled at 1/50 by t = 0.5
        assert abs(X[:, 1].var() * 50.0 - predicted) < 4 * np.sqrt(2 / X.shape[0]) * predicted
    assert len(steps) == 1 and steps[0].filename == __file__
    text = str(steps[0].message)
    assert text.startswith("simulate_time_course: the snapshot at t = ")
    assert f"≈ {predicted - 1:.0%} in its spread" in text and "recorded at the step's end" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.StepSizeWarning)
        fine = simulate_time_course(
            ou_rates, [1.0, 50.0], times, 20000, initial=initial, seed=2, dt=0.0005
        )
    for X in fine.snapshots:
        assert abs(X[:, 1].var() * 50.0 - 1.0) < 4 * np.sqrt(2 / X.shape[0]) + STEP_BIAS_TARGET
