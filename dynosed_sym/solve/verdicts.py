"""The misspecification test at the points a report needs besides its verdict's.

The verdict's own test is :func:`.misspecification.verdict_test` (taken in
:func:`.report.analyse`).  Here: the test at the Tikhonov solution profiled along given
directions (:func:`profiled_test`) — along a flat direction for the intervals' flat rescue
(:func:`profiled_p`, :func:`.intervals.flat_rescues`) and along the open scale for the summary's
note (:func:`profile_open_scale`) — and whether the unprofiled test at the Tikhonov solution
rejects strongly, the rescue's trigger (:func:`rejects_strongly`).  ``rep`` is the
:class:`~.report.IdentifiabilityReport` being built, ``system`` its
``(A, b, A_blocks, b_blocks, counts)``, ``estimate`` the :class:`~.ustat.Estimate`.
"""

from __future__ import annotations

import numpy as np

from .directions import numerical_floor
from .intervals import RESCUE_REJECT_P, SCALE_T, scale_directions
from .misspecification import (
    PROFILE_MAX_DIRECTIONS,
    TailProbability,
    misspecification_profile,
)

__all__ = [
    "profiled_test",
    "profiled_p",
    "rejects_strongly",
    "profile_open_scale",
    "verdict_open_scale",
    "open_scale_line",
]


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
    the direction where it is taken (:func:`.intervals.flat_rescues`; p = 0, without its
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


def profile_open_scale(rep, system, estimate, resolved, along, level, tau="report"):
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
    the estimate's own (:func:`.intervals.scale_directions`, with the report's τ) and the test
    profiled along the resolved directions and the own ones does not reject, the verdict is
    neither: ``consistent`` becomes None, the report's ``verdict`` "undetermined".  Otherwise
    the rejection stands (docs/design-statistics.md §7)."""
    if rep.p_value is None or rep.consistent is not False:
        return
    tau = rep.prior_scale if isinstance(tau, str) else tau
    own = along[:, scale_directions(estimate.theta, along, tau)]
    test_along = own if own.shape[1] else along
    both = np.column_stack([resolved, test_along])
    stat, p, _, _ = profiled_test(
        rep, system, estimate, both if both.shape[1] <= PROFILE_MAX_DIRECTIONS else test_along
    )
    rep.misspec_open_scale = (stat, p.value, p.bound)
    if own.shape[1] and p.value >= level:
        rep.consistent = None


def verdict_open_scale(rep, system, dirs, estimate, level):
    """The verdict's open scale where the intervals see none (``dirs``: the report's
    :class:`~.directions.Directions`; ``level``: the verdict's): an unresolved direction with no
    curvature seen (``t ≤ SCALE_T``) that holds most of the estimate, but whose component is
    within twice the scale τ of the identified estimates — the intervals' guard against a
    structurally null direction's noise (:func:`.intervals.scale_directions`).  Where the drift
    is attenuated as a whole the identified estimates, and τ with them, are as small as that
    component (van der Pol at N = 1000: θ̂ ≈ 0.23·truth, τ = 0.24), so the guard reads the
    attenuated scale as noise, and the test at the estimate rejects a correct model.  For the
    verdict the guard is left out (:func:`profile_open_scale` with ``tau=None``): a
    rejection that a larger drift along it fits is "undetermined"; the intervals are unchanged
    (docs/design-statistics.md §7)."""
    A = system[0]
    s = dirs.singular_values
    data = s > numerical_floor(s, A.shape[0], s.size)  # (below: rounding, its t says nothing)
    flat = data & ~np.asarray(dirs.resolved) & (np.asarray(dirs.t) <= SCALE_T)
    if not flat.any():
        return
    VU = dirs.V[:, flat]
    own = scale_directions(estimate.theta, VU)
    if own.any():
        resolved = dirs.V[:, dirs.resolved]
        profile_open_scale(rep, system, estimate, resolved, VU[:, own], level, tau=None)


def open_scale_line(test, verdict, level):
    """The summary's line on the test profiled along the open scale (``misspec_open_scale``;
    ``level``: the verdict's, :data:`~.report.CONSISTENCY_P`)."""
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
        return (
            head + ": a larger component along it would fit, but the open direction is not the "
            "estimate's overall scale, and a flat direction absorbs a wrong model's residual too "
            "(a symmetry of the law is flat at any N): the rejection stands (it may still be an "
            "attenuated estimate; more data decide it)"
        )
    return head + ": it still rejects, so no drift scale along it rescues the model"
