"""Per-parameter resolution: loadings on the unresolved directions, intervals, status, estimable
combinations and how strongly each parameter is identified (docs/design-statistics.md).

The resolved estimator (:mod:`.ustat`) estimates ``Qθ*`` on the resolved directions
(``Q = V_RV_Rᵀ``, :mod:`.directions`) and fills the unresolved components from b
(:mod:`.weak`); its intervals are the profile-Fieller sets of :func:`.weak.weak_intervals`, which
include the resolution bias ``−e_jᵀ(I − Q)θ*`` under a scale τ and are the whole line when the
curvature along the parameter is not determined.  A parameter's *loading*

    ρ_j = ‖(I − Q) e_j‖ = ‖row j of V_U‖

is compared with 0.5 to call it not identifiable (interval: the whole line).  When the resolution
bias dominates its noise (``β_j > SE_j``) the parameter is *determined only in combination*: the
estimable combination ``Σ_k (Q_jk/Q_jj) θ_k`` is stated with the interval
``(θ_R,j ± t·√(SE_j² + noise_j))/Q_jj`` (the resolution bias cancels in it, the noise the
unresolved columns add does not).

τ is the maximum-likelihood scale of the identified parameters under
``θ̂_j ~ N(0, τ² + SE_j²)`` (:func:`prior_scale_ml`; an empirical-Bayes scale), or a user's prior
scale (a number, or one per parameter).

Strength.  A direction's ``t_i = κ̂_i/sd(κ̂_i)`` grows like √N, so ``(q/t_i)²`` is the factor of data
that would resolve it; a parameter needs the largest such factor over the unresolved directions it
loads on (loading share ≥ 1 %).  That point value is as noisy as t_i (whose sampling noise has
standard deviation 1): at t_i = 0.1 it says 600 × where five times the data resolve the direction
(Sel'kov, van der Pol, Lorenz-96 at N = 2000, docs/design-statistics.md §8).  The summary prints
the range of factors that ``t_i ± 1.645`` allows (:func:`data_factor_ranges`): ``≥ k×`` when
t_i ≤ 1.645 (a curvature of 0 is not excluded, so no upper end), ``flat`` when t_i ≤ 0.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ConvergenceWarning, DataError
from .combinations import Combination
from .directions import numerical_floor
from .flat import (  # re-exported: the flat directions' rules were written here first
    LONE_LOADING,
    LONE_SHARE,
    ONE_SIDED_Z,
    RESCUE_P,
    RESCUE_REJECT_P,
    SCALE_SHARE,
    SCALE_T,
    SCALE_TAU,
    carriers_of,
    flat_rescues,
    lone_carriers,
    lone_directions,
    lone_rule,
    open_scale,
    scale_carriers,
    scale_directions,
    whole_line_notes,
)
from .linear import unit_scale
from .weak import fieller, weak_intervals

#: Share of a parameter's unit vector on an unresolved direction below which that direction does
#: not count for the parameter's data factor.
FACTOR_SHARE = 0.01
#: Half-width of the range of a direction's true t that its estimate allows (t is the curvature in
#: units of its own standard error: sampling noise of standard deviation 1; ±1.645: 90 %).
FACTOR_Z = ONE_SIDED_Z

__all__ = [
    "Resolution",
    "sandwich_resolution",
    "weak_resolution",
    "data_factors",
    "data_factor_ranges",
    "direction_factor_ranges",
    "FACTOR_Z",
    "strength_labels",
    "prior_scale_ml",
    "resolution_matrix",
    "check_prior_scale",
    "open_intervals",
    "relabel",
    "IDENTIFIED",
    "COMBINATION",
    "NOT_IDENTIFIABLE",
    "FREE_PROJECTION",
    "SCALE_SHARE",
    "scale_directions",
    "open_scale",
    "flat_rescues",
    "RESCUE_P",
    "RESCUE_REJECT_P",
    "scale_carriers",
    "lone_directions",
    "lone_carriers",
    "whole_line_notes",
    "LONE_SHARE",
    "LONE_LOADING",
    "SCALE_T",
    "SCALE_TAU",
]

IDENTIFIED = "identified"
COMBINATION = "only in combination"
NOT_IDENTIFIABLE = "not identifiable"

#: A parameter whose loading on unresolved directions is at least this is not identifiable.
FREE_PROJECTION = 0.5
#: An estimable combination is stated only when the noise the unresolved components add to it
#: (at the scale τ) is at most this fraction of its own sampling variance.
COMBINATION_NOISE = 0.25


@dataclass
class Resolution:
    """Per-parameter resolution, bias scale, status and estimable combinations.

    Attributes
    ----------
    loading : (n,) ρ_j, the norm of parameter j's unit vector projected on unresolved directions
    bias_sd : (n,) τρ_j, the standard deviation of the resolution bias (zeros when not widened)
    prior_scale : float, (n,) array or None
        τ used (None: intervals not widened).
    prior_scale_method : {"ml", "given", None}
    prior_scale_converged : bool or None
        Whether the maximum-likelihood search for τ met its tolerance.
    status : list of str
        ``"identified"``, ``"only in combination"`` or ``"not identifiable"``.
    combinations : list of (Combination or None)
        The estimable combination of each parameter flagged "only in combination"
        (:class:`~dynosed_sym.solve.combinations.Combination`, with its value and interval).
    combination_estimate : (n,) its estimate (NaN where not flagged)
    combination_ci : (n, 2) its interval (NaN where not flagged)
    resolution : (n, n) Q
    ci : (n, 2) the honest intervals
    bounded : (n,) bool, whether the interval is finite
    data_factor : (n,) factor of data that would resolve every unresolved direction the
        parameter loads on (1: none; inf: no curvature seen along one of them): the point value
        ``(q/t)²``, as noisy as t
    data_factor_range : (n, 2) or None
        Its range from ``t ± FACTOR_Z`` (:func:`data_factor_ranges`; upper end inf when a
        curvature of 0 is not excluded, both inf when none is seen); the labels read it
    strength : list of str, one short label per parameter (:func:`strength_labels`)
    fieller : tuple (c, gamma) or None
        The resolved estimator's profile-Fieller coefficients (:func:`.weak.fieller`), to give
        intervals at other levels.
    scale : (n,) bool or None
        The parameters that carry an unresolved overall scale (:func:`scale_carriers`): their
        intervals are the whole line.
    open_directions : (n, k) or None
        The unresolved directions found open (:func:`open_scale`), None when there are none.
    whole_line : (n,) bool or None
        The parameters whose interval is the whole line at every level (loading ≥ 0.5, the open
        scale's carriers, the lone directions' carriers): the mask the intervals were made with.
    lone : (n,) bool or None
        The parameters that carry a flat direction resting on one or two parameters
        (:func:`lone_carriers`): their intervals are the whole line.
    lone_directions : (n, k) or None
        Those directions, None when there are none.
    """

    loading: np.ndarray
    bias_sd: np.ndarray
    prior_scale: object
    prior_scale_method: str | None
    prior_scale_converged: bool | None
    status: list
    combinations: list
    combination_estimate: np.ndarray
    combination_ci: np.ndarray
    resolution: np.ndarray
    ci: np.ndarray
    bounded: np.ndarray
    data_factor: np.ndarray
    strength: list
    fieller: tuple | None = None
    scale: np.ndarray | None = None
    open_directions: np.ndarray | None = None
    whole_line: np.ndarray | None = None
    data_factor_range: np.ndarray | None = None
    lone: np.ndarray | None = None
    lone_directions: np.ndarray | None = None


def resolution_matrix(V, resolved):
    """Q = V_R V_Rᵀ (n, n) from the complete basis V and the resolved mask."""
    VR = V[:, np.asarray(resolved, dtype=bool)]
    return VR @ VR.T


def check_prior_scale(prior_scale, names):
    """``"ml"``, None, a number ≥ 0, or one number ≥ 0 per parameter (array or {name: value})."""
    n = len(names)
    if prior_scale is None or (isinstance(prior_scale, str) and prior_scale == "ml"):
        return prior_scale
    if isinstance(prior_scale, str):
        raise DataError(f"prior_scale must be 'ml', None or a number, got {prior_scale!r}")
    if isinstance(prior_scale, dict):
        unknown = [k for k in prior_scale if k not in names]
        if unknown:
            raise DataError(f"prior_scale: {unknown[0]!r} is not a parameter ({', '.join(names)})")
        missing = [k for k in names if k not in prior_scale]
        if missing:
            raise DataError(f"prior_scale: no value for parameter {missing[0]!r}")
        prior_scale = [prior_scale[k] for k in names]
    if isinstance(prior_scale, numbers.Real) and not isinstance(prior_scale, bool):
        val = np.array(float(prior_scale))
    else:
        try:
            val = np.asarray(prior_scale, dtype=float)
        except (TypeError, ValueError):
            raise DataError(
                f"prior_scale must be 'ml', None or numbers, got {prior_scale!r}"
            ) from None
        if val.shape != (n,):
            raise DataError(f"prior_scale: expected one value per parameter ({n}), got {val.shape}")
    if not (np.all(np.isfinite(val)) and np.all(val >= 0)):
        raise DataError(f"prior_scale must be finite and non-negative, got {prior_scale!r}")
    return float(val) if val.ndim == 0 else val


def prior_scale_ml(theta, se, xatol=1e-6):
    """τ maximising ``Σ_j log N(θ̂_j; 0, τ² + SE_j²)`` (a bounded search in log τ).

    Returns
    -------
    tau : float
        0 when there is nothing to scale (no parameter, or every θ̂_j = 0).
    converged : bool
    """
    from scipy.optimize import minimize_scalar

    theta = np.asarray(theta, dtype=float)
    se = np.asarray(se, dtype=float)
    keep = np.isfinite(theta) & np.isfinite(se)
    theta, se = theta[keep], se[keep]
    if theta.size == 0 or not np.any(theta != 0):
        return 0.0, True
    # unit size by a power of two (exact) before squaring: the search is the same for rescaled
    # parameters, and squares of values near 1e±160 neither overflow nor underflow
    unit = unit_scale(max(np.abs(theta).max(), np.abs(se).max()))
    theta, se2 = theta / unit, (se / unit) ** 2

    def nll(log_tau):
        v = np.exp(2.0 * log_tau) + se2
        return 0.5 * float(np.sum(np.log(v) + theta**2 / v))

    hi = float(np.log(np.abs(theta).max() + np.sqrt(se2.max()) + 1e-300))
    res = minimize_scalar(
        nll, bounds=(hi - 30.0, hi + 1.0), method="bounded", options={"xatol": xatol}
    )
    tau = float(np.exp(res.x))
    if np.all(se2 > 0):  # the likelihood may be largest at τ = 0 itself (outside the log search)
        nll0 = 0.5 * float(np.sum(np.log(se2) + theta**2 / se2))
        if nll0 <= nll(res.x):
            tau = 0.0
    return tau * unit, bool(res.success)


def data_factors(V, resolved, t, q):
    """(n,) the factor of data each parameter needs for the unresolved directions it loads on
    (module docstring); 1 where it loads on none, inf where one shows no curvature (t ≤ 0)."""
    n = V.shape[0]
    unres = ~np.asarray(resolved, dtype=bool)
    if t is None or not unres.any() or not np.isfinite(q):
        return np.where(np.linalg.norm(V[:, unres], axis=1) > 0, np.inf, 1.0) if n else np.ones(0)
    return _largest_loaded(V, unres, _direction_factors(np.asarray(t)[unres], q))


def _largest_loaded(V, unres, f):
    """(n,) per parameter the largest of the unresolved directions' values ``f`` (k,) over the
    directions it loads on (share ≥ :data:`FACTOR_SHARE`); 1 where it loads on none."""
    share = V[:, unres] ** 2 >= FACTOR_SHARE
    return np.where(share, f[None, :], 1.0).max(axis=1, initial=1.0)


def _direction_factors(tu, q):
    """(k,) ``max((q/t_i)², 1)`` per unresolved direction, inf where it shows no curvature."""
    with np.errstate(divide="ignore"):
        f = np.where(tu > 0, (q / np.where(tu > 0, tu, 1.0)) ** 2, np.inf)
    return np.maximum(f, 1.0)


def data_factor_ranges(V, resolved, t, q):
    """(n, 2) the range of each parameter's factor of data (:func:`data_factors`) that the noise
    of the directions' t allows: per direction ``[(q/(t_i + z))², (q/(t_i − z))²]`` with
    z = :data:`FACTOR_Z` (at least 1; upper end inf for t_i ≤ z, both ends inf for t_i ≤ 0: no
    curvature seen), the largest ends over the directions the parameter loads on (share ≥ 1 %);
    ``[1, 1]`` where it loads on none."""
    unres = ~np.asarray(resolved, dtype=bool)
    if t is None or not unres.any() or not np.isfinite(q):
        f = data_factors(V, resolved, t, q)
        return np.column_stack([f, f])
    ends = direction_factor_ranges(np.asarray(t, dtype=float)[unres], q)
    return np.column_stack([_largest_loaded(V, unres, e) for e in ends.T])


def direction_factor_ranges(tu, q):
    """(k, 2) per unresolved direction: ``[max((q/(t + z))², 1), (q/(t − z))²]`` (module
    docstring), the upper end inf for t ≤ z and both inf for t ≤ 0; upper ≥ lower."""
    z = FACTOR_Z
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(tu > 0, np.maximum((q / (tu + z)) ** 2, 1.0), np.inf)
        hi = np.where(tu > z, (q / np.where(tu > z, tu - z, 1.0)) ** 2, np.inf)
    return np.column_stack([lo, np.maximum(hi, lo)])


def widen_about(centre, ci, S):
    """Intervals (n, 2) widened S-fold about ``centre`` (n,): ``centre + S·(ci − centre)``;
    infinite ends and NaN rows stay as they are."""
    ci = np.asarray(ci, dtype=float)
    if S == 1.0:
        return ci
    centre = np.asarray(centre, dtype=float)[:, None]
    with np.errstate(invalid="ignore"):
        out = centre + S * (ci - centre)
    return np.where(np.isfinite(ci), out, ci)


def widened(res, theta, S):
    """The :class:`Resolution` with its intervals and the estimable combinations' intervals
    widened S-fold about their estimates (the Birge ratio, :func:`.misspecification.birge_ratio`)
    and its strength labels from the widened intervals; which intervals are bounded does not
    change."""
    if S == 1.0:
        return res
    ci = widen_about(theta, res.ci, S)
    c_ci = widen_about(np.nan_to_num(res.combination_estimate), res.combination_ci, S)
    combos = [
        None if c is None else replace(c, interval=tuple(c_ci[j]))
        for j, c in enumerate(res.combinations)
    ]
    return replace(
        res,
        ci=ci,
        combination_ci=c_ci,
        combinations=combos,
        strength=strength_labels(
            theta, ci, res.data_factor if res.data_factor_range is None else res.data_factor_range
        ),
    )


def strength_labels(theta, ci, data_factor):
    """One label per parameter: ``yes ±p%`` (finite interval, half-width p % of |θ̂|; ``yes ±w``
    when θ̂ = 0); for an unbounded one from its factor of data, ``(n, 2)`` ranges
    (:func:`data_factor_ranges`) or ``(n,)`` values: ``no (≈a–b× N)`` (between a and b times the
    data would resolve it), ``no (≥a× N)`` (at least a times; the upper end is open), ``no (≈a× N)``
    or ``no (flat)`` (no curvature seen along it at this N)."""
    f = np.asarray(data_factor, dtype=float)
    ranges = np.maximum(f.reshape(-1, 2) if f.ndim == 2 else np.column_stack([f, f]), 1.0)
    out = []
    for th, (lo, hi), (f_lo, f_hi) in zip(theta, ci, ranges):
        if np.isfinite(lo) and np.isfinite(hi):
            half = 0.5 * (hi - lo)
            out.append(f"yes ±{100 * half / abs(th):.2g}%" if th != 0 else f"yes ±{half:.2g}")
        elif not np.isfinite(f_lo):
            out.append("no (flat)")
        elif not np.isfinite(f_hi):
            out.append(f"no (≥{f_lo:.2g}× N)")
        elif f"{f_hi:.2g}" != f"{f_lo:.2g}":
            out.append(f"no (≈{f_lo:.2g}–{f_hi:.2g}× N)")
        else:
            out.append(f"no (≈{f_lo:.2g}× N)")
    return out


def relabel(strength, theta, ci, before, ranges, opened=None):
    """The strength labels after the intervals changed from ``before`` to ``ci`` (a local fit's
    smoothing bias, a profile): a parameter whose interval is the same keeps its label, another
    gets :func:`strength_labels`' — or ``opened`` where the change made it infinite."""
    fresh = strength_labels(theta, ci, ranges)
    out = []
    for j, label in enumerate(strength):
        if before is not None and np.array_equal(ci[j], before[j]):
            out.append(label)
        elif opened is not None and not np.isfinite(ci[j]).all():
            out.append(opened)
        else:
            out.append(fresh[j])
    return out


def _free(V, resolved):
    VU = V[:, ~np.asarray(resolved, dtype=bool)]
    loading = np.linalg.norm(VU, axis=1) if VU.shape[1] else np.zeros(V.shape[0])
    return VU, loading, loading >= FREE_PROJECTION


def sandwich_resolution(theta, se, V, resolved, *, q, t=None, t_resolve=np.inf):
    """The :class:`Resolution` of an estimator whose bias is not the resolution bias (the ridge):
    sandwich intervals ``θ̂ ± q·SE`` (the whole line for parameters that are not identifiable),
    loadings reported, no combinations."""
    theta = np.asarray(theta, dtype=float)
    se = np.asarray(se, dtype=float)
    n = theta.size
    _, loading, free = _free(V, resolved)
    half = np.where(free, np.inf, q * se)
    ci = np.column_stack([theta - half, theta + half])
    factor = data_factors(V, resolved, t, t_resolve)
    ranges = data_factor_ranges(V, resolved, t, t_resolve)
    return Resolution(
        loading=loading,
        bias_sd=np.zeros(n),
        prior_scale=None,
        prior_scale_method=None,
        prior_scale_converged=None,
        status=[NOT_IDENTIFIABLE if f else IDENTIFIED for f in free],
        combinations=[None] * n,
        combination_estimate=np.full(n, np.nan),
        combination_ci=np.full((n, 2), np.nan),
        resolution=resolution_matrix(V, resolved),
        ci=ci,
        bounded=np.isfinite(ci).all(axis=1),
        data_factor=factor,
        strength=strength_labels(theta, ci, ranges),
        whole_line=free,
        data_factor_range=ranges,
    )


def _scale(prior_scale, theta, se, free):
    """(τ, method, converged) of the intervals (module docstring); warns when the search for the
    maximum-likelihood τ did not converge."""
    if prior_scale is None:
        return None, None, None
    if not isinstance(prior_scale, str):
        return prior_scale, "given", None
    keep = ~free & np.isfinite(se)
    tau, converged = prior_scale_ml(theta[keep], se[keep])
    if not converged:
        warnings.warn(
            "the maximum-likelihood search for the parameters' scale τ (honest intervals) did not "
            "converge; the interval widths are provisional",
            ConvergenceWarning,
            stacklevel=4,
        )
    return tau, "ml", converged


def weak_resolution(system, estimate, names, *, q, prior_scale="ml", rescue=None):
    """The :class:`Resolution` of the resolved estimator: profile-Fieller intervals
    (:func:`~dynosed_sym.solve.weak.weak_intervals`) centred at the filled estimate, the status
    and estimable combinations of the module docstring.

    Parameters
    ----------
    system : (A, b, A_blocks, b_blocks, counts)
    estimate : :class:`~dynosed_sym.solve.ustat.Estimate` with ``fill`` and ``directions``
    names : list of str
    q : float, the intervals' Student-t quantile
    prior_scale : "ml", float, (n,) array or None (None: no resolution bias in the intervals)
    rescue : callable ``(along, size) -> (p, component)`` or None
        The misspecification test profiled along one direction, given when the plain test
        rejected (:func:`flat_rescues`).
    """
    A, b, A_blocks, b_blocks, counts = system
    dirs = estimate.directions
    V, resolved = dirs.V, dirs.resolved
    theta, theta_R = estimate.theta, estimate.theta_resolved
    VU, loading, free = _free(V, resolved)
    blocks = (A_blocks, b_blocks, counts)
    found = {}

    def scale(se):
        found["tau"] = _scale(prior_scale, theta, se, free)
        return found["tau"][0]

    wk = weak_intervals(
        A,
        b,
        theta_R,
        theta,
        blocks,
        estimate.bread,
        estimate.fill,
        scale,
        q,
        free,
        deviations=estimate.deviations,
        moved2=estimate.moved2(),
    )
    se = wk.se
    tau, method, converged = found["tau"]
    t_u = None if dirs.t is None else np.asarray(dirs.t)[~np.asarray(resolved, dtype=bool)]
    rescued = None
    if rescue is not None and not free.all():  # (a rescue only opens intervals: none is left)
        s_u = dirs.singular_values[~np.asarray(resolved, dtype=bool)]
        live = s_u > numerical_floor(dirs.singular_values, *A.shape)
        rescued = flat_rescues(rescue, VU, t_u, tau, live=live)
    open_ = open_scale(theta, VU, t_u, tau, rescued)
    carriers = carriers_of(VU, open_)
    if method == "ml":  # (τ given: it bounds the lone directions' components too)
        lone, widen, VU_lone = lone_rule(VU, t_u, tau)
    else:
        lone, widen, VU_lone = np.zeros_like(carriers), np.zeros(carriers.shape), VU[:, :0]
    lone = lone & ~carriers & ~free
    widen = widen * ~(carriers | lone | free)
    if ((carriers | lone) & ~free).any() or widen.any():  # open scale, lone direction
        free = free | carriers | lone
        bias_sd = np.sqrt(wk.bias_sd**2 + widen**2)
        ci, bounded = fieller(theta, se**2 + bias_sd**2, wk.c, wk.gamma, q, free)
        wk = replace(wk, ci=ci, bounded=bounded, bias_sd=bias_sd)
    Q = resolution_matrix(V, resolved)
    # the status reads the unresolved directions' part of β_j: the hand-over's and the tempering's
    # moves, also in β_j, are not combinations the data leave open
    moved2 = estimate.moved2()
    unres_sd = np.sqrt(np.maximum(wk.bias_sd**2 - moved2, 0.0))
    status, combos, c_est, c_ci = _statuses(wk, se, unres_sd, free, lone, theta_R, Q, names, q)
    factor = data_factors(V, resolved, dirs.t, dirs.threshold)
    ranges = data_factor_ranges(V, resolved, dirs.t, dirs.threshold)
    if carriers.any() and t_u is not None:  # the open scale's own factor of data
        f_scale = _direction_factors(t_u, dirs.threshold)[open_].max()
        factor = np.where(carriers, np.maximum(factor, f_scale), factor)
        r_scale = direction_factor_ranges(t_u, dirs.threshold)[open_].max(axis=0)
        ranges = np.where(carriers[:, None], np.maximum(ranges, r_scale[None, :]), ranges)
    return Resolution(
        loading=loading,
        bias_sd=wk.bias_sd,
        prior_scale=tau,
        prior_scale_method=method,
        prior_scale_converged=converged,
        status=status,
        combinations=combos,
        combination_estimate=c_est,
        combination_ci=c_ci,
        resolution=Q,
        ci=wk.ci,
        bounded=wk.bounded,
        data_factor=factor,
        data_factor_range=ranges,
        strength=strength_labels(theta, wk.ci, ranges),
        fieller=(wk.c, wk.gamma),
        scale=carriers,
        open_directions=VU[:, open_] if carriers.any() else None,
        whole_line=free,
        lone=lone,
        lone_directions=VU_lone if lone.any() else None,
    ), se


def _statuses(wk, se, unres_sd, free, lone, theta_R, Q, names, q):
    """Status, estimable combination, its estimate and interval of every parameter
    (:func:`weak_resolution`; the module docstring)."""
    n = se.size
    status, combos = [], []
    names = tuple(str(nm) for nm in names)  # shared by every combination stated
    c_est = np.full(n, np.nan)
    c_ci = np.full((n, 2), np.nan)
    for j in range(n):
        # a lone direction's carrier keeps its estimable combination (its interval: the whole line)
        in_combination = unres_sd[j] > se[j] or lone[j]
        if not lone[j] and (free[j] or not wk.bounded[j]):
            status.append(NOT_IDENTIFIABLE)
            combos.append(None)
        elif in_combination and wk.noise[j] > COMBINATION_NOISE * se[j] ** 2:
            # the unresolved components put noise into this estimate in proportion to their
            # unknown size: a combination is stated only when that noise is small beside its own
            status.append(COMBINATION)
            combos.append(None)
        elif in_combination:
            status.append(COMBINATION)
            c_est[j] = theta_R[j] / Q[j, j]
            half = q * np.sqrt(se[j] ** 2 + wk.noise[j])
            c_ci[j] = [(theta_R[j] - half) / Q[j, j], (theta_R[j] + half) / Q[j, j]]
            combos.append(
                Combination(Q[j], names, "estimable", pivot=j, value=c_est[j], interval=c_ci[j])
            )
        else:
            status.append(IDENTIFIED)
            combos.append(None)
    return status, combos, c_est, c_ci


def open_intervals(rep, label):
    """Every interval of the report ``rep`` the whole line: ``ci``, ``whole_line``, the status
    (not identifiable, no combination or its interval) and the strength ``label`` of every
    parameter (a runaway search, :mod:`.report`; a local fit its kernel may decide,
    :func:`dynosed_sym.routes.scores.bandwidth.open_every_interval`)."""
    n = len(rep.param_names)
    rep.unique = False
    rep.free_params = list(rep.param_names)
    if rep.ci is not None:
        rep.ci = np.column_stack([np.full(n, -np.inf), np.full(n, np.inf)])
    if rep.status is not None:
        rep.status = [NOT_IDENTIFIABLE] * n
        rep.combinations = [None] * n
        rep.combination_estimate = np.full(n, np.nan)
        rep.combination_ci = np.full((n, 2), np.nan)
    if rep.strength is not None:
        rep.strength = [label] * n
    rep.whole_line = np.ones(n, dtype=bool)
