"""B-cell GRN on the reference paper's protocol (supplement): 2048 chains, burn-in 30,000 steps
of dt = 0.01, thinning 10, N = 50,000, m = 2048, median bandwidth, λ = 1e-6.

The paper reports most entries of W recovered closely and one, W[1,6] (last of the second row),
clearly misestimated and lying in a weakly constrained (high-freeness) direction.
"""

import re

import numpy as np
import pytest

import dynosed_sym as ds


def _protocol_data(model, seed):
    return ds.simulate(
        model, model.nominal, 50_000, dt=0.01, burn_in=30_000, thin=10, n_chains=2048, seed=seed
    )


def _protocol_fit(model, X, statistic=None):
    return ds.fit_global(
        model,
        X,
        features=ds.Features(n_features=2048, bandwidth="median", seed=0),
        solver=ds.Solver(lam=1e-6, statistic=statistic),
    )


@pytest.fixture(scope="module")
def grn_data(models):
    model = models["grn_bcell"]
    return model, [_protocol_data(model, seed) for seed in (0, 1, 2)]


@pytest.fixture(scope="module")
def grn_fit(grn_data):
    model, data = grn_data
    return model, _protocol_fit(model, data[0])


@pytest.mark.slow
def test_grn_paper_protocol(grn_fit):
    """The paper's GRN protocol: the tightly constrained entries recovered closely, W[1,6] badly
    and the freeness analysis saying why.  (An open regression while the fill shrank the
    unresolved components by their t — two tight entries off by 0.61–0.70 at rank 15 of 21 —
    closed since the fill keeps the ridge's components, docs/design-statistics.md §8.)"""
    model, fit = grn_fit
    truth = model.nominal
    err = np.abs(fit.theta - truth)
    free = fit.report.freeness_normalised
    names = model.param_names
    k16 = names.index("W[1,6]")
    # tightly constrained entries are recovered closely (entries are 0 or 1)
    tight = free < 0.01
    assert tight.sum() >= 7
    assert err[tight].max() < 0.15
    # the entries the drivers act through: W[0,1], W[0,2], W[2,2] = 1
    for name in ("W[0,1]", "W[0,2]", "W[2,2]"):
        assert err[names.index(name)] < 0.1, name
    # W[1,6] is badly recovered, and the freeness analysis says why
    assert err[k16] > 0.5
    assert free[k16] > 0.5  # a high-freeness (weakly constrained) direction
    assert "W[1,6]" in fit.report.free_params
    assert not fit.report.unique
    assert fit.report.consistent


@pytest.mark.slow
def test_grn_honest_intervals_no_false_interaction(grn_data, grn_fit):
    """Issue 13, data seeds 0–2: the finite 95 % intervals cover the truth in ≥ 90 % of cases and
    W[1,5] (truth 0) is not reported as a non-zero interaction; where it is determined only in
    combination, that combination is named."""
    model, data = grn_data
    truth = np.array(model.nominal)
    names = model.param_names
    k15 = names.index("W[1,5]")
    covered = finite = 0
    fits = [grn_fit[1]] + [_protocol_fit(model, X) for X in data[1:]]
    for fit in fits:
        ci = fit.conf_int()
        ok = np.isfinite(ci[:, 0])
        finite += int(ok.sum())
        covered += int((ok & (ci[:, 0] <= truth) & (truth <= ci[:, 1])).sum())
        assert ci[k15, 0] <= 0.0 <= ci[k15, 1], ci[k15]
        if fit.report.status[k15] == "only in combination":  # the combination, or why none
            assert re.search(
                r"W\[1,5\] is determined only in combination(: W\[1,5\] | with the unresolved)",
                fit.summary(),
            )
    print(f"\nGRN seeds 0–2: finite 95 % intervals cover {covered}/{finite}")
    assert covered >= 0.9 * finite


@pytest.mark.slow
def test_grn_false_interaction_cause_is_ridge_bias_via_unresolved_directions(grn_data):
    """The cause of the old false interaction: the V-statistic ridge fit (statistic="v") excludes 0
    for W[1,5], and most of its error is the ridge bias −λ Σ_(i unresolved) v_i v_iᵀθ*/(σ_i² + λ)
    that the variance-only interval cannot see."""
    model, data = grn_data
    truth = np.array(model.nominal)
    k15 = model.param_names.index("W[1,5]")
    fit = _protocol_fit(model, data[0], statistic="v")
    lo, hi = fit.report.ci[k15]
    assert lo > 0 or hi < 0  # the false interaction of issue 13
    rep = fit.report
    unresolved = rep.null_vectors  # (n, n − rank), in the order of the singular values
    mask = rep.direction_t > rep.resolve_threshold  # the report's rule (solve/directions.py)
    assert mask.sum() == rep.rank
    sv = rep.singular_values[~mask]
    ridge_bias = -(unresolved * (1e-6 / (sv**2 + 1e-6))) @ (unresolved.T @ truth)
    error = fit.theta[k15] - truth[k15]
    assert abs(ridge_bias[k15]) > 0.5 * abs(error) and np.sign(ridge_bias[k15]) == np.sign(error)
