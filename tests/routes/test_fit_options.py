"""The fits' option objects (Features, Scores, Solver, Execution): the flat keywords of earlier
versions build the same objects (with a FutureWarning) and give the same fit bit for bit; bad
fields are refused where the object is built; the signature stays within 12 parameters."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym import Execution, Features, Solver
from dynosed_sym.errors import DataError


def _same_fit(a, b):
    """Bit for bit: θ̂, the system, standard errors and the info record."""
    assert np.array_equal(a.theta, b.theta)
    assert np.array_equal(a.A, b.A) and np.array_equal(a.b, b.b)
    assert np.array_equal(a.report.std_errors, b.report.std_errors, equal_nan=True)
    untimed = [{k: v for k, v in f.info.items() if k != "timings"} for f in (a, b)]
    assert untimed[0] == untimed[1] and a.n_samples == b.n_samples


def _quiet_fit(*args, **kwargs):
    with pytest.warns(FutureWarning, match=r"fit_global: the keywords .* pass "):
        return ds.fit_global(*args, **kwargs)


@pytest.fixture(scope="module")
def ou_data(models):
    model = models["ou2d"]
    return model, ds.simulate(model, model.nominal, 3000, seed=5)


@settings(max_examples=6)
@given(
    m=st.sampled_from([64, 128]),
    seed=st.integers(0, 2**31),
    lam=st.sampled_from([0.0, 1e-6, 1e-3]),
    statistic=st.sampled_from(["u", "v"]),
    n_blocks=st.integers(2, 40),
)
def test_flat_keywords_and_option_objects_give_the_same_fit(
    ou_data, m, seed, lam, statistic, n_blocks
):
    model, X = ou_data
    old = _quiet_fit(
        model, X, n_features=m, seed=seed, lam=lam, statistic=statistic, n_blocks=n_blocks
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new spelling warns of nothing
        new = ds.fit_global(
            model,
            X,
            features=Features(n_features=m, seed=seed),
            solver=Solver(lam=lam, statistic=statistic),
            execution=Execution(n_blocks=n_blocks),
        )
    _same_fit(old, new)
    assert new.info["m"] == m and new.info["seed"] == seed and new.info["lam"] == lam


def test_solver_string_of_earlier_versions_is_the_method(models):
    model = models["ou2d"]
    X = ds.simulate(model, model.nominal, 1500, seed=2)
    old = _quiet_fit(model, X, solver="gradient", n_features=64, n_starts=2)
    new = ds.fit_global(
        model, X, features=Features(n_features=64), solver=Solver(method="gradient", n_starts=2)
    )
    _same_fit(old, new)
    assert new.info["solver"] == "gradient"


def test_defaults_are_the_objects_defaults(ou_data):
    model, X = ou_data
    _same_fit(
        ds.fit_global(model, X, features=Features(n_features=64)),
        ds.fit_global(
            model, X, features=Features(n_features=64), solver=Solver(), execution=Execution()
        ),
    )


def test_a_keyword_next_to_its_object_an_unknown_keyword_and_a_wrong_type(ou_data):
    model, X = ou_data
    with pytest.raises(DataError, match=r"fit_global: lam given both .* solver=Solver\(\.\.\.\)"):
        ds.fit_global(model, X, lam=0.1, solver=Solver())
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_feature'"):
        ds.fit_global(model, X, n_feature=10)
    with pytest.raises(DataError, match=r"features must be a .*Features or None.*dict"):
        ds.fit_global(model, X, features={"n_features": 10})
    with pytest.raises(
        DataError, match=r"^Execution\.n_blocks must be at least 1 for fit_global, got 0: the glo"
    ):
        ds.fit_global(model, X, execution=Execution(n_blocks=0))


def test_n_blocks_messages_say_where_zero_is_allowed():
    """-1 said "at least 0" and 0 "at least 1" (from fit_global): Execution(n_blocks=0) is
    valid (fit_local runs without noise blocks), so each message says which entry needs what."""
    rule = (
        r"the global route and the identifiability checks need at least 1 noise block; "
        r"fit_local also takes 0"
    )
    with pytest.raises(
        DataError, match=r"^Execution\.n_blocks must be at least 0, got -1: " + rule
    ):
        Execution(n_blocks=-1)
    assert Execution(n_blocks=0).n_blocks == 0


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Features(n_features=0), r"^Features\.n_features must be at least 1, got 0$"),
        (lambda: Features(bandwidth=-1.0), r"^Features\.bandwidth must be positive"),
        (lambda: Features(bandwidth="mean"), r"^Features\.bandwidth must be 'auto', 'median' or a"),
        (lambda: Features(seed=-3), r"^Features\.seed must be at least 0"),
        (lambda: Solver(method="newton"), r"^Solver\.method must be one of None, 'linear'"),
        (lambda: Solver(lam=float("inf")), r"^Solver\.lam must be finite"),
        (lambda: Solver(statistic="w"), r"^Solver\.statistic must be one of"),
        (lambda: Solver(estimator="lasso"), r"^Solver\.estimator must be one of"),
        (lambda: Solver(projection=1), r"^Solver\.projection must be True or False"),
        (lambda: Solver(n_starts=0), r"^Solver\.n_starts must be at least 1"),
        (lambda: Solver(max_nfev=2.5), r"^Solver\.max_nfev must be an integer"),
        (lambda: Execution(chunk_rows=0), r"^Execution\.chunk_rows must be at least 1"),
        (lambda: Execution(progress="yes"), r"^Execution\.progress must be True or False"),
        (lambda: Execution(backend="ray"), r"^Execution\.backend must be one of"),
        # the fields checked by the fit before (a wrong value surfaced only at fit time)
        (lambda: Solver(prior_scale=-1), r"^Solver\.prior_scale must be finite and ≥ 0, got -1$"),
        (lambda: Solver(prior_scale=[1.0, np.nan]), r"^Solver\.prior_scale must be finite and"),
        (lambda: Solver(prior_scale={"a": -2.0}), r"^Solver\.prior_scale must be finite and"),
        (lambda: Solver(prior_scale="mle"), r"^Solver\.prior_scale must be 'ml', None, a num"),
        (lambda: Solver(prior_scale=True), r"^Solver\.prior_scale must be 'ml', None, a numb"),
        (lambda: Solver(prior_scale=np.ones((2, 2))), r"array of shape \(2, 2\)$"),
        (lambda: Solver(prior_scale=[1, [2, 3]]), r"^Solver\.prior_scale must be 'ml', None, a n"),
        (lambda: ds.Scores(temperature=-1), r"^Scores\.temperature must be positive, got -1"),
        (lambda: ds.Scores(temperature=np.nan), r"^Scores\.temperature must be finite"),
        (lambda: ds.Scores(temperature="high"), r"^Scores\.temperature must be 'auto' or a pos"),
        (lambda: ds.Scores(radius=0.0), r"^Scores\.radius must be a positive number or one per"),
        (lambda: ds.Scores(radius=[[1.0]]), r"^Scores\.radius must be a positive number or one"),
        (lambda: ds.Scores(degree=1), r"^Scores\.degree must be at least 2, got 1$"),
        (lambda: ds.Scores(degree=2.5), r"^Scores\.degree must be an integer"),
        (lambda: ds.Scores(dlogp_bandwidth=0), r"^Scores\.dlogp_bandwidth must be positive"),
        (lambda: ds.Scores(use_times=[1.0, np.inf]), r"^Scores\.use_times must be finite snap"),
    ],
)
def test_a_bad_field_is_refused_when_the_object_is_built(build, match):
    with pytest.raises(DataError, match=match):
        build()


def test_valid_fields_are_kept_and_what_needs_the_model_is_checked_by_the_fit(ou_data):
    """A number is stored as a float; a per-parameter prior scale is kept as given, and its
    length and names are checked by the fit, which knows the parameters."""
    assert ds.Scores(temperature=np.int64(30)).temperature == 30.0
    assert isinstance(ds.Scores(temperature=30).temperature, float)
    assert ds.Scores(radius=[0.5, 1.0]).radius == [0.5, 1.0]
    assert Solver(prior_scale={"M11": 1.0}).prior_scale == {"M11": 1.0}
    model, X = ou_data
    with pytest.raises(DataError, match=r"^prior_scale: 'a' is not a parameter \(M11, "):
        ds.fit_global(model, X, solver=Solver(prior_scale={"a": 1.0}))
    with pytest.raises(DataError, match=r"^prior_scale: expected one value per parameter \(4\)"):
        ds.fit_global(model, X, solver=Solver(prior_scale=[1.0, 2.0]))


def test_objects_are_frozen_and_varied_by_replace():
    s = Solver(lam=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.lam = 1.0
    assert dataclasses.replace(s, n_starts=3) == Solver(lam=0.5, n_starts=3)
    assert Execution(chunk_rows=None).chunk_rows == Execution().chunk_rows


# --------------------------------------------------------------------------- fit_local
def _quiet_local(*args, **kwargs):
    with pytest.warns(FutureWarning, match=r"fit_local: the keywords .* pass "):
        return ds.fit_local(*args, **kwargs)


@pytest.mark.parametrize(
    "flat, objects",
    [
        (
            dict(temperature=4.0, lam=1e-4, n_blocks=8),
            dict(scores=ds.Scores(temperature=4.0), solver=Solver(lam=1e-4), n_blocks=8),
        ),
        (
            dict(score="score_matching", radius=0.8, statistic="u", estimator="ridge"),
            dict(
                scores=ds.Scores(score="score_matching", radius=0.8),
                solver=Solver(statistic="u", estimator="ridge"),
            ),
        ),
    ],
    ids=["kernel", "score_matching"],
)
def test_fit_local_flat_keywords_and_option_objects_give_the_same_fit(ou_data, flat, objects):
    model, X = ou_data
    P = ds.choose_probes(X, 6, seed=0)
    old = _quiet_local(model, X, P, **flat)
    blocks = objects.pop("n_blocks", None)
    execution = None if blocks is None else Execution(n_blocks=blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = ds.fit_local(model, X, P, execution=execution, **objects)
    _same_fit(old, new)


def test_fit_local_design_with_option_objects(ou_data):
    model, X = ou_data
    data = {"a": X[:1500], "b": X[1500:]}
    P = ds.choose_probes(X, 5, seed=1)
    old = _quiet_local(model, data, P, temperature=3.0, lam=1e-3)
    new = ds.fit_local(model, data, P, scores=ds.Scores(temperature=3.0), solver=Solver(lam=1e-3))
    _same_fit(old, new)


def test_fit_local_refuses_a_dask_execution_and_a_string_for_scores(ou_data):
    model, X = ou_data
    P = X[:4]
    with pytest.raises(DataError, match=r"fit_local runs in this process: Execution\.backend"):
        ds.fit_local(model, X, P, execution=Execution(backend="dask"))
    with pytest.raises(DataError, match=r"scores must be a .*Scores or None.*scores=Scores\("):
        ds.fit_local(model, X, P, scores="kernel")


@pytest.mark.parametrize(
    "scores, match",
    [
        (ds.Scores(degree=3), r"Scores\.degree=3 is the polynomial degree of .*'kernel' does not"),
        (ds.Scores(score="local_gaussian", degree=np.int64(4)), r"Scores\.degree=4 .*'local_gauss"),
        (ds.Scores(dlogp_bandwidth=1.0), r"Scores\.dlogp_bandwidth is a setting of time courses"),
        (ds.Scores(use_times=[1.0]), r"Scores\.use_times is a setting of time courses"),
    ],
)
def test_fit_local_refuses_scores_fields_it_would_ignore(ou_data, scores, match):
    """A degree for a score other than score matching, and ∂ₜlog p settings on data without a time
    course, were ignored without a word (as Scores.radius was before); the same fields where they
    are used still work."""
    model, X = ou_data
    with pytest.raises(DataError, match=match):
        ds.fit_local(model, X, X[:4], scores=scores)
    used = ds.Scores(score="score_matching", radius=1.0, degree=np.int64(3))
    assert np.isfinite(ds.fit_local(model, X, X[:4], scores=used).theta).all()


@pytest.mark.parametrize("entry", [ds.fit_global, ds.fit_local])
def test_entry_points_take_at_most_12_parameters(entry):
    assert len(inspect.signature(entry).parameters) <= 12
