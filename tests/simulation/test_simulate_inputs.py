"""Simulation with known inputs and unpaired time courses (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from conftest import OU_M, ou_noise_model, ou_transient_law

import dynosed_sym as ds
from dynosed_sym.simulation import simulate_time_course


@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")  # burn_in=50: short
def test_simulate_with_inputs_is_the_specialised_model(tmp_path):
    """inputs= runs the model's one module with u as an argument; a model printed with the
    value substituted (its own module) gives the same samples, bit for bit (s enters D only)."""
    model = ou_noise_model("aniso")
    a = ds.simulate(model, model.nominal, 300, inputs={"s": 2.0}, burn_in=50, seed=3)
    sub = model.with_inputs({"s": 2.0})
    b = ds.simulate(sub, model.nominal, 300, burn_in=50, seed=3)
    plain = ds.SDEModel(sub.state, sub.params, sub.drift, sub.D, name="ou_aniso_s2")
    c = ds.simulate(
        plain, model.nominal, 300, burn_in=50, seed=3, execution=ds.Execution(out_dir=str(tmp_path))
    )
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_time_course_snapshots_follow_the_transient_law(models):
    """Independent chains per time, started from the initial law: mean e^{Mt}μ₀ and Σ(t)."""
    model = models["ou2d"]
    mu0, S0 = np.array([2.0, -1.0]), 0.1 * np.eye(2)
    tc = simulate_time_course(
        model, model.nominal, [0.0, 0.05, 0.3], 40_000, initial=(mu0, S0), dt=0.005, seed=1
    )
    assert tc.times.tolist() == [0.0, 0.05, 0.3]
    for t, X in tc.items():
        mu, S = ou_transient_law(OU_M, 1.0, mu0, S0, t)
        se = np.sqrt(np.diag(S) / X.shape[0])
        assert np.all(np.abs(X.mean(axis=0) - mu) < 4 * se + 0.005 * np.abs(mu) + 1e-3)
        np.testing.assert_allclose(np.cov(X.T), S, rtol=0.05, atol=0.005)
    # the snapshots are independent samples: different chains at different times
    assert not np.allclose(tc.snapshots[1][:10], tc.snapshots[2][:10])
    assert scipy.linalg.norm(tc.snapshots[0].mean(axis=0) - mu0) < 0.01


def test_snapshot_at_is_the_time_course_first_snapshot(models):
    """snapshot_at (a design's sampler: one time per call) draws what simulate_time_course draws
    for its first time, bit for bit; simulate_time_course([t]) itself is refused (a TimeCourse
    needs two times)."""
    from dynosed_sym.simulation.simulate import snapshot_at

    model = models["ou2d"]
    law = (np.array([1.0, -1.0]), 0.2 * np.eye(2))
    tc = simulate_time_course(model, model.nominal, [0.3, 0.6], 200, initial=law, seed=4)
    one = snapshot_at(model, model.nominal, 0.3, 200, initial=law, seed=4)
    np.testing.assert_array_equal(one, tc.snapshots[0])
    with pytest.raises(ds.DataError, match="t must be non-negative"):
        snapshot_at(model, model.nominal, -1.0, 200, initial=law)
