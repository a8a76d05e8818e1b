"""Generated size and compile time of the d-gene network, unrolled against loops (issue 20).

``python -m dynosed_sym.apps.bench.codegen_size [--sizes 10,20,30,50,100] [--compile-max 50]``

For every d the network ``W·h(x) − x + 1/2`` (n = d² parameters,
:func:`~dynosed_sym.apps.bench.network_model.network_model`) is printed twice: unrolled (every
weight a term, the generator's form for small blocks and for every model before matrix blocks
were loops) and with its matrix block as loops (the default from 64 entries on).  Reported:
lines and KiB of the module, seconds to derive and print it, and — in a fresh process whose
Numba cache holds only the model-independent kernels — seconds to compile the model's kernels
(``drift``, ``drift_jacobian``, ``stein_features``, ``local_rows``, ``local_residual``,
``simulate_chains``).  Unrolled modules are compiled up to ``--compile-max`` (their compile time
grows with d²: minutes beyond d = 50).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import textwrap
import time

from .common import run_script

__all__ = ["main", "measure"]

_COMPILE = textwrap.dedent(r"""
    import importlib.util, json, sys, time
    import numpy as np
    import dynosed_sym as ds
    from dynosed_sym.codegen.loading import CompiledModel
    from dynosed_sym.simulation.simulate import chain_keys
    from dynosed_sym.apps.bench.network_model import network_model
    path, d = sys.argv[1], int(sys.argv[2])
    ou = ds.load_model(sys.argv[3])  # the model-independent kernels first, untimed
    ds.simulate(ou, ou.nominal, 8, burn_in=1, thin=1, execution=ds.Execution(out_dir=sys.argv[4]))
    spec = importlib.util.spec_from_file_location("bench_module", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model, truth = network_model(d, 0)
    n, M, C = d * d, 4, 8
    X = np.full((M, d), 0.5)
    S, J = np.zeros((M, d)), np.zeros((M, d, d))
    calls = {
        "drift": lambda: mod.drift(X, truth, np.empty((M, d))),
        "drift_jacobian": lambda: mod.drift_jacobian(X, truth, np.empty((M, d, n))),
        "stein_features": lambda: mod.stein_features(X, np.empty((M, 2 * d)), np.empty((M, 1))),
        "local_rows": lambda: mod.local_rows(X, S, J, np.zeros(M), np.empty((M, n)), np.empty(M)),
        "local_residual": lambda: mod.local_residual(X, S, J, np.zeros(M), truth, np.empty(M),
                                                     np.empty((M, n))),
        "simulate_chains": lambda: mod.simulate_chains(
            np.full((C, d), 0.5), truth, np.eye(d) * 0.3, 0.01, 1, 1, 1, chain_keys(0, C),
            np.empty((1, C, d)), np.zeros(C, np.int64)),
    }
    out = {}
    for name, call in calls.items():
        t = time.perf_counter()
        call()
        out[name] = time.perf_counter() - t
    print("RESULT " + json.dumps(out))
""")


def _compile_times(path, d):
    from .common import MODELS

    with tempfile.TemporaryDirectory(prefix="dynosed_bench_size_") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "nc"), DYNOSED_QUIET="1")
        ou = os.path.join(MODELS, "ou2d.py")
        return run_script(_COMPILE, [path, d, ou, tmp], env, "compile")[0]


def measure(d, compile_max):
    """{form: {lines, kib, print_s, compile_s, kernels}} of the d-gene network."""
    from ...codegen.render import render_module
    from ...codegen.spec import build_spec
    from .network_model import network_model

    out = {}
    t0 = time.perf_counter()
    model, _ = network_model(d, 0)
    _ = model.derivation
    t_derive = time.perf_counter() - t0
    for form, structured in (("unrolled", False), ("loops", True)):
        t = time.perf_counter()
        text = render_module(build_spec(model, structured=structured))
        r = {"lines": text.count("\n"), "kib": len(text.encode()) / 1024}
        r["print_s"] = t_derive + time.perf_counter() - t
        if d <= compile_max or form == "loops":
            with tempfile.TemporaryDirectory(prefix="dynosed_bench_size_mod_") as tmp:
                path = os.path.join(tmp, f"network_{form}_{d}.py")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
                r["kernels"] = _compile_times(path, d)
            r["compile_s"] = sum(r["kernels"].values())
        out[form] = r
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dynosed_sym.apps.bench.codegen_size")
    ap.add_argument("--sizes", default="10,20,30,50,100")
    ap.add_argument("--compile-max", type=int, default=50, help="largest d compiled unrolled")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("d-gene network W·h(x) − x + 1/2: generated module, unrolled | loops")
    head = f"{'d':>4} {'n':>6}  {'lines':>13}  {'KiB':>13}  {'derive+print s':>15}  "
    print(head + f"{'Numba compile s':>17}")
    results = {}
    for d in sizes:
        r = results[d] = measure(d, args.compile_max)
        u, s = r["unrolled"], r["loops"]
        cu = f"{u['compile_s']:7.1f}" if "compile_s" in u else f"{'-':>7}"
        print(
            f"{d:>4} {d * d:>6}  {u['lines']:>6} | {s['lines']:<5}  {u['kib']:>6.0f} | "
            f"{s['kib']:<5.0f}  {u['print_s']:>6.1f} | {s['print_s']:<6.1f}  {cu} | "
            f"{s['compile_s']:<7.1f}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
