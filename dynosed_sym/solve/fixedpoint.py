"""A fixed point x = G(x) by safeguarded Anderson acceleration (type II).

Used by :func:`~dynosed_sym.solve.ustat.corrected_gauss_newton`, whose map G (re-linearise, solve
the corrected system) is a Gauss–Newton step: it neglects the second derivatives of the residual
and the derivative of the U-statistic correction, so its Jacobian at the fixed point is
``I − H⁻¹∇²L/2 = −H⁻¹M`` (M the neglected terms), not 0.  When the residual is large and a
direction weakly resolved, M is not small: the plain iteration then converges only linearly, and
with an eigenvalue of G' near −1 it oscillates (−0.71 on the tanh model of tests/test_fuzz.py:
50 steps reach a step of 7·10⁻⁹ only); below −1 it would not converge at all.

Anderson acceleration (Walker & Ni 2011) takes, instead of the plain step x + f (f = G(x) − x),
the combination of the last m steps whose residual is smallest in the linearised sense,

    γ = argmin ‖f_k − ΔF γ‖₂,   x_{k+1} = x_k + ηf_k − (ΔX + ηΔF) γ,

ΔX, ΔF the differences of the last m + 1 accepted iterates and their residuals: a multisecant
(Broyden type II) update that solves a linear fixed-point problem in at most n + 1 steps
whatever the eigenvalues of G' (they need not lie in the unit disc), and converges
superlinearly near a smooth fixed point.  Its zeros are those of f, so the fixed point is that
of the plain iteration.

Safeguard: the extrapolated point is accepted only if its residual ‖f‖₂ is smaller than that of
the current iterate and, when G also reports a merit (the loss whose stationary points its fixed
points are), the merit does not rise (beyond rounding): a multisecant step may otherwise land
on another stationary point (a saddle, or a degenerate point where a direction stops being
resolved).  A refused step drops the history; two plain (relaxed) steps x + ηf are then taken
from the current iterate before the next extrapolation.  Plain steps are always accepted; when
one does not contract (‖f_new‖ > 0.9 ‖f‖), η is halved (down to 1/64), which turns an
oscillation of the plain map into a contraction.  When G reports the subspace its step moves in
(the resolved directions of the corrected Gauss–Newton step, which keeps θ's other components),
the Anderson correction is projected onto it, so that the extrapolation does not move θ along
directions the plain map leaves alone.  Every evaluation of G counts as a step.
"""

from __future__ import annotations

import numpy as np

__all__ = ["anderson_fixed_point", "MEMORY"]

#: Number of past steps the Anderson update combines (at most the number of unknowns).
MEMORY = 10

#: Smallest relaxation of a plain step.
MIN_ETA = 1.0 / 64

#: Plain steps taken after a refused extrapolation before the next one is tried.
PLAIN_AFTER_REJECTION = 2


def _size(f):
    return float(np.linalg.norm(f)) if np.all(np.isfinite(f)) else np.inf


def anderson_fixed_point(G, x0, max_steps, tol, memory=MEMORY):
    """Iterate to ``x = G(x)`` (module docstring).

    Parameters
    ----------
    G : callable
        ``G(x) -> g`` ((n,) array), or ``G(x) -> (g, basis, merit, slack)``: ``basis`` (n, r)
        orthonormal columns spanning the directions ``g − x`` moves in (None: all), ``merit`` a
        float whose stationary points are the fixed points (None: no merit test) and ``slack``
        the rise of the merit that counts as rounding.
    x0 : (n,) start
    max_steps : int, evaluations of G allowed
    tol : float, stop when ``max |G(x) − x| ≤ tol · (1 + max |x|)``

    Returns
    -------
    x : (n,) ``G(x)`` of the converged iterate; else the last accepted iterate
    info : dict
        ``steps`` (evaluations of G), ``converged``, ``step`` (``max |G(x) − x|`` at the last
        accepted iterate), ``accelerated`` (Anderson steps accepted), ``rejected`` (refused).
    """
    x = np.asarray(x0, dtype=float).copy()
    m = max(1, min(int(memory), x.size))
    cur, steps = _evaluate(G, x), 1
    hist_x, hist_f = [], []
    eta, accelerated, rejected, wait = 1.0, 0, 0, 0
    while True:
        g, basis = cur[0], cur[1]
        f = g - x
        step = float(np.abs(f).max(initial=0.0))
        if step <= tol * (1.0 + float(np.abs(x).max(initial=0.0))):
            return g, _info(steps, True, step, accelerated, rejected)
        if steps >= int(max_steps) or not np.isfinite(step):
            return x, _info(steps, False, step, accelerated, rejected)
        cand = x + eta * f
        extrapolate = bool(hist_x) and wait == 0
        if extrapolate:
            dX = np.diff(np.column_stack([*hist_x, x]), axis=1)
            dF = np.diff(np.column_stack([*hist_f, f]), axis=1)
            if basis is not None:  # move where the plain step moves
                dX, dF = basis @ (basis.T @ dX), basis @ (basis.T @ dF)
            gamma = np.linalg.lstsq(dF, f, rcond=1e-12)[0]
            cand = cand - (dX + eta * dF) @ gamma
        new, steps = _evaluate(G, cand), steps + 1
        f_new = new[0] - cand
        if extrapolate and not _better(new, f_new, cur, f):
            rejected += 1
            hist_x, hist_f, wait = [], [], PLAIN_AFTER_REJECTION  # next: plain steps from x
            continue
        if extrapolate:
            accelerated += 1
        else:
            wait = max(wait - 1, 0)
            if _size(f_new) > 0.9 * _size(f):
                eta = max(0.5 * eta, MIN_ETA)
        hist_x, hist_f = [*hist_x, x][-m:], [*hist_f, f][-m:]
        x, cur = cand, new


def _evaluate(G, x):
    """``(g, basis, merit, slack)`` of ``G(x)`` (a bare array: no basis, no merit)."""
    out = G(x)
    if isinstance(out, tuple):
        g, basis, merit, slack = out
        return np.asarray(g, dtype=float), basis, merit, slack
    return np.asarray(out, dtype=float), None, None, 0.0


def _better(new, f_new, cur, f):
    """Whether an extrapolated point is accepted: a smaller residual, and no rise of the merit."""
    if not _size(f_new) < _size(f):
        return False
    if new[2] is None or cur[2] is None:
        return True
    return bool(new[2] <= cur[2] + max(new[3], cur[3]))


def _info(steps, converged, step, accelerated, rejected):
    return {
        "steps": steps,
        "converged": converged,
        "step": step,
        "accelerated": accelerated,
        "rejected": rejected,
    }
