"""From the fill's per-feature sums to A and b, and per-block means that are not stored.

The fill (:func:`dynosed_sym.kernels.stein_fill.accumulate_stein`) leaves, per noise block, the
sums ``P_s`` (K_sin, m) and ``P_c`` (K_cos, m) of sin/cos of every feature times the model's
per-sample factors.  A and b are a small contraction of them with ω (the tables ``A_TERMS``,
``A_BLOCKS``, ``B_SIN_TERMS``, ``B_COS_TERMS`` of the generated module, docs/method.md §2):
:class:`Contraction` does it.  A matrix block ``W·φ(x)`` (R × K parameters) fills R·K columns
with one broadcast product instead of R·K table entries.

The per-block means ``A_b`` (B, m, n) are what the noise estimates read, but at scale they
dwarf everything else: a network of d = 100 genes (n = 10⁴ parameters) with m = 2048 features
and 32 blocks needs 5.2 GB for them, while the sums they are contracted from take
32 × K × m × 8 bytes (≈ 100 MB for K = 200).  :class:`BlockMeans` keeps the sums and contracts
a block when asked: ``A_blocks[b]``, ``A_blocks @ theta`` (B, m), :meth:`BlockMeans.matvec`
(``A_b θ`` without forming A_b), :meth:`BlockMeans.rmatvec` (``A_bᵀ y_b``, B × n),
:meth:`BlockMeans.weighted_sum`, :meth:`BlockMeans.deviation_gram` (``Σ_b w_b ΔA_bᵀΔA_b``), and
``numpy.asarray(A_blocks)`` for the dense (B, m, n) array.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Contraction", "BlockMeans", "contraction_of"]


class Contraction:
    """The contraction tables of a compiled model, arranged for fast, exact contraction.

    Table entries of A are added in table order into zeroed columns, as ``np.add.at`` does;
    the first entry of a column is added with one vectorised ``+=`` (bit for bit the same as
    adding it to 0.0), later ones with ``np.add.at``; a matrix block's columns, one entry each,
    with one broadcast product.
    """

    def __init__(self, cm):
        n_rest = len(cm.raw_module.A_TERMS)
        e, j, k = cm.a_terms[:n_rest].T if n_rest else (np.zeros(0, np.int64),) * 3
        coef = cm.a_coef[:n_rest]
        seen, first = set(), []
        for col in k.tolist():
            first.append(col not in seen)
            seen.add(col)
        first = np.array(first, dtype=bool)
        self.first = (e[first], j[first], k[first], coef[first])
        self.later = (e[~first], j[~first], k[~first], coef[~first])
        self.blocks = [
            (int(f), np.asarray(rows, np.int64), np.asarray(cs, float), np.asarray(feats, np.int64))
            for f, rows, cs, feats in cm.a_blocks
        ]
        self.b_sin = (cm.b_sin_terms, cm.b_sin_coef)
        self.b_cos = (cm.b_cos_terms, cm.b_cos_coef)
        self.n = cm.model.n
        self.n_cos = cm.n_cos

    def A(self, Om, P_s, scale, out=None):
        """A (m, n) = −scale · Σ_terms coef ω_j P_s[e] (P_s (K_sin, m) in feature order), written
        into ``out`` (m, n) when given (the same numbers)."""
        if out is None:
            A = np.zeros((Om.shape[0], self.n))
        else:
            A = out
            A.fill(0.0)
        e, j, k, c = self.first
        if k.size:
            A[:, k] += c[None, :] * Om[:, j] * P_s[e].T
        e, j, k, c = self.later
        if k.size:
            np.add.at(A.T, k, (c[None, :] * Om[:, j] * P_s[e].T).T)
        for first, rows, cs, feats in self.blocks:
            R, K = rows.size, feats.size
            view = A[:, first : first + R * K].reshape(A.shape[0], R, K)
            view += (cs[None, :] * Om[:, rows])[:, :, None] * P_s[feats].T[:, None, :]
        A *= -scale
        return A

    def b(self, Om, P_s, P_c, scale):
        """b (m,) from the sin and cos sums (with a ∂ₜlog p column when P_c has one more row)."""
        b = np.zeros(Om.shape[0])
        terms, coef = self.b_sin
        if terms.size:
            e, j = terms.T
            b += (coef[None, :] * Om[:, j] * P_s[e].T).sum(axis=1)
        terms, coef = self.b_cos
        if terms.size:
            e, j, l = terms.T
            b += (coef[None, :] * Om[:, j] * Om[:, l] * P_c[e].T).sum(axis=1)
        if P_c.shape[0] == self.n_cos + 1:  # the ∂ₜlog p column of block_sums(..., dlogp_dt=...)
            b += P_c[self.n_cos]
        b *= scale
        return b

    def Av(self, Om, P_s, scale, theta):
        """A θ (m,) without forming A: for a matrix block, Σ_j c_j ω_{rows j} (Θ_j · P_s[feats])."""
        out = np.zeros(Om.shape[0])
        for e, j, k, c in (self.first, self.later):
            if k.size:
                out += (Om[:, j] * P_s[e].T) @ (c * theta[k])
        for first, rows, cs, feats in self.blocks:
            R, K = rows.size, feats.size
            inner = theta[first : first + R * K].reshape(R, K) @ P_s[feats]  # (R, m)
            out += np.einsum("mr,rm->m", cs[None, :] * Om[:, rows], inner)
        return -scale * out

    def ATy(self, Om, P_s, scale, y):
        """Aᵀ y (n,) without forming A."""
        out = np.zeros(self.n)
        for e, j, k, c in (self.first, self.later):
            if k.size:
                np.add.at(out, k, c * ((Om[:, j] * P_s[e].T).T @ y))
        for first, rows, cs, feats in self.blocks:
            R, K = rows.size, feats.size
            G = (Om[:, rows] * y[:, None]).T @ P_s[feats].T  # (R, K)
            out[first : first + R * K] += (cs[:, None] * G).reshape(-1)
        return -scale * out


def contraction_of(cm):
    """The :class:`Contraction` of a compiled model (built once, kept on it)."""
    plan = cm.__dict__.get("_contraction")
    if plan is None:
        plan = cm._contraction = Contraction(cm)
    return plan


class BlockMeans:
    """Per-block means A_b (B, m, n) of the global system, stored as the sums they come from.

    Behaves as a read-only (B, m, n) array where the statistics need one: ``len``, ``shape``,
    ``A_blocks[b]`` (one block, contracted on demand), ``A_blocks[idx]`` (dense stack),
    ``A_blocks @ v`` (B, m) or ``A_blocks @ V`` (B, m, k), ``A_blocks / a``, and
    ``numpy.asarray(A_blocks)`` (the dense array, built block by block).  Results are those of
    the dense array, bit for bit: a block is contracted by the same :class:`Contraction`.
    :meth:`matvec`, :meth:`rmatvec`, :meth:`weighted_sum` and :meth:`deviation_gram` give the
    statistics' contractions without holding more than one block.

    Attributes
    ----------
    shape : (B, m, n)
    nbytes : int
        Bytes of the dense array (what is *not* stored).
    stored_nbytes : int
        Bytes of the sums kept.
    """

    ndim = 3
    dtype = np.dtype(float)

    def __init__(self, plan, omega, sums, counts, factor=1.0):
        self._plan, self._omega = plan, omega
        self._sums = sums  # [(P_s (K_sin, m), P_c (K_cos, m))] per block, feature order
        self.counts = np.asarray(counts, dtype=np.int64)
        self._factor = float(factor)
        m = omega.shape[0]
        self.shape = (len(sums), m, plan.n)

    @property
    def nbytes(self):
        return int(np.prod(self.shape)) * 8

    @property
    def stored_nbytes(self):
        return int(sum(P_s.nbytes + P_c.nbytes for P_s, P_c in self._sums))

    def __len__(self):
        return self.shape[0]

    def _scale(self, b):
        return math.sqrt(2.0 / self.shape[1]) / int(self.counts[b])

    def block(self, b):
        """A_b (m, n)."""
        P_s, _ = self._sums[b]
        with np.errstate(over="ignore", invalid="ignore"):
            A = self._plan.A(self._omega, P_s, self._scale(b))
        return A if self._factor == 1.0 else A / self._factor

    def __iter__(self):
        return (self.block(b) for b in range(len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, (int, np.integer)):
            return self.block(int(idx) % len(self))
        return np.array([self.block(int(b)) for b in np.arange(len(self))[idx]])

    def __array__(self, dtype=None, copy=None):
        out = np.empty(self.shape)
        for b in range(len(self)):
            out[b] = self.block(b)
        return out if dtype is None else out.astype(dtype)

    def __truediv__(self, a):
        return BlockMeans(self._plan, self._omega, self._sums, self.counts, self._factor * a)

    def __matmul__(self, v):
        """A_b v for every block, block by block (as the dense array's product)."""
        return np.array([A @ np.asarray(v, dtype=float) for A in self])

    def matvec(self, theta):
        """(B, m): A_b θ for every block without forming A_b (a matrix block costs R·K·m, not
        m·n); equal to ``A_blocks @ theta`` up to rounding."""
        theta = np.asarray(theta, dtype=float)
        out = np.empty(self.shape[:2])
        for b, (P_s, _) in enumerate(self._sums):
            out[b] = self._plan.Av(self._omega, P_s, self._scale(b), theta)
        return out / self._factor

    def rmatvec(self, Y):
        """(B, n): A_bᵀ Y[b] for every block (Y (B, m))."""
        Y = np.asarray(Y, dtype=float)
        out = np.empty((len(self), self.shape[2]))
        for b, (P_s, _) in enumerate(self._sums):
            out[b] = self._plan.ATy(self._omega, P_s, self._scale(b), Y[b])
        return out / self._factor

    def weighted_sum(self, w):
        """Σ_b w_b A_b (m, n)."""
        out = np.zeros(self.shape[1:])
        for wb, A in zip(np.asarray(w, dtype=float), self):
            out += wb * A
        return out

    def deviation_gram(self, A, w):
        """Σ_b w_b (A_b − A)ᵀ(A_b − A) (n, n), one block at a time."""
        n = self.shape[2]
        S = np.zeros((n, n))
        for wb, Ab in zip(np.asarray(w, dtype=float), self):
            Ab -= A
            S += wb * (Ab.T @ Ab)
        return S
