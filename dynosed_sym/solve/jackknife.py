"""The delete-one-block jackknife of the resolved U-estimate: its bias beyond first order and a
check that the second-order expansion holds (docs/design-statistics.md, §5).

The corrected normal equations on the resolved directions R,
``(V_Rᵀ(AᵀA − αS)V_R) z = V_Rᵀ(Aᵀb − αs)``, have an unbiased matrix and right-hand side, but the
estimate is their ratio: the noise of the matrix — of ``AᵀA`` and of S itself, which B blocks
estimate with B − 1 degrees of freedom — biases ``z`` at second order.  With many resolved
directions that are only moderately above their noise the terms add up over the directions (the
interventional designs of docs/peers.md: about 40 directions, 128 pseudo-blocks) and the bias
reaches several standard errors, larger than the V-statistic's.  b̂₂
(:func:`second_order_bias`) holds only the design-noise × residual-noise term; the
jackknife holds every second-order term:

    θ̂_(−k) = the same solve without block k (the mean, S and s of the other B − 1 blocks),
    bias = (B − 1)(Σ_k w_k θ̂_(−k) − θ̂),       Var_JK = (B − 1) Σ_k w_k (θ̂_(−k) − θ̄)².

Every deleted system is an update of the full one along R (``A' = A − f_k ΔA_k``,
``f_k = w_k/(1 − w_k)``; ``Σ_{b≠k} w'_b (A_b − A')ᵀ(A_b − A') = (Σ_b w_bQ_b − w_kQ_k)/(1 − w_k) −
f_k² Q_k`` with ``Q_b = ΔA_bᵀΔA_b``), so the B solves cost ``2·B·m·r² + B·r³`` on the deviations
along R the solve already holds, never a second pass over the block means.

The expansion check.  Where the estimator is close to linear in the block means — the regime in
which a second-order bias term means anything — the jackknife's variance equals the sandwich's
to O(1/N).  A standard deviation off by more than 20 % (``ρ = max_j sd_JK,j / se_j``) says the
higher-order terms are not small: the bias is then taken with the gain
``clip((RHO_NONE − ρ)/(RHO_NONE − RHO_FULL), 0, 1)``, and b̂₂ (with its own gain) for the rest.
With many more resolved directions than blocks (r > :data:`MAX_RANK_PER_BLOCK`·B: the 20-gene
network, r ≈ 290 at B = 32) the check fails and the B solves would be the costliest step of the
fit: the jackknife is not computed there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .blockops import DeviationStream, deviation_rtimes, each_times, is_dense
from .grams import BlockGrams, map_parts
from .misspecification import block_weights
from .uncertainty import block_influence, influence_variance
from .weak import ridge_components

__all__ = [
    "Jackknife",
    "jackknife_resolved",
    "jackknife_gain",
    "jackknife_feasible",
    "jackknife_possible",
    "covariance_on",
    "covariance_and_coupling",
    "kept_unresolved",
    "second_order_bias",
    "second_order_gain",
    "bias_beyond_first_order",
    "resolved_blocks",
    "RHO_FULL",
    "RHO_NONE",
    "MAX_RANK_PER_BLOCK",
]

#: ρ (jackknife sd / sandwich se, the largest over the parameters) up to which the jackknife bias
#: is subtracted in full (docs/design-statistics.md, §5: chosen between the interventional
#: designs and the 10-gene network of the sweep, where the two agree closely, and the 20-gene
#: network, where they do not).
RHO_FULL = 1.2

#: ρ from which the jackknife bias is not used.
RHO_NONE = 1.4

#: The jackknife is computed while the resolved directions are at most this many per block.
MAX_RANK_PER_BLOCK = 4


@dataclass
class Jackknife:
    """The jackknife of one resolved solve (module docstring).

    Attributes
    ----------
    bias : (n,) ``(B − 1)(Σ_k w_k θ̂_(−k) − θ̂)`` on R (zeros when not computed)
    sd : (n,) the jackknife standard deviation of θ̂ (zeros when not computed)
    rho : float, ``max_j sd_j / se_j`` over parameters with a positive sandwich se (NaN: not
        computed)
    gain : float, the share of ``bias`` subtracted (:func:`jackknife_gain`)
    computed : bool
    """

    bias: np.ndarray
    sd: np.ndarray
    rho: float
    gain: float
    computed: bool


def jackknife_feasible(r, B):
    """Is the jackknife computed for r resolved directions and B blocks (B ≥ 3, 0 < r ≤
    :data:`MAX_RANK_PER_BLOCK`·B)?"""
    return B >= 3 and 0 < r <= MAX_RANK_PER_BLOCK * B


def jackknife_gain(rho):
    """``clip((RHO_NONE − ρ)/(RHO_NONE − RHO_FULL), 0, 1)``; 0 for a ρ that is not finite."""
    if not np.isfinite(rho):
        return 0.0
    return float(np.clip((RHO_NONE - rho) / (RHO_NONE - RHO_FULL), 0.0, 1.0))


def resolved_blocks(dAR, columns=None):
    """``(k, (A_k − A)V_R)`` block by block from the solve's deviations: a (B, m, r) array, the
    (B, m, n) array ``(A_b − A)V`` with R = ``columns`` (indices or a boolean mask), or a
    :class:`DeviationStream`."""
    columns = _indices(columns)
    if isinstance(dAR, DeviationStream):
        for lo, hi, D in dAR.chunks(columns):
            for k in range(lo, hi):
                yield k, D[k - lo]
        return
    for k in range(dAR.shape[0]):
        yield k, (dAR[k] if columns is None else np.take(dAR[k], columns, axis=1))


def jackknife_resolved(AR, b, dAR, db, w, correction, c, VR, se, columns=None) -> Jackknife:
    """The jackknife of ``z = (V_Rᵀ(AᵀA − αS)V_R)⁻¹V_Rᵀ(Aᵀb − αs)`` (module docstring).

    Parameters
    ----------
    AR : (m, r) ``A V_R``; b : (m,)
    dAR : the block deviations along R (:func:`resolved_blocks`); db : (B, m) ``b_b − b``
    w : (B,) block weights (sum 1)
    correction : (alpha, S_RR, s_R), the correction's scale on R and ``V_RᵀSV_R``, ``V_Rᵀs`` of
        the full solve (the deleted ones are updates of them)
    c : (r,) column scales (the resolved singular values: the solves run on ``V_R diag(1/c)``)
    VR : (n, r); se : (n,) the sandwich standard errors of θ̂ (for ρ)
    """
    B, r = w.size, AR.shape[1]
    n = VR.shape[0]
    if not jackknife_feasible(r, B):
        return Jackknife(np.zeros(n), np.zeros(n), float("nan"), 0.0, False)
    alpha, S_RR, s_R = correction
    cc = np.outer(c, c)
    G, g = AR.T @ AR, AR.T @ b
    Qt, qt = (B - 1) * S_RR, (B - 1) * s_R  # Σ_b w_b ΔA_bᵀΔA_b and Σ_b w_b ΔA_bᵀΔb_b along R
    z0 = _solve(G - alpha * S_RR, g - alpha * s_R, c, cc)

    def deleted(k, X):  # the solve without block k, from its deviations X along R
        f = w[k] / (1.0 - w[k])
        Qk, qk, P = X.T @ X, X.T @ db[k], AR.T @ X
        Gk = G - f * (P + P.T) + f * f * Qk
        gk = g - f * (AR.T @ db[k]) - f * (X.T @ b) + f * f * qk
        Sk = ((Qt - w[k] * Qk) / (1.0 - w[k]) - f * f * Qk) / (B - 2)
        sk = ((qt - w[k] * qk) / (1.0 - w[k]) - f * f * qk) / (B - 2)
        return _solve(Gk - alpha * Sk, gk - alpha * sk, c, cc)

    Z = _deleted_solves(deleted, dAR, columns, (B, r), AR.shape[0])
    if not np.isfinite(Z).all() or not np.isfinite(z0).all():
        return Jackknife(np.zeros(n), np.zeros(n), float("inf"), 0.0, True)
    zbar = w @ Z
    bias = VR @ ((B - 1) * (zbar - z0))
    T = (Z - zbar) @ VR.T  # (B, n)
    sd = np.sqrt((B - 1) * (w @ (T * T)))
    rho = _rho(sd, se)
    return Jackknife(bias, sd, rho, jackknife_gain(rho), True)


def _indices(columns):
    """Column indices (a boolean mask → its True positions; None stays None)."""
    if columns is None:
        return None
    columns = np.asarray(columns)
    return np.flatnonzero(columns) if columns.dtype == bool else columns


def _deleted_solves(deleted, dAR, columns, shape, m):
    """Z (B, r): ``deleted(k, X_k)`` for every block.  Regenerated deviations (a
    :class:`DeviationStream`) are read a chunk of blocks per part on threads (one BLAS thread
    each; each Z[k] is computed alone, so the result is the same bit for bit on any number of
    threads); held ones block by block.  Lazy block means (beyond the memory bound for dense
    ones) are read on the calling thread: each part then holds a chunk of the dense means too."""
    Z = np.empty(shape)
    if not isinstance(dAR, DeviationStream):
        for k, X in resolved_blocks(dAR, columns):
            Z[k] = deleted(k, X)
        return Z
    sel, parts = dAR.selected(columns), dAR.parts(columns)

    def part(bounds):
        lo, hi = bounds
        D = dAR.chunk(lo, hi, sel)
        return [deleted(k, D[k - lo]) for k in range(lo, hi)]

    B, r = shape
    ops = 2 * B * m * r * (dAR.V.shape[0] + 2 * r)  # the chunks' products and the Grams
    workers = None if is_dense(dAR.A_blocks) else 1
    for (lo, hi), zs in zip(parts, map_parts(part, parts, ops, workers)):
        Z[lo:hi] = zs
    return Z


def _solve(M, rhs, c, cc):
    """``M⁻¹ rhs`` on the scaled columns (``diag(1/c) M diag(1/c)`` is O(1)); NaN if singular."""
    try:
        return np.linalg.solve(M / cc, rhs / c) / c
    except np.linalg.LinAlgError:
        return np.full(c.size, np.nan)


def _rho(sd, se):
    """``max_j sd_j/se_j`` over the parameters with se_j above the floating-point floor."""
    se = np.asarray(se, dtype=float)
    live = np.isfinite(se) & (se > 1e-12 * max(float(np.max(se, initial=0.0)), 1e-300))
    if not live.any():
        return float("nan")
    return float(np.max(sd[live] / se[live]))


def covariance_on(dAR, db, counts, columns=None):
    """(V_RᵀSV_R, V_Rᵀs) from the block deviations along R, ``dAR = (A_b − A)V_R`` (B, m, r), and
    ``db = b_b − b`` (B, m): ``Σ_b w_b dAR_bᵀdAR_b/(B − 1)`` block by block (a symmetric product
    each, half the multiplications of one general product over the stacked rows).  ``columns``:
    ``dAR`` holds ``(A_b − A)V`` (B, m, n) and R is these columns (gathered block by block)."""
    w = block_weights(counts)
    B = dAR.shape[0]
    columns = _indices(columns)
    r = dAR.shape[2] if columns is None else columns.size
    S_RR, s_R = np.zeros((r, r)), np.zeros((r,) + db.shape[2:])  # db (B, m, k): k right-hand sides
    for k, X in resolved_blocks(dAR, columns):  # a stream: regenerated along R, chunk by chunk
        S_RR += w[k] * (X.T @ X)
        s_R += w[k] * (X.T @ db[k])
    return S_RR / (B - 1), s_R / (B - 1)


def covariance_and_coupling(A, b, A_blocks, b_blocks, counts, dAR, cols, zU):
    """(V_RᵀSV_R, V_Rᵀs, coupled): the correction on R, and for the jackknife the right-hand
    sides with the fill ``V_U z`` moved over (``b − AV_Uz``, the block deviations
    ``Δb_b − ΔA_bV_Uz`` and their ``V_Rᵀs``; None without a fill) — one pass over the deviations
    for both."""
    db = b_blocks - b[None]
    if isinstance(dAR, BlockGrams):

        def cov(Y):
            return _grams_covariance(dAR, A, A_blocks, Y, cols)
    else:

        def cov(Y):
            return covariance_on(dAR, Y, counts, cols)

    if zU is None:
        return (*cov(db), None)
    Az = A @ zU
    db_c = db - (A_blocks @ zU - Az[None])
    S_RR, s_both = cov(np.stack([db, db_c], axis=-1))
    return S_RR, s_both[:, 0], (b - Az, db_c, s_both[:, 1])


def _grams_covariance(grams, A, A_blocks, db, cols):
    """:func:`covariance_on` from the solve's :class:`~.grams.BlockGrams`: ``V_RᵀSV_R`` from the
    weighted Gram, ``V_Rᵀs`` from ``Σ_b w_b ΔA_bᵀdb_b`` (matrix-vector products only)."""
    B = len(grams)
    s_R = grams.V[:, cols].T @ np.tensordot(grams.w, deviation_rtimes(A, A_blocks, db), axes=1)
    return grams.on(cols) / (B - 1), s_R / (B - 1)


def jackknife_possible(r, A_blocks):
    return A_blocks is not None and jackknife_feasible(r, len(A_blocks))


def kept_unresolved(A, b, dirs, lam):
    """``V_U z`` (n,), the fill's components along the unresolved directions (None when there are
    none, or no directions: a given subspace)."""
    if dirs is None or dirs.resolved.all():
        return None
    return dirs.V[:, ~dirs.resolved] @ ridge_components(A, b, dirs, lam)[1]


def second_order_bias(A, b, theta, A_blocks, b_blocks, counts, Hp):
    """b̂₂ (n,): the design-noise × residual-noise bias of θ̂ (module docstring)."""
    w = block_weights(counts)
    B = w.size
    r = A @ theta - b
    psi = A_blocks @ theta - b_blocks - r[None]  # (B, m)
    u = (psi @ A) @ Hp  # (B, n): H⁺Aᵀψ̄_b (H⁺ symmetric)
    # Δ_b = A_b − A distributed over the products (no (B, m, n) copy of the deviations)
    t1 = (each_times(A_blocks, u) - u @ A.T) @ A  # (AᵀΔ_b u_b)_b
    Au = u @ A.T  # (B, m): A u_b
    t2 = deviation_rtimes(A, A_blocks, Au)  # (Δ_bᵀA u_b)_b
    return Hp @ (w @ (t1 + t2)) / (B - 1)


def second_order_gain(b2, se):
    """The share of b̂₂ that is subtracted: 1 while every |b̂₂_j| is at most the estimate's own
    standard error se_j, falling linearly to 0 at twice it (``clip(2 − max_j |b̂₂_j|/se_j, 0, 1)``).
    b̂₂ is a second-order term, O(1/N) against the O(N^-½) noise; one larger than the noise means
    the expansion behind it has failed — with many parameters per block (n ≳ B: a 20-gene network,
    ‖b̂₂‖ ≈ 20 for parameters of size 1) its noisy H⁺ enters twice."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(se > 0, np.abs(b2) / se, np.where(b2 != 0, np.inf, 0.0))
    worst = float(np.max(ratio, initial=0.0))
    return float(np.clip(2.0 - worst, 0.0, 1.0))


def bias_beyond_first_order(system, theta, Hp, on_R, deviations, coupled=None):
    """(the bias subtracted from θ̂, :class:`~.jackknife.Jackknife`): the jackknife's bias times
    its gain, and b̂₂ times its own gain (:func:`second_order_gain`) for the rest
    (:mod:`.jackknife`; both gains against the sandwich se at θ̂).

    ``coupled`` (b − AV_Uz, its block deviations, their V_Rᵀs): the jackknife's solves are those
    of the resolved part with the fill held on the right-hand side, ``θ_R`` plus the coupling
    shift ``H⁺SV_Uz`` (docs/design-statistics.md §5) — the same estimate as the fit's, whose
    deleted solves see how the coupling moves with each block.  Without it, the resolved part
    alone."""
    A, b, A_blocks, b_blocks, counts = system
    VR, c, correction = on_R
    dAR, cols = deviations
    if isinstance(dAR, BlockGrams):  # each block's own Gram on R: regenerated along R
        dAR = dAR.stream(A, A_blocks)
    IF = block_influence(A, b, theta, 0.0, A_blocks, b_blocks, Hp)
    se = np.sqrt(influence_variance(IF, counts))
    w = block_weights(counts)
    jb, jdb = b, b_blocks - b[None]
    if coupled is not None:
        jb, jdb, s_c = coupled
        correction = (correction[0], correction[1], s_c)
    jk = jackknife_resolved(A @ VR, jb, dAR, jdb, w, correction, c, VR, se, cols)
    bias = jk.gain * jk.bias
    if jk.gain < 1.0:
        b2 = second_order_bias(A, b, theta, A_blocks, b_blocks, counts, Hp)
        bias = bias + (1.0 - jk.gain) * second_order_gain(b2, se) * b2
    return bias, jk
