"""check_identifiability's option objects (Study, Experiment, and the fits' Features, Scores,
Solver, Execution): the flat keywords of earlier versions build the same objects (with a
FutureWarning) and give the same check bit for bit; bad fields are refused where the object is
built; at most 12 parameters; DesignCheck is exported and is what an experiment returns."""

from __future__ import annotations

import inspect
import typing
import warnings

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym import Execution, Experiment, Features, Solver, Study
from dynosed_sym.errors import DataError


def _same_check(a, b):
    assert np.array_equal(a.std_errors, b.std_errors, equal_nan=True)
    assert np.array_equal(a.n_required, b.n_required)
    assert np.array_equal(a.direction_sv, b.direction_sv)
    assert a.direction_verdict == b.direction_verdict and a.notes == b.notes


def test_flat_keywords_and_option_objects_give_the_same_check(models):
    model = models["ou2d"]
    with pytest.warns(FutureWarning, match=r"check_identifiability: the keywords .* study=Study"):
        old = ds.check_identifiability(
            model, n_samples=2000, seed=3, rel_error=0.2, n_features=96, lam=1e-5, n_blocks=16
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = ds.check_identifiability(
            model,
            study=Study(n_samples=2000, seed=3, rel_error=0.2),
            features=Features(n_features=96),
            solver=Solver(lam=1e-5),
            execution=Execution(n_blocks=16),
        )
    _same_check(old, new)
    assert new.rel_error == 0.2


def test_the_study_seeds_the_features(models):
    with pytest.raises(DataError, match=r"seeded by the study: pass study=Study\(seed=4\)"):
        ds.check_identifiability(models["ou2d"], features=Features(seed=4))


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Study(n_samples=8), r"^Study\.n_samples must be at least 16, got 8$"),
        (lambda: Study(level=1.0), r"^Study\.level must be between 0 and 1"),
        (lambda: Study(rel_error=0.0), r"^Study\.rel_error must be positive"),
        (lambda: Study(seed=-1), r"^Study\.seed must be at least 0"),
        (lambda: Study(sampler=np.zeros(3)), r"^Study\.sampler must be callable, got ndarray"),
        (lambda: Experiment(advise="yes"), r"^Experiment\.advise must be True or False"),
        # a repeated time merged two snapshots: "1 snapshot(s)" at check time
        (lambda: Experiment(times=[0.5, 0.5]), r"^Experiment\.times: time 0\.5 is given twice"),
        (lambda: Experiment(times=[0.0, np.nan]), r"^Experiment\.times: time nan \(entry 1\) is"),
        (lambda: Experiment(times=[-1.0, 1.0]), r"^Experiment\.times: time -1 \(entry 0\) is not"),
        (lambda: Experiment(times=[1.0]), r"^Experiment\.times: at least 2 snapshot times needed"),
        (
            lambda: Experiment(times={"kd": [0, 1, 1]}),
            r"^Experiment\.times\['kd'\]: time 1 is given twice",
        ),
    ],
)
def test_a_bad_field_is_refused_when_the_object_is_built(build, match):
    with pytest.raises(DataError, match=match):
        build()


def _stationary_only(inputs, theta, n, seed):  # (no time, initial: not for a time course)
    return np.random.default_rng(seed).standard_normal((n, 2))


def test_a_sampler_with_another_signature_is_refused_up_front(models):
    """A sampler that cannot take (inputs, theta, n, seed) raised its own TypeError from inside
    the check ("f() takes 3 positional arguments but 4 were given"); one without time, initial
    did so in a time-course design, after the structural check."""

    def f(theta, n, seed):
        raise AssertionError("called")

    expected = r"; expected sampler\(inputs, theta, n, seed, time=None, initial=None\) -> \(n, d\)"
    for sampler, shown in ((f, r"f\(theta, n, seed\)"), (lambda n: n, r"<lambda>\(n\)")):
        with pytest.raises(DataError, match=rf"^Study\.sampler: {shown} cannot be called as "):
            Study(sampler=sampler)
    with pytest.raises(DataError, match=r"\(too many positional arguments\)" + expected):
        Study(sampler=f)
    study = Study(sampler=_stationary_only, n_samples=500)  # (right for a stationary snapshot)
    times = ds.Experiment(times=[0.0, 0.5, 1.0], initial=(np.ones(2), np.eye(2)), advise=False)
    with pytest.raises(
        DataError,
        match=r"^Study\.sampler: _stationary_only\(inputs, theta, n, seed\) cannot be called as "
        r"sampler\(inputs, theta, n, seed, time, initial\), as a time-course design draws its "
        r"snapshots \(too many positional arguments\)" + expected,
    ):
        ds.check_identifiability(models["ou2d"], experiment=times, study=study)


def test_an_experiment_returns_a_design_check(models):
    """A model with inputs: the structural design verdict, as the exported DesignCheck."""
    import sympy as sp

    x, a, s = sp.symbols("x a s", real=True)
    model = ds.SDEModel([x], [a], [-a * x + s], diffusion=1.0, inputs=[s], name="ou_input")
    check = ds.check_identifiability(
        model, [1.0], simulate=False, experiment=Experiment(inputs={"s": 0.5}, advise=False)
    )
    assert isinstance(check, ds.DesignCheck)
    hint = typing.get_type_hints(ds.check_identifiability)["return"]
    assert ds.DesignCheck in typing.get_args(hint) and ds.IdentifiabilityCheck in typing.get_args(
        hint
    )


def test_check_identifiability_takes_at_most_12_parameters():
    assert len(inspect.signature(ds.check_identifiability).parameters) <= 12


def test_arguments_the_check_would_ignore_or_misread(models):
    """structural_check(use_nominal="no") was read as True (a truth value), and probes= or
    scores= on the global route were ignored without a word."""
    m = models["ou2d"]
    with pytest.raises(ds.DataError, match="use_nominal must be True or False, got 'no'"):
        ds.structural_check(m, use_nominal="no")
    with pytest.raises(ds.DataError, match="probes= are the local route's probe points"):
        ds.structural_check(m, probes=3)
    with pytest.raises(ds.DataError, match="probes= belong to the local route"):
        ds.check_identifiability(m, probes=3, simulate=False)
    with pytest.raises(ds.DataError, match="scores= belong to the local route"):
        ds.check_identifiability(m, scores=ds.Scores(temperature=2.0), simulate=False)
    assert ds.structural_check(m, use_nominal=np.bool_(False)).rank == 4  # (θ-free part only)
    assert ds.structural_check(m, route="local", probes=5).rank == 3
