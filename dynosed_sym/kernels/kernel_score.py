"""Gaussian-kernel sums of the local route's score estimator, streamed over chunks of rows.

For each probe p and data block: ``Σw``, ``Σw²``, ``Σw·y`` and ``Σw·yyᵀ`` with ``y = x_j − p`` and
``w = exp(−T(‖y‖² − δ²)/2)`` (δ² the running squared distance to the nearest point, a
log-sum-exp shift).  The score estimators built on these sums are in
:mod:`dynosed_sym.routes.scores`.
"""

import numba
import numpy as np

from .jit import kernel

__all__ = ["kernel_stream_sums", "KERNEL_CHUNK"]

KERNEL_CHUNK = 2048  # rows per buffered chunk of the kernel estimator (fits in L1/L2)


@kernel(inline="always")
def _exp_neg(e):
    """exp(−e) for 0 ≤ e < 1000 without a libm call (relative error below 1e-15).

    e = k·ln2 + r with k = round(e/ln2), |r| ≤ ln2/2; exp(−r) by its Taylor series to r¹⁴ (Horner),
    then the exact factor 2⁻ᵏ built from the exponent bits.
    """
    k = np.floor(e * 1.4426950408889634 + 0.5)
    r = (e - k * 0.6931471803691238) - k * 1.9082149292705877e-10  # ln 2 split: exact high part
    p = 1.1470745597729725e-11
    p = p * r - 1.6059043836821613e-10
    p = p * r + 2.08767569878681e-09
    p = p * r - 2.505210838544172e-08
    p = p * r + 2.755731922398589e-07
    p = p * r - 2.7557319223985893e-06
    p = p * r + 2.48015873015873e-05
    p = p * r - 0.0001984126984126984
    p = p * r + 0.001388888888888889
    p = p * r - 0.008333333333333333
    p = p * r + 0.041666666666666664
    p = p * r - 0.16666666666666666
    p = p * r + 0.5
    p = p * r - 1.0
    p = p * r + 1.0
    return p * np.uint64((1023 - np.int64(k)) << 52).view(np.float64)


# fastmath {"reassoc", "contract"} only: lets LLVM vectorise the reductions over a chunk (the
# summation order is fixed by the code, so results do not depend on the number of threads).
@kernel(fastmath={"reassoc", "contract"}, inline="always")
def _nearest(Xt, p, r2):
    """Squared distance from p to the nearest column of Xt (d, N), in chunks of ``r2.size``."""
    d, N = Xt.shape
    CH = r2.shape[0]
    best = np.inf
    for c0 in range(0, N, CH):
        n = min(CH, N - c0)
        for i in range(n):
            r2[i] = 0.0
        for a in range(d):
            xa = Xt[a, c0 : c0 + n]
            pa = p[a]
            for i in range(n):
                t = xa[i] - pa
                r2[i] += t * t
        for i in range(n):
            best = min(best, r2[i])
    return best


@kernel(fastmath={"reassoc", "contract"}, inline="always")
def _weighted_sums(Xt, lo, hi, p, shift, T, Y, w, r2, m1, m2):
    """Σw and Σw² (returned), Σw·y into m1 and Σw·yyᵀ (lower triangle) into m2 over the columns
    lo..hi of Xt, with y = x − p and w = exp(−T(‖y‖² − shift)/2), in chunks of ``w.size`` rows
    (buffers Y (d, CH), w, r2 (CH,)).  The inner loop shared by the in-memory and streaming kernels.
    """
    d = Xt.shape[0]
    CH = w.shape[0]
    sw = 0.0
    sw2 = 0.0
    for c0 in range(lo, hi, CH):
        n = min(CH, hi - c0)
        for i in range(n):
            r2[i] = 0.0
        for a in range(d):
            xa = Xt[a, c0 : c0 + n]
            Ya = Y[a]
            pa = p[a]
            for i in range(n):
                t = xa[i] - pa
                Ya[i] = t
                r2[i] += t * t
        for i in range(n):
            e = min(0.5 * T * (r2[i] - shift), 700.0)
            # weights below e^-40 ≈ 4e-18 of the nearest point's are dropped
            w[i] = _exp_neg(e) if e < 40.0 else 0.0
        s0 = 0.0
        s1 = 0.0
        for i in range(n):
            s0 += w[i]
            s1 += w[i] * w[i]
        sw += s0
        sw2 += s1
        for a in range(d):
            Ya = Y[a]
            acc = 0.0
            for i in range(n):
                acc += w[i] * Ya[i]
            m1[a] += acc
            for c in range(a + 1):
                Yc = Y[c]
                acc = 0.0
                for i in range(n):
                    acc += w[i] * Ya[i] * Yc[i]
                m2[a, c] += acc
    return sw, sw2


@kernel(parallel=True, fastmath={"reassoc", "contract"})
def kernel_stream_sums(Xt, P, T, starts, blocks, dmin, W, W2, M1, M2):
    """Add the kernel sums of one chunk into per-block sums (streaming log-sum-exp).

    Weights ``w = exp(−T(‖x_j − p‖² − δ²)/2)``, ``y = x_j − p``, one probe per parallel task.
    Weights below ``e⁻⁴⁰`` (≈ 4·10⁻¹⁸ of the nearest point's) are skipped: a relative change of
    the sums below ``4·10⁻¹⁸ N/Σw``, and no exponential for the far-away bulk of the data.
    The shift δ² is the running minimum ``dmin[m]`` of the squared distances seen so far: when the
    chunk holds a nearer point, the sums already
    accumulated for that probe (every block) are rescaled by ``exp(−T(δ²_old − δ²_new)/2)``
    (``W2`` by its square) before the chunk is added, so that after the last chunk all sums
    carry the shift of the nearest data point — those of the in-memory kernel up to rounding
    (and up to weights below ``e⁻⁴⁰`` of the nearest point's, kept here when they were above it
    relative to an earlier, larger shift).

    Parameters
    ----------
    Xt : (d, n) chunk, transposed; P : (M, d) probes; T : float
    starts : (S + 1,) int64 row offsets of the chunk's pieces; blocks : (S,) their block index
    dmin : (M,) running squared distance to the nearest point (``inf`` before the first chunk)
    W, W2 : (B, M); M1 : (B, M, d); M2 : (B, M, d, d) sums, updated in place
    """
    d, N = Xt.shape
    M = P.shape[0]
    B = W.shape[0]
    CH = KERNEL_CHUNK
    for m in numba.prange(M):
        p = P[m]
        Y = np.empty((d, CH))
        w = np.empty(CH)
        r2 = np.empty(CH)
        cmin = _nearest(Xt, p, r2)
        dm = dmin[m]
        if cmin < dm:
            if dm < np.inf:
                f = np.exp(-0.5 * T * (dm - cmin))
                f2 = f * f
                for b in range(B):
                    W[b, m] *= f
                    W2[b, m] *= f2
                    for a in range(d):
                        M1[b, m, a] *= f
                        for c in range(d):
                            M2[b, m, a, c] *= f
            dm = cmin
            dmin[m] = cmin
        for s in range(blocks.shape[0]):
            b = blocks[s]
            m1 = np.zeros(d)
            m2 = np.zeros((d, d))
            sw, sw2 = _weighted_sums(Xt, starts[s], starts[s + 1], p, dm, T, Y, w, r2, m1, m2)
            W[b, m] += sw
            W2[b, m] += sw2
            for a in range(d):
                M1[b, m, a] += m1[a]
                for c in range(a + 1):
                    M2[b, m, a, c] += m2[a, c]
                    if c != a:
                        M2[b, m, c, a] += m2[a, c]
