"""What the lone-direction rule (:func:`dynosed_sym.solve.flat.lone_carriers`) changes, cell by
cell: each data set is fitted twice, the rule switched off (``flat.LONE_SHARE = 2``: no
direction qualifies) and on, and the finite 95 % intervals and those covering the truth are
counted for both.  With ``--tau X`` the two fits are the rule as it is and the rule with the
small loadings' bias sized at X·τ instead of :data:`~dynosed_sym.solve.flat.LONE_TAU`·τ; with
``--z Z`` the attenuation of :func:`dynosed_sym.solve.weak.attenuation` sized at the
curvature's point estimate κ̂ (before stop 54) and at κ̂ − Z·sd(κ̂).  Each table gives the
median and largest ratio of the widths of the intervals finite in both fits.

``python -m dynosed_sym.apps.bench.lone_rule ROUTE SETS [--tau X | --z Z] FAMILY:N …``,
ROUTE ``global`` or ``local``; the data are the calibration sweep's (``benchmarks/.cache``,
drawn when missing), the fits the sweep's default ones (``Features(seed=k)``; its k-means
probes).  Run from the repository root.
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


def _settings(tau):
    """``[(tag, {(module, attribute): value}), …]``: the two fits of each data set."""
    from ...solve import flat, weak

    if tau is None:
        return [
            ("off", {(flat, "LONE_SHARE"): 2.0}),
            ("on", {(flat, "LONE_SHARE"): flat.LONE_SHARE}),
        ]
    if isinstance(tau, tuple):  # ("z", Z): the attenuation's curvature bound
        return [("off", {(weak, "ATTENUATION_Z"): 0.0}), ("on", {(weak, "ATTENUATION_Z"): tau[1]})]
    return [("off", {(flat, "LONE_TAU"): flat.LONE_TAU}), ("on", {(flat, "LONE_TAU"): float(tau)})]


def compare(route, name, N, sets, tau=None):
    """Counter of ``off_fin, off_cov, on_fin, on_cov`` over data sets 0 … sets − 1, and the
    width ratios on/off of the intervals finite in both (a list)."""
    from ...solve import flat, weak
    from .calibration_data import load_dataset
    from .calibration_families import family

    model, truth, protocol = family(name)
    truth = np.asarray(truth, float)
    out, ratios = collections.Counter(), []
    saved = {
        (flat, "LONE_SHARE"): flat.LONE_SHARE,
        (flat, "LONE_TAU"): flat.LONE_TAU,
        (weak, "ATTENUATION_Z"): getattr(weak, "ATTENUATION_Z", 0.0),
    }
    try:
        for k in range(sets):
            X = load_dataset(name, model, truth, protocol, k, N, CACHE, source="simulate")
            cis = {}
            for tag, values in _settings(tau):
                for (module, attr), value in values.items():
                    setattr(module, attr, value)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ci = cis[tag] = _fit(route, model, X, protocol, k).conf_int()
                for (module, attr), value in saved.items():
                    setattr(module, attr, value)
                fin = np.isfinite(ci).all(axis=1)
                cov = fin & (ci[:, 0] <= truth) & (truth <= ci[:, 1])
                out[tag + "_fin"] += int(fin.sum())
                out[tag + "_cov"] += int(cov.sum())
            both = np.isfinite(cis["off"]).all(axis=1) & np.isfinite(cis["on"]).all(axis=1)
            w_off, w_on = (np.diff(cis[t][both], axis=1)[:, 0] for t in ("off", "on"))
            ok = w_off > 0
            ratios.extend((w_on[ok] / w_off[ok]).tolist())
    finally:
        for (module, attr), value in saved.items():
            setattr(module, attr, value)
    return out, ratios


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    tau = None
    if "--tau" in argv:
        i = argv.index("--tau")
        tau = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    if "--z" in argv:
        i = argv.index("--z")
        tau = ("z", float(argv[i + 1]))
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) < 3 or argv[0] not in ("global", "local"):
        raise SystemExit(__doc__)
    route, sets = argv[0], int(argv[1])
    total, all_ratios = collections.Counter(), []
    if tau is None:
        heads, what = ("rule off", "rule on"), "lone-direction rule"
    elif isinstance(tau, tuple):
        heads, what = ("at κ̂", f"z = {tau[1]:g}"), f"attenuation at κ̂ − {tau[1]:g}·sd(κ̂)"
    else:
        heads, what = ("as is", f"{tau:g}·τ"), f"small loadings' bias at {tau:g}·τ"
    print(f"{what}, {route} route, data sets 0-{sets - 1}: covered/finite")
    print(f"{'cell':28s} {heads[0]:>10s} {heads[1]:>10s}  width ratio (median, max)")
    for cell in argv[2:]:
        name, N = cell.split(":")
        c, ratios = compare(route, name, int(N), sets, tau)
        total.update(c)
        all_ratios.extend(ratios)
        mark = "" if c["off_fin"] == c["on_fin"] else "   changed"
        off, on = f"{c['off_cov']}/{c['off_fin']}", f"{c['on_cov']}/{c['on_fin']}"
        width = f"{np.median(ratios):.3g}, {np.max(ratios):.3g}" if ratios else "—"
        print(f"{cell:28s} {off:>10s} {on:>10s}  {width}{mark}", flush=True)
    off, on = f"{total['off_cov']}/{total['off_fin']}", f"{total['on_cov']}/{total['on_fin']}"
    width = f"{np.median(all_ratios):.3g}, {np.max(all_ratios):.3g}" if all_ratios else "—"
    print(f"{'all cells':28s} {off:>10s} {on:>10s}  {width}")


if __name__ == "__main__":
    main()
