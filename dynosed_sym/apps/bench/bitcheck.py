"""Every kernel of the bundled models against the generated modules of a git revision.

``python -m dynosed_sym.apps.bench.bitcheck [REVISION]`` (default ``main``) loads the
``generated/*.py`` files committed at REVISION and the current ones, runs ``drift``,
``drift_jacobian``, ``stein_features``, ``local_rows``, ``local_residual`` and ``simulate_chains``
of both on the same random inputs and prints, per kernel, whether the outputs are identical bit
for bit.  A check for generator changes that must not change any number (names, comments,
layout, compile options); run from the repository root.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["main"]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _outputs(mod, model, seed):
    """{kernel: outputs} of one module on inputs drawn from ``seed``."""
    from ...simulation.simulate import chain_keys

    rng = np.random.default_rng(seed)
    d, n = model.d, model.n
    X = rng.uniform(0.2, 1.5, (257, d))
    th = rng.standard_normal(n)
    n_sin = 1 + max([t[0] for t in mod.A_TERMS] + [t[0] for t in mod.B_SIN_TERMS], default=-1)
    n_cos = 1 + max([t[0] for t in mod.B_COS_TERMS], default=-1)
    out = {}

    def call(name, *args, shapes):
        bufs = [np.full(s, np.nan) for s in shapes]
        getattr(mod, name)(*args, *bufs)
        out[name] = bufs

    call("drift", X, th, shapes=[(257, d)])
    call("drift_jacobian", X, th, shapes=[(257, d, n)])
    call("stein_features", X, shapes=[(257, n_sin), (257, n_cos)])
    S, J, g = rng.standard_normal((50, d)), rng.standard_normal((50, d, d)), rng.standard_normal(50)
    if hasattr(mod, "local_rows"):
        call("local_rows", X[:50], S, J, g, shapes=[(50, n), (50,)])
    call("local_residual", X[:50], S, J, g, th, shapes=[(50,), (50, n)])
    C = 70
    x0 = rng.standard_normal((C, d)) * 0.3
    theta = np.asarray(model.nominal if model.nominal is not None else th, dtype=float)
    G = np.eye(d, mod.NOISE_DIM) * 0.1
    records, status = np.full((5, C, d), np.nan), np.zeros(C, dtype=np.int64)
    mod.simulate_chains(x0, theta, G, 0.01, 20, 3, 5, chain_keys(1, C), records, status)
    out["simulate_chains"] = [records, status]
    return out


def main(argv=None):
    from ...codegen.loading import compile_model
    from ...model import load_model

    argv = sys.argv[1:] if argv is None else argv
    rev = argv[0] if argv else "main"
    files = subprocess.run(
        ["git", "ls-tree", "--name-only", rev, "generated/"], capture_output=True, text=True
    ).stdout.split()
    same = True
    with tempfile.TemporaryDirectory(prefix="dynosed_bitcheck_") as tmp:
        for f in sorted(p for p in files if p.endswith(".py")):
            name = os.path.basename(f)[: -len("_123456789abc.py")]
            text = subprocess.run(["git", "show", f"{rev}:{f}"], capture_output=True, text=True)
            path = os.path.join(tmp, os.path.basename(f))
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.stdout)
            old = _load(path, f"bitcheck_old_{name}")
            model = load_model(os.path.join("models", f"{name}.py"))
            new = compile_model(model).raw_module
            a, b = _outputs(old, model, 5), _outputs(new, model, 5)
            for kernel in a:
                ok = all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a[kernel], b[kernel]))
                same &= ok
                print(f"{name:12s} {kernel:16s} {'bit-identical' if ok else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
