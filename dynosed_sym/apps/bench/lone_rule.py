"""What the lone-direction rule (:func:`dynosed_sym.solve.flat.lone_carriers`) changes, cell by
cell: each data set is fitted twice, the rule switched off (``flat.LONE_SHARE = 2``: no
direction qualifies) and on, and the finite 95 % intervals and those covering the truth are
counted for both.

``python -m dynosed_sym.apps.bench.lone_rule ROUTE SETS FAMILY:N [FAMILY:N ...]``, ROUTE
``global`` or ``local``; the data are the calibration sweep's (``benchmarks/.cache``, drawn
when missing), the fits the sweep's default ones (``Features(seed=k)``; its k-means probes).
Run from the repository root.
"""

from __future__ import annotations

import collections
import sys
import warnings

import numpy as np

__all__ = ["compare", "main"]

CACHE = "benchmarks/.cache"


def _fit(route, model, X, protocol, k):
    import dynosed_sym as ds

    from .calibration_sweep import _probes

    if route == "global":
        return ds.fit_global(model, X, features=ds.Features(seed=k))
    return ds.fit_local(model, X, _probes(X, protocol, k))


def compare(route, name, N, sets):
    """Counter of ``off_fin, off_cov, on_fin, on_cov`` over data sets 0 … sets − 1."""
    from ...solve import flat
    from .calibration_data import load_dataset
    from .calibration_families import family

    model, truth, protocol = family(name)
    truth = np.asarray(truth, float)
    out = collections.Counter()
    share = flat.LONE_SHARE
    try:
        for k in range(sets):
            X = load_dataset(name, model, truth, protocol, k, N, CACHE, source="simulate")
            for tag, value in (("off", 2.0), ("on", share)):
                flat.LONE_SHARE = value
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ci = _fit(route, model, X, protocol, k).conf_int()
                fin = np.isfinite(ci).all(axis=1)
                cov = fin & (ci[:, 0] <= truth) & (truth <= ci[:, 1])
                out[tag + "_fin"] += int(fin.sum())
                out[tag + "_cov"] += int(cov.sum())
    finally:
        flat.LONE_SHARE = share
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[0] not in ("global", "local"):
        raise SystemExit(__doc__)
    route, sets = argv[0], int(argv[1])
    total = collections.Counter()
    print(f"lone-direction rule, {route} route, data sets 0-{sets - 1}: covered/finite")
    print(f"{'cell':28s} {'rule off':>10s} {'rule on':>10s}")
    for cell in argv[2:]:
        name, N = cell.split(":")
        c = compare(route, name, int(N), sets)
        total.update(c)
        mark = "" if c["off_fin"] == c["on_fin"] else "   changed"
        off, on = f"{c['off_cov']}/{c['off_fin']}", f"{c['on_cov']}/{c['on_fin']}"
        print(f"{cell:28s} {off:>10s} {on:>10s}{mark}", flush=True)
    off, on = f"{total['off_cov']}/{total['off_fin']}", f"{total['on_cov']}/{total['on_fin']}"
    print(f"{'all cells':28s} {off:>10s} {on:>10s}")


if __name__ == "__main__":
    main()
