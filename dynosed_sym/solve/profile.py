"""Profile intervals of a drift not affine in θ: where the loss's own curvature takes them.

The report of a non-affine fit is taken on the linearisation at θ̂ (:mod:`.gradient`): its
intervals assume that the loss is quadratic in θ over their width.  Where a parameter enters
through a curved valley — a Michaelis–Menten constant K traded against the maximal rate v, a rate
inside an exponential — that is not so at small N, and the linearised intervals undercover
(Michaelis–Menten with CIR-type noise at N = 2000, exact draws: 23 of 27 finite intervals cover;
docs/nonaffine.md).  Systems biology reads practical identifiability off the profile of the loss
instead (Raue et al. 2009, *Bioinformatics* 25, 1923; Data2Dynamics, pyPESTO), which follows the
valley and may be one-sided or unbounded.

**The statistic.**  The loss ``L(θ) = ‖r(θ)‖² + λ‖θ‖²`` (the V-statistic's, which the search
minimises) is not a likelihood: θ̂'s variance is the sandwich, not the inverse curvature.
Profiled over the other parameters, ``L_p(t) = min_{θ_j = t} L(θ)`` rises near the optimum θ_V
as ``κ (t − θ_V,j)²``; put in units of the linearised interval,

    z_j(t)² = (L_p(t) − L(θ_V)) / (κ_j se_j²),

it is the Wald statistic of that interval where the loss is quadratic and follows the loss where
it is not — the curvature adjustment of a profile built on a loss that is not the likelihood
(Chandler & Bate 2007, *Biometrika* 94, 167; Varin, Reid & Firth 2011, *Statist. Sinica* 21, 5).
``se_j`` is the half-width of the report's own interval on that side over its quantile q, so the
scale keeps what that interval carries (the Birge ratio, the resolution bias, the Fieller skew);
κ_j is measured, not taken from the Gauss–Newton curvature ``JᵀJ``, which leaves out the
residual's own curvature ``Σ res_i ∇²res_i`` — not small where the residual is mostly noise, as
the Stein mean of every feature is: the first point of each side, at :data:`FIRST_STEP` of the
half-width, fixes it (there ``z = FIRST_STEP·q``), so that where the loss is quadratic the side
ends where the linearised interval does, whatever that curvature.  The profile interval is
``{t : z_j(t) ≤ q}``.

**The interval reported** is the hull of the linearised interval and the profile interval: the
profile only widens (its centre is the V-statistic optimum, the estimate's may be the corrected
one; a narrower profile is no reason to claim less than the linearisation).  Each side is traced
outwards — the second point at the linearised end, each next at most :data:`GROWTH` times
farther — until z reaches :data:`REACHED` of q; other levels are read off the same trace, linearly
in z beyond its last point.  A side on which z does not reach q within :data:`MAX_FITS` points
(about 10³ half-widths) is open: no bound there, the loss flattens (practically not identifiable
on that side).  A side on which the drift stops being finite at the data (a Hill constant
crossing a sample, an exponent overflowing) ends where it stopped.

**The constrained fits.**  Each starts from the better of the last point's optimum (a
continuation along the valley: started from the linear prediction alone, a Michaelis–Menten fit
fell into the region of negative constants and found a profile 20 × too steep) and the linear
prediction of the full curvature ``JᵀJ + λI + S`` (S, the residual's curvature, by forward
differences of the gradient at θ_V: :func:`residual_curvature`).  It takes Newton steps on
``JᵀJ + S`` (Gauss–Newton alone converges only linearly on such residuals: eleven evaluations a
point on the toggle switch, against two to six), damped where a step raises L, until the Newton
decrement is below :data:`Z2_TOL` of z²; MINPACK's Levenberg–Marquardt finishes a fit the Newton
steps do not.

**Cost.**  Two to four constrained fits per parameter and side, each a few evaluations of the
loss, plus n evaluations for S; on the global route the feature sines are held as one (N, m)
matrix for them where it fits in :data:`~dynosed_sym.solve.gradient.DENSE_BYTES`
(:meth:`~dynosed_sym.solve.gradient.GlobalProblem.dense`: an evaluation is one matrix product).
Parameters whose linearised interval is the whole line are not profiled, and neither are models
with more than :data:`MAX_PARAMS` parameters.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ConvergenceWarning, DataError
from .intervals import NOT_IDENTIFIABLE, relabel
from .uncertainty import t_quantile

__all__ = ["MAX_PARAMS", "ProfileSide", "ProfileTrace", "attach", "hull", "profile_traces"]

#: Models with more parameters are not profiled (each parameter costs a few constrained fits).
MAX_PARAMS = 20

#: Points per side at most; a side on which z stays below the quantile is open.
MAX_FITS = 12

#: Each new point of a side is at most this many times farther from the centre than the last
#: (the first at FIRST_STEP times the linearised half-width, the second at all of it).
GROWTH = 2.0
FIRST_STEP = 0.25

#: A constrained fit stops when the Newton decrement is below this change of z² (z off by about
#: 0.012 at z = 2: the interval's end by about 0.6 % of its half-width).
Z2_TOL = 5e-2

#: Newton steps of one constrained fit before MINPACK finishes it.
NEWTON_STEPS = 12

#: A side is traced until z reaches this share of the quantile (where the loss is quadratic the
#: second point, at the linearised end, has z = q up to the fits' tolerance).
REACHED = 0.98


@dataclass(frozen=True)
class ProfileSide:
    """One side of a parameter's profile.

    Attributes
    ----------
    t, z : (k,) arrays
        The values tried, from the centre outwards, and ``z(t)`` there (inf where the drift is
        not finite at the data).
    end : str
        ``"reached"`` (z rose past the traced quantile), ``"open"`` (it did not within
        :data:`MAX_FITS` fits: no bound on this side) or ``"undefined"`` (the drift stopped being
        finite at the data at the last t).
    converged : bool
        Every constrained fit met its tolerances.
    """

    t: np.ndarray
    z: np.ndarray
    end: str
    converged: bool

    def bound(self, centre, q):
        """The first t where z reaches q (linear in z between traced points); ±inf when the
        side is open below q; beyond the trace, extrapolated linearly from its last two points."""
        ts = np.concatenate([[centre], self.t])
        zs = np.concatenate([[0.0], self.z])
        above = np.flatnonzero(zs >= q)
        if above.size:
            k = int(above[0])
            if not np.isfinite(zs[k]):
                return float(ts[k])
            return float(ts[k - 1] + (q - zs[k - 1]) * (ts[k] - ts[k - 1]) / (zs[k] - zs[k - 1]))
        if self.end == "open" or ts.size < 2 or zs[-1] <= zs[-2]:
            return math.copysign(math.inf, float(ts[-1] - centre))
        return float(ts[-1] + (q - zs[-1]) * (ts[-1] - ts[-2]) / (zs[-1] - zs[-2]))


@dataclass(frozen=True)
class ProfileTrace:
    """The profile of one parameter: its centre (the V-statistic optimum) and both sides."""

    centre: float
    lo: ProfileSide
    hi: ProfileSide

    def interval(self, q):
        """``(lo, hi)`` of ``{t : z(t) ≤ q}``."""
        return self.lo.bound(self.centre, q), self.hi.bound(self.centre, q)

    @property
    def converged(self):
        return self.lo.converged and self.hi.converged


def hull(ci, traces, q):
    """``ci`` (n, 2) widened to each profiled parameter's profile interval at the quantile q."""
    out = np.array(ci, dtype=float, copy=True)
    for j, tr in enumerate(traces or ()):
        if tr is not None:
            lo, hi = tr.interval(q)
            out[j] = [min(out[j, 0], lo), max(out[j, 1], hi)]
    return out


class _Loss:
    """``L(θ) = ‖res(θ)‖²``, ``res = [r(θ); √λ θ]``, with θ_j held at a value: the residual and
    its Jacobian on the free columns, None where the drift is not finite at the data."""

    def __init__(self, prob, lam, j, n):
        self.prob, self.sl, self.j = prob, math.sqrt(float(lam)), j
        self.free = [k for k in range(n) if k != j]

    def full(self, u, t):
        th = np.empty(len(self.free) + 1)
        th[self.free] = u
        th[self.j] = t
        return th

    def __call__(self, u, t):
        return _residual(self.prob, self.sl, self.full(u, t), self.free)


def _residual(prob, sl, theta, cols):
    """``(res, ∂res/∂θ_cols)`` at θ, None where the drift is not finite at the data."""
    try:
        r, J = prob.evaluate(theta, cols)
    except DataError:
        return None
    res = np.concatenate([r, sl * theta])
    if not (np.isfinite(res).all() and np.isfinite(J).all()):
        return None
    return res, np.vstack([J, sl * np.eye(theta.size)[:, cols]])


def _constrained(loss, t, starts, tol, S):
    """``(u, L_p(t), converged)``: the loss minimised over the free parameters ``u`` at θ_j = t
    from the best of ``starts`` (None: the drift is not finite at the data at any start).

    Newton steps on ``JᵀJ + S`` (S: the residual's own curvature ``Σ res_i ∇²res_i`` on the free
    block, estimated once at the centre, :func:`residual_curvature`; where the residual is
    mostly noise, as here, Gauss–Newton alone converges only linearly — eleven evaluations a
    point on a toggle switch, against two or three), damped Levenberg–Marquardt-style when a
    step raises L; converged when the step's predicted decrease is below ``tol``
    (:data:`Z2_TOL` of z²).  Not converged in :data:`NEWTON_STEPS`: MINPACK's
    Levenberg–Marquardt (SciPy's ``least_squares(method="lm")``) finishes from there."""
    best = None
    for u in starts:
        out = loss(u, t)
        if out is not None and (best is None or out[0] @ out[0] < best[1]):
            best = (u, float(out[0] @ out[0]), out)
    if best is None:
        return None
    u, L, (res, J) = best
    if not loss.free:
        return u, L, True
    mu = 0.0
    for _ in range(NEWTON_STEPS):
        g = J.T @ res
        JJ = J.T @ J
        H = JJ + S
        step = _solve(H, g)
        if step is not None and 0.0 <= -(g @ step) <= tol:  # the Newton decrement
            return u, L, True
        if step is None or mu > 0.0:
            step = _solve(H + max(mu, 1e-3) * np.diag(np.diag(JJ)), g)
        out = None if step is None else loss(u + step, t)
        L_new = math.inf if out is None else float(out[0] @ out[0])
        if L_new < L:
            u, L, (res, J) = u + step, L_new, out
            mu = mu / 4.0 if mu > 1e-6 else 0.0
        else:
            mu = max(4.0 * mu, 1e-3)
    return _minpack(loss, t, u, L, tol, res.size)


def _solve(H, g):
    """``−H⁻¹g``, None when H is singular or the step not finite."""
    try:
        step = -np.linalg.solve(H, g)
    except np.linalg.LinAlgError:
        return None
    return step if np.isfinite(step).all() else None


def _minpack(loss, t, u, L, tol, size):
    """MINPACK's Levenberg–Marquardt from u (the Newton steps' fallback; ``size`` the
    residual's)."""
    from scipy.optimize import least_squares

    def fun(v):
        out = loss(v, t)
        return np.full(size, 1e150) if out is None else out[0]  # out of the domain: refused

    def jac(v):
        out = loss(v, t)
        return np.zeros((size, len(loss.free))) if out is None else out[1]

    ftol = min(1e-6, max(tol / max(L, 1e-300), 1e-15))
    sol = least_squares(fun, u, jac=jac, method="lm", ftol=ftol, xtol=1e-12, gtol=1e-12)
    L_sol = float(sol.fun @ sol.fun)
    if not L_sol <= L:  # (never worse than the start)
        return u, L, bool(sol.status > 0)
    return sol.x, L_sol, bool(sol.status > 0)


def residual_curvature(prob, lam, theta, steps):
    """``S ≈ Σ_i res_i ∇²res_i`` (n, n) at θ: the Hessian of ``L/2`` less its Gauss–Newton part,
    by forward differences of the gradient ``Jᵀres`` over ``steps`` (n,), symmetrised (the
    Gauss–Newton part averaged over both ends of each difference); zeros where an end is not
    finite."""
    sl = math.sqrt(float(lam))
    n = theta.size
    cols = list(range(n))
    res0, J0 = _residual(prob, sl, theta, cols)
    g0, JJ0 = J0.T @ res0, J0.T @ J0
    S = np.zeros((n, n))
    for k in range(n):
        th = theta.copy()
        th[k] += steps[k]
        out = _residual(prob, sl, th, cols)
        if out is None:
            continue
        res, J = out
        S[:, k] = (J.T @ res - g0) / steps[k] - 0.5 * (JJ0[:, k] + (J.T @ J)[:, k])
    return 0.5 * (S + S.T)


def _side(loss, centre_theta, L0, direction, half, q, path, c_gn, S):
    """Trace one side (``direction`` ±1) from the centre outwards (module docstring).

    The first point, at :data:`FIRST_STEP` of the linearised half-width ``half``, sets the scale
    (its z is ``FIRST_STEP·q``: the profile's curvature near the centre matched to the linearised
    interval); the next at ``half``, then farther while z stays below q.  Each fit starts from
    the better of the last optimum (a continuation along the valley) and the secant prediction
    ``θ_V + (t − θ_V,j)·path`` (``path``: the Gauss–Newton prediction for the first point, then
    the first point's own move per unit of θ_j); ``c_gn = (H⁻¹)_jj/se²`` the scale the
    Gauss–Newton curvature would give; ``S`` the residual's curvature on the free block."""
    j = loss.j
    centre = float(centre_theta[j])
    free = loss.free
    se = half / q
    ts, zs, ok = [], [], True
    dist, last, c = FIRST_STEP * half, centre_theta[free], None
    for _ in range(MAX_FITS):
        t = centre + direction * dist
        pred = (centre_theta + (t - centre) * path)[free]
        # tolerance: Z2_TOL of z² (before the scale is set, at the Gauss–Newton scale c_GN)
        tol = Z2_TOL / (c if c is not None else c_gn)
        starts = [pred] if len(ts) == 0 else [last, pred]  # (the centre is no start at t)
        fit = _constrained(loss, t, starts, tol, S)
        ts.append(t)
        if fit is None:
            zs.append(math.inf)
            return ProfileSide(np.array(ts), np.array(zs), "undefined", ok)
        last, L, conv = fit
        ok = ok and conv
        rise = max(L - L0, 0.0)
        if c is None:  # the scale: z = FIRST_STEP·q here
            if not rise > 0.0:  # flat at the first point (or the search stopped short of θ_V)
                return ProfileSide(np.array(ts), np.array([0.0]), "open", ok)
            c = (dist / se) ** 2 / rise
            moved = centre_theta.copy()
            moved[free] = last
            moved[j] = t
            path = (moved - centre_theta) / (t - centre)
        z = math.sqrt(rise * c)
        zs.append(z)
        if z >= REACHED * q:  # (z linear in t beyond: bound() extrapolates the last 2 %)
            return ProfileSide(np.array(ts), np.array(zs), "reached", ok)
        grow = GROWTH if z <= 0.0 else min(GROWTH, max(1.25, 1.1 * q / z))  # (z = 0: a lower L)
        dist = half if len(ts) == 1 else dist * grow
    return ProfileSide(np.array(ts), np.array(zs), "open", ok)


def profile_traces(prob, lam, theta_v, theta, ci, q):
    """The profiles of the parameters whose interval ``ci`` (n, 2) at quantile ``q`` is finite.

    Parameters
    ----------
    prob : GlobalProblem or LocalProblem (``evaluate(θ, cols) -> (r, J)``, ``model``)
    lam : the λ of the loss
    theta_v : (n,) its minimiser (the gradient search's optimum)
    theta : (n,) the reported estimate, about which ``ci`` is taken
    q : the quantile of ``ci``'s level (each side is traced until z passes it)

    Returns
    -------
    list of (ProfileTrace or None), one per parameter (None: not profiled); None when the model
    has more than :data:`MAX_PARAMS` parameters.
    """
    n = prob.model.n
    if n > MAX_PARAMS:
        return None
    theta_v = np.asarray(theta_v, dtype=float)
    theta = np.asarray(theta, dtype=float)
    ci = np.asarray(ci, dtype=float)
    finite = np.isfinite(ci).all(axis=1)
    if not finite.any():
        return [None] * n
    fast = prob.dense() if hasattr(prob, "dense") else None
    prob = prob if fast is None else fast
    r0, J0 = prob.evaluate(theta_v)
    L0 = float(r0 @ r0) + lam * float(theta_v @ theta_v)
    JJ = J0.T @ J0 + lam * np.eye(n)
    half = np.where(finite, 0.5 * (ci[:, 1] - ci[:, 0]), 0.0)
    steps = np.where(finite & (half > 0), FIRST_STEP * half, 1e-4 * (1.0 + np.abs(theta_v)))
    S = residual_curvature(prob, lam, theta_v, steps)
    Hinv_gn = np.linalg.pinv(JJ)
    try:  # the full curvature's prediction of the constrained optimum (Gauss–Newton's if not PD)
        np.linalg.cholesky(JJ + S)
        Hinv = np.linalg.inv(JJ + S)
    except np.linalg.LinAlgError:
        Hinv = Hinv_gn
    traces = []
    for j in range(n):
        lo, hi = ci[j]
        if not finite[j] or not (Hinv[j, j] > 0.0 and Hinv_gn[j, j] > 0.0):
            traces.append(None)
            continue
        loss = _Loss(prob, lam, j, n)
        S_ff = S[np.ix_(loss.free, loss.free)]
        path = Hinv[:, j] / Hinv[j, j]
        sides = []
        for direction, side_half in ((-1, theta[j] - lo), (1, hi - theta[j])):
            side_half = max(float(side_half), 1e-12 * (1.0 + abs(theta_v[j])))
            c_gn = Hinv_gn[j, j] / (side_half / q) ** 2
            sides.append(_side(loss, theta_v, L0, direction, side_half, q, path, c_gn, S_ff))
        traces.append(ProfileTrace(float(theta_v[j]), *sides))
    return traces


def attach(report, prob, lam, theta_v, theta):
    """``report`` with the profiles of a non-affine fit: ``profile`` set, ``ci`` the hull, a note
    naming the intervals the profile widened or left open, and a ConvergenceWarning (and a
    note) when a constrained fit stopped before its tolerances."""
    if report.ci is None:
        return report
    q = t_quantile(report.ci_level, report.dof)
    traces = profile_traces(prob, lam, theta_v, theta, report.ci, q)
    if traces is None:
        note = (
            f"intervals are the linearisation's (drift not affine in θ): with more than "
            f"{MAX_PARAMS} parameters they are not profiled"
        )
        return replace(report, notes=[*report.notes, note])
    ci = hull(report.ci, traces, q)
    notes = list(report.notes)
    changed = []
    for j, tr in enumerate(traces):
        if tr is None or np.array_equal(ci[j], report.ci[j]):
            continue
        lo, hi = report.ci[j]
        new = f"[{_fmt(ci[j, 0])}, {_fmt(ci[j, 1])}]"
        open_side = (
            " (no bound on the open side: the loss flattens)"
            if not np.isfinite(ci[j]).all()
            else ""
        )
        changed.append(
            f"{report.param_names[j]} {new}{open_side}, linearised [{_fmt(lo)}, {_fmt(hi)}]"
        )
    if changed:
        notes.append(
            "profile (drift not affine in θ): the loss's profile reaches beyond the linearised "
            "interval of " + "; ".join(changed) + " — the interval shown is the hull of both"
        )
    failed = [report.param_names[j] for j, tr in enumerate(traces) if tr and not tr.converged]
    if failed:
        msg = (
            "the profile's constrained fits did not all converge for "
            + ", ".join(failed)
            + ": their profile intervals may be too narrow"
        )
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
        notes.append("WARNING: " + msg)
    strength = report.strength
    if strength is not None:  # the labels of the intervals the profile changed, read again
        strength = relabel(
            strength, theta, ci, report.ci, report.data_factor_range, opened="no (open profile)"
        )
    status = report.status
    if status is not None:  # an interval the profile opened: not identifiable on that side
        opened = ~np.isfinite(ci).all(axis=1) & np.isfinite(report.ci).all(axis=1)
        status = [NOT_IDENTIFIABLE if opened[j] else st for j, st in enumerate(status)]
    return replace(report, profile=traces, ci=ci, notes=notes, strength=strength, status=status)


def _fmt(v):
    return f"{v:.4g}" if np.isfinite(v) else ("-inf" if v < 0 else "inf")
