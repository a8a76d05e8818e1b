"""Checks shared by the entry points.

Arguments and data: every failure is a DataError naming the argument, row or value.  The
state-dependent diffusion, which can only be checked where it is evaluated, raises a ModelError
naming the model, the row and the state.  The README table "Bad input and what you get" lists
what each check catches.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import DataError

__all__ = ["integer", "number", "seed", "per_row", "feature_arguments", "distinct_samples",
           "same_point", "diffusion_values", "diffusion_psd", "system_scale", "PSD_ROWS",
           "MAX_FEATURE_TURNS", "MAX_SYSTEM_ENTRY"]


def integer(value, name, minimum=None):
    """``value`` as an int (bools and non-integral numbers are rejected), at least ``minimum``."""
    if isinstance(value, bool):
        raise DataError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise DataError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise DataError(f"{name} must be at least {minimum}, got {value}")
    return value


def number(value, name, positive=False, nonnegative=False):
    """``value`` as a finite float; optionally > 0 or ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DataError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise DataError(f"{name} must be finite, got {value!r}")
    if positive and not value > 0:
        raise DataError(f"{name} must be positive, got {value!r}")
    if nonnegative and value < 0:
        raise DataError(f"{name} must be non-negative, got {value!r}")
    return value


def seed(value, name="seed"):
    """A seed for numpy.random: a non-negative integer."""
    return integer(value, name, minimum=0)


def per_row(values, points, name, what="sample"):
    """One finite value per row of ``points`` (M, d): an array, or a callable ``fn(points)``."""
    if callable(values):
        values = values(points)
    try:
        g = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: cannot convert to a float array ({exc})") from None
    if g.shape != (points.shape[0],):
        raise DataError(f"{name}: expected one value per {what} ({points.shape[0]}), got {g.size}")
    if not np.isfinite(g).all():
        raise DataError(f"{name}: not finite at {what}(s) {np.flatnonzero(~np.isfinite(g))[:5].tolist()}")
    return np.ascontiguousarray(g)


# ----------------------------------------------------------------------------------------------
# checks on data that need the model or the random features
# ----------------------------------------------------------------------------------------------

#: Largest |ωᵀx + c| / 2π (in turns) the fill accepts.  The range reduction t − ⌊t + ½⌋ keeps
#: the absolute rounding of t, |t|·2⁻⁵², so at 2²⁰ turns sin/cos are still right to ≈ 1.5e-9;
#: far beyond, they are noise (and at 2⁵² every feature is sin(c)), a wrong number, not a NaN.
MAX_FEATURE_TURNS = 2.0 ** 20


def feature_arguments(X, feats, name="X", offset=0):
    """Raise DataError when a row of X (n, d) puts a random feature out of sin/cos precision.

    Uses the bound ``|ωᵀx + c| ≤ max‖ω‖·‖x‖ + 2π`` (O(n·d)): it trips only when ‖x‖ exceeds the
    kernel length scale by a factor of order 10⁶, i.e. data far from the origin compared with
    their spread.  Rows are counted from ``offset`` (the global index of X's first row).
    """
    if X.shape[0] == 0:
        return
    limit = MAX_FEATURE_TURNS * 2.0 * math.pi - 2.0 * math.pi
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is itself the answer
        w_max = float(np.sqrt((feats.omega ** 2).sum(axis=1)).max())
        if math.sqrt(float(np.einsum("ij,ij->i", X, X).max())) * w_max <= limit:
            return  # the common case, in one pass
        scale = np.abs(X).max(axis=1)  # ‖x‖ without overflowing x² (rows of 1e200 are valid input)
        safe = np.where(scale > 0, scale, 1.0)
        norms = scale * np.sqrt(((X / safe[:, None]) ** 2).sum(axis=1))
        bad = ~(norms * w_max <= limit)
    if bad.any():
        rows = np.flatnonzero(bad)
        r = int(rows[0])
        raise DataError(
            f"{name}: {rows.size} row(s) lie so far from the origin compared with the kernel length "
            f"scale (bandwidth = {feats.lengthscale:.3g}) that sin/cos of the random features lose "
            f"all precision (row {r + offset}, ‖x‖ = {norms[r]:.3g}); shift/rescale the state "
            "variables (and the model with them) or pass a larger bandwidth=")


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
    hint = ("; the median bandwidth is taken from these rows: pass bandwidth= or shuffle the rows"
            if first else "; a stationary law with noise has spread")
    raise DataError(f"{name}: {which} are the same point {np.array2string(np.asarray(point), precision=4)}"
                    + hint)


_D_FUNCS: dict = {}


def diffusion_values(model, X) -> np.ndarray:
    """D(x) (n, d, d) of a model at the rows of X, by NumPy (lambdified once per model)."""
    import sympy as sp

    from .spec import spec_hash

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
    if model.diffusion_is_constant or model.G is not None:
        return
    for lo in range(0, X.shape[0], PSD_ROWS):
        _diffusion_psd_rows(model, X[lo:lo + PSD_ROWS], name, what, offset + lo)


#: Rows of X whose D(x) (rows × d × d) is evaluated at once by :func:`diffusion_psd`.
PSD_ROWS = 65536


def _diffusion_psd_rows(model, X, name, what, offset):
    from .errors import ModelError

    Dx = diffusion_values(model, X)
    finite = np.isfinite(Dx).all(axis=(1, 2))
    if not finite.all():
        r = int(np.flatnonzero(~finite)[0])
        raise ModelError(f"diffusion D(x) of model {model.name!r} is not finite at {what} {r + offset} of "
                         f"{name} (x = {np.array2string(X[r], precision=4)})")
    eig = np.linalg.eigvalsh(Dx)
    tol = 1e-12 * np.maximum(1.0, np.abs(eig).max(axis=1))
    bad = eig[:, 0] < -tol
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ModelError(f"diffusion D(x) of model {model.name!r} is not positive semi-definite at "
                         f"{what} {r + offset} of {name} (x = {np.array2string(X[r], precision=4)}, "
                         f"smallest eigenvalue {eig[r, 0]:.3g}); D must be a covariance wherever the "
                         "state goes")


#: Largest |entry| of an assembled system A θ ≈ b that the solve and the noise analysis (which
#: form fourth powers of A in the misspecification test) handle without overflow.
MAX_SYSTEM_ENTRY = 1e64


def system_scale(A, b, route):
    """Raise DataError when A, b are not finite or so large that the report would overflow."""
    big = max(float(np.abs(A).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    if not big <= MAX_SYSTEM_ENTRY:  # also NaN
        raise DataError(
            f"the assembled {route} system A θ = b has entries of size {big:.3g}: the drift or the "
            "diffusion at these samples is too large for double precision (the least-squares "
            "solve and the noise analysis would overflow); rescale the state variables")
