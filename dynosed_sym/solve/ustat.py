"""The unbiased (U-statistic) fit of a linear(ised) system from its per-block means, and the
resolved estimator (docs/design-statistics.md).

Every route hands the solve a :class:`~dynosed_sym.assembly.stein.BlockSystem`: means ``A, b``
over N samples and the means ``A_b, b_b`` over B independent blocks (weights ``w_b = N_b/N``).

U-statistic.  The V-statistic loss ``‖Aθ − b‖² = ‖mean_i ψ_i(θ)‖²`` contains the pairs of a sample
with itself (and, for correlated samples, with its neighbours in the same chain); their
expectation ``tr Cov(Aθ − b)`` is a positive O(1/N) term that shrinks the drift.  Dropping every
within-block pair gives the block U-statistic

    L_U(θ) = ‖Aθ − b‖² − (θᵀSθ − 2θᵀs + e),
    S = Σ_b w_b (A_b − A)ᵀ(A_b − A)/(B − 1),   s = Σ_b w_b (A_b − A)ᵀ(b_b − b)/(B − 1),

an unbiased estimate of ‖E ψ(θ)‖² whenever the blocks are independent (samples inside a block may
be correlated).  Its normal equations are ``(AᵀA − S + λI) θ = Aᵀb − s``.

Resolved subspace.  On a direction the data cannot see, ``vᵀ(AᵀA − S)v`` fluctuates around zero
(the corrected Gram is indefinite in most rank-deficient fits), so the correction is applied on
the resolved right singular subspace R only (:mod:`.directions`: the curvature ``κ̂_i = σ_i² −
v_iᵀSv_i`` established against its own noise at a family-wise 5 %).  A guard scales the
correction by α < 1 if ``V_Rᵀ(AᵀA − S)V_R`` were not positive definite (``Estimate.alpha``).

Estimators.  ``"ridge"``: ``θ̂ = (AᵀA − P_R S P_R + λI)⁻¹(Aᵀb − P_R s)`` (with ``statistic="v"``:
the Tikhonov solve, bit for bit).  ``"resolved"``: no regularisation on R,

    θ_R = V_R (V_Rᵀ(AᵀA − S)V_R)⁻¹ V_Rᵀ(Aᵀb − s),

which estimates ``Qθ*`` with the resolution matrix ``Q = V_RV_Rᵀ``, plus the ridge's components
along the unresolved directions and their coupling through S (:mod:`.weak`, "the fill"); along a
direction just above the threshold (q < t < 2q) it hands over from the ridge's component to θ_R's
(:mod:`.weak`, "Hand-over"); what the data cannot separate enters the intervals
(:mod:`.intervals`, :mod:`.weak`).

Second order.  The remaining O(1/N) bias of the corrected ratio is taken from the delete-one-block
jackknife on R with the fill held on the right-hand side, or b̂₂ (the design-noise × residual-noise
term) where the jackknife's expansion check fails (:mod:`.jackknife`; ``statistic="u"`` only).
With more than :data:`~.jackknife.MAX_RANK_PER_BLOCK` resolved directions per block neither can
be estimated and R is fitted by the V-statistic (α = 0, a note).

Non-affine drift.  :func:`~.gauss_newton.corrected_gauss_newton` re-linearises and solves the
corrected system per step; a fixed point is a stationary point of ``‖r(θ)‖² − tr Ĉov(r(θ))``
(+ λ‖θ‖² off R).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from .. import arguments
from ..assembly.facesplit import face_split_of, rescale, unlocked, with_face_split
from ..errors import DataError
from ..kernels.blas import single_blas
from .blockops import DeviationStream, each_rtimes, is_dense
from .deviations import BlockDeviations
from .directions import MIN_DOF, RANK_THRESHOLD, Directions, directions_and_deviations
from .jackknife import (
    MAX_RANK_PER_BLOCK,
    Jackknife,
    bias_beyond_first_order,
    covariance_and_coupling,
    jackknife_possible,
    kept_unresolved,
    second_order_bias,
)
from .linear import hinv, solve_tikhonov, unit_scale
from .misspecification import block_weights
from .weak import Fill, Handover, fill_unresolved, hand_over

__all__ = [
    "Estimate",
    "STATISTICS",
    "ESTIMATORS",
    "estimator_options",
    "block_covariance",
    "second_order_bias",
    "solve_system",
]

STATISTICS = ("u", "v")
ESTIMATORS = ("resolved", "ridge")

#: The correction on R is scaled down until the smallest eigenvalue of the corrected Gram on R,
#: scaled by the resolved singular values, diag(σ_R)⁻¹(σ_R² − V_RᵀSV_R)diag(σ_R)⁻¹, is at least
#: this.
PD_FRACTION = 0.1


def estimator_options(statistic="u", estimator=None):
    """Check and complete the (statistic, estimator) pair.

    ``estimator=None`` means ``"resolved"`` with the U-statistic and ``"ridge"`` with the
    V-statistic, so that ``statistic="v"`` alone gives the plain V-statistic Tikhonov (ridge) fit,
    the baseline the default is compared with.
    """
    statistic = arguments.choice(statistic, "statistic", STATISTICS)
    if estimator is None:
        estimator = "resolved" if statistic == "u" else "ridge"
    estimator = arguments.choice(estimator, "estimator", ESTIMATORS)
    return statistic, estimator


@dataclass
class Estimate:
    """θ̂ of one linear system and what the report needs to judge it.

    Attributes
    ----------
    theta : (n,) the estimate
    bread : (n, n) the inverse Gram of the estimating equations (H⁻¹, or H⁺ on R), the sandwich's
        bread
    theta_tikhonov : (n,) the V-statistic Tikhonov solution, where the misspecification test is
        taken (whether b lies in the range of A does not depend on the estimator)
    statistic, estimator : str
    second_order : (n,) the bias beyond first order subtracted from θ̂ (zeros when none): the
        jackknife's times its gain, b̂₂ for the rest (:mod:`.jackknife`)
    alpha : float
        Scale of the correction on R (1: the full U-statistic; < 1: the positive-definiteness
        guard acted).
    subspace : (n, rank) resolved right singular vectors V_R the estimate was computed on
    theta_resolved : (n,) or None
        The resolved estimate θ_R before the unresolved components are filled (the sandwich is
        taken there; :mod:`.weak`).
    notes : list of str
    fill : :class:`~dynosed_sym.solve.weak.Fill` or None
        The components kept along the unresolved directions (resolved estimator).
    handover : :class:`~dynosed_sym.solve.weak.Handover` or None
        The just-resolved directions' share of the ridge's components (resolved estimator).
    directions : :class:`~dynosed_sym.solve.directions.Directions` or None
        The directions the estimate was computed on (in the system's units).
    left_vectors : (m, min(m, n)) or None
        The left singular vectors of A from the solve's SVD (the misspecification test reads
        them instead of a second SVD).
    jackknife : :class:`~dynosed_sym.solve.jackknife.Jackknife` or None
        The delete-one-block jackknife behind ``second_order`` (U-statistic only).
    deviations : :class:`~dynosed_sym.solve.deviations.BlockDeviations` or None
        The block deviations ``(A_b − A)V`` of the resolved estimator, read by its intervals
        (:func:`~dynosed_sym.solve.report.analyse` releases them once read: B·m·n floats).
    temper : :class:`~dynosed_sym.solve.temper.Temper` or None
        The part of the corrected Gauss–Newton fit's move not taken
        (:func:`~dynosed_sym.solve.temper.temper`; drifts not affine in θ).
    no_minimiser : bool
        The corrected Gauss–Newton loop stopped as a runaway
        (:func:`~.gauss_newton.corrected_gauss_newton`): the loss appears to have no finite
        minimiser, and the report gives no finite interval.
    """

    theta: np.ndarray
    bread: np.ndarray
    theta_tikhonov: np.ndarray
    statistic: str
    estimator: str
    second_order: np.ndarray
    alpha: float = 1.0
    subspace: np.ndarray | None = None
    theta_resolved: np.ndarray | None = None
    notes: list = field(default_factory=list)
    fill: Fill | None = None
    handover: Handover | None = None
    directions: Directions | None = None
    left_vectors: np.ndarray | None = None
    deviations: BlockDeviations | None = None
    jackknife: Jackknife | None = None
    temper: object = None
    no_minimiser: bool = False

    def moved2(self):
        """(n,) the squared moves of the estimate the intervals count as a possible bias: the
        hand-over's (:mod:`.weak`) and the tempering's (:mod:`.temper`); zeros without."""
        out = np.zeros(np.size(self.theta))
        for move in (self.handover, self.temper):
            if move is not None:
                out = out + move.bias2()
        return out


def ridge_at(system, theta, lam):
    """The ridge's estimate on ``system`` (a linearisation at ``theta``, the gradient search's
    optimum of the same loss) held at ``theta``: its bread and report are the linearisation's,
    its point the optimum itself (the non-affine fall-back and tempering, :mod:`.gauss_newton`,
    :mod:`.temper`)."""
    est = solve_system(*system, lam, statistic="v", estimator="ridge")
    return replace(est, theta=np.asarray(theta, dtype=float).copy())


def block_covariance(A, b, A_blocks, b_blocks, counts):
    """(S (n, n), s (n,)): block estimates of Cov(A) and Cov(A, b) contracted over rows.

    ``S = Σ_b w_b (A_b − A)ᵀ(A_b − A)/(B − 1)``, ``s = Σ_b w_b (A_b − A)ᵀ(b_b − b)/(B − 1)``;
    ``θᵀSθ − 2θᵀs + const = tr Ĉov(Aθ − b)`` (module docstring).
    """
    w = block_weights(counts)
    B, m, n = A_blocks.shape
    dA = (A_blocks - A[None]).reshape(B * m, n)
    db = (b_blocks - b[None]).reshape(B * m)
    wdA = dA * np.repeat(w, m)[:, None]
    S = wdA.T @ dA / (B - 1)
    s = wdA.T @ db / (B - 1)
    return 0.5 * (S + S.T), s


def covariance_times(A, A_blocks, counts, v):
    """``S v`` (n,) without forming S: ``Σ_b w_b (A_b − A)ᵀ((A_b − A)v)/(B − 1)``."""
    w = block_weights(counts)
    u = A_blocks @ v - (A @ v)[None]  # (B, m)
    if is_dense(A_blocks) and face_split_of(A_blocks) is None:
        out = np.einsum("bmn,bm->n", A_blocks, u * w[:, None]) - A.T @ (w @ u)
    else:
        out = each_rtimes(A_blocks, u * w[:, None]).sum(axis=0) - A.T @ (w @ u)
    return out / (w.size - 1)


def _guarded(G, K):
    """Largest α ∈ (0, 1] (powers of 0.8) keeping G − αK ⪰ PD_FRACTION·min diag G (G, K scaled
    by the resolved singular values: diag G = 1 on the SVD basis)."""
    alpha = 1.0
    if G.shape[0] == 0:
        return alpha
    target = PD_FRACTION * float(np.min(np.diag(G)))
    while np.linalg.eigvalsh(G - alpha * K).min() < target and alpha > 1e-3:
        alpha *= 0.8
    return alpha


def _solve_scaled(M, rhs, c):
    """z = diag(1/c) M⁻¹ rhs and diag(1/c) M⁻¹ diag(1/c); a DataError when M is singular."""
    if M.shape[0] == 0:
        return np.zeros(0), np.zeros((0, 0))
    try:
        Minv = np.linalg.inv(M)
    except np.linalg.LinAlgError:
        Minv = np.full(M.shape, np.nan)
    z = (Minv @ rhs) / c
    inv = Minv / np.outer(c, c)
    _require_finite(
        "the corrected normal equations on the resolved directions are singular or", z, inv
    )
    return z, inv


def _require_finite(what, *arrays):
    """A :class:`DataError` saying ``what`` is not finite, unless every array is finite."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise DataError(
            f"{what} not finite (the system's entries are too large or too small for double "
            "precision); rescale the state variables or the parameters, or pass statistic='v'"
        )


@single_blas
def solve_system(
    A,
    b,
    A_blocks=None,
    b_blocks=None,
    counts=None,
    lam=0.0,
    *,
    statistic="u",
    estimator=None,
    second_order=True,
    rank_threshold=RANK_THRESHOLD,
    subspace=None,
    tikhonov=True,
    dof=None,
    handover=True,
) -> Estimate:
    """θ̂ of ``A θ ≈ b`` by the chosen statistic and estimator (module docstring).

    The system is first brought to unit size by powers of two (``A/a``, ``b/β``, ``λ/a²``: exact in
    floating point), solved there and scaled back: the result is the same, but the products of
    the correction (``S/σ²``, of order ``A⁴``) cannot overflow or underflow when the entries are
    far from 1, and rescaled data give bit-identical estimates.

    Parameters
    ----------
    A : (m, n), b : (m,)
    A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,), optional
        Per-block means.  Without at least two blocks the sampling noise is unknown: the
        V-statistic Tikhonov solution is returned with a note.
    lam : float
        λ of the ridge; with ``estimator="resolved"`` it acts on nothing (kept for the
        misspecification test's Tikhonov solution).
    statistic : {"u", "v"}
    estimator : {"resolved", "ridge"} or None (see :func:`estimator_options`)
    second_order : bool
        Subtract b̂₂ (``statistic="u"`` only).
    rank_threshold : float
    subspace : (n, k) array, optional
        Orthonormal columns to use as R instead of the resolved directions of this system (the
        block bootstrap keeps the fit's subspace).
    tikhonov : bool
        Also compute the Tikhonov solution (``theta_tikhonov``; NaN when False).
    dof : float, optional
        Degrees of freedom of the noise estimate (default: blocks − 1; a design's grouped
        pseudo-blocks have fewer, :attr:`~dynosed_sym.solve.uncertainty.Grouping.dof`).
    handover : bool
        The just-resolved directions' hand-over (:func:`~dynosed_sym.solve.weak.hand_over`;
        ``statistic="u"`` only, and not in the corrected Gauss–Newton loop's steps).

    Returns
    -------
    Estimate
    """
    a, beta = unit_scale(A, even=True), unit_scale(b, even=True)
    with _unit_blocks(A_blocks, a) as unit_blocks:
        scaled = _solve_unit(
            A / a,
            b / beta,
            unit_blocks,
            None if b_blocks is None else b_blocks / beta,
            counts,
            min(lam / a / a, np.finfo(float).max),  # λ beyond double range: still "infinite"
            statistic=statistic,
            estimator=estimator,
            second_order=second_order,
            rank_threshold=rank_threshold,
            subspace=subspace,
            tikhonov=tikhonov,
            dof=dof,
            handover=handover,
        )
    unit = beta / a  # θ in the system's units
    with np.errstate(over="ignore"):
        bread = scaled.bread / a / a
    if not np.isfinite(bread).all():
        raise DataError(
            f"the assembled system's entries are too small for double precision (largest |A| = "
            f"{float(np.abs(A).max()):.3g}): the inverse of its Gram matrix overflows — the Stein "
            "features are numerically zero (a bandwidth far beyond the data's spread, or state "
            "variables in extreme units); rescale the state variables or choose a smaller bandwidth"
        )
    return replace(
        scaled,
        theta=scaled.theta * unit,
        bread=bread,
        theta_tikhonov=scaled.theta_tikhonov * unit,
        second_order=scaled.second_order * unit,
        jackknife=None
        if scaled.jackknife is None
        else replace(
            scaled.jackknife, bias=scaled.jackknife.bias * unit, sd=scaled.jackknife.sd * unit
        ),
        theta_resolved=None if scaled.theta_resolved is None else scaled.theta_resolved * unit,
        fill=None if scaled.fill is None else _scaled_fill(scaled.fill, unit),
        handover=None if scaled.handover is None else scaled.handover.scaled(unit),
        directions=None if scaled.directions is None else _scaled_directions(scaled.directions, a),
        deviations=_scaled_deviations(scaled.deviations, A_blocks, a),
    )


def _scaled_deviations(dev, A_blocks, a):
    """The solve's :class:`BlockDeviations` (in the units of ``A/a``) tied to the caller's
    ``A_blocks``; a stream reads them scaled by 1/a (the solve's in-place scaling is undone)."""
    if dev is None:
        return None
    dAV = dev.dAV
    if isinstance(dAV, DeviationStream):
        dAV = dAV.rescaled(A_blocks, 1.0 / a)
    return replace(dev, dAV=dAV, scale=a, A_blocks=A_blocks)


@contextmanager
def _unit_blocks(A_blocks, a):
    """``A_blocks / a`` for the solve (:func:`_scaled_blocks`), a matrix model's read-only block
    means unlocked for their exact scaling and locked again afterwards."""
    with unlocked(A_blocks), _scaled_blocks(A_blocks, a) as out:
        yield out


@contextmanager
def _scaled_blocks(A_blocks, a):
    """``A_blocks / a`` for the solve.  A writable dense array with ``a ≤ 1`` (a power of two) is
    scaled in place and scaled back afterwards: both products are exact (a scaling up that does
    not overflow, checked, then its inverse), so the caller's array is restored bit for bit and
    no (B, m, n) copy is made (at d = 20 a fresh copy cost as much as the assembly in page faults).
    Otherwise (a > 1 could round entries into the subnormal range) a scaled copy."""
    if A_blocks is None or a == 1.0:
        yield A_blocks
        return
    dense = isinstance(A_blocks, np.ndarray) and A_blocks.dtype == np.float64
    if not (dense and A_blocks.flags.writeable and a < 1.0):
        yield _divided(A_blocks, a)
        return
    big = max(float(np.max(A_blocks, initial=0.0)), -float(np.min(A_blocks, initial=0.0)))
    if not big <= np.finfo(float).max * a:  # an overflow (or a NaN): the copy says so itself
        yield _divided(A_blocks, a)
        return
    np.multiply(A_blocks, 1.0 / a, out=A_blocks)
    factors = rescale(A_blocks, 1.0 / a)  # a matrix model's factors with it
    try:
        yield A_blocks
    finally:
        np.multiply(A_blocks, a, out=A_blocks)
        rescale(A_blocks, factors)


def _divided(A_blocks, a):
    """``A_blocks / a``, a new array (with a matrix model's factors scaled alike)."""
    out = A_blocks / a
    fs = face_split_of(A_blocks)
    return out if fs is None else with_face_split(out, fs.scaled(1.0 / a))


def _scaled_fill(fill, unit):
    """A :class:`Fill` of the unit-size system in the system's units (θ scales by β/a)."""
    return replace(
        fill, z_ls=fill.z_ls * unit, z=fill.z * unit, shift=fill.shift * unit, se=fill.se * unit
    )


def _scaled_directions(dirs, a):
    """:class:`Directions` of ``A/a`` for A (σ, SE by a; κ and its sd by a²)."""
    with np.errstate(over="ignore"):
        return _replace_scaled(dirs, a)


def _replace_scaled(dirs, a):
    return dirs._replace(
        singular_values=dirs.singular_values * a,
        noise=None if dirs.noise is None else dirs.noise * a,
        kappa=None if dirs.kappa is None else dirs.kappa * (a * a),
        kappa_sd=None if dirs.kappa_sd is None else dirs.kappa_sd * (a * a),
    )


def _tikhonov_estimate(A, lam, theta_tik, statistic, estimator, noisy):
    """The V-statistic Tikhonov fit as an :class:`Estimate` (chosen, or for want of noise
    blocks)."""
    notes = []
    if not noisy and (statistic, estimator) != ("v", "ridge"):
        notes.append(
            "note: too few data blocks for the U-statistic correction and the resolved "
            "estimator (no sampling-noise estimate): V-statistic Tikhonov solution"
        )
    return Estimate(
        theta=theta_tik,
        bread=hinv(A, lam),
        theta_tikhonov=theta_tik,
        statistic="v" if not noisy else statistic,
        estimator="ridge" if not noisy else estimator,
        second_order=np.zeros(A.shape[1]),
        notes=notes,
    )


def _resolved_subspace(A, A_blocks, counts, rank_threshold, dof, subspace, svd=None):
    """(directions or None, V_R, scale c, Gram G scaled by c, block deviations along V_R — along
    every direction, (A_b − A)V, when the directions are computed here —, (A_b − A)V or None)."""
    if subspace is None:
        dirs, dAV = directions_and_deviations(A, A_blocks, counts, rank_threshold, dof, svd)
        VR = dirs.V[:, dirs.resolved]
        c = dirs.singular_values[dirs.resolved]
        return dirs, VR, c, np.eye(c.size), dAV, dAV  # V_RᵀAᵀAV_R = diag σ_R², scaled by σ_R
    VR = np.asarray(subspace, dtype=float)
    AV = A @ VR
    c = np.linalg.norm(AV, axis=0)
    c = np.where(c > 0, c, 1.0)
    return None, VR, c, (AV.T @ AV) / np.outer(c, c), A_blocks @ VR - AV[None], None


def _ridge_estimate(A, b, dirs, VR, c, M, rhs, lam):
    """The ridge: the correction acts on R only and AᵀA is diagonal in the V basis, so R and its
    complement decouple; the complement keeps the Tikhonov gain → (θ, bread)."""
    z, inv_R = _solve_scaled(M + np.diag(lam / c**2), rhs, c)
    unres = ~dirs.resolved
    VU = dirs.V[:, unres]
    sU = dirs.singular_values[unres]
    denom = sU * sU + lam
    inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0)
    theta = VR @ z + VU @ (inv * (VU.T @ (A.T @ b)))
    return theta, VR @ inv_R @ VR.T + (VU * inv) @ VU.T


def _correction_notes(crowded, alpha, r, A_blocks, dirs=None):
    """The summary's notes on a resolved solve: too few degrees of freedom to resolve anything
    (``dirs``: the directions of a filled estimate), and the U-statistic correction."""
    notes = []
    if dirs is not None and not np.isfinite(dirs.threshold):
        notes.append(
            f"note: {dirs.dof:g} degrees of freedom of the noise estimate (fewer than "
            f"{MIN_DOF}): no direction is called resolved; the estimate is the ridge solution "
            "and no interval is finite — more samples are needed"
        )
    if crowded:
        return notes + [
            f"note: {r} resolved directions for {len(A_blocks)} noise blocks (more than "
            f"{MAX_RANK_PER_BLOCK} per block): the U-statistic's second-order bias cannot be "
            "estimated there and outweighs the V-statistic's shrinkage, so the resolved "
            "directions are fitted by the V-statistic (more samples per block, or fewer blocks "
            "with more samples each, restore the U-statistic)"
        ]
    if alpha < 1.0:
        notes.append(
            f"note: the U-statistic correction was scaled by {alpha:.3g} to keep the corrected "
            "Gram matrix positive definite on the resolved directions"
        )
    return notes


def _tikhonov_first(A, b, lam, wanted, directions):
    """(the Tikhonov solution or NaN when not ``wanted``, the SVD of A when the directions will
    need it too: one SVD for both — and for the misspecification test's left vectors —, thin
    for m ≥ n, with the complete V the directions need for m < n)."""
    m, n = A.shape
    usv = np.linalg.svd(A, full_matrices=m < n) if wanted and directions else None
    if not wanted:
        return np.full(n, np.nan), None
    thin = usv if usv is None or m >= n else (usv[0], usv[1], usv[2][:m])
    return solve_tikhonov(A, b, lam, svd=thin), usv


def _solve_unit(
    A,
    b,
    A_blocks,
    b_blocks,
    counts,
    lam,
    *,
    statistic,
    estimator,
    second_order,
    rank_threshold,
    subspace,
    tikhonov,
    dof,
    handover,
) -> Estimate:
    """:func:`solve_system` on a system of unit size."""
    statistic, estimator = estimator_options(statistic, estimator)
    n = A.shape[1]
    noisy = A_blocks is not None and len(A_blocks) >= 2
    plain = (statistic, estimator) == ("v", "ridge") or not noisy
    theta_tik, usv = _tikhonov_first(A, b, lam, tikhonov or plain, not plain and subspace is None)
    if plain:
        return _tikhonov_estimate(A, lam, theta_tik, statistic, estimator, noisy)
    if subspace is not None and estimator != "resolved":
        raise ValueError("subspace= is only used with estimator='resolved'")
    dirs, VR, c, G, dAR, dAV = _resolved_subspace(
        A, A_blocks, counts, rank_threshold, dof, subspace, usv
    )
    # too many resolved directions per block for the corrected ratio's second-order bias to be
    # estimated (docs/design-statistics.md §5): the V-statistic on R, and no correction to form
    # (at network size its pass over the block deviations along R was a third of the solve)
    crowded = statistic == "u" and second_order and not jackknife_possible(c.size, A_blocks)
    # the correction on R only: V_RᵀSV_R and V_Rᵀs from the block deviations along V_R (S itself,
    # n × n from B·m·n² products, is never formed)
    cols = None if dirs is None else np.flatnonzero(dirs.resolved)
    coupled = None
    if statistic == "u" and not crowded:
        zU = kept_unresolved(A, b, dirs, lam) if estimator == "resolved" and second_order else None
        S_RR, s_R, coupled = covariance_and_coupling(
            A, b, A_blocks, b_blocks, counts, dAR, cols, zU
        )
    else:
        S_RR, s_R = np.zeros((c.size, c.size)), np.zeros(c.size)
    # everything on R is scaled by the resolved singular values
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        K = S_RR / np.outer(c, c)
    _require_finite("the noise of the assembled system on its resolved directions is", K, G)
    alpha = 0.0 if crowded else _guarded(G, K)
    rhs = (VR.T @ (A.T @ b) - alpha * s_R) / c
    z, Hp = _solve_scaled(G - alpha * K, rhs, c)
    Hp = VR @ Hp @ VR.T
    if estimator == "resolved":
        theta = VR @ z
        bread = Hp
    else:
        theta, bread = _ridge_estimate(A, b, dirs, VR, c, G - alpha * K, rhs, lam)
    b2, jk = np.zeros(n), None
    if statistic == "u" and second_order and VR.shape[1] and not crowded:
        b2, jk = bias_beyond_first_order(
            (A, b, A_blocks, b_blocks, counts),
            theta,
            Hp,
            (VR, c, (alpha, S_RR, s_R)),
            (dAR, cols),
            coupled,
        )
        theta = theta - b2
    notes, fill, kept, theta_resolved = [], None, None, theta
    if estimator == "resolved" and subspace is None:
        if handover and statistic == "u":  # the just-resolved directions (module docstring)
            theta, kept = hand_over(theta, A, b, dirs, lam)
        theta_resolved, notes = theta, [] if kept is None else [kept.note()]
        scale = alpha if statistic == "u" else 0.0

        def S_times(v):  # the correction applied to a vector (the coupling of the fill)
            return scale * covariance_times(A, A_blocks, counts, v)

        fill = fill_unresolved(A, b, theta, (A_blocks, b_blocks, counts), dirs, Hp, S_times, lam)
        theta = theta + fill.shift + fill.VU @ fill.z
    notes += _correction_notes(crowded, alpha, c.size, A_blocks, None if fill is None else dirs)
    return Estimate(
        theta=theta,
        bread=np.asarray(bread, dtype=float),
        theta_tikhonov=theta_tik,
        statistic=statistic,
        estimator=estimator,
        second_order=b2,
        jackknife=jk,
        alpha=float(alpha),
        subspace=VR,
        theta_resolved=theta_resolved,
        notes=notes,
        fill=fill,
        handover=kept,
        directions=dirs if subspace is None else None,
        left_vectors=None if usv is None else usv[0],
        deviations=None if fill is None else BlockDeviations(dAV, 1.0, dirs.V, dirs.resolved),
    )
