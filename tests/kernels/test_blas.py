"""The solve's BLAS thread limit (dynosed_sym.kernels.blas): one BLAS thread inside the solve by
default, DYNOSED_BLAS_THREADS to change it, a clear error for a bad value."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import dynosed_sym as ds
from dynosed_sym.kernels import blas as threads
from dynosed_sym.kernels.blas import single_blas


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_the_solve_runs_with_the_configured_number_of_blas_threads(monkeypatch):
    seen = []

    @single_blas
    def probe():
        seen.append(_blas_threads())
        return inner()

    @single_blas
    def inner():  # nested: the outer limit holds
        seen.append(_blas_threads())

    probe()
    assert seen and all(n == [1] * len(n) for n in seen)
    monkeypatch.setenv(threads.ENV, "2")
    seen.clear()
    probe()
    assert all(all(k <= 2 for k in n) for n in seen)


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_names_the_variable(monkeypatch, bad):
    monkeypatch.setenv(threads.ENV, bad)
    from dynosed_sym.solve.ustat import solve_system

    with pytest.raises(ds.DynosedError, match=threads.ENV):
        solve_system(np.eye(2), np.ones(2))


def test_the_thread_controller_is_kept_until_a_module_is_imported(monkeypatch):
    """The library scan runs once, not per solve; a new import (a new BLAS may come with it)
    makes a fresh controller, which still limits the solve."""
    import sys
    import types

    first = threads._controller()
    assert threads._controller() is first
    monkeypatch.setitem(sys.modules, "dynosed_test_new_extension", types.ModuleType("x"))
    second = threads._controller()
    assert second is not first and threads._controller() is second

    @single_blas
    def probe():
        return _blas_threads()

    n = probe()
    assert n and all(k == 1 for k in n)


@pytest.mark.parametrize("route", ["global", "local"])
def test_the_whole_fit_runs_with_the_limit(models, monkeypatch, route):
    """The stationarity check after the solve (small BLAS products of its own) runs under the
    same limit as the solve, in both routes; outside the fit the limit is lifted again."""
    from dynosed_sym.routes import global_route, local_route

    module = global_route if route == "global" else local_route
    seen = []
    real = module.flag_stationarity

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "flag_stationarity", spy)
    model = models["ou2d"]
    X = ds.simulate(model, model.nominal, 2000, seed=3, burn_in=300)
    before = _blas_threads()
    if route == "global":
        ds.fit_global(model, X, features=ds.Features(n_features=64))
    else:
        ds.fit_local(model, X, ds.choose_probes(X, 6, seed=1))
    assert seen and all(n == [1] * len(n) for n in seen)
    assert _blas_threads() == before


@pytest.mark.parametrize("route", ["global", "local"])
def test_the_limit_adds_no_frame_between_a_fit_and_its_caller(models, route):
    """The fits' warnings name the caller's line by a fixed stacklevel; a decorator's frame took
    it (the demo's stationarity warnings read "solve/threads.py:89", this module's old home):
    the limit is a with-block."""
    model = models["ou2d"]
    X = ds.simulate(model, model.nominal, 2000, seed=3, burn_in=300)
    with pytest.warns(FutureWarning) as rec:
        if route == "global":
            ds.fit_global(model, X, n_features=64)  # a moved keyword: a FutureWarning
        else:
            ds.fit_local(model, X, ds.choose_probes(X, 4, seed=1), temperature=49.0)
    assert {w.filename for w in rec} == {__file__}


def test_check_stationarity_on_its_own_runs_with_the_limit(models, monkeypatch):
    """Called on its own (not from a fit), the check limits BLAS too: its covariance and
    products are small, and two BLAS threads against a busy core cost seconds."""
    from dynosed_sym.simulation import stationarity

    seen = []
    real = stationarity._check_stationarity

    def spy(*args):
        seen.append(_blas_threads())
        return real(*args)

    monkeypatch.setattr(stationarity, "_check_stationarity", spy)
    model = models["ou2d"]
    X = ds.simulate(model, model.nominal, 500, seed=3, burn_in=300)
    monkeypatch.setenv(threads.ENV, "1")
    before = _blas_threads()
    check = ds.check_stationarity(model, model.nominal, X)
    assert check.verdict == "stationary" and seen and all(n == [1] * len(n) for n in seen)
    assert _blas_threads() == before
