"""The dense solve's noise statistics for block means in face-splitting form (matrix models).

For a model whose every parameter sits in one matrix block ``W·φ(x)`` the block deviations are
``ΔA_b = a ⊙ D_b``: ``ΔA_b[k, r·K + f] = a[k, r]·D_b[f, k]`` with ``D_b = P_b − Σ_c w_c P_c``
(:mod:`dynosed_sym.assembly.facesplit`; n = R·K parameters, m features, B blocks).  What the
solve reads of the deviations (:mod:`.grams`) then needs no (B, n, n) product:

* the weighted Gram ``S = Σ_b w_b ΔA_bᵀΔA_b`` is a sum over features of Kronecker products,
  ``S[(r, f), (s, g)] = Σ_k a[k, r]a[k, s]·C_k[f, g]`` with ``C_k = Σ_b w_b D_b[:, k]D_b[:, k]ᵀ``
  (K × K): B·m·K² + m·n²/2 operations (:func:`kronecker_sum`, over the symmetric pairs) instead
  of B·m·n²;
* a bilinear form ``(A y_j)ᵀΔA_b y_j`` of every block (the direction noise ``(A v_i)ᵀΔA_bv_i``,
  the curvature noise of the intervals with ``y_j = H⁺e_j``) is
  ``Σ_{k,f} D_b[f, k]·Z[k, f, j]`` with ``Z[k, f, j] = (A y_j)_k Σ_r a[k, r] Y[(r, f), j]``:
  one product ``(B, m·K) × (m·K, p)`` after a ``2·m·n·p`` one, instead of ``2·B·m·n·p``;
* right products ``ΔA_b Y`` (m × p per block) are ``Σ_f D_b[f, k]·Z'[k, f, :]``, a batched
  product of B·m·K·p operations (the unresolved noise of the intervals).

The Gram ``G_b = UᵀΔA_bV`` of :class:`~.grams.BlockGrams` (2·B·m·n² operations, most of a network
fit's solve) is never formed; the intervals' noise is computed only for the parameters not
already on the whole line (as with streamed deviations: the others' ``noise`` is reported as 0).
The results equal :class:`~.grams.BlockGrams`'s up to rounding (``tests/solve/test_facesplit.py``
checks them against the direct NumPy products).  The features are cut into parts (rows of A)
that run on threads, one BLAS thread each, and are added in part order; the parts depend only on
the shapes, so the results are the same bit for bit on any number of threads.
"""

from __future__ import annotations

import numpy as np

from ..assembly.facesplit import FaceSplit
from .grams import BlockGrams, map_parts

__all__ = ["FaceSplitGrams"]

#: Bytes of the largest temporary of one part of the features: small enough to be reused by the
#: allocator rather than mapped fresh each time (on the development machine's virtual machines a
#: first write to fresh memory could cost more than the products written into it).
PART_BYTES = 16 * 2**20


#: The features are cut into at least this many parts (of at least 8 features) even when their
#: temporaries would fit in one: a part per thread on a few cores, and temporaries of a few
#: megabytes (a 10-gene network's direction noise: one 16 MB part took 0.04 s, four 0.007 s).
MIN_PARTS = 4


def feature_parts(m, row_bytes):
    """``[(lo, hi), …]``: the m features (rows of A) in parts whose temporaries take at most
    :data:`PART_BYTES` (``row_bytes`` per feature), at least :data:`MIN_PARTS` of them, each of
    at least 8 features.  A function of the shapes only, so the sums over parts, added in part
    order, are the same on any number of threads."""
    step = max(8, min(-(-m // MIN_PARTS), PART_BYTES // max(1, row_bytes)))
    return [(lo, min(m, lo + step)) for lo in range(0, m, step)]


def _pairs(R):
    """(i, j, index): the pairs i ≤ j of range(R), and the (R, R) symmetric map to their
    position."""
    i, j = np.triu_indices(R)
    index = np.empty((R, R), dtype=np.int64)
    index[i, j] = index[j, i] = np.arange(i.size)
    return i, j, index


def kronecker_sum(a, Dk, w):
    """``S[(r, f), (s, g)] = Σ_k a[k, r]a[k, s]·C_k[f, g]`` (R·K, R·K) for a (m, R) and
    ``C_k = Σ_b w_b D_b[:, k]D_b[:, k]ᵀ`` (Dk (m, B, K), w (B,)): over parts of the features
    (:func:`feature_parts`; C is never held whole, a part's temporaries are small), one product
    over the pairs r ≤ s and f ≤ g per part (a quarter of the full one's 2·m·R²·K² operations),
    the parts added in order, then spread by symmetry — exactly symmetric."""
    (m, B, K), R = Dk.shape, a.shape[1]
    ri, si, r_index = _pairs(R)
    fi, gi, f_index = _pairs(K)

    def part(bounds):
        lo, hi = bounds
        D = Dk[lo:hi]
        C = np.matmul((D * w[None, :, None]).transpose(0, 2, 1), D)  # (hi − lo, K, K)
        return (a[lo:hi, ri] * a[lo:hi, si]).T @ C[:, fi, gi]  # (R(R+1)/2, K(K+1)/2)

    T = np.zeros((ri.size, fi.size))
    row_bytes = 8 * (2 * B * K + K * K + ri.size + fi.size)
    ops = 2 * m * (B * K * K + ri.size * fi.size)
    for piece in map_parts(part, feature_parts(m, row_bytes), ops):
        T += piece
    r, f = np.divmod(np.arange(R * K), K)  # row (r, f) = r·K + f
    return T[r_index[r[:, None], r[None, :]], f_index[f[:, None], f[None, :]]]


def embedded_gram(S, E):
    """``EᵀSE`` (n, n) for the product's Gram S (R·K, R·K) and the sparse map E (S itself without
    one), symmetrised exactly (S is)."""
    if E is None:
        return S
    out = np.asarray(E.T @ np.asarray(E.T @ S).T)
    return 0.5 * (out + out.T)


class FaceSplitGrams(BlockGrams):
    """:class:`~.grams.BlockGrams` of face-split block means: S, and the block forms computed
    from the factors (``G`` is None).

    Attributes (besides BlockGrams's)
    ---------------------------------
    dev : :class:`~dynosed_sym.assembly.facesplit.FaceSplit` of the deviations ``ΔA_b = a ⊙ D_b``
        (``a`` (m, R) and ``D`` (B, K, m) are its two factors)
    """

    def __init__(self, S, s, V, w, dev, Dk, AV):
        super().__init__(None, S, s, V, w, dev.shape)
        self.dev, self.Dk, self.AV = dev, Dk, AV  # Dk (m, B, K): the right products' operand
        self.product = dev.full()  # the R·K product columns (dev itself without an embedding)

    @property
    def a(self):
        return self.dev.a

    @property
    def D(self):
        return self.dev.P

    @classmethod
    def compute(cls, A, fs, U, s, V, w):
        """From the unit-scale system's thin SVD and the face-split factors ``fs`` of its block
        means (:class:`~dynosed_sym.assembly.facesplit.FaceSplit`, same units)."""
        w = np.asarray(w, dtype=float)
        a, P = fs.a, fs.P
        # D_b = P_b − Σ_c w_c P_c held once, as (m, B, K) (the right products' operand); the
        # deviations' factor D (B, K, m) is a view of it: ΔA_b = (a ⊙ D_b)E
        Dk = np.empty((P.shape[2], P.shape[0], P.shape[1]))  # C order (a ufunc keeps P's)
        np.subtract(P.transpose(2, 0, 1), np.tensordot(w, P, axes=1).T[:, None, :], out=Dk)
        dev = FaceSplit(a, Dk.transpose(1, 2, 0), fs.embed)
        S = embedded_gram(kronecker_sum(a, Dk, w), fs.embed)
        AV = U * np.asarray(s, dtype=float)[None, : U.shape[1]]
        return cls(S, np.asarray(s, dtype=float), V, w, dev, Dk, AV)

    # -- the products ------------------------------------------------------------------------
    def bilinear(self, Y, AY, workers=None):
        """(B, p) ``(A y_j)ᵀΔA_b y_j`` for the columns of Y (n, p), with ``AY = A Y`` (m, p) in
        the units of the result (module docstring): summed over parts of the features."""
        B, K, m = self.D.shape
        Y = np.ascontiguousarray(self.dev.embedded(Y))  # in the product's R·K coordinates
        p = Y.shape[1]

        def part(bounds):
            lo, hi = bounds
            Z = self.product.factor_times(Y, lo, hi)
            Z *= AY[lo:hi, None, :]
            Dflat = self.Dk[lo:hi].transpose(1, 0, 2).reshape(B, (hi - lo) * K)  # (a copy)
            return Dflat @ Z.reshape((hi - lo) * K, p)

        out = np.zeros((B, p))
        ops = 2 * m * K * p * (B + self.a.shape[1])
        for piece in map_parts(part, feature_parts(m, 8 * K * p), ops, workers):
            out += piece
        return out

    # -- the directions ------------------------------------------------------------------------
    def proj(self):
        """(B, n) ``(A v_i)ᵀΔA_b v_i`` (``s_i G_b[i, i]`` of BlockGrams)."""
        n = self.V.shape[1]
        k = self.AV.shape[1]
        out = np.zeros((len(self), n))
        out[:, :k] = self.bilinear(self.V[:, :k], self.AV)
        return out

    def contractions(self, resolved, scale):
        raise NotImplementedError("face-split Grams give the intervals' noise directly")

    # -- the intervals ---------------------------------------------------------------------------
    def curvature_noise(self, A, Hp, cols, scale):
        """(B, n) ``(A p_j)ᵀΔA_b p_j`` (``p_j = H⁺e_j``, A in the system's units, the deviations
        ``scale`` times the unit ones) for the parameters ``cols``; 0 in the other columns."""
        out = np.zeros((len(self), A.shape[1]))
        if cols.size:
            P = np.ascontiguousarray(Hp[:, cols])
            out[:, cols] = self.bilinear(P, A @ P) * float(scale)
        return out

    def unresolved_noise(self, A, Hp, VU, tau2, w, cols, scale):
        """(n,) ``Σ_b w_b Σ_u τ_u² X_b[j, u]² / (B − 1)`` with
        ``X_b = (ΔA_b P)ᵀ A V_U + (A P)ᵀ ΔA_b V_U``, ``P = H⁺[:, cols]`` (A in the system's
        units, the deviations ``scale`` times the unit ones); 0 outside ``cols``."""
        n = A.shape[1]
        out = np.zeros(n)
        if cols.size == 0 or VU.shape[1] == 0:
            return out
        AVU = A @ VU
        P = np.ascontiguousarray(Hp[:, cols])
        AP = A @ P
        P = np.ascontiguousarray(self.dev.embedded(P))  # (in the product's R·K coordinates)
        VU = np.ascontiguousarray(self.dev.embedded(VU))
        B, K, m = self.D.shape
        k = VU.shape[1]

        def part(bounds):  # X_b for the features lo:hi, every block
            lo, hi = bounds
            DP = np.matmul(self.Dk[lo:hi], self.product.factor_times(P, lo, hi))  # (f, B, |J|)
            DU = np.matmul(self.Dk[lo:hi], self.product.factor_times(VU, lo, hi))  # (f, B, k)
            X = np.empty((B, cols.size, k))
            for b in range(B):
                np.matmul(DP[:, b, :].T, AVU[lo:hi], out=X[b])
                X[b] += AP[lo:hi].T @ DU[:, b, :]
            return X

        X = np.zeros((B, cols.size, k))
        row_bytes = 8 * (B + K) * (cols.size + k)
        for piece in map_parts(part, feature_parts(m, row_bytes), 4 * B * m * cols.size * k):
            X += piece
        acc = np.asarray(w, dtype=float) @ ((X * X) @ np.asarray(tau2, dtype=float))
        out[cols] = np.maximum(acc * float(scale) ** 2 / (B - 1), 0.0)
        return out
