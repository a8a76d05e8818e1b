"""The local route's rows: ``A[i] = a(x_i)``, ``b[i] = β(x_i)`` at probes, from the generated
``local_rows`` kernel (an affine drift; docs/method.md §2).

A probe where the model cannot be evaluated — a singularity of the drift, of D or of their
derivatives (``1/x`` at ``x = 0``), or a value beyond double precision — is named in a
DataError, whether the kernel returned a non-finite row or raised (Numba raises for a negative
integer power of zero even under NumPy's error model).
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError

__all__ = ["local_rows"]


def local_rows(cm, P, S, J, dlogp_dt=None):
    """Raw rows (unscaled) of the local route: A (M, n) with A[i] = a(x_i) and b (M,) = β(x_i).

    Parameters
    ----------
    cm : CompiledModel (affine)
    P : (M, d) probes, S : (M, d) scores, J : (M, d, d) Jacobians (``J[i, j, l] = ∂s_j/∂x_l``)
        (P may hold the probes several times, once per score estimate: messages name the
        first row holding the same point)
    dlogp_dt : (M,) array, optional
        ∂ₜlog p at the probes (non-stationary snapshot); zero when omitted.

    Raises
    ------
    DataError
        When a row with finite scores is not finite or cannot be evaluated, naming its probe.
    """
    P = np.ascontiguousarray(P, dtype=float)
    S = np.ascontiguousarray(S, dtype=float)
    J = np.ascontiguousarray(J, dtype=float)
    M = P.shape[0]
    A = np.empty((M, cm.model.n))
    b = np.empty(M)
    g = np.zeros(M) if dlogp_dt is None else np.ascontiguousarray(dlogp_dt, dtype=float)
    try:
        cm.module.local_rows(P, S, J, g, A, b)
    except (ArithmeticError, SystemError) as exc:  # (SystemError: raised inside a prange)
        i = _first_failing_row(cm, P, S, J, g)
        _singular(cm, P, i, f"evaluating it raised {type(exc).__name__}")
    scores_ok = np.isfinite(S).all(axis=1) & np.isfinite(J).all(axis=(1, 2)) & np.isfinite(g)
    bad = scores_ok & ~(np.isfinite(A).all(axis=1) & np.isfinite(b))
    if bad.any():
        _singular(cm, P, int(np.flatnonzero(bad)[0]), "its row is not finite")
    return A, b


def _first_failing_row(cm, P, S, J, g):
    """The first row whose kernel call raises (rows are evaluated one at a time)."""
    n = cm.model.n
    for i in range(P.shape[0]):
        try:
            cm.module.local_rows(
                P[i : i + 1],
                S[i : i + 1],
                J[i : i + 1],
                g[i : i + 1],
                np.empty((1, n)),
                np.empty(1),
            )
        except (ArithmeticError, SystemError):
            return i
    return 0


def _singular(cm, P, i, what):
    probe = int(np.flatnonzero((P == P[i]).all(axis=1))[0])
    raise DataError(
        f"probe {probe} (x = {np.array2string(P[i], precision=4)}): the local row of model "
        f"{cm.model.name!r} cannot be evaluated there ({what}): the drift, the diffusion or "
        "their derivatives are singular or beyond double precision at that point; move or "
        "drop the probe"
    )
