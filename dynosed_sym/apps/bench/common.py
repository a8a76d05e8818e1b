"""Shared helpers of the benchmarks: medians of timings, machine information, model loading."""

from __future__ import annotations

import os
import platform
import statistics
import time

import numba
import numpy as np

SECTIONS = (
    "fill",
    "scaling",
    "compile",
    "simulator",
    "large",
    "projection",
    "network",
    "calibration",
    "sweep",
    "verdicts",
    "factors",
    "local_designs",
)

#: Sections of a run without --only (network runs the d-gene networks up to d = 100 for several
#: minutes; calibration and the sweep are long statistical runs: --only calibration runs both,
#: --only sweep the sweep alone; --only verdicts the misspecification verdict's check; --only
#: factors the summary's data-factor labels against more data; --only local_designs the local
#: route's calibration on designs).
LONG_SECTIONS = ("network", "calibration", "sweep", "verdicts", "factors", "local_designs")
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s not in LONG_SECTIONS)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


MODELS = os.path.join(ROOT, "models")


# Targets of the performance issue; printed beside the measurements, never asserted.
TARGETS = {
    "grn_fill_ns_per_pair": 2.0,  # at most
    "grn_fill_speedup": 20.0,  # at least, against the NumPy reference
    "cold_start_s": 20.0,  # at most
    "warm_start_s": 2.0,  # at most
    "simulator_speedup": 10.0,  # at least, against vectorised NumPy
}


# --------------------------------------------------------------------------- helpers
def _timed(fn, repeats, warmup=1):
    """(median seconds, all times, warm-up seconds) of ``fn()`` after ``warmup`` untimed calls."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        fn()
    t_warm = time.perf_counter() - t0
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, t_warm


def _rss_mb():
    """Resident set size of this process in MiB (Linux), or nan."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return float("nan")


def _fmt_s(t):
    return f"{t * 1e3:8.2f} ms" if t < 1 else f"{t:8.3f} s "


def _slope(xs, ys):
    """Least-squares exponent p of y ∝ x^p."""
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def _target(ok):
    return "meets target" if ok else "MISSES target"


def _load(name):
    from ...model import load_model

    return load_model(os.path.join(MODELS, f"{name}.py"))


def machine_info():
    """CPU, SIMD features as LLVM sees them, thread counts and library versions."""
    import llvmlite.binding as llvm

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        feats = llvm.get_host_cpu_features()
        simd = [f for f in ("avx", "fma", "avx2", "avx512f") if feats.get(f, False)]
        host = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover - llvmlite without host introspection
        simd, host = [], "?"
    target = numba.config.CPU_NAME
    if numba.config.CPU_FEATURES is not None:  # NUMBA_CPU_FEATURES overrides what LLVM targets
        simd = [
            f
            for f in ("avx", "fma", "avx2", "avx512f")
            if f"+{f}" in numba.config.CPU_FEATURES.split(",")
        ]
    return {
        "cpu": cpu,
        "llvm_host_cpu": host,
        "llvm_target_cpu": target or host,
        "simd": simd,
        "os_cpus": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
    }


def run_script(script, args, env=None, what="benchmark"):
    """Run ``script`` in a fresh Python process with ``args`` → (the JSON record its line
    ``RESULT {...}`` prints, wall seconds of the process); a RuntimeError with its output when
    it fails or prints no record."""
    import json
    import subprocess
    import sys

    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{what} subprocess failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[len("RESULT ") :]), wall
