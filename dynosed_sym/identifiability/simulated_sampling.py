"""Where the simulation check's samples come from: the compiled simulator with a
:class:`~dynosed_sym.simulation.Simulation` (independent snapshots by default), a user's
``sampler=``, or given ``samples=`` — and a check that they can be a stationary law of the
nominal θ.

Why independent snapshots.  It predicts what a fit on N cells will find.  Cells of a
snapshot are independent draws from the stationary law; N records of 2048 chains thinned every
0.1 time units are not (records of one chain are correlated over the relaxation time), so their
noise is that of fewer samples and the predicted errors at N were pessimistic (repressilator,
N = 10⁴: se 0.093 from the chains, 0.046 from independent samples).  One chain per sample costs
``N·(burn_in + thin)`` steps, about ten times the old default's, measured in
``tests/identifiability/test_simulated_sampling.py`` and docs/identifiability.md.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np

from ..data.arrays import as_samples
from ..data.blocks import block_edges
from ..errors import DataError, StepSizeWarning
from ..options import Execution
from ..simulation.settings import INDEPENDENT, Simulation
from ..simulation.simulate import simulate, snapshot_at
from ..simulation.stationarity import check_stationarity, enforce_stationary
from .options import MIN_STUDY_SAMPLES

__all__ = [
    "resolve_simulation",
    "draw_samples",
    "design_sampler",
    "checked_samples",
    "sampler_rows",
]


def resolve_simulation(simulation) -> Simulation:
    """``simulation`` (a Simulation), or the default: independent snapshots."""
    if simulation is None:
        return INDEPENDENT
    if not isinstance(simulation, Simulation):
        raise DataError(
            "simulation: expected a dynosed_sym.simulation.Simulation (dt, burn_in, thin, "
            f"n_chains, x0), got {type(simulation).__name__}"
        )
    return simulation


def checked_samples(model, theta, X, what, n_blocks=32):
    """X, after checking that it can be a stationary law of ``model`` at ``theta`` (contiguous
    blocks of rows as the independent groups): a StationarityError when it cannot."""
    edges = block_edges(X.shape[0], max(2, int(n_blocks)))
    groups = np.repeat(np.arange(edges.size - 1), np.diff(edges))
    check = check_stationarity(model, theta, X, groups)
    enforce_stationary(
        check,
        f"{what} at the nominal parameters",
        "The simulation check needs samples of the stationary law at the nominal θ: check the "
        "nominal values and the samples",
        fail=("diverging", "not stationary"),
    )
    return X


def draw_samples(model, theta, n_samples, seed, simulation, samples, sampler, ex):
    """(X, description): the simulation check's samples and the words the report uses for them."""
    if samples is not None:
        # (fewer than 2 noise blocks left the directions unfollowed: str(check) was a TypeError)
        X = as_samples(samples, model, "samples", min_samples=MIN_STUDY_SAMPLES)
        return checked_samples(model, theta, X, "samples=", ex.n_blocks), (
            f"{X.shape[0]:,} given samples (samples=)"
        )
    if sampler is not None:
        X = sampler_rows(sampler({}, theta, int(n_samples), seed), model, int(n_samples))
        return checked_samples(model, theta, X, "sampler=", ex.n_blocks), (
            f"{X.shape[0]:,} samples from sampler="
        )
    sim = resolve_simulation(simulation)
    with _study_settings("check_identifiability: the simulation check's samples"):
        X = simulate(
            model,
            theta,
            int(n_samples),
            seed=seed,
            execution=Execution(progress=ex.progress, out_dir=ex.out_dir),
            **sim.keywords(n_samples),
        )
    return X, sim.describe(n_samples)


def sampler_rows(X, model, n, where=""):
    """What a ``sampler=`` returned, as (n, d) samples, or a DataError: it must return the n rows
    it was asked for (5 rows for n = 300 were taken as the whole study, and a report of fewer
    than 2 noise blocks could not be printed)."""
    X = as_samples(X, model, f"sampler{where}", min_samples=1)
    if X.shape[0] != n:
        raise DataError(
            f"sampler{where}: returned {X.shape[0]:,} samples when asked for n = {n:,}; a sampler "
            "must return n rows (n, d)"
        )
    return X


@contextmanager
def _study_settings(what):
    """A :class:`StationarityError` of the simulator (or its DataError: no start state inside the
    model's domain), told where its settings come from here: the simulator's message says
    "pass x0=", which a study or a design takes through its
    :class:`~dynosed_sym.simulation.Simulation` (a population model's chains started from the
    default N(0, I) can leave its domain at once: May–Leonard competition's did).  The simulator's
    :class:`~dynosed_sym.errors.StepSizeWarning` is told the same; other warnings pass as they
    were."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except DataError as exc:  # a StationarityError, or no start inside the model's domain
            _restated(exc, what)
    for w in caught:  # the step size's warning told where dt is set here; the others as they were
        text = str(w.message)
        if issubclass(w.category, StepSizeWarning):
            text = f"{what}: {text} — here the step is set by {_STUDY_SETTING}"
        warnings.warn_explicit(text, w.category, w.filename, w.lineno, source=w.source)


_STUDY_SETTING = (
    "check_identifiability(..., study=Study(simulation=ds.Simulation(x0=..., dt=..., burn_in=...)))"
)


def _restated(exc, what):
    """Raise ``exc`` again, told where the simulation's settings come from when it names them."""
    if "x0=" not in str(exc) and "reduce dt" not in str(exc):  # (a CIR-type step below 0)
        raise exc
    raise type(exc)(
        f"{what}: {exc} — here the start, step and burn-in are set by {_STUDY_SETTING}"
    ) from exc


def design_sampler(model, simulation, out_dir=None):
    """``sampler(inputs, theta, n, seed, time=None, initial=None)`` for a design, from the
    compiled simulator with ``simulation`` (stationary snapshots) or
    :func:`~dynosed_sym.simulation.simulate.snapshot_at` (a snapshot at a time)."""
    sim = resolve_simulation(simulation)

    def sample(inputs, theta, n, seed, time=None, initial=None):
        if time is None:
            with _study_settings("check_identifiability: the design's stationary samples"):
                return simulate(
                    model,
                    theta,
                    n,
                    inputs=inputs,
                    seed=seed,
                    execution=Execution(out_dir=out_dir),
                    **sim.keywords(n),
                )
        # one time: simulate_time_course would build a TimeCourse, which needs two
        return snapshot_at(
            model,
            theta,
            time,
            n,
            initial=initial,
            inputs=inputs,
            dt=sim.dt,
            seed=seed,
            out_dir=out_dir,
        )

    sample.description = sim.describe
    return sample
