"""Steady-state snapshots by simulation with the generated, compiled integrator.

Scheme (reference paper, supplement): RK4 for the drift plus an Euler–Maruyama
noise increment ``√dt · G η`` when the noise is constant; plain Euler–Maruyama
when G depends on the state.

The generated kernel ``simulate_chains`` integrates the chains in blocks of up
to ``LANES`` (64) lanes stored as structure of arrays, so the drift (printed
once more as ``drift_lanes``), the normals and the update are vectorised across
chains.  Each chain owns a counter-based random stream: uniform number k of
chain c is the SplitMix64 hash of ``keys[c] + k·φ`` (φ the 64-bit golden
ratio, keys from ``numpy.random.SeedSequence(seed)``), turned into normals by
Box–Muller with polynomial log, sqrt and sin/cos (no libm calls; |η| ≤ 8.49).
A chain's output depends only on its key, its start and the parameters, so
results are bitwise identical for any number of threads and do not change when
other chains are added.
"""

from __future__ import annotations

import numpy as np

from .compiled import compile_model
from .errors import DataError

__all__ = ["simulate", "chain_keys", "initial_states"]


def chain_keys(seed, n_chains) -> np.ndarray:
    """Per-chain 64-bit stream keys derived from ``seed`` (NumPy SeedSequence)."""
    return np.random.SeedSequence(seed).generate_state(n_chains, dtype=np.uint64)


def initial_states(model, n_chains, seed, x0=None) -> np.ndarray:
    """Start states (C, d): ``x0`` broadcast, or standard normal draws (the paper's choice)."""
    if x0 is None:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        return rng.standard_normal((n_chains, model.d))
    x0 = np.asarray(x0, dtype=float)
    if x0.shape == (model.d,):
        return np.tile(x0, (n_chains, 1))
    if x0.shape == (n_chains, model.d):
        return x0.copy()
    raise DataError(f"x0: expected shape ({model.d},) or ({n_chains}, {model.d}), got {x0.shape}")


def simulate(model, theta, n_samples, dt=0.01, burn_in=5000, thin=10, n_chains=None, seed=0,
             x0=None, out_dir=None, *, backend=None, client=None) -> np.ndarray:
    """Draw approximately stationary samples by running independent chains.

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict
        Parameter values (dict keyed by symbol or name).
    n_samples : int
        Number of samples returned.
    dt : float
        Time step.
    burn_in : int
        Steps discarded at the start of every chain.
    thin : int
        Steps between recorded states.
    n_chains : int, optional
        Independent chains (default ``min(n_samples, 2048)``); each records
        ``ceil(n_samples / n_chains)`` states.
    seed : int
    x0 : array (d,) or (n_chains, d), optional
        Start states (default: standard normal draws seeded by ``seed``).
    out_dir : str, optional
        Folder of the generated kernel module (see :func:`compile_model`).
    backend : {None, "local", "dask"}
        "dask" (or passing ``client``) spreads the chains over Dask workers with
        :func:`dynosed_sym.distributed.simulate`; the result is bitwise the same.
    client : distributed.Client, optional

    Returns
    -------
    X : (n_samples, d) array
        Rows ordered by chain, then recording time, so that contiguous blocks of
        rows hold whole chains (independent blocks for the noise estimates).
        Record k of a chain is its state after ``burn_in + k * thin`` steps.

    Raises
    ------
    DataError
        For invalid arguments, and when a chain leaves the finite range (the
        message names the chain and the step); no NaN is ever returned.

    Notes
    -----
    Same ``seed`` ⇒ bitwise identical ``X`` whatever the number of Numba
    threads; chain c's records are the same whatever ``n_chains`` (≥ c + 1) is.
    Cost: ``n_chains * (burn_in + thin * ceil(n_samples / n_chains))`` steps.
    """
    if backend not in (None, "local", "dask"):
        raise DataError(f"backend must be None, 'local' or 'dask', got {backend!r}")
    if backend == "dask" or (client is not None and backend is None):
        from .distributed import simulate as simulate_distributed

        return simulate_distributed(model, theta, n_samples, dt, burn_in, thin, n_chains, seed, x0,
                                    out_dir, client=client)
    theta = model.theta_vector(theta)
    n_samples = int(n_samples)
    if n_samples < 1:
        raise DataError(f"n_samples must be at least 1, got {n_samples}")
    if not (np.isfinite(dt) and dt > 0):
        raise DataError(f"dt must be a positive number, got {dt}")
    if int(burn_in) < 0 or int(thin) < 1:
        raise DataError(f"burn_in must be ≥ 0 and thin ≥ 1 (got burn_in={burn_in}, thin={thin})")
    n_chains = int(n_chains) if n_chains is not None else min(n_samples, 2048)
    if n_chains < 1:
        raise DataError(f"n_chains must be at least 1, got {n_chains}")
    n_keep = -(-n_samples // n_chains)
    cm = compile_model(model, out_dir)
    G = cm.noise_matrix if cm.noise_matrix is not None else np.zeros((model.d, cm.noise_dim))
    X0 = initial_states(model, n_chains, seed, x0)
    out = np.empty((n_keep, n_chains, model.d))
    status = np.zeros(n_chains, dtype=np.int64)
    cm.module.simulate_chains(np.ascontiguousarray(X0), theta, np.ascontiguousarray(G, dtype=float),
                              float(dt), int(burn_in), int(thin), int(n_keep), chain_keys(seed, n_chains),
                              out, status)
    if status.any():
        c = int(np.flatnonzero(status)[0])
        raise DataError(f"simulation diverged: chain {c} left the finite range at step {status[c]} "
                        f"(dt={dt}); reduce dt or check the parameters")
    return np.ascontiguousarray(out.transpose(1, 0, 2).reshape(-1, model.d)[:n_samples])
