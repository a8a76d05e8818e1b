"""Shift interventions with known targets, fitted (docs/designs.md, "Shift interventions").

Oracle: exact stationary Gaussian samples of ``dx = (Mx + b + δ_e) dt + √(2D) dW`` per
environment — mean ``−M⁻¹(b + δ_e)``, covariance from ``MΣ + ΣMᵀ + 2D = 0`` — with the shift δ_e
zero in the observational reference.  The fitted shifts must sit within their own 95 % intervals
as often as the level says, over seeds nobody tuned.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import sympy as sp

import dynosed_sym as ds

M_TRUE = np.array([[-1.0, 0.5], [-0.3, -1.2]])
B_TRUE = np.array([0.2, -0.1])
D = 0.5
SHIFTS = {"obs": np.zeros(2), "up_x": np.array([2.0, 0.0]), "down_y": np.array([0.0, -1.5])}
TARGETS = {"obs": [], "up_x": ["x"], "down_y": ["y"]}


def _samples(shift, n, seed):
    S = scipy.linalg.solve_continuous_lyapunov(M_TRUE, -2.0 * D * np.eye(2))
    mean = -np.linalg.solve(M_TRUE, B_TRUE + shift)
    z = np.random.default_rng(seed).standard_normal((n, 2))
    return mean + z @ np.linalg.cholesky(S).T


@pytest.fixture(scope="module")
def design():
    x, y = sp.symbols("x y", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    b1, b2 = sp.symbols("b1 b2", real=True)
    drift = list(M * sp.Matrix([x, y]) + sp.Matrix([b1, b2]))
    base = ds.SDEModel([x, y], [*M, b1, b2], drift, D, name="ou2d_shifted_test")
    return ds.shift_interventions(base, TARGETS)


TRUTH = {
    **dict(zip(["M11", "M12", "M21", "M22"], M_TRUE.reshape(-1))),
    "b1": B_TRUE[0],
    "b2": B_TRUE[1],
    "shift_x[up_x]": 2.0,
    "shift_y[down_y]": -1.5,
}


def test_the_design_is_identifiable_before_data(design):
    """One snapshot leaves the OU rotation free; the shifted means resolve it (exact check)."""
    check = ds.check_identifiability(
        design.model, TRUTH, experiment=ds.Experiment(inputs=design.inputs), simulate=False
    )
    assert check.structural.rank == design.model.n == 8


def test_fitted_shifts_cover_the_exact_ones_over_seeds(design):
    covered, finite, z = 0, 0, []
    seeds = range(700, 710)
    for seed in seeds:
        data = {e: _samples(s, 20_000, seed * 10 + k) for k, (e, s) in enumerate(SHIFTS.items())}
        fit = ds.fit_global(
            design.model,
            data,
            inputs=design.inputs,
            features=ds.Features(n_features=512, seed=seed),
        )
        assert fit.param_names == [*TRUTH]
        assert fit.report.rank == 8
        ci = fit.conf_int()
        for name in design.shift_params:
            j = fit.param_names.index(name)
            lo, hi = ci[j]
            if np.isfinite(lo) and np.isfinite(hi):
                finite += 1
                covered += int(lo <= TRUTH[name] <= hi)
                z.append((fit.theta[j] - TRUTH[name]) / fit.std_errors[j])
        # the whole parameter vector is close as well (the drift is shared by all environments)
        truth = np.array([TRUTH[p] for p in fit.param_names])
        assert np.all(np.abs(fit.theta - truth) < 5 * fit.std_errors + 1e-12)
    # 20 intervals at 95 %: at most 3 misses happen with probability 0.984 under calibration
    assert finite == 2 * len(seeds)
    assert covered >= finite - 3, (covered, finite)
    # and they are not trivially wide: the spread of the errors matches the standard errors
    assert 0.4 < float(np.std(z)) < 2.0, z


def test_the_reference_environment_alone_leaves_the_shifts_unfitted(design):
    """A shift parameter has no column in the reference environment: fitted from observational
    data alone, every shift is reported as not identifiable (it does not move from its prior)."""
    obs = {"obs": _samples(SHIFTS["obs"], 20_000, 1)}
    fit = ds.fit_global(
        design.model,
        obs,
        inputs={"obs": design.inputs["obs"]},
        features=ds.Features(n_features=512, seed=0),
    )
    A = np.asarray(fit.A)
    for name in design.shift_params:
        j = fit.param_names.index(name)
        assert np.all(A[:, j] == 0.0)
        assert not np.isfinite(fit.conf_int()[j]).all()
