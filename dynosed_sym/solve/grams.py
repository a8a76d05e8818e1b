"""The dense solve's block deviations as two small Grams instead of ``(A_b − A)V`` (B, m, n).

Every statistic the solve and the intervals take from the block deviations ``ΔA_b = A_b − A`` is
one of two kinds (m ≥ n, the thin SVD ``A = U diag(s) Vᵀ``):

* a product with ``A V = U diag(s)`` on the left — the block deviations of ``‖A v_i‖²``
  (:mod:`.directions`), the curvature noise ``(AV_R)ᵀΔA_bV_R`` and the coupling
  ``(AV_R)ᵀΔA_bV_U``, ``(AV_U)ᵀΔA_bV_R`` (:mod:`.deviations`) — all entries of
  ``G_b = UᵀΔA_bV`` (n × n) scaled by singular values;
* the weighted sum of the blocks' Grams ``S = Σ_b w_b ΔA_bᵀΔA_b`` (n × n) — the noise of each
  direction ``v_iᵀSv_i`` and the U-statistic's correction ``V_RᵀSV_R`` (:mod:`.jackknife`).

Forming ``ΔA_bV`` first and contracting it again for each statistic costs about
``2·B·m·n²`` floating-point operations per pass, and the dense solve made three to four passes
(the directions, the correction on R, the curvature and coupling noise of the intervals), besides
a (B, m, n) array of temporaries.  Here ``UᵀΔA_b`` (``2·m·n²`` per block), its product with V
(``2·n³``) and the symmetric ``ΔA_bᵀΔA_b`` (``m·n²``) are taken once, a few blocks at a time, and
what is kept is B·n² + n² numbers.  These ``3·B·m·n²`` operations are most of a network-size
solve's time (d = 20 genes, n = 400: 1.2 of 1.7 s); the parts run on as many threads as the
assembly's parallel loops (one BLAS thread each: independent products, no BLAS barrier for a busy
core to stall), with the same result bit for bit on any number of threads.

The jackknife's deleted solves need each block's own Gram on R (``r ≤ 4B`` columns): those are
regenerated from the block means along R only (:meth:`BlockGrams.stream`).

The results equal the products of ``ΔA_bV`` up to rounding (``AV`` and ``U diag(s)`` differ by
the SVD's backward error): ``tests/solve/test_grams.py`` checks them against the direct NumPy
products.  With m < n (more parameters than features) or block means too large to hold, the solve
keeps the block deviations (:mod:`.blockops`).
"""

from __future__ import annotations

import numpy as np

from ..kernels.threads import map_ordered
from .blockops import CHUNK_BYTES, DeviationStream, is_dense, streamed

__all__ = ["BlockGrams", "block_parts", "grams_apply", "map_parts"]


def grams_apply(A, A_blocks):
    """Whether the dense solve takes :class:`BlockGrams` for these block means: held dense, and
    no more parameters than features (m ≥ n: the thin SVD's U is m × n)."""
    m, n = A.shape
    return m >= n and is_dense(A_blocks) and not streamed(A_blocks)


#: The blocks are cut into at most this many parts (more only when a part would exceed its share
#: of :data:`CHUNK_BYTES`), and at most this many run at once: each part is one buffer and one
#: task of the thread pool.
MAX_PARTS = 4

#: Below this many floating-point operations (the Grams' ``3·B·m·n²``, the intervals' curvature
#: noise ``2·B·n·r²``; about 10 ms on one core) the parts run on the calling thread: a small
#: system's products take less than starting a thread pool (the bootstrap solves a system per
#: resample).
THREADED_OPS = 3 * 10**8


def block_parts(B, m, n):
    """``[(lo, hi), …]``: the blocks in consecutive parts of equal size (the last may be smaller),
    each of at most ``ceil(B / MAX_PARTS)`` blocks and at most ``CHUNK_BYTES / MAX_PARTS`` bytes
    of block deviations (but at least one block), so that ``MAX_PARTS`` buffers in flight hold
    at most :data:`CHUNK_BYTES` — ``MAX_PARTS`` parts, or more when the bytes bound them.  A
    function of the shape only."""
    per_block = max(1, 8 * m * n)
    step = max(1, min(-(-B // MAX_PARTS), CHUNK_BYTES // (MAX_PARTS * per_block)))
    return [(lo, min(B, lo + step)) for lo in range(0, B, step)]


def _workers(workers, n_parts):
    """Threads for the parts: by default Numba's thread count divided by the BLAS threads each
    part's products may use (``DYNOSED_BLAS_THREADS``, :mod:`dynosed_sym.kernels.blas`), so that
    together they do not oversubscribe the cores."""
    if workers is None:
        import numba

        from ..kernels.blas import blas_limit

        workers = numba.get_num_threads() // blas_limit()
    return max(1, min(int(workers), n_parts, MAX_PARTS))


def map_parts(fn, parts, ops, workers=None):
    """``fn(part)`` for the parts (from :func:`block_parts`), yielded in their order, on the
    threads :func:`_workers` allows (default: Numba's thread count over the BLAS threads; on the
    calling thread when the parts' ``ops`` floating-point operations are below
    :data:`THREADED_OPS`, where a thread pool costs more); ``workers=1``: the calling thread."""
    if workers is None and ops < THREADED_OPS:
        workers = 1
    return map_ordered(fn, parts, _workers(workers, len(parts)))  # (NumPy's products free the GIL)


class BlockGrams:
    """``G_b = UᵀΔA_bV`` (B, n, n) and ``S = Σ_b w_b ΔA_bᵀΔA_b`` (n, n) of one solve.

    Attributes
    ----------
    G : (B, n, n); S : (n, n), weighted by the block weights w (sum 1), not divided by B − 1
    s : (n,) singular values of the solved system; V : (n, n) its right singular vectors
    w : (B,) block weights; shape : (B, m, n) of the block deviations these stand for
    """

    def __init__(self, G, S, s, V, w, shape):
        self.G, self.S, self.s, self.V, self.w = G, S, s, V, w
        self.shape = tuple(shape)
        self._SV = None

    def __len__(self):
        return self.shape[0]

    @classmethod
    def compute(cls, A, A_blocks, U, s, V, w, workers=None):
        """From the (unit-scale) system: ``ΔA_b`` a part of the blocks at a time, the parts on
        ``workers`` threads (default: Numba's thread count, as the assembly before it).

        The parts depend only on the shape (:func:`block_parts`), each part's ``G_b`` and partial
        Gram are single BLAS calls on its own buffer, and the partial Grams are added in part
        order: the result is the same bit for bit whatever the number of workers."""
        B, m, n = A_blocks.shape
        parts = block_parts(B, m, n)
        G = np.empty((B, n, n))
        Ut = np.ascontiguousarray(U.T)
        root = np.sqrt(np.asarray(w, dtype=float))

        def part(bounds):
            lo, hi = bounds
            D = np.subtract(A_blocks[lo:hi], A[None])
            G[lo:hi] = np.matmul(np.matmul(Ut, D), V)
            D *= root[lo:hi, None, None]
            flat = D.reshape(-1, n)
            return flat.T @ flat  # one symmetric product (NumPy's syrk)

        S = np.zeros((n, n))
        for Sp in map_parts(part, parts, 3 * B * m * n * n, workers):
            S += Sp  # in part order, each as it arrives (not all parts' Grams held at once)
        return cls(G, S, np.asarray(s, dtype=float), V, np.asarray(w, dtype=float), (B, m, n))

    # -- the directions -------------------------------------------------------------------------
    def _sv(self):
        if self._SV is None:
            self._SV = self.S @ self.V
        return self._SV

    def vSv(self):
        """(n,) ``Σ_b w_b ‖ΔA_b v_i‖²`` (not divided by B − 1)."""
        return np.einsum("ji,ji->i", self.V, self._sv())

    def proj(self):
        """(B, n) ``(A v_i)ᵀΔA_b v_i = s_i G_b[i, i]``."""
        return self.s[None, :] * np.einsum("bii->bi", self.G)

    # -- the correction on R and the jackknife ---------------------------------------------------
    def on(self, cols):
        """``V_RᵀSV_R`` (r, r) for the columns R (weighted, not divided by B − 1)."""
        VR = self.V[:, cols]
        return VR.T @ self._sv()[:, cols]

    def stream(self, A, A_blocks):
        """The block deviations ``(A_b − A)V`` regenerated from ``A_blocks`` (the jackknife)."""
        return DeviationStream(A_blocks, self.V, A @ self.V)

    # -- the intervals ---------------------------------------------------------------------------
    def contractions(self, resolved, scale):
        """(E, N): ``E_b = (AV_R)ᵀΔA_bV_R`` (B, r, r) and
        ``N_b = (AV_R)ᵀΔA_bV_U + ((AV_U)ᵀΔA_bV_R)ᵀ`` (B, r, k) of the system ``a·A``
        (``scale`` = a: both scale by a²), gathered from ``G`` without the (B, r, n) product."""
        R = np.asarray(resolved, dtype=bool)
        iR, iU = np.flatnonzero(R), np.flatnonzero(~R)
        a2 = float(scale) ** 2
        E = _block(self.G, iR, iR)
        E *= (a2 * self.s[iR])[None, :, None]
        N = _block(self.G, iR, iU)
        N *= (a2 * self.s[iR])[None, :, None]
        QT = _block(self.G, iU, iR)
        QT *= (a2 * self.s[iU])[None, :, None]
        N += QT.transpose(0, 2, 1)
        return E, N


def _block(G, rows, cols):
    """``G[:, rows][:, :, cols]`` (B, |rows|, |cols|) as a new array of that size only: through
    slices where the index sets are contiguous ranges (the resolved directions are mostly the
    leading ones), else block by block, rows then columns with ``take`` (a 3-D fancy index
    gathers element by element: 4× slower at n = 900)."""
    r, c = _as_range(rows), _as_range(cols)
    if isinstance(r, slice) and isinstance(c, slice):
        return G[:, r, c].copy()
    rows, cols = np.asarray(rows), np.asarray(cols)
    out = np.empty((G.shape[0], rows.size, cols.size))
    for b in range(G.shape[0]):
        out[b] = G[b].take(rows, axis=0).take(cols, axis=1)
    return out


def _as_range(idx):
    """A slice for sorted indices without gaps (empty: an empty slice), else the indices."""
    if idx.size == 0:
        return slice(0, 0)
    return slice(int(idx[0]), int(idx[-1]) + 1) if idx[-1] - idx[0] == idx.size - 1 else idx
