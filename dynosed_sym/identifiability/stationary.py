"""Closed-form stationary scores at the nominal θ: the Gaussian law of a linear drift (Lyapunov
equation, solved exactly) and ``p ∝ exp(ψ)`` for a gradient drift ``D⁻¹f = ∇ψ`` (constant D).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .exact import function_null_space, is_zero, proven_nonzero

__all__ = ["gaussian_score", "gradient_score", "LYAPUNOV_MAX_DIM"]


LYAPUNOV_MAX_DIM = 12  # exact Lyapunov solve only up to this state dimension


def _hurwitz(M):
    ev = np.linalg.eigvals(np.array(M.evalf(), dtype=float))
    return bool(np.all(ev.real < -1e-12 * max(1.0, np.abs(ev).max())))


def gaussian_score(f, D, state):
    """Exact score of the Gaussian stationary law of a linear drift f = M x + c (constant D)."""
    d = len(state)
    if d > LYAPUNOV_MAX_DIM:
        return None
    for e in f:
        if not e.is_polynomial(*state) or sp.Poly(e, *state).total_degree() > 1:
            return None
    zero = {s: 0 for s in state}
    M = sp.Matrix(d, d, lambda i, j: sp.diff(f[i], state[j]))
    c0 = f.xreplace(zero)
    if not _hurwitz(M):
        return None
    syms = {}
    S = sp.zeros(d, d)
    for i in range(d):
        for j in range(i, d):
            syms[(i, j)] = sp.Symbol(f"_S{i}_{j}")
            S[i, j] = S[j, i] = syms[(i, j)]
    eqs = M * S + S * M.T + 2 * D
    unknowns = list(syms.values())
    sol = sp.solve([eqs[i, j] for i in range(d) for j in range(i, d)], unknowns, dict=True)
    if not sol:
        return None
    S = S.xreplace(sol[0])
    # the float eigenvalue test above is a filter; the proof that the law exists (M Hurwitz,
    # by Lyapunov's theorem for D > 0) is Σ > 0, checked exactly by its leading minors
    if not all(S[:i, :i].det().is_positive for i in range(1, d + 1)):
        return None
    mu = -M.inv() * c0
    P = S.inv()
    x = sp.Matrix(state)
    s = -P * (x - mu)
    shown = sp.sstr(S.tolist())
    if len(shown) > 100:
        shown = "≈ " + np.array2string(
            np.array(S.evalf(), dtype=float), precision=3, separator=", ", max_line_width=10**6
        ).replace("\n", "")
        if len(shown) > 100:
            shown = f"({d}×{d}, exact rationals)"
    desc = f"Gaussian N(μ, Σ), Σ from the Lyapunov equation MΣ + ΣMᵀ + 2D = 0 (exact): Σ = {shown}"
    return [sp.expand(e) for e in s], desc


def _curl(g, state):
    d = len(state)
    return [
        sp.diff(g[j], state[i]) - sp.diff(g[i], state[j]) for i in range(d) for j in range(i + 1, d)
    ]


def gradient_score(U, v, D, theta0, invisible, state, seed=0):
    """Score of a gradient drift D⁻¹f = ∇ψ (constant D), maybe after a shift along invisible
    directions.

    Returns (s, description, shifted θ) or None.
    """
    d, n = U.shape
    if D.det() == 0:
        return None
    Dinv = D.inv()
    th = sp.Matrix(theta0)
    g0 = Dinv * (U * th + v)
    curl0 = _curl(g0, state)
    if not invisible:
        if proven_nonzero(curl0, state, seed) or not all(is_zero(c, state) for c in curl0):
            return None
        return [sp.expand(e) for e in g0], "gradient drift: p ∝ exp(ψ) with ∇ψ = D⁻¹f (exact)", th
    # find t with curl(D⁻¹(f(θ0 + N t))) ≡ 0
    cols = [_curl(Dinv * (U * vec), state) for vec in invisible] + [curl0]
    ns = function_null_space(cols, state, seed)
    for i, vec in enumerate(ns.basis):
        if i not in ns.numerical and vec[-1] != 0:  # a proven shift only
            t = [vec[q] / vec[-1] for q in range(len(invisible))]
            th1 = th + sum((t[q] * invisible[q] for q in range(len(invisible))), sp.zeros(n, 1))
            g = Dinv * (U * th1 + v)
            return (
                [sp.expand(e) for e in g],
                "gradient drift after removing invisible terms (they leave p unchanged): "
                "p ∝ exp(ψ) with ∇ψ = D⁻¹f (exact)",
                th1,
            )
    return None
