"""Random Fourier features ``z_r(x) = √(2/m) cos(ω_rᵀx + c_r)`` of the global route, the median
bandwidth, and the range check that keeps their sin/cos precise.
"""

from __future__ import annotations

import math

import numpy as np

from ..data.checks import state_overflow, state_signs
from ..errors import DataError
from ..kernels.stein_fill import FEATURE_BLOCK

__all__ = [
    "RandomFeatures",
    "draw_features",
    "median_lengthscale",
    "check_lengthscale",
    "LENGTHSCALE_RANGE",
    "feature_arguments",
    "MAX_FEATURE_TURNS",
    "TWO_PI",
]

TWO_PI = 2.0 * math.pi


class RandomFeatures:
    """Random Fourier features ``z_r(x) = √(2/m) cos(ω_rᵀx + c_r)``.

    Attributes
    ----------
    omega : (m, d) frequencies, ω_r ~ N(0, ℓ⁻² I)
    phase : (m,) phases, c_r ~ U[0, 2π)
    lengthscale : float
    """

    def __init__(self, omega, phase, lengthscale):
        self.omega = np.ascontiguousarray(omega, dtype=float)
        self.phase = np.ascontiguousarray(phase, dtype=float)
        self.lengthscale = float(lengthscale)
        m, d = self.omega.shape
        self.n_blocks = -(-m // FEATURE_BLOCK)
        mpad = self.n_blocks * FEATURE_BLOCK
        # turns (ω/2π, c/2π) so that range reduction is t - floor(t + 1/2); zero-padded features;
        # block-major layout (block, ·, FEATURE_BLOCK) for the fill kernel
        Wt = np.zeros((d, mpad))
        Wt[:, :m] = self.omega.T / TWO_PI
        self.Wt = np.ascontiguousarray(
            Wt.reshape(d, self.n_blocks, FEATURE_BLOCK).transpose(1, 0, 2)
        )
        ct = np.zeros(mpad)
        ct[:m] = self.phase / TWO_PI
        self.ct = ct.reshape(self.n_blocks, FEATURE_BLOCK)

    def zeros(self, k):
        """Block-major running sums for k per-sample factors: (n_blocks, k, FEATURE_BLOCK)."""
        return np.zeros((self.n_blocks, k, FEATURE_BLOCK))

    def unblock(self, P):
        """(n_blocks, k, FEATURE_BLOCK) sums → (k, m) in feature order."""
        k = P.shape[1]
        return P.transpose(1, 0, 2).reshape(k, self.n_blocks * FEATURE_BLOCK)[:, : self.m]

    @property
    def m(self):
        return self.omega.shape[0]


#: Median length scales the global route accepts: below, the squared frequencies ω² ~ 1/ℓ² of
#: the features (and the data's squared distances, under 1e-154) leave the double-precision
#: range; above 2⁵¹¹ ≈ 6.7e153, the data's squared distances overflow.
LENGTHSCALE_RANGE = (1e-150, 2.0**511)


def median_lengthscale(X, seed=0, max_points=1000):
    """Median pairwise Euclidean distance of a seeded subsample of at most ``max_points`` rows.

    When the median leaves ``LENGTHSCALE_RANGE`` it is computed again on the data divided by a
    power of two (exact) that brings them into [−1, 1], so a spread far below 1e-154, whose
    squared distances underflow to zero, is measured and named (a DataError) rather than
    mistaken for identical samples; in range, the result is SciPy's pdist median as is.
    """
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(seed)
    if X.shape[0] > max_points:
        X = X[np.sort(rng.choice(X.shape[0], max_points, replace=False))]
    dist = pdist(X)
    ell = float(np.median(dist)) if dist.size else 0.0
    lo, hi = LENGTHSCALE_RANGE
    if dist.size and not lo <= ell <= hi:  # again on X ÷ 2^k, |X| ≤ 1: squares in range
        top = float(np.max(np.abs(X)))
        k = math.frexp(top)[1] if 0.0 < top < math.inf else 0
        ell = float(np.ldexp(np.median(pdist(np.ldexp(X, -k))), k))
    if not ell > 0.0:
        raise DataError(
            "X: the median pairwise distance is zero (are all samples identical?); "
            "pass bandwidth= explicitly"
        )
    if not lo <= ell <= hi:
        raise DataError(
            f"X: the samples are spread over a scale of {ell:.3g} (median pairwise distance), "
            f"outside {lo:.3g} … {hi:.3g}: "
            + (
                "squared distances would underflow and the squared kernel frequencies "
                "ω² ~ 1/ℓ² overflow"
                if ell < lo
                else "squared distances would overflow"
            )
            + " in double precision; rescale the state variables (and the model with them) to "
            "a spread of order one"
        )
    return ell


def check_lengthscale(ell, name="bandwidth"):
    """``ell`` unless it is below ``LENGTHSCALE_RANGE[0]`` (then a DataError): the squared
    frequencies ω² ~ 1/ℓ² of the random features would overflow."""
    lo = LENGTHSCALE_RANGE[0]
    if not ell >= lo:
        raise DataError(
            f"{name}={ell:.3g} is below {lo:.3g}: the squared kernel frequencies ω² ~ 1/{name}² "
            "would overflow in double precision; rescale the state variables (and the model "
            "with them) to a spread of order one"
        )
    return ell


def draw_features(d, m, lengthscale, seed=0) -> RandomFeatures:
    """Seeded frequencies ω ~ N(0, ℓ⁻² I) and phases c ~ U[0, 2π)."""
    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((m, d)) / lengthscale
    phase = rng.uniform(0.0, TWO_PI, m)
    return RandomFeatures(omega, phase, lengthscale)


#: Largest |ωᵀx + c| / 2π (in turns) the fill accepts.  The range reduction t − ⌊t + ½⌋ keeps
#: the absolute rounding of t, |t|·2⁻⁵², so at 2²⁰ turns sin/cos are still right to ≈ 1.5e-9;
#: far beyond, they are noise (and at 2⁵² every feature is sin(c)), a wrong number, not a NaN.
MAX_FEATURE_TURNS = 2.0**20


def feature_arguments(X, feats, name="X", offset=0, model=None):
    """Raise DataError when a row of X (n, d) puts a random feature out of sin/cos precision —
    or, first, with ``model``, when a term of the model overflows there
    (:func:`~dynosed_sym.data.checks.state_overflow`, the cause to name for a value like 1e300).

    Uses the bound ``|ωᵀx + c| ≤ max‖ω‖·‖x‖ + 2π`` (O(n·d)): it trips only when ‖x‖ exceeds the
    kernel length scale by a factor of order 10⁶, i.e. data far from the origin compared with
    their spread.  Rows are counted from ``offset`` (the global index of X's first row).
    """
    if X.shape[0] == 0:
        return
    if model is not None:
        state_signs(model, X, name, offset=offset)
        state_overflow(model, X, name, offset=offset)
    limit = MAX_FEATURE_TURNS * 2.0 * math.pi - 2.0 * math.pi
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is itself the answer
        w_max = float(np.sqrt((feats.omega**2).sum(axis=1)).max())
        if math.sqrt(float(np.einsum("ij,ij->i", X, X).max())) * w_max <= limit:
            return  # the common case, in one pass
        scale = np.abs(X).max(axis=1)  # ‖x‖ without overflowing x² (rows of 1e200 are valid input)
        safe = np.where(scale > 0, scale, 1.0)
        norms = scale * np.sqrt(((X / safe[:, None]) ** 2).sum(axis=1))
        bad = ~(norms * w_max <= limit)
    if bad.any():
        rows = np.flatnonzero(bad)
        r = int(rows[0])
        raise DataError(
            f"{name}: {rows.size} row(s) lie so far from the origin compared with the kernel "
            "length "
            f"scale (bandwidth = {feats.lengthscale:.3g}) that sin/cos of the random features lose "
            f"all precision (row {r + offset}, ‖x‖ = {norms[r]:.3g}); shift/rescale the state "
            "variables (and the model with them) or pass a larger bandwidth="
        )
