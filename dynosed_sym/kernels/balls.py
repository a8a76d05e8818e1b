"""Which ball each sample falls in (probe regions of the local route)."""

import numba

from .jit import kernel

__all__ = ["ball_labels"]


@kernel(parallel=True)
def ball_labels(X, C, r2, out):
    """out[i] = first ball j with ‖X[i] − C[j]‖² < r2[j], else −1.  X (N, d), C (k, d), r2 (k,)."""
    N, d = X.shape
    k = C.shape[0]
    for i in numba.prange(N):
        lab = -1
        for j in range(k):
            s = 0.0
            for a in range(d):
                t = X[i, a] - C[j, a]
                s += t * t
            if s < r2[j]:
                lab = j
                break
        out[i] = lab
