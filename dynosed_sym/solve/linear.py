"""The regularised linear solve θ̂ = (AᵀA + λI)⁻¹Aᵀb and H_λ⁻¹, both from an SVD of A (stable also
when λ ≪ σ_min²), and the scale check of an assembled system.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError

__all__ = ["solve_tikhonov", "hinv", "system_scale", "MAX_SYSTEM_ENTRY"]


def unit_scale(x, even=False):
    """2^k at or above max |x| (4^k with ``even``; 1 when x is zero or not finite).

    Dividing by it is exact in floating point, so a problem brought to unit size this way gives
    bit-identical results for data rescaled by a power of two; with ``even`` the square roots of
    the scaled squares are exact too.
    """
    big = float(np.max(np.abs(x), initial=0.0))
    if not (np.isfinite(big) and big > 0):
        return 1.0
    e = int(np.frexp(big)[1])
    return float(np.ldexp(1.0, e + (e % 2) if even else e))


def solve_tikhonov(A, b, lam, svd=None):
    """θ̂ = (AᵀA + λI)⁻¹ Aᵀb via an SVD (stable also when λ ≪ σ_min²); ``svd``: that of A
    (``numpy.linalg.svd(A, full_matrices=False)``) when already computed."""
    Uu, s, Vt = np.linalg.svd(A, full_matrices=False) if svd is None else svd
    denom = s * s + lam
    # λ = 0 with an exactly singular direction: that component of θ̂ is set to 0 (minimum norm)
    gain = np.divide(s, denom, out=np.zeros_like(s), where=denom > 0)
    return Vt.T @ (gain * (Uu.T @ b))


def hinv(A, lam):
    """``H_λ⁻¹ = (AᵀA + λI)⁻¹`` (n, n) from an SVD of A (stable for λ ≪ σ_min²; a pseudo-inverse
    when λ = 0 and A is rank deficient)."""
    m, n = A.shape
    _, s, Vt = np.linalg.svd(A, full_matrices=m < n)
    s_full = np.zeros(n)
    s_full[: s.size] = s[:n]
    denom = s_full * s_full + lam
    # λ = 0 with an exactly singular direction: pseudo-inverse (the minimum-norm θ̂ of
    # solve_tikhonov has no component there)
    inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0)
    V = Vt.T
    return (V * inv) @ V.T


#: Largest |entry| of an assembled system A θ ≈ b that the solve and the noise analysis (which
#: form fourth powers of A in the misspecification test) handle without overflow.
MAX_SYSTEM_ENTRY = 1e64


def system_scale(A, b, route):
    """Raise DataError when A, b are not finite or so large that the report would overflow."""
    big = max(float(np.abs(A).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    if not big <= MAX_SYSTEM_ENTRY:  # also NaN
        raise DataError(
            f"the assembled {route} system A θ = b has entries of size {big:.3g}: the drift or the "
            "diffusion at these samples is too large for double precision (the least-squares "
            "solve and the noise analysis would overflow); rescale the state variables"
        )
