"""Misspecification test: is the residual of a fit larger than its sampling noise allows?

Under a correct model the residual ``r = Aθ̂ − b ≈ (I − P) ε̄`` is pure sampling noise, with
``ε̄ = Aθ* − b`` the mean Stein feature at the truth and P the projection onto the resolved left
singular directions of A.  Its covariance ``S_r`` is estimated from the projected block
deviations ``(I − P)[(A_b − A)θ̂ − (b_b − b)]``.  The statistic is ``T = ‖r‖² / tr Ŝ_r`` (≈ 1
under a correct model); ``h = (tr S_r)² / tr(S_r²)`` is the effective dimension of the residual
noise (tr S_r² estimated without the
Wishart bias of B − 1 degrees of freedom), reported as ``misspec_dim``.  The p-value itself uses
the whole estimated spectrum μ_j of Ŝ_r: under Gaussian block noise ``T = Σ μ_j z_j² /
Σ μ_j χ²_{B−1,j}/(B−1)``, whose tail ``P(T > t)`` Imhof's formula gives exactly (the F
approximation matches two moments only and is far too light-tailed when a few directions dominate
the noise, as for Lorenz: p = 4e-7 where Imhof gives 4e-5 for a ~4σ fluctuation of the lobe
occupancy).

Accuracy.  The Imhof integral is computed with its error estimate (adaptive quadrature on [0, 1]
and, in log u, on [1, U] split at the scales 1/|λ_r|; the truncation at U is bounded rigorously,
see :func:`imhof_sf`).  A p-value below the accuracy of the integral (or below ``IMHOF_FLOOR``,
1e-12) is given as a bound, ``p < 1e-12``, never as a number; an integral whose quadrature did
not converge is reported as such (``TailProbability.converged``, a ``ConvergenceWarning``).
The p-value is roughly uniform when some θ satisfies the Fokker–Planck constraints,
small when none does.  It also tests the *data*:
a snapshot that has not settled, or a simulator's discretisation bias at very large N, lowers it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ConvergenceWarning, DynosedError
from .blockops import blocks_times

__all__ = [
    "misspecification_test",
    "verdict_test",
    "PROFILE_MAX_DIRECTIONS",
    "birge_ratio",
    "profile_along",
    "residual_deviations",
    "misspecification_profile",
    "block_weights",
    "TailProbability",
    "ratio_tail",
    "imhof_sf",
    "IMHOF_FLOOR",
]

#: Smallest p-value given as a number; below it (or below ten times the integration error) the
#: p-value is an upper bound ("p < 1e-12").
IMHOF_FLOOR = 1e-12
#: Most resolved directions the verdict's test is profiled along (:func:`verdict_test`); with
#: more (networks) it is taken at the Tikhonov solution: the profile's block products are
#: B·m·(n·r + r²) operations for r directions, at network size as many as the solve's.
PROFILE_MAX_DIRECTIONS = 64
#: Subintervals per adaptive quadrature of the Imhof integral.
IMHOF_LIMIT = 500
#: Requested absolute accuracy of the Imhof integral (of the p-value: ÷π).
IMHOF_EPSABS = 1e-14


def block_weights(counts):
    """Block weights ``N_b / N`` (B,); at least two blocks are needed for a noise estimate."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 1 or counts.size < 2:
        raise DynosedError(
            f"at least 2 data blocks are needed for sampling noise, got {counts.size}"
        )
    return counts / counts.sum()


@dataclass(frozen=True)
class TailProbability:
    """A tail probability computed by numerical integration, with its accuracy.

    Attributes
    ----------
    value : float
        The probability; when ``bound`` is True an upper bound (the probability is below it).
    error : float
        Estimated absolute error of the integral behind it (quadrature + truncation).
    bound : bool
        True when the probability is below the integration accuracy or ``IMHOF_FLOOR``:
        ``value`` is then an upper bound (a power of ten), not an estimate.
    converged : bool
        False when the quadrature stopped before meeting its error criterion (``message``
        says why); ``value`` is then its best estimate, to be treated as provisional.
    message : str
        Why the integration did not converge ("" when it did).
    """

    value: float
    error: float = 0.0
    bound: bool = False
    converged: bool = True
    message: str = ""

    def __float__(self):
        return float(self.value)

    def __str__(self):
        if self.bound:
            return f"p < {self.value:.0e}".replace("e-0", "e-")
        return f"p = {self.value:.3g}"


def _decade_above(x):
    """The smallest power of ten ≥ x (an upper bound shown with one digit stays a bound)."""
    e = math.ceil(math.log10(x))
    return 10.0**e if 10.0**e >= x else 10.0 ** (e + 1)


def _quad(f, a, b, points=None, limit=IMHOF_LIMIT):
    """``quad`` with its error estimate and status: (value, abserr, message or "")."""
    from scipy import integrate

    with warnings.catch_warnings(record=True) as caught:
        # full_output: QUADPACK's failure codes come back as a message instead of a warning;
        # any IntegrationWarning still raised is recorded here and turned into the status
        warnings.simplefilter("always", integrate.IntegrationWarning)
        out = integrate.quad(
            f,
            a,
            b,
            full_output=1,
            epsabs=IMHOF_EPSABS,
            epsrel=1e-12,
            limit=limit,
            points=points,
        )
    other = [w for w in caught if not issubclass(w.category, integrate.IntegrationWarning)]
    for w in other:  # not ours to swallow
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    msgs = [str(w.message) for w in caught if issubclass(w.category, integrate.IntegrationWarning)]
    if len(out) == 4:
        msgs.append(str(out[3]))
    # QUADPACK's first sentence says what happened; the rest is generic advice
    msgs = [" ".join(m.split()).split(". ")[0].rstrip(".") for m in msgs]
    text = "; ".join(msgs)
    return (
        float(out[0]),
        float(out[1]),
        (f"quadrature on [{a:.3g}, {b:.3g}]: {text}" if text else ""),
    )


def _breakpoints(v, a, b, gap=1e-6):
    """Distinct points of ``v`` in (a, b), ``gap·(b − a)`` apart from each other and the ends.

    Breakpoints that (nearly) coincide — equal weights that differ in their last bits — would give
    QUADPACK a subinterval a few ulps wide, where it reports "extremely bad integrand behaviour"
    although the integrand is smooth there; merging them changes nothing in the integral.
    """
    tol = gap * (b - a)
    out = []
    for x in np.sort(np.asarray(v, dtype=float)):
        if a + tol < x < b - tol and (not out or x - out[-1] > tol):
            out.append(float(x))
    return out or None


def imhof_sf(lams, dofs, limit=None):
    """``P(Σ_r λ_r χ²_{h_r} > 0)`` for independent central chi-squares (Imhof 1961).

    ``P(Q > 0) = ½ + (1/π) ∫₀^∞ sin θ(u) / (u ρ(u)) du`` with ``θ = ½ Σ h_r atan(λ_r u)`` and
    ``ρ = Π (1 + λ_r² u²)^{h_r/4}`` (λ scaled to max |λ_r| = 1).  The integral is split into
    [0, 1] in u and [1, U] in v = log u (where the integrand ``sin θ(e^v)/ρ(e^v)`` is smooth on
    the scale of its features, the breakpoints ``v = −log|λ_r|``), each by adaptive quadrature
    with its error estimate.  The tail beyond U is bounded rigorously: for u ≥ U and the set J
    of terms with ``a_r = λ_r²U² ≥ 1``, ``ρ(u) ≥ ρ(U) Π_J (a_r/(1 + a_r))^{h_r/4} (u/U)^{s_J}``
    with ``s_J = ½ Σ_J h_r``, so ``|∫_U^∞| ≤ 1 / (s_J ρ(U) Π_J (a_r/(1 + a_r))^{h_r/4})``; U is
    doubled until that is below 1e-16.

    Parameters
    ----------
    lams : (R,) array
        Weights λ_r (any signs; zeros are dropped).
    dofs : (R,) array
        Degrees of freedom h_r > 0.
    limit : int, optional
        Subdivisions per quadrature beyond the breakpoints (default ``IMHOF_LIMIT``).

    Returns
    -------
    (p, error, message) : (float, float, str)
        The probability (not clipped), the bound on its absolute error (quadrature estimate +
        truncation bound + rounding), and "" or why the quadrature did not converge.
    """
    lams = np.asarray(lams, dtype=float)
    dofs = np.asarray(dofs, dtype=float)
    keep = lams != 0.0
    lams, dofs = lams[keep], dofs[keep]
    if lams.size == 0:
        return 0.0, 0.0, ""  # Q ≡ 0: P(Q > 0) = 0
    lams = lams / np.abs(lams).max()
    half = 0.5 * dofs

    def theta(u):
        return float(np.sum(half * np.arctan(lams * u)))

    def logrho(u):
        return 0.25 * float(np.sum(dofs * np.log1p((lams * u) ** 2)))

    def f(u):
        if u == 0.0:
            return float(np.sum(half * lams))  # θ'(0)
        return math.sin(theta(u)) / u * math.exp(-logrho(u))

    def g(v):
        u = math.exp(v)
        return math.sin(theta(u)) * math.exp(-logrho(u))

    def log_tail(U):
        a = (lams * U) ** 2
        J = a >= 1.0
        return (
            -math.log(0.5 * dofs[J].sum())
            - logrho(U)
            - float(np.sum(0.25 * dofs[J] * np.log(a[J] / (1.0 + a[J]))))
        )

    U = 2.0  # ≥ 1: the largest |λ| is in J
    while log_tail(U) > math.log(1e-16) and U < 1e200:
        U *= 2.0
    V = math.log(U)
    pts = _breakpoints(-np.log(np.abs(lams)), 0.0, V)
    limit = IMHOF_LIMIT if limit is None else int(limit)
    v1, e1, m1 = _quad(f, 0.0, 1.0, limit=limit)
    v2, e2, m2 = _quad(g, 0.0, V, points=pts, limit=limit + len(pts or ()))
    trunc = math.exp(log_tail(U))
    val = v1 + v2
    # rounding of ½ + val/π and of the integrand sums (a few ulps of the O(1) parts)
    err = (e1 + e2 + trunc) / math.pi + 8 * float(np.finfo(float).eps)
    msg = "; ".join(m for m in (m1, m2) if m)
    if trunc > 1e-10:
        msg = "; ".join(filter(None, [msg, f"truncation error {trunc:.1e} at u = {U:.1e}"]))
    return 0.5 + val / math.pi, err, msg


def ratio_tail(mu, k, t, limit=None) -> TailProbability:
    """``P(T > t)`` for ``T = Σ_j μ_j z_j² / Σ_j μ_j χ²_{k,j}/k`` (all independent).

    The null law of the misspecification statistic in the eigenbasis of the estimated residual
    covariance (module docstring).  With h equal weights it is the F(h, k·h) law.

    Parameters
    ----------
    mu : (h,) array
        Positive weights μ_j.
    k : int
        Degrees of freedom of each weight's estimate (B − 1).
    t : float
        Observed statistic.
    limit : int, optional
        Subintervals per quadrature (:func:`imhof_sf`).

    Returns
    -------
    TailProbability
        An estimate with its error, or an upper bound when below ``IMHOF_FLOOR`` or ten times the
        integration error; ``converged`` False (and a message) when the quadrature failed.
    """
    mu = np.asarray(mu, dtype=float)
    if t <= 0.0:
        return TailProbability(1.0)
    if not np.isfinite(t):
        return TailProbability(0.0)
    p, err, msg = imhof_sf(
        np.concatenate([mu, -t * mu / k]),
        np.concatenate([np.ones(mu.size), np.full(mu.size, float(k))]),
        limit=limit,
    )
    if not math.isfinite(p) or not math.isfinite(err):
        return TailProbability(1.0, math.inf, True, False, msg or "the integral is not finite")
    converged = not msg
    if p < max(IMHOF_FLOOR, 10.0 * err):
        # below what the integral resolves: an upper bound, never a number
        return TailProbability(_decade_above(max(IMHOF_FLOOR, p + err)), err, True, converged, msg)
    return TailProbability(min(p, 1.0), err, False, converged, msg)


def misspecification_test(
    A, b, theta, lam, A_blocks, b_blocks, counts, rank=None, dof=None, U=None, along=None
):
    """The test of :func:`misspecification_profile` without the components along ``along``:
    ``(stat, p_value, dof)``."""
    return misspecification_profile(
        A, b, theta, lam, A_blocks, b_blocks, counts, rank, dof, U, along
    )[:3]


def verdict_test(A, b, theta, lam, A_blocks, b_blocks, counts, rank, dof=None, U=None, along=None):
    """The test behind a report's verdict → ``(stat, p_value, dof, at)``: profiled along the
    resolved directions ``along`` (n, r) from the Tikhonov solution ``theta``, at the infimum's θ
    ``at`` when that is a finite point (an infimum in a limit along some directions: profiled
    once more along the others); else (no directions, more than
    :data:`PROFILE_MAX_DIRECTIONS`, or every direction's infimum a limit) at ``theta`` itself.
    ``U``'s first ``rank`` columns must be the resolved directions' left vectors.

    Why profiled: the residual's noise is estimated at the θ where the test is taken, and the
    noise of ``(A_b − A)θ`` grows with θ.  Where the columns are noisy against their signal the
    least-squares θ is attenuated, so the noise it carries is smaller than the truth's and a
    correct model is rejected (FitzHugh–Nagumo at N = 2000, every direction resolved: 3 of 20
    data sets at p < 0.01; profiled, none).  The profiled T is never above T at ``theta``; along
    a resolved direction the limit ``|z| → ∞`` is its curvature against its noise, large, so a
    residual off the range of A is not absorbed there.  Along unresolved directions it would be
    (a flat column's limit is small whatever b is:
    ``test_a_flat_direction_does_not_overturn_a_rejection``), so they are not profiled here
    (:func:`profile_along` along the open scale is a note of the report), and an attenuation
    along them still inflates T (docs/design-statistics.md §7)."""
    along = None if along is None else np.asarray(along, dtype=float).reshape(A.shape[1], -1)
    for _ in range(2):  # an infimum in a limit: once more along the directions with finite z
        if along is None or not 0 < along.shape[1] <= PROFILE_MAX_DIRECTIONS:
            break
        stat, p, h, z = misspecification_profile(
            A, b, theta, lam, A_blocks, b_blocks, counts, rank, dof, U, along
        )
        if np.all(np.isfinite(z)):
            return stat, p, h, theta + along @ z
        along = along[:, np.isfinite(z)]
    stat, p, h = misspecification_test(A, b, theta, lam, A_blocks, b_blocks, counts, rank, dof, U)
    return stat, p, h, np.asarray(theta, dtype=float)


def misspecification_profile(
    A,
    b,
    theta,
    lam,
    A_blocks,
    b_blocks,
    counts,
    rank=None,
    dof=None,
    U=None,
    along=None,
    p_wanted=None,
):
    """Calibrated test of "some θ satisfies the Fokker–Planck constraints" (module docstring).

    Parameters
    ----------
    A, b, theta, lam, A_blocks, b_blocks, counts
        The system, its solution and its per-block means.
    rank : int, optional
        Number of resolved directions (``IdentifiabilityReport.rank``); the block deviations
        are projected onto the complement of the corresponding left singular vectors.  Default:
        all directions with σ² > λ.  Projecting out unresolved (noise-dominated) directions
        too makes the test anti-conservative in rank-deficient models (measured on the
        all-free 2-D OU: 12 % instead of 5 % rejections at the 5 % level).
    dof : int, optional
        Degrees of freedom k of the noise estimate (default B − 1; the grouped pseudo-blocks of
        a design: Σ_g (B_g − 1)).
    U : (m, n) array, optional
        The left singular vectors of A (``numpy.linalg.svd(A, full_matrices=False)[0]``) when
        already computed; with ``rank`` given the singular values are not needed.
    along : (n, k) array, optional
        Directions along which the test is profiled (:func:`profile_along`): the open overall
        scale, along which a larger drift fits the data within the larger noise it carries.
    p_wanted : callable ``z -> bool``, optional
        With ``along``: no p-value (None, skipping its integral) when it returns False for the
        components z where the test is taken (a caller that wants p only for some z).

    Returns
    -------
    stat : float
        ``T = ‖r‖² / tr Ŝ_r`` (≈ 1 under a correct model).
    p_value : TailProbability
        ``P(T > t)`` under a correct model (:func:`ratio_tail`): an estimate, or an upper bound
        when below ``IMHOF_FLOOR`` or the integration accuracy, with its convergence status (a
        ``ConvergenceWarning`` is issued when the integral did not converge).
    dof : float
        Effective dimension h of the residual noise.
    (p_value is None when ``p_wanted`` skipped it.)
    z : (k,) array
        The components along ``along`` at which the test is taken (empty without it; ±inf where
        the infimum is the limit |z| → ∞).
    """
    w = block_weights(counts)
    B = w.size
    k = B - 1 if dof is None else int(dof)
    m, n = A.shape
    if U is None or rank is None:
        Uu, s, _ = np.linalg.svd(A, full_matrices=False)
        if rank is None:
            rank = int(np.sum(s * s > lam))
    else:
        Uu = U
    Ur = Uu[:, : int(rank)]
    r, e = residual_deviations(A, b, theta, A_blocks, b_blocks, Ur)
    z = np.zeros(0)
    if along is not None:
        r, e, z = profile_along(A, A_blocks, r, e, Ur, w, along)
    Z = np.sqrt(w)[:, None] * e
    # T and its null law are unchanged when r and Z are scaled alike: scale both to a largest
    # entry of 1, so that squares neither underflow (data ×1e40 gave tr(S²) = 0, a division
    # by zero) nor overflow
    unit = max(float(np.max(np.abs(Z), initial=0.0)), float(np.max(np.abs(r), initial=0.0)))
    if unit > 0 and np.isfinite(unit):
        Z, r = Z / unit, r / unit
    # its nonzero spectrum is that of Ŝ_r (for a design's pseudo-blocks: the grouped sum)
    K = Z @ Z.T / (B - 1)
    tr = float(np.trace(K))
    rr = float(r @ r)
    if not tr > 0:  # no residual noise at all (e.g. as many constraints as parameters)
        if rr > 0:
            return np.inf, TailProbability(0.0), 0.0, z
        return 0.0, TailProbability(1.0), 0.0, z
    tr2 = float(np.sum(K * K))
    # unbiased tr(S²) for a Wishart estimate with k degrees of freedom
    tr2_unbiased = k * k / ((k - 1.0) * (k + 2.0)) * (tr2 - tr * tr / k) if k > 1 else tr2
    tr2_unbiased = max(tr2_unbiased, tr * tr / max(1, m - rank))
    h = float(np.clip(tr * tr / tr2_unbiased, 1.0, max(1.0, m - rank)))
    stat = rr / tr
    if p_wanted is not None and z.size and not p_wanted(z):
        return stat, None, h, z
    # null distribution of T = Σ μ_j z_j² / Σ μ_j χ²_k,j/k in the eigenbasis of Ŝ_r (Imhof);
    # the F(h, k·h) approximation matches two moments only and is far too light-tailed when a
    # few directions dominate the residual noise (as for Lorenz)
    mu = np.linalg.eigvalsh(K)
    mu = mu[mu > 1e-12 * mu.max()]
    p = ratio_tail(mu, k, stat)
    if not p.converged:
        warnings.warn(
            f"misspecification p-value: the Imhof integral did not converge ({p.message}); "
            f"p ≈ {p.value:.3g} ± {p.error:.1g} is provisional",
            ConvergenceWarning,
            stacklevel=2,
        )
    return stat, p, h, z


def residual_deviations(A, b, theta, A_blocks, b_blocks, Ur):
    """(r, e): the residual ``Aθ − b`` (m,) and its block deviations
    ``(A_b − A)θ − (b_b − b)`` (B, m) projected off the resolved directions' left vectors ``Ur``
    — the test's noise at θ is ``Σ_b w_b ‖e_b‖²``."""
    r = A @ theta - b
    e = A_blocks @ theta - b_blocks - r[None, :]  # (B, m): block deviations at θ
    return r, e - (e @ Ur) @ Ur.T  # project out the resolved directions


def profile_along(A, A_blocks, r, e, Ur, w, along):
    """(r, e, z): the residual and its projected block deviations at ``θ + Σ z_i v_i`` with z
    minimising T over all of ℝᵏ and its limits (z = ±inf: the directions alone).

    Along the columns v_i of ``along`` the residual is ``R x`` and the deviations ``E_b x`` with
    ``x = (1, z)``, ``R = [r, Av_1, …]`` and ``E_b = [e_b, f_b1, …]`` (``f_bi = (A_b − A)v_i``,
    projected like e), so ``T = (B − 1)·xᵀNx / xᵀDx`` with ``N = RᵀR``,
    ``D = Σ_b w_b E_bᵀE_b``: a Rayleigh quotient, whose infimum over x (every z and every limit
    |z| → ∞) is the smallest generalised eigenvalue of (N, D), at its eigenvector.  An
    eigenvector with x₀ = 0 is a limit: r and e are then those of the directions alone (T and its
    null law are unchanged by a common scale).  Both matrices are taken in a common unit, so the
    profile is unchanged when the data are scaled.  D singular (a direction without block noise):
    no profile.  A direction whose curvature the data do not see has a limit T near its noise
    level whatever b is: profiled along it, the test loses its power (the report keeps the test at
    the estimate and only notes the profiled one)."""
    along = np.asarray(along, dtype=float).reshape(A.shape[1], -1)
    k = along.shape[1]
    AV = A @ along  # (m, k)
    F = blocks_times(A_blocks, along) - AV[None]  # (B, m, k)
    F = F - np.einsum("mj,bjk->bmk", Ur, np.einsum("bmk,mj->bjk", F, Ur))  # as e
    R = np.column_stack([r, AV])  # (m, k + 1)
    E = np.concatenate([e[:, :, None], F], axis=2)  # (B, m, k + 1)
    unit = max(float(np.max(np.abs(R), initial=0.0)), float(np.max(np.abs(E), initial=0.0)))
    if not (unit > 0 and np.isfinite(unit)):
        return r, e, np.zeros(k)
    R, E = R / unit, E / unit
    N = R.T @ R
    D = np.einsum("b,bmi,bmj->ij", w, E, E)
    from scipy.linalg import LinAlgError, eigh

    try:
        vectors = eigh(0.5 * (N + N.T), 0.5 * (D + D.T), subset_by_index=[0, 0])[1]
    except (LinAlgError, ValueError):  # D not positive definite
        return r, e, np.zeros(k)
    if vectors.shape[1] == 0:  # none returned (D at the subnormal scale): as D singular
        return r, e, np.zeros(k)
    x = vectors[:, 0]
    # (eigh scales x to xᵀDx = 1: where D is tiny x is huge and ‖x‖² overflowed — data × 1e80)
    top = float(np.max(np.abs(x)))
    if not (np.isfinite(top) and top > 0.0):
        return r, e, np.zeros(k)
    if abs(x[0]) / top <= 1e-12 * np.linalg.norm(x / top):  # a limit: the directions alone
        x[0] = 0.0
        z = np.where(np.abs(x[1:]) > 0, np.inf, 0.0)
    else:
        x = x / x[0]
        z = x[1:].copy()
    return (R @ x) * unit, np.einsum("bmi,i->bm", E, x) * unit, z


def birge_ratio(stat):
    """``S = max(1, √stat)`` for the misspecification statistic ``stat = ‖r‖²/tr Ŝ_r`` (≈ 1
    under a correct model; None or not finite: 1).

    A residual beyond its noise level is treated as extra noise of the same shape as the
    sampling noise — the Birge ratio, or the Particle Data Group's scale factor
    √(χ²/(N − 1)) applied when it exceeds one — so every interval is widened S-fold about its
    estimate (which parameters have finite intervals stays decided by the curvature's own
    noise, which the residual says nothing about).  Continuous in the data (no switch at the
    test's threshold), 1 on average-or-better residuals, and on a misspecified or
    discretisation-biased law (Rössler from Euler–Maruyama draws: S ≈ 6–15) it turns intervals
    that excluded the truth into wide ones (docs/design-statistics.md §7).
    """
    if stat is None or not np.isfinite(stat):
        return 1.0
    return float(max(1.0, np.sqrt(max(float(stat), 0.0))))
