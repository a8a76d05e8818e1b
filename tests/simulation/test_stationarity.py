"""Stationarity checks of samples (``ds.check_stationarity``) and of the simulator's output, start
states inside the model's domain, and the :class:`~dynosed_sym.simulation.Simulation` settings.

Oracles: the exact stationary law of linear drifts (Lyapunov equation; a linear drift has one
iff its matrix is Hurwitz), exact Itô moment rates of Gaussian samples that are *not* the
stationary law (d/dt Var = 2MΣ' + 2D and d/dt E[x] = M x̄ in closed form), and the Gamma law
of a CIR process.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats
import sympy as sp
from conftest import ou_stationary_cov, ou_stationary_samples, sign_model_and_exact_draws
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.simulation import INDEPENDENT, Simulation
from dynosed_sym.simulation.starts import outside_domain
from dynosed_sym.simulation.stationarity import check_linear_drift

x, y = sp.symbols("x y", real=True)
a, b = sp.symbols("a b", real=True)


def _theta(M):
    return dict(zip(("M11", "M12", "M21", "M22"), np.asarray(M, float).reshape(-1)))


@pytest.fixture(scope="module")
def ou(models):
    return models["ou2d"]


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("stationarity_generated"))


# --------------------------------------------------------------------------- the simulator
@pytest.mark.parametrize(
    "M, what",
    [
        ([[0.5, 0.0], [0.0, 0.5]], "expands"),  # the case: states of order 1e11
        ([[0.5, 0.0], [0.0, -2.0]], "+0.5"),  # volume contracts (trace −1.5), x diverges
        ([[-0.75, 1.25], [1.25, -0.75]], "+0.5"),  # the same, rotated 45°: no axis is unstable
        ([[0.0, 0.0], [0.0, -1.0]], "+0"),  # x is a Brownian motion: no confinement
    ],
)
def test_diverging_simulation_raises(ou, M, what):
    """No stationary law (a matrix that is not Hurwitz): StationarityError, never samples."""
    assert np.linalg.eigvals(np.array(M)).real.max() >= 0  # the oracle: not Hurwitz
    with pytest.raises(ds.StationarityError, match="diverging") as info:
        ds.simulate(ou, _theta(M), 2000, seed=0)
    assert what in str(info.value) and "choose parameters" in str(info.value)
    assert isinstance(info.value, ds.DataError)


def test_overflow_is_a_stationarity_error(ou):
    with pytest.raises(ds.StationarityError, match="diverged.*x0="):
        ds.simulate(ou, _theta([[5.0, 0], [0, 5.0]]), 40, burn_in=20000, seed=0)


def test_stable_simulation_is_silent_and_stationary(ou):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X = ds.simulate(ou, ou.nominal, 4000, n_chains=4000, seed=3)
    check = ds.check_stationarity(ou, ou.nominal, X)
    assert check.verdict == "stationary" and not check.reasons
    assert np.all(np.abs(check.imbalance) < 0.1)
    # the divergence tr M = −2 meets the Cramér–Rao bound −tr(DΣ⁻¹) = −2 (Gaussian: equality)
    assert check.divergence == pytest.approx(-2.0)
    assert check.divergence_bound == pytest.approx(-2.0, rel=0.1)


def test_unsettled_chains_warn(models):
    """Lorenz after 0.5 time units from N(0, I): not yet stationary — a warning, not an error."""
    lorenz = models["lorenz"]
    with pytest.warns(ds.StationarityWarning, match="burn_in"):
        ds.simulate(lorenz, lorenz.nominal, 2048, n_chains=2048, burn_in=50, thin=1, seed=1)


def test_chains_whose_mean_has_not_settled_warn(ou):
    """Chains started from the stationary covariance but a shifted mean (x0 per chain), after 0.2
    time units: their spread balances, their mean still moves — only the first moments show it."""
    M = ou.nominal.reshape(2, 2)
    x0 = ou_stationary_samples(M, 1.0, 4000, seed=4) + np.array([1.5, 0.0])
    with pytest.warns(ds.StationarityWarning, match="the mean of x still moves"):
        X = ds.simulate(ou, ou.nominal, 4000, n_chains=4000, burn_in=20, thin=1, x0=x0, seed=2)
    check = ds.check_stationarity(ou, ou.nominal, X)
    assert not any("variance" in r for r in check.reasons), check.reasons


def test_time_course_is_not_checked(ou):
    """A transient snapshot is not meant to be stationary: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tc = ds.simulation.simulate_time_course(
            ou, ou.nominal, [0.1, 0.3], 500, initial=(np.array([4.0, -3.0]), 0.01)
        )
    assert tc.snapshots[0].shape == (500, 2)


# --------------------------------------------------------------------------- samples
def test_exact_moment_rates_of_a_wrong_gaussian(ou):
    """Gaussian samples with covariance cΣ (Σ the stationary one, so 2(MΣ)_xx + 2D = 0): Itô
    gives d/dt Var(x) = 2(M·cΣ)_xx + 2D = 2 − 2c exactly.  Too wide (c = 2): the variance would
    shrink — borderline; too narrow (c = ½): it would grow and the drift contracts less than
    Cramér–Rao allows for that spread — not stationary."""
    M = ou.nominal.reshape(2, 2)
    X0 = ou_stationary_samples(M, 1.0, 20_000, seed=5)  # ≤ MAX_ROWS: every row is used
    for c in (0.5, 2.0):
        X = X0 * np.sqrt(c)
        check = ds.check_stationarity(ou, ou.nominal, X, np.arange(X.shape[0]) % 64)
        Sc = np.cov(X, rowvar=False, bias=True)
        assert check.variance_rate[0] == pytest.approx(2 * (M @ Sc)[0, 0] + 2.0, abs=1e-9)
        assert check.variance_rate[0] == pytest.approx(2.0 - 2.0 * c, abs=0.05)
        assert check.divergence_bound == pytest.approx(-2.0 / c, rel=0.02)
        assert check.verdict == ("not stationary" if c < 1 else "borderline"), str(check)


@pytest.mark.parametrize(
    "shift, verdict", [(0.0, "stationary"), (0.3, "borderline"), (1.5, "not stationary")]
)
def test_exact_mean_rates_of_a_shifted_gaussian(ou, shift, verdict):
    """The stationary Gaussian shifted by ``shift`` standard deviations along x: Itô gives
    d/dt E[x] = E[f] = M x̄ exactly (a linear drift), 0 for the stationary law.  The rate over
    E|f_x| is here 0.11, 0.33 and 0.94 for shifts of 0.1, 0.3 and 1.5: within noise at 0, a
    borderline verdict at 0.3 (above 0.1), not stationary at 1.5 (above 0.5)."""
    M = ou.nominal.reshape(2, 2)
    X = ou_stationary_samples(M, 1.0, 20_000, seed=6)
    X = X + np.array([shift * X[:, 0].std(), 0.0])
    check = ds.check_stationarity(ou, ou.nominal, X, np.arange(X.shape[0]) % 64)
    np.testing.assert_allclose(check.mean_rate, M @ X.mean(axis=0), rtol=1e-9, atol=1e-12)
    assert check.verdict == verdict, str(check)
    assert any("the mean of x still moves" in r for r in check.reasons) == (shift > 0)


@settings(max_examples=40)
@given(
    st.lists(st.floats(-2.0, 2.0), min_size=4, max_size=4),
    st.floats(0.2, 3.0),
    st.integers(0, 2**31),
)
def test_linear_drift_oracle(ou, entries, D, seed):
    """check_linear_drift says "diverging" exactly when M is not Hurwitz; for a Hurwitz M the
    exact stationary samples pass check_stationarity."""
    M = np.array(entries).reshape(2, 2)
    eig = np.linalg.eigvals(M).real.max()
    if abs(eig) < 1e-3:
        return  # too close to the boundary to call either way
    pts = np.random.default_rng(seed).normal(size=(5, 2))
    verdict = check_linear_drift(ou, _theta(M), pts).verdict
    assert (verdict == "diverging") == (eig > 0)
    if eig < -0.05 and np.linalg.cond(ou_stationary_cov(M, D)) < 1e4:
        X = ou_stationary_samples(M, D, 20_000, seed)
        model = ds.SDEModel([x, y], ou.params, ou.drift, diffusion=D, name="ou_hyp")
        check = ds.check_stationarity(model, _theta(M), X)
        assert check.verdict in ("stationary", "borderline"), str(check)
        assert not check.failed
        assert not any("the mean of" in r for r in check.reasons), str(check)


# --------------------------------------------------------------------------- start states
@pytest.fixture(scope="module")
def cir(gen_dir):
    """dx = (a − b x) dt + √(x/2) dW (D = x/4): Gamma(shape 2a/σ² = 4a, scale 1/(4b)) law."""
    return ds.SDEModel([x], [a, b], [a - b * x], diffusion=x / 4, name="cir", nominal=[1.0, 1.0])


def test_cir_starts_inside_its_domain(cir, gen_dir):
    X = ds.simulate(
        cir, cir.nominal, 4000, n_chains=4000, seed=0, execution=ds.Execution(out_dir=gen_dir)
    )
    assert X.min() > 0
    ks = scipy.stats.kstest(X[:, 0], scipy.stats.gamma(a=4.0, scale=0.25).cdf)
    assert ks.pvalue > 1e-3, ks
    # the standard normal draws outside x ≥ 0 were replaced; those inside are kept bit for bit
    from dynosed_sym.simulation.simulate import initial_states

    z = np.random.default_rng(np.random.SeedSequence(0).spawn(1)[0]).standard_normal((50, 1))
    x0 = initial_states(cir, 50, 0, theta=cir.nominal)
    inside = z[:, 0] >= 0
    np.testing.assert_array_equal(x0[inside], z[inside])
    assert (x0 > 0).all() and not outside_domain(cir, x0, cir.nominal).any()


def test_sqrt_noise_declared_as_g(gen_dir):
    m = ds.SDEModel(
        [x], [a, b], [a - b * x], noise=[[sp.sqrt(x) / sp.sqrt(2)]], name="cir_g", nominal=[1, 1]
    )
    X = ds.simulate(
        m, m.nominal, 2000, n_chains=2000, seed=2, execution=ds.Execution(out_dir=gen_dir)
    )
    assert X.min() > 0 and abs(X.mean() - 1.0) < 0.05


def test_no_start_inside_the_domain_asks_for_x0(gen_dir):
    """D(x) = (x − 10)/2 ≥ 0 only for x ≥ 10: neither |z| nor its relaxation towards the drift's
    fixed point a/b = 1 is inside; the error asks for x0=, and x0 inside works."""
    m = ds.SDEModel(
        [x], [a, b], [a - b * x], diffusion=(x - 10) / 2, name="shifted", nominal=[20.0, 1.0]
    )
    with pytest.raises(ds.DataError, match="x0="):
        ds.simulate(m, [1.0, 1.0], 100, seed=0, execution=ds.Execution(out_dir=gen_dir))
    X = ds.simulate(
        m, m.nominal, 500, n_chains=500, x0=[20.0], seed=0, execution=ds.Execution(out_dir=gen_dir)
    )
    assert X.min() > 10


# --------------------------------------------------------------------------- settings
def test_simulation_settings_map_onto_simulate(ou):
    sim = Simulation(dt=0.02, burn_in=100, thin=3, n_chains=7, x0=[0.1, 0.2])
    kw = sim.keywords(20)
    assert kw["n_chains"] == 7 and kw["dt"] == 0.02 and kw["x0"].tolist() == [0.1, 0.2]
    assert INDEPENDENT.chains(123) == 123 and Simulation().chains(5000) == 2048
    assert "independent" in INDEPENDENT.describe(1000)
    assert "from 7 chains" in sim.describe(20) and "correlated" in sim.describe(20)
    a1 = ds.simulate(ou, ou.nominal, 20, seed=4, **kw)
    a2 = ds.simulate(
        ou, ou.nominal, 20, seed=4, dt=0.02, burn_in=100, thin=3, n_chains=7, x0=[0.1, 0.2]
    )
    np.testing.assert_array_equal(a1, a2)
    for bad in (dict(dt=0), dict(burn_in=-1), dict(thin=0), dict(n_chains="many"), dict(x0="abc")):
        with pytest.raises(ds.DataError, match="Simulation"):
            Simulation(**bad)


def test_cramer_rao_bound_noise_is_counted(models):
    """The bound −tr(DΣ̂⁻¹) is estimated from the samples: its standard error (the influence of
    each row on Σ̂) matches the spread of the bound over 200 exact OU data sets (oracle: Monte
    Carlo), and exact stationary samples at N = 300 are not called "not stationary" (some
    simulated draws were, when Σ̂ was taken as exact)."""
    m = models["ou2d"]
    M = m.nominal.reshape(2, 2)
    bounds, ses, verdicts = [], [], []
    for seed in range(200):
        X = ou_stationary_samples(M, 1.0, 300, seed)
        chk = ds.check_stationarity(m, m.nominal, X)
        bounds.append(chk.divergence_bound)
        ses.append(chk.divergence_bound_se)
        verdicts.append(chk.verdict)
    ratio = np.median(ses) / np.std(bounds, ddof=1)
    assert 0.8 < ratio < 1.25, ratio  # sd of 200 draws: ±5 %; the delta method at N = 300
    assert "not stationary" not in verdicts and "diverging" not in verdicts


@pytest.mark.parametrize("g", [0.0, 1e-9])
def test_an_unbounded_relaxation_time_is_said_in_words(g):
    """A drift whose mean divergence is not negative (but not significantly positive) has no
    finite relaxation time: the reason said "≈ inf time units (… more than 1e+06)"."""
    from types import SimpleNamespace

    from dynosed_sym.simulation.stationarity import _judge

    out = SimpleNamespace(
        variance_rate=np.zeros(2),
        variance_rate_se=np.ones(2),
        imbalance=np.zeros(2),
        direction_names=["x", "y"],
        mean_rate=np.zeros(2),
        mean_rate_se=np.ones(2),
        mean_imbalance=np.zeros(2),
        divergence=g,
        divergence_se=1.0,
        divergence_bound=0.0,
        divergence_bound_se=0.0,
        jacobian_eigenvalues=np.array([-1.0, -2.0]),
        unstable=np.zeros(2, dtype=bool),
        linear=False,
        reasons=[],
        relaxation_time=float("inf"),
        verdict=None,
    )
    _judge(out)
    assert out.verdict == "borderline"
    text = " ".join(out.reasons)
    assert "no finite time (E[∇·f − ∇·∇·D] = " in text and "inf" not in text


def test_a_drift_with_jumps_is_judged_by_its_whole_divergence():
    """sign(x) in the drift puts a point mass −2a·p(0)·δ into ∇·f that the almost-everywhere
    derivative drops: E[f'] a.e. = −b = −0.5 against the Cramér–Rao bound −D/Var ≈ −5.1, and
    the check called exact draws of the stationary law "not stationary" (the held-out round
    eight's non-smooth drift).  Taken by central differences the mean divergence is the exact
    −b − 2a·p(0) (p(0) by quadrature), written with sign or as x/|x|; the moment conditions
    still catch a drift that pushes outwards (θ = (−2, 0.5)), and a drift that is only a jump
    is not "linear in x" (its Jacobian almost everywhere is 0: it was called diverging)."""
    model, X = sign_model_and_exact_draws()
    grid = np.linspace(-8.0, 8.0, 400_001)
    p0 = 1.0 / np.trapezoid(np.exp(-(2.0 * np.abs(grid) + 0.25 * grid**2) / 0.5), grid)
    exact = -0.5 - 2.0 * 2.0 * p0
    x, a, b = sp.symbols("x a b", real=True)
    as_abs = ds.SDEModel([x], [a, b], [-a * x / sp.Abs(x) - b * x], diffusion=0.5, name="abs1d")
    for m in (model, as_abs):
        check = ds.check_stationarity(m, [2.0, 0.5], X)
        assert check.verdict == "stationary", str(check)
        assert abs(check.divergence - exact) < 4 * check.divergence_se, (check.divergence, exact)
        assert check.divergence_skipped == ""
    pushed = ds.check_stationarity(model, [-2.0, 0.5], X)
    assert pushed.failed and "variance along x still grows" in " ".join(pushed.reasons)
    jump_only = ds.SDEModel([x], [a], [-a * sp.sign(x)], diffusion=0.5, name="laplace1d")
    laplace = np.random.default_rng(2).laplace(0.0, 0.25, size=(5000, 1))  # p ∝ exp(−4|x|)
    check = ds.check_stationarity(jump_only, [2.0], laplace)
    assert not check.linear and check.verdict == "stationary", str(check)


def test_a_diffusion_with_kinks_skips_the_divergence_conditions():
    """D = 0.5 + |x|/10 has a kink at 0: ∇·∇·D has a point mass there that the almost-everywhere
    second derivative drops, so the divergence conditions are not checked (and the check says
    so); the moment conditions are."""
    _, X = sign_model_and_exact_draws(n=2000)
    x, a, b = sp.symbols("x a b", real=True)
    kinked = ds.SDEModel(
        [x], [a, b], [-a * sp.sign(x) - b * x], diffusion=0.5 + sp.Abs(x) / 10, name="kinkD"
    )
    check = ds.check_stationarity(kinked, [2.0, 0.5], X)
    assert check.divergence_skipped == "Abs" and np.isnan(check.divergence)
    assert "divergence conditions not checked" in str(check)
    assert check.to_dict()["divergence_skipped"] == "Abs"
