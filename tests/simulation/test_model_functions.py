"""NumPy model functions of the stationarity checks against finite differences of the drift."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.apps.bench.network_model import network_model
from dynosed_sym.simulation.functions import ModelFunctions, _state_jacobian


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
    # the per-row Jacobian from the distinct derivatives (the step-size check) is the same
    np.testing.assert_allclose(fn.row_jacobians(X, theta), J, rtol=1e-12, atol=1e-12)
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


def _fhn_nonaffine():
    """FitzHugh–Nagumo with c1 entering as c1² (not affine: the whole-Jacobian path)."""
    x, y = sp.symbols("x y", real=True)
    c = sp.symbols("c1:4", real=True)
    f = [c[0] ** 2 * (x - x**3 / 3 - y) + c[1], c[2] * x - 0.8 * y + abs(y)]
    return ds.SDEModel(state=[x, y], params=c, drift=f, diffusion=0.05), np.array([1.3, 0.4, 0.3])


@pytest.mark.parametrize(
    "case", ["network5", "grn_bcell", "lorenz", "limit_cycle", "ou2d_m12", "ou2d", "nonaffine"]
)
def test_mean_jacobian_equals_the_whole_jacobian(case, project_root):
    """J̄ and the per-row trace from the distinct derivatives (affine drifts) equal the mean and the
    trace of the lambdified whole Jacobian, across chunk boundaries (rows = 5)."""
    if case == "nonaffine":
        model, theta = _fhn_nonaffine()
    elif case in ("lorenz", "limit_cycle", "ou2d_m12", "ou2d"):
        model = ds.load_model(os.path.join(project_root, "models", f"{case}.py"))
        theta = np.asarray(model.nominal, float)
    else:
        model, theta = _case(case, project_root)
    fn = ModelFunctions(model)
    assert (fn._jacobian_terms is None) == (case == "nonaffine")
    X = 0.6 + np.random.default_rng(3).standard_normal((23, model.d))
    J = fn.jacobian(X, theta)
    Jbar, div = fn.mean_jacobian(X, theta, rows=5)
    scale = max(1.0, float(np.abs(J).max()))
    np.testing.assert_allclose(Jbar, J.mean(axis=0), rtol=1e-12, atol=1e-13 * scale)
    np.testing.assert_allclose(div, np.trace(J, axis1=1, axis2=2), rtol=1e-12, atol=1e-13 * scale)
    whole = _state_jacobian(model.drift, list(model.state))  # the flag from the whole Jacobian
    assert fn.linear == (not any(e.free_symbols & set(model.state) for e in whole))


def test_an_infinite_off_diagonal_derivative_leaves_the_divergence_finite():
    """∂f₁/∂y = b/(2√y) is infinite at y = 0; the trace (−a − 1) does not contain it."""
    x, y = sp.symbols("x y", real=True)
    a, b = sp.symbols("a b", real=True)
    model = ds.SDEModel(
        state=[x, y], params=[a, b], drift=[-a * x + b * sp.sqrt(y), -y], diffusion=0.1
    )
    fn = ModelFunctions(model)
    X = np.array([[0.5, 0.0], [1.0, 4.0], [-2.0, 0.25]])
    with np.errstate(divide="ignore"):
        Jbar, div = fn.mean_jacobian(X, np.array([2.0, 3.0]))
    np.testing.assert_array_equal(div, [-3.0, -3.0, -3.0])
    assert np.isinf(Jbar[0, 1]) and Jbar[0, 0] == -2.0 and Jbar[1, 1] == -1.0


@pytest.mark.parametrize("case", ["network5", "rates4", "grn_bcell", "lorenz", "nonaffine"])
def test_drift_from_distinct_entries_equals_the_drift(case, project_root):
    """An affine drift is evaluated as U(x)θ + v(x) from U's distinct entries (a network's d
    Hill functions, not d² of them): equal to the whole drift lambdified here (and, for the
    networks, to the NumPy drift of the bench), to rounding, inf and NaN where it has them."""
    from dynosed_sym.apps.bench.network_model import network_drift

    if case == "nonaffine":
        model, theta = _fhn_nonaffine()
    elif case == "rates4":
        model, theta = network_model(4, 1, rates=True)
    elif case == "lorenz":
        model = ds.load_model(os.path.join(project_root, "models", "lorenz.py"))
        theta = np.asarray(model.nominal, float)
    else:
        model, theta = _case(case, project_root)
    fn = ModelFunctions(model)
    assert (fn._affine_drift is None) == (case == "nonaffine")
    X = 0.6 + np.random.default_rng(5).standard_normal((31, model.d))
    X[3, 0] = np.inf
    X[7] *= 1e160  # x·z overflows: inf − inf in the split order, inf in the whole drift's
    whole = sp.lambdify(list(model.state) + list(model.params), list(model.drift), "numpy")
    with np.errstate(all="ignore"):
        expected = np.array(
            [np.broadcast_to(v, X.shape[0]) for v in whole(*X.T, *theta)], dtype=float
        ).T
        got = fn.drift(X, theta)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    if case == "network5":
        d, ok = model.d, np.abs(X).max(axis=1) < 1e100
        np.testing.assert_allclose(
            got[ok], network_drift(X[ok], theta.reshape(d, d)), rtol=1e-13, atol=1e-13
        )
