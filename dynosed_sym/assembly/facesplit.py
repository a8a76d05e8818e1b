"""Block means of a matrix-parameter model, kept with their two factors (face-splitting form).

When every parameter of a model sits in one matrix block ``W·φ(x)`` (R rows of W, K basis
functions: n = R·K, e.g. a gene network ``W·h(x) − x + 1/2``), every block mean is a
*face-splitting* product: its column (r, f) is the elementwise product of a column of a
block-independent factor and a column of a per-block factor,

    ``A_b[k, r·K + f] = a[k, r] · P_b[f, k]``,  ``a[k, r] = c_r ω_{k, row_r}``,
    ``P_b[f, k] = −√(2/m)/N_b · Σ_{i ∈ b} sin(ω_kᵀx_i + c_k) φ_f(x_i)``

(docs/method.md §2; the contraction of :class:`~.contraction.Contraction`).  The block
deviations ``A_b − A = a ⊙ (P_b − P̄)`` then have m·K numbers per block instead of m·n, and the
solve's noise statistics, which otherwise cost B·m·n² operations, cost B·m·K·n
(:mod:`dynosed_sym.solve.facesplit`).

The assembly still returns the dense block means (every other statistic reads them); a
:class:`FaceSplitArray` is that array with its :class:`FaceSplit` attached.  Only the array the
assembly made carries it: anything derived from it (a slice, a product, a copy) is a plain
array again, and it is read-only (so are its views: a write would leave the factors describing
other numbers).  The solve unlocks it to scale it in place by a power of two, scales the factors
with it (:func:`rescale`) and locks it again.

**Several blocks and single terms** (a network with basal rates or decay rates beside W).  Every
column of A is a sum of table terms ``coef·ω_{k, j}·P_b[e, k]`` (a state j, a feature e), so the
block means of *any* affine model are ``A_b = Ã_b E``: Ã_b the face-split product over the rows
and features that occur (R·K columns), E a sparse (R·K, n) map holding the coefficients.  Where
that costs little and saves much — n ≥ :data:`MIN_EMBEDDED_N`, R ≥ :data:`MIN_EMBEDDED_ROWS`
and R·K ≤ :data:`MAX_EMBEDDED_RATIO`·n —
:func:`face_split_columns` returns it (``W·h(x) − γ⊙x + β`` at d = 20: R·K = 820 for n = 440);
one matrix block holding every parameter keeps its exact form (E is the identity, ``embed``
None), so those fits are bit for bit what they were.  The solve's statistics run on Ã_b's
factors with their vectors mapped through E (:mod:`dynosed_sym.solve.facesplit`).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FaceSplit",
    "FaceSplitArray",
    "face_split_of",
    "with_face_split",
    "unlocked",
    "rescale",
    "face_split_columns",
    "Split",
    "MIN_EMBEDDED_N",
    "MAX_EMBEDDED_RATIO",
    "MIN_EMBEDDED_ROWS",
]


#: Smallest number of parameters for which block means that are not one matrix block are kept in
#: face-split form (below it the dense products are cheap, and small models keep their bits).
MIN_EMBEDDED_N = 64
#: ... and only while the rows × features that occur are at most this many times n
MAX_EMBEDDED_RATIO = 2.0
#: ... over at least this many rows (states): the factors' products cost about 1/R of the dense
#: ones (B·m·K·n against B·m·n², K ≈ n/R), so with few rows they save nothing (a three-state
#: polynomial library of 109 parameters fitted as fast either way, in a scratch comparison).
MIN_EMBEDDED_ROWS = 8


@dataclass(frozen=True)
class FaceSplit:
    """``A_b[k, r·K + f] = a[k, r] · P[b, f, k]`` for every block b — or, with ``embed`` E, the
    columns ``A_b = Ã_b E`` of that product Ã_b (module docstring).

    Attributes
    ----------
    a : (m, R) the block-independent factor; P : (B, K, m) the per-block factor
    embed : None (the product's own R·K columns) or a sparse (R·K, n) matrix
    """

    a: np.ndarray
    P: np.ndarray
    embed: object = None

    @property
    def shape(self):
        """(B, m, n) of the block means described."""
        (B, K, m), R = self.P.shape, self.a.shape[1]
        return (B, m, R * K if self.embed is None else self.embed.shape[1])

    def scaled(self, c):
        """The factors of ``A_blocks · c`` (c a power of two: exact)."""
        return FaceSplit(self.a, self.P * float(c), self.embed)

    def full(self):
        """The product Ã_b itself (its R·K columns, no embedding)."""
        return self if self.embed is None else FaceSplit(self.a, self.P)

    def embedded(self, Y):
        """``E Y``: vectors or columns (n,) / (n, p) of the parameters in the product's R·K
        coordinates (Y itself without an embedding)."""
        if self.embed is None:
            return Y
        return np.asarray(self.embed @ np.asarray(Y, dtype=float))

    def _out(self, Z):
        """``Z E`` for Z (…, R·K): the product's columns back to the parameters'."""
        if self.embed is None:
            return Z
        flat = Z.reshape(-1, Z.shape[-1])
        return np.asarray(self.embed.T @ flat.T).T.reshape(Z.shape[:-1] + (self.embed.shape[1],))

    def block(self, b):
        """A_b (m, n), dense (for checks)."""
        m, R = self.a.shape
        return self._out((self.a[:, :, None] * self.P[b].T[:, None, :]).reshape(m, -1))

    # -- products with every block, reading the factors (B·K·m numbers, not B·m·n) --------------
    def times(self, theta):
        """(B, m) ``A_b θ``: ``Σ_f P_b[f, k] (a Θ)[k, f]`` with Θ = Eθ as R × K."""
        K, R = self.P.shape[1], self.a.shape[1]
        T = self.a @ self.embedded(np.asarray(theta, dtype=float)).reshape(R, K)  # (m, K)
        return np.einsum("bfk,kf->bk", self.P, T)

    def each_times(self, Y):
        """(B, m) ``A_b Y[b]`` for Y (B, n)."""
        (B, K, _), R = self.P.shape, self.a.shape[1]
        Y = np.asarray(Y, dtype=float)
        if self.embed is not None:
            Y = self.embedded(Y.T).T
        T = np.matmul(self.a, Y.reshape(B, R, K))  # (B, m, K)
        return np.einsum("bfk,bkf->bk", self.P, T)

    def rtimes(self, Y):
        """(B, n) ``A_bᵀ Y[b]`` for Y (B, m), or ``A_bᵀ y`` for one y (m,)."""
        (B, K, _), R = self.P.shape, self.a.shape[1]
        Y = np.asarray(Y, dtype=float)
        PY = self.P * (Y[None, None, :] if Y.ndim == 1 else Y[:, None, :])  # (B, K, m)
        out = np.matmul(PY, self.a).transpose(0, 2, 1).reshape(B, R * K)  # (B, R, K) flat
        return self._out(out)

    def factor_times(self, Y, lo=0, hi=None):
        """``Z[k, f, j] = Σ_r a[k, r] (EY)[(r, f), j]`` (hi − lo, K, p) for Y (n, p) and the
        features lo:hi (default all): ``(A_b Y)[k, j] = Σ_f P_b[f, k] Z[k, f, j]``."""
        R, K = self.a.shape[1], self.P.shape[1]
        a = self.a[lo:hi]
        Y = self.embedded(Y)
        p = Y.shape[1]
        return (a @ np.ascontiguousarray(Y).reshape(R, K * p)).reshape(a.shape[0], K, p)

    def matmat(self, V):
        """(B, m, k) ``A_b V`` for V (n, k)."""
        Pk = np.ascontiguousarray(self.P.transpose(2, 0, 1))  # (m, B, K)
        return np.ascontiguousarray(np.matmul(Pk, self.factor_times(V)).transpose(1, 0, 2))


class FaceSplitArray(np.ndarray):
    """The dense (B, m, n) block means with their :class:`FaceSplit` (``.face_split``).

    A view, slice or ufunc result of it is a plain ``numpy.ndarray`` (or has ``face_split``
    None): only the assembly's own array is described by the factors."""

    face_split = None

    def __array_finalize__(self, obj):
        self.face_split = None

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        out = np.asarray(arr).view(np.ndarray)
        return out[()] if return_scalar else out

    def __matmul__(self, other):
        """``A_blocks @ θ`` (B, m) and ``A_blocks @ V`` (B, m, k) from the factors (equal to the
        dense products up to rounding; one pass over B·K·m numbers instead of B·m·n)."""
        fs = self.face_split
        other_nd = np.ndim(other)
        if fs is None or other_nd not in (1, 2) or np.shape(other)[0] != fs.shape[2]:
            return np.matmul(self, other)
        return fs.times(other) if other_nd == 1 else fs.matmat(np.asarray(other, dtype=float))


def with_face_split(A_blocks, fs):
    """``A_blocks`` (a dense (B, m, n) array) as a read-only :class:`FaceSplitArray` described by
    ``fs`` (a write into it, or into a view of it, would leave the factors describing other
    numbers: refused by NumPy; the solve's exact scaling unlocks it, :func:`unlocked`)."""
    if tuple(A_blocks.shape) != fs.shape:
        raise ValueError(f"face-split factors of shape {fs.shape} for block means {A_blocks.shape}")
    out = A_blocks.view(FaceSplitArray)
    out.face_split = fs
    out.flags.writeable = False
    return out


@contextmanager
def unlocked(A_blocks):
    """Inside the block, a read-only :class:`FaceSplitArray` is writable (for an in-place change
    that :func:`rescale` follows); anything else is left as it is."""
    lock = face_split_of(A_blocks) is not None and not A_blocks.flags.writeable
    if lock:
        A_blocks.flags.writeable = True  # a view of the assembly's own (writable) array
    try:
        yield A_blocks
    finally:
        if lock:
            A_blocks.flags.writeable = False


def face_split_of(A_blocks):
    """The :class:`FaceSplit` of block means, or None (a plain array, a derived one, lazy means
    of a model that is not one matrix block)."""
    return getattr(A_blocks, "face_split", None)


def rescale(A_blocks, c):
    """After ``A_blocks`` was multiplied in place by ``c`` (a power of two), its factors too;
    returns the factors it had.  ``c`` a :class:`FaceSplit`: put back those factors (after the
    inverse scaling; not recomputed, so they are restored exactly)."""
    fs = face_split_of(A_blocks)
    if fs is not None:
        A_blocks.face_split = c if isinstance(c, FaceSplit) else fs.scaled(c)
    return fs


@dataclass(frozen=True)
class Split:
    """How a contraction's columns are face-split: the rows (states) and features of the product,
    the block's row coefficients ``cs`` (one matrix block holding every column: ``embed`` None),
    or the sparse map E with the coefficients in it (``cs`` None)."""

    rows: np.ndarray
    feats: np.ndarray
    cs: np.ndarray | None = None
    embed: object = None


def face_split_columns(plan):
    """The :class:`Split` of a :class:`~.contraction.Contraction`: its one matrix block (starting
    at column 0) when that holds every column, else the product over every row and feature its
    terms use when that is cheap (module docstring), else None."""
    if not (plan.first[2].size or plan.later[2].size) and len(plan.blocks) == 1:
        first, rows, cs, feats = plan.blocks[0]
        if first == 0 and rows.size * feats.size == plan.n:
            return Split(rows, feats, cs)
    return _embedded_split(plan)


def _embedded_split(plan):
    """The :class:`Split` with E of every table term and block entry, or None (module docstring)."""
    if plan.n < MIN_EMBEDDED_N:
        return None
    terms = [np.stack([e, j, k]).astype(np.int64) for e, j, k, _ in (plan.first, plan.later)]
    coefs = [np.asarray(c, dtype=float) for *_, c in (plan.first, plan.later)]
    for first, rows, cs, feats in plan.blocks:
        R, K = rows.size, feats.size
        r, f = np.divmod(np.arange(R * K), K)
        terms.append(np.stack([feats[f], rows[r], first + np.arange(R * K)]))
        coefs.append(np.asarray(cs, dtype=float)[r])
    e, j, k = np.concatenate(terms, axis=1)
    coef = np.concatenate(coefs)
    if np.unique(k).size != plan.n:  # a column without a term: not this form
        return None
    rows, row_of = np.unique(j, return_inverse=True)
    feats, feat_of = np.unique(e, return_inverse=True)
    if rows.size < MIN_EMBEDDED_ROWS or rows.size * feats.size > MAX_EMBEDDED_RATIO * plan.n:
        return None
    from scipy.sparse import csr_matrix

    src = row_of * feats.size + feat_of
    E = csr_matrix((coef, (src, k)), shape=(rows.size * feats.size, plan.n))
    return Split(rows, feats, None, E)


def block_factor(split, omega):
    """The block-independent factor ``a`` (m, R) of a :class:`Split`."""
    a = omega[:, split.rows]
    return a if split.cs is None else split.cs[None, :] * a


def column_factor(feats, P_s, count, m):
    """One block's factor ``P_b`` (K, m) from its sin sums ``P_s`` (K_sin, m) over ``count``
    samples (the scaling of :meth:`~.contraction.Contraction.A`)."""
    return P_s[feats] * -(math.sqrt(2.0 / m) / count)
