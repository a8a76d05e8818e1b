"""The sweep's bridge to an independent SDE solver: diffrax (JAX) in a separate virtual
environment under the bench cache (``<cache>/diffrax-venv``, created on first use with
``pip install "jax[cpu]" diffrax``; git-ignored, never a dependency of the package or its
tests).  :func:`run_diffrax` prints the model's drift and noise at the true parameters as JAX
expressions (SymPy's JaxPrinter), writes a spec, runs ``calibration_diffrax_script.py`` in that
environment and reads the samples it writes (.npy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import sympy as sp

__all__ = ["diffrax_python", "run_diffrax", "diffrax_spec"]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration_diffrax_script.py")


def diffrax_python(cache_dir):
    """The diffrax environment's interpreter, created (with jax[cpu] and diffrax) if missing."""
    venv = os.path.join(cache_dir, "diffrax-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".installed")):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run(
            [py, "-m", "pip", "install", "--quiet", "jax[cpu]", "diffrax", "numpy"], check=True
        )
        open(os.path.join(venv, ".installed"), "w").close()
    return py


def diffrax_spec(model, truth, protocol, n, seeds, outs):
    """The JSON-ready spec of ``calibration_diffrax_script.py`` (diagonal noise only)."""
    from sympy.printing.numpy import JaxPrinter

    subs = dict(zip(model.params, (sp.nsimplify(float(v)) for v in truth)))
    printer = JaxPrinter({"fully_qualified_modules": True})
    names = model.state_names
    drift = [printer.doprint(sp.sympify(e).xreplace(subs)) for e in model.drift]
    if model.G is not None:
        G = model.G
    else:
        G = (2 * model.D).applyfunc(sp.sqrt)
    if not G.is_diagonal() or G.shape[0] != G.shape[1]:
        raise ValueError(f"{model.name}: the diffrax bridge handles diagonal noise only")
    noise = [printer.doprint(G[i, i]) for i in range(model.d)]
    x0 = protocol.x0
    if isinstance(x0, str):
        raise ValueError(f"{model.name}: the diffrax bridge starts from N(0, I) or a fixed x0")
    return {
        "state": names,
        "drift": [s.replace("jax.numpy.", "jnp.") for s in drift],
        "noise_diagonal": [s.replace("jax.numpy.", "jnp.") for s in noise],
        "constant_noise": not any(G[i, i].free_symbols for i in range(model.d)),
        "n_chains": int(n),
        "steps": int(protocol.burn_in) + 1,  # ds.simulate's single record: burn_in + thin steps
        "dt": float(protocol.dt),
        "x0": None if x0 is None else [float(v) for v in x0],
        "seeds": [int(s) for s in seeds],
        "outs": [os.path.abspath(o) for o in outs],
    }


def run_diffrax(model, truth, protocol, n, seeds, cache_dir):
    """One data set (n, d) per seed — one record per chain — of the model at ``truth`` from
    diffrax, all in one run of the script (one JIT compilation)."""
    py = diffrax_python(cache_dir)
    folder = os.path.join(cache_dir, "diffrax-work")
    os.makedirs(folder, exist_ok=True)
    outs = [os.path.join(folder, f"{model.name}_{s}_{n}.npy") for s in seeds]
    spec_path = os.path.join(folder, f"{model.name}_{n}.spec.json")
    with open(spec_path, "w", encoding="utf-8") as fh:
        json.dump(diffrax_spec(model, truth, protocol, n, seeds, outs), fh, indent=1)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    # prints the versions; inherits the caller's niceness (run the bench with nice -n 10)
    subprocess.run([py, SCRIPT, spec_path], check=True, env=env)
    sets = []
    for out in outs:
        sets.append(np.load(out))
        os.remove(out)
    return sets
