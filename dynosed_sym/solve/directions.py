"""Singular directions of a linear system against their sampling noise: the one rank rule shared by
the report (:mod:`.report`), the U-statistic solve (:mod:`.ustat`) and the honest intervals
(:mod:`.intervals`).

A and b are means of per-sample terms; their sampling noise is estimated from per-block means
``A_b`` with weights ``w_b = N_b / N``: the standard error of ``A v`` for a direction v is
``sqrt(Σ_b w_b ‖(A_b − A) v‖² / (B − 1))``.  A right singular direction v_i of A is *resolved*
when σ_i exceeds ``threshold`` times that standard error and the floating-point floor
``eps · max(m, n) · σ_max``.  With the block covariance ``S = Σ_b w_b (A_b − A)ᵀ(A_b − A)/(B − 1)``
the rule reads ``σ_i² > threshold² · v_iᵀ S v_i`` (docs/design-statistics.md).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Directions", "singular_directions", "col_se", "RANK_THRESHOLD"]

#: A direction is resolved when its singular value exceeds this many standard errors.
RANK_THRESHOLD = 3.0


class Directions(NamedTuple):
    """Right singular directions of A and their noise.

    Attributes
    ----------
    singular_values : (n,) σ_i, zero-padded when m < n
    V : (n, n) right singular vectors (columns), a complete basis
    noise : (n,) standard error of ``A v_i``, or None without noise blocks
    resolved : (n,) bool
    """

    singular_values: np.ndarray
    V: np.ndarray
    noise: np.ndarray | None
    resolved: np.ndarray


def singular_directions(A, A_blocks=None, counts=None, threshold=RANK_THRESHOLD) -> Directions:
    """SVD of A (a complete basis of right singular vectors) and the rank rule (module docstring).

    Parameters
    ----------
    A : (m, n)
    A_blocks : (B, m, n), optional
        Per-block means; with fewer than two blocks the rank is judged against the
        floating-point floor only (``noise`` is None).
    counts : (B,), optional
        Samples per block.
    threshold : float

    Returns
    -------
    Directions
    """
    m, n = A.shape
    _, s, Vt = (
        np.linalg.svd(A, full_matrices=True) if m < n else np.linalg.svd(A, full_matrices=False)
    )
    s_full = np.zeros(n)
    s_full[: s.size] = s
    V = Vt.T
    floor = np.finfo(float).eps * max(m, n) * (s_full[0] if n else 0.0)
    resolved = s_full > floor
    noise = None
    if A_blocks is not None and len(A_blocks) >= 2:
        counts = np.asarray(counts, dtype=float)
        noise = np.linalg.norm(col_se(A_blocks @ V, A @ V, counts), axis=0)
        resolved &= s_full > threshold * noise
    return Directions(s_full, V, noise, resolved)


def col_se(blocks, mean, counts):
    """Per-entry standard errors (m, k) of ``mean`` from per-block means (B, m, k)."""
    B = blocks.shape[0]
    w = counts / counts.sum()
    dev = blocks - mean[None]
    return np.sqrt(np.einsum("b,bmk->mk", w, dev * dev) / (B - 1))
