"""Metrics and the summary table of the calibration sweep, computed from per-fit records alone
(so a saved records file can be re-analysed without refitting: ``--reanalyse PATH``).

A *record* is one fit (a dict, JSON-ready): family, source ("simulate", "exact" or "diffrax"),
N, set, route, column (the estimator options: "default", "ridge", candidates), ``theta``,
``lo``/``hi`` (the 95 % interval; ±inf where unbounded), ``status``, ``rank``, ``p_value``,
``consistent``, ``residual_ratio``, ``converged``, ``seconds``, ``warnings``, and ``error`` (a
message) for a fit that raised.

Per cell (family, source, N, route, column), over its data sets:

- ``coverage``: covered / finite over the *finite* 95 % intervals (both ends finite), pooled
  over parameters and data sets; per parameter the same counts;
- ``finite_share``: finite intervals / (fits × parameters);
- ``coverage_all``: every interval counted, an unbounded one covering when it contains the truth;
- ``rmse``: √ mean (θ̂ − θ)² pooled over parameters and sets; per parameter too;
- ``p_below``: fraction of misspecification p-values < 0.05; ``inconsistent``: fraction of fits
  whose report says "inconsistent"; ``undetermined``: fraction whose verdict is
  "undetermined" (rejected at the estimate, not along the open scale); ``contradict``: fraction
  where the two verdicts disagree (inconsistent with p ≥ 0.05, or consistent with p < 0.05);
- errors, non-converged fits, fits that warned, the median rank and seconds per fit.

Flags of a cell's default column: ``COV`` coverage < 0.90; ``FIN`` the ridge covers (≥ 0.90 of
its finite intervals, and it has some) while the default has finite intervals for fewer than half
of the parameters; ``ERR`` fits that raised.

Paired by data set (:func:`finite_where_covered`): of the (set, parameter) pairs whose ridge
interval is finite and covers the truth, the share where the default's interval is finite too —
the issue's "where the ridge fit covers, at least half of the parameters get finite intervals"
read per parameter.  ``FIN`` counts every parameter of the cell, also those the ridge gives no
interval either (a structurally null direction), so the two can differ.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

__all__ = ["cell_metrics", "cells_of", "summary_table", "flags", "finite_where_covered"]

COVERAGE_TARGET = 0.90


def _interval_arrays(records, n):
    lo = np.array([r["lo"] for r in records], float).reshape(-1, n)
    hi = np.array([r["hi"] for r in records], float).reshape(-1, n)
    return lo, hi


def _finite_covered(lo, hi, truth):
    """(finite, covered) boolean arrays: both ends finite; finite and containing the truth (a NaN
    end compares False: never covers)."""
    finite = np.isfinite(lo) & np.isfinite(hi)
    return finite, finite & (lo <= truth) & (truth <= hi)


def _ks_uniform(p):
    """Kolmogorov–Smirnov distance of the p-values to U(0, 1) (None below 5 values)."""
    if p.size < 5:
        return None
    from scipy import stats

    return float(stats.kstest(p, "uniform").statistic)


def cell_metrics(records, truth):
    """The metrics of one cell (see the module docstring) from its records and the truth."""
    truth = np.asarray(truth, float)
    n = truth.size
    ok = [r for r in records if r.get("error") is None]
    out = {
        "fits": len(records),
        "errors": len(records) - len(ok),
        "not_converged": sum(1 for r in ok if r.get("converged") is False),
        "warned": sum(1 for r in ok if r.get("warnings")),
    }
    if not ok:
        return out
    theta = np.array([r["theta"] for r in ok], float).reshape(-1, n)
    lo, hi = _interval_arrays(ok, n)
    finite, covered = _finite_covered(lo, hi, truth)
    inside = (lo <= truth) & (truth <= hi)  # an unbounded interval too (coverage_all)
    err2 = (theta - truth) ** 2
    p = np.array([np.nan if r.get("p_value") is None else r["p_value"] for r in ok], float)
    cons = [r.get("consistent") for r in ok]
    incons = np.array([c is False for c in cons])
    has_p = np.isfinite(p)
    contra = has_p & ((incons & (p >= 0.05)) | (np.array([c is True for c in cons]) & (p < 0.05)))
    out.update(
        covered=int(covered.sum()),
        finite=int(finite.sum()),
        coverage=float(covered.sum() / finite.sum()) if finite.any() else None,
        covered_per_param=covered.sum(0).tolist(),
        finite_per_param=finite.sum(0).tolist(),
        finite_share=float(finite.mean()),
        coverage_all=float(inside.mean()),
        rmse=float(np.sqrt(np.nanmean(err2))),
        rmse_per_param=np.sqrt(np.nanmean(err2, axis=0)).tolist(),
        p_values=int(has_p.sum()),
        p_below=float(np.mean(p[has_p] < 0.05)) if has_p.any() else None,
        p_ks=_ks_uniform(p[has_p]),
        inconsistent=float(incons.mean()),
        undetermined=_share(ok, "verdict", "undetermined"),
        contradict=float(contra.mean()),
        rank_median=float(np.median([r["rank"] for r in ok])),
        seconds_median=float(np.median([r["seconds"] for r in ok])),
    )
    return out


def finite_where_covered(default, ridge, truth):
    """(pairs, finite): the (set, parameter) pairs whose ridge interval is finite and covers the
    truth, and how many of them have a finite default interval; records paired by ``set``
    (sets where either fit raised are left out)."""
    truth = np.asarray(truth, float)
    by_set = {r["set"]: r for r in default if r.get("error") is None}
    pairs = finite = 0
    for r in ridge:
        d = by_set.get(r["set"])
        if d is None or r.get("error") is not None:
            continue
        _, cov = _finite_covered(np.asarray(r["lo"], float), np.asarray(r["hi"], float), truth)
        dfin, _ = _finite_covered(np.asarray(d["lo"], float), np.asarray(d["hi"], float), truth)
        pairs += int(cov.sum())
        finite += int((cov & dfin).sum())
    return pairs, finite


def cells_of(records):
    """Records grouped by cell key (family, source, N, route) → column → list, in first-seen
    order (the sweep's fixed order)."""
    cells = OrderedDict()
    for r in records:
        key = (r["family"], r["source"], int(r["N"]), r["route"])
        cells.setdefault(key, OrderedDict()).setdefault(r["column"], []).append(r)
    return cells


def flags(default, ridge):
    """Flags of a cell's default column against its ridge column (module docstring)."""
    out = []
    if default.get("errors"):
        out.append("ERR")
    cov = default.get("coverage")
    if cov is not None and cov < COVERAGE_TARGET:
        out.append("COV")
    if (
        ridge is not None
        and ridge.get("coverage") is not None
        and ridge["coverage"] >= COVERAGE_TARGET
        and default.get("finite_share", 1.0) < 0.5
    ):
        out.append("FIN")
    return out


def _fmt_cov(m):
    if m.get("coverage") is None:
        return f"{'—':>5} {0:>4}/{0:<4}"
    return f"{m['coverage']:5.2f} {m['covered']:>4}/{m['finite']:<4}"


def _fmt(x, spec=".2f", width=5):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—".rjust(width)
    return format(x, spec).rjust(width)


def _column_text(m):
    if not m.get("fits") or "rmse" not in m:
        return f"{'all fits failed':>34}"
    return f"{_fmt_cov(m)} {_fmt(m['finite_share'])} {_fmt(m['rmse'], '.3g', 8)}"


def _worst_ratio(m, ridge):
    """Largest per-parameter RMSE ratio against the ridge (parameters the ridge gets exactly
    right, RMSE 0, are left out)."""
    a, b = m.get("rmse_per_param"), ridge.get("rmse_per_param")
    if a is None or b is None:
        return None
    r = [x / y for x, y in zip(a, b) if y > 0 and np.isfinite(x)]
    return max(r) if r else None


def _share(records, key, value):
    """Share of the records whose ``key`` is ``value`` (None when no record has the key: records
    written before it existed)."""
    if not any(key in r for r in records):
        return None
    return float(np.mean([r.get(key) == value for r in records]))


def summary_table(records, truths, columns=None):
    """(text, cell list): one line per cell with each column's coverage (covered/finite),
    finite share and RMSE, the RMSE ratio of every column against the ridge, the default's
    P(p < 0.05), inconsistent and contradicting verdicts, its median rank and flags."""
    cells = cells_of(records)
    if columns is None:
        columns = list(OrderedDict.fromkeys(r["column"] for r in records))
    others = [c for c in columns if c != "ridge"]
    head = f"{'family':<14}{'source':<9}{'N':>7} {'route':<7}"
    for c in columns:
        head += f"| {c[:12] + ': cov cov/fin':<21} {'fin':>5} {'RMSE':>8} "
    head += "| " + " ".join(f"{c[:6]:>6} {'max_j':>7}" for c in others if "ridge" in columns)
    head += " | p<.05 incon undet contra rank | flags"
    lines, out = [head, "-" * len(head)], []
    main = "default" if "default" in columns else columns[0]  # the column flagged and paired
    for key, bycol in cells.items():
        truth = truths[key[0]]
        ms = {c: cell_metrics(bycol.get(c, []), truth) for c in columns}
        row = f"{key[0]:<14}{key[1]:<9}{key[2]:>7} {key[3]:<7}"
        for c in columns:
            row += f"| {_column_text(ms[c])} "
        ratios, worst = {}, {}
        if "ridge" in columns:
            for c in others:
                a, b = ms[c].get("rmse"), ms["ridge"].get("rmse")
                ratios[c] = a / b if a is not None and b else None
                worst[c] = _worst_ratio(ms[c], ms["ridge"])
            row += "| " + " ".join(
                f"{_fmt(ratios[c], '.2f', 6)} {_fmt(worst[c], '.2f', 7)}" for c in others
            )
        d = ms[main]
        row += (
            f" | {_fmt(d.get('p_below'))} {_fmt(d.get('inconsistent'))} "
            f"{_fmt(d.get('undetermined'), '.2f', 5)} "
            f"{_fmt(d.get('contradict'), '.2f', 6)} {_fmt(d.get('rank_median'), '.0f', 4)}"
        )
        fl = flags(d, ms.get("ridge"))
        row += " | " + " ".join(fl)
        lines.append(row)
        paired = None
        if "ridge" in columns:
            paired = finite_where_covered(bycol.get(main, []), bycol.get("ridge", []), truth)
        out.append(
            {
                "cell": list(key),
                "metrics": ms,
                "rmse_ratio_vs_ridge": ratios,
                "worst_param_ratio_vs_ridge": worst,
                "flags": fl,
                "finite_where_ridge_covers": paired,
            }
        )
    return "\n".join(lines), out


def flag_summary(cells):
    """Lines naming the flagged cells (COV, FIN) and the RMSE ratios' range."""
    cov = [c for c in cells if "COV" in c["flags"]]
    fin = [c for c in cells if "FIN" in c["flags"]]
    err = [c for c in cells if "ERR" in c["flags"]]

    def name(c):
        fam, src, n, route = c["cell"]
        return f"{fam}/{route}/N={n}" + ("" if src == "simulate" else f"/{src}")  # exact: named

    lines = [
        f"cells with default coverage < {COVERAGE_TARGET:.0%}: {len(cov)} of {len(cells)}: "
        + (", ".join(name(c) for c in cov) or "none"),
        f"cells where the ridge covers but < half of the default's intervals are finite: "
        f"{len(fin)}: " + (", ".join(name(c) for c in fin) or "none"),
    ]
    paired = [
        (c, *c["finite_where_ridge_covers"])
        for c in cells
        if c.get("finite_where_ridge_covers") and c["finite_where_ridge_covers"][0]
    ]
    if paired:
        low = [(c, p, f) for c, p, f in paired if f < 0.5 * p]
        lines.append(
            "cells where, of the parameters whose ridge interval covers (paired by data set), "
            f"fewer than half get a finite default interval: {len(low)} of {len(paired)}: "
            + (", ".join(f"{name(c)} ({f}/{p})" for c, p, f in low) or "none")
        )
    if err:
        lines.append(f"cells with failed fits: {len(err)}: " + ", ".join(name(c) for c in err))
    ratios = [
        c["rmse_ratio_vs_ridge"].get("default")
        for c in cells
        if c["rmse_ratio_vs_ridge"].get("default") is not None
    ]
    if ratios:
        r = np.array(ratios)
        lines.append(
            f"RMSE default/ridge over {r.size} cells: median {np.median(r):.2f}, "
            f"range {r.min():.2f}–{r.max():.2f}; > 1.10 in {int((r > 1.10).sum())} cells"
        )
    return lines
