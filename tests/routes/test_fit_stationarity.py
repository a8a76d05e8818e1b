"""After a fit: the fitted drift must have a stationary law consistent with the data
(routes/stationarity.py).  Oracles: exact Gaussian laws (the Lyapunov covariance of a linear
drift), for which the moment identities hold or fail in closed form."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp
from conftest import ou_stationary_samples

import dynosed_sym as ds


def test_fit_on_stationary_data_is_not_flagged(models):
    ou = models["ou2d"]
    X = ou_stationary_samples(ou.nominal.reshape(2, 2), 1.0, 5000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = ds.fit_global(ou, X, features=ds.Features(seed=0))
    assert fit.stationarity.verdict == "stationary"
    assert "stationarity" not in fit.info
    assert fit.stationarity.divergence == pytest.approx(-2.0, abs=0.2)


def test_cloud_of_a_diverging_process_is_flagged(models):
    """Snapshots of dx = 0.5·x dt + √2 dW after 50 time units: a Gaussian cloud of sd ≈ 10¹¹.
    The fit finds M ≈ −6·10⁻²³·I with tight intervals (a stationary OU of that width exists);
    the relaxation time d/|E[∇·f]| ≈ 10²² time units gives it away."""
    ou = models["ou2d"]
    X = np.random.default_rng(0).normal(size=(2000, 2)) * 1.2e11
    with pytest.warns(ds.StationarityWarning, match="confines the samples only over"):
        fit = ds.fit_global(ou, X, features=ds.Features(seed=0))
    assert fit.info["stationarity"] == "borderline"
    assert fit.stationarity.relaxation_time > 1e20
    assert any(n.startswith("stationarity:") for n in fit.report.notes)
    assert "stationarity = borderline" in fit.summary()
    assert "stationarity:" in " ".join(fit.to_dict()["report"]["notes"])


def test_drift_that_cannot_balance_the_spread_is_flagged():
    """f = −x + c with D = 1 (c the only parameter) has the stationary variance 1 whatever c.
    Data of variance 4: Itô's d/dt Var = 2E[f x̃] + 2D = −8 + 2 = −6 ≠ 0 at every c — flagged;
    exact stationary data of the model are not."""
    x, c = sp.Symbol("x", real=True), sp.Symbol("c", real=True)
    m = ds.SDEModel([x], [c], [-x + c], diffusion=1, name="fixed_rate")
    X = np.random.default_rng(3).normal(0.5, 2.0, size=(20_000, 1))
    with pytest.warns(ds.StationarityWarning, match="variance along x still shrinks"):
        fit = ds.fit_global(m, X, features=ds.Features(seed=0))
    assert fit.stationarity.variance_rate[0] == pytest.approx(-6.0, abs=0.3)
    assert fit.theta[0] == pytest.approx(0.5, abs=0.1)  # the mean is still right
    exact = ou_stationary_samples(np.array([[-1.0]]), 1.0, 20_000, seed=4) + 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = ds.fit_global(m, exact, features=ds.Features(seed=0))
    assert ok.stationarity.verdict == "stationary"


def test_local_route_checks_the_moments_only_for_whole_data(models):
    """Probes given as points may sit in regions: only θ̂ itself is checked there."""
    ou = models["ou2d"]
    X = np.random.default_rng(0).normal(size=(3000, 2)) * 1.2e11
    P = X[:6]
    fit = ds.fit_local(ou, X, P, scores=ds.Scores(score="local_gaussian"))
    assert fit.stationarity.verdict in ("not checked", "diverging")
    with pytest.warns(ds.StationarityWarning):
        whole = ds.fit_local(ou, X, 6, scores=ds.Scores(score="local_gaussian"))
    assert whole.stationarity.verdict != "stationary"


def test_an_interval_the_local_fit_opened_does_not_silence_the_check():
    """f = −x + c with D = 1 on samples of spread 2 (the law has spread 1/√2): the local fit
    rejects and opens its interval; the check must still see that the variance is out of
    balance (a spread that c cannot change) — a whole-line parameter's spread taken as
    infinite had made it "stationary" (the review of stop 52)."""
    x, c = sp.Symbol("x", real=True), sp.Symbol("c", real=True)
    model = ds.SDEModel([x], [c], [-x + c], diffusion=1, name="fixed_rate")
    X = np.random.default_rng(3).normal(0.5, 2.0, size=(2000, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = ds.fit_local(model, X, 10)
    assert not np.isfinite(fit.conf_int()).any()
    assert fit.stationarity.verdict != "stationary"
    assert "variance along x still shrinks" in " ".join(fit.stationarity.reasons)
