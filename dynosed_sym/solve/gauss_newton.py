"""The corrected fit of a drift not affine in θ: re-linearise, solve the corrected system
(:func:`~dynosed_sym.solve.ustat.solve_system`), repeat to the fixed point
(docs/design-statistics.md §6).

Moved out of :mod:`.ustat` (its size) with the checks that the fixed point is a trade the
estimator makes against the V-statistic optimum it started from, and the fall-back to that
optimum when it is not (:func:`_trade`, :func:`_fall_back`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..errors import ConvergenceWarning, DataError
from ..kernels.blas import single_blas
from .blockops import each_times
from .fixedpoint import anderson_fixed_point, unconverged_message
from .misspecification import block_weights
from .temper import temper as temper_towards
from .ustat import ridge_at, solve_system

__all__ = ["corrected_gauss_newton", "GN_MAX_STEPS", "GN_TOL"]

#: Steps of the corrected Gauss–Newton loop before it gives up (ConvergenceWarning).
GN_MAX_STEPS = 50

#: Relative step size at which the corrected Gauss–Newton loop stops.
GN_TOL = 1e-10


@single_blas
def corrected_gauss_newton(
    linearisation,
    theta0,
    lam,
    *,
    max_steps=GN_MAX_STEPS,
    tol=GN_TOL,
    names=None,
    temper=True,
    **rule,
):
    """Non-affine drift: the corrected fit by re-linearisation (module docstring).

    Parameters
    ----------
    linearisation : callable
        ``linearisation(θ) -> (A, b, A_blocks, b_blocks, counts)`` with ``A = J(θ)``,
        ``b = J(θ)θ − r(θ)`` and their per-block means
        (:meth:`~dynosed_sym.solve.gradient.GlobalProblem.linearisation`).
    theta0 : (n,) start (the V-statistic optimum of the gradient route)
    lam : float, the λ of :func:`solve_system`
    rule : ``statistic``, ``estimator``, ``rank_threshold``: keywords of :func:`solve_system`
        (the resolved estimator updates θ on the resolved directions only, keeping the start's
        components along the others, where the model is linearised).
    max_steps : int
        Evaluations of the map allowed.
    tol : float
        Stop when the full step ``max |G(θ) − θ| ≤ tol · (1 + max |θ|)``, G the map
        "re-linearise at θ, solve the corrected system" (θ̂ = G(θ) of that iterate).

    The iteration θ ← G(θ) is a Gauss–Newton step: G neglects the second derivatives of r and the
    derivative of the correction, so it converges only linearly where these are not small, and
    oscillates when G' has an eigenvalue near or below −1 (a weakly resolved non-linear
    parameter).  It is therefore driven by safeguarded Anderson acceleration
    (:func:`~dynosed_sym.solve.fixedpoint.anderson_fixed_point`): the multisecant combination of
    the last steps, projected onto the resolved directions, is taken when it lowers
    ``‖G(θ) − θ‖₂`` and does not raise the loss (:func:`_corrected_loss`); otherwise plain steps,
    relaxed (halved down to 1/64) while they do not contract and, where every direction is
    resolved (then G is a Gauss–Newton step on that loss), shortened while they raise it.  The
    zeros of ``G(θ) − θ`` are the fixed points of the plain iteration: the same estimate, in
    fewer steps.  When the loss keeps falling while the step grows, the loop stops early and
    says that the loss appears to have no finite minimiser (``names``: the parameters' names
    for that message).

    Returns
    -------
    estimate : Estimate
        At the fixed point, with the second-order term (``statistic="u"``).
    system : tuple
        The linearisation at the fixed point (what the report is taken on).
    info : dict
        ``steps``, ``converged``, ``message`` (empty when converged), ``stop`` (why it
        stopped, :func:`~dynosed_sym.solve.fixedpoint.anderson_fixed_point`), ``last`` (the
        last accepted iterate) and ``tempered`` (directions tempered, :mod:`.temper`);
        unconverged, a :class:`~dynosed_sym.errors.ConvergenceWarning` is issued and the
        estimate is taken at the last accepted iterate — after a runaway (no finite minimiser)
        at the start θ₀ instead, with no finite interval.
    """
    unknown = sorted(set(rule) - {"statistic", "estimator", "rank_threshold"})
    if unknown:
        raise TypeError(f"corrected_gauss_newton() got unexpected keyword(s) {unknown}")

    theta0 = np.asarray(theta0, dtype=float)
    first = {}

    def linearised(theta):
        """``linearisation(θ)``, the one at θ₀ taken once: the loop's first evaluation, the
        reference of :func:`_trade` and the system of :func:`_fall_back`."""
        if not np.array_equal(theta, theta0):
            return linearisation(theta)
        if "system" not in first:
            first["system"] = linearisation(theta0)
        return first["system"]

    def step(theta):
        undefined = np.full(np.size(theta), np.nan), None, None, 0.0, False
        try:
            system = linearised(theta)
        except DataError:  # the drift is not finite at the data there: a refused candidate
            return undefined
        if not (np.isfinite(system[0]).all() and np.isfinite(system[1]).all()):
            return undefined  # (the local residual overflows without a DataError)
        # each step: the corrected solve alone (the second-order term and the Tikhonov reference
        # are taken once, at the fixed point)
        est = solve_system(*system, lam, second_order=False, tikhonov=False, handover=False, **rule)
        merit, slack = _corrected_loss(system, theta, est.statistic, est.alpha)
        if est.estimator != "resolved":  # the ridge's λ‖θ‖² is not in the merit
            return est.theta, None, merit, slack, False
        VR = est.subspace  # keep the components the data do not resolve
        # every direction resolved: the step is a Gauss–Newton step on the merit itself (with
        # an unresolved one, G keeps that component and corrects on R only: not quite the merit)
        descent = VR.shape[1] == theta.size
        return est.theta_resolved + theta - VR @ (VR.T @ theta), VR, merit, slack, descent

    # A candidate where the drift is finite but huge (e^{107x}) overflows in the solve and the
    # merit; the inf/NaN it gives makes the loop refuse it (fixedpoint: undefined candidates),
    # and _trade refuses such a fixed point: NumPy's overflow warnings say nothing more.
    with np.errstate(over="ignore", invalid="ignore"):
        theta, loop = anderson_fixed_point(step, theta0, max_steps, tol)
    steps, converged = loop["steps"], loop["converged"]
    with np.errstate(over="ignore", invalid="ignore"):  # (as above, until _trade has judged)
        system = linearised(theta)
        est = solve_system(*system, lam, **rule)
        bound0 = _plain_bound(linearised(theta0), theta0)  # (for _trade and _tempered)
        traded = np.array_equal(theta, theta0)
        traded = traded or _trade(system, theta, linearised(theta0), theta0, est, bound0)
    if not traded:
        return _fall_back(linearised(theta0), theta0, lam, loop)
    msg = "" if converged else unconverged_message(loop, theta0, theta, names)
    if msg and loop["stop"] == "runaway":
        # no finite minimiser: the last iterate is only where the loop noticed (it depends on
        # when), so the start is reported — the search's optimum, which exists (λ‖θ‖²) — on its
        # own linearisation, with no finite interval (report: no_minimiser)
        system = linearised(theta0)
        est = solve_system(*system, lam, **rule)
        est = replace(est, theta=theta0.copy(), no_minimiser=True)
    elif msg:
        # unconverged: report the last accepted iterate (the lowest loss reached, where the system
        # is linearised), not the step from it, which the loop did not accept
        est = replace(est, theta=theta.copy())
    if temper and loop["stop"] != "runaway":
        est = _tempered(est, system, linearised, theta0, lam, names, bound0)
    if msg and est.temper is not None:  # the iterate the warning names is not the one reported
        msg += (
            f", tempered towards the search's optimum along {est.temper.weights.size} "
            "direction(s) (its note says how far)"
        )
    if msg:
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
        est.notes.append("WARNING: " + msg)
    info = {"steps": steps, "converged": converged, "message": msg, "stop": loop["stop"]}
    info["last"] = theta.copy()  # the loop's last accepted iterate (its fixed point if converged)
    info["tempered"] = 0 if est.temper is None else int(est.temper.weights.size)
    return est, system, info


def _tempered(est, system, linearised, theta0, lam, names, bound0):
    """The fixed point's estimate tempered towards θ₀ (:func:`~.temper.temper`), if the tempered
    point is one the fit may report: the drift finite at the data there and its plain loss within
    :func:`_trade`'s bound ``bound0`` (per-direction shares put it in the box the two ends
    span, not on the segment between them); else ``est`` unchanged."""
    system0 = linearised(theta0)
    try:  # (its ridge solve and covariances: a failure there leaves the fixed point, said below)
        tempered = temper_towards(est, system, theta0, system0, lam, names)
    except (DataError, np.linalg.LinAlgError):
        tempered = None
    if tempered is not None and tempered.temper is None:
        return est
    try:
        system_t = None if tempered is None else linearised(tempered.theta)
    except DataError:
        system_t = None
    if system_t is not None and _plain_within(system_t, tempered.theta, bound0):
        return tempered
    est.notes.append(
        "note: the fixed point is reported untempered (the tempering's solve failed, or its "
        "point left the drift's range or raised the plain loss beyond the trade check's bound)"
    )
    return est


def _plain_bound(system0, theta0):
    """``(bound, rounding)``: the plain loss ‖r‖² at θ₀ plus ten times the whole noise term there
    (the U-statistic removes that noise, it cannot account for more), and that loss's rounding;
    ``system0``: the linearisation at θ₀."""
    v0, slack0 = _corrected_loss(system0, theta0, "v")
    noise0 = max(v0 - _corrected_loss(system0, theta0, "u")[0], 0.0)
    return v0 + 10.0 * noise0, slack0


def _plain_within(system, theta, bound0):
    """Whether the plain loss ‖r‖² at θ is finite and within ``bound0`` (:func:`_plain_bound`;
    the first condition of :func:`_trade`)."""
    v1, slack1 = _corrected_loss(system, theta, "v")
    bound, slack0 = bound0
    return bool(np.isfinite(v1) and v1 <= bound + max(slack0, slack1))


def _trade(system, theta, system0, theta0, est, bound0):
    """Whether the corrected fixed point θ is a trade the estimator makes against the
    V-statistic optimum θ₀: its plain loss ‖r‖² above θ₀'s by less than ten times the whole
    noise term at θ₀ (the U-statistic removes that noise, it cannot account for more; the
    resolved V-statistic estimate only drops λ), and for the U-statistic its corrected loss not
    above θ₀'s (beyond rounding).  Found on ``a·e^{−bx} − g·x`` at N = 2000: the global loop
    stopped at b = −107, a ≈ 0, where the residual is 10⁸² and every direction unresolved, the
    local one (V-statistic) where its report overflowed.  ``system0``: the linearisation at θ₀,
    ``bound0`` its :func:`_plain_bound`."""
    if not _plain_within(system, theta, bound0):
        return False
    if est.statistic != "u":
        return True
    u1, slack1 = _corrected_loss(system, theta, "u", est.alpha)
    u0, slack0 = _corrected_loss(system0, theta0, "u", est.alpha)
    return bool(np.isfinite(u1) and u1 <= u0 + max(slack0, slack1))


def _fall_back(system, theta0, lam, loop):
    """The V-statistic optimum θ₀ with the ridge's report (``system``: the linearisation at θ₀),
    a note and a warning: the corrected loop's fixed point failed :func:`_trade`."""
    est = ridge_at(system, theta0, lam)
    msg = (
        f"the corrected Gauss–Newton iteration (gradient solver) ended after {loop['steps']} "
        "steps at a point that is not the estimator's trade against the V-statistic optimum (its "
        "plain loss higher by more than the noise a correction removes, or its corrected loss "
        "higher): the V-statistic optimum and the ridge's intervals are reported"
    )
    warnings.warn(msg, ConvergenceWarning, stacklevel=3)
    est.notes.append("WARNING: " + msg)
    info = {"steps": loop["steps"], "converged": False, "message": msg, "stop": "fell back"}
    return est, system, info


def _corrected_loss(system, theta, statistic, alpha=1.0):
    """(loss, rounding): ``‖r‖² − α Σ_b w_b‖r_b − r‖²/(B − 1)`` at θ (``‖r‖²`` for the
    V-statistic), r = Aθ − b, the loss whose stationary points the Gauss–Newton loop seeks (up
    to λ and, with unresolved directions, the correction's coupling to them; α the guard of
    the corrected solve); ``rounding`` a rise of it that is rounding, 10⁻¹² of its terms."""
    A, b, A_blocks, b_blocks, counts = system
    r = A @ theta - b
    loss = float(r @ r)
    if statistic != "u" or A_blocks is None or len(counts) < 2:
        return loss, 1e-12 * loss
    dev = each_times(A_blocks, np.broadcast_to(theta, (len(counts), theta.size))) - b_blocks - r
    corr = float(block_weights(counts) @ np.einsum("bm,bm->b", dev, dev)) / (len(counts) - 1)
    return loss - alpha * corr, 1e-12 * (loss + corr)
