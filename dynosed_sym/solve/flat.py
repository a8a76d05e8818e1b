"""Flat unresolved directions: which of them leave the parameters that load on them unbounded.

The resolved estimator's intervals size the component of θ* along an unresolved direction by the
scale τ of the identified estimates (:mod:`.intervals`).  Along a direction whose curvature the
data do not show (``t_i ≤`` :data:`SCALE_T`) nothing else bounds that component, and τ does not
either when

* the direction is the estimate's own — the drift's overall scale (:func:`scale_carriers`,
  :func:`open_scale`, :func:`flat_rescues`), or
* it rests on one or two parameters, whose values the other estimates say nothing about
  (:func:`lone_carriers`).

Their carriers get the whole line — for a lone direction those loading ≥ :data:`LONE_LOADING`
on it, the others a bias of :data:`LONE_TAU` times τ (:func:`lone_widening`); both only when τ
is estimated, not given.  :func:`whole_line_notes` writes what the summary says.
"""

from __future__ import annotations

import numpy as np

from .combinations import Combination

__all__ = [
    "scale_directions",
    "scale_carriers",
    "open_scale",
    "flat_rescues",
    "lone_directions",
    "lone_carriers",
    "lone_rule",
    "lone_loading",
    "whole_line_notes",
    "carriers_of",
    "SCALE_SHARE",
    "SCALE_TAU",
    "SCALE_T",
    "RESCUE_P",
    "RESCUE_REJECT_P",
    "LONE_SHARE",
    "LONE_LOADING",
    "LONE_TAU",
    "lone_widening",
    "ONE_SIDED_Z",
]

#: One-sided 5 % quantile of the standard normal (a curvature of 0 not excluded below it).
ONE_SIDED_Z = 1.6448536269514722
#: An unresolved direction carrying more than this share of the estimate's squared norm is the
#: drift's overall scale (:func:`scale_carriers`).
SCALE_SHARE = 0.5
#: ... and whose component exceeds this many times the scale τ of the identified estimates.
SCALE_TAU = 2.0
#: Largest t = κ̂/sd(κ̂) of a scale direction whose curvature counts as not seen (one-sided 5 %,
#: :func:`scale_carriers`): the lower end of the data-factor range, a curvature of 0 not excluded.
SCALE_T = ONE_SIDED_Z
#: A flat direction rescues a rejected model when the test profiled along it has at least this
#: p-value (the fit's consistency level, :data:`~dynosed_sym.solve.report.CONSISTENCY_P`).
RESCUE_P = 0.01
#: ... and only when the test at the estimate rejects strongly, p below this: the test's size is
#: imperfect at small N (the Stuart–Landau oscillator at N = 2000 rejects 3 of 20 correct fits at
#: p ~ 10⁻³), and a mild rejection is no evidence of an attenuated scale (Selkov: p < 10⁻¹²).
RESCUE_REJECT_P = 1e-6
#: A flat unresolved direction rests on one or two parameters when ``Σ_j V_ji⁴`` is at least this
#: (its participation ratio ``1/Σ_j V_ji⁴`` below ≈ 1.8; :func:`lone_carriers`).  Not ½: an even
#: split between two parameters sits at ½ exactly (the 2-D OU's M12 − M21 with Σ = I), where
#: the columns' noise would decide the side, and the diagonal's tilted loadings then widened
#: intervals that were calibrated (``test_exact_ou_coverage_of_honest_intervals``).
LONE_SHARE = 0.55
#: ... and a parameter carries it when its loading on such directions is at least this.
LONE_LOADING = 0.1
#: Below that loading the direction's component is sized at this many times τ
#: (:func:`lone_widening`).
LONE_TAU = 10.0


def scale_directions(theta, VU, tau=None):
    """(k,) bool: the unresolved directions that are the estimate's own (:func:`scale_carriers`):
    holding more than :data:`SCALE_SHARE` of its squared norm, ``(v_iᵀθ̂)² > SCALE_SHARE·‖θ̂‖²``,
    with a component larger than :data:`SCALE_TAU` times the scale τ of the identified
    estimates (when τ is known) — a component at τ's size is what any direction may carry (the
    ridge's noise along a structurally null direction), not a sign that the truth lies along it."""
    theta = np.asarray(theta, dtype=float)
    norm2 = float(theta @ theta)
    if VU.shape[1] == 0 or not np.isfinite(norm2) or norm2 <= 0.0:
        return np.zeros(VU.shape[1], dtype=bool)
    z = VU.T @ theta
    out = z * z > SCALE_SHARE * norm2
    if tau is not None and np.all(np.isfinite(tau)):
        out &= np.abs(z) > SCALE_TAU * float(np.max(tau))
    return out


def scale_carriers(theta, VU, t_unresolved, tau=None):
    """(n,) bool: the parameters that carry the drift's overall scale when the data leave it open.

    An unresolved direction v_i holding most of the estimate (:func:`scale_directions`) is the
    estimate's own direction: the data do not fix
    how large θ is (an oscillator whose stationary law keeps its shape when the drift is scaled,
    FitzHugh–Nagumo or Selkov at small N).  The bias a wrong scale puts into parameter j is
    ``V_ji·Δz_i``.  The least-squares component along v_i is attenuated by the share
    ``κ_i/σ_i²`` of its curvature that is signal, and when the curvature is not seen at all —
    ``t_i = κ̂_i/sd(κ̂_i) ≤`` :data:`SCALE_T`, one-sided 5 % — that share has no lower bound: Δz_i
    is not bounded by the data, and the scale τ drawn from the resolved parameters says nothing
    about it (they are ≈ 0 when the truth lies along v_i).  Every parameter that loads on such a
    direction (``|V_ji| > 10⁻⁸``) then gets the whole line.  With ``t_i > SCALE_T`` the intervals
    size the bias by the attenuation (:mod:`.weak`).  ``t_unresolved`` None (no noise estimate):
    the curvature is not seen.
    """
    return carriers_of(VU, open_scale(theta, VU, t_unresolved, tau))


def open_scale(theta, VU, t_unresolved, tau=None, rescued=None):
    """(k,) bool: the unresolved directions whose curvature is not seen, ``t_i ≤`` :data:`SCALE_T`
    (all of them when ``t_unresolved`` is None), and that either are the estimate's own
    (:func:`scale_directions`) or rescue a rejected model (``rescued``, from
    :func:`flat_rescues`).

    The second catches a fully attenuated estimate: at small N the column noise swamps the
    curvature of the drift's overall scale, the least-squares component along it is ≈ 0 and so is
    every resolved estimate (Selkov at N = 5000: θ̂ ≈ 0.03 against a truth of norm 1.8, the
    direction holding 22 % of the estimate).  The data reject that small a drift — the residual
    at the estimate is 11 × its noise, p < 10⁻¹² — while along v_i a larger drift fits within the
    noise it carries (p = 0.47): the component along v_i is not 0 and not bounded, and the scale
    τ drawn from the attenuated estimates would size it at 1 % of the truth's."""
    flat = _flat(VU, t_unresolved)
    own = scale_directions(theta, VU, tau)
    if rescued is not None:
        own = own | np.asarray(rescued, dtype=bool)
    return own & flat


def flat_rescues(test, VU, t_unresolved, tau=None, live=None):
    """(k,) bool: the flat unresolved directions (``t_i ≤`` :data:`SCALE_T`) along which the
    misspecification test, profiled, no longer rejects (p ≥ :data:`RESCUE_P`) at a component
    larger than :data:`SCALE_TAU` times the scale τ of the identified estimates
    (:func:`open_scale`; a component of τ's size is no sign that the truth lies along v_i, as in
    :func:`scale_directions`).

    ``test(along, size) -> (p, component)`` runs the test profiled along the (n, 1) direction
    ``along`` (:func:`~dynosed_sym.solve.misspecification.profile_along`) and gives the
    estimate's component along it where the test is taken (it may skip the p-value when that
    component is at most ``size``); called only on flat directions above the floating-point floor
    (``live``: a structurally null direction's A v is rounding, and any component along it
    "fits"), and only by a caller whose plain test rejected.  A flat direction absorbs a
    misspecified model's residual too: what this opens is the intervals, never the verdict."""
    k = VU.shape[1]
    flat = _flat(VU, t_unresolved)
    if live is not None:
        flat &= np.asarray(live, dtype=bool)
    size = 0.0 if tau is None or not np.all(np.isfinite(tau)) else SCALE_TAU * float(np.max(tau))
    out = np.zeros(k, dtype=bool)
    for i in np.flatnonzero(flat):
        p, z = test(VU[:, [i]], size)
        out[i] = p >= RESCUE_P and abs(z) > size
    return out


def lone_directions(VU, t_unresolved):
    """(k,) bool: the flat unresolved directions (``t_i ≤`` :data:`SCALE_T`) that rest on one or
    two parameters, ``Σ_j V_ji⁴ ≥`` :data:`LONE_SHARE`.

    The resolution bias sizes the component of θ* along an unresolved direction v by the scale
    τ of the identified estimates, ``v_iᵀθ* ~ N(0, τ²)``: a sum over many parameters of τ's size
    (a network's W, sparse or not) is of that size whatever the direction.  A direction that
    rests on one or two parameters has as its component essentially *their* values, and the
    other parameters of a model say nothing about those: rates of one model differ by factors,
    and the parameter the stationary law does not show (a rotation, a time scale) is the one
    whose size is least tied to the rest.  Where the curvature along v is not seen either, no
    bound on that component remains (:func:`open_scale`'s argument, for a direction that is
    not the estimate's own).  Found on a Stuart–Landau oscillator with shear
    (``calibration_breaks9.sl_shear``): the flat direction 0.86·w + 0.52·q with τ ≈ 1 from
    a, b ≈ 1 against a true component of 2.2 left q's interval missing q = 1 in 11 of 20
    simulated and 6 of 20 diffrax data sets at N = 10,000 (the table at c692836)"""
    VU = np.asarray(VU, dtype=float)
    if VU.shape[1] == 0:
        return np.zeros(0, dtype=bool)
    return _flat(VU, t_unresolved) & ((VU**4).sum(axis=0) >= LONE_SHARE)


def lone_loading(VU_lone):
    """(n,) each parameter's loading on the given lone directions (the columns of ``VU_lone``,
    :func:`lone_directions`' selection; zeros when there are none)."""
    VU_lone = np.asarray(VU_lone, dtype=float)
    if VU_lone.shape[1] == 0:
        return np.zeros(VU_lone.shape[0])
    return np.linalg.norm(VU_lone, axis=1)


def lone_carriers(VU, t_unresolved):
    """(n,) bool: the parameters whose loading on the :func:`lone_directions` is at least
    :data:`LONE_LOADING`; their intervals are the whole line (a smaller loading has its bias
    sized at :data:`LONE_TAU` times τ instead, :func:`lone_widening`)."""
    return lone_rule(VU, t_unresolved)[0]


def lone_rule(VU, t_unresolved, tau=None):
    """The lone-direction rule on the unresolved directions ``VU`` (n, k) with curvature t's
    ``t_unresolved`` (None: none seen) and the scale ``tau``: (carriers (n,) bool — the whole
    line, :func:`lone_carriers` —, widening (n,) — the smaller loadings' extra bias,
    :func:`lone_widening`, zeros without τ —, the lone directions' columns (n, k'))."""
    VU = np.asarray(VU, dtype=float)
    VU_lone = VU[:, lone_directions(VU, t_unresolved)]
    return lone_loading(VU_lone) >= LONE_LOADING, lone_widening(VU_lone, tau), VU_lone


def lone_widening(VU_lone, tau):
    """(n,) the bias standard deviation a lone direction's component adds to the parameters
    loading on it below :data:`LONE_LOADING` (``VU_lone``: the :func:`lone_directions`' columns):
    the component sized at :data:`LONE_TAU` times τ instead of τ,
    ``ρ_j·τ_j·√(LONE_TAU² − 1)`` beside the τ-sized part already in β_j (ρ_j: the loading on
    them).  A small loading is mostly the tilt the noisy columns give the estimated direction,
    yet it carries the component into the estimate all the same (``θ̂_j`` estimates
    ``(Qθ*)_j = θ*_j − Σ_i V_ji·v_iᵀθ*``): on a 2-D OU with M12 = 10 against entries of size 1,
    M21 loading 0.02 had a 99 % interval [0.08, 0.31] around a truth of 0.  Opening every such
    parameter would open nearly all of them (on the 10-gene network with decay rates, every
    parameter loads above 10⁻⁸ on a lone direction of one parameter); an order of magnitude of
    τ is the assumption instead, and the summary's bias.sd carries it."""
    rho = lone_loading(VU_lone)
    tau = np.broadcast_to(np.asarray(tau, dtype=float), rho.shape)
    out = rho * np.where(np.isfinite(tau), tau, 0.0) * np.sqrt(LONE_TAU**2 - 1.0)
    return np.where(rho < LONE_LOADING, out, 0.0)


def whole_line_notes(names, scale, lone, lone_dirs):
    """The summary's notes on parameters given the whole line for an open scale (``scale``) or a
    flat direction resting on one or two parameters (``lone``, with those directions)."""
    out = []
    if scale is not None and np.any(scale):
        carriers = ", ".join(n for n, f in zip(names, scale) if f)
        out.append(
            "the data do not determine the drift's overall scale: along an unresolved direction "
            "with no curvature seen, the estimate's component is not bounded by the data; the "
            f"parameters that carry it ({carriers}) get the whole line (only their ratios along "
            "it are constrained); more data, or a parameter fixed by knowledge, resolves it"
        )
    if lone is not None and np.any(lone):
        carriers = ", ".join(n for n, f in zip(names, lone) if f)
        dirs = "; ".join(str(Combination(tuple(map(float, v)), tuple(names))) for v in lone_dirs.T)
        out.append(
            f"no curvature seen along {dirs}, which rests on one or two parameters: its size is "
            "theirs, and the scale τ of the other estimates does not bound it; the parameters "
            f"loading on it ({carriers}) get the whole line, those loading less a bias of ten "
            "times τ (a prior_scale= from knowledge bounds it; more data, unless the direction "
            "is structurally free)"
        )
    return out


def _flat(VU, t_unresolved):
    """(k,) bool: the unresolved directions whose curvature is not seen, ``t_i ≤`` :data:`SCALE_T`
    (all of them when ``t_unresolved`` is None: no noise estimate)."""
    if t_unresolved is None:
        return np.ones(VU.shape[1], dtype=bool)
    return ~(np.asarray(t_unresolved, dtype=float) > SCALE_T)


def carriers_of(VU, open_):
    """(n,) bool: the parameters loading on any of the open directions (``|V_ji| > 10⁻⁸``)."""
    return (np.abs(VU[:, open_]) > 1e-8).any(axis=1)
