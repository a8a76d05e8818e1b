"""A fixed point x = G(x) by safeguarded Anderson acceleration (type II).

Used by :func:`~dynosed_sym.solve.gauss_newton.corrected_gauss_newton`, whose map G (re-linearise,
solve the corrected system) is a Gauss–Newton step: it neglects the second derivatives of the
residual and the derivative of the U-statistic correction, so its Jacobian at the fixed point is
``I − H⁻¹∇²L/2 = −H⁻¹M`` (M the neglected terms), not 0. When the residual is large and a direction
weakly resolved, M is not small: the plain iteration then converges only linearly, and with an
eigenvalue of G' near −1 it oscillates (−0.71 on the tanh model of tests/test_fuzz.py: 50 steps
reach a step of 7·10⁻⁹ only); below −1 it would not converge at all.

Anderson acceleration (Walker & Ni 2011) takes, instead of the plain step x + f (f = G(x) − x),
the combination of the last m steps whose residual is smallest in the linearised sense,

    γ = argmin ‖f_k − ΔF γ‖₂,   x_{k+1} = x_k + ηf_k − (ΔX + ηΔF) γ,

ΔX, ΔF the differences of the last m + 1 accepted iterates and their residuals: a multisecant
(Broyden type II) update that solves a linear fixed-point problem in at most n + 1 steps
whatever the eigenvalues of G' (they need not lie in the unit disc), and converges
superlinearly near a smooth fixed point.  Its zeros are those of f, so the fixed point is that
of the plain iteration.

Safeguard: the extrapolated point is accepted only if its residual ‖f‖₂ is smaller than that of the
current iterate and, when G also reports a merit (the loss whose stationary points its fixed points
are) and says that it is its own there (``descent``, below), the merit does not rise (beyond
rounding): a multisecant step may otherwise land on another stationary point (a saddle, or a
degenerate point where a direction stops being resolved).  A refused step drops the history; two
plain (relaxed) steps x + ηf are then taken from the current iterate before the next extrapolation.
When a plain step does not contract (‖f_new‖ > 0.9 ‖f‖), η is halved (down to 1/64), which turns an
oscillation of the plain map into a contraction.  When G reports the subspace its step moves in
(the resolved directions of the corrected Gauss–Newton step, which keeps θ's other components), the
Anderson correction is projected onto it, so that the extrapolation does not move θ along
directions the plain map leaves alone.  Every evaluation of G counts as a step.

Descent.  Where G says its step f is a descent direction of the merit (a Gauss–Newton step on
it: ``f = −H⁻¹∇L/2`` with H positive definite), a plain step that raises the merit (beyond
rounding) is not taken: its length is halved and it is tried again from x (a backtracking line
search; after each accepted plain step the length doubles back, up to ηf; η itself is then not
halved for a step that does not contract, the line search being the step control).  So no accepted
iterate raises the merit, and an eigenvalue of G' far below −1 (an overshooting Gauss–Newton
step along a weakly curved direction, where halving η to 1/64 does not make the map contract)
no longer makes the iteration diverge.  Below 2⁻²⁰ of the full step it stops (``"no
descent"``): f is then no descent direction at all.

Runaway.  A merit may have no finite minimiser: it can fall toward a limit where parameters run
off (the tanh drift a·tanh(kx) as k → 0 and a → ∞ with a·k fixed, when the data favour a cubic
term of the sign tanh cannot give).  A descent iteration then never converges, and there its full
step grows (the minimiser of the local model recedes), whereas near a minimiser it shrinks.  The
iteration therefore stops (``"runaway"``) after RUNAWAY_STEPS consecutive accepted steps that each
lowered the merit while the step grew and was at least RUNAWAY_REACH of 1 + max|x|; the caller
reports that the loss appears to have no finite minimiser.  (Smaller growing steps occur on the
way to a minimiser where the loss flattens: a tanh fit with a local minimum at k ≈ 3.4 grew its
step for 8 steps, to 0.45 at θ ≈ 3.) An evaluation where G is no descent step (a direction
unresolved there, whose component G keeps: a fixed point of that kind may lie ahead) restarts the
count.  This is evidence, not proof: it is what the iteration saw.

Undefined candidates.  G may be undefined at a candidate (its ``g`` not finite: a drift
``a·exp(−b·x)`` overflows at the data once b is far enough from the start, or a Hill constant
crosses a sample).  Such a candidate is treated as a refused step — an extrapolation drops the
history, a plain step is halved and tried again from x — so the iteration stays where G is defined
(it stopped the corrected Gauss–Newton loop with the drift's DataError before).
"""

from __future__ import annotations

import numpy as np

__all__ = ["anderson_fixed_point", "unconverged_message", "MEMORY"]

#: Number of past steps the Anderson update combines (at most the number of unknowns).
MEMORY = 10

#: Smallest relaxation of a plain step.
MIN_ETA = 1.0 / 64

#: Plain steps taken after a refused extrapolation before the next one is tried.
PLAIN_AFTER_REJECTION = 2

#: A plain step is shortened (halved, from x again) while it raises the merit; below this
#: fraction of the full step the iteration stops: the step is no descent direction.
MIN_DESCENT = 2.0**-20

#: Consecutive accepted steps that lowered the merit while the step grew, after which the
#: iteration stops: the iterates run away from every fixed point (module docstring).
RUNAWAY_STEPS = 8

#: ... and whose full step was at least this fraction of the iterate's own size, 1 + max|x|: the
#: local model's minimiser as far away as the parameters are large (and receding).  Smaller
#: steps that grow are common on the way to a minimiser where the loss flattens.
RUNAWAY_REACH = 0.5


def _size(f):
    return float(np.linalg.norm(f)) if np.all(np.isfinite(f)) else np.inf


def anderson_fixed_point(G, x0, max_steps, tol, memory=MEMORY):
    """Iterate to ``x = G(x)`` (module docstring).

    Parameters
    ----------
    G : callable
        ``G(x) -> g`` ((n,) array), or ``G(x) -> (g, basis, merit, slack[, descent])``:
        ``basis`` (n, r) orthonormal columns spanning the directions ``g − x`` moves in (None:
        all), ``merit`` a float whose stationary points are the fixed points (None: no merit
        test), ``slack`` the rise of the merit that counts as rounding and ``descent`` (default:
        a merit is given) whether ``g − x`` is a descent direction of the merit, so that plain
        steps from x must lower it (False where the merit is only approximately G's: then only
        extrapolations are tested against it).
    x0 : (n,) start
    max_steps : int, evaluations of G allowed
    tol : float, stop when ``max |G(x) − x| ≤ tol · (1 + max |x|)``

    Returns
    -------
    x : (n,) ``G(x)`` of the converged iterate; else the last accepted iterate
    info : dict
        ``steps`` (evaluations of G), ``converged``, ``step`` (``max |G(x) − x|`` at the last
        accepted iterate), ``accelerated`` (Anderson steps accepted), ``rejected`` (refused),
        ``backtracked`` (plain steps shortened because they raised the merit), ``stop`` (why
        it stopped: ``"converged"``, ``"max_steps"``, ``"not finite"``, ``"no descent"`` or
        ``"runaway"``, module docstring) and ``first_step`` (``max |G(x0) − x0|``).
    """
    x = np.asarray(x0, dtype=float).copy()
    m = max(1, min(int(memory), x.size))
    cur, steps = _evaluate(G, x), 1
    run = _Run(float(np.abs(cur[0] - x).max(initial=0.0)))
    hist_x, hist_f = [], []
    eta, wait = 1.0, 0
    while True:
        g, basis = cur[0], cur[1]
        f = g - x
        step = float(np.abs(f).max(initial=0.0))
        if step <= tol * (1.0 + float(np.abs(x).max(initial=0.0))):
            return g, run.info(steps, "converged", step)
        if not np.isfinite(step):
            return x, run.info(steps, "not finite", step)
        if steps >= int(max_steps):
            return x, run.info(steps, "max_steps", step)
        if run.growing >= RUNAWAY_STEPS:
            return x, run.info(steps, "runaway", step)
        extrapolate = bool(hist_x) and wait == 0
        cand = x + (eta if extrapolate else eta * run.damp) * f
        if extrapolate:
            dX = np.diff(np.column_stack([*hist_x, x]), axis=1)
            dF = np.diff(np.column_stack([*hist_f, f]), axis=1)
            if basis is not None:  # move where the plain step moves
                dX, dF = basis @ (basis.T @ dX), basis @ (basis.T @ dF)
            gamma = np.linalg.lstsq(dF, f, rcond=1e-12)[0]
            cand = cand - (dX + eta * dF) @ gamma
        new, steps = _evaluate(G, cand), steps + 1
        f_new = new[0] - cand
        if not new[4]:  # G is not a descent step there (a direction unresolved): no runaway
            run.growing = 0
        if extrapolate and not _better(new, f_new, cur, f):  # (also: G undefined there)
            run.rejected += 1
            hist_x, hist_f, wait = [], [], PLAIN_AFTER_REJECTION  # next: plain steps from x
            continue
        if not extrapolate and (_rises(new, cur) or not np.isfinite(f_new).all()):
            # shorten the plain step, from x again
            run.backtracked += 1
            run.damp *= 0.5
            hist_x, hist_f = [], []
            if eta * run.damp < MIN_DESCENT:
                return x, run.info(steps, "no descent", step)
            continue
        run.accept(extrapolate, new, f_new, cur, f, cand)
        if not extrapolate:
            wait = max(wait - 1, 0)
            if _size(f_new) > 0.9 * _size(f) and not cur[4]:  # (descent: the line search)
                eta = max(0.5 * eta, MIN_ETA)
        hist_x, hist_f = [*hist_x, x][-m:], [*hist_f, f][-m:]
        x, cur = cand, new


class _Run:
    """The counters of one iteration: accepted and refused steps, the plain step's shortening
    (``damp``) and the run of accepted steps that lowered the merit while the step grew."""

    def __init__(self, first_step):
        self.first_step = first_step
        self.accelerated = self.rejected = self.backtracked = self.growing = 0
        self.damp = 1.0

    def accept(self, extrapolated, new, f_new, cur, f, x_new):
        if extrapolated:
            self.accelerated += 1
        else:
            self.damp = min(1.0, 2.0 * self.damp)
        falls = cur[4] and new[2] is not None and new[2] < cur[2]
        far = np.abs(f_new).max() > RUNAWAY_REACH * (1.0 + np.abs(x_new).max())
        self.growing = self.growing + 1 if falls and far and _size(f_new) > _size(f) else 0

    def info(self, steps, stop, step):
        return {
            "steps": steps,
            "converged": stop == "converged",
            "step": step,
            "accelerated": self.accelerated,
            "rejected": self.rejected,
            "backtracked": self.backtracked,
            "stop": stop,
            "first_step": self.first_step,
        }


def _evaluate(G, x):
    """``(g, basis, merit, slack, descent)`` of ``G(x)`` (a bare array: no basis, no merit; a
    4-tuple: ``descent`` when a merit is given)."""
    out = G(x)
    if isinstance(out, tuple):
        g, basis, merit, slack, *descent = out
        descent = bool(descent[0]) if descent else merit is not None
        return np.asarray(g, dtype=float), basis, merit, slack, descent and merit is not None
    return np.asarray(out, dtype=float), None, None, 0.0, False


def _rises(new, cur):
    """Whether the merit at a plain candidate is above the current one beyond rounding (only
    where ``G`` asks plain steps to descend)."""
    if not cur[4] or new[2] is None:
        return False
    return not bool(new[2] <= cur[2] + max(new[3], cur[3]))


def _better(new, f_new, cur, f):
    """Whether an extrapolated point is accepted: a smaller residual, and no rise of the merit
    where it is G's own (``descent`` at the current iterate; elsewhere G's fixed point need not
    be stationary for it, and the test would refuse the steps that reach it)."""
    if not _size(f_new) < _size(f):
        return False
    if not cur[4] or new[2] is None:
        return True
    return bool(new[2] <= cur[2] + max(new[3], cur[3]))


def unconverged_message(loop, theta0, theta, names):
    """Why the corrected Gauss–Newton loop (:func:`~.gauss_newton.corrected_gauss_newton`) stopped
    unconverged, from :func:`anderson_fixed_point`'s ``loop`` record."""
    head = (
        f"the corrected Gauss–Newton iteration (U-statistic, non-affine drift) stopped after "
        f"{loop['steps']} steps without converging"
    )
    tail = "; the estimate is provisional (its last accepted iterate)"
    if loop["stop"] == "runaway":
        names = names or [f"θ[{i}]" for i in range(theta.size)]
        moved = np.abs(theta - theta0) / (np.abs(theta0) + 1e-12)
        order = np.argsort(-moved)[: min(2, theta.size)]
        path = ", ".join(f"{names[i]} {theta0[i]:.3g} → {theta[i]:.3g}" for i in order)
        return (
            f"{head}: the corrected loss kept falling for {RUNAWAY_STEPS} steps while the "
            f"Gauss–Newton step grew (to {loop['step']:.3g} from {loop['first_step']:.3g}; "
            f"{path}) — the loss appears to have no finite minimiser: it decreases toward a "
            "limit of the parameters that the data do not determine (a parameter running off "
            "while a combination of them stays fixed); the estimate reported is the one it "
            "started from (the search's optimum, with the ridge's λ), with no finite interval"
        )
    if loop["stop"] == "no descent":
        return (
            f"{head}: its step did not lower the corrected loss even when shortened "
            f"{1 / MIN_DESCENT:.0f}-fold (last step {loop['step']:.3g})" + tail
        )
    return f"{head} (last step {loop['step']:.3g})" + tail
