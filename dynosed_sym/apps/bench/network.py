"""Section ``network``: the d-gene network of issue 20 at d = 10, 20, 50, 100.

Drift ``W·h(x) − x + 1/2`` with the full d × d matrix W unknown (n = d² parameters), Hill
activations h(x) = x²/(1 + x²), D = 1/20, a sparse stable truth
(:func:`~dynosed_sym.apps.bench.network_model.network_model`); with ``--network-kind rates``
every gene's decay and basal rates are unknown too, ``W·h(x) − g⊙x + β`` (n = d² + 2d: not one
matrix block, its block means an embedded face-split product, assembly/facesplit.py).  Every d
runs in a fresh process with an empty output folder and an empty ``NUMBA_CACHE_DIR``:

* cold start, stage by stage: import, declaration, symbolic derivation, printing + import of the
  generated module, Numba compilation of ``stein_features``, of the fill and of the simulator,
  simulating 5000 samples, the first ``fit_global`` (m = 2048); their sum is the time from an
  empty cache to the first fit;
* warm: simulating N samples, ``fit_global`` with its timings split (``fit.info["timings"]``
  when the fit reports them, the assembly timed on its own otherwise) and run twice more (the
  range of its ratio to the assembly), the assembly's traced peak memory, the process's peak RSS,
  and the seconds to write fresh memory the size of the dense block means (on a virtual machine
  that must back newly touched pages on the host this, not arithmetic, sets much of the
  assembly's wall time: benchmarks/network.txt, run Q);
* the simulator's rate: chain-steps × drift operations per second (the operations of the
  printed ``drift_lanes``, loops counted dense) at a dense θ, against the GRN's in the same run.

At d = 100 (n = 10⁴) the fit is the assembly alone unless ``--network-fit-max-d 100`` is given;
above :data:`COLD_FIT_MAX_D` the cold start's first fit is its assembly alone in any case (a whole
fit of n = 10⁴ parameters takes tens of minutes: only the warm fit is run whole).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import textwrap

from .common import run_script

__all__ = ["section_network", "NETWORK_SIZES"]

#: Network sizes d of the section (--quick: the first two).
NETWORK_SIZES = (10, 20, 50, 100)
#: Samples of the warm runs per d (the issue's N = 10⁵ at d = 100).
WARM_SAMPLES = {10: 20_000, 20: 20_000, 50: 20_000, 100: 100_000}
#: Largest d whose warm run includes the whole fit (not only its assembly) by default.
FULL_FIT_MAX_D = 50
#: Largest d whose cold start ends with a whole fit (above it: the assembly of that fit only).
COLD_FIT_MAX_D = 50

_SCRIPT = textwrap.dedent(r"""
    import json, os, resource, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import dynosed_sym as ds
    out = {"import_s": time.perf_counter() - t0}
    d, n_warm = int(sys.argv[1]), int(sys.argv[2])
    full_fit, out_dir, cold_fit = sys.argv[3] == "1", sys.argv[4], sys.argv[5] == "1"
    rates = sys.argv[6] == "rates"

    def timed(key, fn):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        out[key] = time.perf_counter() - t
        out[key[:-2] + "_cpu_s"] = time.process_time() - c
        return result

    from dynosed_sym.apps.bench.network_model import network_model
    from dynosed_sym.assembly.features import draw_features
    from dynosed_sym.assembly.stein import DEFAULT_BLOCKS, assemble_source, block_sums
    from dynosed_sym.data.sources import open_source

    features, ex = ds.Features(n_features=2048), ds.Execution(out_dir=out_dir)
    model, truth = timed("declare_s", lambda: network_model(d, 0, rates=rates))
    REPEATS = 3
    out["A_blocks_bytes"] = DEFAULT_BLOCKS * 2048 * model.n * 8  # B x m x n, float64
    timed("derive_s", lambda: model.derivation)
    cm = timed("codegen_s", lambda: ds.compile_model(model, out_dir))
    X8 = np.full((8, d), 0.5)
    timed("jit_stein_s", lambda: cm.stein_features(X8))
    timed("jit_fill_s", lambda: block_sums(cm, X8, draw_features(d, 8, 1.0)))
    timed("jit_simulator_s", lambda: ds.simulate(model, truth, 64, burn_in=1, thin=1,
                                                 execution=ex))
    X = timed("simulate_s", lambda: ds.simulate(model, truth, 5000, execution=ex))
    if full_fit and cold_fit:
        timed("first_fit_s", lambda: ds.fit_global(model, X, features=features, execution=ex))
    else:  # the assembly of that fit only
        feats = draw_features(d, 2048, 1.0, seed=0)
        timed("first_fit_s", lambda: assemble_source(cm, open_source(X, model, "X"), feats))
    out["full_fit"], out["cold_fit"] = full_fit, full_fit and cold_fit
    cold = [k for k in out if k.endswith("_s") and not k.endswith("_cpu_s")]
    out["cold_total_s"] = sum(out[k] for k in cold)
    out["cold_total_cpu_s"] = sum(out.get(k[:-2] + "_cpu_s", out[k]) for k in cold)

    # warm: simulate N, fit (timings split), assembly alone with its traced peak
    Xw = timed("warm_simulate_s", lambda: ds.simulate(model, truth, n_warm, execution=ex))
    out["warm_n"] = n_warm
    if full_fit:
        fit = timed("warm_fit_s", lambda: ds.fit_global(model, Xw, features=features,
                                                       execution=ex))
        out["fit_timings"] = dict(getattr(fit, "info", {}).get("timings", {}) or {})
        runs = [out["fit_timings"]]
        for _ in range(REPEATS - 1):  # the same fit again: the spread of its ratio
            again = ds.fit_global(model, Xw, features=features, execution=ex)
            runs.append(dict(again.info.get("timings", {}) or {}))
        out["fit_runs"] = runs
        err = np.abs(fit.theta - truth)
        out["max_abs_error"] = float(err.max())
        out["rank"] = int(fit.report.rank)
        out["finite_intervals"] = int(np.isfinite(fit.report.ci).all(axis=1).sum())
    import tracemalloc
    feats = draw_features(d, 2048, 1.0, seed=0)
    src = open_source(Xw, model, "X")
    tracemalloc.start()
    system = timed("warm_assembly_s", lambda: assemble_source(cm, src, feats))
    out["assembly_traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["blocks_lazy"] = type(system.A_blocks).__name__ == "BlockMeans"
    out["A_blocks_dense_mb"] = system.A_blocks.nbytes / 2**20
    del system, src

    # simulator rate at a dense theta (every weight nonzero) and at the sparse truth
    from dynosed_sym.simulation.simulate import chain_keys
    C, steps = 256, 100
    args = lambda th: (np.full((C, d), 0.5), th, np.ascontiguousarray(cm.noise_matrix), 0.01,
                       steps - 1, 1, 1, chain_keys(0, C), np.empty((1, C, d)),
                       np.zeros(C, np.int64))
    dense = truth + 0.01 * np.random.default_rng(1).standard_normal(truth.size)
    for name, th in (("dense", dense), ("sparse", truth)):
        a = args(th)
        cm.module.simulate_chains(*a)
        ts = []
        for _ in range(3):
            t = time.perf_counter()
            cm.module.simulate_chains(*a)
            ts.append(time.perf_counter() - t)
        out[f"sim_{name}_chain_steps_per_s"] = C * steps / min(ts)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # the seconds to write fresh memory the size of the dense block means, last (before the
    # fits it would hand its pages to their assemblies; after the peak RSS, which it would
    # raise): a VM may have to back every newly touched page on the host, and then the
    # assembly's and the solve's first writes, not their arithmetic, set much of their wall time
    t = time.perf_counter()
    np.ones(int(out.get("A_blocks_bytes", 0)) // 8 or 1)
    out["first_touch_s"] = time.perf_counter() - t
    out["generated_lines"] = open(cm.path).read().count("\n")
    print("RESULT " + json.dumps(out))
""")

_RATE_SCRIPT = textwrap.dedent(r"""
    import json, sys, time
    import numpy as np
    import dynosed_sym as ds
    from dynosed_sym.simulation.simulate import chain_keys
    model = ds.load_model(sys.argv[1])
    cm = ds.compile_model(model)
    C, steps, d = 256, 100, model.d
    a = (np.zeros((C, d)) + 0.5, np.asarray(model.nominal, float),
         np.ascontiguousarray(cm.noise_matrix), 0.01, steps - 1, 1, 1, chain_keys(0, C),
         np.empty((1, C, d)), np.zeros(C, np.int64))
    cm.module.simulate_chains(*a)
    ts = []
    for _ in range(5):
        t = time.perf_counter(); cm.module.simulate_chains(*a); ts.append(time.perf_counter() - t)
    print("RESULT " + json.dumps({"chain_steps_per_s": C * steps / min(ts), "path": cm.path}))
""")


def _run(script, args, env=None):
    return run_script(script, args, env, "network benchmark")[0]


def _lane_ops(path):
    """Operations of the printed drift_lanes (its op-table row) of a generated module."""
    with open(path, encoding="utf-8") as fh:
        m = re.search(r"^    drift_lanes +(\d+) ", fh.read(), re.M)
    return int(m.group(1))


def _network_case(d, full_fit, n_warm=None, kind="w"):
    with tempfile.TemporaryDirectory(prefix="dynosed_bench_network_") as tmp:
        out_dir, cache = os.path.join(tmp, "generated"), os.path.join(tmp, "numba_cache")
        os.makedirs(out_dir)
        os.makedirs(cache)
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, DYNOSED_QUIET="1")
        env.pop("DYNOSED_GENERATED_DIR", None)
        n_warm = WARM_SAMPLES.get(d, 20_000) if n_warm is None else int(n_warm)
        args = [d, n_warm, int(full_fit), out_dir, int(d <= COLD_FIT_MAX_D), kind]
        r = _run(_SCRIPT, args, env)
        files = os.listdir(out_dir)
        r["lane_ops"] = _lane_ops(
            os.path.join(out_dir, next(f for f in files if f.endswith(".py")))
        )
    r["sim_dense_gops"] = r["sim_dense_chain_steps_per_s"] * 4 * r["lane_ops"] / 1e9
    return r


_COLD_LABELS = (
    ("import_s", "import"),
    ("declare_s", "declare"),
    ("derive_s", "derive"),
    ("codegen_s", "print+import"),
    ("jit_stein_s", "jit feats"),
    ("jit_fill_s", "jit fill"),
    ("jit_simulator_s", "jit sim"),
    ("simulate_s", "sim 5000"),
    ("first_fit_s", "1st fit"),
    ("cold_total_s", "TOTAL"),
)


def _ratio_range(r):
    """``lo–hi`` of the whole fit over its assembly in the repeated warm fits ("" without)."""
    ratios = [t["total"] / t["assembly"] for t in r.get("fit_runs", []) if t.get("assembly")]
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else ""


def _print_tables(results, grn):
    print("  cold start from empty caches (fresh process; seconds):")
    print("    " + f"{'d':>4} {'n':>6} " + " ".join(f"{lab:>12}" for _, lab in _COLD_LABELS))
    for d, r in results.items():
        cells = " ".join(f"{r[k]:12.2f}" for k, _ in _COLD_LABELS)
        print(
            f"    {d:>4} {d * d:>6} {cells}"
            + ("" if r.get("cold_fit", r["full_fit"]) else "  (fit: assembly only)")
        )
    print("  warm, CPU seconds: the fit and the assembly run alone, and their ratio:")
    head = f"{'d':>4} {'fit':>8} {'assembly':>9} {'ratio':>6}"
    print("    " + head)
    for d, r in results.items():
        fit = r.get("warm_fit_cpu_s", float("nan"))
        asm = r["warm_assembly_cpu_s"]
        print(f"    {d:>4} {fit:8.2f} {asm:9.2f} {fit / asm:6.2f}")
    print(
        "  warm, wall seconds (the fit's stages from fit.info['timings'], ratio = its total over"
        " its assembly in the first warm fit, (range) over the repeated ones; touch = seconds to"
        " write fresh memory the size of A_b dense; memory in MiB):"
    )
    head = f"{'d':>4} {'N':>8} {'simulate':>9} {'fit':>8} {'assembly':>9} {'ratio':>6} "
    head += f"{'(range)':>11} {'touch':>6} {'solve':>8} "
    head += f"{'report':>8} {'checks':>8} {'asm peak':>9} {'A_b dense':>10} {'peak RSS':>9} "
    print("    " + head + f"{'lines':>6}")
    nan = float("nan")
    for d, r in results.items():
        t = r.get("fit_timings", {})
        fit = r.get("warm_fit_s", nan)  # nan: the assembly only (d > FULL_FIT_MAX_D)
        cells = (
            f"{d:>4} {r['warm_n']:>8,} {r['warm_simulate_s']:9.2f} {fit:8.2f} "
            f"{t.get('assembly', r['warm_assembly_s']):9.2f} "
            f"{t.get('total', nan) / t.get('assembly', nan):6.2f} {_ratio_range(r):>11} "
            f"{r.get('first_touch_s', nan):6.2f} {t.get('solve', nan):8.2f} "
            f"{t.get('report', nan):8.2f} {t.get('checks', nan):8.2f} "
            f"{r['assembly_traced_peak_mb']:9.0f} "
            f"{r['A_blocks_dense_mb']:10.0f} {r['peak_rss_mb']:9.0f} {r['generated_lines']:>6}"
        )
        print("    " + cells)
    print("  simulator: M chain-steps/s (dense θ | sparse truth), drift ops as printed, Gop/s:")
    g = grn["chain_steps_per_s"] * 4 * grn["lane_ops"] / 1e9
    print(
        f"    GRN (d = 7): {grn['chain_steps_per_s'] / 1e6:.3f} M chain-steps/s x "
        f"{4 * grn['lane_ops']} ops = {g:.2f} Gop/s"
    )
    for d, r in results.items():
        print(
            f"    d = {d:>3}: {r['sim_dense_chain_steps_per_s'] / 1e6:.3f} | "
            f"{r['sim_sparse_chain_steps_per_s'] / 1e6:.3f} M chain-steps/s x "
            f"{4 * r['lane_ops']} ops = {r['sim_dense_gops']:.2f} Gop/s "
            f"({r['sim_dense_gops'] / g:.2f} of the GRN's)"
        )


def section_network(
    quick, repeats, sizes=None, full_fit_max_d=FULL_FIT_MAX_D, n_warm=None, kind="w"
):
    """The network section; ``n_warm``: the warm fit's N for every d (default
    :data:`WARM_SAMPLES`); ``kind`` "rates": every gene's decay and basal rates unknown too."""
    from .common import MODELS

    sizes = sizes or (NETWORK_SIZES[:2] if quick else NETWORK_SIZES)
    if kind == "rates":
        head = "W·h(x) − g⊙x + β, n = d² + 2d parameters (decay and basal rates unknown)"
    else:
        head = "W·h(x) − x + 1/2, n = d² parameters"
    print(f"\n== network: {head}, sparse truth, D = 1/20 ==")
    with tempfile.TemporaryDirectory(prefix="dynosed_bench_grn_") as tmp:
        env = dict(os.environ, DYNOSED_GENERATED_DIR=tmp, DYNOSED_QUIET="1")
        grn = _run(_RATE_SCRIPT, [os.path.join(MODELS, "grn_bcell.py")], env)
        grn["lane_ops"] = _lane_ops(grn["path"])
    results = {}
    for d in sizes:
        results[d] = _network_case(d, d <= full_fit_max_d, n_warm, kind)
        print(f"    d = {d}: " + json.dumps(results[d]), flush=True)
    _print_tables(results, grn)
    return {"grn": grn, "sizes": {str(d): r for d, r in results.items()}}
