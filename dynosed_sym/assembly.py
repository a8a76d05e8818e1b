"""Stage 6 — assembly of the global linear system A θ = b.

The hot loop is one model-independent kernel, :func:`accumulate_stein`, compiled
once for all models: for every (sample, feature) pair it evaluates
``sin``/``cos`` of ``ω_rᵀx_i + c_r`` with an inlined range-reduced polynomial and
immediately contracts them with the per-sample Stein-feature factors produced by
the model's generated ``stein_features`` kernel.  The small contraction with
ω (tables ``A_TERMS`` ... of the generated module) then gives A and b.

Parallelism is over blocks of features: every thread owns whole rows of the
partial sums and walks the samples in order, so there is no shared write and
the result is bitwise identical for any number of threads.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .errors import DataError

__all__ = ["RandomFeatures", "draw_features", "median_lengthscale", "accumulate_stein",
           "contract", "assemble_global"]

FEATURE_BLOCK = 128  # features per parallel task; rows of the partial sums stay in L1
SAMPLE_TILE = 4      # samples contracted per load/store of the partial sums
TWO_PI = 2.0 * math.pi


@numba.njit(parallel=False, fastmath=True, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _sin_turns(v):
    """sin(2πv) for v in [-1/4, 1/4]: Taylor series to v^19 (error < 3e-16)."""
    v2 = v * v
    # coefficients (-1)^k (2π)^(2k+1) / (2k+1)!, k = 9 ... 0
    p = -0.012031585942120619
    p = p * v2 + 0.10422916220813978
    p = p * v2 - 0.7181223017785001
    p = p * v2 + 3.8199525848482803
    p = p * v2 - 15.094642576822984
    p = p * v2 + 42.058693944897634
    p = p * v2 - 76.70585975306136
    p = p * v2 + 81.60524927607504
    p = p * v2 - 41.341702240399755
    p = p * v2 + 6.283185307179586
    return p * v


@numba.njit(parallel=False, fastmath=True, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _fold(u):
    """Map u (turns, in [-1/2, 1/2]) to v in [-1/4, 1/4] with sin(2πv) = sin(2πu)."""
    v = min(u, 0.5 - u)
    return max(v, -0.5 - v)


@numba.njit(parallel=True, fastmath=True, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def accumulate_stein(X, phi_s, phi_c, Wt, ct, P_s, P_c):
    """Add Σ_i sin/cos(2π(ωᵀx_i + c)/2π) · phi[i] into P_s / P_c, feature block by block.

    Arrays are block-major so that every inner loop runs over ``q in range(FB)``
    with a provably non-negative, contiguous index (a computed offset such as
    ``r0 + q`` makes LLVM emit gathers instead of vector loads).

    Parameters
    ----------
    X : (N, d) samples
    phi_s, phi_c : (N, K_sin), (N, K_cos) per-sample factors (generated ``stein_features``)
    Wt : (B, d, FB) frequencies in turns (ω/2π), feature r = blk·FB + q
    ct : (B, FB) phases in turns (c/2π)
    P_s, P_c : (B, K_sin, FB), (B, K_cos, FB) running sums, updated in place
    """
    N, d = X.shape
    Ks = phi_s.shape[1]
    Kc = phi_c.shape[1]
    nblk, _, FB = Wt.shape
    TI = 4
    for blk in numba.prange(nblk):
        Wb = Wt[blk]
        cb = ct[blk]
        Ps = P_s[blk]
        Pc = P_c[blk]
        t = np.empty(FB)
        sn = np.empty((TI, FB))
        cs = np.empty((TI, FB))
        for i0 in range(0, N, TI):
            ni = min(TI, N - i0)
            for a in range(ni):
                xa = X[i0 + a]
                for q in range(FB):
                    t[q] = cb[q]
                for j in range(d):
                    xj = xa[j]
                    wj = Wb[j]
                    for q in range(FB):
                        t[q] += wj[q] * xj
                sa = sn[a]
                ca = cs[a]
                for q in range(FB):
                    u = t[q] - np.floor(t[q] + 0.5)
                    sa[q] = _sin_turns(_fold(u))
                    w = u + 0.25
                    w = w - np.floor(w + 0.5)
                    ca[q] = _sin_turns(_fold(w))
            if ni == TI:
                s0, s1, s2, s3 = sn[0], sn[1], sn[2], sn[3]
                c0, c1, c2, c3 = cs[0], cs[1], cs[2], cs[3]
                for e in range(Ks):
                    p0 = phi_s[i0, e]
                    p1 = phi_s[i0 + 1, e]
                    p2 = phi_s[i0 + 2, e]
                    p3 = phi_s[i0 + 3, e]
                    Pe = Ps[e]
                    for q in range(FB):
                        Pe[q] += (s0[q] * p0 + s1[q] * p1) + (s2[q] * p2 + s3[q] * p3)
                for e in range(Kc):
                    p0 = phi_c[i0, e]
                    p1 = phi_c[i0 + 1, e]
                    p2 = phi_c[i0 + 2, e]
                    p3 = phi_c[i0 + 3, e]
                    Pe = Pc[e]
                    for q in range(FB):
                        Pe[q] += (c0[q] * p0 + c1[q] * p1) + (c2[q] * p2 + c3[q] * p3)
            else:
                for a in range(ni):
                    sa = sn[a]
                    ca = cs[a]
                    for e in range(Ks):
                        pe = phi_s[i0 + a, e]
                        Pe = Ps[e]
                        for q in range(FB):
                            Pe[q] += sa[q] * pe
                    for e in range(Kc):
                        pe = phi_c[i0 + a, e]
                        Pe = Pc[e]
                        for q in range(FB):
                            Pe[q] += ca[q] * pe


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
        self.Wt = np.ascontiguousarray(Wt.reshape(d, self.n_blocks, FEATURE_BLOCK).transpose(1, 0, 2))
        ct = np.zeros(mpad)
        ct[:m] = self.phase / TWO_PI
        self.ct = ct.reshape(self.n_blocks, FEATURE_BLOCK)

    def zeros(self, k):
        """Block-major running sums for k per-sample factors: (n_blocks, k, FEATURE_BLOCK)."""
        return np.zeros((self.n_blocks, k, FEATURE_BLOCK))

    def unblock(self, P):
        """(n_blocks, k, FEATURE_BLOCK) sums → (k, m) in feature order."""
        k = P.shape[1]
        return P.transpose(1, 0, 2).reshape(k, -1)[:, : self.m]

    @property
    def m(self):
        return self.omega.shape[0]


def median_lengthscale(X, seed=0, max_points=1000):
    """Median pairwise Euclidean distance of a seeded subsample of at most ``max_points`` rows."""
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(seed)
    if X.shape[0] > max_points:
        X = X[np.sort(rng.choice(X.shape[0], max_points, replace=False))]
    dist = pdist(X)
    ell = float(np.median(dist)) if dist.size else 0.0
    if not ell > 0.0:
        raise DataError("X: the median pairwise distance is zero (are all samples identical?); "
                        "pass bandwidth= explicitly")
    return ell


def draw_features(d, m, lengthscale, seed=0) -> RandomFeatures:
    """Seeded frequencies ω ~ N(0, ℓ⁻² I) and phases c ~ U[0, 2π)."""
    rng = np.random.default_rng(seed)
    omega = rng.standard_normal((m, d)) / lengthscale
    phase = rng.uniform(0.0, TWO_PI, m)
    return RandomFeatures(omega, phase, lengthscale)


def contract(cm, feats: RandomFeatures, P_s, P_c, count):
    """Turn block-major sums over ``count`` samples into (A (m, n), b (m,)) with DESIGN §2 scaling."""
    m = feats.m
    P_s, P_c = feats.unblock(P_s), feats.unblock(P_c)
    Om = feats.omega
    scale = math.sqrt(2.0 / m) / count
    n = cm.model.n
    A = np.zeros((m, n))
    e, j, k = cm.a_terms.T if cm.a_terms.size else (np.zeros(0, int),) * 3
    contrib = cm.a_coef[None, :] * Om[:, j] * P_s[e].T
    np.add.at(A.T, k, contrib.T)
    A *= -scale
    b = np.zeros(m)
    if cm.b_sin_terms.size:
        e, j = cm.b_sin_terms.T
        b += (cm.b_sin_coef[None, :] * Om[:, j] * P_s[e].T).sum(axis=1)
    if cm.b_cos_terms.size:
        e, j, l = cm.b_cos_terms.T
        b += (cm.b_cos_coef[None, :] * Om[:, j] * Om[:, l] * P_c[e].T).sum(axis=1)
    b *= scale
    return A, b


def block_sums(cm, X, feats: RandomFeatures):
    """Sums P_s, P_c over the rows of one block of samples X (N_b, d)."""
    from .compiled import check_finite_output

    phi_s, phi_c = cm.stein_features(X)
    check_finite_output(phi_s, "a Stein feature (drift term)", X)
    check_finite_output(phi_c, "a Stein feature (diffusion term)", X)
    P_s = feats.zeros(phi_s.shape[1])
    P_c = feats.zeros(phi_c.shape[1])
    accumulate_stein(X, phi_s, phi_c, feats.Wt, feats.ct, P_s, P_c)
    return P_s, P_c


def assemble_global(cm, blocks, feats: RandomFeatures):
    """Assemble A, b from an iterable of sample blocks.

    Parameters
    ----------
    cm : CompiledModel
    blocks : iterable of (N_b, d) float arrays, processed in order
    feats : RandomFeatures

    Returns
    -------
    A : (m, n), b : (m,)
        Means over all samples.
    A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,)
        Per-block means, from which the sampling noise of A and b is estimated.
    """
    P_s_tot = P_c_tot = None
    A_blocks, b_blocks, counts = [], [], []
    for Xb in blocks:
        P_s, P_c = block_sums(cm, Xb, feats)
        Ab, bb = contract(cm, feats, P_s, P_c, Xb.shape[0])
        A_blocks.append(Ab)
        b_blocks.append(bb)
        counts.append(Xb.shape[0])
        if P_s_tot is None:
            P_s_tot, P_c_tot = P_s, P_c
        else:
            P_s_tot += P_s
            P_c_tot += P_c
    if P_s_tot is None:
        raise DataError("X: no samples")
    N = int(sum(counts))
    A, b = contract(cm, feats, P_s_tot, P_c_tot, N)
    return A, b, np.array(A_blocks), np.array(b_blocks), np.array(counts)
