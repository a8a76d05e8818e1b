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
the current iterate; otherwise the history is dropped and the plain (relaxed) step x + ηf taken
from the current iterate.  Plain steps are always accepted; when one does not contract
(‖f_new‖ > 0.9 ‖f‖), η is halved (down to 1/64), which turns an oscillation of the plain map
into a contraction.  Every evaluation of G counts as a step.
"""

from __future__ import annotations

import numpy as np

__all__ = ["anderson_fixed_point", "MEMORY"]

#: Number of past steps the Anderson update combines (at most the number of unknowns).
MEMORY = 10

#: Smallest relaxation of a plain step.
MIN_ETA = 1.0 / 64


def _size(f):
    return float(np.linalg.norm(f)) if np.all(np.isfinite(f)) else np.inf


def anderson_fixed_point(G, x0, max_steps, tol, memory=MEMORY):
    """Iterate to ``x = G(x)`` (module docstring).

    Parameters
    ----------
    G : callable, ``G(x) -> (n,) array``
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
    g = np.asarray(G(x), dtype=float)
    f, steps = g - x, 1
    hist_x, hist_f = [], []
    eta, accelerated, rejected = 1.0, 0, 0
    while True:
        step = float(np.abs(f).max(initial=0.0))
        if step <= tol * (1.0 + float(np.abs(x).max(initial=0.0))):
            return g, _info(steps, True, step, accelerated, rejected)
        if steps >= int(max_steps) or not np.isfinite(step):
            return x, _info(steps, False, step, accelerated, rejected)
        cand = x + eta * f
        if hist_x:
            dX = np.diff(np.column_stack([*hist_x, x]), axis=1)
            dF = np.diff(np.column_stack([*hist_f, f]), axis=1)
            gamma = np.linalg.lstsq(dF, f, rcond=1e-12)[0]
            cand = cand - (dX + eta * dF) @ gamma
        g_new = np.asarray(G(cand), dtype=float)
        f_new, steps = g_new - cand, steps + 1
        if hist_x and not _size(f_new) < _size(f):
            rejected += 1
            hist_x, hist_f = [], []  # next: the plain step from x
            continue
        if hist_x:
            accelerated += 1
        elif _size(f_new) > 0.9 * _size(f):
            eta = max(0.5 * eta, MIN_ETA)
        hist_x, hist_f = [*hist_x, x][-m:], [*hist_f, f][-m:]
        x, g, f = cand, g_new, f_new


def _info(steps, converged, step, accelerated, rejected):
    return {
        "steps": steps,
        "converged": converged,
        "step": step,
        "accelerated": accelerated,
        "rejected": rejected,
    }
