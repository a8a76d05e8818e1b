"""The peer benchmark's tables: medians over the data sets, pooled interval coverage, and the
"done when" ratios of issue 23 (ours against the peer in the same run)."""

from __future__ import annotations

import numpy as np
import ours
import tasks

RMSE_GOAL, COVERAGE_GOAL, TIME_GOAL = 0.6, 0.90, 0.1


def _med(values):
    v = [x for x in values if x is not None and np.isfinite(x)]
    return float(np.median(v)) if v else float("nan")


def interval_counts(recs, select=None):
    """(covered, finite, total) of the 95 % intervals pooled over data sets; ``select(name)``
    picks parameters (default: all)."""
    cov = fin = tot = 0
    for r in recs:
        for nm, t, (lo, hi) in zip(r["names"], r["truth"], r["ci"]):
            if select is not None and not select(nm):
                continue
            tot += 1
            if np.isfinite(lo) and np.isfinite(hi):
                fin += 1
                cov += int(lo <= t <= hi)
    return cov, fin, tot


def linear_row(task, recs, method):
    """Metrics of one method on one task and size (``method``: "stadion" or an estimator)."""
    if method == "stadion":
        Ws = [np.asarray(r["W"]) for r in recs]
        shift_err = [
            np.abs(np.asarray(r["shift"]) - [task.shift_vector(e) for e in task.envs]).max()
            for r in recs
        ]
        times = [r["fit_seconds"] for r in recs]
        cpu = [r.get("fit_cpu_seconds") for r in recs]
        compile_s = _med([r["compile_seconds"] for r in recs])
        intervals = None
    else:
        Ws = [ours.w_matrix(task, r) for r in recs]
        shift_err = [
            max(abs(v - t) for nm, v, t in zip(r["names"], r["theta"], r["truth"]) if "shift" in nm)
            for r in recs
        ]
        times = [r["seconds"] for r in recs]
        cpu = [r.get("cpu_seconds") for r in recs]
        compile_s = None
        intervals = interval_counts(recs)
    errs = [tasks.w_errors(W, task) for W in Ws]
    struct = [tasks.structure_scores(W, task) for W in Ws]
    return {
        "time": _med(times),
        "cpu": _med(cpu),
        "compile": compile_s,
        "rmse": _med([e[0] for e in errs]),
        "rmse_range": (min(e[0] for e in errs), max(e[0] for e in errs)),
        "max": _med([e[1] for e in errs]),
        "auroc": _med([s[0] for s in struct]),
        "auprc": _med([s[1] for s in struct]),
        "shift_err": _med(shift_err),
        "intervals": intervals,
        "ranks": sorted({r["rank"] for r in recs}) if method != "stadion" else None,
        "n_params": recs[0].get("n_params"),
    }


def _fmt_intervals(iv):
    if iv is None:
        return "none"
    cov, fin, tot = iv
    share = f"{cov / fin:.0%}" if fin else "—"
    return f"{fin}/{tot} finite, {cov} cover ({share})"


HEADER = (
    f"  {'method':<14} {'n/env':>6} {'wall/fit':>9} {'cpu/fit':>8} {'compile':>8} "
    f"{'W RMSE':>7} {'(range)':>13} {'W max':>6} {'AUROC':>6} {'AUPRC':>6} {'shift':>6}  "
    "95 % intervals (all parameters, pooled)"
)


def format_row(label, n, row):
    comp = "—" if row["compile"] is None else f"{row['compile']:.1f} s"
    lo, hi = row["rmse_range"]
    rank = "" if not row["ranks"] else f"  rank {'/'.join(map(str, row['ranks']))}"
    return (
        f"  {label:<14} {n:>6} {row['time']:>7.2f} s {row['cpu']:>6.2f} s {comp:>8} "
        f"{row['rmse']:>7.3f} {f'[{lo:.3f}, {hi:.3f}]':>13} {row['max']:>6.3f} "
        f"{row['auroc']:>6.3f} {row['auprc']:>6.3f} {row['shift_err']:>6.3f}  "
        f"{_fmt_intervals(row['intervals'])}{rank}"
    )


def done_when(peer_row, row, label):
    """Issue 23's criteria for one of our rows against the peer's row of the same size."""
    ratio_rmse = row["rmse"] / peer_row["rmse"]
    ratio_time = row["time"] / peer_row["time"]
    cov, fin, _ = row["intervals"]
    coverage = cov / fin if fin else float("nan")
    ok = [ratio_rmse <= RMSE_GOAL, coverage >= COVERAGE_GOAL, ratio_time <= TIME_GOAL]
    peer_struct = (row["auroc"] >= peer_row["auroc"]) and (row["auprc"] >= peer_row["auprc"])
    return (
        f"    {label}: W RMSE {ratio_rmse:.2f}× the peer's (≤ {RMSE_GOAL}: "
        f"{'yes' if ok[0] else 'NO'}), coverage {coverage:.1%} (≥ 90 %: "
        f"{'yes' if ok[1] else 'NO'}), wall time {ratio_time:.3f}× (≤ 1/10: "
        f"{'yes' if ok[2] else 'NO'}), AUROC/AUPRC at least the peer's: "
        f"{'yes' if peer_struct else 'NO'}"
    )


def lorenz_row(recs, method, truth):
    """Relative errors (%) of σ, ρ, β: median |error| and RMSE over the data sets."""
    names = ["sigma", "rho", "beta"]
    if method == "stadion":
        est = np.array([[r[k] for k in names] for r in recs])
        times = [r["fit_seconds"] for r in recs]
        cpu = [r.get("fit_cpu_seconds") for r in recs]
        compile_s, intervals = _med([r["compile_seconds"] for r in recs]), None
    else:
        est = np.array([r["theta"] for r in recs])
        times = [r["seconds"] for r in recs]
        cpu = [r.get("cpu_seconds") for r in recs]
        compile_s, intervals = None, interval_counts(recs)
    rel = 100 * (est / np.asarray(truth) - 1)
    return {
        "time": _med(times),
        "cpu": _med(cpu),
        "compile": compile_s,
        "median_abs": np.median(np.abs(rel), axis=0),
        "rmse": np.sqrt(np.mean(rel**2, axis=0)),
        "mean": rel.mean(axis=0),
        "intervals": intervals,
        "ranks": sorted({r["rank"] for r in recs}) if method != "stadion" else None,
    }


LORENZ_HEADER = (
    f"  {'method':<14} {'N':>6} {'wall/fit':>9} {'cpu/fit':>8} {'compile':>8}  "
    f"{'median |rel. error| % (σ, ρ, β)':<32} {'RMSE % (σ, ρ, β)':<26} 95 % intervals"
)


def format_lorenz(label, N, row):
    comp = "—" if row["compile"] is None else f"{row['compile']:.1f} s"
    med = ", ".join(f"{v:.2f}" for v in row["median_abs"])
    rmse = ", ".join(f"{v:.2f}" for v in row["rmse"])
    rank = "" if not row["ranks"] else f"  rank {'/'.join(map(str, row['ranks']))}"
    return (
        f"  {label:<14} {N:>6} {row['time']:>7.2f} s {row['cpu']:>6.2f} s {comp:>8}  "
        f"{med:<32} {rmse:<26} {_fmt_intervals(row['intervals'])}{rank}"
    )
