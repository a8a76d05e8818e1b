"""Features(bandwidth="auto"): the rule against a brute-force oracle, and on FitzHugh–Nagumo,
whose drift's overall scale the median length scale does not resolve at N = 2000."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.errors import DataError
from dynosed_sym.routes import bandwidth as bw


# ------------------------------------------------------------------ the rule, on stand-in fits
def _fake_fit(rank, n, ell, judged=True):
    noise = 1.0 if judged else None
    report = SimpleNamespace(
        rank=rank,
        notes=[],
        singular_noise=noise,
        resolve_threshold=2.5,
        direction_t=None,
        profile=None,
    )
    return SimpleNamespace(
        report=report,
        param_names=[f"p{i}" for i in range(n)],
        info={},
        lengthscale=ell,
        A=np.zeros((8, n)),
    )


def _fitter(ranks, n, median=1.5, fail=(), warn=False):
    """fit_at over a table {factor: rank}; records the factors asked for."""
    asked = []

    def fit_at(features, profile):
        factor = 1.0 if features.bandwidth == "median" else features.bandwidth / median
        asked.append(factor)
        if factor in fail:
            raise DataError("X: the features lose precision at this scale")
        if warn:
            warnings.warn(f"fit at × {factor:g}", UserWarning, stacklevel=2)
        return _fake_fit(ranks[factor], n, median * factor)

    return fit_at, asked


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 8),
    data=st.data(),
)
def test_the_kept_fit_resolves_the_most_in_the_order_of_preference(n, data):
    """Oracle: among the factors a full search would try (median, then FACTORS in order, stopping
    at the first full rank), the kept one has the largest rank and is the earliest with it."""
    order = (1.0, *bw.FACTORS)
    ranks = {f: data.draw(st.integers(0, n), label=f"rank×{f:g}") for f in order}
    fit_at, asked = _fitter(ranks, n)
    fit = bw.fit_auto(fit_at, ds.Features())
    expected_asked = []
    for f in order:
        expected_asked.append(f)
        if ranks[f] == n:
            break
    assert asked == expected_asked
    top = max(ranks[f] for f in expected_asked)
    chosen = next(f for f in expected_asked if ranks[f] == top)
    assert fit.lengthscale == pytest.approx(1.5 * chosen)
    record = fit.info["bandwidth_search"]
    assert record["factor"] == chosen and record["median"] == 1.5
    if len(asked) > 1:
        assert record["ranks"] == {f: ranks[f] for f in asked}
        assert fit.report.notes and "bandwidth 'auto'" in fit.report.notes[-1]
    else:
        assert record["why"] == "every direction resolved at the median" and not fit.report.notes


def test_no_search_where_it_cannot_help_or_is_too_costly():
    n = bw.MAX_PARAMS + 1
    fit_at, asked = _fitter({1.0: 3}, n)
    assert bw.fit_auto(fit_at, ds.Features()).info["bandwidth_search"]["why"].startswith("more")
    fit_at, asked = _fitter({1.0: 1}, 3)
    fit = bw.fit_auto(fit_at, ds.Features(), readable=False)
    assert asked == [1.0] and "read once" in fit.info["bandwidth_search"]["why"]
    fit_at, asked = _fitter({1.0: 0}, 3)
    fit_at_unjudged = lambda f, p: (asked.append(1.0), _fake_fit(0, 3, 1.5, judged=False))[1]  # noqa: E731
    fit = bw.fit_auto(fit_at_unjudged, ds.Features())
    assert "not judged" in fit.info["bandwidth_search"]["why"]
    # a full rank that is not judged is not called "every direction resolved"
    fit = bw.fit_auto(lambda f, p: _fake_fit(3, 3, 1.5, judged=False), ds.Features())
    assert fit.info["bandwidth_search"]["why"] == bw.NOT_JUDGED and not fit.report.notes


def test_a_scale_the_data_cannot_take_is_skipped_and_only_the_kept_fits_warnings_are_issued():
    ranks = {1.0: 1, 0.5: 2, 2.0: 3, 0.25: 3}
    fit_at, asked = _fitter(ranks, 3, fail=(0.5,), warn=True)
    with pytest.warns(UserWarning) as rec:
        fit = bw.fit_auto(fit_at, ds.Features())
    assert asked == [1.0, 0.5, 2.0]  # 2 × resolves all three: the search ends there
    assert fit.info["bandwidth_search"]["ranks"] == {1.0: 1, 0.5: None, 2.0: 3}
    assert fit.info["bandwidth_search"]["errors"] == {
        0.5: "DataError: X: the features lose precision at this scale"
    }
    assert [str(w.message) for w in rec] == ["fit at × 2"]
    assert "× 0.5: failed" in fit.report.notes[-1]


@settings(max_examples=100, deadline=None)
@given(
    t=st.lists(st.floats(-3.0, 3000.0), min_size=1, max_size=6),
    dof=st.integers(4, 200),
    null=st.booleans(),
)
def test_strict_rank_counts_at_the_level_over_every_scale(t, dof, null):
    """Oracle: SciPy's Student-t quantile at 1 − 0.05/(2·n·K), K = 4 length scales, over the
    directions above the floating-point floor (found: two identical columns' null direction had
    t = 1466 at half the median length scale, from rounding-level κ̂ and noise)."""
    from scipy import stats

    n = len(t)
    null = null and n > 1  # (the floor is relative to the largest σ)
    q_plain = stats.t.ppf(1 - 0.05 / (2 * n), dof)
    s = np.linspace(1.0, 0.1, n)
    s[-1] = 1e-17 if null else s[-1]  # an exactly null direction: σ at rounding level
    report = SimpleNamespace(
        direction_t=np.array(t), dof=dof, resolve_threshold=q_plain, rank=0, singular_values=s
    )
    q = stats.t.ppf(1 - 0.05 / (2 * n * 4), dof)
    counted = t[:-1] if null else t  # (whatever its t, the null direction is not counted)
    expected = sum(v > q * (1 + 1e-12) for v in counted)
    got = bw.strict_rank(report, n, 2048)
    assert abs(got - expected) <= sum(abs(v - q) < 1e-9 * q for v in counted)
    assert got <= sum(v > q_plain for v in t)


def test_candidates_skip_the_profile_and_the_kept_one_is_fitted_with_it():
    """A non-affine fit's profile intervals cost several fits and do not change the rank: the
    candidates are fitted without them and the kept candidate again with them."""
    calls = []
    ranks = {1.0: 1, 0.5: 2, 2.0: 2, 0.25: 3}

    def fit_at(features, profile):
        factor = 1.0 if features.bandwidth == "median" else features.bandwidth / 1.5
        calls.append((factor, profile))
        fit = _fake_fit(ranks[factor], 3, 1.5 * factor)
        fit.report.profile = ["trace"] if profile else None
        fit.info["solver"] = "gradient"
        return fit

    fit = bw.fit_auto(fit_at, ds.Features())
    assert calls == [(1.0, True), (0.5, False), (2.0, False), (0.25, False), (0.25, True)]
    assert fit.report.profile == ["trace"] and fit.info["bandwidth_search"]["factor"] == 0.25


def test_a_candidate_must_resolve_more_at_the_stricter_level_than_the_median_at_its_own():
    """Median: report rank 2 of 3.  × 0.5 resolves 3 at the usual level but only 2 at the
    search's (one t between the two quantiles): not kept.  × 2 resolves 3 at both: kept."""
    from scipy import stats

    n, dof = 3, 31
    q = stats.t.ppf(1 - 0.05 / (2 * n), dof)
    q_strict = stats.t.ppf(1 - 0.05 / (2 * n * 4), dof)
    t_between = 0.5 * (q + q_strict)
    tables = {1.0: [20.0, 10.0, 1.0], 0.5: [20.0, 10.0, t_between], 2.0: [20.0, 10.0, 2 * q_strict]}
    calls = []

    def fit_at(features, profile):
        factor = 1.0 if features.bandwidth == "median" else features.bandwidth / 1.5
        calls.append(factor)
        t = np.array(tables[factor])
        fit = _fake_fit(int(np.sum(t > q)), n, 1.5 * factor)
        fit.report.direction_t, fit.report.dof = t, dof
        fit.report.resolve_threshold, fit.report.singular_values = q, np.array([3.0, 2.0, 1.0])
        return fit

    fit = bw.fit_auto(fit_at, ds.Features())
    record = fit.info["bandwidth_search"]
    assert calls == [1.0, 0.5, 2.0] and record["factor"] == 2.0
    assert record["ranks"] == {1.0: 2, 0.5: 3, 2.0: 3} and record["counted"] == {0.5: 2, 2.0: 3}
    assert "resolves 3, 3 of them at the search's family-wise level" in fit.report.notes[-1]


def test_the_recursion_forwards_every_option_and_issues_warnings_at_the_callers_line(
    monkeypatch,
):
    """fit_global(bandwidth="auto") calls fit_global again per length scale with the caller's
    inputs, columns, order, dlogp_dt, solver and execution; the kept fit's own warnings name the
    line that called fit_global."""
    from dynosed_sym.routes import global_route

    seen = []
    real = global_route.fit_global

    def spy(model, X, **kw):
        if kw.get("features") is not None and kw["features"].bandwidth != "auto":
            seen.append(kw)
            fit = _fake_fit(1, 2, 1.5 if kw["features"].bandwidth == "median" else 0.75)
            fit.report.singular_values = np.array([2.0, 1.0])
            warnings.warn("from the candidate", ds.errors.ConvergenceWarning, stacklevel=2)
            return fit
        return real(model, X, **kw)

    monkeypatch.setattr(global_route, "fit_global", spy)
    x = sp.Symbol("x", real=True)
    a, b = sp.symbols("a b", real=True)
    model = ds.SDEModel([x], [a, b], [-a * x - b * x**3], diffusion=1.0, name="spy_bw")
    solver, ex = ds.Solver(lam=0.5), ds.Execution(n_blocks=8)
    opts = dict(inputs=None, env_column="e", time_column="t", order=3, dlogp_dt=None)
    with pytest.warns(ds.errors.ConvergenceWarning) as rec:
        global_route.fit_global(model, np.zeros((5, 1)), solver=solver, execution=ex, **opts)
    assert len(seen) == 4  # the median and three candidates (none resolves more)
    for kw in seen:
        assert kw["solver"].lam == 0.5 and kw["execution"] is ex
        assert all(kw[k] == v for k, v in opts.items())
    assert [w.filename for w in rec] == [__file__]  # the kept fit's one warning, at this line


def test_replayable_inputs():
    X = np.zeros((3, 2))
    assert bw.replayable(X) and bw.replayable({"A": X, "B": X}) and bw.replayable([X, X])
    assert not bw.replayable(iter([X])) and not bw.replayable({"A": iter([X])})
    assert not bw.replayable(x for x in [X])
    assert not bw.replayable(SimpleNamespace(kind="iterator"))  # (a DataSource on an iterator)
    assert bw.replayable(SimpleNamespace(kind="npy"))


# ------------------------------------------------------------------ on a model
@pytest.fixture(scope="module")
def fhn(tmp_path_factory):
    """FitzHugh–Nagumo (written affine) at its stable focus, 2000 independent stationary chains
    (the calibration sweep's protocol: dt 0.01, 60 time units of burn-in)."""
    x, y = sp.symbols("x y", real=True)
    c = sp.symbols("c1:6", real=True)
    drift = [c[0] * (x - x**3 / 3 - y) + c[1], c[2] * x + c[3] - c[4] * y]
    model = ds.SDEModel([x, y], c, drift, diffusion=[sp.Rational(1, 20)] * 2, name="fhn_bw")
    truth = np.array([3.0, 0.5, 0.3, 0.2, 0.24])
    ex = ds.Execution(out_dir=str(tmp_path_factory.mktemp("gen_bw")))
    X = ds.simulate(model, truth, 2000, n_chains=2000, dt=0.01, burn_in=6000, seed=3, execution=ex)
    return model, truth, X, ex


def test_fhn_small_n_resolves_its_scale_at_a_shorter_length_scale(fhn):
    """At the median length scale the drift's overall scale is not resolved (rank 4 of 5, no
    finite interval); "auto" finds a shorter scale where it is, and the intervals there cover."""
    model, truth, X, ex = fhn
    median = ds.fit_global(model, X, features=ds.Features(bandwidth="median"), execution=ex)
    assert median.report.rank == 4
    assert not np.isfinite(median.conf_int()).all(axis=1).any()
    fit = ds.fit_global(model, X, execution=ex)
    record = fit.info["bandwidth_search"]
    assert record["median"] == median.lengthscale and record["factor"] < 1
    assert fit.report.rank == 5 and record["ranks"][1.0] == 4
    ci = fit.conf_int()
    assert np.isfinite(ci).all() and np.all((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
    assert "bandwidth 'auto'" in fit.summary()
    again = ds.fit_global(model, X, features=ds.Features(bandwidth=fit.lengthscale), execution=ex)
    assert np.array_equal(again.theta, fit.theta) and np.array_equal(again.conf_int(), ci)


def test_a_fully_resolved_fit_is_the_medians_bit_for_bit(fhn):
    """Every direction resolved at the median: no other fit, the same numbers as "median"."""
    _, _, _, ex = fhn
    x, k = sp.symbols("x k", real=True)
    model = ds.SDEModel([x], [k], [-k * x], diffusion=1.0, name="ou_bw")
    X = np.random.default_rng(5).normal(0.0, 0.5, size=(4000, 1))  # exact draws, k = 4
    fit = ds.fit_global(model, X, execution=ex)
    med = ds.fit_global(model, X, features=ds.Features(bandwidth="median"), execution=ex)
    assert fit.report.rank == 1 and not any("bandwidth 'auto'" in n for n in fit.report.notes)
    assert fit.info["bandwidth_search"]["why"] == "every direction resolved at the median"
    assert np.array_equal(fit.theta, med.theta) and np.array_equal(fit.conf_int(), med.conf_int())


@pytest.mark.slow
def test_a_structurally_free_rotation_is_never_resolved_by_the_search(fhn):
    """The bundled isotropic limit cycle: its rotation ω is invisible in the stationary law, so
    no length scale may resolve it (the search's family-wise count guards the four tries).  Ten
    data sets at N = 3000: never more than the structural rank 2 (a shorter scale may resolve a
    and c where the median does not), and ω's interval is the whole line."""
    _, _, _, ex = fhn
    model = ds.load_model("models/limit_cycle.py")
    w = model.param_names.index("omega")
    for s in range(10):
        X = ds.simulate(model, model.nominal, 3000, seed=700 + s, execution=ex)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = ds.fit_global(model, X, features=ds.Features(seed=s), execution=ex)
        assert fit.report.rank <= 2, s  # (the structural rank: a and c at most)
        assert not np.isfinite(fit.conf_int()[w]).any(), s
