"""Where the simulation check's samples come from (identifiability/simulated_sampling.py):
independent snapshots by default, the old correlated chains on request, a user's sampler= or
samples=, the words the report uses for each, and nominal values without a stationary law.

The slow test compares the predicted standard errors at N with the spread of fits on N
independent samples (exact Gaussian samples of the 2-D OU; simulated repressilator)."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import sympy as sp
from conftest import ou_stationary_samples

import dynosed_sym as ds
from dynosed_sym.simulation import Simulation


def _ou_sampler(M):
    def sample(inputs, theta, n, seed, time=None, initial=None):
        assert inputs == {} and time is None
        return ou_stationary_samples(M, 1.0, n, seed)

    return sample


def test_default_is_independent_snapshots_and_says_so(models):
    m = models["ou2d_m12"]
    chk = ds.check_identifiability(m, study=ds.Study(n_samples=2000, seed=1))
    assert chk.sampling.startswith("2,000 independent simulated snapshots")
    assert "2,000 independent simulated snapshots" in str(chk)
    old = ds.check_identifiability(
        m, study=ds.Study(n_samples=2000, seed=1, simulation=Simulation(n_chains=200))
    )
    assert "from 200 chains" in old.sampling and "correlated" in str(old)


def test_sampler_without_a_design(models):
    """sampler= is documented as "instead of the compiled simulator": it used to raise "pass
    inputs= or times="; it now draws the samples, and the report says where they came from."""
    m = models["ou2d"]
    M = m.nominal.reshape(2, 2)
    chk = ds.check_identifiability(
        m, study=ds.Study(sampler=_ou_sampler(M), n_samples=4000, seed=7)
    )
    assert chk.sampling == "4,000 samples from sampler=" and "simulated" not in chk.sampling
    assert "4,000 samples from sampler=" in str(chk)
    same = ds.check_identifiability(
        m, study=ds.Study(samples=ou_stationary_samples(M, 1.0, 4000, 7), seed=7)
    )
    assert same.sampling == "4,000 given samples (samples=)"
    np.testing.assert_array_equal(chk.std_errors, same.std_errors)
    assert chk.rank == same.rank == 3


def test_sampler_and_samples_of_the_wrong_size_are_refused(models):
    """A sampler must return the n rows it is asked for, and given samples= need as many as
    Study.n_samples' minimum (16): 5 rows from a sampler asked for 300 were taken as the whole
    study, and with fewer than 2 noise blocks str(check) raised "TypeError: 'NoneType' object is
    not iterable" (no directions were followed)."""
    m = models["ou2d"]
    M = m.nominal.reshape(2, 2)

    def short(inputs, theta, n, seed, time=None, initial=None):
        return ou_stationary_samples(M, 1.0, 5, seed)

    with pytest.raises(ds.DataError, match="sampler: returned 5 samples when asked for n = 300"):
        ds.check_identifiability(m, study=ds.Study(sampler=short, n_samples=300))
    with pytest.raises(ds.DataError, match="samples: 5 sample.*at least 16"):
        ds.check_identifiability(m, study=ds.Study(samples=ou_stationary_samples(M, 1.0, 5, 0)))
    few = ds.check_identifiability(
        m,
        study=ds.Study(samples=ou_stationary_samples(M, 1.0, 16, 0)),
        features=ds.Features(n_features=32),
    )
    assert "16 given samples" in str(few)


def test_given_samples_are_not_called_simulated(models):
    m = models["ou2d"]
    X = ou_stationary_samples(m.nominal.reshape(2, 2), 1.0, 3000, 2)
    text = str(ds.check_identifiability(m, study=ds.Study(samples=X, seed=0)))
    assert "3,000 given samples" in text and "simulated samples" not in text


def test_nominal_without_stationary_law_is_refused(models):
    """`dynosed check models/ou2d.py --nominal M11=5 --nominal M22=5` planned ≈ 55 samples."""
    m = models["ou2d"]
    bad = {"M11": 5.0, "M12": 0.5, "M21": -0.5, "M22": 5.0}
    with pytest.raises(ds.StationarityError, match="diverging"):
        ds.check_identifiability(m, nominal=bad, study=ds.Study(n_samples=2000))
    # given samples that cannot be a stationary law of the nominal θ are refused too
    X = ou_stationary_samples(m.nominal.reshape(2, 2), 1.0, 4000, 3) * 0.3  # far too narrow
    with pytest.raises(ds.StationarityError, match="samples= at the nominal.*not stationary"):
        ds.check_identifiability(m, study=ds.Study(samples=X))
    with pytest.raises(ds.DataError, match="Simulation"):
        ds.check_identifiability(m, study=ds.Study(simulation={"dt": 0.01}))


def test_x0_reaches_the_simulator():
    """A model whose noise needs x > 10: the default start fails with a message naming x0=,
    Simulation(x0=…) passes it through."""
    x, a, b = sp.symbols("x a b", real=True)
    m = ds.SDEModel(
        [x], [a, b], [a - b * x], diffusion=(x - 10) / 2, name="shifted_cir", nominal=[20.0, 1.0]
    )
    with pytest.raises(ds.DataError) as err:  # no start inside the domain (D(x) < 0)
        ds.check_identifiability(m, study=ds.Study(n_samples=2000))
    # the simulator's "pass x0=" told where a study takes it (found on May–Leonard competition)
    msg = str(err.value)
    assert msg.startswith("check_identifiability: the simulation check's samples: x0: ")
    assert "pass x0=" in msg and "study=Study(simulation=ds.Simulation(x0=" in msg
    chk = ds.check_identifiability(
        m, study=ds.Study(n_samples=2000, simulation=Simulation(x0=[20.0]))
    )
    assert chk.report is not None and chk.rank == 2


def test_diverging_default_start_names_the_study_setting():
    """Logistic growth: chains started below 0 (the default N(0, I) start) run to −∞ in finite
    time — a StationarityError that says where a study sets the start; from x0 = 1 it works."""
    x, a, b = sp.symbols("x a b", real=True)
    m = ds.SDEModel(
        [x],
        [a, b],
        [a * x - b * x**2],
        diffusion=sp.Rational(1, 100),
        name="logistic_start",
        nominal=[1.0, 1.0],
    )
    with pytest.raises(ds.StationarityError) as err:
        ds.check_identifiability(m, study=ds.Study(n_samples=2000))
    msg = str(err.value)
    assert msg.startswith("check_identifiability: the simulation check's samples: simulation")
    assert "diverged" in msg and "study=Study(simulation=ds.Simulation(x0=" in msg
    chk = ds.check_identifiability(
        m, study=ds.Study(n_samples=2000, simulation=Simulation(x0=[1.0]))
    )
    assert chk.rank == 2


def test_step_size_warning_names_the_study_setting():
    """A relaxation rate of 100 at the study's default dt = 0.01: the simulator's
    StepSizeWarning (the samples' spread 33 % off) says where a study sets the step, and names
    the caller's line; another warning of the check is not restated."""
    x, y, a, b = sp.symbols("x y a b", real=True)
    m = ds.SDEModel(
        [x, y], [a, b], [-a * x, -b * y], diffusion=1, name="stiff_study", nominal=[1.0, 100.0]
    )
    with pytest.warns(ds.StepSizeWarning) as caught:
        ds.check_identifiability(m, study=ds.Study(n_samples=2000, seed=1))
    steps = [w for w in caught if issubclass(w.category, ds.StepSizeWarning)]
    assert len(steps) == 1
    text = str(steps[0].message)
    assert text.startswith("check_identifiability: the simulation check's samples: simulate:")
    assert "≈ 33% in its spread" in text
    assert text.endswith(
        "here the step is set by check_identifiability(..., study=Study("
        "simulation=ds.Simulation(x0=..., dt=..., burn_in=...)))"
    )
    others = [w for w in caught if w not in steps]
    assert all("here the step" not in str(w.message) for w in others)
    # the moments' imbalance the step causes (this seed: −14 % along y) is put down to dt
    moments = [w for w in others if issubclass(w.category, ds.StationarityWarning)]
    assert moments and all("reduce dt to 0.00125 first" in str(w.message) for w in moments)
    assert all("increase burn_in" not in str(w.message) for w in moments)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.StepSizeWarning)
        ds.check_identifiability(
            m, study=ds.Study(n_samples=2000, seed=1, simulation=Simulation(dt=0.001))
        )


@pytest.mark.slow
def test_predicted_se_matches_fits_on_independent_data(models):
    """Predicted se at N against the standard deviation of θ̂ over R fits of N independent
    samples: the OU with its exact law (oracle), and the repressilator simulated one chain per
    sample.  The old correlated default predicts far larger errors."""
    ou = models["ou2d_m12"]
    M = models["ou2d"].nominal.reshape(2, 2)  # ou2d_m12 is this OU with only M12 free
    N, R = 5000, 30
    chk = ds.check_identifiability(ou, study=ds.Study(n_samples=N, seed=0))
    est = [
        ds.fit_global(
            ou, ou_stationary_samples(M, 1.0, N, 100 + r), features=ds.Features(seed=r)
        ).theta[0]
        for r in range(R)
    ]
    emp = np.std(est, ddof=1)
    ratio = chk.se_at(N)[0] / emp
    print(
        f"\nOU (M12 free), N = {N}: predicted se {chk.se_at(N)[0]:.4f}, sd over {R} fits "
        f"{emp:.4f} (ratio {ratio:.2f})"
    )
    assert 0.6 < ratio < 1.6  # sd of an sd from 30 fits: ≈ 13 %

    xs = sp.symbols("x1 x2 x3", real=True)
    a = sp.symbols("a1 a2 a3", real=True)
    g = sp.symbols("g1 g2 g3", real=True)
    f = [a[i] / (1 + xs[i - 1] ** 2) - g[i] * xs[i] for i in range(3)]
    rep = ds.SDEModel(
        list(xs),
        list(a) + list(g),
        f,
        diffusion=0.05,
        name="repress",
        nominal=[2.0, 2.0, 2.0, 1.0, 1.0, 1.0],
    )
    out = {}
    for label, sim in (("chains", Simulation(n_chains=2048)), ("independent", None)):
        t0 = time.perf_counter()
        chk = ds.check_identifiability(
            rep, study=ds.Study(n_samples=20_000, seed=0, simulation=sim)
        )
        out[label] = chk.se_at(1e4)
        print(
            f"repressilator se@10k from {label}: {np.round(out[label], 4)} "
            f"({time.perf_counter() - t0:.1f} s, simulation {chk.timings['simulate']:.1f} s)"
        )
    ths = np.array(
        [
            ds.fit_global(
                rep,
                ds.simulate(rep, rep.nominal, 10_000, n_chains=10_000, seed=100 + s),
                features=ds.Features(seed=s),
            ).theta
            for s in range(12)
        ]
    )
    emp = ths.std(axis=0, ddof=1)
    print(f"sd over 12 fits of 10,000 independent samples: {np.round(emp, 4)}")
    ratio_ind = np.mean(out["independent"]) / np.mean(emp)
    ratio_chain = np.mean(out["chains"]) / np.mean(emp)
    assert 0.6 < ratio_ind < 1.6, ratio_ind
    assert ratio_chain > 1.5 * ratio_ind  # the correlated chains are pessimistic
