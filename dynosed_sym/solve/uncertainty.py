"""Uncertainty of a fit: sandwich covariance, block bootstrap, confidence intervals and a
misspecification test — all from the per-block partial sums the assembly already returns.

The global (and local) systems are means over samples: ``A = Σ_b w_b A_b``, ``b = Σ_b w_b b_b``
with block means ``A_b, b_b`` over contiguous data blocks and weights ``w_b = N_b / N``
(:func:`dynosed_sym.assembly.assemble_global`, :func:`dynosed_sym.data.assemble_stream`).
Blocks hold whole simulated chains (rows are ordered chain by chain), so block means are
independent even when samples inside a chain are correlated.  Nothing here needs a second pass
over the data.

Sandwich covariance
-------------------
θ̂ solves ``Ψ(θ) = Aᵀ(Aθ − b) + λθ = 0`` with ``H = AᵀA + λI``.  A first-order expansion in the
sampling errors ``δA, δb`` gives ``δθ = −H⁻¹[δAᵀ r + Aᵀ(δA θ̂ − δb)]`` with ``r = Aθ̂ − b``.
Evaluated for each block deviation this is the block *influence*

    IF_b = −H⁻¹ [ (A_b − A)ᵀ r + Aᵀ((A_b − A) θ̂ − (b_b − b)) ]          (n,)

and ``Cov(θ̂) ≈ Σ_b w_b IF_b IF_bᵀ / (B − 1)`` (the standard error of a weighted mean, as in
:mod:`dynosed_sym.report`), i.e. ``H⁻¹ (Aᵀ Ŝ A + …) H⁻¹``: bread H⁻¹, meat the block covariance
of the per-sample Stein features contracted with A.  The ``(A_b − A)ᵀ r`` term keeps the formula
valid for a misspecified model (r does not vanish); for a correct model it is of higher order.
Confidence intervals use Student's t with ``B − 1`` degrees of freedom, because the meat is
estimated from B blocks.

Parameters that are not identified (``report.free_params``) get infinite intervals: the
linearisation describes the regularised solution, not the freedom along unresolved directions.

Block bootstrap
---------------
Resample the B blocks with replacement, ``A* = Σ N_b A_b / Σ N_b`` over the drawn blocks (and b*),
solve ``θ* = (A*ᵀA* + λI)⁻¹A*ᵀb*``; standard errors are the spread of θ*, intervals the
percentiles.  With B = 32 blocks the bootstrap is coarse (it under-states the variance by
≈ (B − 1)/B); it is offered as a check on the linearisation.

Misspecification test
---------------------
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
occupancy).  The p-value is roughly uniform when some θ satisfies the Fokker–Planck constraints,
small when none does.  It also tests the *data*:
a snapshot that has not settled, or a simulator's discretisation bias at very large N, lowers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import DynosedError

__all__ = ["Uncertainty", "BootstrapResult", "block_influence", "sandwich_covariance",
           "confidence_intervals", "block_bootstrap", "misspecification_test", "hinv",
           "analyse_uncertainty", "DEFAULT_LEVEL"]

DEFAULT_LEVEL = 0.95


def hinv(A, lam):
    """``H_λ⁻¹ = (AᵀA + λI)⁻¹`` (n, n) from an SVD of A (stable for λ ≪ σ_min²; a pseudo-inverse
    when λ = 0 and A is rank deficient)."""
    m, n = A.shape
    _, s, Vt = np.linalg.svd(A, full_matrices=m < n)
    s_full = np.zeros(n)
    s_full[: s.size] = s[:n]
    denom = s_full * s_full + lam
    # λ = 0 with an exactly singular direction: pseudo-inverse (the minimum-norm θ̂ of
    # report.solve_tikhonov has no component there)
    inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=denom > 0)
    V = Vt.T
    return (V * inv) @ V.T


def _weights(counts):
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 1 or counts.size < 2:
        raise DynosedError(f"at least 2 data blocks are needed for sampling noise, got {counts.size}")
    return counts / counts.sum()


def block_influence(A, b, theta, lam, A_blocks, b_blocks, Hinv=None):
    """Influence ``IF_b`` (B, n) of each block's deviation on θ̂ (see the module docstring)."""
    Hinv = hinv(A, lam) if Hinv is None else Hinv
    r = A @ theta - b                                  # (m,)
    e = A_blocks @ theta - b_blocks - r[None, :]       # (B, m): (A_b − A)θ̂ − (b_b − b)
    g = np.einsum("bmn,m->bn", A_blocks, r) - (A.T @ r)[None, :] + e @ A   # (B, n)
    return -g @ Hinv


def sandwich_covariance(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv=None):
    """Sandwich covariance (n, n) of θ̂ from per-block means (module docstring)."""
    w = _weights(counts)
    IF = block_influence(A, b, theta, lam, A_blocks, b_blocks, Hinv)
    B = IF.shape[0]
    return np.einsum("b,bi,bj->ij", w, IF, IF) / (B - 1)


def _t_quantile(level, dof):
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2.0, dof)) if np.isfinite(dof) else float(
        stats.norm.ppf(0.5 + level / 2.0))


def confidence_intervals(theta, se, level=DEFAULT_LEVEL, dof=np.inf):
    """Two-sided intervals (n, 2) ``θ̂ ± t_{dof}·se`` (infinite where se is)."""
    q = _t_quantile(level, dof)
    se = np.asarray(se, dtype=float)
    half = q * se
    return np.column_stack([theta - half, theta + half])


@dataclass
class BootstrapResult:
    """Block-bootstrap replicates and their summaries.

    Attributes
    ----------
    thetas : (n_boot, n) replicates θ*
    se : (n,) standard deviation of the replicates
    ci : (n, 2) percentile intervals at ``level``
    level : float
    n_blocks : int
    seed : int
    """

    thetas: np.ndarray
    se: np.ndarray
    ci: np.ndarray
    level: float
    n_blocks: int
    seed: int


def block_bootstrap(A_blocks, b_blocks, counts, lam, n_boot=200, seed=0, level=DEFAULT_LEVEL):
    """Block bootstrap of the Tikhonov solution reusing the per-block means (module docstring).

    Parameters
    ----------
    A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,)
    lam : float
    n_boot : int
    seed : int
        Seeds the ``numpy.random.Generator`` that draws the blocks.
    level : float

    Returns
    -------
    BootstrapResult
    """
    from .report import solve_tikhonov

    counts = np.asarray(counts, dtype=float)
    _weights(counts)
    B = counts.size
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, B, size=(int(n_boot), B))
    thetas = np.empty((int(n_boot), A_blocks.shape[2]))
    for k, idx in enumerate(draws):
        mult = np.bincount(idx, minlength=B) * counts
        w = mult / mult.sum()
        A_s = np.tensordot(w, A_blocks, axes=1)
        b_s = w @ b_blocks
        thetas[k] = solve_tikhonov(A_s, b_s, lam)
    alpha = (1.0 - level) / 2.0
    ci = np.quantile(thetas, [alpha, 1.0 - alpha], axis=0).T
    return BootstrapResult(thetas=thetas, se=thetas.std(axis=0, ddof=1), ci=ci, level=float(level),
                           n_blocks=B, seed=int(seed))


def misspecification_test(A, b, theta, lam, A_blocks, b_blocks, counts, rank=None):
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

    Returns
    -------
    stat : float
        ``T = ‖r‖² / tr Ŝ_r`` (≈ 1 under a correct model).
    p_value : float
        ``P(F(h, (B−1)h) > T)``.
    dof : float
        Effective dimension h of the residual noise.
    """
    from scipy import stats

    w = _weights(counts)
    B = w.size
    k = B - 1
    m, n = A.shape
    Uu, s, _ = np.linalg.svd(A, full_matrices=False)
    if rank is None:
        rank = int(np.sum(s * s > lam))
    Ur = Uu[:, : int(rank)]
    r = A @ theta - b
    e = A_blocks @ theta - b_blocks - r[None, :]           # (B, m): block deviations at θ̂
    e = e - (e @ Ur) @ Ur.T                                 # project out the resolved directions
    Z = np.sqrt(w)[:, None] * e
    K = Z @ Z.T / k                                         # its nonzero spectrum is that of Ŝ_r
    tr = float(np.trace(K))
    rr = float(r @ r)
    if not tr > 0:  # no residual noise at all (e.g. as many constraints as parameters)
        return (np.inf, 0.0, 0.0) if rr > 0 else (0.0, 1.0, 0.0)
    tr2 = float(np.sum(K * K))
    # unbiased tr(S²) for a Wishart estimate with k degrees of freedom
    tr2_unbiased = k * k / ((k - 1.0) * (k + 2.0)) * (tr2 - tr * tr / k) if k > 1 else tr2
    tr2_unbiased = max(tr2_unbiased, tr * tr / max(1, m - rank))
    h = float(np.clip(tr * tr / tr2_unbiased, 1.0, max(1.0, m - rank)))
    stat = rr / tr
    # null distribution of T = Σ μ_j z_j² / Σ μ_j χ²_k,j/k in the eigenbasis of Ŝ_r (Imhof);
    # the F(h, k·h) approximation matches two moments only and is far too light-tailed when a
    # few directions dominate the residual noise (as for Lorenz)
    mu = np.linalg.eigvalsh(K)
    mu = mu[mu > 1e-12 * mu.max()]
    p = _imhof_sf(np.concatenate([mu, -stat * mu / k]),
                  np.concatenate([np.ones(mu.size), np.full(mu.size, float(k))]))
    if not p > IMHOF_FLOOR:  # below the integration accuracy: the F tail, capped
        p = min(float(stats.f.sf(stat, h, k * h)), IMHOF_FLOOR)
    return stat, float(min(p, 1.0)), h


IMHOF_FLOOR = 1e-12


def _imhof_sf(lams, dofs, tol=1e-14):
    """``P(Σ_r λ_r χ²_{h_r} > 0)`` for independent central chi-squares (Imhof 1961).

    ``P(Q > 0) = ½ + (1/π) ∫₀^∞ sin θ(u) / (u ρ(u)) du`` with ``θ = ½ Σ h_r atan(λ_r u)`` and
    ``ρ = Π (1 + λ_r² u²)^{h_r/4}``; the integral is truncated where ``ρ`` bounds the tail by ``tol``.
    """
    import warnings

    from scipy import integrate

    lams = np.asarray(lams, dtype=float)
    dofs = np.asarray(dofs, dtype=float)
    lams = lams / np.abs(lams).max()
    s = 0.5 * dofs.sum()

    def logrho(u):
        return 0.25 * np.sum(dofs * np.log1p((lams * u) ** 2))

    def f(u):
        if u == 0.0:
            return 0.5 * np.sum(dofs * lams)
        return np.sin(0.5 * np.sum(dofs * np.arctan(lams * u))) / (u * np.exp(logrho(u)))

    U = 1.0
    while np.exp(-logrho(U)) / s > tol and U < 1e12:
        U *= 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        val, _ = integrate.quad(f, 0.0, U, limit=2000, epsabs=tol, epsrel=1e-10)
    return 0.5 + val / np.pi


@dataclass
class Uncertainty:
    """Standard errors, intervals and the misspecification test of one fit.

    Attributes
    ----------
    covariance : (n, n) sandwich covariance of θ̂
    se : (n,) standard errors (inf for parameters that are not identified)
    ci : (n, 2) intervals at ``level`` (Student t, ``dof`` = B − 1)
    level : float
    dof : int
    stat, p_value, effective_dim : misspecification test (:func:`misspecification_test`)
    """

    covariance: np.ndarray
    se: np.ndarray
    ci: np.ndarray
    level: float
    dof: int
    stat: float
    p_value: float
    effective_dim: float
    notes: list = field(default_factory=list)


def analyse_uncertainty(A, b, theta, lam, A_blocks, b_blocks, counts, free_mask=None,
                        level=DEFAULT_LEVEL, rank=None) -> Uncertainty:
    """Everything in :class:`Uncertainty` in one call (used by :func:`dynosed_sym.report.analyse`)."""
    Hinv = hinv(A, lam)
    cov = sandwich_covariance(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    if free_mask is not None:
        se = np.where(free_mask, np.inf, se)
    dof = int(np.asarray(counts).size - 1)
    ci = confidence_intervals(theta, se, level, dof)
    stat, p, h = misspecification_test(A, b, theta, lam, A_blocks, b_blocks, counts, rank)
    return Uncertainty(covariance=cov, se=se, ci=ci, level=float(level), dof=dof, stat=stat,
                       p_value=p, effective_dim=h)
