"""Steady-state snapshots by simulation with the generated, compiled integrator.

Scheme (reference paper, supplement): RK4 for the drift plus an Euler–Maruyama
noise increment ``√dt · G η`` when the noise is constant; plain Euler–Maruyama
when G depends on the state.  Each chain owns a counter-based random stream
keyed from ``seed``, so results are identical for any number of threads.
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
             x0=None, out_dir=None) -> np.ndarray:
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
        Start states (default: standard normal).

    Returns
    -------
    X : (n_samples, d) array
        Rows ordered by chain, then recording time, so that contiguous blocks of
        rows hold whole chains (independent blocks for the noise estimates).
    """
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
