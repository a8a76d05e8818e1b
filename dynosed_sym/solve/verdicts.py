"""The misspecification test at the points a report needs besides its verdict's.

The verdict's own test is :func:`.misspecification.verdict_test` (taken in
:func:`.report.analyse`).  Here: the test at the Tikhonov solution profiled along given
directions (:func:`profiled_test`) — along a flat direction for the intervals' flat rescue
(:func:`profiled_p`, :func:`.flat.flat_rescues`) and along the open scale for the summary's
note (:func:`profile_open_scale`) — and whether the unprofiled test at the Tikhonov solution
rejects strongly, the rescue's trigger (:func:`rejects_strongly`).  ``rep`` is the
:class:`~.report.IdentifiabilityReport` being built, ``system`` its
``(A, b, A_blocks, b_blocks, counts)``, ``estimate`` the :class:`~.ustat.Estimate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .directions import numerical_floor
from .flat import RESCUE_REJECT_P, open_scale, scale_directions
from .intervals import widen_about
from .misspecification import (
    PROFILE_MAX_DIRECTIONS,
    TailProbability,
    block_weights,
    misspecification_profile,
    residual_deviations,
)

__all__ = [
    "profiled_test",
    "profiled_p",
    "rejects_strongly",
    "profile_open_scale",
    "verdict_open_scale",
    "profile_unresolved",
    "UnresolvedTest",
    "settle_verdict",
    "unresolved_line",
    "open_scale_line",
    "NOISE_INFLATION_MAX",
]

#: Largest factor by which the residual's block noise (variance) at the point where the test
#: profiled along every direction does not reject may exceed its noise at the Tikhonov solution
#: for the rejection to be called undetermined (:func:`profile_unresolved`): 25, a standard
#: deviation 5 times as large.  A θ that fits only by making the moments that much noisier fits
#: by noise, not by its drift: the rotation misfit along its symmetry needs 231 to 9·10⁵ at
#: N = 2000, 1.4·10⁴ to 3·10⁹ at 20,000; Stuart–Landau's attenuated rotation needed 6.9 to 102
#: (``python -m dynosed_sym.apps.bench --only verdicts``, its ``noise×`` column).
NOISE_INFLATION_MAX = 25.0


@dataclass(frozen=True)
class UnresolvedTest:
    """The misspecification test profiled along every direction (:func:`profile_unresolved`),
    kept as the report's ``misspec_unresolved`` wherever it was taken.

    Attributes
    ----------
    stat, p_value, p_value_bound : the test at θ° (p an upper bound when ``p_value_bound``)
    theta : (n,) θ°, the point where the profiled statistic is smallest
    noise_ratio : the residual's block noise at θ° over its noise at the Tikhonov solution
    outside : tuple of int, the parameters whose interval from the sampling noise excludes θ°
    undetermined : whether it made the verdict "undetermined" (p ≥ the level, nothing outside,
        ``noise_ratio`` ≤ :data:`NOISE_INFLATION_MAX`)
    """

    stat: float
    p_value: float
    p_value_bound: bool
    theta: np.ndarray
    noise_ratio: float
    outside: tuple
    undetermined: bool


def profiled_test(rep, system, estimate, along, p_wanted=None):
    """(stat, p, h, z): the misspecification test at the Tikhonov solution profiled along
    ``along`` (n, k) (:func:`.misspecification.profile_along`; p None where ``p_wanted(z)`` is
    False; ``along=None``: the test at the Tikhonov solution itself)."""
    A, b, A_blocks, b_blocks, counts = system
    grouping = rep._grouping
    return misspecification_profile(
        A,
        b,
        estimate.theta_tikhonov,
        rep.lam,
        A_blocks,
        b_blocks,
        counts,
        rep.rank,
        None if grouping is None else grouping.dof,
        U=rep._left,
        along=along,
        p_wanted=p_wanted,
    )


def profiled_p(rep, system, estimate):
    """``(along, size) -> (p, component)``: the profiled test's p-value and the component along
    the direction where it is taken (:func:`.flat.flat_rescues`; p = 0, without its
    integral, when the component is at most ``size`` or not finite — a limit |z| → ∞ is no
    component the data point to)."""

    def test(along, size):
        base = float(along[:, 0] @ estimate.theta_tikhonov)  # the component z is added to

        def beyond(z):
            return bool(np.isfinite(base + z[0]) and abs(base + z[0]) > size)

        _, p, _, z = profiled_test(rep, system, estimate, along, p_wanted=beyond)
        return (0.0 if p is None else p.value), base + float(z[0])

    return test


def rejects_strongly(rep, system, estimate):
    """Whether the test at the Tikhonov solution rejects at ``RESCUE_REJECT_P`` — the flat
    rescue's trigger, taken where it was derived (the verdict's test may have been profiled
    along the resolved directions: :func:`.misspecification.verdict_test`)."""
    if rep.p_value is None:
        return False
    if not rep.misspec_profiled:
        return rep.p_value < RESCUE_REJECT_P
    _, p, _, _ = profiled_test(rep, system, estimate, None)  # along nothing: the plain test
    return p.value < RESCUE_REJECT_P


def profile_open_scale(rep, system, estimate, resolved, along, level, tau):
    """The verdict where the report leaves the drift's scale open (``along`` (n, k), the open
    directions) and its test rejects (p < ``level``).

    At an attenuated estimate the test's noise misses what a larger drift carries (Selkov at
    N = 5000: p < 1e-12 at the estimate, 0.47 profiled), so the test is profiled along the open
    directions as well as the ``resolved`` ones (n, r) its own test is profiled along (only
    along the open ones when together they are more than
    :data:`~.misspecification.PROFILE_MAX_DIRECTIONS`), kept as ``misspec_open_scale``.  A flat
    direction absorbs any residual by the noise a large component along it carries — a
    misspecified model's too — and a direction the law does not depend on (a symmetry) is flat
    whatever N, so the profile alone decides nothing.  The drift's overall scale is never such
    a symmetry (scaling θ with D fixed changes the stationary law): where an open direction is
    the estimate's own (:func:`.flat.scale_directions`, with the scale ``tau``: the report's
    τ, or None for :func:`verdict_open_scale`) and the test
    profiled along the resolved directions and the own ones does not reject, the verdict is
    neither: ``consistent`` becomes None, the report's ``verdict`` "undetermined".  Otherwise
    the rejection stands (docs/design-statistics.md §7)."""
    if rep.p_value is None or rep.consistent is not False:
        return
    own = along[:, scale_directions(estimate.theta, along, tau)]
    test_along = own if own.shape[1] else along
    both = np.column_stack([resolved, test_along])
    stat, p, _, _ = profiled_test(
        rep, system, estimate, both if both.shape[1] <= PROFILE_MAX_DIRECTIONS else test_along
    )
    rep.misspec_open_scale = (stat, p.value, p.bound)
    if own.shape[1] and p.value >= level:
        rep.consistent = None


def settle_verdict(rep, system, dirs, estimate, open_directions, level):
    """The verdict after the intervals (``open_directions``: the report's open scale, or None):
    a rejection that rests on the open scale (:func:`profile_open_scale`, or
    :func:`verdict_open_scale` where the intervals see none) or on the attenuation along the
    unresolved directions (:func:`profile_unresolved`) becomes "undetermined"."""
    if open_directions is not None:
        resolved = dirs.V[:, dirs.resolved]
        profile_open_scale(rep, system, estimate, resolved, open_directions, level, rep.prior_scale)
    elif rep.consistent is False and dirs.t is not None:
        verdict_open_scale(rep, system, dirs, estimate, level)
    profile_unresolved(rep, system, estimate, dirs, level)


def verdict_open_scale(rep, system, dirs, estimate, level):
    """The verdict's open scale where the intervals see none (``dirs``: the report's
    :class:`~.directions.Directions`; ``level``: the verdict's): an unresolved direction with no
    curvature seen that holds most of the estimate (:func:`.flat.open_scale`), but whose
    component is within twice the scale τ of the identified estimates — the intervals' guard
    against a structurally null direction's noise (:func:`.flat.scale_directions`).
    Where the drift is attenuated as a whole the identified estimates, and τ with them, are as
    small as that component (van der Pol at N = 1000, 3 of 20 data sets of the verdicts bench),
    so the guard
    reads the attenuated scale as noise, and the test at the estimate rejects a correct model.
    For the verdict the guard is left out (:func:`profile_open_scale` with ``tau=None``): a
    rejection that a larger drift along it fits is "undetermined"; the intervals are unchanged
    (docs/design-statistics.md §7)."""
    s = dirs.singular_values
    live = ~np.asarray(dirs.resolved) & (s > numerical_floor(s, *system[0].shape))
    VU = dirs.V[:, live]  # (below the floor: rounding, its t says nothing)
    own = open_scale(estimate.theta, VU, np.asarray(dirs.t)[live])  # (no τ: the guard left out)
    if own.any():
        resolved = dirs.V[:, dirs.resolved]
        profile_open_scale(rep, system, estimate, resolved, VU[:, own], level, tau=None)


def profile_unresolved(rep, system, estimate, dirs, level):
    """The verdict's last step: a rejection that a θ inside the report's own intervals answers.

    The verdict's test is profiled along the resolved directions only (a flat direction absorbs
    any residual in the limit of a large component, :func:`.misspecification.verdict_test`), so
    an estimate attenuated along an unresolved one still carries less noise than the truth and a
    correct model is rejected: Stuart–Landau at N = 1000, its rotation ω attenuated towards 0, was
    rejected in 4 of 20 data sets (``python -m dynosed_sym.apps.bench --only verdicts``).
    Here, where the verdict rejects and some direction is unresolved (and all n are at most
    :data:`~.misspecification.PROFILE_MAX_DIRECTIONS`), the test is profiled along all of them;
    when its infimum is a finite point θ° where it does not reject (p ≥ ``level``), θ° lies inside
    every parameter's interval from the sampling noise alone (the report's intervals before the
    Birge ratio widened them for the very rejection), and the residual's noise there is at most
    :data:`NOISE_INFLATION_MAX` times the estimate's, the report itself cannot exclude a θ that
    fits: the verdict is **undetermined**, never consistent.  The test is kept as
    ``misspec_unresolved`` (:class:`UnresolvedTest`) wherever it was taken, so the summary says
    why a rejection stands.  A symmetry of the law — a linear model with a free rotation fitted to a
    rotation-invariant law — is absorbed the same way, but only at a large rotation whose noise
    is far beyond the cap, so its rejection stays; and since the Tikhonov θ minimises ‖r‖², T at
    θ° is at least T/``NOISE_INFLATION_MAX`` at it: a strong rejection always stays
    (docs/design-statistics.md §7)."""
    if rep.p_value is None or rep.consistent is not False or rep.ci is None:
        return
    resolved = np.asarray(dirs.resolved)
    if resolved.all() or resolved.size > PROFILE_MAX_DIRECTIONS:
        return
    stat, p, _, z = profiled_test(rep, system, estimate, dirs.V)
    if not np.all(np.isfinite(z)):
        return  # an infimum in a limit: no θ° (a flat direction alone)
    at = estimate.theta_tikhonov + dirs.V @ z
    ci = widen_about(estimate.theta, rep.ci, 1.0 / rep.interval_scale)  # the sampling part
    outside = tuple(int(j) for j in np.flatnonzero((at < ci[:, 0]) | (at > ci[:, 1])))
    Ur = rep._left[:, : rep.rank]
    noise, noise0 = _noise(system, at, Ur), _noise(system, estimate.theta_tikhonov, Ur)
    ratio = noise / noise0 if noise0 > 0 else np.inf
    answers = p.value >= level and not outside and ratio <= NOISE_INFLATION_MAX
    rep.misspec_unresolved = UnresolvedTest(stat, p.value, p.bound, at, ratio, outside, answers)
    if answers:
        rep.consistent = None


def _noise(system, theta, Ur):
    """``Σ_b w_b ‖e_b‖²``: the residual's block noise at θ as the test takes it
    (:func:`.misspecification.residual_deviations`)."""
    A, b, A_blocks, b_blocks, counts = system
    _, e = residual_deviations(A, b, theta, A_blocks, b_blocks, Ur)
    return float(block_weights(counts) @ np.einsum("bm,bm->b", e, e))


def unresolved_line(test, names, level, smoothing=None, attenuated=None):
    """The summary's line on ``misspec_unresolved`` (:class:`UnresolvedTest`; ``level``: the
    verdict's; ``smoothing``: the report's ``misspec_smoothing``, set where a local fit's kernel
    made the verdict undetermined whatever this test says; ``attenuated``: the report's
    ``misspec_attenuated``, where an estimate that does not hold the data's spread did)."""
    point = ", ".join(f"{n} = {v:.3g}" for n, v in zip(names, test.theta))
    head = (
        f"  profiled along the unresolved directions as well the test gives T = {test.stat:.3g}, "
        f"{TailProbability(test.p_value, bound=test.p_value_bound)} at ({point})"
    )
    if test.undetermined:
        return head + (
            f" with {test.noise_ratio:.3g}× the estimate's residual noise, inside every "
            "parameter's interval: a θ the data do not exclude fits, and the estimate is "
            "attenuated along directions the data do not resolve, so the test cannot tell a "
            "misspecified model from a correct one (neither consistent nor INCONSISTENT; more "
            "data decide it)"
        )
    why = []
    if test.p_value < level:
        why.append("it still rejects")
    if test.outside:
        why.append("outside the interval of " + ", ".join(names[j] for j in test.outside))
    if test.noise_ratio > NOISE_INFLATION_MAX:
        why.append(
            f"only with {test.noise_ratio:.3g}× the estimate's residual noise (more than "
            f"{NOISE_INFLATION_MAX:g}×: a fit by the noise a large component carries, as along a "
            "symmetry of the law)"
        )
    end = "the rejection stands"
    if smoothing is not None:  # the kernel's smoothing decided the verdict (its note says why)
        end = (
            "this alone would keep the rejection, but the kernel's smoothing (below) makes the "
            "verdict undetermined"
        )
    elif attenuated is not None:  # the estimate is too weak for the data's spread
        end = (
            f"this alone would keep the rejection, but the estimate does not hold the data's "
            f"spread ({attenuated}): the drift is attenuated as a whole, the noise a correct "
            "drift of the data's size carries is that much larger, and a misfit along a "
            "symmetry of the law keeps the spread — so the test cannot tell a misspecified model "
            "from an attenuated correct one (neither consistent nor INCONSISTENT; more data "
            "decide it)"
        )
    return head + ": " + "; ".join(why) + ": " + end


def open_scale_line(test, verdict, level, later=False):
    """The summary's line on the test profiled along the open scale (``misspec_open_scale``;
    ``level``: the verdict's, :data:`~.report.CONSISTENCY_P`; ``later``: a later step — the
    kernel's smoothing, an attenuated estimate — decided the verdict)."""
    t1, p1, bound1 = test
    head = f"  profiled along the open scale as well the test gives T = {t1:.3g}, "
    head += str(TailProbability(p1, bound=bound1))
    if verdict == "undetermined":
        return (
            head + ": a larger drift along it fits the data within the noise it carries, and "
            "the data do not bound its size, so the test cannot tell a misspecified model from "
            "an attenuated estimate of a correct one (neither consistent nor INCONSISTENT)"
        )
    if test[1] >= level:
        end = (
            "this alone would keep the rejection (below: what decides it)"
            if later
            else "the rejection stands (it may still be an estimate attenuated as a whole; more "
            "data decide it)"
        )
        return (
            head + ": a larger component along it would fit, but the open direction is not the "
            "estimate's own (more than half of ‖θ̂‖², a component above 2τ), the only one the "
            "rule reads as the drift's scale, and a flat direction absorbs a wrong model's "
            f"residual too (a symmetry of the law is flat at any N): {end}"
        )
    return head + ": it still rejects, so no drift scale along it rescues the model"
