"""Section ``compile``: cold and warm start of the GRN model in fresh processes."""

from __future__ import annotations

import os
import statistics
import tempfile
import textwrap

from .common import MODELS, TARGETS, _target, run_script

_COMPILE_SCRIPT = textwrap.dedent(r"""
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    import dynosed_sym as ds
    import dynosed_sym.model.derivation as derivation
    t_import = time.perf_counter() - t0
    calls = []
    _derive = derivation.derive
    def counting_derive(model):
        calls.append(model.name)
        return _derive(model)
    derivation.derive = counting_derive
    out = {"import_s": t_import}
    derive_calls = {}
    def timed(key, fn):
        t = time.perf_counter()
        result = fn()
        out[key] = time.perf_counter() - t
        return result
    model = timed("load_s", lambda: ds.load_model(sys.argv[1]))
    derive_calls["load_model"] = len(calls)
    cm = timed("codegen_s", lambda: ds.compile_model(model, sys.argv[2]))
    derive_calls["compile_model"] = len(calls) - sum(derive_calls.values())
    rng = np.random.default_rng(0)
    ang = rng.uniform(0, 2 * np.pi, (300, 2))
    X = np.column_stack([rng.uniform(0, 3, (300, 3)), np.cos(ang[:, 0]), np.sin(ang[:, 0]),
                         np.cos(ang[:, 1]), np.sin(ang[:, 1])])
    timed("jit_model_kernels_s", lambda: (cm.drift(X, model.nominal), cm.stein_features(X)))
    ex = ds.Execution(out_dir=sys.argv[2])
    timed("jit_simulator_s", lambda: ds.simulate(model, model.nominal, 64, burn_in=10, thin=1,
                                                 execution=ex))
    derive_calls["kernels_and_simulate"] = len(calls) - sum(derive_calls.values())
    timed("jit_fit_s", lambda: ds.fit_global(model, X, features=ds.Features(n_features=256),
                                                  execution=ex))
    derive_calls["fit_global"] = len(calls) - sum(derive_calls.values())
    out["derive_calls"] = derive_calls
    print("RESULT " + json.dumps(out))
""")


def _compile_run(model_path, out_dir, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("DYNOSED_GENERATED_DIR", None)
    r, wall = run_script(_COMPILE_SCRIPT, [model_path, out_dir], env, "compile benchmark")
    r["process_wall_s"] = wall
    r["in_process_s"] = sum(v for k, v in r.items() if k.endswith("_s") and k != "process_wall_s")
    return r


def section_compile(quick, repeats):
    print("\n== compile: GRN cold and warm start (fresh processes) ==")
    path = os.path.join(MODELS, "grn_bcell.py")
    with tempfile.TemporaryDirectory(prefix="dynosed_bench_") as tmp:
        out_dir, cache_dir = os.path.join(tmp, "generated"), os.path.join(tmp, "numba_cache")
        os.makedirs(out_dir)
        os.makedirs(cache_dir)
        cold = _compile_run(path, out_dir, cache_dir)
        warm = [_compile_run(path, out_dir, cache_dir) for _ in range(max(1, min(repeats, 3)))]
    wmed = {k: statistics.median(w[k] for w in warm) for k in warm[0] if k.endswith("_s")}
    keys = [
        ("import_s", "import dynosed_sym (numba, sympy, scipy)"),
        ("load_s", "load model file (declaration)"),
        ("codegen_s", "compile_model: derive + print + import"),
        ("jit_model_kernels_s", "first drift + stein_features"),
        ("jit_simulator_s", "first simulate (simulator kernel)"),
        ("jit_fit_s", "first fit_global (fill kernel, solve)"),
        ("in_process_s", "total inside the process"),
        ("process_wall_s", "process wall time"),
    ]
    print(f"    {'':44s} {'cold':>9s} {'warm':>9s}")
    for k, label in keys:
        print(f"    {label:44s} {cold[k]:8.2f}s {wmed[k]:8.2f}s")
    warm_calls = {k: max(w["derive_calls"][k] for w in warm) for k in cold["derive_calls"]}
    print(
        "    symbolic derive() calls per stage (cold / warm): "
        + ", ".join(f"{k} {cold['derive_calls'][k]}/{warm_calls[k]}" for k in cold["derive_calls"])
    )
    start_cold = cold["in_process_s"] - cold["import_s"]
    start_warm = wmed["in_process_s"] - wmed["import_s"]
    no_derive = sum(warm_calls.values()) == 0
    print(
        f"    -> cold start (without the import) {start_cold:.2f} s (target < "
        f"{TARGETS['cold_start_s']:.0f} s): "
        f"{_target(start_cold < TARGETS['cold_start_s'])}; warm start {start_warm:.2f} s (target < "
        f"{TARGETS['warm_start_s']:.0f} s): {_target(start_warm < TARGETS['warm_start_s'])}; "
        f"no re-derivation when warm: {_target(no_derive)}"
    )
    if not no_derive:
        bad = [k for k, v in warm_calls.items() if v]
        print(f"       (warm re-derivation happens in: {', '.join(bad)})")
    return {
        "cold": cold,
        "warm": warm,
        "cold_start_s": start_cold,
        "warm_start_s": start_warm,
        "warm_derive_calls": warm_calls,
    }
