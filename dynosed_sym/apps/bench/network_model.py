"""The d-gene network of issue 20: ``dx_j = (Σ_k W[j,k] h(x_k) − x_j + 1/2) dt + √(2D) dW_j``.

``h(x) = x²/(1 + x²)`` (a Hill activation), D = 1/20, the full d × d interaction matrix W unknown
(n = d² parameters ``W_j_k``), and a sparse truth: every gene has two regulators with weights
±(0.5 … 1.5).  The truth is made stable: its weights are scaled down (by 0.8 at a time) until
the deterministic fixed point reached from x = 1/2 has a Jacobian ``W diag(h'(x*)) − I`` whose
eigenvalues all have real part ≤ −0.2, so simulated chains settle near one state.

``network_model(d, seed) -> (model, truth)`` is all a caller needs (the bench's ``network``
section, calibration sweeps).
"""

from __future__ import annotations

import numpy as np

__all__ = ["network_model", "hill", "network_drift"]

#: Diffusion D of every gene.
DIFFUSION = (1, 20)


def hill(x):
    """h(x) = x²/(1 + x²) for NumPy arrays."""
    x2 = x * x
    return x2 / (1.0 + x2)


def network_drift(X, W):
    """The drift at rows X (N, d) for an interaction matrix W (d, d), in NumPy."""
    return hill(X) @ W.T - X + 0.5


def _sparse_truth(d, rng):
    W = np.zeros((d, d))
    for j in range(d):
        regulators = rng.choice(d, size=min(2, d), replace=False)
        signs = rng.choice([-1.0, 1.0], size=regulators.size)
        W[j, regulators] = signs * rng.uniform(0.5, 1.5, size=regulators.size)
    for _ in range(60):
        x = np.full(d, 0.5)
        for _ in range(4000):  # the ODE to its fixed point (explicit Euler, dt = 0.05)
            x = x + 0.05 * network_drift(x[None], W)[0]
        hp = 2 * x / (1 + x * x) ** 2
        if np.linalg.eigvals(W * hp[None, :] - np.eye(d)).real.max() <= -0.2:
            break
        W *= 0.8
    return W


def network_model(d, seed=0, rates=False):
    """The d-gene network (module docstring) and its sparse truth; with ``rates`` every gene's
    decay and basal rates are unknown too, ``Σ_k W[j,k] h(x_k) − g_j x_j + β_j`` (n = d² + 2d;
    parameters ``g_j``, ``beta_j`` after W, truth g = 1, β = 1/2: the same law).

    Returns
    -------
    model : SDEModel
        States ``x0 … x{d-1}``, parameters ``W_j_k`` (row-major, θ[j·d + k] = W[j, k]), drift
        ``Σ_k W[j,k] h(x_k) − x_j + 1/2``, D = 1/20; ``model.nominal`` is the truth.
    truth : numpy.ndarray (d²,)
        The sparse stable truth, row-major.
    """
    import sympy as sp

    from ...model import SDEModel

    d = int(d)
    x = sp.symbols(f"x0:{d}", real=True)
    W = sp.Matrix(d, d, lambda j, k: sp.Symbol(f"W_{j}_{k}", real=True))
    h = [xk**2 / (1 + xk**2) for xk in x]
    half = sp.Rational(1, 2)
    truth = _sparse_truth(d, np.random.default_rng(seed)).reshape(-1)
    params, name = list(W), f"network_d{d}"
    if rates:
        g, beta = sp.symbols(f"g0:{d}", real=True), sp.symbols(f"beta0:{d}", real=True)
        decay, basal = [g[j] * x[j] for j in range(d)], list(beta)
        params += list(g) + list(beta)
        truth = np.concatenate([truth, np.ones(d), np.full(d, 0.5)])
        name = f"network_rates_d{d}"
    else:
        decay, basal = list(x), [half] * d
    f = [sp.Add(*[W[j, k] * h[k] for k in range(d)], -decay[j], basal[j]) for j in range(d)]
    model = SDEModel(
        state=list(x),
        params=params,
        drift=f,
        diffusion=sp.Rational(*DIFFUSION),
        name=name,
        nominal=truth,
    )
    return model, truth
