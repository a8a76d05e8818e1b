"""Independent SDE solver for the calibration sweep: diffrax (JAX), run in its own virtual
environment (``<bench cache>/diffrax-venv``), never imported by dynosed_sym or its tests.

Usage: ``<venv>/bin/python calibration_diffrax_script.py spec.json``.  The spec (written by
:mod:`dynosed_sym.apps.bench.calibration_diffrax`) holds the drift and the diagonal noise
G = diag(g_i(x)) as JAX expressions of the state names (printed by SymPy's JaxPrinter at the
true parameters), the number of chains, steps, dt, start states and seeds.  All chains are one
(C, d) state; the Brownian motion is diffrax's UnsafeBrownianPath from ``jax.random``; the
solver is Heun for constant noise (Itô = Stratonovich there) and Euler–Maruyama otherwise.  One data
set per seed in ``spec["seeds"]`` (final states of C chains) is written to the matching path of
``spec["outs"]`` (.npy); the versions are printed as JSON.
This file imports only numpy, jax, diffrax and lineax (and the standard library).
"""

import functools
import json
import sys


def _functions(spec, jnp, lx):
    names = spec["state"]
    ns = {"jnp": jnp, "functools": functools}  # (SymPy prints Max as functools.reduce)

    def columns(x):
        return {nm: x[:, i] for i, nm in enumerate(names)}

    drift = [compile(code, "drift", "eval") for code in spec["drift"]]
    noise = [compile(code, "noise", "eval") for code in spec["noise_diagonal"]]

    def f(t, x, args):
        env = columns(x)
        return jnp.stack([jnp.broadcast_to(eval(c, ns, env), x.shape[:1]) for c in drift], axis=1)

    def g(t, x, args):
        env = columns(x)
        diag = jnp.stack([jnp.broadcast_to(eval(c, ns, env), x.shape[:1]) for c in noise], axis=1)
        return lx.DiagonalLinearOperator(diag)

    return f, g


def main(path):
    import diffrax
    import jax
    import jax.numpy as jnp
    import lineax as lx
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    with open(path, encoding="utf-8") as fh:
        spec = json.load(fh)
    C, d = int(spec["n_chains"]), len(spec["state"])
    steps, dt = int(spec["steps"]), float(spec["dt"])
    f, g = _functions(spec, jnp, lx)
    solver = diffrax.Heun() if spec["constant_noise"] else diffrax.Euler()

    @jax.jit
    def run(key, x0):
        bm = diffrax.UnsafeBrownianPath(shape=(C, d), key=key)
        terms = diffrax.MultiTerm(diffrax.ODETerm(f), diffrax.ControlTerm(g, bm))
        sol = diffrax.diffeqsolve(
            terms,
            solver,
            0.0,
            steps * dt,
            dt,
            x0,
            saveat=diffrax.SaveAt(t1=True),
            max_steps=steps + 16,
            adjoint=diffrax.ForwardMode(),
        )
        return sol.ys[0]

    for seed, out in zip(spec["seeds"], spec["outs"]):
        key_bm, key_x0 = jax.random.split(jax.random.PRNGKey(int(seed)))
        if spec["x0"] is None:
            x0 = jax.random.normal(key_x0, (C, d), dtype=jnp.float64)
        else:
            x0 = jnp.broadcast_to(jnp.asarray(spec["x0"], dtype=jnp.float64), (C, d))
        X = np.asarray(run(key_bm, x0))
        bad = int((~np.isfinite(X)).any(axis=1).sum())
        if bad:
            sys.exit(f"diffrax: seed {seed}: {bad} of {C} chains left the finite range")
        np.save(out, X)
    versions = {"jax": jax.__version__, "diffrax": diffrax.__version__, "numpy": np.__version__}
    print(json.dumps({**versions, "solver": type(solver).__name__, "sets": len(spec["seeds"])}))


if __name__ == "__main__":
    main(sys.argv[1])
