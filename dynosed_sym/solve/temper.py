"""The resolved fit of a drift not affine in θ, tempered towards the ridge's optimum it started
from, direction by direction, by the mean squared error the move trades
(docs/design-statistics.md §6, "Tempering"; docs/nonaffine.md).

The corrected Gauss–Newton loop (:mod:`.gauss_newton`) moves the estimate from the gradient
search's optimum θ_V (the V-statistic loss with the ridge's λ‖θ‖²) to the resolved estimator's
fixed point θ_U: the U-statistic's correction of the attenuation bias (the global route's
default), or on the local route's V-statistic the removal of λ on the resolved directions.
Either removes a bias and pays for it in variance: along a direction v_i the resolved component
is the ridge's times a gain ≥ 1 whose denominator (a curvature net of its noise, or of λ) is
itself estimated.  Where the drift is not affine the gain grows along the valley the estimate
moves in (a Michaelis–Menten constant K: as K grows the drift turns linear in x and the
curvature along v ∝ K vanishes), so on a data set that puts θ_V far along a flat valley the fixed
point runs much farther: at N = 2000 the default's RMSE was 2.5 times the plain ridge fit's on
``k − v x/(K + x)`` (global route; 1.4 times on the local one, and twice on a toggle switch's
Hill constants at N = 10,000) while every linearised ``t`` called the valley's curvature well
determined (the held-out sweep, stop 41).

Per direction, with ``δ_i = v_iᵀ(θ_U − θ_V)`` and the two estimates' sandwich standard errors
along it, ``s_U,i`` and ``s_V,i`` (each from its own report), take the two as perfectly
correlated (the same data; the move a smooth function of them), so ``d_i = s_U,i − s_V,i`` is
the noise of δ_i and ``δ_i² − d_i²`` estimates the squared bias the move removes.  The blend
``θ_V + w δ_i v_i`` then has the mean squared error ``(1 − w)²(δ_i² − d_i²) + (s_V,i + w d_i)²``,
least at

    w_i = 1 − s_U,i (s_U,i − s_V,i) / δ_i²,   clipped to [0, 1]:

the whole move when the bias it removes is large beside the noise it adds (a well determined
direction: w → 1 as N grows, since δ_i shrinks like s_U,i while d_i shrinks faster), none when
the move is small beside it.  It is continuous in the data (no switch), never beyond either end,
and the part of the move not taken is counted by the intervals as a possible bias (as the
hand-over's, :mod:`.weak`): they stay centred at the estimate and reach the fixed point.
Directions without finite standard errors on both sides keep the move.

Only fits by the corrected Gauss–Newton loop of drifts not affine in θ are tempered (the routes
pass ``temper=False`` for an affine drift fitted with ``Solver(method="gradient")``, whose
optimum is the linear solve's); an affine fit's correction is judged per direction by the
hand-over and the fill (:mod:`.weak`), and its small-N unbiasedness is tested (Lorenz,
N = 300).  ``Solver(temper=False)`` reports the fixed point itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .uncertainty import sandwich_covariance
from .ustat import ridge_at

__all__ = ["Temper", "temper", "temper_weights"]


@dataclass
class Temper:
    """The part of the corrected estimate's move not taken (module docstring).

    Attributes
    ----------
    weights : (h,) w_i of the tempered directions, in [0, 1)
    shift : (n, h) ``θ − θ_U`` along each, ``−(1 − w_i) δ_i v_i`` (the intervals count it as a
        possible bias)
    """

    weights: np.ndarray
    shift: np.ndarray

    def bias2(self):
        """(n,) ``(Σ_i shift_ji)²``: the variance the intervals add for the move not taken — the
        whole gap to the fixed point in each parameter (not the sum of the directions' squares,
        which is smaller where the directions' shifts add up), so that the intervals reach it."""
        gap = self.shift.sum(axis=1)
        return gap * gap

    def note(self, names):
        """The summary's line."""
        moved = np.abs(self.shift).sum(axis=1)
        top = [names[j] for j in np.argsort(-moved)[:3] if moved[j] > 0]
        shares = ", ".join(f"{100 * w:.0f} %" for w in self.weights[:4])
        more = "" if self.weights.size <= 4 else ", …"
        return (
            f"note: along {self.weights.size} direction(s) the resolved estimate's move from the "
            f"ridge's optimum adds more noise than the bias it removes (drift not affine in θ): "
            f"the estimate keeps {shares}{more} of that move (least mean squared error; most "
            f"moved: {', '.join(top)}); bias.sd counts the rest (Solver(temper=False): the "
            "resolved fixed point)"
        )


def temper_weights(delta, s_u, s_v):
    """``w_i = clip(1 − s_U,i(s_U,i − s_V,i)/δ_i², 0, 1)`` (module docstring); 1 where a standard
    error is not finite or δ_i = 0 (nothing to judge, or nothing moved)."""
    delta, s_u, s_v = (np.asarray(a, dtype=float) for a in (delta, s_u, s_v))
    ok = np.isfinite(s_u) & np.isfinite(s_v) & np.isfinite(delta) & (delta != 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 1.0 - s_u * (s_u - s_v) / (delta * delta)
    return np.where(ok, np.clip(w, 0.0, 1.0), 1.0)


def temper(est, system, theta_v, system_v, lam, names=None):
    """The estimate ``est`` of the resolved fixed point (linearisation ``system``) tempered
    towards the ridge's optimum ``theta_v`` (linearisation ``system_v``) by
    :func:`temper_weights` along the directions ``est`` was computed on; unchanged when nothing
    is tempered, for the ridge estimator, or without noise blocks.  The tempered estimate carries
    :class:`Temper` (``est.temper``) and a note naming the parameters most moved (``names``)."""
    theta_v = np.asarray(theta_v, dtype=float)
    if est.estimator != "resolved" or est.directions is None:
        return est
    if system[2] is None:
        return est
    ridge = ridge_at(system_v, theta_v, lam)
    names = list(names) if names is not None else [f"θ{j}" for j in range(theta_v.size)]
    # the two fits' sandwich covariances, as their reports take them (report._attach_uncertainty:
    # the influences at the resolved estimate, each estimator's own bread)
    covs = [
        sandwich_covariance(*sysm[:2], at, lam, *sysm[2:], Hinv=e.bread)
        for sysm, e, at in ((system, est, _resolved(est)), (system_v, ridge, _resolved(ridge)))
    ]
    V = est.directions.V
    delta = V.T @ (est.theta - theta_v)
    with np.errstate(invalid="ignore", over="ignore"):
        s_u, s_v = (np.sqrt(np.einsum("ji,jk,ki->i", V, c, V)) for c in covs)
    w = temper_weights(delta, s_u, s_v)
    part = w < 1.0
    if not part.any():
        return est
    shift = -V[:, part] * ((1.0 - w[part]) * delta[part])[None, :]
    tempered = Temper(w[part], shift)
    theta = est.theta + shift.sum(axis=1)
    notes = [*est.notes, tempered.note(names)]
    # the resolved estimate moves with it (the residual, the sandwich's influences and the
    # estimable combinations are read there); the shift lies along directions with finite
    # standard errors on both sides, the resolved ones
    theta_r = None if est.theta_resolved is None else est.theta_resolved + shift.sum(axis=1)
    return replace(est, theta=theta, theta_resolved=theta_r, temper=tempered, notes=notes)


def _resolved(est):
    """Where the report takes an estimate's sandwich: its resolved estimate, if it has one."""
    return est.theta if est.theta_resolved is None else est.theta_resolved
