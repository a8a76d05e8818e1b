"""The stationarity checks' spread of the moments over θ's uncertainty
(dynosed_sym.simulation.stationarity._theta_spread) against the per-parameter loop of its
formula, Σ_k |mean(2 ∂f_i/∂θ_k · V_i · xv)| · sd_k for the variance rates and
Σ_k |mean(∂f_i/∂θ_k)| · sd_k for the mean rates, in NumPy."""

from __future__ import annotations

import numpy as np

from dynosed_sym.apps.bench.network_model import network_model
from dynosed_sym.simulation.functions import model_functions
from dynosed_sym.simulation.stationarity import _theta_spread


def test_spread_equals_the_loop_over_parameters():
    model, truth = network_model(3, 0)
    fn = model_functions(model)
    rng = np.random.default_rng(1)
    X = rng.uniform(0.1, 1.5, size=(400, 3))
    V = np.linalg.qr(rng.standard_normal((3, 5)).T)[0].T  # (d, K) directions
    xv = (X - X.mean(axis=0)) @ V
    sd = rng.uniform(0.01, 0.2, truth.size)
    sd[4] = np.inf
    rates, means, _ = _theta_spread(fn, X, truth, V, xv, sd)
    grad = np.zeros((truth.size, V.shape[1]))
    grad_mean = np.zeros((truth.size, 3))
    for i, k, vals in fn.drift_theta(X, truth):
        grad[k] += (2.0 * vals[:, None] * V[i][None, :] * xv).mean(axis=0)
        grad_mean[k, i] += vals.mean()
    want = [np.sum(np.abs(g[g != 0]) * sd[g != 0]) for g in grad.T]
    np.testing.assert_allclose(rates, want, rtol=1e-12)
    assert np.isinf(rates).any()  # the parameter without a finite sd enters
    want_mean = [np.sum(np.abs(g[g != 0]) * sd[g != 0]) for g in grad_mean.T]
    np.testing.assert_allclose(means, want_mean, rtol=1e-12)
    assert np.isinf(means[1])  # sd[4] is W_1_1's: it enters f_1 only
    assert np.all(np.isfinite(means[[0, 2]]))


def test_theta_sd_as_a_dict_is_read_by_name():
    """``check_stationarity(theta_sd=…)`` takes a dict or a labelled Series by parameter name, as
    θ itself (a dict was refused: "holds a value that is not a number"): the same check as the
    array in the model's order (the oracle); an unknown or missing name is refused naming it."""
    import pandas as pd
    import pytest

    import dynosed_sym as ds

    model, truth = network_model(3, 0)
    X = ds.simulate(model, truth, 400, seed=1)
    sd = np.linspace(0.01, 0.09, model.n)
    sd[2] = np.inf
    ref = ds.check_stationarity(model, truth, X, theta_sd=sd)
    names = list(model.param_names)
    by_dict = dict(zip(names[::-1], sd[::-1]))
    for given in (by_dict, pd.Series(by_dict)):
        got = ds.check_stationarity(model, truth, X, theta_sd=given)
        assert got.verdict == ref.verdict and got.reasons == ref.reasons
        np.testing.assert_array_equal(got.variance_rate_se, ref.variance_rate_se)
    with pytest.raises(ds.DataError, match=r"^theta_sd: 'nope' is not a parameter"):
        ds.check_stationarity(model, truth, X, theta_sd={**by_dict, "nope": 1.0})
    with pytest.raises(ds.DataError, match=rf"^theta_sd: no value for '{names[0]}'"):
        ds.check_stationarity(
            model, truth, X, theta_sd={k: v for k, v in by_dict.items() if k != names[0]}
        )
