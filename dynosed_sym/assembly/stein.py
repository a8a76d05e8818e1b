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
           "contract", "contract_blocks", "block_sums", "assemble_global", "assemble_array"]

FEATURE_BLOCK = 128  # features per parallel task; rows of the partial sums stay in L1
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
def accumulate_stein(X, phi_s, phi_c, edges, Wt, ct, P_s, P_c):
    """Add Σ_i sin/cos(2π(ωᵀx_i + c)/2π) · phi[i] over each data block into P_s / P_c.

    Arrays are block-major so that every inner loop runs over ``q in range(FB)``
    with a provably non-negative, contiguous index (a computed offset such as
    ``r0 + q`` makes LLVM emit gathers instead of vector loads).  All data blocks
    are summed in one launch (one parallel region instead of one per block); each
    block's sums start from its own rows, so the arithmetic is that of one call
    per block.

    Parameters
    ----------
    X : (N, d) samples
    phi_s, phi_c : (N, K_sin), (N, K_cos) per-sample factors (generated ``stein_features``)
    edges : (G + 1,) int64 row boundaries of the G data blocks
    Wt : (B, d, FB) frequencies in turns (ω/2π), feature r = blk·FB + q
    ct : (B, FB) phases in turns (c/2π)
    P_s, P_c : (G, B, K_sin, FB), (G, B, K_cos, FB) running sums, updated in place
    """
    d = X.shape[1]
    Ks = phi_s.shape[1]
    Kc = phi_c.shape[1]
    nblk, _, FB = Wt.shape
    n_groups = edges.shape[0] - 1
    TI = 4  # samples contracted per load/store of the partial sums (unrolled below)
    for blk in numba.prange(nblk):
        Wb = Wt[blk]
        cb = ct[blk]
        t = np.empty(FB)
        sn = np.empty((TI, FB))
        cs = np.empty((TI, FB))
        for g in range(n_groups):
            Ps = P_s[g, blk]
            Pc = P_c[g, blk]
            hi = edges[g + 1]
            for i0 in range(edges[g], hi, TI):
                ni = min(TI, hi - i0)
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
        return P.transpose(1, 0, 2).reshape(k, self.n_blocks * FEATURE_BLOCK)[:, : self.m]

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
    """Turn block-major sums over ``count`` samples into (A (m, n), b (m,)) with DESIGN §2 scaling.

    A ``P_c`` with one factor more than the model's cos factors carries ``Σ_i cos_ri ∂ₜlog p(x_i)``
    (non-stationary snapshot, see :func:`block_sums`): the Stein feature's ``−z_r ∂ₜlog p`` term
    adds ``√(2/m)/N Σ_i cos_ri ∂ₜlog p(x_i)`` to b.
    """
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
    if P_c.shape[0] == cm.n_cos + 1:  # the ∂ₜlog p column of block_sums(..., dlogp_dt=...)
        b += P_c[cm.n_cos]
    b *= scale
    return A, b


def block_sums(cm, X, feats: RandomFeatures, edges=None, dlogp_dt=None):
    """Sums P_s, P_c over the rows of samples X (N_b, d).

    With ``edges`` (G + 1 row boundaries) the sums of every block come from one kernel
    launch, stacked as (G, n_blocks, K, FEATURE_BLOCK); without, X is one block and the
    arrays are (n_blocks, K, FEATURE_BLOCK).  ``dlogp_dt`` (N_b,), optional: ∂ₜlog p at each
    sample, appended as one more per-sample cos factor (see :func:`contract`).
    """
    from .compiled import check_finite_output

    phi_s, phi_c = cm.stein_features(X)
    check_finite_output(phi_s, "a Stein feature (drift term)", X)
    check_finite_output(phi_c, "a Stein feature (diffusion term)", X)
    if dlogp_dt is not None:
        phi_c = np.ascontiguousarray(np.column_stack([phi_c, np.asarray(dlogp_dt, dtype=float)]))
    one = edges is None
    edges = np.array([0, X.shape[0]], dtype=np.int64) if one else np.asarray(edges, dtype=np.int64)
    G = edges.size - 1
    P_s = np.zeros((G, feats.n_blocks, phi_s.shape[1], FEATURE_BLOCK))
    P_c = np.zeros((G, feats.n_blocks, phi_c.shape[1], FEATURE_BLOCK))
    accumulate_stein(X, phi_s, phi_c, edges, feats.Wt, feats.ct, P_s, P_c)
    return (P_s[0], P_c[0]) if one else (P_s, P_c)


def contract_blocks(cm, feats: RandomFeatures, sums):
    """Per-block sums → totals and per-block means.

    Parameters
    ----------
    sums : sequence of (P_s, P_c, count), in block order

    Returns
    -------
    A : (m, n), b : (m,)
        Means over all samples (block sums added in block order, then contracted).
    A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,)
        Per-block means, from which the sampling noise of A and b is estimated.
    """
    if not sums:
        raise DataError("X: no samples")
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite results are checked below
        return _contract_blocks(cm, feats, sums)


def _contract_blocks(cm, feats, sums):
    A_blocks, b_blocks, counts = [], [], []
    P_s_tot = P_c_tot = None
    for P_s, P_c, count in sums:
        Ab, bb = contract(cm, feats, P_s, P_c, count)
        A_blocks.append(Ab)
        b_blocks.append(bb)
        counts.append(int(count))
        if P_s_tot is None:
            P_s_tot, P_c_tot = P_s.copy(), P_c.copy()
        else:
            P_s_tot += P_s
            P_c_tot += P_c
    A, b = contract(cm, feats, P_s_tot, P_c_tot, int(sum(counts)))
    if not (np.isfinite(A).all() and np.isfinite(b).all()):
        raise DataError(f"the assembled system A θ = b is not finite: the kernel length scale "
                        f"(bandwidth = {feats.lengthscale:.3g}) is far too small for the data, or the "
                        "drift/diffusion overflow at these samples")
    return A, b, np.array(A_blocks), np.array(b_blocks), np.array(counts)


def assemble_global(cm, blocks, feats: RandomFeatures):
    """Assemble A, b from an iterable of sample blocks (one kernel launch per block).

    Parameters
    ----------
    cm : CompiledModel
    blocks : iterable of (N_b, d) float arrays, processed in order
    feats : RandomFeatures

    Returns
    -------
    A, b, A_blocks, b_blocks, counts
        See :func:`contract_blocks`.
    """
    return contract_blocks(cm, feats, [(*block_sums(cm, Xb, feats), Xb.shape[0]) for Xb in blocks])


def assemble_array(cm, X, edges, feats: RandomFeatures, dlogp_dt=None):
    """Assemble A, b from samples in memory with noise blocks ``X[edges[g]:edges[g+1]]``.

    One kernel launch for all blocks; bitwise the same as :func:`assemble_global` over
    the same blocks.  ``dlogp_dt`` (N,), optional: ∂ₜlog p at each sample (non-stationary
    snapshot, DESIGN §2).
    """
    P_s, P_c = block_sums(cm, X, feats, edges, dlogp_dt)
    counts = np.diff(np.asarray(edges, dtype=np.int64))
    return contract_blocks(cm, feats, [(P_s[g], P_c[g], counts[g]) for g in range(counts.size)])
