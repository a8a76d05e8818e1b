"""B-cell GRN on the reference paper's protocol (supplement): 2048 chains, burn-in 30,000 steps
of dt = 0.01, thinning 10, N = 50,000, m = 2048, median bandwidth, λ = 1e-6.

The paper reports most entries of W recovered closely and one, W[1,6] (last of the second row),
clearly misestimated and lying in a weakly constrained (high-freeness) direction.
"""

import numpy as np
import pytest

import dynosed_sym as ds


@pytest.fixture(scope="module")
def grn_fit(models):
    model = models["grn_bcell"]
    X = ds.simulate(
        model, model.nominal, 50_000, dt=0.01, burn_in=30_000, thin=10, n_chains=2048, seed=0
    )
    return model, ds.fit_global(model, X, n_features=2048, bandwidth="median", lam=1e-6, seed=0)


@pytest.mark.slow
def test_grn_paper_protocol(grn_fit):
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
