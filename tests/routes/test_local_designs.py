"""fit_local on designs (issue 16): probes per environment, time courses with ∂ₜlog p from
neighbouring snapshots."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import (
    OU_M,
    OU_START,
    ou_noise_model,
    ou_stationary_samples,
    ou_time_course,
    ou_transient_law,
)
from scipy.special import logsumexp

import dynosed_sym as ds
from dynosed_sym.data.blocks import block_edges
from dynosed_sym.routes.local_designs import log_kde_jackknife, time_derivative_weights

NOMINAL = OU_M.reshape(-1)
ANGLES = np.linspace(0, 2 * np.pi, 9)[:-1]
RING = np.concatenate(
    [
        [[0.0, 0.0]],
        0.6 * np.c_[np.cos(ANGLES), np.sin(ANGLES)],
        1.2 * np.c_[np.cos(ANGLES + 0.3), np.sin(ANGLES + 0.3)],
    ]
)


def gaussian_fit_score(X, P):
    """Score of the Gaussian with X's mean and covariance (exact in the limit for Gaussian data);
    re-run on every delete-one-block subset by the callable estimator."""
    mu = X.mean(axis=0)
    Si = np.linalg.inv(np.cov(X.T))
    return -(P - mu) @ Si, np.broadcast_to(-Si, (P.shape[0],) + Si.shape).copy()


def test_log_kde_jackknife_against_numpy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(103, 2))
    P = rng.normal(size=(7, 2)) * 1.5
    edges = block_edges(103, 5)
    h = 0.4
    logp, logp_del = log_kde_jackknife(X, P, h, edges)

    def direct(Y):
        d2 = ((P[:, None, :] - Y[None]) ** 2).sum(-1)
        return logsumexp(-0.5 * d2 / h**2, axis=1) - math.log(Y.shape[0] * 2 * math.pi * h * h)

    np.testing.assert_allclose(logp, direct(X), rtol=1e-12)
    for b in range(5):
        keep = np.concatenate([X[: edges[b]], X[edges[b + 1] :]])
        np.testing.assert_allclose(logp_del[b], direct(keep), rtol=1e-12)


def test_three_point_time_derivative_is_exact_for_quadratics():
    t = (0.1, 0.35, 0.5)
    c = time_derivative_weights(*t)
    for a0, a1, a2 in ((1.0, -2.0, 3.0), (0.0, 0.5, -4.0)):
        f = [a0 + a1 * s + a2 * s * s for s in t]
        assert abs(sum(ci * fi for ci, fi in zip(c, f)) - (a1 + 2 * a2 * t[1])) < 1e-12


def test_one_environment_is_the_plain_local_fit():
    model = ou_noise_model("aniso")
    X = ou_stationary_samples(OU_M, np.diag([2.0, 1.0]), 4000, 1)
    P = X[:12]
    plain = ds.fit_local(
        model.with_inputs({"s": 2.0}), X, P, scores=ds.Scores(score="local_gaussian")
    )
    design = ds.fit_local(
        model, {"A": X}, P, inputs={"A": {"s": 2.0}}, scores=ds.Scores(score="local_gaussian")
    )
    assert np.array_equal(plain.theta, design.theta)
    assert np.array_equal(plain.report.std_errors, design.report.std_errors)


def test_two_environments_by_the_local_route():
    model = ou_noise_model("aniso")
    data, probes = {}, {}
    for j, s in enumerate((1.0, 3.0)):
        D = np.diag([s, 1.0])
        X = ou_stationary_samples(OU_M, D, 20_000, 20 + j)
        L = np.linalg.cholesky(np.cov(X.T))
        data[f"s{s:g}"], probes[f"s{s:g}"] = X, RING @ L.T
    inputs = {"s1": {"s": 1.0}, "s3": {"s": 3.0}}
    one = ds.fit_local(
        model,
        data["s1"],
        probes["s1"],
        inputs=inputs["s1"],
        scores=ds.Scores(score=gaussian_fit_score),
    )
    assert one.report.rank == 3
    fit = ds.fit_local(
        model, data, probes, inputs=inputs, scores=ds.Scores(score=gaussian_fit_score)
    )
    assert fit.route == "local" and fit.report.rank == 4 and fit.report.n_groups == 2
    assert np.abs(fit.theta - NOMINAL).max() < 0.06
    assert set(fit.design.residuals) == {"s1", "s3"}
    with pytest.raises(ds.DataError, match="no probes for environment 's3'"):
        ds.fit_local(model, data, {"s1": probes["s1"]}, inputs=inputs)


def test_time_course_by_the_local_route():
    """∂ₜlog p from the neighbours: accurate after the fast initial transient; the early
    snapshots are flagged (and the misspecification test sees their bias)."""
    model = ds.load_model("models/ou2d.py")
    times = np.arange(9) * 0.2
    tc = ds.TimeCourse(ou_time_course(times, 20_000, seed=3))
    probes = {
        t: ou_transient_law(OU_M, 1.0, *OU_START, t)[0]
        + RING @ np.linalg.cholesky(ou_transient_law(OU_M, 1.0, *OU_START, t)[1]).T
        for t in tc.times.tolist()
    }
    late = ds.fit_local(
        model,
        tc,
        probes,
        scores=ds.Scores(
            score=gaussian_fit_score, dlogp_bandwidth=0.25, use_times=[0.6, 0.8, 1.0, 1.2, 1.4]
        ),
        execution=ds.Execution(n_blocks=16),
    )
    assert late.report.rank == 4 and np.abs(late.theta - NOMINAL).max() < 0.08
    assert late.report.n_groups == 7  # snapshots 0.4 … 1.6 enter through ∂ₜlog p
    every = ds.fit_local(
        model,
        tc,
        probes,
        scores=ds.Scores(score=gaussian_fit_score, dlogp_bandwidth=0.25),
        execution=ds.Execution(n_blocks=16),
    )
    assert any("t = 0.2" in n and "fast transient" in n for n in every.design.notes)
    assert every.report.p_value < 0.01
    with pytest.raises(ds.DataError, match="not an interior snapshot time"):
        ds.fit_local(model, tc, probes, scores=ds.Scores(use_times=[0.0]))


def test_a_design_carries_the_environments_smoothing_bias():
    """Kernel scores in two environments: each environment's own fit estimates the kernel's
    smoothing bias (``FitResult.smoothing_bias``); the stacked design adds, per parameter, the
    largest of them to ``bias_sd`` and the intervals (it dropped them before, so a design's
    intervals had no kernel bias at all).  Oracle: the environments fitted one by one with the
    same probes and inputs, their biases mapped to the design's parameters by hand."""
    model = ou_noise_model("aniso")
    data, probes = {}, {}
    for j, s in enumerate((1.0, 3.0)):
        X = ou_stationary_samples(OU_M, np.diag([s, 1.0]), 4000, 40 + j)
        data[f"s{s:g}"], probes[f"s{s:g}"] = X, RING @ np.linalg.cholesky(np.cov(X.T)).T
    inputs = {"s1": {"s": 1.0}, "s3": {"s": 3.0}}
    fit = ds.fit_local(model, data, probes, inputs=inputs)
    largest = np.zeros(len(fit.param_names))
    for env in data:  # (inputs given: one environment is a design of one, its model's n)
        one = ds.fit_local(model, data[env], probes[env], inputs=inputs[env])
        assert one.smoothing_bias is not None and one.smoothing_bias.shape == (model.n,)
        cols = fit.design.columns[env]
        largest[cols] = np.maximum(largest[cols], np.abs(one.smoothing_bias))
    np.testing.assert_allclose(fit.smoothing_bias, largest, rtol=1e-12)
    assert largest.max() > 0
    assert np.all(fit.report.bias_sd >= largest * (1 - 1e-12)), (fit.report.bias_sd, largest)
    note = [n for n in fit.report.notes if n.startswith("kernel smoothing: per parameter")]
    assert len(note) == 1 and f"largest {largest.max():.3g}" in note[0], fit.report.notes


@pytest.mark.slow
def test_a_one_environment_design_keeps_the_smoothing_verdict():
    """The Oregonator's thin cycle at N = 500 (held-out round seven, data set 0): on one
    snapshot the local fit's test rejects while the kernel's bias is far above the standard
    errors, so the verdict is "undetermined" and no interval is finite.  The same data as a
    one-environment design gave INCONSISTENT with four finite intervals about 10⁻³ of the truth
    (the design dropped the environments' smoothing biases); now the same verdict, ratio and
    open intervals as the snapshot."""
    from dynosed_sym.apps.bench.calibration_data import data_seed, draw
    from dynosed_sym.apps.bench.calibration_families import family
    from dynosed_sym.apps.bench.calibration_sweep import _probes

    model, truth, protocol = family("oregonator")
    X = draw(model, truth, protocol, 500, data_seed("oregonator", 0))
    P = _probes(X, protocol, 0)
    single = ds.fit_local(model, X, P)
    design = ds.fit_local(model, {"a": X}, P)
    for fit in (single, design):
        assert fit.report.verdict == "undetermined", fit.summary(truth=truth)
        assert np.isinf(fit.conf_int()).all(), fit.summary(truth=truth)
    assert design.report.misspec_smoothing == pytest.approx(single.report.misspec_smoothing)
