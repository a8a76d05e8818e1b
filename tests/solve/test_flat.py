"""Flat unresolved directions that leave their carriers unbounded (dynosed_sym/solve/flat.py):
the lone-direction rule.  Oracles: directions built by hand (a coordinate axis, a spread
direction) and exact stationary OU samples with a structurally free direction."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.solve.flat import (
    LONE_LOADING,
    SCALE_T,
    lone_carriers,
    lone_directions,
    whole_line_notes,
)
from dynosed_sym.solve.intervals import COMBINATION


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(3, 12),
    k=st.integers(0, 11),
    sign=st.sampled_from([-1.0, 1.0]),
    t=st.floats(-3.0, 5.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_an_axis_is_lone_when_flat_and_its_only_carrier_is_its_parameter(n, k, sign, t, seed):
    """A flat direction along one parameter's axis (with a tilt below the carrier threshold on
    the others) rests on that parameter: lone exactly when its curvature is not seen, and only
    that parameter carries it; permuting the parameters permutes the carriers."""
    k = k % n
    rng = np.random.default_rng(seed)
    v = rng.uniform(-1, 1, n) * 0.5 * LONE_LOADING / np.sqrt(n)
    v[k] = sign
    v /= np.linalg.norm(v)
    VU = v[:, None]
    assert lone_directions(VU, np.array([t])).tolist() == [not t > SCALE_T]
    carriers = lone_carriers(VU, np.array([t]))
    expected = np.zeros(n, bool)
    expected[k] = not t > SCALE_T
    assert carriers.tolist() == expected.tolist()
    perm = rng.permutation(n)
    assert lone_carriers(VU[perm], np.array([t])).tolist() == expected[perm].tolist()


@settings(max_examples=40, deadline=None)
@given(m=st.integers(3, 20), seed=st.integers(0, 2**31 - 1))
def test_a_direction_spread_over_three_or_more_parameters_is_never_lone(m, seed):
    """Equal weight on m ≥ 3 parameters (a network's flat direction): Σv⁴ = 1/m < 1/2, so the
    scale τ keeps sizing its component and no parameter is opened, whatever its curvature."""
    rng = np.random.default_rng(seed)
    n = m + 2
    v = np.zeros(n)
    v[rng.choice(n, m, replace=False)] = rng.choice([-1.0, 1.0], m) / np.sqrt(m)
    assert not lone_directions(v[:, None], np.array([0.0])).any()
    assert not lone_carriers(v[:, None], None).any()


def test_no_unresolved_direction_has_no_carrier():
    assert lone_directions(np.zeros((4, 0)), np.zeros(0)).shape == (0,)
    assert not lone_carriers(np.zeros((4, 0)), None).any()
    assert whole_line_notes(["a", "b"], None, None, None) == []


@pytest.fixture(scope="module")
def rotated_ou(models, ou_samples):
    """OU with M = [[−1, 1], [0, −2]] (Σ not diagonal): the free direction −(ΩΣ⁻¹) loads on all
    four entries and rests mostly on M12 and M21."""
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    return M, models["ou2d"], ou_samples(M, 1.0, 20_000, 3)


def test_carriers_of_a_lone_flat_direction_get_the_whole_line(rotated_ou):
    """With τ from the estimates (the default), every parameter loading ≥ 0.1 on the free
    direction gets the whole line — M11 = −(DΣ⁻¹)₁₁ − ω(Σ⁻¹)₂₁ takes any value as the invisible
    rotation ω does — keeps 'only in combination' where it loads < 0.5, and each stated
    combination covers its truth (exact samples); the summary says why."""
    M, model, X = rotated_ou
    fit = ds.fit_global(model, X, features=ds.Features(seed=0))
    rep = fit.report
    assert rep.rank == 3
    loads = rep.loading >= LONE_LOADING
    assert loads.all()
    assert np.isinf(fit.conf_int()).all()
    for j, status in enumerate(rep.status):
        assert status == (COMBINATION if rep.loading[j] < 0.5 else "not identifiable")
        lo, hi = rep.combination_ci[j]
        if np.isfinite(lo):
            value = rep.resolution[j] @ M.ravel() / rep.resolution[j, j]
            assert lo <= value <= hi
    assert any(np.isfinite(rep.combination_ci[:, 0]))
    text = fit.summary()
    assert "which rests on one or two parameters" in text
    assert "(M11, M21, M22) get the whole line" in text or "(M11, M12, M21, M22)" in text


def test_a_given_prior_scale_keeps_the_lone_directions_carriers_finite(rotated_ou):
    """A prior_scale given from knowledge bounds the component the data leave open: the rule is
    for the maximum-likelihood τ of the other estimates only, and the intervals stay finite where
    the loading is below 0.5 and cover the truth."""
    M, model, X = rotated_ou
    fit = ds.fit_global(model, X, features=ds.Features(seed=0), solver=ds.Solver(prior_scale=2.0))
    ci = fit.conf_int()
    fin = fit.report.loading < 0.5
    assert np.isfinite(ci[fin]).all() and fin.sum() >= 2
    truth = M.ravel()
    assert np.all((ci[fin, 0] <= truth[fin]) & (truth[fin] <= ci[fin, 1]))
    assert "which rests on one or two parameters" not in fit.summary()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_loadings_on_a_lone_direction_are_sized_at_ten_tau(models, ou_samples, seed):
    """OU with M12 = 10 against entries of size 1 (from the review of the rule): the free
    direction rests on M12, M11 and M22 load just under 0.1 and M21 0.02 — all τ-sized before,
    with 99 % intervals excluding the truth (M21: [0.08, 0.31] around 0).  Sized at
    LONE_TAU·τ, every finite 99 % interval covers (exact stationary samples)."""
    M = np.array([[-1.0, 10.0], [0.0, -1.0]])
    fit = ds.fit_global(
        models["ou2d"], ou_samples(M, 1.0, 10_000, seed), features=ds.Features(seed=seed)
    )
    ci = fit.conf_int(level=0.99)
    fin = np.isfinite(ci).all(axis=1)
    truth = M.ravel()
    assert fin.sum() >= 2
    assert np.all((ci[fin, 0] <= truth[fin]) & (truth[fin] <= ci[fin, 1])), ci


def test_lone_widening_is_zero_off_the_lone_directions_and_grows_with_the_loading():
    from dynosed_sym.solve.flat import LONE_TAU, lone_widening

    v = np.array([[0.99], [0.05], [0.0], [0.12]])
    w = lone_widening(v, 2.0)
    assert w[0] == 0.0 and w[3] == 0.0  # carriers (≥ 0.1) get the whole line instead
    assert w[2] == 0.0
    assert w[1] == pytest.approx(0.05 * 2.0 * np.sqrt(LONE_TAU**2 - 1))
    assert not lone_widening(np.zeros((4, 0)), 1.0).any()


def test_records_call_a_whole_line_parameter_not_identifiable(rotated_ou):
    """to_dataframe / to_dict said identifiable True for a lone direction's carrier whose
    interval is the whole line (the review); now the flag reads the interval too."""
    M, model, X = rotated_ou
    fit = ds.fit_global(model, X, features=ds.Features(seed=0))
    df = fit.to_dataframe()
    assert not df["identifiable"].any()
    assert not any(p["identifiable"] for p in fit.to_dict()["parameters"])
