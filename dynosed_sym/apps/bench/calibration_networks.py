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

from .calibration_data import Protocol, declare_family

__all__ = [
    "activation",
    "network_model",
    "network_protocol",
    "basal_network",
    "net10",
    "net20",
]

#: Base seed of the sparse truths (documented; nobody tuned on it).
NETWORK_SEED = 19_2026
#: Constant input of every gene in the sweep's networks.
OFFSET = sp.Rational(1, 2)


def activation(x):
    """The Hill activation h(x) = x²/(1 + x²) of the sweep's networks."""
    return x**2 / (1 + x**2)


def network_model(
    d,
    seed=NETWORK_SEED,
    *,
    inputs=activation,
    offset=OFFSET,
    weights=(0.5, 1.5),
    name=None,
):
    """``(model, truth)``: d genes, drift ``Σ_j W[i,j]·inputs(x_j) − x_i + offset``, D = 1/20, W a
    d × d MatrixSymbol; the truth has two nonzero inputs per gene (off the diagonal,
    ±U(*weights), drawn from ``seed``) and zeros elsewhere.  ``name`` defaults to
    ``sweep_net{d}``."""
    x = sp.symbols(f"x0:{d}", real=True)
    W = sp.MatrixSymbol("W", d, d)
    h = sp.Matrix([inputs(xi) for xi in x])
    drift = [sum(W[i, j] * h[j] for j in range(d)) - x[i] + offset for i in range(d)]
    name = f"sweep_net{d}" if name is None else name
    model = ds.SDEModel(list(x), W, drift, diffusion=sp.Rational(1, 20), name=name)
    rng = np.random.default_rng([seed, d])
    truth = np.zeros((d, d))
    for i in range(d):
        js = rng.choice([j for j in range(d) if j != i], 2, replace=False)
        truth[i, js] = rng.choice([-1.0, 1.0], 2) * rng.uniform(*weights, 2)
    return model, truth.ravel()


def network_protocol(sizes, probes, x0=None):
    # dt = 0.02: the drift's Lipschitz constant is about 1 (RK4 error ~ 1e-8 per step, the
    # Euler–Maruyama noise inflates the stationary variance by ≈ λ·dt/2 = 1 %); 500 steps are
    # 10 relaxation times.  (dt = 0.01 with 2000 steps took 5 min per 5000-chain set at d = 20.)
    return Protocol(
        sizes=sizes,
        dt=0.02,
        burn_in=500,
        relaxation=1.0,
        x0=x0,
        local_probes=probes,
        relaxation_note="the −x decay (bounded feedback; checked empirically)",
    )


def basal_network(name, inputs, W_truth, beta_truth, relaxation, x0=None):
    """``(model, truth, protocol)`` of a held-out network with unknown basal rates:
    ``x_i' = Σ_j W[i,j]·inputs[j] − x_i + β_i`` (``inputs``: one SymPy expression of x_j per
    gene, over the symbols ``x0 … x{d−1}``), D = 1/20, the full W and β unknown; simulated at
    N = 5000 and 10,000 (dt = 0.02, burn-in 20 time units, 200 probes); ``relaxation``:
    1/|Re λ| of the slowest eigenvalue at the truth's fixed point."""
    d = len(inputs)
    x = sp.symbols(f"x0:{d}", real=True)
    W = sp.MatrixSymbol("W", d, d)
    beta = sp.symbols(f"beta0:{d}", real=True)
    drift = [sum(W[i, j] * inputs[j] for j in range(d)) - x[i] + beta[i] for i in range(d)]
    return declare_family(
        name,
        list(x),
        [W, *beta],
        drift,
        np.concatenate([np.asarray(W_truth, float).ravel(), beta_truth]),
        sp.Rational(1, 20),
        sizes=(5000, 10_000),
        dt=0.02,
        burn_in=1000,
        relaxation=relaxation,
        x0=x0,
        relaxation_note="1/|Re λ| of the slowest eigenvalue at the fixed point",
        local_probes=200,
    )


def net10():
    """10 genes, n = 100."""
    model, truth = network_model(10)
    return model, truth, network_protocol((5000, 10_000), 200)


def net20():
    """20 genes, n = 400: one N (a global fit takes about a minute on the shared 2-core machine;
    ``--families net20 --sizes 5000,20000`` adds more)."""
    model, truth = network_model(20)
    return model, truth, network_protocol((5000,), 800)
