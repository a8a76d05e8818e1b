"""Probe choice and ball restriction (region-restricted sampling)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.routes import probes as probes_module
from dynosed_sym.routes.probes import (
    Balls,
    as_probes,
    choose_probes,
    dense_centres,
    kmeans_centres,
    random_centres,
    restrict_to_balls,
)

CENTRES = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])


@pytest.fixture(scope="module")
def clusters():
    rng = np.random.default_rng(0)
    sizes = [3000, 2000, 1000]
    X = np.concatenate([c + 0.5 * rng.standard_normal((n, 2)) for c, n in zip(CENTRES, sizes)])
    return X[rng.permutation(X.shape[0])]


def _match(C, ref):
    return np.array([np.min(np.linalg.norm(ref - c, axis=1)) for c in C])


def test_kmeans_finds_cluster_centres(clusters):
    C = kmeans_centres(clusters, 3, seed=1)
    assert _match(C, CENTRES).max() < 0.1
    np.testing.assert_array_equal(C, kmeans_centres(clusters, 3, seed=1))  # seeded


def test_dense_centres_are_separated_and_dense(clusters):
    C = dense_centres(clusters, 3, radius=1.0)
    assert _match(C, CENTRES).max() < 0.5
    d = np.linalg.norm(C[:, None] - C[None], axis=-1)
    assert d[np.triu_indices(3, 1)].min() >= 2.0
    # the first is the densest cluster
    assert np.linalg.norm(C[0] - CENTRES[0]) < 0.5


def test_random_centres_are_data_points_and_separated(clusters):
    C = random_centres(clusters, 3, seed=2, min_separation=5.0)
    for c in C:
        assert np.any(np.all(clusters == c, axis=1))
    d = np.linalg.norm(C[:, None] - C[None], axis=-1)
    assert d[np.triu_indices(3, 1)].min() >= 5.0
    with pytest.raises(ds.DataError, match="could not place"):
        random_centres(clusters, 4, seed=0, min_separation=5.0, max_tries=2000)


@pytest.mark.parametrize("method", ["kmeans", "dense", "random"])
def test_choose_probes(clusters, method):
    P = choose_probes(clusters, 3, method, radius=1.0 if method == "dense" else None, seed=0)
    assert P.shape == (3, 2) and np.isfinite(P).all()


def test_choose_probes_errors(clusters):
    with pytest.raises(ds.DataError, match="method"):
        choose_probes(clusters, 3, "grid")
    with pytest.raises(ds.DataError, match="radius"):
        choose_probes(clusters, 3, "dense")
    with pytest.raises(ds.DataError, match="positive integer"):
        choose_probes(clusters, 0)
    with pytest.raises(ds.DataError, match="cannot choose"):
        choose_probes(clusters[:2], 3)
    # an argument the method does not use is refused, not ignored (radius=-1 and
    # min_separation=1e9 with k-means returned probes without a word)
    for kw, msg in (
        (dict(radius=-1.0), r"radius= is only used by method='dense'"),
        (dict(min_separation=1e9), r"min_separation= is only used by method='random'"),
    ):
        with pytest.raises(ds.DataError, match=r"choose_probes\(method='kmeans'\): " + msg):
            choose_probes(clusters, 3, **kw)
    with pytest.raises(ds.DataError, match="radius= is only used"):
        choose_probes(clusters, 3, "random", radius=1.0)


def test_balls_labels_match_brute_force(clusters):
    balls = Balls(CENTRES, [1.0, 0.5, 2.0])
    lab = balls.labels(clusters)
    d2 = ((clusters[:, None, :] - CENTRES[None]) ** 2).sum(-1)
    inside = d2 < np.array([1.0, 0.25, 4.0])
    expect = np.where(inside.any(axis=1), inside.argmax(axis=1), -1)
    np.testing.assert_array_equal(lab, expect)
    np.testing.assert_array_equal(
        balls.counts(clusters), np.bincount(expect[expect >= 0], minlength=3)
    )


def test_restrict_keeps_order_and_subsamples(clusters):
    balls = Balls(CENTRES, 1.0)
    Xin, lab = balls.restrict(clusters, return_labels=True)
    keep = balls.labels(clusters) >= 0
    np.testing.assert_array_equal(Xin, clusters[keep])  # original row order
    assert (lab >= 0).all()
    sparse, lab2 = restrict_to_balls(clusters, balls, max_per_ball=50, seed=3, return_labels=True)
    assert np.bincount(lab2).tolist() == [50, 50, 50]
    again = restrict_to_balls(clusters, CENTRES, 1.0, max_per_ball=50, seed=3)
    np.testing.assert_array_equal(sparse, again)


def test_empty_ball_raises(clusters):
    balls = Balls(np.vstack([CENTRES, [[50.0, 50.0]]]), 1.0)
    with pytest.raises(ds.DataError, match="ball 3 .* contains no data"):
        balls.restrict(clusters)
    assert balls.restrict(clusters, allow_empty=True).shape[0] > 0


@pytest.mark.parametrize("radius", [0.0, -1.0, [1.0, 2.0], np.nan])
def test_bad_balls(radius):
    with pytest.raises(ds.DataError):
        Balls(CENTRES, radius)


def test_as_probes_forms(models, clusters):
    import pandas as pd

    model = models["ou2d"]
    P, r = as_probes(np.array([0.5, 1.0]), model)
    assert P.shape == (1, 2) and r is None
    P, r = as_probes(Balls(CENTRES, 1.5), model)
    assert P.shape == (3, 2) and r == 1.5
    P, _ = as_probes(pd.DataFrame({"y": [1.0, 2.0], "x": [3.0, 4.0]}), model)
    np.testing.assert_array_equal(P, [[3.0, 1.0], [4.0, 2.0]])
    P, _ = as_probes(3, model, clusters)
    assert P.shape == (3, 2)
    for bad, msg in (
        (np.zeros((4, 3)), "shape"),
        (np.zeros((0, 2)), "no probe"),
        ([[np.nan, 1.0]], "NaN"),
        ("abc", "holds text"),
        (2, "need data"),
    ):
        with pytest.raises(ds.DataError, match=msg):
            as_probes(bad, model)


def test_kmeans_reports_whether_it_converged(clusters):
    with pytest.warns(ds.ConvergenceWarning, match="k-means stopped after 1 Lloyd iterations"):
        C, info = kmeans_centres(clusters, 3, seed=1, n_iter=1, return_info=True)
    assert info == {"converged": False, "iterations": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        C, info = kmeans_centres(clusters, 3, seed=1, return_info=True)
    assert info["converged"] and 1 < info["iterations"] < probes_module.KMEANS_ITERATIONS
    with pytest.raises(ds.DataError, match="n_iter"):
        kmeans_centres(clusters, 3, n_iter=0)


def test_fit_local_notes_unconverged_kmeans_probes(compiled, models, ou_samples, monkeypatch):
    monkeypatch.setattr(probes_module, "KMEANS_ITERATIONS", 1)
    X = ou_samples(np.array([[-1.0, 0.5], [-0.5, -1.0]]), 1.0, 3000, 0)
    with pytest.warns(ds.ConvergenceWarning, match="k-means"):
        fit = ds.fit_local(models["ou2d_m12"], X, 6, scores=ds.Scores(temperature=4.0))
    assert fit.converged  # θ̂ comes from a linear solve; the probes are valid, only not k-means
    assert any("k-means placement of the probes stopped after 1" in n for n in fit.report.notes)
    assert "k-means placement" in fit.summary()


def test_overlapping_balls_count_every_row_inside_them():
    """Balls of radius 1.5 on data of spread 0.7 overlap: each row counted for the first ball
    only left later balls "empty" ("ball 3 ... contains no data") and drew no rows for them
    with max_per_ball. A row inside several balls is inside each (brute force)."""
    X = 0.7 * np.random.default_rng(0).standard_normal((2000, 2))
    balls = Balls(choose_probes(X, 10, seed=0), 1.5)
    inside = ((X[:, None, :] - balls.centres[None]) ** 2).sum(-1) < 1.5**2
    assert (inside.sum(axis=1) > 1).any()  # they overlap
    np.testing.assert_array_equal(balls.counts(X), inside.sum(axis=0))
    np.testing.assert_array_equal(balls.restrict(X), X[inside.any(axis=1)])
    sparse = restrict_to_balls(X, balls, max_per_ball=20, seed=1)
    held = ((sparse[:, None, :] - balls.centres[None]) ** 2).sum(-1) < 1.5**2
    assert (held.sum(axis=0) >= 20).all()  # every ball kept its own draw
    assert len(sparse) <= 10 * 20
    covered = Balls(np.array([[0.0, 0.0], [0.1, 0.0], [50.0, 50.0]]), [3.0, 0.5, 1.0])
    with pytest.raises(ds.DataError, match=r"^ball 2 \(centre \[50\. 50\.\], radius 1\) contains"):
        covered.restrict(X)  # ball 1 lies inside ball 0 and is not empty


def test_flat_centres_are_one_dimensional_and_refused_in_more(models, clusters):
    """Balls(np.zeros(2), 1.0) is two centres in one dimension (a Balls does not know d when it is
    built); meant for a 2-D model it said "X has 2 columns, the balls live in 1 dimensions" or
    "probes: … got shape (2, 1)": now every use where d ≥ 2 shows itself names the flat centres
    and the shape to pass, and a 1-D model reads them as before."""
    flat = Balls(np.zeros(2), 1.0)
    assert flat.k == 2 and flat.centres.shape == (2, 1)
    message = (
        r"^Balls: the centres were given as a flat array of 2 number\(s\) \(\[0\. 0\.\]\), which "
        r"is 2 centre\(s\) in 1 dimension, but {}: pass the centres with shape \(k, 2\), one row "
        r"per centre, e\.g\. Balls\(\[\[0\., 0\.\]\], r\) \(np\.atleast_2d\(c\)\) for one centre$"
    )
    model = models["ou2d"]
    in_model = message.format(r"model 'ou2d' has d = 2 state variables \(x, y\)")
    for call, where in (
        (lambda: flat.restrict(clusters), "X has 2 columns"),
        (lambda: flat.counts(clusters), "X has 2 columns"),
        (lambda: restrict_to_balls(clusters, np.zeros(2), 1.0), "X has 2 columns"),
        (lambda: as_probes(flat, model), None),
        (lambda: ds.check_identifiability(model, route="local", probes=flat, simulate=False), None),
    ):
        with pytest.raises(ds.DataError, match=message.format(where) if where else in_model):
            call()
    with pytest.raises(ds.DataError, match=r"e\.g\. c\.reshape\(-1, 2\) for centres stored one"):
        Balls(np.zeros(4), 1.0).restrict(clusters)
    one = Balls(np.atleast_2d(np.zeros(2)), 1.0)  # what was meant (oracle: brute force)
    np.testing.assert_array_equal(one.restrict(clusters), clusters[(clusters**2).sum(1) < 1.0])
    X1 = clusters[:, :1]  # one dimension: k flat centres, as before (oracle: the (k, 1) form)
    np.testing.assert_array_equal(
        Balls(np.array([0.0, 10.0]), 1.0).labels(X1), Balls([[0.0], [10.0]], 1.0).labels(X1)
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**31 - 1), st.floats(-80.0, 80.0))
def test_probes_from_the_datas_own_law_are_inside_at_any_dimension(d, seed, scale_exp):
    """The probe check's limit grows like √d: probes drawn from the data's own law are never
    refused (a fixed 3 standard deviations refused 17 of 20 at d = 20, N = 1000: nearest-neighbour
    distances grow like √d), a probe 10·√d standard deviations out always is, at any scale of the
    data, and the chunked distances equal NumPy's on the whole array (row chunks of 7)."""
    import dynosed_sym.routes.probes as probes_mod

    rng = np.random.default_rng(seed)
    c = 2.0**scale_exp
    X = rng.standard_normal((300, d)) * np.linspace(1.0, 3.0, d) * c
    inside = rng.standard_normal((5, d)) * np.linspace(1.0, 3.0, d) * c
    names = [f"x{i}" for i in range(d)]
    probes_mod.refuse_far_probes(X, inside, names, "kernel")  # no error
    out = inside.copy()
    out[2] = 10.0 * np.sqrt(d) * X.std(axis=0) * np.where(np.arange(d) == 0, 1.0, 0.0) + X.max(
        axis=0
    ) * np.where(np.arange(d) == 0, 1.0, 0.0)
    with pytest.raises(ds.DataError, match=r"1 of 5 probe\(s\) lie outside the data: probe 2"):
        probes_mod.refuse_far_probes(X, out, names, "kernel")
    mean, sd = X.mean(axis=0) / c, X.std(axis=0) / c
    old = probes_mod.CHUNK_ROWS
    try:
        probes_mod.CHUNK_ROWS = 7
        got = probes_mod._nearest_standardised(X, out, c, mean, sd, np.ones(d, bool))
        m2, s2 = probes_mod._column_spread(X, c)
    finally:
        probes_mod.CHUNK_ROWS = old
    want = [np.sqrt((((X - p) / X.std(axis=0)) ** 2).sum(axis=1)).min() for p in out]
    np.testing.assert_allclose(got, want, rtol=1e-7)
    np.testing.assert_allclose(s2 * c, X.std(axis=0), rtol=1e-10)
    np.testing.assert_allclose(m2 * c, X.mean(axis=0), rtol=1e-10, atol=1e-12 * c)
