"""The variance balance opens a flat direction the scale τ cannot size (``solve/flat.py``
:func:`balance_rescues`, wired through ``routes/stationarity.py`` :func:`data_balance`).

A named case found by the calibration sweep's scan (van der Pol, local route, N = 2000, the
sweep's data set 1): the resolved estimate is ≈ 0 along a flat direction that carries the
drift's size, τ from the identified estimates is ≈ 0.19, and the truth's component along that
direction is ≈ 1.5.  Oracle: the truth itself — the opening is right exactly when the truth's
component lies beyond the ±2τ the intervals would otherwise assume.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynosed_sym as ds
import dynosed_sym.routes.local_route as local_route
from dynosed_sym.apps.bench import calibration_families as cf
from dynosed_sym.apps.bench.calibration_data import load_dataset
from dynosed_sym.apps.bench.calibration_sweep import LOCAL_OPTIONS, _probes
from dynosed_sym.options import option_objects

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vdp_case(tmp_path_factory):
    model, truth, prot = cf.family("vdp")
    X = load_dataset("vdp", model, truth, prot, 1, 2000, tmp_path_factory.mktemp("vdp"))
    return model, np.asarray(truth, dtype=float), X, _probes(X, prot, 1)


def _fit(model, X, probes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.fit_local(model, X, probes, **option_objects("fit_local", {}, LOCAL_OPTIONS))


def test_the_balance_opens_the_direction_whose_truth_tau_cannot_size(vdp_case, monkeypatch):
    model, truth, X, probes = vdp_case
    fit = _fit(model, X, probes)
    rep = fit.report
    notes = [n for n in rep.notes if n.startswith("the data's variance balance")]
    assert len(notes) == 1
    tau = float(np.max(rep.prior_scale))
    # the opened direction: the unresolved one the note names; its carriers are the whole line
    (u,) = [v for v in rep.null_vectors.T if abs(v @ truth) > 0]
    carriers = np.abs(u) > 1e-8
    assert np.isinf(rep.ci[carriers]).all()
    # the oracle: the truth's component along it is beyond ±2τ — τ could not size it
    assert abs(u @ truth) > 2 * tau
    # without the balance the same fit gave those carriers finite intervals sized by τ
    monkeypatch.setattr(local_route, "data_balance", lambda *a, **k: None)
    plain = _fit(model, X, probes).report
    assert np.isfinite(plain.ci[carriers]).any()
    assert not any(n.startswith("the data's variance balance") for n in plain.notes)


def test_data_restricted_to_balls_are_not_read_as_a_stationary_snapshot(vdp_case, monkeypatch):
    """Balls: the data are restricted to regions, whose moments are not the law's — the fit does
    not ask for the balance; probes as an array (the whole snapshot) do."""
    model, truth, X, probes = vdp_case
    asked = []
    real = local_route.data_balance

    def recorder(*args, **kwargs):
        asked.append(args[1].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(local_route, "data_balance", recorder)
    balls = ds.Balls(probes, radius=1.5)
    _fit(model, balls.restrict(X), balls)
    assert asked == []
    _fit(model, X, probes)
    assert asked == [X.shape[0]]
