"""Uncertainty of a fit: sandwich covariance, block bootstrap, confidence intervals and a
misspecification test — all from the per-block partial sums the assembly already returns.

The global (and local) systems are means over samples: ``A = Σ_b w_b A_b``, ``b = Σ_b w_b b_b``
with block means ``A_b, b_b`` over contiguous data blocks and weights ``w_b = N_b / N``
(:mod:`dynosed_sym.assembly.stein`).
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
:mod:`.report`), i.e. ``H⁻¹ (Aᵀ Ŝ A + …) H⁻¹``: bread H⁻¹, meat the block covariance
of the per-sample Stein features contracted with A.  The ``(A_b − A)ᵀ r`` term keeps the formula
valid for a misspecified model (r does not vanish); for a correct model it is of higher order.
Confidence intervals use Student's t with ``B − 1`` degrees of freedom, because the meat is
estimated from B blocks.

Parameters that are not identified (``report.free_params``) get infinite intervals: the
linearisation describes the regularised solution, not the freedom along unresolved directions.

Groups (designs)
----------------
A design (several environments, time courses: :mod:`dynosed_sym.assembly.designs`) stacks
independent *groups* of blocks.  Its noise is handed over as pseudo-blocks whose one-sample
formula above equals the grouped sum ``Σ_g Σ_j w_gj IF IFᵀ/(B_g − 1)`` (:class:`Grouping`); the
intervals then use ``Σ_g (B_g − 1)`` degrees of freedom and the bootstrap resamples the blocks
within each group.

Block bootstrap
---------------
Resample the B blocks with replacement, ``A* = Σ N_b A_b / Σ N_b`` over the drawn blocks (and b*),
solve ``θ* = (A*ᵀA* + λI)⁻¹A*ᵀb*``; standard errors are the spread of θ*, intervals the
percentiles.  With B = 32 blocks the bootstrap is coarse (it under-states the variance by
≈ (B − 1)/B); it is offered as a check on the linearisation.

The misspecification test is in :mod:`.misspecification`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import arguments
from .blockops import all_rtimes
from .linear import hinv, solve_tikhonov, unit_scale
from .misspecification import block_weights, verdict_test

__all__ = [
    "Uncertainty",
    "BootstrapResult",
    "block_influence",
    "sandwich_covariance",
    "scaled_sandwich",
    "influence_variance",
    "confidence_intervals",
    "block_bootstrap",
    "analyse_uncertainty",
    "block_weights",
    "t_quantile",
    "DEFAULT_LEVEL",
    "Grouping",
]


DEFAULT_LEVEL = 0.95


def block_influence(A, b, theta, lam, A_blocks, b_blocks, Hinv=None):
    """Influence ``IF_b`` (B, n) of each block's deviation on θ̂ (see the module docstring)."""
    Hinv = hinv(A, lam) if Hinv is None else Hinv
    r = A @ theta - b  # (m,)
    e = A_blocks @ theta - b_blocks - r[None, :]  # (B, m): (A_b − A)θ̂ − (b_b − b)
    g = all_rtimes(A_blocks, r) - (A.T @ r)[None, :] + e @ A  # (B, n)
    return -g @ Hinv


def sandwich_covariance(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv=None):
    """Sandwich covariance (n, n) of θ̂ from per-block means (module docstring).  Formed in units
    of powers of two (:func:`scaled_sandwich`); entries beyond double precision's range (θ̂ of
    data × 10⁹⁰ has variances ≈ 10⁻³⁶⁰) underflow only in this last product."""
    cov, units = scaled_sandwich(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv)
    return cov * units[:, None] * units[None, :]


def scaled_sandwich(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv=None):
    """The sandwich covariance in units of powers of two: ``(C, u)`` with ``Cov(θ̂) = C ⊙ u uᵀ``,
    ``C`` of unit size, and the standard errors ``√C_jj · u_j``.

    The influences are linear in (θ, b, b_b) jointly at a fixed A, so they are taken with θ, b
    and the block means b_b divided by a power of two ``u₀`` at or above both θ and the size of
    b over that of A (θ in the system's units, as the solve takes it:
    :func:`~.ustat.solve_system`), and each column j is then divided by a power of two at or
    above its largest entry — θ's columns rescaled, as A's would be, so ``u_j`` is u₀ times
    that power.  Both steps are exact, so wherever the covariance was a normal number it is the
    same bit for bit; data × c (θ̂ ≈ M/c²) no longer square influences of size 1/c², whose
    squares left double precision's range beyond c ≈ 10⁷⁷ (standard errors 0)."""
    w = block_weights(counts)
    unit = max(unit_scale(theta), unit_scale(b) / unit_scale(A))
    IF = block_influence(A, b / unit, theta / unit, lam, A_blocks, b_blocks / unit, Hinv)
    cols = np.array([unit_scale(col) for col in IF.T], dtype=float)
    IF = IF / cols
    B = IF.shape[0]
    return (IF * w[:, None]).T @ IF / (B - 1), cols * unit


def influence_variance(IF, counts):
    """(k,) the diagonal of the sandwich from block influences ``IF`` (B, k) — each column's
    weighted block variance ``Σ_b w_b IF_b² / (B − 1)`` — without the (k, k) matrix."""
    w = block_weights(counts)
    return w @ (IF * IF) / (w.size - 1)


def t_quantile(level, dof):
    """The two-sided Student-t quantile at ``level`` with ``dof`` degrees of freedom (normal when
    ``dof`` is not finite).  From ``scipy.special`` (``stdtrit``, ``ndtri``: the functions
    ``scipy.stats.t.ppf`` and ``norm.ppf`` evaluate, the same numbers bit for bit): importing
    ``scipy.stats`` took 0.7–0.9 s of every process's first fit."""
    from scipy.special import ndtri, stdtrit

    level = arguments.level(level)  # every confidence level ends here: in (0, 1) or a DataError
    p = 0.5 + level / 2.0
    return float(stdtrit(dof, p)) if np.isfinite(dof) else float(ndtri(p))


def confidence_intervals(theta, se, level=DEFAULT_LEVEL, dof=np.inf):
    """Two-sided intervals (n, 2) ``θ̂ ± t_{dof}·se`` (infinite where se is)."""
    q = t_quantile(level, dof)
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


@dataclass
class Grouping:
    """Pseudo-blocks of independent groups (a design; module docstring).

    Attributes
    ----------
    ids : (P,) int
        Group of each pseudo-block.
    kappa : (G,)
        Scale of each group's pseudo-blocks: pseudo-block (g, j) = mean + κ_g·(its deviation).
    """

    ids: np.ndarray
    kappa: np.ndarray

    @property
    def n_groups(self):
        return int(np.asarray(self.kappa).size)

    @property
    def dof(self):
        """Σ_g (B_g − 1): degrees of freedom of the grouped noise estimate."""
        sizes = np.bincount(np.asarray(self.ids), minlength=self.n_groups)
        return int(np.sum(sizes - 1))


def block_bootstrap(
    A_blocks,
    b_blocks,
    counts,
    lam,
    n_boot=200,
    seed=0,
    level=DEFAULT_LEVEL,
    grouping=None,
    solve=None,
):
    """Block bootstrap of the Tikhonov solution reusing the per-block means (module docstring).

    Parameters
    ----------
    A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,)
    lam : float
    n_boot : int
    seed : int
        Seeds the ``numpy.random.Generator`` that draws the blocks.
    level : float
    grouping : Grouping, optional
        Pseudo-blocks of a design: blocks are resampled within each group, and a group's
        resampled mean enters the stacked system with its deviation scaled back by 1/κ_g.
    solve : callable, optional
        ``solve(A*, b*, A_blocks*, b_blocks*, counts*) -> θ*`` for another estimator (the
        U-statistic ones, :mod:`.ustat`, recompute their correction from the drawn blocks);
        default the Tikhonov solve.

    Returns
    -------
    BootstrapResult
    """
    counts = np.asarray(counts, dtype=float)
    block_weights(counts)
    B = counts.size
    rng = np.random.default_rng(seed)
    thetas = np.empty((int(n_boot), A_blocks.shape[2]))
    if grouping is None:
        draws = rng.integers(0, B, size=(int(n_boot), B))
        for k, idx in enumerate(draws):
            mult = np.bincount(idx, minlength=B) * counts
            w = mult / mult.sum()
            A_s = np.tensordot(w, A_blocks, axes=1)
            b_s = w @ b_blocks
            if solve is None:
                thetas[k] = solve_tikhonov(A_s, b_s, lam)
            else:
                thetas[k] = solve(A_s, b_s, A_blocks[idx], b_blocks[idx], counts[idx])
    else:
        w0 = counts / counts.sum()
        A = np.tensordot(w0, A_blocks, axes=1)
        b = w0 @ b_blocks
        members = [np.flatnonzero(grouping.ids == g) for g in range(grouping.n_groups)]
        for k in range(int(n_boot)):
            coef = np.zeros(B)
            drawn = []
            for g, idx in enumerate(members):
                mult = np.bincount(rng.integers(0, idx.size, idx.size), minlength=idx.size)
                wg = mult * counts[idx]
                coef[idx] = wg / wg.sum() / grouping.kappa[g]
                drawn.append(np.repeat(idx, mult))
            # A* = A + Σ_g (1/κ_g) Σ_j w*_gj (A_gj − A): each group's resampled mean deviation
            A_s = A + np.tensordot(coef, A_blocks, axes=1) - coef.sum() * A
            b_s = b + coef @ b_blocks - coef.sum() * b
            if solve is None:
                thetas[k] = solve_tikhonov(A_s, b_s, lam)
            else:  # the drawn pseudo-blocks carry the estimator's block correction
                idx = np.concatenate(drawn)
                thetas[k] = solve(A_s, b_s, A_blocks[idx], b_blocks[idx], counts[idx])
    alpha = (1.0 - level) / 2.0
    ci = np.quantile(thetas, [alpha, 1.0 - alpha], axis=0).T
    return BootstrapResult(
        thetas=thetas,
        se=thetas.std(axis=0, ddof=1),
        ci=ci,
        level=float(level),
        n_blocks=B,
        seed=int(seed),
    )


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
    stat, p_value, effective_dim : misspecification test
        (:func:`~.misspecification.verdict_test`); ``p_value`` is an upper bound when
        ``p_value_bound``
    test_theta : (n,) the θ where the test was taken (the Tikhonov solution, or the point its
        profile along the resolved directions reached)
    p_value_bound, p_value_converged, p_value_message :
        Accuracy of the p-value (:class:`~.misspecification.TailProbability`).
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
    p_value_bound: bool = False
    p_value_converged: bool = True
    p_value_message: str = ""
    test_theta: np.ndarray | None = None


def analyse_uncertainty(
    A,
    b,
    theta,
    lam,
    A_blocks,
    b_blocks,
    counts,
    free_mask=None,
    level=DEFAULT_LEVEL,
    rank=None,
    dof=None,
    Hinv=None,
    theta_test=None,
    U=None,
    along=None,
) -> Uncertainty:
    """Everything in :class:`Uncertainty` in one call (used by :func:`.report.analyse`).

    ``dof``: degrees of freedom of the noise estimate (default B − 1; a design's grouped
    pseudo-blocks: :attr:`Grouping.dof`).  ``Hinv``: the bread of the estimator (default
    ``H_λ⁻¹``, the Tikhonov solve's; the U-statistic and resolved estimators pass theirs,
    :mod:`.ustat`).  ``theta_test``: where the misspecification test is taken (default θ̂;
    :mod:`.ustat` passes the Tikhonov solution).  ``U``: the left singular vectors of A when
    already computed (passed to the misspecification test).  ``along`` (n, r): the resolved
    directions the test is profiled along (:func:`~.misspecification.verdict_test`).
    """
    Hinv = hinv(A, lam) if Hinv is None else Hinv
    scaled, units = scaled_sandwich(A, b, theta, lam, A_blocks, b_blocks, counts, Hinv)
    cov = scaled * units[:, None] * units[None, :]  # (may underflow where se does not)
    se = np.sqrt(np.clip(np.diag(scaled), 0.0, None)) * units
    if free_mask is not None:
        se = np.where(free_mask, np.inf, se)
    dof = int(np.asarray(counts).size - 1) if dof is None else int(dof)
    ci = confidence_intervals(theta, se, level, dof)
    theta_test = theta if theta_test is None else theta_test
    stat, p, h, at = verdict_test(
        A, b, theta_test, lam, A_blocks, b_blocks, counts, rank, dof, U=U, along=along
    )
    return Uncertainty(
        covariance=cov,
        se=se,
        ci=ci,
        level=float(level),
        dof=dof,
        stat=stat,
        p_value=p.value,
        effective_dim=h,
        p_value_bound=p.bound,
        p_value_converged=p.converged,
        p_value_message=p.message,
        test_theta=at,
    )
