"""Directions no snapshot route can see, from the symbols: fields ``Y = U c`` that commute with
the generator ``𝓛 = f·∇ + D:∇²`` (``L_Y D ≡ 0`` and ``(Y·∇)f − (f·∇)Y − D:∇²Y ≡ 0``), which map
stationary laws to stationary laws.
"""

from __future__ import annotations

import sympy as sp

from .exact import NullSpace, function_null_space

__all__ = ["symmetry_space"]


def _grad(expr, state):
    return [sp.diff(expr, s) for s in state]


def _lie_D(Y, D, state):
    """Components (i ≤ j) of ``L_Y D = Y·∇D − (∇Y)D − D(∇Y)ᵀ``."""
    d = len(state)
    JY = [
        [sp.diff(Y[i], state[l]) if Y[i] != 0 else 0 for l in range(d)] for i in range(d)
    ]  # (∇Y)_il = ∂_l Y_i
    out = []
    for i in range(d):
        for j in range(i, d):
            e = (
                sum(Y[l] * sp.diff(D[i, j], state[l]) for l in range(d))
                if D[i, j].free_symbols
                else 0
            )
            e -= sum(JY[i][l] * D[l, j] for l in range(d) if D[l, j] != 0)
            e -= sum(D[i, l] * JY[j][l] for l in range(d) if D[i, l] != 0)
            out.append(e)
    return out


def _bracket(Y, f, state):
    """Components of ``(Y·∇)f − (f·∇)Y``."""
    d = len(state)
    return [
        sum(Y[l] * sp.diff(f[q], state[l]) - f[l] * sp.diff(Y[q], state[l]) for l in range(d))
        for q in range(d)
    ]


def _D_hess(Y, D, state):
    """Components of ``D:∇²Y`` (Σ_il D_il ∂_i∂_l Y_q)."""
    d = len(state)
    return [
        sum(
            D[i, l] * sp.diff(Y[q], state[i], state[l])
            for i in range(d)
            for l in range(d)
            if D[i, l] != 0
        )
        for q in range(d)
    ]


def symmetry_space(U, D, state, drifts, seed=0):
    """Combinations c such that ``Y = U c`` commutes with the generator.

    ``drifts`` is a list of (vector, with_D_term): the first-order condition must hold for each
    (at fixed θ: [(f_θ, True)]; for every θ: [(v, True), (U_1, False), …]).
    Returns a :class:`~.exact.NullSpace` of n×1 vectors (including the null space of U itself):
    a vector is listed in ``numerical`` when it rests on a dependency that was not proven;
    ``certificate`` is the weaker of the two null-space computations behind it.
    """
    d, n = U.shape
    cols = [[U[j, k] for j in range(d)] for k in range(n)]
    # (i) the diffusion must be invariant: cheap, and it removes almost everything
    ns1 = function_null_space([_lie_D(col, D, state) for col in cols], state, seed)
    if not ns1.basis:
        return NullSpace([], [], ns1.certificate)
    Ys = [[sum(vec[k] * cols[k][j] for k in range(n)) for j in range(d)] for vec in ns1.basis]
    comps = []
    for Y in Ys:
        row = []
        hess = _D_hess(Y, D, state)
        for f, with_D in drifts:
            br = _bracket(Y, f, state)
            row.extend([br[q] - hess[q] for q in range(d)] if with_D else br)
        comps.append(row)
    ns2 = function_null_space(comps, state, seed)
    B1 = sp.Matrix.hstack(*ns1.basis)
    vectors = [B1 * z for z in ns2.basis]
    unproven = [
        i
        for i, z in enumerate(ns2.basis)
        if i in ns2.numerical or any(z[q] != 0 for q in ns1.numerical)
    ]
    order = {"exact": 0, "interval": 1, "numerical": 2}
    cert = max(ns1.certificate, ns2.certificate, key=order.get)
    return NullSpace(vectors, unproven, cert)
