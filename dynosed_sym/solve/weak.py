"""Weak directions: the estimate along directions the data do not resolve, and intervals that stay
honest at any identification strength (docs/design-statistics.md, "Weak directions").

The resolved estimator (:mod:`.ustat`) solves the corrected normal equations on the resolved
directions V_R (:mod:`.directions`): ``θ_R = H⁺(Aᵀb − s)`` with ``H⁺ = V_R G⁻¹ V_Rᵀ``,
``G = V_Rᵀ(AᵀA − S)V_R``.  Along an unresolved direction v_i the curvature is not established, but
b may still carry a clear signal (FitzHugh–Nagumo: the drift's overall scale).

Fill.  The least-squares component ``ẑ_i = v_iᵀAᵀb / σ_i²`` has a sandwich standard error
``se_i`` (bread ``v_i v_iᵀ/σ_i²`` at ``θ_R + V_U ẑ``) and ``t_i = ẑ_i/se_i`` (reported: how
strongly b determines the component).  The estimate keeps the ridge's component
``z_i = σ_i²/(σ_i² + λ)·ẑ_i`` (λ the solver's Tikhonov λ; 1 − O(λ/σ_i²) of ẑ_i unless the direction
is numerically null): no rule that the noise can flip moves it towards 0.  A shrinkage by t_i
(kept whole above |t| = 1.5, dropped below 1) was used before; on the oscillators it shrank the
drift's overall scale, in truth the largest component, whenever its t fell near 1, and the default
was up to 30 % worse than the ridge (docs/design-statistics.md, §8).  The least-squares components
are attenuated towards 0 (errors in variables: the curvature σ_i² includes the column noise); when
even their noise-corrected energy outweighs the resolved estimate
(``Σ_i max(ẑ_i² − se_i², 0) > ‖θ_R‖²``: the truth lies mostly along directions the data do not
resolve, as the drift's overall scale of FitzHugh–Nagumo at small N, :func:`scale_contradicted`)
the intervals size the bias by the components' attenuation (below).  With the U-statistic the
resolved part follows the filled one through the coupling of the corrected Gram,
``θ_R ← θ_R + H⁺ S V_U z_f``.

Hand-over.  A direction just above the resolution threshold q has a corrected curvature
``κ̂_i`` known to a relative ``1/t_i``: the corrected component, a ratio over it, is heavy-tailed
there (one data set in twenty of a bistable switch at N = 10,000 put b at 0.29 against a truth
of 2, where the ridge's component gave 1.0), and jumping from the ridge's component (the fill)
to it as t_i crosses q is the discontinuity the fill was built to avoid.  On ``q < t_i < 2q`` the
estimate keeps the share ``w_i = (t_i − q)/q`` of the corrected component and ``1 − w_i`` of
the ridge's (:func:`hand_over`): continuous in t_i, the ridge's at q, the corrected one from 2q,
where κ̂_i is known to 1/(2q) ≈ 20 %.  The move is added to the intervals' variance as a possible
bias (the ridge's component may be attenuated), so they stay centred at the estimate and cover
the corrected component's neighbourhood as well.

Intervals: profile-Fieller test inversion.  For parameter j, the estimating equation along its
bread row is linear in the parameter's shift t; its block influence at ``θ_R`` is
``IF0_b = −δ_b H⁺`` (δ_b the block score deviation, :mod:`.uncertainty`) and the noise of the
curvature that divides it is ``D_bj = 2 (A p_j)ᵀ ΔA_b p_j / P_jj`` (p_j: column j of H⁺).  The
set of t whose studentised moment stays below q,

    (1 − q²γ_j) t² + 2q² c_j t − q² (a_j + β_j²) ≤ 0,
    a_j = Σ w IF0²/(B−1),  c_j = Σ w IF0·D/(B−1),  γ_j = Σ w D²/(B−1),

is a bounded interval when the curvature is well determined (q²γ_j < 1; then it is the sandwich
interval with a Fieller correction), and the whole line otherwise (weak identification: no finite
interval is honest).  ``β_j²`` is the variance of what the unresolved components add: under
``z_i ~ (z_f,i, τ_i²)``, ``τ_i² = τ² + ẑ_i² + se_i²`` (τ: the maximum-likelihood scale of the
filled estimate, :func:`~dynosed_sym.solve.intervals.prior_scale_ml`; ``ẑ_i² + se_i²``: the second
moment of the component given its least-squares estimate, never the kept ``z_f,i``, so a
component the ridge's λ damps still sizes the bias by what the data say it may be),
``β_j² = Σ_i V_U,ji² τ_i² + Σ_b w_b Σ_i (H⁺M_b)_ji² τ_i² / (B − 1)`` with
``M_b = ΔA_bᵀAV_U + AᵀΔA_bV_U`` (the noise of the unresolved columns moves the resolved estimate
in proportion to their size).  The interval is centred at the filled estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .directions import numerical_floor
from .flat import ONE_SIDED_Z
from .misspecification import block_weights
from .uncertainty import block_influence, influence_variance

__all__ = [
    "Fill",
    "HANDOVER",
    "Handover",
    "fill_gain",
    "fill_unresolved",
    "hand_over",
    "ridge_components",
    "scale_contradicted",
    "WeakIntervals",
    "weak_intervals",
    "fieller",
]


@dataclass
class Fill:
    """The components of the estimate along the unresolved directions.

    Attributes
    ----------
    VU : (n, k) unresolved directions
    z_ls : (k,) least-squares components ẑ_i (0 on directions at the floating-point floor)
    t : (k,) ẑ_i / se_i
    z : (k,) the kept components ``σ_i²/(σ_i² + λ)·ẑ_i`` (the ridge's)
    shift : (n,) the move of the resolved part through the coupling (zeros without it)
    se : (k,) the sandwich standard errors se_i of ẑ_i (0 where not finite)
    scale_contradicted : bool, the least-squares components carry more than the resolved
        estimate beyond their noise (:func:`scale_contradicted`)
    attenuation : (k,) a_i, the factor by which ẑ_i understates z_i in the intervals' τ_i
        (:func:`attenuation` when the scale is contradicted, else ones)
    """

    VU: np.ndarray
    z_ls: np.ndarray
    t: np.ndarray
    z: np.ndarray
    shift: np.ndarray
    se: np.ndarray
    scale_contradicted: bool = False
    attenuation: np.ndarray | None = None

    def __post_init__(self):
        if self.attenuation is None:  # not contradicted: ẑ_i taken at face value
            self.attenuation = np.ones(self.VU.shape[1])


#: A resolved direction with ``q < t_i < HANDOVER·q`` (q the resolution threshold) keeps a share
#: ``(t_i − q)/((HANDOVER − 1)·q)`` of the corrected estimate's component and the rest of the
#: ridge's (module docstring, "Hand-over").
HANDOVER = 2.0


@dataclass
class Handover:
    """The just-resolved directions' hand-over from the ridge's components to the corrected ones.

    Attributes
    ----------
    weights : (h,) the corrected estimate's share of each direction's component, in [0, 1)
    t : (h,) the directions' t_i; q : the resolution threshold they passed
    shift : (n, h) the move of the estimate along each direction, ``v_i·(1 − w_i)(z_ridge,i −
        v_iᵀθ_R)`` (the intervals count it as a possible bias: :func:`weak_intervals`)
    """

    weights: np.ndarray
    t: np.ndarray
    q: float
    shift: np.ndarray

    def bias2(self):
        """(n,) ``Σ_i shift_ji²``: the variance the intervals add for the hand-over."""
        return (self.shift * self.shift).sum(axis=1)

    def scaled(self, unit):
        """The same hand-over for θ in units ``unit`` times these."""
        return Handover(self.weights, self.t, self.q, self.shift * unit)

    def note(self):
        """The summary's line on the hand-over."""
        if self.t.size <= 4:
            ts = "t = " + ", ".join(f"{t:.3g}" for t in self.t)
            shares = ", ".join(f"{100 * w:.0f} %" for w in self.weights)
        else:
            ts = f"t from {self.t.min():.3g} to {self.t.max():.3g}"
            shares = f"{100 * self.weights.min():.0f}–{100 * self.weights.max():.0f} %"
        return (
            f"note: {self.t.size} direction(s) just above the resolution threshold ({ts} against "
            f"q = {self.q:.3g}; the resolved estimate's component is a ratio over a curvature "
            f"known to 1/t): the estimate keeps {shares} of that component along them and the "
            "rest of the ridge's (all of it from t = 2q); bias.sd counts the move"
        )


def hand_over(theta_R, A, b, dirs, lam):
    """``(θ, Handover or None)``: θ_R with the component along every just-resolved direction
    (``q < t_i < HANDOVER·q``) moved towards the ridge's ``v_iᵀAᵀb/(σ_i² + λ)`` by the share
    ``1 − w_i``, ``w_i = (t_i − q)/((HANDOVER − 1)·q)`` (module docstring, "Hand-over")."""
    if dirs is None or dirs.t is None or not np.isfinite(dirs.threshold):
        return theta_R, None
    q = float(dirs.threshold)
    t = np.asarray(dirs.t, dtype=float)
    zone = np.asarray(dirs.resolved, dtype=bool) & (t < HANDOVER * q)
    if not zone.any():
        return theta_R, None
    w = np.clip((t[zone] - q) / ((HANDOVER - 1.0) * q), 0.0, 1.0)
    VH = dirs.V[:, zone]
    z_ridge = ridge_components(A, b, dirs, lam, zone)[1]  # what the fill keeps below q
    shift = VH * ((1.0 - w) * (z_ridge - VH.T @ theta_R))[None, :]
    return theta_R + shift.sum(axis=1), Handover(w, t[zone], q, shift)


def fill_unresolved(A, b, theta_R, system_blocks, dirs, Hp, S, lam) -> Fill:
    """The fill of the unresolved components and the coupling shift (module docstring).

    Parameters
    ----------
    A : (m, n), b : (m,)
    theta_R : (n,) the resolved estimate (zero along the unresolved directions)
    system_blocks : (A_blocks, b_blocks, counts)
    dirs : :class:`~dynosed_sym.solve.directions.Directions`
    Hp : (n, n) H⁺ of the resolved estimate
    S : callable ``v -> S v``, the correction applied on R (zeros for the V-statistic)
    lam : float, the ridge's λ (the kept component is ``v_iᵀAᵀb/(σ_i² + λ)``)
    """
    A_blocks, b_blocks, counts = system_blocks
    n = A.shape[1]
    unres = ~dirs.resolved
    VU = dirs.V[:, unres]
    k = VU.shape[1]
    if k == 0:
        empty = np.zeros(0)
        return Fill(VU, empty, empty, empty, np.zeros(n), empty)
    z_ls, z, live, s2 = ridge_components(A, b, dirs, lam)
    bread = (VU * np.where(live, 1.0 / s2, 0.0)) @ VU.T
    IF = block_influence(A, b, theta_R + VU @ z_ls, 0.0, A_blocks, b_blocks, bread) @ VU
    se2 = influence_variance(IF, counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se2 > 0, z_ls / np.sqrt(se2), np.where(z_ls != 0, np.inf, 0.0))
    contradicted = scale_contradicted(theta_R, z_ls, se2)
    shift = Hp @ S(VU @ z) if np.any(z) else np.zeros(n)
    se = np.sqrt(np.where(np.isfinite(se2) & (se2 > 0), se2, 0.0))
    atten = np.where(live, attenuation(dirs, unres, s2), 1.0) if contradicted else None
    return Fill(VU, z_ls, t, z, shift, se, contradicted, atten)


def ridge_components(A, b, dirs, lam, cols=None):
    """Along the unresolved directions (or the directions ``cols``, a boolean mask): (ẑ the
    least-squares components, z the kept ones ``σ_i²/(σ_i² + λ)·ẑ_i`` — the ridge's —, live
    (directions above the floating-point floor; ẑ = 0 on the others), σ_i² (1 where not live))."""
    unres = ~dirs.resolved if cols is None else cols
    VU = dirs.V[:, unres]
    sU = dirs.singular_values[unres]
    live = sU > numerical_floor(dirs.singular_values, *A.shape)
    s2 = np.where(live, sU * sU, 1.0)
    z_ls = np.where(live, (VU.T @ (A.T @ b)) / s2, 0.0)
    return z_ls, fill_gain(s2, lam) * z_ls, live, s2


#: The attenuation is sized at the curvature's one-sided lower bound ``κ̂ − z·sd(κ̂)`` with this z
#: (the level at which a curvature counts as seen, :data:`~.flat.SCALE_T`; :func:`attenuation`).
ATTENUATION_Z = ONE_SIDED_Z


def attenuation(dirs, unres, s2):
    """(k,) the share ``a_i = κ_i / σ_i²`` of a least-squares component's curvature that is
    signal (errors in variables: ``ẑ_i ≈ a_i z_i``), in [10⁻¹², 1]; ones without a noise
    estimate.

    κ_i is the curvature's one-sided 95 % lower bound ``κ̂_i −`` :data:`ATTENUATION_Z`
    ``·sd(κ̂_i)``, at its detection level ``sd(κ̂_i)`` where the bound is below it.  The share
    is a ratio over a curvature known to ``1/t_i``: at the point estimate κ̂_i a direction just
    above the flat rules' t = 1.645 had its component sized as if its curvature were known
    (the tenth held-out round's Rayleigh cycle at N = 500: t = 1.97, the component sized at 5.5
    against the truth's 47, and a, b, e "only in combination" with intervals that missed)."""
    if dirs.kappa is None or dirs.kappa_sd is None:
        return np.ones(int(np.count_nonzero(unres)))
    sd = dirs.kappa_sd[unres]
    kappa = np.maximum(dirs.kappa[unres] - ATTENUATION_Z * sd, sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = kappa / s2
    return np.where(np.isfinite(a), np.clip(a, 1e-12, 1.0), 1.0)


def scale_contradicted(theta_R, z_ls, se2):
    """Do the least-squares components along the unresolved directions carry more than the
    resolved estimate, beyond their own noise: ``Σ_i max(ẑ_i² − se_i², 0) > ‖θ_R‖²`` (module
    docstring)?

    τ (the intervals' scale) is drawn from the parameters the data resolve.  The least-squares
    components are themselves attenuated towards 0 (errors in variables: their curvature includes
    the column noise), so when even their noise-corrected energy outweighs θ_R the truth lies
    mostly along directions the data cannot resolve (the drift's overall scale) and the bias is
    sized by the attenuation-corrected components (:func:`attenuation`).  A component at its noise
    level (a structurally null direction, where ẑ_i is large only because σ_i is small) adds
    nothing.
    """
    se2 = np.where(np.isfinite(se2), se2, np.inf)
    excess = np.maximum(z_ls * z_ls - se2, 0.0)
    return bool(float(excess.sum()) > float(theta_R @ theta_R))


def fill_gain(s2, lam):
    """The share ``σ_i²/(σ_i² + λ)`` of a least-squares component kept (module docstring): the
    ridge's own gain, 1 for λ = 0, continuous and monotone in the curvature σ_i²."""
    s2 = np.asarray(s2, dtype=float)
    lam = float(lam)
    if lam <= 0.0:
        return np.ones_like(s2)
    if not np.isfinite(lam):
        return np.zeros_like(s2)
    return s2 / (s2 + lam)


@dataclass
class WeakIntervals:
    """Profile-Fieller intervals of one fit (module docstring).

    Attributes
    ----------
    ci : (n, 2)
    se : (n,) √a_j, the sampling standard error at the resolved estimate
    bias_sd : (n,) β_j
    noise : (n,) the part of β_j² from the noise of the unresolved columns
    bounded : (n,) bool, False where the interval is the whole line
    c, gamma : (n,) the covariance of the moment with the curvature's noise and the curvature's
        variance (q²γ_j ≥ 1: the curvature along the parameter is not determined)
    tau : the scale used (float, (n,) array or None)
    tau_dirs : (k,) τ_i used per unresolved direction
    """

    ci: np.ndarray
    se: np.ndarray
    bias_sd: np.ndarray
    noise: np.ndarray
    bounded: np.ndarray
    c: np.ndarray
    gamma: np.ndarray
    tau: object
    tau_dirs: np.ndarray


def _unresolved_noise(A, dA, Hp, VU, tau2, w):
    """(n,) Σ_b w_b Σ_i (H⁺M_b)_ji² τ_i² / (B − 1) (module docstring)."""
    B, m, n = dA.shape
    AVU = A @ VU  # (m, k)
    dAVU = dA @ VU  # (B, m, k)
    # M_b = ΔA_bᵀ A V_U + Aᵀ ΔA_b V_U: (B, n, k), by matrix products (no B·n²-sized einsum)
    M = np.matmul(dA.transpose(0, 2, 1), AVU) + np.matmul(A.T, dAVU)
    G = np.matmul(Hp, M)  # (B, n, k)
    return np.einsum("b,bik,k->i", w, G * G, tau2) / (B - 1)


def _curvature_noise(A, dA, Hp):
    """(B, n) ``(A p_j)ᵀ ΔA_b p_j`` with ``p_j = H⁺e_j`` (column j of H⁺)."""
    return np.einsum("mj,bmj->bj", A @ Hp, np.matmul(dA, Hp))


def weak_intervals(
    A, b, theta_R, estimate, system_blocks, Hp, fill, tau, q, free, deviations=None, moved2=None
) -> WeakIntervals:
    """The intervals of the resolved estimator (module docstring).

    Parameters
    ----------
    A, b : the system; theta_R : (n,) the resolved estimate (before the fill and coupling)
    estimate : (n,) the reported estimate (centre)
    system_blocks : (A_blocks, b_blocks, counts)
    Hp : (n, n) H⁺, the bread of the resolved estimate
    fill : :class:`Fill`
    tau : float, (n,) array, callable or None
        Scale of the parameters (per parameter, projected on each unresolved direction); a
        callable ``se -> τ`` is called with the sampling standard errors √a_j; None: the
        unresolved components are not accounted for (β = 0).
    q : float, the interval's Student-t quantile
    free : (n,) bool, parameters loading ≥ 0.5 on unresolved directions (whole line).  With
        streamed deviations or a matrix model's face-split ones (network size,
        :attr:`~.deviations.BlockDeviations.restricted`) their curvature and unresolved noise are
        not computed (the passes cost B·m·n·|not free| instead of B·m·n²): their ``noise`` is 0
        and their
        ``bias_sd`` the loading part ``√(Σ_i V_U,ji² τ_i²)`` only, a lower bound.
    deviations : :class:`~dynosed_sym.solve.deviations.BlockDeviations`, optional
        The solve's ``(A_b − A)V`` of these blocks (``H⁺`` then lives on its resolved
        directions): the block contractions are taken from it, O(B·m·r·n) instead of O(B·m·n²).
    moved2 : (n,) array, optional
        Squared moves of the estimate added to β_j² as a bias: the just-resolved directions'
        (:func:`hand_over`) and the tempering's (:mod:`.temper`),
        :meth:`~dynosed_sym.solve.ustat.Estimate.moved2`.
    """
    A_blocks, b_blocks, counts = system_blocks
    n = A.shape[1]
    w = block_weights(counts)
    B = w.size
    IF0 = block_influence(A, b, theta_R, 0.0, A_blocks, b_blocks, Hp)  # (B, n)
    a0 = influence_variance(IF0, counts)
    pjj = np.diag(Hp).copy()
    VU = fill.VU
    k = VU.shape[1]
    if deviations is not None and not deviations.matches(A_blocks, VU):
        deviations = None
    dA = A_blocks - A[None] if deviations is None else None
    # streamed or face-split (network size): the noise only for parameters not on the whole line
    cols = np.flatnonzero(~np.asarray(free, bool)) if dA is None and deviations.restricted else None
    AdA = _curvature_noise(A, dA, Hp) if dA is not None else deviations.curvature_noise(A, Hp, cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        D = 2.0 * AdA / np.where(pjj > 0, pjj, 1.0)
    c = w @ (IF0 * D) / (B - 1)
    gam = influence_variance(D, counts)
    bias2 = np.zeros(n)
    noise = np.zeros(n)
    tau_dirs = np.zeros(k)
    if callable(tau):
        tau = tau(np.sqrt(a0))
    if tau is not None and k:
        tau2_par = np.broadcast_to(np.asarray(tau, dtype=float) ** 2, (n,))
        tau2 = (VU * VU).T @ tau2_par + (fill.z_ls**2 + fill.se**2) / fill.attenuation**2
        tau_dirs = np.sqrt(tau2)
        if dA is None:
            noise = deviations.unresolved_noise(A, Hp, tau2, w, cols)
        else:
            noise = _unresolved_noise(A, dA, Hp, VU, tau2, w)
        bias2 = (VU * VU) @ tau2 + noise
    if moved2 is not None:
        bias2 = bias2 + moved2
    ci, bounded = fieller(estimate, a0 + bias2, c, gam, q, free)
    return WeakIntervals(ci, np.sqrt(a0), np.sqrt(bias2), noise, bounded, c, gam, tau, tau_dirs)


def fieller(centre, a, c, gamma, q, free):
    """Intervals (n, 2) ``centre + {t : (1 − q²γ)t² + 2q²ct − q²a ≤ 0}`` and whether each is
    bounded (module docstring); the whole line where ``q²γ ≥ 1`` or ``free``."""
    a2 = 1.0 - q * q * np.asarray(gamma, dtype=float)
    bounded = (a2 > 1e-12) & ~np.asarray(free, dtype=bool)
    b1 = 2.0 * q * q * np.asarray(c, dtype=float)
    c0 = -q * q * np.asarray(a, dtype=float)
    den = np.where(bounded, 2.0 * a2, 1.0)
    disc = np.sqrt(np.maximum(b1 * b1 - 4.0 * a2 * c0, 0.0))
    lo = np.where(bounded, (-b1 - disc) / den, -np.inf)
    hi = np.where(bounded, (-b1 + disc) / den, np.inf)
    return np.column_stack([centre + lo, centre + hi]), bounded
