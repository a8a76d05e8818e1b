"""Products of the per-block means ``A_b`` (B, m, n) that never form a second (B, m, n) array.

The solve and the report contract the block means with vectors and with the right singular
vectors V.  For a dense array of moderate size these are single NumPy products (the results of
earlier versions, bit for bit).  At network size the block means alone are gigabytes (32 blocks
of 2048 × 10⁴ at d = 100: 5.2 GB) and the assembly hands over a lazy
:class:`~dynosed_sym.assembly.contraction.BlockMeans` instead: every product here then runs over
a few blocks at a time (:data:`CHUNK_BYTES`), and ``(A_b − A)V`` is regenerated chunk by chunk
(:class:`DeviationStream`) instead of being held, whenever it would exceed :data:`STREAM_BYTES`.
"""

from __future__ import annotations

import numpy as np

from ..assembly.facesplit import face_split_of
from ..assembly.memory import CHUNK_BYTES, DENSE_BLOCKS_BYTES

__all__ = [
    "STREAM_BYTES",
    "CHUNK_BYTES",
    "STREAM_CHUNK_BYTES",
    "is_dense",
    "streamed",
    "blocks_times",
    "each_times",
    "each_rtimes",
    "deviation_rtimes",
    "all_rtimes",
    "nbytes",
    "DeviationStream",
]

#: Above this many bytes the block deviations ``(A_b − A)V`` (B·m·n doubles) are not held but
#: regenerated chunk by chunk (the assembly's threshold for dense block means, the same number).
STREAM_BYTES = DENSE_BLOCKS_BYTES


#: Bytes of one chunk of the regenerated deviations ``(A_b − A)V`` when the block means are held
#: (a view of them is read, only the product is new).  Small enough to be served from memory the
#: process already has: a fresh multi-megabyte product is mapped anew each time, and with
#: transparent huge pages its first writes cost more than the product itself (the jackknife's
#: stream at d = 10: 0.10 s in one 35 MB chunk, 0.03 s in chunks of 4 MB, the same numbers).
STREAM_CHUNK_BYTES = 1 << 22


def is_dense(A_blocks):
    """A (B, m, n) NumPy array (anything else — a lazy BlockMeans — is read block by block)."""
    return isinstance(A_blocks, np.ndarray) and A_blocks.ndim == 3


def nbytes(A_blocks):
    """Bytes of the dense (B, m, n) array (without forming it)."""
    B, m, n = A_blocks.shape
    return int(B) * int(m) * int(n) * 8


def streamed(A_blocks, k=None):
    """Whether ``(A_b − A)V`` with k columns (default n) is regenerated instead of held."""
    B, m, n = A_blocks.shape
    return not is_dense(A_blocks) or B * m * (n if k is None else k) * 8 > STREAM_BYTES


def _chunk(A_blocks, k):
    B, m, n = A_blocks.shape
    return max(1, min(B, CHUNK_BYTES // max(1, m * max(n, k) * 8)))


def _dense(A_blocks, lo, hi):
    return A_blocks[lo:hi] if is_dense(A_blocks) else np.asarray(A_blocks[lo:hi])


def blocks_times(A_blocks, V):
    """``A_blocks @ V`` (B, m, k): for an array one GEMM on the stacked (B·m, n) blocks (NumPy's
    batched matmul with a transposed V took twice as long at n = 400); the same numbers.  Block
    means with a matrix model's factors: from those (:mod:`~dynosed_sym.assembly.facesplit`)."""
    fs = face_split_of(A_blocks)
    if fs is not None:
        return fs.matmat(V)
    if is_dense(A_blocks):
        B, m, n = A_blocks.shape
        return (A_blocks.reshape(B * m, n) @ V).reshape(B, m, V.shape[1])
    return A_blocks @ V


def each_times(A_blocks, Y):
    """(B, m): ``A_b Y[b]`` for every block (Y (B, n))."""
    fs = face_split_of(A_blocks)
    if fs is not None:
        return fs.each_times(Y)
    if is_dense(A_blocks):
        return np.einsum("bml,bl->bm", A_blocks, Y)
    return np.array([A_blocks[k] @ Y[k] for k in range(len(A_blocks))])


def each_rtimes(A_blocks, Y):
    """(B, n): ``A_bᵀ Y[b]`` for every block (Y (B, m))."""
    fs = face_split_of(A_blocks)
    if fs is not None:
        return fs.rtimes(Y)
    if is_dense(A_blocks):
        return np.einsum("bmk,bm->bk", A_blocks, Y)
    rmatvec = getattr(A_blocks, "rmatvec", None)
    if rmatvec is not None:
        return rmatvec(Y)
    return np.array([A_blocks[k].T @ Y[k] for k in range(len(A_blocks))])


def deviation_rtimes(A, A_blocks, Y):
    """(B, n) ``(A_b − A)ᵀY_b`` for Y (B, m) — or (B, n, k) for Y (B, m, k) — without forming the
    deviations ``A_b − A``."""
    if Y.ndim == 3:
        return np.stack([deviation_rtimes(A, A_blocks, Y[..., j]) for j in range(Y.shape[2])], -1)
    return each_rtimes(A_blocks, Y) - Y @ A


def all_rtimes(A_blocks, y):
    """(B, n): ``A_bᵀ y`` for every block (one y (m,))."""
    fs = face_split_of(A_blocks)
    if fs is not None:
        return fs.rtimes(y)
    if is_dense(A_blocks):
        return np.einsum("bmn,m->bn", A_blocks, y)
    return each_rtimes(A_blocks, np.broadcast_to(y, (len(A_blocks), y.size)))


class DeviationStream:
    """``(A_b − A)V`` (B, m, k) regenerated a chunk of blocks at a time, never held whole.

    ``chunks(cols)`` yields ``(lo, hi, D)`` with ``D = A_blocks[lo:hi] @ V[:, cols] · mult −
    AV[:, cols]`` ((hi − lo), m, |cols|); ``mult`` brings the block means to the units of ``AV``
    (a power of two: the solve's unit scale, exact).
    """

    def __init__(self, A_blocks, V, AV, mult=1.0):
        self.A_blocks, self.V, self.AV, self.mult = A_blocks, V, AV, float(mult)
        B, m, _ = A_blocks.shape
        self.shape = (B, m, V.shape[1])

    def __len__(self):
        return self.shape[0]

    def rescaled(self, A_blocks, mult):
        """The same deviations read from other (equal up to ``mult``) block means."""
        return DeviationStream(A_blocks, self.V, self.AV, mult)

    def block_chunks(self, factor=1.0):
        """``(lo, hi, A_blocks[lo:hi] · mult · factor)``: the block means themselves in the units
        of AV times ``factor`` (a power of two, as mult: one exact scaling), a chunk at a time (for
        products with other matrices than V)."""
        B = self.shape[0]
        step = _chunk(self.A_blocks, self.A_blocks.shape[2])
        scale = self.mult * float(factor)
        for lo in range(0, B, step):
            hi = min(B, lo + step)
            chunk = _dense(self.A_blocks, lo, hi)
            yield lo, hi, (chunk * scale if scale != 1.0 else chunk)

    def parts(self, cols=None):
        """``[(lo, hi), …]``: the chunks of blocks :meth:`chunks` yields (a function of the shapes
        only)."""
        B, m = self.shape[0], self.shape[1]
        k = self.V.shape[1] if cols is None else np.arange(self.V.shape[1])[cols].size
        if is_dense(self.A_blocks):  # a view of the held means: only the product is new
            step = max(1, min(B, STREAM_CHUNK_BYTES // max(1, m * k * 8)))
        else:
            step = _chunk(self.A_blocks, k)
        return [(lo, min(B, lo + step)) for lo in range(0, B, step)]

    def selected(self, cols=None):
        """(V[:, cols], AV[:, cols]): the operands of :meth:`chunk` for the columns ``cols``."""
        if cols is None:
            return self.V, self.AV
        return self.V[:, cols], self.AV[:, cols]

    def chunk(self, lo, hi, selected):
        """``(A_blocks[lo:hi] @ V) · mult − AV`` ((hi − lo), m, k) for ``selected = (V, AV)``
        (:meth:`selected`)."""
        V, AV = selected
        D = blocks_times(_dense(self.A_blocks, lo, hi), V)
        if self.mult != 1.0:
            D *= self.mult
        D -= AV[None]
        return D

    def chunks(self, cols=None):
        sel = self.selected(cols)
        for lo, hi in self.parts(cols):
            yield lo, hi, self.chunk(lo, hi, sel)
