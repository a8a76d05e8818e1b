"""The calibration sweep (issue 19) end to end on one tiny cell, and its metrics against a hand
computation and a plain-Python reference.

The sweep's own families take minutes to compile and draw; here a family built on the bundled
``ou2d_m12`` model (kernels compiled by the shared fixtures) is registered for the test: exact
draws of its Gaussian stationary law and, for the nesting claim, ``ds.simulate``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ou_stationary_cov
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.apps.bench import calibration_families as fams
from dynosed_sym.apps.bench.calibration_data import Protocol, data_seed, load_dataset
from dynosed_sym.apps.bench.calibration_metrics import (
    cell_metrics,
    finite_where_covered,
    flag_summary,
    flags,
    summary_table,
)
from dynosed_sym.apps.bench.calibration_sweep import (
    RIDGE,
    SweepOptions,
    read_records,
    route_options,
    run_sweep,
)

M = np.array([[-1.0, 0.5], [-0.5, -1.0]])


def _rec(theta, lo, hi, p=0.5, consistent=True, error=None):
    return {
        "theta": theta,
        "lo": lo,
        "hi": hi,
        "p_value": p,
        "consistent": consistent,
        "rank": 2,
        "seconds": 1.0,
        "converged": True,
        "warnings": [],
        "error": error,
    }


def test_metrics_by_hand():
    truth = [1.0, 2.0]
    inf = math.inf
    records = [
        _rec([1.1, 2.5], [0.9, 2.2], [1.3, 2.8], p=0.01, consistent=True),  # covers θ1 only
        _rec([0.8, 2.0], [0.7, -inf], [0.95, inf], p=0.30, consistent=False),  # misses; unbounded
        _rec([1.0, 1.9], [0.5, 1.5], [1.5, 2.5], p=0.70, consistent=True),  # covers both
        _rec(None, None, None, error="DataError: x"),
    ]
    m = cell_metrics(records, truth)
    # finite intervals: set 1 both, set 2 only θ1, set 3 both → 5; covered: 1 + 0 + 2 = 3
    assert (m["fits"], m["errors"], m["finite"], m["covered"]) == (4, 1, 5, 3)
    assert m["coverage"] == pytest.approx(3 / 5)
    assert m["covered_per_param"] == [2, 1] and m["finite_per_param"] == [3, 2]
    assert m["finite_share"] == pytest.approx(5 / 6)
    assert m["coverage_all"] == pytest.approx(4 / 6)  # the unbounded interval of set 2 covers
    # errors θ1: .1, −.2, 0; θ2: .5, 0, −.1 → mean square (0.01 + 0.04 + 0.25 + 0.01)/6
    assert m["rmse"] == pytest.approx(math.sqrt(0.31 / 6))
    assert m["rmse_per_param"] == pytest.approx([math.sqrt(0.05 / 3), math.sqrt(0.26 / 3)])
    assert m["p_below"] == pytest.approx(1 / 3)
    assert m["inconsistent"] == pytest.approx(1 / 3)
    # contradicting verdicts: set 1 (consistent, p < .05) and set 2 (inconsistent, p ≥ .05)
    assert m["contradict"] == pytest.approx(2 / 3)
    assert flags(m, {"coverage": 0.95}) == ["ERR", "COV"]
    few = {"coverage": None, "finite_share": 0.4, "errors": 0}
    assert flags(few, {"coverage": 0.9}) == ["FIN"] and flags(few, {"coverage": 0.8}) == []
    assert m["undetermined"] is None  # records written before the verdict field


def test_undetermined_share_by_hand():
    """The `undet` column: the share of fits whose verdict is "undetermined" (consistent None),
    counted neither as inconsistent nor in the contradictions."""
    truth = [1.0, 2.0]
    verdicts = ["consistent", "undetermined", "INCONSISTENT", "undetermined"]
    cons = {"consistent": True, "undetermined": None, "INCONSISTENT": False}
    records = [
        {**_rec([1.0, 2.0], [0.5, 1.5], [1.5, 2.5], p=p, consistent=cons[v]), "verdict": v}
        for v, p in zip(verdicts, (0.5, 0.001, 0.001, 0.004))
    ]
    m = cell_metrics(records, truth)
    assert m["undetermined"] == pytest.approx(2 / 4)
    assert m["inconsistent"] == pytest.approx(1 / 4) and m["contradict"] == 0.0


def test_verdict_wrong_models_are_other_drifts_of_the_same_states():
    """The verdicts bench's wrong models (declared only; nothing compiled) have their family's
    states and a drift that is not the family's."""
    from dynosed_sym.apps.bench.calibration_families import family
    from dynosed_sym.apps.bench.verdicts import _wrong_models

    for name, models in _wrong_models().items():
        model, _, _ = family(name)
        for label, wrong in models:
            assert [str(x) for x in wrong.state] == [str(x) for x in model.state], label
            assert wrong.equations() != model.equations(), label


def _sets(records):
    return [{**r, "set": k} for k, r in enumerate(records)]


def test_finite_where_the_ridge_covers_by_hand():
    truth = [1.0, 2.0]
    inf = math.inf
    ridge = _sets(
        [
            _rec([1.0, 2.0], [0.9, 1.9], [1.1, 2.1]),  # covers both
            _rec([1.0, 2.5], [0.9, 2.4], [1.1, 2.6]),  # covers θ1 only
            _rec([1.0, 2.0], [-inf, 1.0], [inf, 3.0]),  # covers θ2 only (θ1 unbounded)
            _rec([1.0, 2.0], [0.9, 1.9], [1.1, 2.1]),  # its default fit raised: left out
        ]
    )
    default = _sets(
        [
            _rec([1.0, 2.0], [0.8, -inf], [1.2, inf]),  # θ1 finite, θ2 not
            _rec([1.0, 2.0], [0.8, 1.0], [1.2, 3.0]),  # both finite (θ2's pair is not counted)
            _rec([1.0, 2.0], [-inf, -inf], [inf, inf]),  # none
            _rec(None, None, None, error="DataError: x"),
        ]
    )
    # pairs: set 0 both, set 1 θ1, set 2 θ2 → 4; default finite there: θ1 of 0, θ1 of 1 → 2
    assert finite_where_covered(default, ridge, truth) == (4, 2)
    recs = [{**r, "family": "f", "source": "exact", "N": 10, "route": "global"} for r in ridge]
    recs = [{**r, "column": "ridge"} for r in recs] + [
        {**r, "family": "f", "source": "exact", "N": 10, "route": "global", "column": "default"}
        for r in default
    ]
    _, cells = summary_table(recs, {"f": truth})
    assert cells[0]["finite_where_ridge_covers"] == (4, 2)
    text = "\n".join(flag_summary(cells))
    assert "fewer than half get a finite default interval: 0 of 1: none" in text
    _, cells = summary_table(
        recs[:4] + [{**recs[4], "lo": [-inf, -inf], "hi": [inf, inf]}] + recs[5:], {"f": truth}
    )
    assert cells[0]["finite_where_ridge_covers"] == (4, 1)
    # the source is named unless it is the simulator (an exact and a simulated cell of one N differ)
    assert "1 of 1: f/global/N=10/exact (1/4)" in "\n".join(flag_summary(cells))


_num = st.floats(-5, 5, allow_nan=False)


@st.composite
def _records(draw):
    n = draw(st.integers(1, 3))
    truth = draw(st.lists(_num, min_size=n, max_size=n))
    recs = []
    for _ in range(draw(st.integers(1, 5))):
        theta = draw(st.lists(_num, min_size=n, max_size=n))
        lo, hi = [], []
        for t in theta:
            w = draw(st.sampled_from([0.1, 1.0, 3.0, math.inf, math.nan]))
            lo.append(t - w)
            hi.append(t + w if not math.isnan(w) else math.nan)
        recs.append(_rec(theta, lo, hi, p=draw(st.floats(0, 1)), consistent=draw(st.booleans())))
    return truth, recs


@settings(max_examples=60, deadline=None)
@given(_records())
def test_metrics_against_loops(case):
    truth, recs = case
    m = cell_metrics(recs, truth)
    covered = finite = inside = 0
    sq = []
    for r in recs:
        for t, th, lo, hi in zip(truth, r["theta"], r["lo"], r["hi"]):
            fin = math.isfinite(lo) and math.isfinite(hi)
            ins = lo <= t <= hi  # False with a NaN end
            finite += fin
            covered += fin and ins
            inside += ins
            sq.append((th - t) ** 2)
    assert (m["covered"], m["finite"]) == (covered, finite)
    assert m["coverage_all"] == pytest.approx(inside / len(sq))
    assert m["rmse"] == pytest.approx(math.sqrt(sum(sq) / len(sq)))
    assert m["coverage"] == (None if finite == 0 else pytest.approx(covered / finite))


@settings(max_examples=40, deadline=None)
@given(_records(), st.data())
def test_finite_where_the_ridge_covers_against_loops(case, data):
    truth, ridge = case
    default = [
        {
            **r,
            "lo": data.draw(
                st.lists(
                    st.sampled_from([-math.inf, -1.0, 0.0]),
                    min_size=len(truth),
                    max_size=len(truth),
                )
            ),
            "hi": data.draw(
                st.lists(
                    st.sampled_from([math.inf, 1.0, 0.0]), min_size=len(truth), max_size=len(truth)
                )
            ),
        }
        for r in ridge
    ]
    ridge, default = _sets(ridge), _sets(default)
    pairs = fin = 0
    for r, d in zip(ridge, default):
        for t, lo, hi, dlo, dhi in zip(truth, r["lo"], r["hi"], d["lo"], d["hi"]):
            if math.isfinite(lo) and math.isfinite(hi) and lo <= t <= hi:
                pairs += 1
                fin += math.isfinite(dlo) and math.isfinite(dhi)
    assert finite_where_covered(default, ridge, truth) == (pairs, fin)


@pytest.fixture
def tiny_family(monkeypatch, project_root):
    """A family on the bundled ou2d_m12 (truth M12 = 0.5): exact draws of N(0, Σ)."""
    model = ds.load_model(str(project_root / "models" / "ou2d_m12.py"))
    S = ou_stationary_cov(M, np.eye(2))
    L = np.linalg.cholesky(S)

    def make(sampler="exact"):
        proto = Protocol(
            sizes=(300,),
            sampler=sampler,
            burn_in=300,
            relaxation=1.0,
            local_probes=6,
            exact=lambda n, rng: rng.standard_normal((int(n), 2)) @ L.T,
        )
        return model, np.array([0.5]), proto

    monkeypatch.setitem(fams.FAMILIES, "tiny_ou", make)
    monkeypatch.setitem(fams.FAMILIES, "tiny_ou_sim", lambda: make("simulate"))
    return model, L


def test_tiny_cell_end_to_end(tiny_family, tmp_path):
    model, L = tiny_family
    opts = SweepOptions(
        families=["tiny_ou"],
        n_sets=2,
        routes=("global", "local"),
        diffrax=False,
        cache_dir=str(tmp_path),
        table_path=str(tmp_path / "t.txt"),
        records_path=str(tmp_path / "r.json.gz"),
        quiet=True,
    )
    payload = run_sweep(opts)
    recs = payload["records"]
    assert len(recs) == 2 * 2 * 2  # sets × routes × columns
    assert all(r["error"] is None for r in recs if r["route"] == "global")
    # a local fit that raises (too few points under the kernel at 300 samples) is a record too
    assert all(r["error"] is None or r["error"].startswith("DataError") for r in recs)
    # the data: exact draws with the documented seed, derived here independently
    for k in range(2):
        X = np.random.default_rng(data_seed("tiny_ou", k)).standard_normal((300, 2)) @ L.T
        for col, kw in (("default", {}), ("ridge", RIDGE)):
            fit = ds.fit_global(model, X, features=ds.Features(seed=k), solver=ds.Solver(**kw))
            (rec,) = [r for r in recs if (r["set"], r["column"], r["route"]) == (k, col, "global")]
            assert rec["theta"] == fit.theta.tolist()
            assert [rec["lo"][0], rec["hi"][0]] == fit.conf_int()[0].tolist()
            assert rec["p_value"] == fit.report.p_value and rec["rank"] == fit.report.rank
    # the cell's metrics are those of its records, and the table names the cell
    cell = [c for c in payload["cells"] if c["cell"] == ["tiny_ou", "exact", 300, "global"]][0]
    mine = [r for r in recs if r["route"] == "global" and r["column"] == "default"]
    assert cell["metrics"]["default"] == cell_metrics(mine, [0.5])
    covered = sum(r["lo"][0] <= 0.5 <= r["hi"][0] for r in mine if math.isfinite(r["lo"][0]))
    assert cell["metrics"]["default"]["covered"] == covered
    assert "tiny_ou" in (tmp_path / "t.txt").read_text()
    assert read_records(str(tmp_path / "r.json.gz"))["records"] == recs


def test_nested_simulated_sets_are_independent_chains(tiny_family, tmp_path):
    """The N-row set is the first N chains of the N_max one, i.e. simulate(N, n_chains=N)."""
    model, _ = tiny_family
    _, truth, proto = fams.FAMILIES["tiny_ou_sim"]()
    X = load_dataset("tiny_ou_sim", model, truth, proto, 1, 120, str(tmp_path))
    seed = data_seed("tiny_ou_sim", 1)
    direct = ds.simulate(model, truth, 120, dt=0.01, burn_in=300, thin=1, n_chains=120, seed=seed)
    np.testing.assert_array_equal(X, direct)
    again = load_dataset("tiny_ou_sim", model, truth, proto, 1, 120, str(tmp_path))  # cached
    np.testing.assert_array_equal(again, X)


def test_route_options():
    assert route_options({"estimator": "ridge"}) == {
        "global": {"estimator": "ridge"},
        "local": {"estimator": "ridge"},
    }
    assert route_options({"local": {"score": "score_matching"}}) == {
        "global": {},
        "local": {"score": "score_matching"},
    }


def test_cells_of_a_simulated_family_with_an_exact_law():
    """Simulated families with an exact law get oracle cells on exact draws at their largest N;
    --sources restricts the cells."""
    from dynosed_sym.apps.bench.calibration_sweep import DIFFRAX_N, _sources

    proto = Protocol(sizes=(2000, 10_000), exact=lambda n, rng: None, diffrax=True)
    cells = _sources(proto, SweepOptions(families=[], quiet=True))
    assert cells == [
        ("simulate", 2000),
        ("simulate", 10_000),
        ("exact", 10_000),
        ("diffrax", DIFFRAX_N),
    ]
    only = SweepOptions(families=[], sources=("exact",), diffrax=False, quiet=True)
    assert _sources(proto, only) == [("exact", 10_000)]
    assert _sources(Protocol(sizes=(500,), sampler="exact"), only) == [("exact", 500)]


def test_held_out_families_are_outside_the_default_sweep_and_burn_in_long_enough():
    names = fams.family_names()
    assert set(fams.HELD_OUT).isdisjoint(names)
    for name in list(fams.HELD_OUT) + [n for n in names if not n.startswith("net")]:
        _, _, proto = fams.family(name)
        if proto.sampler == "simulate":  # ten relaxation times at least (the module docstring)
            assert proto.burn_in * proto.dt >= 10.0 * proto.relaxation - 1e-9, name
    with pytest.raises(KeyError, match="held-out bruss_cycle"):
        fams.family("no_such_family")


@pytest.mark.parametrize("name", ["switch", "logistic", "autoreg"])
def test_held_out_exact_draws_satisfy_the_stein_identity(name):
    """Oracle: the stationary law of dX = f dt + √(2D) dW satisfies E[f φ' + D φ''] = 0 for every
    smooth bounded φ (the identity the method rests on, evaluated here with the drift and D
    lambdified by SymPy at the truth); the exact draws meet it for φ = sin(kx), cos(kx), k = 1, 2,
    within 4 standard errors on 200,000 draws.  A law cut at 0 where the density is not 0 (the
    switch's first sampler, cut at x = 0) fails it by 90–106 standard errors for φ = sin kx."""
    import sympy as sp

    model, truth, proto = fams.family(name)
    assert proto.sampler == "exact"
    (x,) = model.state
    f = sp.lambdify(x, model.drift[0].subs(dict(zip(model.params, truth))), "numpy")
    D = sp.lambdify(x, model.D[0, 0] + 0 * x, "numpy")
    X = proto.exact(200_000, np.random.default_rng(3))[:, 0]
    fx, Dx = f(X), D(X)
    assert np.all(Dx > 0)
    for k in (1.0, 2.0):
        for d1, d2 in (
            (np.cos, lambda u: -np.sin(u)),
            (lambda u: -np.sin(u), lambda u: -np.cos(u)),
        ):
            terms = fx * k * d1(k * X) + Dx * k * k * d2(k * X)
            assert abs(terms.mean()) < 4 * terms.std() / np.sqrt(X.size), (name, k)


def test_kramers_exact_draws_satisfy_the_stein_identity_with_a_singular_diffusion():
    """Oracle: the Kramers oscillator's law (noise on v only, a circulating flux) satisfies
    E[f·∇φ + D:∇²φ] = 0 for φ = sin/cos(k₁x + k₂v), the drift lambdified by SymPy at the truth;
    within 4 standard errors on 200,000 exact draws.  A wrong temperature (T = 0.3 instead of
    D_vv/g = 0.25 for the velocity) fails it by 27 standard errors (asserted: more than 20)."""
    import sympy as sp

    model, truth, proto = fams.family("kramers")
    assert proto.x0 == "exact" and proto.exact is not None
    D = np.asarray(model.D.tolist(), dtype=float)
    assert D[0, 0] == 0 and D[1, 1] == 0.125  # singular: noise on the velocity only
    f = sp.lambdify(list(model.state), list(model.drift.subs(dict(zip(model.params, truth)))))
    Z = proto.exact(200_000, np.random.default_rng(4))

    def worst(Z):
        F = np.array([np.broadcast_to(c, Z.shape[:1]) for c in f(Z[:, 0], Z[:, 1])]).T
        out = 0.0
        for k in ((0.0, 1.0), (1.0, 0.0), (1.0, 1.0), (2.0, -1.0)):
            u = Z @ np.array(k)
            q = D[1, 1] * k[1] ** 2
            pairs = ((np.cos, lambda a: -np.sin(a)), (lambda a: -np.sin(a), lambda a: -np.cos(a)))
            for d1, d2 in pairs:
                terms = (F @ np.array(k)) * d1(u) + q * d2(u)
                out = max(out, abs(terms.mean()) / (terms.std() / np.sqrt(u.size)))
        return out

    assert worst(Z) < 4.0
    wrong = Z.copy()
    wrong[:, 1] *= np.sqrt(0.3 / 0.25)
    assert worst(wrong) > 20.0


def _fixed_point_eigenvalues(name):
    """(the drift's root from the chains' start x0 — SciPy's ``fsolve`` on SymPy's lambdified
    drift at the truth —, x0, the eigenvalues of SymPy's Jacobian there)."""
    import sympy as sp
    from scipy.optimize import fsolve

    model, truth, proto = fams.family(name)
    f = sp.Matrix(model.drift).subs(dict(zip(model.params, truth)))
    x = list(model.state)
    F = sp.lambdify([x], list(f), "numpy")
    J = sp.lambdify([x], f.jacobian(x), "numpy")
    x0 = np.asarray(proto.x0, float)
    xs = fsolve(lambda v: np.asarray(F(v), float), x0, xtol=1e-12)
    assert np.abs(np.asarray(F(xs), float)).max() < 1e-9
    return xs, x0, np.linalg.eigvals(np.asarray(J(xs), float))


@pytest.mark.parametrize(
    "name",
    ["goodwin", "mm", "predprey", "lvcomp", "gompertz", "ou3_stiff", "schnakenberg", "chain4"],
)
def test_held_out_relaxation_is_the_linearisation_at_the_fixed_point(name):
    """Oracle: the stated relaxation time is 1/|Re λ|max of the drift's Jacobian at its fixed
    point (SymPy's Jacobian, SciPy's root from the chains' start)."""
    proto = fams.family(name)[2]
    _, _, lam = _fixed_point_eigenvalues(name)
    assert lam.real.max() < 0  # a stable point
    assert proto.relaxation == pytest.approx(1.0 / abs(lam.real.max()), rel=0.05)


@pytest.mark.parametrize("name", ["selkov", "bruss_cycle", "goodwin_cycle"])
def test_held_out_cycles_start_at_an_unstable_fixed_point(name):
    """Oracle: the limit-cycle families' start is their (unique) fixed point, and it is unstable
    (an eigenvalue of SymPy's Jacobian there with positive real part): the chains leave it for the
    cycle."""
    xs, x0, lam = _fixed_point_eigenvalues(name)
    assert np.abs(xs - x0).max() < 0.01
    assert lam.real.max() > 0


def test_round_twelve_exact_laws_are_the_stationary_ones():
    """Oracle for the twelfth round's exact samplers, with the drift and D lambdified by SymPy at
    the truth: the Gompertz law's draws (log-normal) meet the Stein identity E[f φ' + D φ''] = 0
    for φ = sin, cos(k log x), k = 1, 2, within 4 standard errors on 200,000 draws (with log x's
    variance doubled they fail it by more than 20); the stiff cascade's Gaussian draws meet the
    Lyapunov equation M Σ + Σ Mᵀ + 2D = 0 (M from SymPy's Jacobian of the drift), every entry
    within 5 % of 2D's largest (the sampling error with the rates of 100 is 1.5 %; a D₃₃ of
    1/20 instead of 1/200 is off by 9 %)."""
    import sympy as sp

    model, truth, proto = fams.family("gompertz")
    (x,) = model.state
    f = sp.lambdify(x, model.drift[0].subs(dict(zip(model.params, truth))), "numpy")
    D = sp.lambdify(x, model.D[0, 0], "numpy")
    X = proto.exact(200_000, np.random.default_rng(5))[:, 0]

    def worst(X):
        out, u = 0.0, np.log(X)
        for k in (1.0, 2.0):  # φ = g(k log x): φ' = g'·k/x, φ'' = (g''·k² − g'·k)/x²
            pairs = ((np.cos, lambda v: -np.sin(v)), (lambda v: -np.sin(v), lambda v: -np.cos(v)))
            for g1, g2 in pairs:
                d1 = g1(k * u) * k / X
                d2 = (g2(k * u) * k * k - g1(k * u) * k) / X**2
                terms = f(X) * d1 + D(X) * d2
                out = max(out, abs(terms.mean()) / (terms.std() / np.sqrt(X.size)))
        return out

    assert worst(X) < 4.0
    assert worst(np.exp(1.75 + (np.log(X) - 1.75) * np.sqrt(2.0))) > 20.0

    model, truth, proto = fams.family("ou3_stiff")
    assert proto.sampler == "simulate" and proto.exact is not None  # the oracle cell
    J = sp.Matrix(model.drift).subs(dict(zip(model.params, truth))).jacobian(list(model.state))
    M = np.asarray(J.tolist(), dtype=float)
    D3 = np.asarray(model.D.tolist(), dtype=float)
    S = np.cov(proto.exact(400_000, np.random.default_rng(6)).T)
    assert np.abs(M @ S + S @ M.T + 2 * D3).max() < 0.05 * 2 * D3.max()
    assert np.sort(np.linalg.eigvals(M).real)[-1] == pytest.approx(-1 / proto.relaxation, 1e-3)


def test_round_thirteen_exact_laws_and_moments():
    """Oracle for the thirteenth round, the drift and D lambdified by SymPy at the truth: the
    autoregulation switch's exact draws (quadrature of its 1-D law) meet the Stein identity
    E[f φ' + D φ''] = 0 for φ = sin, cos(kx), k = 1, 2, within 4 standard errors on 200,000 draws,
    and put about half the mass in each well (with D doubled, Ω = 20, the identity fails by more
    than 20); the linear chain's Lyapunov covariance with D at the drift's root m (SymPy's
    Jacobian, SciPy's Lyapunov solver) is the product-Poisson diag(m)/Ω."""
    import scipy.linalg
    import sympy as sp

    model, truth, proto = fams.family("autoact4")
    assert proto.sampler == "simulate" and proto.x0 == "exact"
    (x,) = model.state
    f = sp.lambdify(x, model.drift[0].subs(dict(zip(model.params, truth))), "numpy")
    D = sp.lambdify(x, model.D[0, 0], "numpy")
    X = proto.exact(200_000, np.random.default_rng(7))[:, 0]
    assert np.all(D(X) > 0) and 0.45 < np.mean(X < 0.818) < 0.55

    def worst(scale):
        out = 0.0
        for k in (1.0, 2.0):
            pairs = ((np.cos, lambda v: -np.sin(v)), (lambda v: -np.sin(v), lambda v: -np.cos(v)))
            for d1, d2 in pairs:
                terms = f(X) * k * d1(k * X) + scale * D(X) * k * k * d2(k * X)
                out = max(out, abs(terms.mean()) / (terms.std() / np.sqrt(X.size)))
        return out

    assert worst(1.0) < 4.0
    assert worst(2.0) > 20.0

    model, truth, proto = fams.family("chain4")
    sub = dict(zip(model.params, truth))
    m = np.asarray(proto.x0, float)
    F = sp.Matrix(model.drift).subs(sub)
    at_m = dict(zip(model.state, m))
    assert np.abs(np.asarray(F.subs(at_m), float)).max() < 1e-12
    M = np.asarray(F.jacobian(list(model.state)).tolist(), dtype=float)
    Dm = np.asarray(model.D.subs(at_m).tolist(), dtype=float)
    S = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * Dm)
    assert np.allclose(S, np.diag(m) / 50, atol=1e-12)


def test_data_factor_bench_counts_by_hand():
    """The factors bench's summary: per claim (the point value, the range's lower end) how many
    whole-line parameters and how many of them finite at 5·N; "flat" where the claim is inf."""
    from dynosed_sym.apps.bench.data_factors import _summary

    inf = math.inf
    rows = [  # (point, lower end, upper end, finite at 5·N)
        (600.0, 2.3, inf, True),  # the point overstated, the lower end did not
        (4.0, 1.1, inf, True),
        (9.0, 6.0, 30.0, False),
        (inf, inf, inf, True),  # flat
    ]
    s = _summary(rows)
    assert s["point (q/t)²: ≤ 5"] == (1, 1) and s["point (q/t)²: > 5"] == (2, 1)
    assert s["range, lower end: ≤ 5"] == (2, 2) and s["range, lower end: > 5"] == (1, 0)
    assert s["point (q/t)²: flat"] == (1, 1) and s["range, lower end: flat"] == (1, 1)
