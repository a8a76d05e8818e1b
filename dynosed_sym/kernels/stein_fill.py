"""The fill of the global route: partial sums of sin/cos of the random features times per-sample
factors, over data blocks.  Model independent (the model enters through the factors its
generated ``stein_features`` kernel produces), compiled once for all models.

Parallelism is over blocks of features: every thread owns whole rows of the partial sums and
walks the samples in order, so there is no shared write and the result is bitwise identical for
any number of threads.  The kernel itself is serial over a range of feature blocks
(:func:`accumulate_blocks`); :func:`accumulate_stein` runs contiguous ranges of them on Python
threads (the kernel releases the GIL), as the simulator runs its chains
(:meth:`~dynosed_sym.codegen.loading.CompiledModel.run_chains`).  The ``prange`` loop it
replaced ran as fast, but its parallel lowering took 5–7 s to compile against 2–3 s for the
serial kernel (a cold start from an empty cache compiles it once per machine;
``python -m dynosed_sym.apps.bench --only network``).
"""

import numba
import numpy as np

from .jit import kernel
from .threads import map_ordered
from .trig import fold as _fold
from .trig import sin_turns as _sin_turns

__all__ = ["accumulate_stein", "accumulate_blocks", "phases", "FEATURE_BLOCK", "SERIAL_PAIRS"]

FEATURE_BLOCK = 128  # features per parallel task; rows of the partial sums stay in L1

#: Below this many (sample, feature) pairs the fill runs on the calling thread (about a
#: millisecond of work: less than starting threads; the gradient method fills once per step).
SERIAL_PAIRS = 2**18


@kernel(fastmath=True, inline="always")
def phases(x, Wb, cb, t):
    """``t[q] = cb[q] + Σ_j Wb[j, q]·x[j]``: the phases (turns) of the sample x for one block of
    features (frequencies Wb (d, FB) and phases cb (FB,) in turns, block-major)."""
    FB = Wb.shape[1]
    for q in range(FB):
        t[q] = cb[q]
    for j in range(x.shape[0]):
        xj = x[j]
        wj = Wb[j]
        for q in range(FB):
            t[q] += wj[q] * xj


@kernel(fastmath=True, inline="always")
def _add_four(P, phi, i0, r0, r1, r2, r3):
    """``P[e] += Σ_a r_a·phi[i0 + a, e]`` for every factor e: the rows r_a (FB,) of four
    consecutive samples contracted with one load/store of each row of the partial sums P (K, FB)."""
    for e in range(phi.shape[1]):
        p0 = phi[i0, e]
        p1 = phi[i0 + 1, e]
        p2 = phi[i0 + 2, e]
        p3 = phi[i0 + 3, e]
        Pe = P[e]
        for q in range(r0.shape[0]):
            Pe[q] += (r0[q] * p0 + r1[q] * p1) + (r2[q] * p2 + r3[q] * p3)


@kernel(fastmath=True, inline="always")
def _add_one(P, phi, i, r):
    """``P[e] += r·phi[i, e]`` for every factor e (one sample: the tail of a block)."""
    for e in range(phi.shape[1]):
        pe = phi[i, e]
        Pe = P[e]
        for q in range(r.shape[0]):
            Pe[q] += r[q] * pe


def accumulate_stein(X, phi_s, phi_c, edges, Wt, ct, P_s, P_c, threads=None):
    """Add Σ_i sin/cos(2π(ωᵀx_i + c)/2π) · phi[i] over each data block into P_s / P_c
    (arguments as :func:`accumulate_blocks`), the feature blocks in contiguous parts on
    ``threads`` threads (default: Numba's thread count; the calling thread alone below
    :data:`SERIAL_PAIRS` pairs).  Every feature block is summed by the same code in the same
    order whatever the split, so the result is the same bit for bit on any number of threads."""
    nblk = Wt.shape[0]
    if threads is not None and not (isinstance(threads, (int, np.integer)) and threads >= 1):
        raise ValueError(f"accumulate_stein: threads must be a positive integer, got {threads!r}")
    workers = numba.get_num_threads() if threads is None else int(threads)
    if threads is None and X.shape[0] * nblk * Wt.shape[2] < SERIAL_PAIRS:
        workers = 1
    workers = max(1, min(workers, nblk))
    cuts = [nblk * p // workers for p in range(workers + 1)]

    def part(p):  # contiguous feature blocks; writes only their rows of P_s, P_c
        accumulate_blocks(X, phi_s, phi_c, edges, Wt, ct, P_s, P_c, cuts[p], cuts[p + 1])

    list(map_ordered(part, range(workers), workers))


@kernel(fastmath=True)
def accumulate_blocks(X, phi_s, phi_c, edges, Wt, ct, P_s, P_c, lo, hi):
    """Add Σ_i sin/cos(2π(ωᵀx_i + c)/2π) · phi[i] over each data block into P_s / P_c, for the
    feature blocks ``lo ≤ blk < hi``.

    Arrays are block-major so that every inner loop runs over ``q in range(FB)``
    with a provably non-negative, contiguous index (a computed offset such as
    ``r0 + q`` makes LLVM emit gathers instead of vector loads).  All data blocks
    are summed in one call (one thread start instead of one per block); each
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
    lo, hi : the feature blocks summed here
    """
    FB = Wt.shape[2]
    n_groups = edges.shape[0] - 1
    TI = 4  # samples contracted per load/store of the partial sums (unrolled below)
    for blk in range(lo, hi):
        Wb = Wt[blk]
        cb = ct[blk]
        t = np.empty(FB)
        sn = np.empty((TI, FB))
        cs = np.empty((TI, FB))
        for g in range(n_groups):
            Ps = P_s[g, blk]
            Pc = P_c[g, blk]
            end = edges[g + 1]
            for i0 in range(edges[g], end, TI):
                ni = min(TI, end - i0)
                for a in range(ni):
                    phases(X[i0 + a], Wb, cb, t)
                    sa = sn[a]
                    ca = cs[a]
                    for q in range(FB):
                        u = t[q] - np.floor(t[q] + 0.5)
                        sa[q] = _sin_turns(_fold(u))
                        w = u + 0.25
                        w = w - np.floor(w + 0.5)
                        ca[q] = _sin_turns(_fold(w))
                if ni == TI:
                    _add_four(Ps, phi_s, i0, sn[0], sn[1], sn[2], sn[3])
                    _add_four(Pc, phi_c, i0, cs[0], cs[1], cs[2], cs[3])
                else:
                    for a in range(ni):
                        _add_one(Ps, phi_s, i0 + a, sn[a])
                        _add_one(Pc, phi_c, i0 + a, cs[a])
