"""Honest intervals: what the data cannot separate widens a parameter's interval, or turns it into
an interval for an estimable combination (docs/design-statistics.md, issue 13).

The resolved estimator (:mod:`.ustat`) estimates ``Qθ*`` with the resolution matrix
``Q = V_RV_Rᵀ`` (V_R: the resolved right singular directions, :mod:`.directions`).  Its error in
parameter j is sampling noise (standard error ``SE_j``, the sandwich) plus the *resolution bias*
``−e_jᵀ(I − Q)θ*``, which no amount of data at this resolution reveals.  Under a scale prior
``θ* ~ (0, τ²I)`` that bias has standard deviation ``τ·ρ_j`` with the *loading*

    ρ_j = ‖(I − Q) e_j‖ = ‖row j of V_U‖      (V_U: the unresolved directions),

the quantity the report compares with 0.5 to call a parameter not identifiable.  Hence

* interval: ``θ̂_j ± t_{B−1}·√(SE_j² + τ²ρ_j²)`` (infinite when ρ_j ≥ 0.5, as before);
* when ``τρ_j > SE_j`` the parameter is *determined only in combination*: the estimable
  combination ``Σ_k (Q_jk/Q_jj) θ_k`` is reported with the interval ``(θ̂_j ± t·SE_j)/Q_jj``
  (unbiased for that combination);
* τ is the maximum-likelihood scale of the identified parameters under
  ``θ̂_j ~ N(0, τ² + SE_j²)`` (an empirical-Bayes / random-effects scale: noisy estimates are
  down-weighted automatically), or a user's prior scale (a number, or one per parameter:
  ``bias_sd_j = ‖row j of (I − Q) ∘ τ‖``).

A parameter orthogonal to every unresolved direction (ρ_j = 0) keeps its sandwich interval.

Point estimates of parameters that are not identifiable (ρ_j ≥ 0.5, infinite interval).  The
resolved estimate is 0 along the unresolved directions; for a parameter that lives on them that
number means nothing (Lorenz at N = 300 when the σ direction falls just below the rank
threshold: σ̂ near 0).  They get the empirical-Bayes posterior mean of each unresolved component
instead (:func:`fill_free`): with the least-squares component ẑ_i = v_iᵀAᵀb/σ_i², its
signal-to-noise r_i = σ_i/SE(Av_i) and the prior N(0, τ²),

    E[z_i | data] = ẑ_i · τ²/(τ² + s_i²),   s_i² = Var_sandwich(ẑ_i) + ẑ_i²/(r_i² − 1),

where ẑ_i²/(r_i² − 1) is the uncertainty of the direction's own scale (E σ̂_i² = σ_i² + SE_i²,
so r_i² − 1 estimates its squared signal-to-noise): a pure-noise direction (r_i ≤ 1) keeps 0, a
direction just below the threshold keeps nearly its least-squares value.  Identified parameters
and their intervals are not touched.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ConvergenceWarning, DataError
from .combinations import estimable_combination
from .linear import unit_scale
from .misspecification import block_weights
from .uncertainty import sandwich_covariance

__all__ = [
    "Resolution",
    "honest_intervals",
    "prior_scale_ml",
    "resolution_matrix",
    "check_prior_scale",
    "fill_free",
    "unresolved_noise_variance",
    "IDENTIFIED",
    "COMBINATION",
    "NOT_IDENTIFIABLE",
    "FREE_PROJECTION",
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
    combinations : list of str or None
        The estimable combination of each parameter flagged "only in combination".
    combination_estimate : (n,) its estimate (NaN where not flagged)
    combination_ci : (n, 2) its interval (NaN where not flagged)
    resolution : (n, n) Q
    ci : (n, 2) the honest intervals
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
    se2 = np.asarray(se, dtype=float) ** 2
    keep = np.isfinite(theta) & np.isfinite(se2)
    theta, se2 = theta[keep], se2[keep]
    if theta.size == 0 or not np.any(theta != 0):
        return 0.0, True
    # unit size by a power of two (exact): the search is the same for rescaled parameters
    unit = unit_scale(max(np.abs(theta).max(), np.sqrt(se2.max())))  # (a sum could overflow)
    theta, se2 = theta / unit, se2 / (unit * unit)

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


def honest_intervals(
    theta,
    se,
    V,
    resolved,
    names,
    *,
    level,
    dof,
    prior_scale="ml",
    widen=True,
    t_quantile=None,
    unresolved_noise=None,
):
    """The :class:`Resolution` of one fit (module docstring).

    Parameters
    ----------
    theta : (n,) the estimate (of the resolved estimator when ``widen``)
    se : (n,) sandwich standard errors (inf for parameters that are not identifiable)
    V : (n, n) complete basis of right singular vectors; resolved : (n,) bool
    names : list of str
    level : float; dof : int (Student t degrees of freedom)
    prior_scale : "ml", None, float or (n,) array
        τ (see :func:`check_prior_scale`); None: no widening.
    widen : bool
        False for an estimator whose bias is not the resolution bias (the ridge): loadings are
        reported, intervals are the sandwich ones.
    t_quantile : callable ``(level, dof) -> float``
    unresolved_noise : callable ``tau -> (n,)``, optional
        The variance the unresolved components of θ* add to the estimate's sampling noise under
        the scale prior (:func:`unresolved_noise_variance`); it widens the parameter's and its
        combination's interval alike.
    """
    theta = np.asarray(theta, dtype=float)
    se = np.asarray(se, dtype=float)
    n = theta.size
    resolved = np.asarray(resolved, dtype=bool)
    VU = V[:, ~resolved]
    loading = np.linalg.norm(VU, axis=1) if VU.shape[1] else np.zeros(n)
    free = loading >= FREE_PROJECTION
    Q = resolution_matrix(V, resolved)
    method = converged = None
    tau = None
    if widen and prior_scale is not None:
        if isinstance(prior_scale, str):
            tau, converged = prior_scale_ml(theta[~free], se[~free])
            method = "ml"
            if not converged:
                warnings.warn(
                    "the maximum-likelihood search for the parameters' scale τ (honest intervals) "
                    "did not converge; the interval widths are provisional",
                    ConvergenceWarning,
                    stacklevel=3,
                )
        else:
            tau, method = prior_scale, "given"
    extra = np.zeros(n)
    if tau is None:
        bias_sd = np.zeros(n)
    else:
        IQ = VU @ VU.T
        bias_sd = np.linalg.norm(IQ * np.broadcast_to(tau, (n,))[None, :], axis=1)
        if unresolved_noise is not None and VU.shape[1]:
            extra = np.asarray(unresolved_noise(tau), dtype=float)
            bias_sd = np.sqrt(bias_sd**2 + extra)
    q = t_quantile(level, dof)
    half = q * np.sqrt(se**2 + bias_sd**2)
    half = np.where(free, np.inf, half)
    ci = np.column_stack([theta - half, theta + half])
    status, combos = [], []
    c_est = np.full(n, np.nan)
    c_ci = np.full((n, 2), np.nan)
    for j in range(n):
        if free[j]:
            status.append(NOT_IDENTIFIABLE)
            combos.append(None)
        elif bias_sd[j] > se[j] and extra[j] > COMBINATION_NOISE * se[j] ** 2:
            # the unresolved components put noise into this estimate through the noise of their
            # columns, in proportion to their unknown size: a combination is stated only when
            # that noise is small beside its own (its interval then holds for sizes up to ~2τ)
            status.append(COMBINATION)
            combos.append(None)
        elif bias_sd[j] > se[j]:
            status.append(COMBINATION)
            qjj = Q[j, j]
            combos.append(estimable_combination(Q[j], names, j))
            c_est[j] = theta[j] / qjj
            c_half = q * np.sqrt(
                se[j] ** 2 + extra[j]
            )  # the resolution bias cancels, not the noise
            c_ci[j] = [(theta[j] - c_half) / qjj, (theta[j] + c_half) / qjj]
        else:
            status.append(IDENTIFIED)
            combos.append(None)
    return Resolution(
        loading=loading,
        bias_sd=bias_sd,
        prior_scale=tau,
        prior_scale_method=method,
        prior_scale_converged=converged,
        status=status,
        combinations=combos,
        combination_estimate=c_est,
        combination_ci=c_ci,
        resolution=Q,
        ci=ci,
    )


def unresolved_noise_variance(A, A_blocks, counts, bread, VU, tau):
    """(n,) extra sampling variance of the resolved estimate from the unresolved components of θ*.

    The sandwich is taken at θ̂, whose components along the unresolved directions V_U are 0; the
    truth's are ``z = V_Uᵀθ*``, and the noise of A along them (``ΔA_b V_U z``) moves the resolved
    estimate too — when an unresolved column is pure noise (a parameter the law cannot see, like
    a rotation), by as much as its true value times that noise.  The block influence is affine
    in θ, ``IF_b(θ̂ + V_U z) = IF_b(θ̂) − H⁺ M_b z`` with ``M_b = ΔA_bᵀAV_U + AᵀΔA_bV_U``; under the
    scale prior (z ~ N(0, V_Uᵀ diag τ² V_U)) the expected extra covariance is
    ``Σ_b w_b H⁺ M_b Cov(z) M_bᵀ H⁺ / (B − 1)``, whose diagonal is returned.
    """
    w = block_weights(counts)
    n = A.shape[1]
    tau2 = np.broadcast_to(np.asarray(tau, dtype=float) ** 2, (n,))
    Cz = (VU * tau2[:, None]).T @ VU  # (k, k)
    dA = A_blocks - A[None]  # (B, m, n)
    M = np.einsum("bmn,mk->bnk", dA, A @ VU) + np.einsum("mn,bmk->bnk", A, dA @ VU)
    G = np.einsum("ij,bjk->bik", bread, M)  # (B, n, k): H⁺M_b
    return np.einsum("b,bik,kl,bil->i", w, G, Cz, G) / (w.size - 1)


def fill_free(theta, bread, system, dirs, prior_scale):
    """Empirical-Bayes point estimates of the parameters that are not identifiable (module
    docstring); the others keep the resolved estimate.

    Parameters
    ----------
    theta : (n,) resolved estimate (0 along the unresolved directions)
    bread : (n, n) its bread
    system : (A, b, A_blocks, b_blocks, counts)
    dirs : :class:`~dynosed_sym.solve.directions.Directions`
    prior_scale : "ml", float or (n,) array (None: nothing is filled)

    Returns
    -------
    theta : (n,) array
    tau : float, (n,) array or None
        The scale used (None when nothing was filled).
    converged : bool or None
        Of the maximum-likelihood search for τ.
    """
    A, b, A_blocks, b_blocks, counts = system
    VU = dirs.V[:, ~dirs.resolved]
    loading = np.linalg.norm(VU, axis=1) if VU.shape[1] else np.zeros(theta.size)
    free = loading >= FREE_PROJECTION
    if prior_scale is None or not free.any():
        return theta, None, None
    converged = None
    if isinstance(prior_scale, str):
        cov = sandwich_covariance(A, b, theta, 0.0, A_blocks, b_blocks, counts, bread)
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        tau, converged = prior_scale_ml(theta[~free], se[~free])
    else:
        tau = prior_scale
    tau2 = (VU**2).T @ np.broadcast_to(np.asarray(tau, dtype=float) ** 2, theta.shape)  # per dir.
    sU = dirs.singular_values[~dirs.resolved]
    noise = dirs.noise[~dirs.resolved]
    floor = np.finfo(float).eps * max(A.shape) * (dirs.singular_values[0] if sU.size else 0.0)
    ok = (sU > floor) & (sU > noise)  # r_i > 1: some signal along the direction
    if not ok.any():
        return theta, tau, converged
    Vo, so = VU[:, ok], sU[ok]
    z = (Vo.T @ (A.T @ b)) / so**2  # least-squares components (V-statistic)
    cov = sandwich_covariance(
        A, b, theta + Vo @ z, 0.0, A_blocks, b_blocks, counts, (Vo / so**2) @ Vo.T
    )
    s2 = np.einsum("ki,kl,li->i", Vo, cov, Vo) + z**2 / ((so / noise[ok]) ** 2 - 1.0)
    total = tau2[ok] + s2
    gain = np.divide(tau2[ok], total, out=np.zeros_like(total), where=total > 0)  # 0/0: no prior
    out = theta.copy()
    out[free] = (theta + Vo @ (gain * z))[free]
    return out, tau, converged
