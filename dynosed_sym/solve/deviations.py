"""The block deviations in the singular basis, computed once by the solve and read by the intervals.

The resolved estimator's intervals (:mod:`.weak`) contract the block deviations ``ΔA_b = A_b − A``
(B, m, n) with the bread ``H⁺ = V_R K V_Rᵀ`` and with ``A V_U``; formed directly these are
products of B·m·n² operations each (``ΔA_b H⁺``, ``ΔA_bᵀ A V_U``, …).  The solve has already
computed ``ΔA_b V`` in the basis of right singular vectors (:mod:`.directions`), and because H⁺
lives on R every such contraction reduces to m-contractions with ``A V_R`` (r columns):

* the noise of the curvature along parameter j, ``(A p_j)ᵀ ΔA_b p_j`` with ``p_j = H⁺e_j``, is
  ``L_j E_b L_jᵀ`` with ``L = V_R K`` (n, r) and ``E_b = (A V_R)ᵀ ΔA_b V_R`` (r, r);
* the noise of the unresolved columns, ``Σ_b w_b Σ_i (H⁺M_b)_ji² τ_i² / (B − 1)`` with
  ``M_b = ΔA_bᵀAV_U + AᵀΔA_bV_U``, is ``(L C Lᵀ)_jj`` with
  ``C = Σ_b w_b N_b diag(τ²) N_bᵀ / (B − 1)`` and
  ``N_b = V_RᵀM_b = (ΔA_bV_R)ᵀAV_U + (AV_R)ᵀΔA_bV_U`` (r, k).

Both are the formulas of :mod:`.weak` with the sums reordered (the oracle test
``tests/solve/test_deviations.py`` compares them with the direct NumPy products); their cost is
``2·B·m·r·(n + k)`` instead of about ``4·B·m·n²``, and no (B, m, n) temporaries.  With the dense
solve's Grams (:mod:`.grams`) E_b and N_b are read off ``G_b = UᵀΔA_bV`` (only the blocks of G
they need, through slices where the resolved directions are the leading ones); the curvature's
``B·n·r²`` products run a part of the blocks per thread, and the noise's ``C`` is one symmetric
product (``Y Yᵀ`` with ``Y = N·√(w τ²)``).

When the deviations would exceed :data:`~.blockops.STREAM_BYTES` the solve hands over a
:class:`~.blockops.DeviationStream` instead of the array, and the intervals ask for both only for
the parameters not already on the whole line (J).  They are then taken from the block means a
chunk of blocks at a time by the direct formulas (``ΔA_bP`` and ``ΔA_bᵀAP`` with
``P = H⁺[:, J]``): a pass of B·m·n·|J| operations instead of regenerating ``ΔA_bV`` (B·m·n²),
nothing of size B·m·n held; at d = 100 (n = 10⁴) most parameters are on the whole line and the
passes had been most of the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .blockops import DeviationStream
from .facesplit import FaceSplitGrams
from .grams import BlockGrams, block_parts, map_parts

__all__ = ["BlockDeviations"]


@dataclass
class BlockDeviations:
    """``(A_b − A)V`` of one solve, and its products with ``A V`` (computed on first use).

    Attributes
    ----------
    dAV : (B, m, n) block deviations in the basis V, in the units of the solved system ``A/a``
        (or a :class:`~.blockops.DeviationStream` regenerating them, or the dense solve's
        :class:`~.grams.BlockGrams`: E_b and N_b are then gathered from ``UᵀΔA_bV``)
    scale : float
        a (a power of two): ``(A_b − A)V = a · dAV`` in the system's units (exact).
    V : (n, n) right singular vectors (columns); resolved : (n,) bool
    A_blocks : the block means the deviations were taken from (identity checked by the reader)
    """

    dAV: np.ndarray
    scale: float
    V: np.ndarray
    resolved: np.ndarray
    A_blocks: object = None
    _products: dict = field(default_factory=dict, repr=False)

    def matches(self, A_blocks, VU):
        """Whether these are the deviations of ``A_blocks`` with unresolved directions ``VU``."""
        unres = self.V[:, ~self.resolved]
        return A_blocks is self.A_blocks and unres.shape == VU.shape and np.array_equal(unres, VU)

    def _contractions(self, A):
        """(E, N): ``E_b = (AV_R)ᵀΔA_bV_R`` (B, r, r) and
        ``N_b = (AV_R)ᵀΔA_bV_U + ((AV_U)ᵀΔA_bV_R)ᵀ`` (B, r, k), system units (module docstring)."""
        if "E" not in self._products and isinstance(self.dAV, BlockGrams):
            E, N = self.dAV.contractions(self.resolved, self.scale)
            self._products.update(E=E, N=N)
        if "E" not in self._products:
            R = self.resolved
            AVR = np.ascontiguousarray((A @ self.V[:, R]).T)  # (r, m)
            AVU = np.ascontiguousarray((A @ self.V[:, ~R]).T)  # (k, m)
            P = np.matmul(AVR, self.dAV)  # (B, r, n)
            idx, B = np.flatnonzero(R), self.dAV.shape[0]
            Q = np.empty((B, AVU.shape[0], idx.size))
            for k in range(B):  # R's columns gathered block by block (no (B, m, r) copy)
                Q[k] = AVU @ np.take(self.dAV[k], idx, axis=1)
            E = P[:, :, R] * self.scale
            N = (P[:, :, ~R] + Q.transpose(0, 2, 1)) * self.scale
            self._products.update(E=E, N=N)
        return self._products["E"], self._products["N"]

    def _factor(self, Hp):
        """L = V_R K (n, r) with ``K = V_RᵀH⁺V_R`` (H⁺ = V_R K V_Rᵀ)."""
        VR = self.V[:, self.resolved]
        return VR @ (VR.T @ Hp @ VR)

    @property
    def streamed(self):
        return isinstance(self.dAV, DeviationStream)

    @property
    def restricted(self):
        """Whether the intervals' noise is computed only for the parameters not on the whole
        line (streamed deviations, or a matrix model's factors: :mod:`.facesplit`)."""
        return self.streamed or isinstance(self.dAV, FaceSplitGrams)

    def curvature_noise(self, A, Hp, cols=None):
        """(B, n) ``(A p_j)ᵀ ΔA_b p_j`` with ``p_j = H⁺e_j`` (module docstring); streamed with
        ``cols`` given: for those parameters only (0 in the other columns; default all)."""
        if self.streamed:
            return self._restricted(A, Hp, np.arange(A.shape[1]) if cols is None else cols)
        if isinstance(self.dAV, FaceSplitGrams):
            cols = np.arange(A.shape[1]) if cols is None else np.asarray(cols, dtype=np.intp)
            return self.dAV.curvature_noise(A, Hp, cols, self.scale)
        E, _ = self._contractions(A)
        L = self._factor(Hp)
        (B, r, _), n = E.shape, L.shape[0]

        def part(bounds):  # the blocks' products on threads, as the Grams (one BLAS thread each)
            lo, hi = bounds
            return np.einsum("bjl,jl->bj", np.matmul(L, E[lo:hi]), L)

        parts = map_parts(part, block_parts(B, n, r), 2 * B * n * r * r)
        return np.concatenate(list(parts))  # (B, n), the parts in block order

    def unresolved_noise(self, A, Hp, tau2, w, cols=None):
        """(n,) ``Σ_b w_b Σ_i (H⁺M_b)_ji² τ_i² / (B − 1)`` (module docstring); streamed with
        ``cols`` given: for those parameters only (0 in the other entries; default all)."""
        if self.streamed:
            cols = np.arange(A.shape[1]) if cols is None else cols
            return self._restricted(A, Hp, cols, tau2, w)
        if isinstance(self.dAV, FaceSplitGrams):
            cols = np.arange(A.shape[1]) if cols is None else np.asarray(cols, dtype=np.intp)
            _check_weights(w, tau2)
            VU = self.V[:, ~self.resolved]
            return self.dAV.unresolved_noise(A, Hp, VU, tau2, w, cols, self.scale)
        _, N = self._contractions(A)  # (B, r, k)
        B, r, k = N.shape
        weights = _check_weights(w, tau2)
        Y = (N * np.sqrt(weights)[:, None, :]).transpose(1, 0, 2).reshape(r, B * k)
        C = Y @ Y.T / (B - 1)  # one symmetric product (NumPy's syrk): w τ² ≥ 0
        L = self._factor(Hp)
        return _nonnegative(np.einsum("jr,jr->j", L @ C, L))

    def _restricted(self, A, Hp, cols, tau2=None, w=None):
        """For the parameters ``cols`` only: the curvature noise (B, n) (``tau2`` None) or the
        unresolved noise (n,), by the direct formulas of the module docstring on the block means
        (no V): per block ``ΔA_bP`` (and ``ΔA_bᵀAP``) with ``P = H⁺[:, cols]``, so a pass costs
        about B·m·n·|cols| (twice that for the noise) instead of the B·m·n² of regenerating
        ``ΔA_bV`` — nothing when ``cols`` is empty.  The noise reads ``(H⁺M_b)_J`` as
        ``(ΔA_bP)ᵀAV_U + (ΔA_bᵀAP)ᵀV_U`` with P the rows ``H⁺[cols, :]`` (the product H⁺M_b)."""
        cols = np.asarray(cols, dtype=np.intp)
        B, n = self.dAV.shape[0], A.shape[1]
        curvature = tau2 is None
        out = np.zeros((B, n) if curvature else n)
        if cols.size == 0:
            return out
        P = np.ascontiguousarray(Hp[:, cols] if curvature else Hp[cols, :].T)  # (n, |J|)
        AP = A @ P  # (m, |J|)
        if not curvature:
            VU = self.V[:, ~self.resolved]
            AVU, AtAP = A @ VU, A.T @ AP  # (m, k), (n, |J|)
            w, tau2 = np.asarray(w, dtype=float), np.asarray(tau2, dtype=float)
            acc = np.zeros(cols.size)
        for lo, hi, Ab in self.dAV.block_chunks(self.scale):  # in the system's units (exact)
            D = np.matmul(Ab, P)  # (c, m, |J|)
            D -= AP[None]
            if curvature:
                out[lo:hi, cols] = np.einsum("mj,bmj->bj", AP, D)
                continue
            R = np.matmul(Ab.transpose(0, 2, 1), AP)  # (c, n, |J|)
            R -= AtAP[None]
            for k in range(hi - lo):
                X = D[k].T @ AVU + R[k].T @ VU  # (|J|, k)
                acc += w[lo + k] * ((X * X) @ tau2)
        if not curvature:
            out[cols] = _nonnegative(acc / (B - 1))
        return out


def _check_weights(w, tau2):
    """(B, k) ``w_b τ_i²``, checked ≥ 0 (block weights and variances: a caller's bug otherwise)."""
    weights = np.asarray(w, dtype=float)[:, None] * np.asarray(tau2, dtype=float)[None, :]
    if not np.all(weights >= 0):
        raise ValueError("unresolved_noise: the block weights w and τ² must be ≥ 0")
    return weights


def _nonnegative(v):
    """The diagonal of ``L C Lᵀ`` with C positive semi-definite: ≥ 0 exactly, so a rounding-level
    negative entry (a parameter the unresolved columns do not reach) is 0, not a NaN standard
    deviation downstream."""
    return np.maximum(v, 0.0)
