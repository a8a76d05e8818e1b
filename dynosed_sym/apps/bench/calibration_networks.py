"""Gene networks of the calibration sweep: d genes, drift W·h(x) − x + 1/2 with the Hill
activation h(x) = x²/(1 + x²), a full d × d interaction matrix W of unknowns (n = d²), a sparse
truth, D = 1/20.

The drift is −x plus a bounded term, so every W has a stationary law (|W h| ≤ Σ|W_ij|: the
chains are confined near x ∈ [1/2 − Σ|W_ij|, 1/2 + Σ|W_ij|]) and the slowest relaxation time
is about 1 (the −x decay; the feedback through h' ≤ 0.65·|W| is checked by the stationarity
check of the sweep).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

import dynosed_sym as ds

from .calibration_data import Protocol

__all__ = ["network_model", "net10", "net20"]

#: Base seed of the sparse truths (documented; nobody tuned on it).
NETWORK_SEED = 19_2026


def network_model(d, seed=NETWORK_SEED):
    """``(model, truth)``: d genes, W a d × d MatrixSymbol; the truth has two nonzero inputs per
    gene (off the diagonal, ±U(0.5, 1.5), drawn from ``seed``) and zeros elsewhere."""
    x = sp.symbols(f"x0:{d}", real=True)
    W = sp.MatrixSymbol("W", d, d)
    h = sp.Matrix([xi**2 / (1 + xi**2) for xi in x])
    drift = [sum(W[i, j] * h[j] for j in range(d)) - x[i] + sp.Rational(1, 2) for i in range(d)]
    model = ds.SDEModel(list(x), W, drift, diffusion=sp.Rational(1, 20), name=f"sweep_net{d}")
    rng = np.random.default_rng([seed, d])
    truth = np.zeros((d, d))
    for i in range(d):
        js = rng.choice([j for j in range(d) if j != i], 2, replace=False)
        truth[i, js] = rng.choice([-1.0, 1.0], 2) * rng.uniform(0.5, 1.5, 2)
    return model, truth.ravel()


def _protocol(sizes, probes):
    # dt = 0.02: the drift's Lipschitz constant is about 1 (RK4 error ~ 1e-8 per step, the
    # Euler–Maruyama noise inflates the stationary variance by ≈ λ·dt/2 = 1 %); 500 steps are
    # 10 relaxation times.  (dt = 0.01 with 2000 steps took 5 min per 5000-chain set at d = 20.)
    return Protocol(
        sizes=sizes,
        dt=0.02,
        burn_in=500,
        relaxation=1.0,
        local_probes=probes,
        relaxation_note="the −x decay (bounded feedback; checked empirically)",
    )


def net10():
    """10 genes, n = 100."""
    model, truth = network_model(10)
    return model, truth, _protocol((5000, 10_000), 200)


def net20():
    """20 genes, n = 400: one N (a global fit takes about a minute on the shared 2-core machine;
    ``--families net20 --sizes 5000,20000`` adds more)."""
    model, truth = network_model(20)
    return model, truth, _protocol((5000,), 800)
