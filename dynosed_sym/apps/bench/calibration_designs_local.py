"""Held-out calibration of LOCAL fits on DESIGNS with the default kernel score, the method frozen
(no change to the package was made for it): coverage of the 95 % intervals, share of finite
intervals, RMSE and verdicts of ``ds.fit_local(model, design, probes, inputs=…)`` on five
textbook model families the method was not designed on, the default fit against the ridge
(``statistic="v", estimator="ridge"``) on the same data.

Families (:data:`LOCAL_DESIGNS`; each docstring gives the truth and why the law is proper):

* ``input_cubic`` — one state, ``x' = k·u − g·x − h·x³``, the input u as the environment
  (u = 0.5, 1, 2); ``ds.simulate`` and exact draws (1-D quadrature of the zero-flux law);
* ``toggle`` — the genetic toggle switch (Gardner et al. 2000), ``x' = a1/(1 + y²) − d1·x``,
  ``y' = a2/(1 + (c·x)²) − d2·y``, the inducer reducing the active repressor to a fraction c
  (c = 1: bistable and symmetric; 0.75; 0.5); ``ds.simulate``;
* ``cir_input`` — the CIR (Feller) diffusion with an input, ``z' = a·u − b·z``, D(z) = z/2
  (state-dependent noise), u = 3 and 6: Gamma laws of shape 2u; ``ds.simulate`` and exact draws;
* ``knockdown_net`` — a 3-gene repressilator whose production is knocked down,
  ``x_i' = u_i(b_i + w_i/(1 + x_{i−1}²)) − g_i·x_i``, environments wild type and one knockdown
  per gene (u_i = 0.3), n = 9; ``ds.simulate``;
* ``ou_relaxation`` — a time course: a 2-D OU (all of M free, complex eigenvalues, anisotropic
  D) relaxing from a known Gaussian initial law, seven snapshots t = 0, 0.3, …, 1.8 (five
  interior ones enter the local fit with ∂ₜlog p from their neighbours);
  ``ds.simulate_time_course`` and exact draws of the transient Gaussian law.

Cells: N = 500 and 5000 samples per environment (per snapshot), 20 data sets each, and for the
families with an exact law also exact draws at 5000 (the oracle: data error or method error?).
Data set k of environment E of family F is drawn with ``data_seed("F.E", k)`` (the sweep's base
seed, :mod:`.calibration_data`), the 500-sample set is the first 500 rows (independent chains)
of the 5000 one; probes: the k-means centres of every environment's (snapshot's) data,
min(20, N/25) of them, as in the sweep.  Metrics and the table: :mod:`.calibration_metrics`.

Run (2–4 minutes on 2 cores; results benchmarks/calibration_sweep_local_designs.*)::

    python -m dynosed_sym.apps.bench --only local_designs
    python -m dynosed_sym.apps.bench --only local_designs --families toggle --n-sets 3 \\
        --sizes 500                                          # a quick look (cache folder)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.identifiability.designs_structural import gaussian_law_at
from dynosed_sym.options import option_objects
from dynosed_sym.routes.local_route import MOVED as LOCAL_OPTIONS
from dynosed_sym.simulation import simulate_time_course

from .calibration_data import (
    Protocol,
    data_seed,
    default_cache_dir,
    ks_columns,
    law_1d,
    load_dataset,
    stationarity_check,
)
from .calibration_metrics import cell_metrics, cells_of, flag_summary, summary_table
from .calibration_sweep import (
    RIDGE,
    _probes,
    _write_records,
    finish_run,
    new_payload,
    read_records,
    timed_record,
)
from .common import ROOT

__all__ = ["LOCAL_DESIGNS", "DesignFamily", "DesignSweep", "run_local_designs", "design_record"]

R = sp.Rational
SIZES = (500, 5000)
TABLE = os.path.join(ROOT, "benchmarks", "calibration_sweep_local_designs.txt")
RECORDS = os.path.join(ROOT, "benchmarks", "calibration_sweep_local_designs.json.gz")
COLUMNS = {"default": {}, "ridge": dict(RIDGE)}
VERDICTS = ("consistent", "INCONSISTENT", "undetermined")


@dataclass(frozen=True)
class DesignFamily:
    """A model, its truth and its design.

    ``envs``: ``{environment: inputs}`` of a stationary design, each drawn by ``protocols[env]``
    (a :class:`~.calibration_data.Protocol`; its ``exact`` the exact law in that environment);
    or, for a time course, ``course = dict(times, initial=(μ₀, Σ₀), dt, exact=fn(t, n, rng))``.
    ``sources``: the cells' data sources at every N ("simulate") and at the largest ("exact").
    """

    name: str
    model: object
    truth: np.ndarray
    envs: dict = field(default_factory=dict)
    protocols: dict = field(default_factory=dict)
    course: dict | None = None
    sizes: tuple = SIZES
    exact: bool = False
    note: str = ""

    def describe(self):
        if self.course is not None:
            times = ", ".join(f"{t:g}" for t in self.course["times"])
            return f"time course t = {times} from N(μ₀, Σ₀); {self.note}"
        envs = "; ".join(
            f"{e} ({', '.join(f'{k} = {v:g}' for k, v in u.items())})" for e, u in self.envs.items()
        )
        return f"{envs}; {self.protocols[next(iter(self.envs))].describe()}; {self.note}"


def _stationary(name, model, truth, envs, note, exact=None, **protocol):
    """A stationary design: one Protocol per environment (``exact(inputs)`` its exact law)."""
    protocols = {
        e: Protocol(sizes=SIZES, exact=None if exact is None else exact(u), **protocol)
        for e, u in envs.items()
    }
    return DesignFamily(
        name, model, np.asarray(truth, float), envs, protocols, exact=exact is not None, note=note
    )


#: (k, g, h) of input_cubic, its D and inputs.
CUBIC_TRUTH, CUBIC_D, CUBIC_U = (1.0, 1.0, 0.5), R(1, 4), (0.5, 1.0, 2.0)


def input_cubic():
    """(k, g, h) = (1, 1, 1/2), D = 1/4: ``x' = k·u − g·x − h·x³`` (a production k·u set by
    the input, linear and cubic degradation); one stable fixed point in every environment (f
    strictly decreasing), the zero-flux law p ∝ exp(∫ f/D) = exp(4(k·u·x − x²/2 − x⁴/8)), all
    moments finite.  Slowest rate |f'(x*)| ≥ g = 1.  ``ds.simulate`` from x = 1, dt = 0.01,
    burn-in 10 time units; exact draws by quadrature of the law on [−6, 8]."""
    x, k, g, h, u = sp.symbols("x k g h u", real=True)
    model = ds.SDEModel(
        [x], [k, g, h], [k * u - g * x - h * x**3], CUBIC_D, inputs=[u], name="ld_input_cubic"
    )
    kt, gt, ht = CUBIC_TRUTH

    def exact(inp):
        ue = inp["u"]
        f = lambda v: kt * ue - gt * v - ht * v**3  # noqa: E731
        return law_1d(f, lambda v: np.full_like(v, float(CUBIC_D)), -6.0, 8.0)

    envs = {f"u{ue:g}": {"u": ue} for ue in CUBIC_U}
    return _stationary(
        "input_cubic",
        model,
        CUBIC_TRUTH,
        envs,
        "k·u: the input scales the production",
        exact=exact,
        dt=0.01,
        burn_in=1000,
        relaxation=1.0,
        x0=(1.0,),
        relaxation_note="1/g, the smallest |f'|",
    )


#: (a1, a2, d1, d2) of the toggle switch, its D and the inducer's active fractions c.
TOGGLE_TRUTH, TOGGLE_D, TOGGLE_C = (4.0, 4.0, 1.0, 1.0), R(3, 10), (1.0, 0.75, 0.5)


def toggle():
    """(a1, a2, d1, d2) = (4, 4, 1, 1), D = 3/10 (additive): at c = 1 the symmetric toggle with
    Hill exponent 2 is bistable (stable states (3.73, 0.27) and (0.27, 3.73), a saddle at 1.38
    on the diagonal); the chains hop between them (share x > y 0.50 after 100 and 300 time
    units, N = 4000, KS p 0.16, 0.08), the law bimodal.  Less active repressor makes the y-high
    state dominant (x > y in 0.8 % of 4000 chains at c = 0.6).  The drift is bounded production
    minus linear decay: a proper law in every environment.  ``ds.simulate`` from (1, 1), dt =
    0.01, burn-in 100 time units (the hopping at c = 1 is the slow part; its rate was not
    measured, the relaxation time 10 is a guess, and the sweep's stationarity check compares
    with chains run 3× as long)."""
    x, y, a1, a2, d1, d2, c = sp.symbols("x y a1 a2 d1 d2 c", real=True)
    model = ds.SDEModel(
        [x, y],
        [a1, a2, d1, d2],
        [a1 / (1 + y**2) - d1 * x, a2 / (1 + (c * x) ** 2) - d2 * y],
        TOGGLE_D,
        inputs=[c],
        name="ld_toggle",
    )
    envs = {f"c{ce:g}": {"c": ce} for ce in TOGGLE_C}
    return _stationary(
        "toggle",
        model,
        TOGGLE_TRUTH,
        envs,
        "c: active repressor fraction (inducer)",
        dt=0.01,
        burn_in=10_000,
        relaxation=10.0,
        x0=(1.0, 1.0),
        relaxation_note="assumed for the hopping at c = 1 (not measured; see the check)",
    )


#: (a, b) of the CIR family, its noise scale s (D = s·z) and inputs.
CIR_TRUTH, CIR_S, CIR_U = (1.0, 1.0), R(1, 2), (3.0, 6.0)


def cir_input():
    """(a, b) = (1, 1), D(z) = z/2: ``z' = a·u − b·z``, the Feller diffusion with a production
    set by u; the zero-flux law is the Gamma law of shape a·u/s = 2u (6 and 12 at u = 3, 6: well
    above the Feller condition, the density vanishing at 0 like z⁵) and rate b/s = 2, exact
    draws.  ``ds.simulate`` from z = u at dt = 0.0005, burn-in 15 time units (15/b).  An Euler
    step can still cross z = 0, where √(2D) is not defined: at dt = 0.01 one chain in 4000 did at
    shape 3, at dt = 0.002 one of 5000 at shape 4 (the simulator refuses such a data set)."""
    z, a, b, u = sp.symbols("z a b u", real=True)
    model = ds.SDEModel([z], [a, b], [a * u - b * z], [CIR_S * z], inputs=[u], name="ld_cir")

    def exact(inp):
        shape, scale = CIR_TRUTH[0] * inp["u"] / float(CIR_S), float(CIR_S) / CIR_TRUTH[1]
        return lambda n, rng: rng.gamma(shape, scale, int(n))[:, None]

    envs = {f"u{ue:g}": {"u": ue} for ue in CIR_U}
    protocol = dict(dt=0.0005, burn_in=30_000, relaxation=1.0, relaxation_note="1/b")
    fam = _stationary("cir_input", model, CIR_TRUTH, envs, "D(z) = z/2", exact=exact, **protocol)
    protocols = {e: replace(p, x0=(envs[e]["u"],)) for e, p in fam.protocols.items()}
    return replace(fam, protocols=protocols)


#: (b, w, g) per gene of the knockdown repressilator, its D and the knockdown factor.
REP_B, REP_W, REP_G, REP_D, REP_KD = 0.5, 2.0, 1.0, R(1, 20), 0.3


def knockdown_net():
    """b_i = 1/2, w_i = 2, g_i = 1, D = 1/20: ``x_i' = u_i(b_i + w_i/(1 + x_{i−1}²)) −
    g_i·x_i`` (gene i repressed by gene i − 1, cyclically).  Wild type: one fixed point, x_i =
    1.267 (0.5 + 2/(1 + x²) = x), Jacobian eigenvalues −1 − c·ω over the cube roots ω of unity
    with c = w·2x/(1 + x²)² = 0.746 < 2: −1.75 and −0.63 ± 0.65i, a stable focus, no cycle (the
    protein-only repressilator with Hill 2 needs c > 2).  Knockdown of gene i: its production
    × 0.3.  The drift is bounded production minus linear decay: proper laws.  ``ds.simulate``
    from x = 1, dt = 0.01, burn-in 20 time units (12 × 1/0.63; the sweep's stationarity check
    compares with chains run 3× as long in every environment)."""
    xs = sp.symbols("x1:4", real=True)
    bs, ws, gs = (sp.symbols(f"{c}1:4", real=True) for c in "bwg")
    us = sp.symbols("u1:4", real=True)
    f = [us[i] * (bs[i] + ws[i] / (1 + xs[i - 1] ** 2)) - gs[i] * xs[i] for i in range(3)]
    model = ds.SDEModel(
        list(xs), [*bs, *ws, *gs], f, REP_D, inputs=list(us), name="ld_knockdown_net"
    )
    truth = [REP_B] * 3 + [REP_W] * 3 + [REP_G] * 3
    envs = {"wt": {"u1": 1.0, "u2": 1.0, "u3": 1.0}}
    for i in (1, 2, 3):
        envs[f"kd{i}"] = {f"u{j}": (REP_KD if j == i else 1.0) for j in (1, 2, 3)}
    return _stationary(
        "knockdown_net",
        model,
        truth,
        envs,
        "u_i: knockdown factor of gene i",
        dt=0.01,
        burn_in=2000,
        relaxation=1.6,
        x0=(1.0, 1.0, 1.0),
        relaxation_note="1/0.63, the slowest rate of the wild type's linearisation",
    )


#: M and D of the relaxing OU, its start and snapshot times.
OU_M = np.array([[-1.0, 1.0], [-0.25, -0.75]])
OU_D = np.diag([0.5, 0.25])
OU_START = (np.array([2.0, -1.0]), 0.2 * np.eye(2))
OU_TIMES = tuple(0.3 * k for k in range(7))


def ou_relaxation():
    """M = [[−1, 1], [−1/4, −3/4]] (eigenvalues −0.875 ± 0.48i), D = diag(1/2, 1/4), all four
    entries of M free; started from N((2, −1), 0.2·I) and seen at t = 0, 0.3, …, 1.8 (the mean
    moves from (2, −1) to about (0.4, −0.5)); the law at every t is Gaussian (mean e^{Mt}μ₀,
    covariance by Van Loan: :func:`~dynosed_sym.identifiability.designs_structural.gaussian_law_at`)
    and is drawn exactly for the oracle cells; ``ds.simulate_time_course`` at dt = 0.01
    otherwise.  Unlike the stationary designs the local fit uses ∂ₜlog p estimated from the
    neighbouring snapshots (docs/designs.md, "The local route on a time course")."""
    x1, x2 = sp.symbols("x1 x2", real=True)
    Ms = sp.symbols("M11 M12 M21 M22", real=True)
    M = sp.Matrix(2, 2, Ms)
    Dm = [R(1, 2), R(1, 4)]
    model = ds.SDEModel([x1, x2], list(Ms), list(M * sp.Matrix([x1, x2])), Dm, name="ld_ou_relax")

    def exact(t, n, rng):
        mu, S = gaussian_law_at(OU_M, np.zeros(2), OU_D, t, OU_START)
        return rng.multivariate_normal(mu, S, int(n))

    course = dict(times=OU_TIMES, initial=OU_START, dt=0.01, exact=exact)
    return DesignFamily(
        "ou_relaxation",
        model,
        OU_M.reshape(-1),
        course=course,
        exact=True,
        note="all of M free; D known",
    )


LOCAL_DESIGNS = {
    "input_cubic": input_cubic,
    "toggle": toggle,
    "cir_input": cir_input,
    "knockdown_net": knockdown_net,
    "ou_relaxation": ou_relaxation,
}


def family_names():
    return list(LOCAL_DESIGNS)


def _sources(fam, sizes):
    """(source, N) of a family's cells: ``ds.simulate`` at every N, exact draws at the largest."""
    out = [("simulate", n) for n in sizes]
    return out + ([("exact", max(sizes))] if fam.exact else [])


def _env_model(fam, env):
    return fam.model.with_inputs(fam.envs[env])


def _course(fam, k, n, source):
    """Time course k of ``fam`` with n samples per snapshot (the first n rows of the largest)."""
    c = fam.course
    seed = data_seed(f"{fam.name}.course", k)
    n_max = max(fam.sizes)
    if source == "exact":
        snaps = {
            float(t): c["exact"](t, n_max, np.random.default_rng([seed, j]))
            for j, t in enumerate(c["times"])
        }
    else:
        tc = simulate_time_course(
            fam.model,
            fam.truth,
            list(c["times"]),
            n_max,
            initial=c["initial"],
            dt=c["dt"],
            seed=seed,
        )
        snaps = dict(tc.items())
    return {t: X[:n] for t, X in snaps.items()}


def design_data(fam, k, n, source, cache_dir):
    """(data, probes, inputs) of data set k: ``{env: X}`` (or a TimeCourse), the k-means probes
    of every environment (snapshot) and the environments' inputs (None for a time course)."""
    if fam.course is not None:
        snaps = _course(fam, k, n, source)
        probes = {t: _probes(X, Protocol(), k) for t, X in snaps.items()}
        return ds.TimeCourse(snaps), probes, None
    data, probes = {}, {}
    for env in fam.envs:
        X = load_dataset(
            f"{fam.name}.{env}",
            _env_model(fam, env),
            fam.truth,
            fam.protocols[env],
            k,
            n,
            cache_dir,
            source=source,
        )
        data[env], probes[env] = X, _probes(X, fam.protocols[env], k)
    return data, probes, dict(fam.envs)


def design_record(model, data, probes, inputs, options, truth):
    """One local fit on a design as a record (:mod:`.calibration_metrics`): estimates, interval,
    per parameter finite and covering, verdict, ``misspec_smoothing``, time, warnings; a fit
    that raises gives a record with ``error``."""

    def fit():
        objects = option_objects("fit_local", options, LOCAL_OPTIONS)
        return ds.fit_local(model, data, probes, inputs=inputs, **objects)

    def fields(fit):
        ci = fit.conf_int()
        rep = fit.report
        finite = np.isfinite(ci).all(axis=1)
        return dict(
            theta=fit.theta.tolist(),
            lo=ci[:, 0].tolist(),
            hi=ci[:, 1].tolist(),
            finite=finite.tolist(),
            covers=(finite & (ci[:, 0] <= truth) & (truth <= ci[:, 1])).tolist(),
            rank=int(rep.rank),
            p_value=None if rep.p_value is None else float(rep.p_value),
            consistent=None if rep.consistent is None else bool(rep.consistent),
            verdict=rep.verdict,
            misspec_smoothing=(
                None if rep.misspec_smoothing is None else float(rep.misspec_smoothing)
            ),
            residual_ratio=None if rep.residual_ratio is None else float(rep.residual_ratio),
            converged=bool(fit.converged),
        )

    return timed_record(fit, fields)


def _check(fam, cache_dir):
    """Is the data's law the intended one?  Per environment the sweep's stationarity check (KS
    against exact draws, else against chains run 3× as long); for a time course KS of each
    ds.simulate snapshot (set 0, largest N) against exact draws of the transient law."""
    if fam.course is None:
        return {
            env: stationarity_check(
                f"{fam.name}.{env}",
                _env_model(fam, env),
                fam.truth,
                fam.protocols[env],
                cache_dir,
            )
            for env in fam.envs
        }
    n = max(fam.sizes)
    sim = _course(fam, 0, n, "simulate")
    seed = data_seed(f"{fam.name}.check", 0)
    out = {}
    for j, (t, X) in enumerate(sim.items()):
        Y = fam.course["exact"](t, n, np.random.default_rng([seed, j]))
        p = ks_columns(X, Y)
        out[f"t={t:g}"] = {
            "method": "KS against exact draws",
            "p_values": p,
            "min_p": min(p),
            "ok": bool(min(p) >= 0.01 / len(p)),
        }
    return out


@dataclass
class DesignSweep:
    """What one run does (the command line's ``--families``, ``--n-sets``, ``--sizes``,
    ``--sources`` flags)."""

    families: list = field(default_factory=family_names)
    n_sets: int = 20
    sizes: tuple | None = None
    sources: tuple | None = None
    cache_dir: str = field(default_factory=default_cache_dir)
    table_path: str | None = None
    records_path: str | None = None
    quiet: bool = False
    extra: dict = field(default_factory=dict)  # more families (tests): {name: () -> family}

    @property
    def full(self):
        return (
            self.families == family_names()
            and self.n_sets == 20
            and self.sizes is None
            and self.sources is None
        )

    def family(self, name):
        return {**LOCAL_DESIGNS, **self.extra}[name]()


def _run_family(name, opts, log):
    fam = opts.family(name)
    if opts.sizes:
        fam = replace(fam, sizes=tuple(opts.sizes))
    t0 = time.perf_counter()
    info = {
        "param_names": list(fam.model.param_names),
        "truth": fam.truth.tolist(),
        "equations": fam.model.equations(),
        "design": fam.describe(),
        "sizes": list(fam.sizes),
        "checks": _check(fam, opts.cache_dir),
    }
    records = []
    for source, N in _sources(fam, fam.sizes):
        if opts.sources is not None and source not in opts.sources:
            continue
        t1 = time.perf_counter()
        for k in range(opts.n_sets):
            data, probes, inputs = design_data(fam, k, N, source, opts.cache_dir)
            for col, options in COLUMNS.items():
                rec = design_record(fam.model, data, probes, inputs, options, fam.truth)
                rec.update(family=name, source=source, N=int(N), set=k, route="local", column=col)
                records.append(rec)
        log(f"  {name} {source} N = {N}: {opts.n_sets} sets in {time.perf_counter() - t1:.0f} s")
    info["seconds"] = time.perf_counter() - t0
    return records, info


def _verdict_lines(records, truths):
    """Per cell and column: consistent / INCONSISTENT / undetermined verdicts and failed fits
    (counts), and hw, the median half-width of the finite intervals / |truth|."""
    lines = [
        "",
        "verdicts per cell on these correct models (consistent / INCONSISTENT / undetermined / "
        "failed fits) and hw (median half-width of the finite intervals / |truth|), "
        "default | ridge; then the default's mean estimate / truth (smallest–largest over the "
        "parameters):",
    ]
    for key, bycol in cells_of(records).items():
        parts = []
        for col in COLUMNS:
            recs = bycol.get(col, [])
            n = {v: sum(r.get("verdict") == v for r in recs) for v in VERDICTS}
            err = sum(r.get("error") is not None for r in recs)
            other = len(recs) - err - sum(n.values())
            hw = _half_width(recs, truths[key[0]])
            parts.append(
                " / ".join(f"{n[v]:>2}" for v in VERDICTS)
                + f" / {err}"
                + (f" (+{other} other)" if other else "")
                + ("  hw    —" if hw is None else f"  hw {hw:5.2f}")
            )
        ratio = _mean_ratio(bycol.get("default", []), truths[key[0]])
        lines.append(f"  {key[0]:<17}{key[1]:<9}{key[2]:>6}   " + "  |  ".join(parts) + ratio)
    return lines


def _mean_ratio(recs, truth):
    theta = [r["theta"] for r in recs if r.get("error") is None]
    if not theta:
        return ""
    q = np.mean(theta, axis=0) / np.asarray(truth, float)
    return f"  |  θ̂/θ {q.min():.2f}–{q.max():.2f}"


def _half_width(recs, truth):
    """Median over the finite intervals of their half-width / |truth| (None: none finite)."""
    truth = np.asarray(truth, float)
    ok = [r for r in recs if r.get("error") is None]
    if not ok:
        return None
    lo = np.array([r["lo"] for r in ok], float)
    hi = np.array([r["hi"] for r in ok], float)
    rel = ((hi - lo) / 2 / np.abs(truth))[np.isfinite(lo) & np.isfinite(hi)]
    return float(np.median(rel)) if rel.size else None


def pooled(records, truths):
    """{(family, source): {column: metrics}} pooled over the family's cells of that source, each
    with ``half_width``: the median over finite intervals of their half-width / |truth|."""
    groups = {}
    for r in records:
        groups.setdefault((r["family"], r["source"]), {}).setdefault(r["column"], []).append(r)
    out = {}
    for key, bycol in groups.items():
        truth = np.asarray(truths[key[0]], float)
        out[key] = {}
        for c, recs in bycol.items():
            m = cell_metrics(recs, truth)
            m["half_width"] = _half_width(recs, truth)
            out[key][c] = m
    return out


def _pooled_lines(records, truths):
    lines = [
        "",
        "pooled over the family's N (per source): coverage covered/finite, share finite, "
        "RMSE, hw = median half-width of the finite intervals / |truth|; default | ridge",
    ]
    for (fam, src), ms in pooled(records, truths).items():
        text = []
        for c in COLUMNS:
            m = ms.get(c, {})
            if "rmse" not in m:
                text.append("all fits failed")
                continue
            cov = "—" if m["coverage"] is None else f"{m['coverage']:.2f}"
            hw = "—" if m.get("half_width") is None else f"{m['half_width']:.2f}"
            text.append(
                f"{cov} {m['covered']:>4}/{m['finite']:<4} fin {m['finite_share']:.2f} "
                f"RMSE {m['rmse']:<6.3g} hw {hw}"
            )
        lines.append(f"  {fam:<17}{src:<9}" + "  |  ".join(text))
    return lines


def _family_lines(payload):
    lines = ["", "families (design; data checks):"]
    for name, info in payload["families"].items():
        lines.append(f"  {name} (n = {len(info['truth'])}): {info['design']}")
        for where, chk in info["checks"].items():
            if chk.get("min_p") is None:
                lines.append(f"    {where}: {chk['method']}")
                continue
            ok = "ok" if chk["ok"] else "SUSPECT"
            lines.append(f"    {where}: {chk['method']}: min KS p {chk['min_p']:.3f} ({ok})")
    return lines


def render(payload):
    """The full text: header, the sweep's table, flags, verdict counts, pooled lines, families."""
    meta = payload["meta"]
    truths = {nm: info["truth"] for nm, info in payload["families"].items()}
    head = [
        "calibration of local fits on designs (kernel score, method frozen): " + meta["command"],
        f"  dynosed_sym {meta['version']} (simulator {meta['simulator']}), base seed "
        f"{meta['base_seed']}, {meta['n_sets']} data sets per cell, N per environment (per "
        "snapshot of a time course); route local = ds.fit_local on the design",
        "  columns: default = {} (kernel score, temperature auto); ridge = "
        + str(COLUMNS["ridge"]),
        "  coverage = covered/finite over finite 95 % intervals (pooled over parameters and data "
        "sets); fin = share of finite intervals; RMSE pooled over parameters; p<.05, incon, undet,"
        " contra(dicting verdicts), rank: the default column; defaul = RMSE default/ridge, max_j "
        "the largest ratio of one parameter's RMSEs",
    ]
    table, cells = summary_table(payload["records"], truths, list(COLUMNS))
    text = head + ["", table, ""] + flag_summary(cells)
    text += _verdict_lines(payload["records"], truths) + _pooled_lines(payload["records"], truths)
    text += _family_lines(payload)
    if meta.get("seconds") is not None:
        text.append(f"\nrun time {meta['seconds']:.0f} s")
    return "\n".join(text), cells


def run_local_designs(opts, command="python -m dynosed_sym.apps.bench --only local_designs"):
    """Run every family; print and write the table and the records.  Returns the payload."""
    log = (lambda s: None) if opts.quiet else (lambda s: print(s, flush=True))
    t0 = time.perf_counter()
    payload = new_payload(command, opts.n_sets, COLUMNS)
    if opts.full:
        table_path, records_path = opts.table_path or TABLE, opts.records_path or RECORDS
    else:
        table_path = opts.table_path or os.path.join(opts.cache_dir, "local_designs_last.txt")
        records_path = opts.records_path or os.path.join(
            opts.cache_dir, "local_designs_last.json.gz"
        )
    for name in opts.families:
        records, info = _run_family(name, opts, log)
        payload["records"].extend(records)
        payload["families"][name] = info
        _write_records(records_path, payload)  # after every family: an interrupted run keeps it
    return finish_run(payload, t0, render, table_path, records_path, log)


def reanalyse(path):
    """The text of a saved records file (no fitting)."""
    return render(read_records(path))[0]


def section_local_designs(args):
    """The bench runner (``--only local_designs``): the sweep's ``--families``, ``--n-sets``,
    ``--sizes``, ``--sources``, ``--table-out`` and ``--records-out`` flags."""
    names = family_names()
    fams = names if not args.families else [f.strip() for f in args.families.split(",")]
    unknown = [f for f in fams if f not in names]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; choose from {', '.join(names)}")
    opts = DesignSweep(
        families=fams,
        n_sets=args.n_sets,
        sizes=tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None,
        sources=tuple(args.sources.split(",")) if args.sources else None,
        table_path=args.table_out,
        records_path=args.records_out,
    )
    print("\n== local fits on designs (kernel score): coverage on families not designed on ==")
    payload = run_local_designs(opts, command="python -m dynosed_sym.apps.bench " + args.argv_text)
    return {"cells": payload["cells"], "families": payload["families"]}
