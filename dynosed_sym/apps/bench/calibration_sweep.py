"""The calibration sweep: coverage, finite share and RMSE of the default fit against
the ridge fit on model families the method was not designed on, both routes, two or three N
per family, ``n_sets`` data sets per cell.

Run::

    python -m dynosed_sym.apps.bench --only sweep                       # the full sweep
    python -m dynosed_sym.apps.bench --only sweep --families fhn_focus,repressilator \\
        --n-sets 5 --routes global                                      # a subset
    python -m dynosed_sym.apps.bench --only sweep \\
        --default-options '{"estimator": "ridge"}' --candidate 'u_ridge={"statistic": "u"}'
    python -m dynosed_sym.apps.bench --only sweep --reanalyse records.json.gz   # no fitting

Families: :mod:`.calibration_families`, :mod:`.calibration_networks`; data and cache:
:mod:`.calibration_data`; metrics and the table: :mod:`.calibration_metrics`; the independent
solver: :mod:`.calibration_diffrax`.

Fits, as a user would call them, with the option objects the flat ``options`` build
(:func:`dynosed_sym.options.option_objects`): global ``ds.fit_global(model, X,
features=Features(seed=k), ...)``; local ``ds.fit_local(model, X, probes, ...)`` with ``probes``
the k-means centres of X (``ds.choose_probes(X, k)``, k = ``protocol.local_probes`` or N/25 if
smaller: probes where the data are dense), shared by the columns.  Columns: "default" (the
package's defaults, or the options of ``--default-options``), "ridge" (``statistic="v",
estimator="ridge"``) and any ``--candidate NAME=JSON``.  Options may be one dict for both routes or
``{"global": {...}, "local": {...}}``.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import warnings
from dataclasses import dataclass, field

import dynosed_sym as ds
from dynosed_sym.options import option_objects
from dynosed_sym.routes.global_route import MOVED as GLOBAL_OPTIONS
from dynosed_sym.routes.local_route import MOVED as LOCAL_OPTIONS

from .calibration_data import (
    BASE_SEED,
    data_seed,
    default_cache_dir,
    ks_columns,
    load_dataset,
    prefetch_diffrax,
    simulator_fingerprint,
    stationarity_check,
)
from .calibration_families import HELD_OUT, family, family_names
from .calibration_metrics import flag_summary, summary_table
from .common import ROOT

__all__ = ["SweepOptions", "run_sweep", "fit_record", "route_options", "DIFFRAX_N"]

RIDGE = {"statistic": "v", "estimator": "ridge"}
ROUTES = ("global", "local")
#: Sample size of the cells drawn with the independent solver (diffrax).
DIFFRAX_N = 10_000
TABLE = os.path.join(ROOT, "benchmarks", "calibration_sweep.txt")
RECORDS = os.path.join(ROOT, "benchmarks", "calibration_sweep.json.gz")


def route_options(options):
    """``{"global": kw, "local": kw}`` from one dict for both routes or a per-route dict."""
    options = dict(options or {})
    if set(options) <= {"global", "local"} and options:
        return {r: dict(options.get(r, {})) for r in ROUTES}
    return {r: dict(options) for r in ROUTES}


@dataclass
class SweepOptions:
    """What one sweep runs (the command line's ``--families`` … flags)."""

    families: list = field(default_factory=family_names)
    n_sets: int = 20
    routes: tuple = ROUTES
    columns: dict = field(
        default_factory=lambda: {"default": route_options({}), "ridge": route_options(RIDGE)}
    )
    cache_dir: str = field(default_factory=default_cache_dir)
    diffrax: bool = True
    sizes: tuple | None = None  # override every family's N (tests, quick looks)
    table_path: str | None = None
    records_path: str | None = None
    quiet: bool = False
    resume: bool = False  # keep the families already in the records file (same settings)
    sources: tuple | None = None  # only cells from these sources (simulate, exact, diffrax)

    @property
    def full(self):
        """The complete default sweep (the one whose results are committed)."""
        return (
            self.families == family_names()
            and self.n_sets == 20
            and tuple(self.routes) == ROUTES
            and self.sizes is None
            and self.diffrax
            and self.sources is None
        )


def _probes(X, protocol, k):
    n_probes = max(2, min(protocol.local_probes, X.shape[0] // 25))
    return ds.choose_probes(X, n_probes, method="kmeans", seed=k)


def timed_record(fit, fields):
    """``{"error": None, **fields(fit())}`` with the seconds and the warnings of the fit; a fit
    (or reading it) that raises gives the record with ``error`` — a result of the sweep, not its
    end.  Shared by :func:`fit_record` and the local-designs sweep's records."""
    t0 = time.perf_counter()
    rec = {"error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec.update(fields(fit()))
        except Exception as exc:  # a fit that raises is a result of the sweep, not its end
            rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
    rec["seconds"] = time.perf_counter() - t0
    rec["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:200]}" for w in caught})
    return rec


def fit_record(model, X, route, options, k, probes=None):
    """One fit as a record (calibration_metrics): estimates, interval, report, time, warnings;
    a fit that raises gives a record with ``error``."""

    def fit():
        if route == "global":
            objects = option_objects("fit_global", {"seed": k, **options}, GLOBAL_OPTIONS)
            return ds.fit_global(model, X, **objects)
        objects = option_objects("fit_local", options, LOCAL_OPTIONS)
        return ds.fit_local(model, X, probes, **objects)

    return timed_record(fit, _fit_fields)


def _fit_fields(fit):
    ci = fit.conf_int()
    rep = fit.report
    return dict(
        theta=fit.theta.tolist(),
        lo=ci[:, 0].tolist(),
        hi=ci[:, 1].tolist(),
        status=None if rep.status is None else list(rep.status),
        rank=int(rep.rank),
        p_value=None if rep.p_value is None else float(rep.p_value),
        consistent=None if rep.consistent is None else bool(rep.consistent),
        verdict=rep.verdict,
        residual_ratio=None if rep.residual_ratio is None else float(rep.residual_ratio),
        misspec_stat=None if rep.misspec_stat is None else float(rep.misspec_stat),
        misspec_dim=None if rep.misspec_dim is None else float(rep.misspec_dim),
        converged=bool(fit.converged),
    )


def _fit_set(name, model, protocol, X, N, k, source, opts):
    """Every route × column on one data set: a list of records."""
    out = []
    probes = _probes(X, protocol, k) if "local" in opts.routes else None
    for route in opts.routes:
        for col, per_route in opts.columns.items():
            rec = fit_record(model, X, route, per_route[route], k, probes)
            rec.update(family=name, source=source, N=int(N), set=k, route=route, column=col)
            rec["data_seed"] = data_seed(name, k)
            out.append(rec)
    return out


def _diffrax_check(name, model, truth, protocol, opts):
    """Draw the diffrax data sets (one solver run), then KS per coordinate of diffrax set 0
    against ds.simulate's set 0 (both ``DIFFRAX_N`` rows, different seeds' streams)."""
    n = min(DIFFRAX_N, max(protocol.sizes))
    prefetch_diffrax(name, model, truth, protocol, range(opts.n_sets), n, opts.cache_dir)
    X = load_dataset(name, model, truth, protocol, 0, n, opts.cache_dir)
    Y = load_dataset(name, model, truth, protocol, 0, n, opts.cache_dir, source="diffrax")
    p = ks_columns(X, Y)
    return {"n": n, "p_values": p, "min_p": min(p), "ok": bool(min(p) >= 0.01 / len(p))}


def _sources(protocol, opts):
    """(source, N) of a family's cells: its sampler at every N; for a simulated family with an
    exact law also exact draws at the largest N (oracle cells: data error or method error?);
    diffrax at DIFFRAX_N where the protocol asks for it."""
    sizes = _sizes(protocol, opts)
    out = [(protocol.sampler, n) for n in sizes]
    if protocol.sampler == "simulate" and protocol.exact is not None:
        out.append(("exact", max(sizes)))
    if opts.diffrax and protocol.diffrax:
        out.append(("diffrax", min(DIFFRAX_N, max(protocol.sizes))))
    return [(src, n) for src, n in out if opts.sources is None or src in opts.sources]


def _sizes(protocol, opts):
    return tuple(opts.sizes) if opts.sizes else protocol.sizes


def _run_family(name, opts, log, save=None):
    """Records and the family's description (truth, checks) for one family; ``save(records,
    info)`` after every finished cell (partial families are kept in the records file with
    ``info["complete"] = False``; ``--resume`` runs them again)."""
    model, truth, protocol = family(name)
    if opts.sizes:
        from dataclasses import replace

        protocol = replace(protocol, sizes=tuple(opts.sizes))
    t0 = time.perf_counter()
    info = {
        "param_names": model.param_names,
        "truth": truth.tolist(),
        "equations": model.equations(),
        "protocol": protocol.describe(),
        "sizes": list(protocol.sizes),
        "stationarity": stationarity_check(name, model, truth, protocol, opts.cache_dir),
    }
    if opts.diffrax and protocol.diffrax and (opts.sources is None or "diffrax" in opts.sources):
        info["diffrax_check"] = _diffrax_check(name, model, truth, protocol, opts)
    records = []
    for source, N in _sources(protocol, opts):
        t1 = time.perf_counter()
        for k in range(opts.n_sets):
            X = load_dataset(name, model, truth, protocol, k, N, opts.cache_dir, source=source)
            records.extend(_fit_set(name, model, protocol, X, N, k, source, opts))
        log(f"  {name} {source} N = {N}: {opts.n_sets} sets in {time.perf_counter() - t1:.0f} s")
        if save is not None:
            save(records, {**info, "complete": False})
    info["seconds"] = time.perf_counter() - t0
    info["complete"] = True
    return records, info


def _write_records(path, payload):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        json.dump(payload, fh)  # ±inf as Infinity (Python's json reads it back)
    os.replace(tmp, path)


def read_records(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _paths(opts):
    if opts.full:
        return opts.table_path or TABLE, opts.records_path or RECORDS
    return (
        opts.table_path or os.path.join(opts.cache_dir, "sweep_last.txt"),
        opts.records_path or os.path.join(opts.cache_dir, "sweep_last.json.gz"),
    )


def _header(payload):
    meta = payload["meta"]
    lines = [
        "calibration sweep (issue 19): " + meta["command"],
        f"  dynosed_sym {meta['version']} (simulator {meta['simulator']}), base seed "
        f"{meta['base_seed']}, {meta['n_sets']} data sets per cell, routes {meta['routes']}",
        "  columns: " + "; ".join(f"{c} = {json.dumps(o)}" for c, o in meta["columns"].items()),
        "  coverage = covered/finite over finite 95 % intervals (pooled over parameters and data "
        "sets); fin = share of finite intervals; RMSE pooled over parameters; p<.05, incon(sistent)"
        ", contra(dicting verdicts), rank: the default column; after the columns, each column's"
        " RMSE over the ridge's (pooled) and max_j, the largest ratio of one parameter's RMSEs",
    ]
    return lines


def _family_lines(payload):
    lines = ["", "families (data, stationarity check, independent solver):"]
    for name, info in payload["families"].items():
        st = info["stationarity"]
        chk = (
            "exact sampler"
            if st["min_p"] is None
            else (f"{st['method']}: min KS p {st['min_p']:.3f} ({'ok' if st['ok'] else 'SUSPECT'})")
        )
        cut = "" if info.get("complete", True) else " [INCOMPLETE: the run stopped in this family]"
        lines.append(f"  {name} (n = {len(info['truth'])}): {info['protocol']}; {chk}{cut}")
        dx = info.get("diffrax_check")
        if dx:
            lines.append(
                f"    diffrax vs ds.simulate, N = {dx['n']}: KS p per coordinate "
                + ", ".join(f"{p:.3f}" for p in dx["p_values"])
                + f" ({'agree' if dx['ok'] else 'DISAGREE'} at 0.01/d)"
            )
    return lines


def render(payload):
    """The full text: header, table, flagged cells, families."""
    truths = {nm: info["truth"] for nm, info in payload["families"].items()}
    table, cells = summary_table(payload["records"], truths, list(payload["meta"]["columns"]))
    text = _header(payload) + ["", table, ""] + flag_summary(cells) + _family_lines(payload)
    if payload["meta"].get("seconds") is not None:
        text.append(f"\nsweep time {payload['meta']['seconds']:.0f} s")
    return "\n".join(text), cells


def _resumable(path, meta):
    """{family: (records, info)} of a previous run with the same settings at ``path``."""
    if not os.path.exists(path):
        return {}
    prev = read_records(path)
    same = all(
        json.loads(json.dumps(prev["meta"].get(k))) == json.loads(json.dumps(meta[k]))
        for k in ("n_sets", "routes", "columns", "simulator", "version")
    )
    if not same:
        raise SystemExit(
            f"--resume: {path} was made with other settings; remove it or drop --resume"
        )
    by = {}
    for r in prev["records"]:
        by.setdefault(r["family"], []).append(r)
    return {
        nm: (by.get(nm, []), info)
        for nm, info in prev["families"].items()
        if info.get("complete", True)
    }


def run_sweep(opts, command="python -m dynosed_sym.apps.bench --only sweep"):
    """Run the sweep; print and write the table and the records.  Returns the payload."""
    log = (lambda s: None) if opts.quiet else (lambda s: print(s, flush=True))
    t0 = time.perf_counter()
    payload = new_payload(
        command, opts.n_sets, opts.columns, routes=list(opts.routes), diffrax_n=DIFFRAX_N
    )
    table_path, records_path = _paths(opts)
    done = _resumable(records_path, payload["meta"]) if opts.resume else {}
    for name in opts.families:
        if name in done:
            records, info = done[name]
            log(f"  {name}: {len(records)} records kept from {records_path} (--resume)")
        else:

            def save(partial, info, name=name):
                part = {**payload, "records": payload["records"] + partial}
                part["families"] = {**payload["families"], name: info}
                _write_records(records_path, part)

            records, info = _run_family(name, opts, log, save)
        payload["records"].extend(records)
        payload["families"][name] = info
        _write_records(records_path, payload)  # after every family: an interrupted run keeps it
    return finish_run(payload, t0, render, table_path, records_path, log)


def new_payload(command, n_sets, columns, **meta):
    """An empty run: its ``meta`` (the command, package and simulator versions, base seed, data
    sets per cell, columns, and ``meta``'s further entries), no families, no records."""
    head = {
        "command": command,
        "version": ds.__version__,
        "simulator": simulator_fingerprint(),
        "base_seed": BASE_SEED,
        "n_sets": n_sets,
        "columns": columns,
    }
    return {"meta": {**head, **meta, "seconds": None}, "families": {}, "records": []}


def finish_run(payload, t0, render, table_path, records_path, log):
    """The run's seconds into ``payload``, its records and ``render(payload)``'s table written
    (the cells kept in ``payload["cells"]``), the table logged; returns ``payload``."""
    payload["meta"]["seconds"] = time.perf_counter() - t0
    _write_records(records_path, payload)
    text, cells = render(payload)
    payload["cells"] = cells
    log("\n" + text)
    with open(table_path, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    log(f"\nwrote {table_path} and {records_path}")
    return payload


def merge(payloads):
    """One payload from the records of several runs (e.g. subsets run side by side)."""
    out = {"meta": dict(payloads[0]["meta"]), "families": {}, "records": []}
    for p in payloads:
        for nm, info in p["families"].items():  # key by key: a part without diffrax keeps it
            out["families"].setdefault(nm, {}).update(info)
        out["records"].extend(p["records"])
    order = {nm: i for i, nm in enumerate(family_names())}
    out["records"].sort(key=lambda r: order.get(r["family"], len(order)))  # the fixed order
    out["families"] = dict(
        sorted(out["families"].items(), key=lambda kv: order.get(kv[0], len(order)))
    )
    out["meta"]["command"] = " + ".join(p["meta"]["command"] for p in payloads)
    secs = [p["meta"].get("seconds") for p in payloads]
    out["meta"]["seconds"] = None if None in secs else sum(secs)
    out["meta"]["parts_seconds"] = secs
    return out


def reanalyse(paths, table_path=None, records_path=None):
    """Print (and optionally write) the table of one or more saved records files (no fitting);
    several files are merged, e.g. subsets of the families run side by side."""
    payload = merge([read_records(p) for p in paths])
    text, cells = render(payload)
    print(text)
    if table_path:
        with open(table_path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if records_path:
        _write_records(records_path, payload)
    return cells


def parse_options(default_options=None, candidates=()):
    """Columns from the command line: ``--default-options JSON``, ``--candidate NAME=JSON``."""
    cols = {"default": route_options(json.loads(default_options) if default_options else {})}
    cols["ridge"] = route_options(RIDGE)
    for cand in candidates or ():
        name, _, js = cand.partition("=")
        if not name or not js or name in cols:
            raise ValueError(f"--candidate {cand!r}: expected NAME=JSON with a new NAME")
        cols[name] = route_options(json.loads(js))
    return cols


def section_sweep(args):
    """The bench runner: SweepOptions from the command line's arguments."""
    if getattr(args, "reanalyse", None):
        paths = [p.strip() for p in args.reanalyse.split(",")]
        return {"cells": reanalyse(paths, args.table_out, args.records_out)}
    names = family_names()
    fams = names if not args.families else [f.strip() for f in args.families.split(",")]
    unknown = [f for f in fams if f not in names and f not in HELD_OUT]
    if unknown:
        raise SystemExit(
            f"unknown families {unknown}; choose from {', '.join(names)} "
            f"or the held-out {', '.join(HELD_OUT)}"
        )
    opts = SweepOptions(
        families=fams,
        n_sets=args.n_sets,
        routes=tuple(r.strip() for r in args.routes.split(",")),
        columns=parse_options(args.default_options, args.candidate),
        diffrax=not args.no_diffrax,
        sizes=tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None,
        table_path=args.table_out,
        records_path=args.records_out,
        resume=args.resume,
        sources=tuple(args.sources.split(",")) if args.sources else None,
    )
    bad = [r for r in opts.routes if r not in ROUTES]
    if bad:
        raise SystemExit(f"--routes: unknown {bad}; choose from global, local")
    print("\n== calibration sweep (issue 19): coverage and RMSE on families not designed on ==")
    payload = run_sweep(opts, command="python -m dynosed_sym.apps.bench " + args.argv_text)
    return {"cells": payload["cells"], "families": payload["families"]}


def add_arguments(ap):
    """The sweep's flags on the bench's argument parser."""
    g = ap.add_argument_group("calibration sweep (--only sweep, or part of --only calibration)")
    g.add_argument("--families", default=None, help="comma-separated subset of the families")
    g.add_argument("--n-sets", type=int, default=20, help="data sets per cell (default 20)")
    g.add_argument("--routes", default="global,local", help="global, local or both")
    g.add_argument("--sizes", default=None, help="override every family's N (comma-separated)")
    g.add_argument(
        "--default-options",
        default=None,
        help='JSON options of the "default" column, e.g. \'{"estimator": "ridge"}\' or '
        '\'{"global": {...}, "local": {...}}\'',
    )
    g.add_argument(
        "--candidate",
        action="append",
        default=[],
        help="another column NAME=JSON (repeatable), compared side by side",
    )
    g.add_argument("--no-diffrax", action="store_true", help="skip the independent solver")
    g.add_argument(
        "--sources", default=None, help="only cells of these sources: simulate, exact, diffrax"
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="keep the families already in the records file (an interrupted run goes on)",
    )
    g.add_argument(
        "--reanalyse",
        default=None,
        help="print the table of records files (comma-separated: merged), no fitting",
    )
    g.add_argument("--table-out", default=None, help="write the table here")
    g.add_argument("--records-out", default=None, help="write the records (.json or .json.gz)")
