"""NumPy model functions of the stationarity checks against finite differences of the drift."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.apps.bench.network_model import network_model
from dynosed_sym.simulation.functions import ModelFunctions


def _case(case, root):
    if case == "network5":
        return network_model(5, 0)
    grn = ds.load_model(os.path.join(root, "models", "grn_bcell.py"))
    return grn, np.asarray(grn.nominal, float)


@pytest.mark.parametrize("case", ["network5", "grn_bcell"])
def test_derivatives_match_finite_differences(case, project_root):
    """∂f/∂x, the sparse ∂f/∂θ and ∂(∇·f)/∂θ (one lambdify each) against central differences of
    the lambdified drift."""
    model, theta = _case(case, project_root)
    fn = ModelFunctions(model)
    X = 0.6 + 0.2 * np.random.default_rng(len(case)).standard_normal((7, model.d))
    h = 1e-6

    def fd_x(j):
        E = np.zeros(model.d)
        E[j] = h
        return (fn.drift(X + E, theta) - fn.drift(X - E, theta)) / (2 * h)

    J = fn.jacobian(X, theta)
    for j in range(model.d):
        np.testing.assert_allclose(J[:, :, j], fd_x(j), rtol=1e-6, atol=1e-7)
    dtheta = np.zeros((X.shape[0], model.d, model.n))
    for i, k, vals in fn.drift_theta(X, theta):
        dtheta[:, i, k] = vals
    ddiv = np.zeros((X.shape[0], model.n))
    for k, vals in fn.divergence_theta(X, theta):
        ddiv[:, k] = vals
    for k in range(model.n):
        E = np.zeros(model.n)
        E[k] = h
        fd = (fn.drift(X, theta + E) - fn.drift(X, theta - E)) / (2 * h)
        np.testing.assert_allclose(dtheta[:, :, k], fd, rtol=1e-6, atol=1e-7)
        div = [np.trace(fn.jacobian(X, t), axis1=1, axis2=2) for t in (theta + E, theta - E)]
        np.testing.assert_allclose(ddiv[:, k], (div[0] - div[1]) / (2 * h), rtol=1e-5, atol=1e-6)
