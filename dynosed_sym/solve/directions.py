"""Singular directions of a linear system and how well the data determine each one: the one rule
shared by the report (:mod:`.report`), the solve (:mod:`.ustat`) and the intervals
(:mod:`.intervals`); derivation in docs/design-statistics.md ("Weak directions").

A and b are means of per-sample terms; their sampling noise is estimated from per-block means
``A_b`` with weights ``w_b = N_b / N``.  For a right singular direction v_i of A (σ_i, u_i):

* the standard error of ``A v_i`` is ``SE_i = sqrt(v_iᵀ S v_i)``,
  ``S = Σ_b w_b (A_b − A)ᵀ(A_b − A)/(B − 1)`` (the column noise, shown in the report);
* the curvature the data give the fit along v_i is estimated without bias by
  ``κ̂_i = σ_i² − v_iᵀ S v_i`` (E σ̂_i² = σ_i² + SE_i²);
* its standard error combines the part of the noise that moves ``‖A v_i‖`` (the projection of the
  block deviations on ``A v_i``) and the noise of the correction ``v_iᵀ S v_i`` itself:

      Var κ̂_i = Σ_b w_b (2 (A v_i)ᵀ (A_b − A) v_i)² / (B − 1) + 2 (v_iᵀ S v_i)² / dof.

A direction is *resolved* when ``t_i = κ̂_i / sd(κ̂_i)`` exceeds the two-sided Student-t quantile
at level ``1 − (1 − RESOLVE_LEVEL)/n`` (the n directions at a family-wise RESOLVE_LEVEL) with
``dof`` degrees of freedom (and σ_i exceeds the floating-point floor
``eps · max(m, n) · σ_max``): the data then determine that the fit has curvature along v_i.
Unlike ``σ_i > 3 SE_i`` the rule does not count noise orthogonal to ``A v_i``, which moves the
singular vector but not the curvature (FitzHugh–Nagumo's overall drift scale: σ/SE ≈ 2, t ≈ 8).
``t_i`` grows like √N, so ``(q / t_i)²`` is the factor of data a direction needs to be resolved.
With fewer than ``MIN_DOF`` degrees of freedom the noise is not known well enough to call any
direction resolved.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..assembly.facesplit import face_split_of
from .blockops import DeviationStream, blocks_times, streamed
from .facesplit import FaceSplitGrams
from .grams import BlockGrams, grams_apply

__all__ = [
    "Directions",
    "singular_directions",
    "directions_and_deviations",
    "numerical_floor",
    "col_se",
    "blocks_times",
    "resolve_quantile",
    "RANK_THRESHOLD",
    "SIGNAL_THRESHOLD",
    "RESOLVE_LEVEL",
    "MIN_DOF",
]

#: None: a direction is resolved when t_i exceeds the Student-t quantile at RESOLVE_LEVEL; a number
#: replaces that quantile.
RANK_THRESHOLD = None
#: Two-sided level of the test "the fit has curvature along v_i" (does not depend on ci_level, so
#: the estimate does not either).
RESOLVE_LEVEL = 0.95
#: σ/SE(Av) ratio used where the curvature's noise is not available (the design advice ranking
#: candidate environments from simulated blocks, the singular-value plot's guide line).
SIGNAL_THRESHOLD = 3.0
#: Below this many degrees of freedom of the noise estimate no direction is resolved.
MIN_DOF = 4


class Directions(NamedTuple):
    """Right singular directions of A and how well the data determine them.

    Attributes
    ----------
    singular_values : (n,) σ_i, zero-padded when m < n
    V : (n, n) right singular vectors (columns), a complete basis
    noise : (n,) standard error of ``A v_i`` (sqrt v_iᵀSv_i), or None without noise blocks
    resolved : (n,) bool
    kappa : (n,) κ̂_i = σ_i² − v_iᵀSv_i, or None
    kappa_sd : (n,) its standard error, or None
    t : (n,) κ̂_i / sd(κ̂_i), or None
    threshold : float
        The t value a direction had to exceed (inf when dof < MIN_DOF; nan without blocks).
    dof : float
    left : (m, min(m, n)) the left singular vectors of the same SVD (the misspecification test
        projects its noise off the resolved ones)
    """

    singular_values: np.ndarray
    V: np.ndarray
    noise: np.ndarray | None
    resolved: np.ndarray
    kappa: np.ndarray | None = None
    kappa_sd: np.ndarray | None = None
    t: np.ndarray | None = None
    threshold: float = float("nan")
    dof: float = float("nan")
    left: np.ndarray | None = None


def numerical_floor(singular_values, m, n):
    """σ below which a direction of an (m, n) system is rounding, not data: eps·max(m, n)·σ_1
    (0 without columns).  Its κ̂ and noise are rounding too, so its t says nothing: such a
    direction is never resolved (:func:`directions_and_deviations`) nor filled or rescued
    (:mod:`.weak`, :mod:`.intervals`), and the length-scale search does not count it."""
    s = np.asarray(singular_values)
    return np.finfo(float).eps * max(m, n) * (s[0] if s.size else 0.0)


def resolve_quantile(dof, threshold=RANK_THRESHOLD, n=1):
    """The t value a direction must exceed: ``threshold`` if given (whatever the degrees of
    freedom), else the two-sided Student-t quantile at ``1 − (1 − RESOLVE_LEVEL)/n`` with ``dof``
    degrees of freedom (inf below MIN_DOF)."""
    if threshold is not None:
        return float(threshold)
    if dof < MIN_DOF:
        return float("inf")
    from scipy.special import stdtrit  # scipy.stats.t.ppf's own function (see t_quantile)

    alpha = (1.0 - RESOLVE_LEVEL) / max(int(n), 1)
    return float(stdtrit(dof, 1.0 - alpha / 2.0))


def singular_directions(
    A, A_blocks=None, counts=None, threshold=RANK_THRESHOLD, dof=None
) -> Directions:
    return directions_and_deviations(A, A_blocks, counts, threshold, dof)[0]


def directions_and_deviations(
    A, A_blocks=None, counts=None, threshold=RANK_THRESHOLD, dof=None, svd=None
):
    """SVD of A (a complete basis of right singular vectors) and the resolution rule (module
    docstring).

    Parameters
    ----------
    A : (m, n)
    A_blocks : (B, m, n), optional
        Per-block means; with fewer than two blocks the rank is judged against the
        floating-point floor only (``noise`` is None).
    counts : (B,), optional
        Samples per block.
    threshold : float or None
        See :data:`RANK_THRESHOLD`.
    dof : float, optional
        Degrees of freedom of the noise estimate (default B − 1; a design's grouped blocks have
        fewer).
    svd : tuple, optional
        ``numpy.linalg.svd(A, full_matrices=m < n)`` when already computed.

    Returns
    -------
    Directions
        (:func:`directions_and_deviations` also returns what the solve reads of the block
        deviations: with dense block means and m ≥ n their two Grams,
        :class:`~.grams.BlockGrams` (``UᵀΔA_bV`` and ``Σ_b w_bΔA_bᵀΔA_b``); otherwise
        ``(A_b − A) V`` (B, m, n) in the V basis — a :class:`~.blockops.DeviationStream` that
        regenerates them chunk by chunk when they would exceed :data:`~.blockops.STREAM_BYTES`;
        None without noise blocks.)
    """
    m, n = A.shape
    if svd is not None and (m >= n or svd[2].shape[0] == n):
        U, s, Vt = svd
    else:
        U, s, Vt = np.linalg.svd(A, full_matrices=m < n)
    s_full = np.zeros(n)
    s_full[: s.size] = s
    V = Vt.T
    resolved = s_full > numerical_floor(s_full, m, n)
    if A_blocks is None or len(A_blocks) < 2:
        return Directions(s_full, V, None, resolved, left=U), None
    counts = np.asarray(counts, dtype=float)
    B = len(A_blocks)
    dof = float(B - 1 if dof is None else dof)
    w = counts / counts.sum()
    if grams_apply(A, A_blocks):  # the two Grams of the deviations (m ≥ n)
        fs = face_split_of(A_blocks)  # a matrix model's factors: no (B, n, n) products
        if fs is not None:
            dAV = FaceSplitGrams.compute(A, fs, U, s_full, V, w)
        else:
            dAV = BlockGrams.compute(A, A_blocks, U, s_full, V, w)
        vSv, proj = dAV.vSv() / (B - 1), dAV.proj()
    else:
        vSv, proj, dAV = _deviations(A @ V, A_blocks, V, w, A)
    # a quadratic form of a Gram: below 0 only by rounding (its square root was NaN noise)
    vSv = np.maximum(vSv, 0.0)
    kappa = s_full**2 - vSv
    proj = 2.0 * proj  # (B, n): block deviations of ‖A v_i‖²
    var = w @ proj**2 / (B - 1) + 2.0 * vSv**2 / dof
    kappa_sd = np.sqrt(np.maximum(var, 0.0))
    q = resolve_quantile(dof, threshold, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(kappa_sd > 0, kappa / kappa_sd, np.sign(kappa) * np.inf)
    resolved &= t > q
    return Directions(s_full, V, np.sqrt(vSv), resolved, kappa, kappa_sd, t, q, dof, U), dAV


def _deviations(AV, A_blocks, V, w, A=None):
    """(v_iᵀSv_i (n,), the block deviations of ‖Av_i‖²/2 (B, n), ``(A_b − A)V``: an array or a
    :class:`DeviationStream` when too large to hold).

    Streamed with m < n the last n − m directions are A's exact null space (the complete SVD's
    padding, σ_i = 0): ``(A v_i)ᵀΔA_bv_i`` is 0 there and only the noise of the space as a whole
    is basis-free, so each of them gets its share ``Σ_b w_b ‖ΔA_b V_0‖²_F / (n − m)`` — the
    blocks' ``‖ΔA_b‖²_F`` less what the first m directions hold — and only those m columns are
    regenerated (B·m·n·m operations instead of B·m·n²; at d = 100 m = 2048 of n = 10⁴).  Their
    t is then −√(dof/2), as it is per direction; no later statistic reads those columns."""
    B, n = len(A_blocks), V.shape[1]
    if streamed(A_blocks):  # (B, m, n) too large to hold: per chunk of blocks, then regenerated
        dAV = DeviationStream(A_blocks, V, AV)
        m = AV.shape[0]
        k = min(m, n) if A is not None else n  # the directions computed one by one
        sq, proj = np.zeros((B, n)), np.zeros((B, n))
        if k == n:
            for lo, hi, D in dAV.chunks():
                sq[lo:hi] = np.einsum("bmi,bmi->bi", D, D)
                proj[lo:hi] = np.einsum("mi,bmi->bi", AV, D)
        else:
            for lo, hi, Ab in dAV.block_chunks():
                dA = Ab - A[None]
                D = blocks_times(dA, V[:, :k])
                sq[lo:hi, :k] = np.einsum("bmi,bmi->bi", D, D)
                proj[lo:hi, :k] = np.einsum("mi,bmi->bi", AV[:, :k], D)
                rest = np.einsum("bmn,bmn->b", dA, dA) - sq[lo:hi, :k].sum(axis=1)
                sq[lo:hi, k:] = (np.maximum(rest, 0.0) / (n - k))[:, None]
    else:
        dAV = blocks_times(A_blocks, V)  # (B, m, n)
        dAV -= AV[None]
        sq = np.einsum("bmi,bmi->bi", dAV, dAV)
        proj = np.einsum("mi,bmi->bi", AV, dAV)
    return w @ sq / (B - 1), proj, dAV


def col_se(blocks, mean, counts):
    """Per-entry standard errors (m, k) of ``mean`` from per-block means (B, m, k)."""
    B = blocks.shape[0]
    w = counts / counts.sum()
    dev = blocks - mean[None]
    return np.sqrt(np.einsum("b,bmk->mk", w, dev * dev) / (B - 1))
