"""Checks of data that need the model: D(x) at every row, spread, per-sample values.

Every failure is a DataError naming the argument, row or value; the state-dependent diffusion,
which can only be checked where it is evaluated, raises a ModelError naming the model, the row
and the state.  The guide's table "Bad input and what you get" lists what each check catches.
"""

from __future__ import annotations

import numpy as np

from ..arguments import float_array
from ..errors import DataError, ModelError

__all__ = [
    "per_row",
    "distinct_samples",
    "same_point",
    "diffusion_values",
    "diffusion_psd",
    "Spread",
    "PSD_ROWS",
]


def per_row(values, points, name, what="sample"):
    """One finite value per row of ``points`` (M, d): an array, or a callable ``fn(points)``."""
    if callable(values):
        values = values(points)
    g = float_array(values, name).reshape(-1)
    if g.shape != (points.shape[0],):
        raise DataError(f"{name}: expected one value per {what} ({points.shape[0]}), got {g.size}")
    if not np.isfinite(g).all():
        raise DataError(
            f"{name}: not finite at {what}(s) {np.flatnonzero(~np.isfinite(g))[:5].tolist()}"
        )
    return np.ascontiguousarray(g)


def distinct_samples(X, name="X", first=False):
    """Raise DataError when all rows of X (N ≥ 2, d) are the same point.

    A stationary law with noise is never a single point; such data (often a constant fill
    value or a broadcasting mistake) would give a confident, meaningless fit.  ``first``:
    X holds only the first rows of a longer input, and the message says so.
    """
    if X.shape[0] >= 2 and not (X != X[:1]).any():
        same_point(X.shape[0], X[0], name, first)


def same_point(n, point, name="X", first=False):
    """The DataError of :func:`distinct_samples` for ``n`` rows all equal to ``point``."""
    which = f"the first {n} samples" if first else f"all {n} samples"
    hint = (
        "; the median bandwidth is taken from these rows: pass bandwidth= or shuffle the rows"
        if first
        else "; a stationary law with noise has spread"
    )
    raise DataError(
        f"{name}: {which} are the same point {np.array2string(np.asarray(point), precision=4)}"
        + hint
    )


_D_FUNCS: dict = {}


def diffusion_values(model, X) -> np.ndarray:
    """D(x) (n, d, d) of a model at the rows of X, by NumPy (lambdified once per model)."""
    import sympy as sp

    from ..codegen.spec import spec_hash

    key = spec_hash(model)
    fn = _D_FUNCS.get(key)
    if fn is None:
        fn = _D_FUNCS[key] = sp.lambdify(list(model.state), model.D.tolist(), "numpy")
    n, d = X.shape
    out = np.empty((n, d, d))
    with np.errstate(all="ignore"):
        vals = fn(*[X[:, j] for j in range(d)])
        for i in range(d):
            for j in range(d):
                out[:, i, j] = np.broadcast_to(np.asarray(vals[i][j], dtype=float), (n,))
    return out


def diffusion_psd(model, X, name="X", what="sample", offset=0):
    """Raise ModelError when a state-dependent D(x) is not finite, symmetric PSD at a row of X.

    A constant D is checked when the model is declared and ``D = ½GGᵀ`` is PSD by
    construction; a state-dependent D can only be checked where it is used — at every sample
    (global route, in memory or chunk by chunk as a stream is read), at the probes (local
    route) or at the start states (simulation).  Rows are counted from ``offset`` (the global
    index of X's first row); X is evaluated in windows of ``PSD_ROWS`` rows.
    """
    if getattr(model, "D", None) is None or model.diffusion_is_constant or model.G is not None:
        return  # (a stand-in without a model: columns only)
    for lo in range(0, X.shape[0], PSD_ROWS):
        _diffusion_psd_rows(model, X[lo : lo + PSD_ROWS], name, what, offset + lo)


#: Rows of X whose D(x) (rows × d × d) is evaluated at once by :func:`diffusion_psd`.
PSD_ROWS = 65536


def _diffusion_psd_rows(model, X, name, what, offset):
    Dx = diffusion_values(model, X)
    finite = np.isfinite(Dx).all(axis=(1, 2))
    if not finite.all():
        r = int(np.flatnonzero(~finite)[0])
        raise ModelError(
            f"diffusion D(x) of model {model.name!r} is not finite at {what} {r + offset} of "
            f"{name} (x = {np.array2string(X[r], precision=4)})"
        )
    eig = np.linalg.eigvalsh(Dx)
    tol = 1e-12 * np.maximum(1.0, np.abs(eig).max(axis=1))
    bad = eig[:, 0] < -tol
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ModelError(
            f"diffusion D(x) of model {model.name!r} is not positive semi-definite at "
            f"{what} {r + offset} of {name} (x = {np.array2string(X[r], precision=4)}, "
            f"smallest eigenvalue {eig[r, 0]:.3g}); D must be a covariance wherever the "
            "state goes"
        )


class Spread:
    """Whether the rows seen so far differ (a stream that is all one point is refused at its end).

    Feed every chunk in row order to :meth:`see`; :meth:`check` raises the DataError of
    :func:`same_point` when at least two rows were seen and all were equal.
    """

    def __init__(self):
        self.first_row = None
        self.spread = False
        self.rows = 0

    def see(self, chunk):
        if not self.spread and chunk.shape[0]:
            if self.first_row is None:
                self.first_row = chunk[0].copy()
            self.spread = bool((chunk != self.first_row).any())
        self.rows += chunk.shape[0]

    def check(self, name="X"):
        if not self.spread and self.rows >= 2:
            same_point(self.rows, self.first_row, name)
