"""Stage 7 — solve and report: Tikhonov solve, rank against noise, freeness.

Noise model.  A and b are means of per-sample terms, so their sampling noise is
estimated from per-block means (``A_blocks``): the standard error of ``A v`` for
any direction v is ``sqrt(Σ_b w_b ‖(A_b − A) v‖² / (B − 1))`` with weights
``w_b = N_b / N`` (the usual standard error of a weighted mean).

Rank.  A right singular direction v_i is *resolved* when its singular value
exceeds ``rank_threshold`` times the standard error of ``A v_i`` (a direction the
model cannot see has σ_i of the order of that error, shrinking like N^(-1/2)),
and also exceeds the floating-point floor ``eps · max(m, n) · σ_max``.

Consistency.  The residual ``r = A θ̂ − b`` is compared with its own standard
error estimated the same way; a ratio well above one means no θ satisfies the
Fokker–Planck constraints (model misspecified).

Freeness.  ``diag(H_λ⁻¹)`` with ``H_λ = AᵀA + λI``; normalised freeness is
``λ · diag(H_λ⁻¹)`` in (0, 1]: 1 means the data do not constrain the parameter
at all (only the regulariser does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["IdentifiabilityReport", "analyse", "solve_tikhonov", "format_combination"]

RANK_THRESHOLD = 3.0
CONSISTENCY_THRESHOLD = 3.0
FREE_PROJECTION = 0.5


def solve_tikhonov(A, b, lam):
    """θ̂ = (AᵀA + λI)⁻¹ Aᵀb via an SVD (stable also when λ ≪ σ_min²)."""
    Uu, s, Vt = np.linalg.svd(A, full_matrices=False)
    return Vt.T @ ((s / (s * s + lam)) * (Uu.T @ b))


def format_combination(vec, names, tol=1e-3):
    """``0.71·a − 0.71·b``: a null-space vector as a named combination (largest entry positive)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.abs(vec).max()
    if vec[np.argmax(np.abs(vec))] < 0:
        vec = -vec
    vec = vec / np.linalg.norm(vec)
    terms = []
    for c, name in sorted(zip(vec, names), key=lambda t: -abs(t[0])):
        if abs(c) < tol:
            continue
        sign = "−" if c < 0 else "+"
        terms.append(f"{sign} {abs(c):.3g}·{name}")
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


@dataclass
class IdentifiabilityReport:
    """Rank, null space, consistency and freeness of one linear system A θ = b.

    Attributes
    ----------
    n_params : int
    rank : int
        Number of singular directions resolved above the sampling noise.
    unique : bool
        ``rank == n_params``.
    consistent : bool
        Residual within ``CONSISTENCY_THRESHOLD`` times its noise level.
    singular_values : (n,) array
    singular_noise : (n,) array or None
        Standard error of ``A v_i`` for each right singular vector v_i.
    null_space : list of str
        Unresolved directions as named parameter combinations.
    null_vectors : (n, n - rank) array
    free_params : list of str
        Parameters not pinned down: the projection of the parameter's unit vector onto the
        unresolved subspace has norm ≥ ``FREE_PROJECTION`` (0.5, i.e. at least a quarter of
        its variance direction is unresolved).
    freeness : (n,) array
        ``diag(H_λ⁻¹)``.
    freeness_normalised : (n,) array
        ``λ · diag(H_λ⁻¹)`` in (0, 1].
    residual_norm, residual_noise, residual_ratio : float
    lam : float
    """

    param_names: list
    n_params: int
    rank: int
    unique: bool
    consistent: bool
    singular_values: np.ndarray
    singular_noise: np.ndarray | None
    null_space: list
    null_vectors: np.ndarray
    free_params: list
    freeness: np.ndarray
    freeness_normalised: np.ndarray
    residual_norm: float
    residual_noise: float | None
    residual_ratio: float | None
    lam: float
    notes: list = field(default_factory=list)

    def __str__(self):
        lines = [f"rank {self.rank} of {self.n_params} "
                 f"({'identifiable' if self.unique else 'NOT identifiable'})"]
        for combo in self.null_space:
            lines.append(f"  unresolved combination: {combo}")
        if self.residual_ratio is not None:
            lines.append(f"residual {self.residual_norm:.3g} = {self.residual_ratio:.2f} × noise level "
                         f"({'consistent' if self.consistent else 'INCONSISTENT: no θ fits, model misspecified?'})")
        lines.extend(self.notes)
        return "\n".join(lines)


def analyse(A, b, theta, lam, names, A_blocks=None, b_blocks=None, counts=None,
            rank_threshold=RANK_THRESHOLD, consistency_threshold=CONSISTENCY_THRESHOLD):
    """Build the :class:`IdentifiabilityReport` of A θ = b at the solution ``theta``."""
    m, n = A.shape
    _, s, Vt = np.linalg.svd(A, full_matrices=True) if m < n else np.linalg.svd(A, full_matrices=False)
    s_full = np.zeros(n)
    s_full[: s.size] = s
    V = Vt.T
    floor = np.finfo(float).eps * max(m, n) * (s_full[0] if n else 0.0)
    resolved = s_full > floor
    notes = []
    sing_noise = None
    res = A @ theta - b
    res_norm = float(np.linalg.norm(res))
    res_noise = res_ratio = None
    if A_blocks is not None and len(A_blocks) >= 2:
        counts = np.asarray(counts, dtype=float)
        AV_blocks = A_blocks @ V  # (B, m, n)
        sing_noise = np.linalg.norm(_col_se(AV_blocks, A @ V, counts), axis=0)
        resolved &= s_full > rank_threshold * sing_noise
        r_blocks = (A_blocks @ theta - b_blocks)[..., None]
        res_noise = float(np.linalg.norm(_col_se(r_blocks, res[:, None], counts)))
        res_ratio = res_norm / res_noise if res_noise > 0 else np.inf
    else:
        notes.append("note: too few data blocks to estimate sampling noise; rank judged "
                     "against floating-point precision only")
    rank = int(resolved.sum())
    null = V[:, ~resolved]
    null_space = [format_combination(null[:, i], names) for i in range(null.shape[1])]
    free = [names[k] for k in range(n) if np.linalg.norm(null[k]) >= FREE_PROJECTION]
    H = A.T @ A + lam * np.eye(n)
    Hinv_diag = np.diag(np.linalg.inv(H))
    consistent = True if res_ratio is None else bool(res_ratio < consistency_threshold)
    return IdentifiabilityReport(
        param_names=list(names), n_params=n, rank=rank, unique=rank == n, consistent=consistent,
        singular_values=s_full, singular_noise=sing_noise, null_space=null_space, null_vectors=null,
        free_params=free, freeness=Hinv_diag, freeness_normalised=lam * Hinv_diag,
        residual_norm=res_norm, residual_noise=res_noise, residual_ratio=res_ratio, lam=float(lam),
        notes=notes,
    )


def _col_se(blocks, mean, counts):
    """Per-entry standard errors (m, k) of ``mean`` from per-block means (B, m, k)."""
    B = blocks.shape[0]
    w = counts / counts.sum()
    dev = blocks - mean[None]
    return np.sqrt(np.einsum("b,bmk->mk", w, dev * dev) / (B - 1))
