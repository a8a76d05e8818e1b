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

from .intervals import RESCUE_REJECT_P
from .misspecification import PROFILE_MAX_DIRECTIONS, misspecification_profile

__all__ = [
    "profiled_test",
    "profiled_p",
    "rejects_strongly",
    "carried_by_b",
    "profile_open_scale",
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


def carried_by_b(system, along, dof):
    """(k,) bool: the directions ``along`` (n, k; right singular vectors of A) along whose left
    vector ``u = Av/‖Av‖`` the right-hand side b has a component the data determine:
    ``|uᵀb| / sd(uᵀb) >`` the two-sided Student-t quantile at
    :data:`~.directions.RESOLVE_LEVEL` (95 %, ``dof`` degrees of freedom; one direction at a
    time: a lower bar than the verdict's 1 %, so that a doubt goes to "undetermined"), sd from
    the block means of b.  The drift's attenuated scale is such a direction
    (b carries the drift through the known noise, the column's curvature is what is weak:
    FitzHugh–Nagumo at N = 500, |t| = 7–65); a direction the law does not depend on carries
    nothing in b (a rotation of a rotation-invariant law, |t| ≤ 1.2)."""
    from .directions import RESOLVE_LEVEL
    from .uncertainty import t_quantile

    A, b, _, b_blocks, counts = system
    w = np.asarray(counts, dtype=float)
    w = w / w.sum()
    AV = A @ along
    norms = np.linalg.norm(AV, axis=0)
    Uv = AV / np.where(norms > 0, norms, 1.0)
    proj = Uv.T @ b
    dev = (np.asarray(b_blocks, dtype=float) - b[None]) @ Uv  # (B, k)
    sd = np.sqrt(w @ dev**2 / (len(w) - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, np.abs(proj) / sd, 0.0)
    return (norms > 0) & (t > t_quantile(RESOLVE_LEVEL, dof))


def profile_open_scale(rep, system, estimate, resolved, along, level):
    """The verdict where the report leaves the drift's scale open (``along`` (n, k), the open
    directions) and its test rejects (p < ``level``).

    At an attenuated estimate the test's noise misses what a larger drift carries (Selkov at
    N = 5000: p < 1e-12 at the estimate, 0.47 profiled; FitzHugh–Nagumo's cycle at N = 500: 11
    of 20 correct fits rejected).  Where b carries a component along an open direction
    (:func:`carried_by_b`), the truth's drift may lie along it at a size the data do not bound,
    so the test is profiled along those directions as well as the ``resolved`` ones (n, r) the
    verdict's own test is profiled along (only along the open ones when together they are more
    than :data:`~.misspecification.PROFILE_MAX_DIRECTIONS`), kept as ``misspec_open_scale``;
    where that does not reject, the verdict is neither: ``consistent`` becomes None, the
    report's ``verdict`` "undetermined".  A direction b does not carry is no hidden drift: a
    rejection stands (a flat direction would absorb any residual — a misspecified model's too —
    by the noise a large component along it carries).  docs/design-statistics.md §7."""
    if rep.p_value is None or rep.consistent is not False:
        return
    carried = along[:, carried_by_b(system, along, rep.dof)]
    if carried.shape[1] == 0:
        rep.notes.append(
            "the open scale does not explain the rejection: b carries no component along it "
            "that the data determine, so the verdict stays the test's"
        )
        return
    both = np.column_stack([resolved, carried])
    stat, p, _, _ = profiled_test(
        rep, system, estimate, both if both.shape[1] <= PROFILE_MAX_DIRECTIONS else carried
    )
    rep.misspec_open_scale = (stat, p.value, p.bound)
    if p.value >= level:
        rep.consistent = None
