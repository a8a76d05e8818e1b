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
