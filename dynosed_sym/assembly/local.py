"""The local route's rows: ``A[i] = a(x_i)``, ``b[i] = β(x_i)`` at probes, from the generated
``local_rows`` kernel (an affine drift; docs/design.md §2).
"""

from __future__ import annotations

import numpy as np

__all__ = ["local_rows"]


def local_rows(cm, P, S, J, dlogp_dt=None):
    """Raw rows (unscaled) of the local route: A (M, n) with A[i] = a(x_i) and b (M,) = β(x_i).

    Parameters
    ----------
    cm : CompiledModel (affine)
    P : (M, d) probes, S : (M, d) scores, J : (M, d, d) Jacobians (``J[i, j, l] = ∂s_j/∂x_l``)
    dlogp_dt : (M,) array, optional
        ∂ₜlog p at the probes (non-stationary snapshot); zero when omitted.
    """
    P = np.ascontiguousarray(P, dtype=float)
    M = P.shape[0]
    A = np.empty((M, cm.model.n))
    b = np.empty(M)
    g = np.zeros(M) if dlogp_dt is None else np.ascontiguousarray(dlogp_dt, dtype=float)
    cm.module.local_rows(
        P, np.ascontiguousarray(S, dtype=float), np.ascontiguousarray(J, dtype=float), g, A, b
    )
    return A, b
