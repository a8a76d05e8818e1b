"""The compiled simulator (``ds.simulate`` / generated ``simulate_chains``).

Checked here: reproducibility (same seed => bitwise identical output on 1 and 2
Numba threads; a chain's output does not depend on how many other chains run
beside it), one counter-based stream per chain, burn-in and thinning counted in
steps, divergence reported as a DataError, the RK4 step and the noise increment
against NumPy, the in-kernel normals (moments, tails, independence), the records
at the midpoint of their step's noise increment (against the raw kernel), and the
stationary law of a 2-D Ornstein-Uhlenbeck process (second order in dt) and of a
model with state-dependent noise (Euler-Maruyama path).  No timings: the benchmark
(``python -m dynosed_sym.apps.bench --only simulator``) measures speed.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.errors import DataError
from dynosed_sym.kernels.lanes import LANES, normals_lanes, stream_position
from dynosed_sym.reference import lambdified
from dynosed_sym.simulation.simulate import chain_keys, initial_states


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


@pytest.fixture(scope="module")
def ou(models, compiled):
    return models["ou2d"], compiled["ou2d"]


@pytest.fixture(scope="module")
def lorenz(models, compiled):
    return models["lorenz"], compiled["lorenz"]


@pytest.fixture(scope="module")
def mult1d(tmp_path_factory):
    """1-D model with state-dependent noise (Euler-Maruyama path of the simulator).

    dx = -x dt + sqrt(2 D(x)) dW with D(x) = (1 + x^2)/2 (Ito).  Zero flux gives
    p ∝ exp(∫ f/D)/D ∝ (1 + x^2)^-2, i.e. sqrt(3) x ~ Student t with 3 degrees of freedom.
    """
    x = sp.Symbol("x", real=True)
    th = sp.Symbol("theta", real=True)
    model = ds.SDEModel(
        state=[x],
        params=[th],
        drift=[-th * x],
        diffusion=(1 + x**2) / 2,
        name="mult1d",
        nominal={th: 1.0},
    )
    out_dir = str(tmp_path_factory.mktemp("generated_sim"))
    return model, ds.compile_model(model, out_dir), out_dir


def _run_kernel(cm, model, theta, x0, G, dt, n_burn, thin, n_keep, keys):
    C = x0.shape[0]
    out = np.full((n_keep, C, model.d), np.nan)
    status = np.full(C, -1, dtype=np.int64)
    cm.module.simulate_chains(
        np.ascontiguousarray(x0, dtype=float),
        np.asarray(theta, dtype=float),
        np.ascontiguousarray(G, dtype=float),
        float(dt),
        int(n_burn),
        int(thin),
        int(n_keep),
        keys,
        out,
        status,
    )
    return out, status


def _normals(keys, n_calls, nq):
    """Normals of the streams ``keys`` (LANES,) from the simulator: (n_calls * nq, LANES)."""
    lanes = LANES
    eta = np.empty((nq + 1, lanes))
    rows = []
    counter = np.uint64(0)
    for _ in range(n_calls):
        counter = normals_lanes(keys, counter, eta, nq, lanes)
        rows.append(eta[:nq].copy())
    return np.concatenate(rows)


# --------------------------------------------------------------------------- reproducibility
# short chains on purpose (the bitwise identity is under test, not stationarity): the
# StationarityWarning they give ("increase burn_in") is expected
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@pytest.mark.parametrize("name", ["lorenz", "grn_bcell"])
def test_bitwise_identical_across_thread_counts(name, models, compiled, restore_threads):
    if min(2, numba.config.NUMBA_NUM_THREADS) < 2:
        pytest.skip("needs 2 Numba threads")
    m = models[name]
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        runs.append(
            ds.simulate(m, m.nominal, 300, dt=0.01, burn_in=200, thin=5, n_chains=150, seed=4)
        )
    assert np.array_equal(runs[0], runs[1]), "simulate depends on the number of Numba threads"
    assert np.isfinite(runs[0]).all()


def test_same_seed_same_output_different_seed_differs(lorenz):
    m, _ = lorenz
    a = ds.simulate(m, m.nominal, 64, burn_in=50, thin=2, seed=7)
    b = ds.simulate(m, m.nominal, 64, burn_in=50, thin=2, seed=7)
    c = ds.simulate(m, m.nominal, 64, burn_in=50, thin=2, seed=8)
    assert np.array_equal(a, b)
    assert not np.any(a == c)


# short chains on purpose (the bitwise identity is under test, not stationarity): the
# StationarityWarning they give ("increase burn_in") is expected
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_chain_output_independent_of_block_layout(lorenz):
    """Chain c's records depend only on its key and start: not on the number of chains (which
    sets the lanes per block), on its lane, or on its block."""
    m, _ = lorenz
    k = 6
    small = ds.simulate(m, m.nominal, 5 * k, burn_in=100, thin=3, n_chains=5, seed=11)
    for C in (77, 300):
        big = ds.simulate(m, m.nominal, C * k, burn_in=100, thin=3, n_chains=C, seed=11)
        assert np.array_equal(big[: 5 * k], small), f"chain records change with n_chains={C}"


def test_rows_ordered_by_chain_then_time(ou):
    m, _ = ou
    n_chains, per_chain = 8, 5
    X = ds.simulate(
        m, m.nominal, n_chains * per_chain, burn_in=10, thin=1, n_chains=n_chains, seed=2
    )
    # a chain's consecutive records are one step apart (small increments); records of different
    # chains are independent (order-one differences)
    within = np.abs(np.diff(X.reshape(n_chains, per_chain, 2), axis=1)).mean()
    across = np.abs(np.diff(X.reshape(n_chains, per_chain, 2), axis=0)).mean()
    assert within < 0.3 < across


def test_n_samples_not_a_multiple_of_chains(ou):
    m, _ = ou
    X = ds.simulate(m, m.nominal, 10, burn_in=5, thin=1, n_chains=3, seed=0)
    assert X.shape == (10, 2) and np.isfinite(X).all()
    # default n_chains = min(n_samples, 2048): one record per chain
    assert ds.simulate(m, m.nominal, 3, burn_in=5, seed=0).shape == (3, 2)


# --------------------------------------------------------------------------- steps and streams
def test_burn_in_and_thin_count_steps(lorenz):
    """The record k (1-based) of a chain is its state after burn_in + k*thin steps."""
    m, _ = lorenz
    burn, thin, keep, C = 37, 4, 6, 9
    every = ds.simulate(
        m, m.nominal, C * (burn + thin * keep), burn_in=0, thin=1, n_chains=C, seed=5
    )
    every = every.reshape(C, burn + thin * keep, 3)
    thinned = ds.simulate(m, m.nominal, C * keep, burn_in=burn, thin=thin, n_chains=C, seed=5)
    steps = burn + thin * np.arange(1, keep + 1)
    assert np.array_equal(thinned.reshape(C, keep, 3), every[:, steps - 1, :])


def test_one_step_is_rk4_plus_noise_from_the_chains_own_stream(lorenz):
    """x1 = RK4(x0) + sqrt(dt) G eta, with eta the first normals of stream keys[c]."""
    m, cm = lorenz
    C, dt = 20, 0.01
    keys = chain_keys(3, C)
    x0 = initial_states(m, C, 3)
    out, status = _run_kernel(cm, m, m.nominal, x0, cm.noise_matrix, dt, 0, 1, 1, keys)
    assert not status.any()
    f = lambda X: lambdified(m).f(X, m.nominal)  # noqa: E731  NumPy oracle of the drift
    k1 = f(x0)
    k2 = f(x0 + 0.5 * dt * k1)
    k3 = f(x0 + 0.5 * dt * k2)
    k4 = f(x0 + dt * k3)
    lanes = LANES
    eta = np.empty((C, 3))
    for c in range(C):  # each chain's stream, computed alone in lane 0
        buf = np.empty((4, lanes))
        normals_lanes(np.full(lanes, keys[c], dtype=np.uint64), np.uint64(0), buf, 3, lanes)
        eta[c] = buf[:3, 0]
    expected = x0 + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4) + np.sqrt(dt) * eta @ cm.noise_matrix.T
    np.testing.assert_allclose(out[0], expected, rtol=1e-13, atol=1e-13)


def test_deterministic_rk4_matches_numpy(ou):
    """With G = 0 the kernel is plain RK4: 200 steps agree with a NumPy RK4 to rounding."""
    m, cm = ou
    theta = m.nominal
    M = np.asarray(theta).reshape(2, 2)
    x0 = np.random.default_rng(1).standard_normal((13, 2))
    out, status = _run_kernel(
        cm, m, theta, x0, np.zeros((2, 2)), 0.05, 0, 200, 1, chain_keys(0, 13)
    )
    assert not status.any()
    h = 0.05 * M
    R = np.eye(2) + h + h @ h / 2 + h @ h @ h / 6 + h @ h @ h @ h / 24  # RK4 on a linear drift
    np.testing.assert_allclose(
        out[0], x0 @ np.linalg.matrix_power(R, 200).T, rtol=1e-12, atol=1e-14
    )


# --------------------------------------------------------------------------- divergence
def test_divergence_raises_data_error_not_nan(ou):
    m, cm = ou
    unstable = {
        "M11": 5.0,
        "M12": 0.0,
        "M21": 0.0,
        "M22": 5.0,
    }  # grows like exp(5 t): overflows by t ~ 142
    with pytest.raises(DataError, match="diverged"):
        ds.simulate(m, unstable, 40, dt=0.01, burn_in=20000, thin=10, seed=0)
    # the kernel reports the first non-finite step of each diverging chain
    x0 = np.ones((3, 2))
    out, status = _run_kernel(
        cm, m, [5.0, 0.0, 0.0, 5.0], x0, np.zeros((2, 2)), 0.01, 20000, 1, 1, chain_keys(0, 3)
    )
    assert (status > 10000).all() and (status < 20000).all()
    assert np.unique(status).size == 1  # identical deterministic chains diverge at the same step


def test_bad_arguments(ou):
    m, _ = ou
    for kwargs in ({"dt": 0.0}, {"dt": np.nan}, {"burn_in": -1}, {"thin": 0}, {"n_chains": 0}):
        with pytest.raises(DataError):
            ds.simulate(m, m.nominal, 10, **kwargs)
    with pytest.raises(DataError):
        ds.simulate(m, m.nominal, 0)
    with pytest.raises(DataError, match="x0"):
        ds.simulate(m, m.nominal, 10, n_chains=5, x0=np.zeros(3))
    X = ds.simulate(m, m.nominal, 10, n_chains=5, x0=np.zeros(2), burn_in=0, thin=1)
    assert X.shape == (10, 2)
    X = ds.simulate(m, m.nominal, 10, n_chains=5, x0=np.zeros((5, 2)), burn_in=0, thin=1)
    assert X.shape == (10, 2)


def test_flat_execution_keywords_still_work_with_a_future_warning(ou):
    """progress=, out_dir=, backend=, client=, n_groups= of earlier versions build
    execution=Execution(...): the same samples and a FutureWarning naming the new spelling; both
    spellings at once, an unknown keyword, a bad field and a dict are refused."""
    m, _ = ou
    kw = dict(burn_in=20, thin=2, n_chains=8, seed=3)  # < 16 chains: no stationarity verdict
    new = ds.simulate(m, m.nominal, 40, execution=ds.Execution(progress=False), **kw)
    spelled = r"simulate: the keywords progress .* pass execution=Execution\(progress=False\)"
    with pytest.warns(FutureWarning, match=spelled):
        old = ds.simulate(m, m.nominal, 40, progress=False, **kw)
    np.testing.assert_array_equal(old, new)
    both = "simulate: progress given both as keywords and through execution="
    with pytest.raises(DataError, match=both):
        ds.simulate(m, m.nominal, 40, progress=False, execution=ds.Execution(), **kw)
    with pytest.raises(
        TypeError, match=r"simulate\(\) got an unexpected keyword argument 'n_block'"
    ):
        ds.simulate(m, m.nominal, 40, n_block=4, **kw)
    with pytest.raises(DataError, match=r"^Execution\.n_groups must be at least 1, got 0$"):
        ds.Execution(n_groups=0)
    with pytest.raises(DataError, match=r"execution must be a .*Execution or None"):
        ds.simulate(m, m.nominal, 40, execution={"progress": False}, **kw)


# --------------------------------------------------------------------------- the normals
def test_normals_statistics():
    """Moments, tails, a KS test, lag-1 and cross-chain correlations of the in-kernel normals."""
    lanes = LANES
    keys = chain_keys(123, lanes)
    Z = _normals(keys, 4000, 8)  # (32000, 64): 32000 draws of each of 64 streams
    z = Z.ravel()
    n = z.size  # 2.05e6
    # 5-sigma bounds from the standard errors of the sample moments of a standard normal
    assert abs(z.mean()) < 5 / np.sqrt(n)
    assert abs(z.var() - 1) < 5 * np.sqrt(2 / n)
    assert abs(scipy.stats.skew(z)) < 5 * np.sqrt(6 / n)
    assert abs(scipy.stats.kurtosis(z)) < 5 * np.sqrt(24 / n)  # excess kurtosis
    p3 = 2 * scipy.stats.norm.sf(3)
    assert abs(np.mean(np.abs(z) > 3) - p3) < 5 * np.sqrt(p3 / n)
    assert np.abs(z).max() < 8.5  # the Box-Muller radius is at most sqrt(2*52*log 2) = 8.49
    assert scipy.stats.kstest(z[:200_000], "norm").pvalue > 1e-4
    # independence across chains: 2016 correlations, each with sd 1/sqrt(32000)
    R = np.corrcoef(Z.T)
    off = R[~np.eye(lanes, dtype=bool)]
    assert np.abs(off).max() < 6 / np.sqrt(Z.shape[0])
    # within a stream: consecutive draws, and the two halves of a Box-Muller pair
    lag1 = np.mean([np.corrcoef(Z[:-1, l], Z[1:, l])[0, 1] for l in range(lanes)])
    assert abs(lag1) < 5 / np.sqrt(Z.size)
    pair = np.corrcoef(Z[0::2].ravel() ** 2, Z[1::2].ravel() ** 2)[
        0, 1
    ]  # dependent radius would show here
    assert abs(pair) < 5 / np.sqrt(Z.size / 2)


def test_normals_do_not_depend_on_lane_or_width():
    """A stream's normals are the same whatever lane it occupies and however many lanes run."""
    lanes = LANES
    keys = chain_keys(9, lanes)
    full = np.empty((4, lanes))
    normals_lanes(keys, np.uint64(40), full, 3, lanes)
    rev = np.empty((4, lanes))
    normals_lanes(keys[::-1].copy(), np.uint64(40), rev, 3, lanes)
    np.testing.assert_array_equal(rev[:3, ::-1], full[:3])
    part = np.empty((4, lanes))
    normals_lanes(keys, np.uint64(40), part, 3, 13)
    np.testing.assert_array_equal(part[:3, :13], full[:3, :13])


@pytest.mark.parametrize("nq", [1, 2, 3])
def test_stream_position_is_the_counter_after_earlier_steps(nq):
    """Step s of a chain draws from stream position stream_position(s, d'): where s - 1 earlier
    calls of normals_lanes (one per step) left the counter."""
    counter = np.uint64(0)
    eta = np.empty((nq + 1, LANES))
    keys = chain_keys(5, LANES)
    for step in range(1, 6):
        assert stream_position.py_func(step, nq) == counter
        counter = normals_lanes(keys, counter, eta, nq, LANES)


# --------------------------------------------------------------------------- stationary laws
def test_ou_stationary_covariance_matches_lyapunov(ou):
    """65,536 independent chains of the 2-D OU process at its nominal M (D = I), dt = 0.05.

    Exact law: N(0, Σ) with M Σ + Σ Mᵀ + 2D = 0.  The chain x' = R x + sqrt(dt) G η (R the RK4
    propagator, e^{M dt} up to O(dt^5)) has the stationary covariance Σ_h = R Σ_h Rᵀ + 2 D dt,
    Σ_h − Σ = O(dt) (≈ dt·Σ).  The records are the chain's states half-way through the step's
    noise increment (``half_kick_records``): x minus an independent half increment of covariance
    D dt, so their covariance is exactly Σ_h − D dt, which is Σ + O(dt²) (≈ dt²/3 here).  One
    record per chain after 15 time units (start 3.6 away from the mean, decaying like e^{-t})
    gives N independent draws; the sampling sd of S_ij is sqrt((Σ_ii Σ_jj + Σ_ij²)/N) ≈ 0.0055.
    At dt = 0.05 the end-of-step law Σ_h is 9 sd away: the test tells the two apart.
    """
    m, _ = ou
    M = np.asarray(m.nominal).reshape(2, 2)
    D = np.eye(2)
    dt, N = 0.05, 65536
    X = ds.simulate(
        m, m.nominal, N, dt=dt, burn_in=300, thin=1, n_chains=N, seed=21, x0=[3.0, -2.0]
    )
    S = np.cov(X.T)
    Sigma = scipy.linalg.solve_continuous_lyapunov(M, -2 * D)
    h = dt * M
    R = np.eye(2) + h + h @ h / 2 + h @ h @ h / 6 + h @ h @ h @ h / 24
    Sigma_h = scipy.linalg.solve_discrete_lyapunov(R, 2 * D * dt)
    Sigma_mid = Sigma_h - D * dt
    sd = np.sqrt((np.outer(np.diag(Sigma), np.diag(Sigma)) + Sigma**2) / N)
    assert np.all(np.abs(S - Sigma_mid) < 5 * sd), (S, Sigma_mid)
    assert np.abs(Sigma_mid - Sigma).max() < 0.5 * dt**2 * np.abs(Sigma).max()  # O(dt²)
    assert np.abs(Sigma_h - Sigma_mid).max() > 8 * sd.max()  # the end-of-step law is rejected
    assert np.all(np.abs(X.mean(axis=0)) < 5 * np.sqrt(np.diag(Sigma) / N))


def test_records_are_the_midpoint_of_the_steps_noise_increment(tmp_path):
    """A record of ``simulate`` against the chain's own end-of-step states (the raw kernel).

    With x' the state before the recorded step and x its end (the kernel's output),
    x − RK4(x') = sqrt(dt) G η (NumPy RK4 of the drift as the oracle).  The record y must be
    RK4(x') + sqrt(dt/2) G ξ with ξ = (η + ζ)/√2 for standard normals ζ independent of η:
    solving y = x − sqrt(dt)/2 G (η − ζ) for ζ, its coordinates must be N(0, 1), uncorrelated
    with η and with each other — and η must be the chain's own normals of that step.
    """
    from dynosed_sym.simulation.simulate import plan_simulation

    x, y, a = sp.symbols("x y a", real=True)
    model = ds.SDEModel(
        [x, y],
        [a],
        [-x - x**3 + a * y, -y + 0.5 * x],
        diffusion=sp.Matrix([[1.0, 0.4], [0.4, 0.5]]),
        name="midpoint2d",
    )
    theta, dt, C, burn = [0.8], 0.05, 4096, 40
    ex = ds.Execution(progress=False, out_dir=str(tmp_path))
    args = dict(dt=dt, burn_in=burn, thin=1, n_chains=C, seed=9, execution=ex)
    Y = ds.simulate(model, theta, 2 * C, **args).reshape(C, 2, 2)[:, 1]
    plan = plan_simulation(model, theta, 2 * C, dt, burn, 1, C, 9, None, str(tmp_path))
    raw, status = plan.run()
    assert not status.any()
    before, end = raw[0], raw[1]  # states after burn + 1 and burn + 2 steps
    f = lambda X: lambdified(model).f(X, theta)  # noqa: E731  NumPy oracle of the drift
    k1 = f(before)
    k2 = f(before + 0.5 * dt * k1)
    k3 = f(before + 0.5 * dt * k2)
    flow = before + dt / 6 * (k1 + 2 * k2 + 2 * k3 + f(before + dt * k3))
    G = plan.G
    Ginv = np.linalg.inv(G)
    eta = (end - flow) @ Ginv.T / np.sqrt(dt)
    zeta = eta - 2.0 * (end - Y) @ Ginv.T / np.sqrt(dt)
    own = np.empty((C, 2))  # the normals of step burn + 2 of every chain's stream
    for c in range(C):
        buf = np.empty((3, LANES))
        keys = np.full(LANES, plan.keys[c], dtype=np.uint64)
        normals_lanes(keys, stream_position(burn + 2, 2), buf, 2, LANES)
        own[c] = buf[:2, 0]
    np.testing.assert_allclose(eta, own, atol=1e-8)
    tol = 5.0 / np.sqrt(C)
    assert np.all(np.abs(zeta.mean(axis=0)) < tol)
    assert np.all(np.abs(zeta.std(axis=0) - 1.0) < tol)
    corr = np.corrcoef(np.hstack([eta, zeta]).T)
    assert np.abs(corr[:2, 2:]).max() < tol and abs(corr[2, 3]) < tol, corr
    assert min(scipy.stats.kstest(zeta[:, j], "norm").pvalue for j in range(2)) > 1e-3


def test_state_dependent_noise_stationary_law(mult1d):
    """Euler-Maruyama path: sqrt(3) x is Student-t(3) at stationarity (see the fixture).

    20,000 independent chains, one record each after 10 time units.  KS distance bound:
    the 1e-4 critical value 1.95/sqrt(N) = 0.0138 plus 0.01 for the O(dt) bias of
    Euler-Maruyama at dt = 0.01 (its stationary law differs from the exact one by O(dt)).
    """
    m, _, out_dir = mult1d
    N = 20000
    X = ds.simulate(
        m,
        [1.0],
        N,
        dt=0.01,
        burn_in=1000,
        thin=1,
        n_chains=N,
        seed=3,
        x0=[0.0],
        execution=ds.Execution(out_dir=out_dir),
    )
    ks = scipy.stats.kstest(X[:, 0], scipy.stats.t(df=3, scale=1 / np.sqrt(3)).cdf).statistic
    assert ks < 1.95 / np.sqrt(N) + 0.01


def test_state_dependent_noise_reproducible_across_threads(mult1d, restore_threads):
    if min(2, numba.config.NUMBA_NUM_THREADS) < 2:
        pytest.skip("needs 2 Numba threads")
    m, _, out_dir = mult1d
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        runs.append(
            ds.simulate(
                m,
                [1.0],
                500,
                burn_in=100,
                thin=3,
                n_chains=100,
                seed=1,
                execution=ds.Execution(out_dir=out_dir),
            )
        )
    assert np.array_equal(runs[0], runs[1])


@pytest.mark.parametrize("drift, theta", [("-x/a", 0.0), ("-log(a)*x", -1.0)])
def test_parameters_that_leave_the_drift_undefined_are_named(drift, theta):
    """At a = 0 (x/a) or a = −1 (log a) the drift is undefined at every state: the start search
    fails at every chain, and the error names θ, not only x0 (it blamed the start alone); the
    search's own NaN arithmetic raises no RuntimeWarning (its chains are dropped, not used)."""
    x, a = sp.symbols("x a", real=True)
    m = ds.SDEModel([x], [a], [sp.sympify(drift, locals={"x": x, "a": a})], diffusion=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DataError, match=r"fails at all 20 start states, so the parameters θ"):
            ds.simulate(m, [theta], 20)
