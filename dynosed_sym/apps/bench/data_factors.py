"""What the summary's "no (… × N)" label says against what five times the data then find
(``--only factors``; results: benchmarks/data_factors.txt).

Per cell, 20 data sets of a sweep family at N₁ and at 5·N₁ (the larger set's first N₁ rows are
the smaller set: :func:`.calibration_data.load_dataset`), both fitted with the default
``fit_global`` (the features' seed k for set k, as the sweep).  For every parameter whose interval
is the whole line at N₁: the label's claim — the point value ``(q/t)²`` the summary printed before
(``fit.report.data_factor``) and the lower end of its range from ``t ± 1.645``
(``fit.report.data_factor_range``, what it prints now) — and whether its interval is finite at
5·N₁.  A claim above 5 whose parameter is finite at 5·N₁ overstated the data needed
(docs/design-statistics.md §8, "Strength").
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import dynosed_sym as ds

from .calibration_data import default_cache_dir, load_dataset
from .calibration_families import family

N_SETS = 20
#: The larger data set over the smaller one.
FACTOR = 5
#: (family, N₁): the sweep's cells whose whole-line intervals at N₁ are common.
CELLS = (("selkov", 2000), ("hopf", 2000), ("vdp", 2000), ("lorenz96", 2000))


def _fit(model, X, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # counted through the report, not shown one by one
        return ds.fit_global(model, X, features=ds.Features(seed=seed)).report


def _cell(name, N, sets, cache):
    """Per parameter with a whole-line interval at N: (point factor, range's lower end, range's
    upper end, finite at FACTOR·N)."""
    model, truth, protocol = family(name)
    rows = []
    for k in range(sets):
        big = load_dataset(name, model, truth, protocol, k, FACTOR * N, cache)
        small, large = _fit(model, big[:N], k), _fit(model, big, k)
        open_ = ~np.isfinite(small.ci).all(axis=1)
        later = np.isfinite(large.ci).all(axis=1)
        for j in np.flatnonzero(open_):
            lo, hi = small.data_factor_range[j]
            rows.append((small.data_factor[j], lo, hi, bool(later[j])))
    return rows


def _summary(rows):
    """{claim: (parameters, of them finite at FACTOR·N)} for the point value and the lower end."""
    out = {}
    for what, col in (("point (q/t)²", 0), ("range, lower end", 1)):
        f = np.array([r[col] for r in rows], float)
        later = np.array([r[3] for r in rows], bool)
        for label, mask in (
            (f"≤ {FACTOR}", np.isfinite(f) & (f <= FACTOR)),
            (f"> {FACTOR}", np.isfinite(f) & (f > FACTOR)),
            ("flat", ~np.isfinite(f)),
        ):
            out[f"{what}: {label}"] = (int(mask.sum()), int((mask & later).sum()))
    return out


def section_factors(quick, repeats):
    print(f"\n== factors: the 'no (… × N)' label at N against {FACTOR}·N ==")
    print(
        f"   default fit_global, {N_SETS} data sets per cell (the sweep's); per parameter whose "
        f"interval is the whole line at N: the label's claim and whether {FACTOR}·N gives it a "
        f"finite interval ('> {FACTOR}' and finite: the label overstated the data needed)"
    )
    t0 = time.perf_counter()
    sets = 4 if quick else N_SETS
    cache, out = default_cache_dir(), {}
    print(f"  {'family':<10} {'N':>6}  {'claim':<28} {'parameters':>10} {'finite at 5N':>13}")
    for name, N in CELLS:
        rows = _cell(name, N, sets, cache)
        summary = out[f"{name}/{N}"] = _summary(rows)
        for claim, (count, later) in summary.items():
            print(f"  {name:<10} {N:>6}  {claim:<28} {count:>10d} {later:>13d}", flush=True)
        point = np.array([r[0] for r in rows], float)
        point = point[np.isfinite(point)]
        if point.size:
            print(f"  {name:<10} {N:>6}  point values: {point.min():.2g} to {point.max():.2g}")
    print(f"\nfactors: {time.perf_counter() - t0:.0f} s")
    return out


__all__ = ["section_factors", "CELLS", "FACTOR"]
