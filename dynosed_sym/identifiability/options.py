"""What :func:`~dynosed_sym.check_identifiability` studies: small frozen option objects (the
pattern of :mod:`dynosed_sym.options`).

* :class:`Study` — the simulated study: how many samples, the seed, where they come from
  (simulated with :class:`~dynosed_sym.Simulation` settings, given, or drawn by a sampler), and
  the target of the predicted sample sizes;
* :class:`Experiment` — several environments or snapshot times (docs/designs.md): their inputs,
  times, initial law and quadrature order, and whether (and among what) to advise an extra one.

The kernel, the scores and the solve are those of the fits (:class:`~dynosed_sym.Features`,
:class:`~dynosed_sym.Scores`, :class:`~dynosed_sym.Solver`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from .. import arguments

__all__ = ["Study", "Experiment", "MIN_STUDY_SAMPLES", "check_sampler_signature", "check_times"]

#: Fewest samples of a simulation check (Study.n_samples, given samples=): the directions are
#: followed over nested subsets of at least 2 noise blocks of 4 rows or more.
MIN_STUDY_SAMPLES = 16

#: The call a ``sampler=`` must accept (a stationary snapshot: the first four, by position).
SAMPLER_SIGNATURE = "sampler(inputs, theta, n, seed, time=None, initial=None) -> (n, d) samples"


@dataclass(frozen=True)
class Study:
    """The simulated study of :func:`~dynosed_sym.check_identifiability`.

    Parameters
    ----------
    n_samples : int
        Samples of the study (default 20,000; at least 16).
    seed : int
        Seeds the simulation, the random features and the structural check's probe points.
    rel_error : float
        Target relative error per parameter for :attr:`IdentifiabilityCheck.n_required`: a
        fraction of |θ|, at most 1 (0.1 for an interval of half-width ±10 %).
    level : float
        Confidence level of that target (default 0.95).
    simulation : Simulation, optional
        How the snapshots are simulated (:class:`dynosed_sym.simulation.Simulation`: ``dt``,
        ``burn_in``, ``thin``, ``n_chains``, ``x0``).  Default
        ``Simulation(n_chains="independent")``: ``n_samples`` *independent* snapshots, one chain
        each after a burn-in of 50 time units, so the predicted errors at N are those of N
        independent cells.  The nominal parameters must give a stationary law (a
        :class:`~dynosed_sym.errors.StationarityError` when the chains diverge).
    samples : (N, d) array, optional
        Use these samples (e.g. an exact sampler's) instead of simulating.  Rows should be ordered
        so that contiguous blocks are independent.  They are checked for a stationary law of the
        nominal θ (a StationarityError when they cannot be one).
    sampler : callable, optional
        ``sampler(inputs, theta, n, seed, time=None, initial=None) -> (n, d)`` samples of one
        snapshot at the nominal θ (e.g. an exact law), instead of the compiled simulator; for a
        model without inputs it is called with ``inputs={}`` (checked like ``samples``).  Its
        signature is checked when the Study is built: it must take the first four arguments by
        position (a time-course design also passes ``time`` and ``initial`` by position, checked
        before the design's structural check); a sampler that cannot be called so is a
        DataError naming ``Study.sampler`` and the expected call (it was the sampler's own
        TypeError from inside the check).

    Examples
    --------
    >>> Study(n_samples=5000, rel_error=0.05)
    Study(n_samples=5000, seed=0, rel_error=0.05, level=0.95, simulation=None, samples=None,
          sampler=None)
    >>> Study(level=95)
    Traceback (most recent call last):
    ...
    dynosed_sym.errors.DataError: Study.level must be between 0 and 1 (exclusive), ...
    """

    n_samples: int = 20_000
    seed: int = 0
    rel_error: float = 0.1
    level: float = 0.95
    simulation: object = None
    samples: object = None
    sampler: object = None

    def __post_init__(self):
        arguments.check_field(self, "n_samples", arguments.integer, minimum=MIN_STUDY_SAMPLES)
        arguments.check_field(self, "seed", arguments.seed)
        arguments.check_field(self, "rel_error", arguments.relative_error)
        arguments.check_field(self, "level", arguments.level)
        if self.sampler is not None and not callable(self.sampler):
            raise arguments.DataError(
                f"Study.sampler must be callable, got {type(self.sampler).__name__}"
            )
        if self.sampler is not None:
            check_sampler_signature(self.sampler)
        _one_source(self)


def _one_source(study):
    """A Study's samples come from one place: ``simulation=`` must be a Simulation, and of
    ``samples=``, ``sampler=`` and ``simulation=`` one at most is given (the check used the first
    of samples, sampler, simulation and ignored the others without a word)."""
    from ..simulation.settings import Simulation

    if study.simulation is not None and not isinstance(study.simulation, Simulation):
        raise arguments.DataError(
            "Study.simulation must be a dynosed_sym.Simulation (dt, burn_in, thin, n_chains, "
            f"x0) or None, got {type(study.simulation).__name__} {study.simulation!r}"
        )
    given = [k for k in ("samples", "sampler", "simulation") if getattr(study, k) is not None]
    if len(given) > 1:
        raise arguments.DataError(
            f"Study: {given[0]}= and {given[1]}= are both given: the check takes its samples "
            f"from {given[0]}= and would ignore {given[1]}=; give one of them"
        )


@dataclass(frozen=True)
class Experiment:
    """Several environments or snapshot times (docs/designs.md) for the identifiability check.

    Parameters
    ----------
    inputs : dict, optional
        ``{environment: {input: value}}`` — several stationary environments with shared
        parameters (env parameters one value each) — or one environment's ``{input: value}``.
    times : sequence of float or dict, optional
        Snapshot times of a time course (every environment, or ``{environment: times}``): at
        least 2 finite times ≥ 0, each given once (checked when the object is built).
    initial : (mean, covariance), (N0, d) samples, or dict, optional
        The law at t = 0 of a time course (per environment as a dict).
    order : int, optional
        Quadrature order of time courses (as :func:`dynosed_sym.fit_global`).
    advise : bool
        Advice: which extra environment resolves the unresolved directions (and how many samples
        it needs), which extra snapshot time helps a time course most (default True).
    candidates : list of dict, optional
        Candidate environments' inputs for the advice (default: each input alone at 0.1, 0.3, 3
        and 10 times its current value).
    candidate_times : list or dict, optional
        Candidate snapshot times (default: midpoints of the largest intervals).

    Examples
    --------
    >>> Experiment(inputs={"wt": {"s": 1.0}, "kd": {"s": 0.1}}, advise=False).advise
    False
    """

    inputs: object = None
    times: object = None
    initial: object = None
    order: int | None = None
    advise: bool = True
    candidates: object = None
    candidate_times: object = None

    def __post_init__(self):
        arguments.check_field(self, "advise", arguments.flag)
        arguments.check_field(self, "times", _experiment_times)
        arguments.check_field(self, "order", _order)
        arguments.check_field(self, "candidates", _candidates)
        arguments.check_field(self, "candidate_times", _candidate_times)


def _order(value, name):
    """None or the quadrature order of time courses, 2, 3 or 4 (as fit_global's ``order=``)."""
    if value is None:
        return None
    order = arguments.integer(value, name, minimum=2)
    if order > 4:
        raise arguments.DataError(f"{name} must be 2, 3 or 4, got {order}")
    return order


def _candidates(value, name):
    """None or a list of candidate environments' ``{input: value}`` dicts (which inputs the
    model has, the advice checks)."""
    if value is None:
        return None
    if isinstance(value, dict) or not isinstance(value, (list, tuple)):
        one = " (for one candidate, a list of one dict: [{...}])" if isinstance(value, dict) else ""
        raise arguments.DataError(
            f"{name} must be a list of candidate environments' inputs, [{{input: value}}, ...], "
            f"got {type(value).__name__} {value!r}{one}"
        )
    for i, cand in enumerate(value):
        if not isinstance(cand, dict):
            raise arguments.DataError(
                f"{name}[{i}] must be a dict {{input: value}}, got {type(cand).__name__} {cand!r}"
            )
    return value


def _candidate_times(value, name):
    """None, candidate snapshot times (finite, ≥ 0, each once) or ``{environment: times}``."""
    if value is None:
        return None
    if isinstance(value, dict):
        for env, ts in value.items():
            arguments.snapshot_times(ts, f"{name}[{env!r}]")
        return value
    arguments.snapshot_times(value, name)
    return value


def _experiment_times(value, name):
    """None, snapshot times (:func:`check_times`) or ``{environment: times}``; which
    environments exist the check sees (``inputs=``)."""
    if value is None:
        return None
    if isinstance(value, dict):
        for env, ts in value.items():
            check_times(ts, f"{name}[{env!r}]")
    else:
        check_times(value, name)
    return value


def check_times(values, name):
    """``values`` as (K,) snapshot times: at least 2, finite, ≥ 0 and each given once; else a
    DataError naming ``name`` (a repeated time would merge two snapshots into one)."""
    return arguments.snapshot_times(values, name, minimum=2)


def check_sampler_signature(sampler, time_course=False, name="Study.sampler"):
    """DataError unless ``sampler`` can be called as the check calls it: with ``(inputs, theta,
    n, seed)`` by position, and for a time course also ``time, initial`` (inspect's binding, no
    call; a callable without an inspectable signature passes)."""
    try:
        signature = inspect.signature(sampler)
    except (TypeError, ValueError):  # (a builtin or an extension type: its call will tell)
        return
    args = ["inputs", "theta", "n", "seed"] + (["time", "initial"] if time_course else [])
    try:
        signature.bind(*args)
    except TypeError as exc:
        what = getattr(sampler, "__name__", type(sampler).__name__)
        how = ", as a time-course design draws its snapshots" if time_course else ""
        raise arguments.DataError(
            f"{name}: {what}{signature} cannot be called as sampler({', '.join(args)}){how} "
            f"({exc}); expected {SAMPLER_SIGNATURE}, called with its arguments by position"
        ) from None
