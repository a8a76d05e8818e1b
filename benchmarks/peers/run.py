"""Side by side with the closest peer, stadion (Lorch et al. 2024), on its own task (issue 23).

One command, run with the project's Python::

    nice -n 10 python benchmarks/peers/run.py      # everything (≈ 40 min on 2 busy cores)
    make bench-peers                               # the same
    python benchmarks/peers/run.py --reuse-peer    # refit only our side; the peer's fits are
                                                   # taken from results.json when its data match
    python benchmarks/peers/run.py --only cycle5 --sets 1 --sizes 1000 --out /tmp/p.txt

What it does:

1. builds the peer's own environment (``peer.py``: stadion 1.0.2, jax 0.4.35, tensorflow, in
   ``benchmarks/peers/.venv-stadion``, never a dependency of this package);
2. writes the shared data files (``tasks.py``: exact stationary Gaussian samples of the
   interventional tasks ``cycle5`` and ``dag6``, n = 1000 and 5000 per environment, five seeded
   data sets each; Lorenz snapshots at N = 300 and 2000 from ``ds.simulate``) into
   ``benchmarks/peers/data/`` (git-ignored);
3. fits every data set with stadion, one process per fit (``stadion_fit.py``), recording the
   wall and CPU time of ``fit`` and the part JAX reports as compilation;
4. fits the same files with ours (``ours.py``): ``fit_global`` on the dict of environments,
   declared with ``ds.shift_interventions``, default estimator and ``statistic="v",
   estimator="ridge"``; and a cold start in a fresh process with empty caches for the one-time
   code generation and compilation;
5. prints the tables (``report.py``) and writes them to ``benchmarks/peers/results.txt``, all
   numbers to ``benchmarks/peers/results.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _blas_threads(argv):
    """--blas-threads N sets the BLAS thread count before NumPy is imported (default: as is)."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--blas-threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--blas-threads="):
            value = arg.split("=", 1)[1]
        if value is not None:
            for var in BLAS_VARS:
                os.environ[var] = value


_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402
import ours  # noqa: E402
import peer  # noqa: E402
import report  # noqa: E402
import tasks  # noqa: E402

LORENZ_TUNED_LR = 0.03  # ten times stadion's default step: its Lorenz fits stop short at 0.003


class Out:
    """Print and keep every line (the text file is what was printed)."""

    def __init__(self):
        self.lines = []

    def __call__(self, text=""):
        print(text, flush=True)
        self.lines.append(text)


def data_hash(path):
    f = tasks.load(path)
    h = hashlib.sha256()
    for k in sorted(f):
        if k.startswith("X_"):
            h.update(np.ascontiguousarray(f[k], dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


def _git():
    try:
        head = subprocess.run(
            ["git", "-C", tasks.ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", tasks.ROOT, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def header(out, args):
    import numba

    import dynosed_sym as ds

    out("Peer benchmark (issue 23): stadion against dynosed_sym on the same data files")
    out(f"  command: python benchmarks/peers/run.py {' '.join(args.argv)}".rstrip())
    out(
        f"  machine: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"load average at start {', '.join(f'{v:.1f}' for v in os.getloadavg())}; "
        f"niceness {os.nice(0)} (inherited by every fit's process); BLAS threads "
        f"{os.environ.get('OPENBLAS_NUM_THREADS', 'as the libraries choose')}"
    )
    out(
        f"  dynosed_sym {ds.__version__} at commit {_git()}; Python {platform.python_version()}, "
        f"NumPy {np.__version__}, Numba {numba.__version__}"
    )


def peer_records(args, python, name, kind, n, paths, cache, **kw):
    """The peer's fits of ``paths`` (fresh, or from ``cache`` when ``--reuse-peer`` and the data
    hash matches); every record is also stored in ``cache`` (written to results.json)."""
    recs = []
    for k, path in enumerate(paths):
        key, h = f"{name}_n{n}_s{k}", data_hash(path)
        if args.reuse_peer and key in cache and cache[key].get("data_sha256") == h:
            recs.append(cache[key])
            continue
        if python is None:
            raise SystemExit(f"no peer fit for {key} in results.json; run without --skip-peer")
        rec = peer.fit_once(python, path, kind, k, peer.fit_path(name, n, k), **kw)
        rec["data_sha256"] = h
        cache[key] = rec
        recs.append(rec)
    return recs


def run_linear(out, args, python, cache, results):
    for name in [t for t in args.only if t in tasks.TASKS]:
        task = tasks.TASKS[name]
        n_par = task.d * (task.d - 1) + task.d + sum(len(s) for s in task.shifts.values())
        out()
        out(
            f"== {name}: {task.note}; d = {task.d}, {len(task.envs)} environments, {n_par} "
            "unknowns (W off the diagonal, b, shifts) =="
        )
        out(f"   data: exact stationary Gaussian samples, seed {task.seed} + 100·size index + set")
        cold = ours.cold_compile(name, args.sizes[0])
        out(
            f"   ours, first fit in a fresh process with empty caches {cold['first']:.1f} s, the "
            f"same fit again {cold['second']:.1f} s: code generation + compilation "
            f"{cold['compile']:.1f} s, once per model (cached on disk)"
        )
        out(report.HEADER)
        for n in args.sizes:
            paths = [tasks.write_linear(task, n, k) for k in range(args.sets)]
            peer_recs = peer_records(args, python, name, "linear", n, paths, cache)
            our = ours.fit_linear(task, n, sets=args.sets)
            rows = {"stadion": report.linear_row(task, peer_recs, "stadion")}
            rows.update({key: report.linear_row(task, our[key], key) for key in our})
            rows[ours.DEFAULT]["compile"] = cold["compile"]
            for key, row in rows.items():
                label = key if key == "stadion" else f"ours, {key}"
                out(report.format_row(label, n, row))
            for key in our:
                out(report.done_when(rows["stadion"], rows[key], f"ours, {key}"))
            results[f"{name}_n{n}"] = {"stadion": peer_recs, **our, "cold": cold}


def run_lorenz(out, args, python, cache, results):
    if "lorenz" not in args.only:
        return
    model = ours.lorenz_model()
    truth = np.asarray(model.nominal, float)
    out()
    out(
        "== lorenz: stochastic Lorenz (models/lorenz.py: σ = 10, ρ = 28, β = 8/3, D = 0.3·I), one "
        "stationary snapshot =="
    )
    out(
        "   data: ds.simulate(model, nominal, N, seed) with seed 25000 + 100·size index + set; "
        "stadion: the Lorenz drift as an SDE/KDSMixin subclass with the known noise, parameters "
        f"initialised at 0 like its LinearSDE; 'tuned' = learning rate {LORENZ_TUNED_LR} instead "
        "of 0.003"
    )
    cold = ours.cold_compile("lorenz", args.lorenz_sizes[0])
    out(
        f"   ours, cold start: code generation + compilation {cold['compile']:.1f} s "
        "(once per model)"
    )
    out(report.LORENZ_HEADER)
    for N in args.lorenz_sizes:
        paths = [tasks.write_lorenz(model, N, k) for k in range(args.sets)]
        rows, recs = {}, {}
        recs["stadion"] = peer_records(args, python, "lorenz", "lorenz", N, paths, cache)
        recs["stadion, tuned"] = peer_records(
            args, python, "lorenz_lr", "lorenz", N, paths, cache, learning_rate=LORENZ_TUNED_LR
        )
        recs.update(ours.fit_lorenz(N, sets=args.sets))
        for key, rr in recs.items():
            rows[key] = report.lorenz_row(rr, "stadion" if "stadion" in key else key, truth)
        rows[ours.DEFAULT]["compile"] = cold["compile"]
        for key, row in rows.items():
            out(report.format_lorenz(key if "stadion" in key else f"ours, {key}", N, row))
        results[f"lorenz_N{N}"] = {**recs, "cold": cold}


def _cache(path):
    """The peer's records of an earlier run, keyed like :func:`peer.fit_path` names them."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh).get("peer", {})


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="cycle5,dag6,lorenz", help="tasks (comma-separated)")
    ap.add_argument("--sizes", default=",".join(map(str, tasks.SIZES)), help="n per environment")
    ap.add_argument("--lorenz-sizes", default=",".join(map(str, tasks.LORENZ_SIZES)))
    ap.add_argument("--sets", type=int, default=tasks.N_SETS, help="data sets per size")
    ap.add_argument("--peer-venv", default=peer.DEFAULT_VENV, help="the peer's environment")
    ap.add_argument(
        "--reuse-peer", action="store_true", help="peer fits from --json if the data match"
    )
    ap.add_argument(
        "--skip-peer", action="store_true", help="never run the peer (needs --reuse-peer)"
    )
    ap.add_argument(
        "--blas-threads", default=None, help="BLAS threads of our fits (default: the machine's)"
    )
    ap.add_argument("--out", default=os.path.join(tasks.HERE, "results.txt"))
    ap.add_argument("--json", default=os.path.join(tasks.HERE, "results.json"))
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.lorenz_sizes = [int(s) for s in args.lorenz_sizes.split(",")]
    bad = [s for s in args.only if s not in (*tasks.TASKS, "lorenz")]
    if bad or not set(args.sizes) <= set(tasks.SIZES):
        ap.error(f"--only among {', '.join((*tasks.TASKS, 'lorenz'))}; --sizes among {tasks.SIZES}")
    if not set(args.lorenz_sizes) <= set(tasks.LORENZ_SIZES) or not 1 <= args.sets <= 20:
        ap.error(f"--lorenz-sizes among {tasks.LORENZ_SIZES}; --sets between 1 and 20")
    return args


def main(argv=None):
    args = parse(argv)
    out = Out()
    t0 = time.perf_counter()
    header(out, args)
    python = None if args.skip_peer else peer.ensure_venv(args.peer_venv)
    cache = _cache(args.json) if args.reuse_peer else {}
    results = {}
    run_linear(out, args, python, cache, results)
    run_lorenz(out, args, python, cache, results)
    out()
    out(
        f"total {time.perf_counter() - t0:.0f} s; load average at the end "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}"
    )
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out.lines) + "\n")
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"argv": args.argv, "fits": results, "peer": cache}, fh, indent=1, default=float)
    print(f"wrote {args.out} and {args.json}")


if __name__ == "__main__":
    main()
