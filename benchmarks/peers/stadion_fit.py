"""One stadion fit in its own process (run by benchmarks/peers/run.py with the peer's Python).

This file runs inside the peer's virtual environment (stadion 1.0.2, jax, tensorflow): it
imports neither dynosed_sym nor anything of this repository.  It reads one data file written
by run.py, fits it once — a second ``fit`` in the same process fails inside optax, so every fit
is a fresh process — and writes the estimates and the timings as JSON.

* ``--model linear``: ``stadion.models.LinearSDE()`` with every default of ``fit`` (10,000
  Adam steps, learning rate 0.003, batch 128, RBF bandwidth 5, linear KDS estimator, sparsity
  penalty 0.001, diagonal of W fixed at −1, noise scale learned), the data sets of the
  environments as a list and their known targets as 0/1 masks (the first one observational).
* ``--model lorenz``: the stochastic Lorenz system as a stadion model class — the documented way
  to fit another drift (subclass ``SDE`` and ``KDSMixin``, implement the abstract methods):
  drift ``(σ(y − x), x(ρ − z) − y, xy − βz)`` with the three parameters initialised like
  LinearSDE's (≈ 0), the known noise ``√(2D)·I`` (D given, as our fit knows it), no sparsity
  penalty (three physical parameters, no graph), and ``fit``'s defaults otherwise.

Timings: ``fit_seconds`` is the wall time of ``model.fit`` (data loader, JIT compilation and the
steps), ``fit_cpu_seconds`` its CPU time summed over the process's threads; ``compile_seconds``
the part JAX reports as compilation (the sum of its ``/jax/core/compile/*`` duration events:
tracing, lowering, backend compile); ``import_seconds`` the import of jax + stadion
(tensorflow), paid once per process.
"""

from __future__ import annotations

import argparse
import json
import time

T0 = time.perf_counter()

import jax  # noqa: E402
import jax.monitoring  # noqa: E402
import numpy as np  # noqa: E402
from jax import numpy as jnp  # noqa: E402
from jax import random  # noqa: E402
from stadion.inference import KDSMixin  # noqa: E402
from stadion.models import LinearSDE  # noqa: E402
from stadion.parameters import InterventionParameters, ModelParameters  # noqa: E402
from stadion.sde import SDE  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - T0
COMPILE_EVENTS = {}


def _on_duration(event, duration, **_):
    if event.startswith("/jax/core/compile/"):
        COMPILE_EVENTS[event] = COMPILE_EVENTS.get(event, 0.0) + float(duration)


jax.monitoring.register_event_duration_secs_listener(_on_duration)


class LorenzSDE(KDSMixin, SDE):
    """Stochastic Lorenz drift with parameters (sigma, rho, beta) and a known isotropic noise."""

    def __init__(self, diffusion):
        SDE.__init__(self)
        self.noise = float(np.sqrt(2.0 * diffusion))

    def init_param(self, key, d, scale=1e-6, fix_speed_scaling=True):
        shape = {"sigma": jnp.zeros(()), "rho": jnp.zeros(()), "beta": jnp.zeros(())}
        keys = random.split(key, len(shape))
        param = {k: scale * random.normal(kk, v.shape) for (k, v), kk in zip(shape.items(), keys)}
        return ModelParameters(parameters=param)

    def init_intv_param(self, key, d, n_envs=None, scale=1e-6, targets=None, x=None):
        shape = (n_envs, d) if n_envs is not None else (d,)
        targets = None if targets is None else jnp.array(targets, dtype=jnp.float32)
        return InterventionParameters(parameters={"shift": jnp.zeros(shape)}, targets=targets)

    def f(self, x, param, intv_param):
        x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
        return jnp.stack(
            [
                param["sigma"] * (x1 - x0),
                x0 * (param["rho"] - x2) - x1,
                x0 * x1 - param["beta"] * x2,
            ],
            axis=-1,
        )

    def sigma(self, x, param, intv_param):
        return self.noise * jnp.broadcast_to(jnp.eye(x.shape[-1]), (*x.shape, x.shape[-1]))

    def regularize_sparsity(self, param):
        return jnp.zeros(())


def _fit(args):
    data = np.load(args.data)
    envs = [str(e) for e in data["envs"]]
    X = [np.asarray(data[f"X_{e}"], dtype=np.float32) for e in envs]
    key = random.PRNGKey(args.seed)
    if args.model == "linear":
        model = LinearSDE()
        targets = [np.asarray(t, dtype=np.int32) for t in data["targets"]]
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(key, X, targets=targets)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        p, ip = model.param, model.intv_param
        out = {
            "W": np.asarray(p["weights"], dtype=float).tolist(),
            "b": np.asarray(p["biases"], dtype=float).tolist(),
            "noise_scale": np.exp(np.asarray(p["log_noise_scale"], dtype=float)).tolist(),
            "shift": np.asarray(ip["shift"], dtype=float).tolist(),
            "log_scale": np.asarray(ip["log_scale"], dtype=float).tolist(),
        }
    else:
        model = LorenzSDE(float(data["diffusion"]))
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(
            key, X[0], **({"learning_rate": args.learning_rate} if args.learning_rate else {})
        )
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        out = {k: float(model.param[k]) for k in ("sigma", "rho", "beta")}
    finite = all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in out.values())
    out.update(
        finite=bool(finite),
        fit_seconds=seconds,
        fit_cpu_seconds=cpu,
        compile_seconds=sum(COMPILE_EVENTS.values()),
        compile_events=COMPILE_EVENTS,
        import_seconds=IMPORT_SECONDS,
        versions={"jax": jax.__version__, "stadion": _stadion_version()},
    )
    return out


def _stadion_version():
    from importlib import metadata

    return metadata.version("stadion")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help=".npz file written by run.py")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--model", choices=("linear", "lorenz"), default="linear")
    ap.add_argument("--seed", type=int, default=0, help="PRNGKey of the fit")
    ap.add_argument(
        "--learning-rate", type=float, default=None, help="Adam's step (lorenz; default: fit's)"
    )
    args = ap.parse_args()
    out = _fit(args)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
