"""The peer's side: its own virtual environment and one process per stadion fit.

The environment (stadion 1.0.2, jax 0.4.35 CPU, tensorflow; pinned in
``stadion-requirements.txt``) is created with the standard library's ``venv`` and filled with
``pip`` from the package index the first time it is needed — by default in
``benchmarks/peers/.venv-stadion`` (git-ignored), or where ``--peer-venv`` says.  It is never a
dependency of dynosed_sym or of its tests.

Each fit runs ``stadion_fit.py`` in a fresh process (a second ``fit`` in one process fails
inside optax; it inherits the niceness of run.py, like our fits), with TensorFlow's C++ logging
silenced; the process's output goes to a log file beside its JSON result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import tasks

REQUIREMENTS = os.path.join(tasks.HERE, "stadion-requirements.txt")
DEFAULT_VENV = os.path.join(tasks.HERE, ".venv-stadion")
RUNNER = os.path.join(tasks.HERE, "stadion_fit.py")
FIT_DIR = os.path.join(tasks.DATA_DIR, "stadion_fits")


def _base_python():
    """The interpreter a new venv is made from (the base one when we run inside a venv)."""
    return getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable


def ensure_venv(venv):
    """The peer's Python, creating and filling its virtual environment when missing."""
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".installed")
    if os.path.exists(stamp):
        return python
    print(f"creating the peer's environment in {venv} (pip install stadion 1.0.2 + jax 0.4.35)")
    t0 = time.perf_counter()
    if not os.path.exists(python):
        subprocess.run([_base_python(), "-m", "venv", venv], check=True)
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "-r", REQUIREMENTS],
        check=True,
    )
    check = subprocess.run(
        [python, "-c", "import stadion, jax; print(jax.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    with open(stamp, "w", encoding="utf-8") as fh:
        fh.write(check.stdout)
    print(f"  done in {time.perf_counter() - t0:.0f} s (jax {check.stdout.strip()})")
    return python


def fit_once(python, data_path, model, seed, out_path, learning_rate=None):
    """Run one stadion fit in a fresh process; returns its JSON record (+ process wall time)."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
    env.pop("PYTHONPATH", None)
    cmd = [python, RUNNER, "--data", data_path, "--out", out_path, "--model", model]
    cmd += ["--seed", str(seed)]
    if learning_rate:
        cmd += ["--learning-rate", repr(float(learning_rate))]
    log = out_path[: -len(".json")] + ".log"
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        with open(log, encoding="utf-8") as fh:
            tail = fh.read()[-3000:]
        raise RuntimeError(f"stadion fit failed ({' '.join(cmd)}):\n{tail}")
    with open(out_path, encoding="utf-8") as fh:
        rec = json.load(fh)
    rec["process_seconds"] = wall
    return rec


def fit_path(name, n, k):
    return os.path.join(FIT_DIR, f"{name}_n{n}_s{k}.json")
