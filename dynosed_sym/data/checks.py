"""Checks of data that need the model: D(x) at every row, spread, per-sample values.

Every failure is a DataError naming the argument, row or value; the state-dependent diffusion,
which can only be checked where it is evaluated, raises a ModelError naming the model, the row
and the state.  The guide's table "Bad input and what you get" lists what each check catches.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..arguments import float_array
from ..errors import DataError, ModelError
from ..model.validation import sign_assumption

__all__ = [
    "per_row",
    "distinct_samples",
    "same_point",
    "diffusion_values",
    "diffusion_psd",
    "Spread",
    "PSD_ROWS",
    "state_monomials",
    "state_overflow",
    "state_signs",
    "LOG2_MAX",
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


#: log₂ of the largest double: a term whose log₂|value| reaches it is ±inf.
LOG2_MAX = math.log2(sys.float_info.max)

_MONOMIALS: dict = {}


def state_monomials(model):
    """``(E, c)``: the exponents ``E`` (K, d) of the powers of the state in the terms of the
    drift and of D, and ``c`` (K,) the log₂ of their largest numeric coefficients.

    Each term of the expanded drift and D contributes the product of its integer powers of state
    variables (``a·x·y²·tanh(kx)`` contributes ``x·y²``): the generated kernels evaluate that
    product, and where it overflows, the term is ±inf or NaN whatever the other factors are.
    """
    import sympy as sp

    from ..codegen.spec import spec_hash

    key = spec_hash(model)
    if key in _MONOMIALS:
        return _MONOMIALS[key]
    state = list(model.state)
    found = {}
    for expr in [*model.drift, *model.D]:
        for term in sp.Add.make_args(sp.expand(expr)):
            powers, coef = [0] * len(state), 1.0
            for factor in sp.Mul.make_args(term):
                base, ex = factor.as_base_exp()
                if base in state and ex.is_Integer and ex > 0:
                    powers[state.index(base)] += int(ex)
                elif factor.is_Number and factor != 0:
                    coef *= abs(float(factor))
            if any(powers):
                key_p = tuple(powers)
                found[key_p] = max(found.get(key_p, -np.inf), math.log2(coef))
    E = np.array(sorted(found), dtype=float).reshape(-1, len(state))
    c = np.array([found[tuple(int(a) for a in e)] for e in E])
    _MONOMIALS[key] = (E, c)
    return E, c


def state_overflow(model, X, name="X", what="row", offset=0):
    """Raise DataError when a row of X (n, d) is so large that a term of the model's drift or
    D — a power of the state like ``x³`` — overflows double precision there.

    Names the first such row (counted from ``offset``), the column whose power overflows, the
    term and the number of rows affected.  The bound ``Σ_j a_j max(log₂|x_j|, 0) + log₂|c|``
    covers every partial product of the term ``c·Πx_j^a_j``.  Checked before the features are
    assembled, wherever the model is evaluated (global route: every sample; local route: the
    probes), so that a recording error such as 1e300 is named as such.
    """
    if getattr(model, "drift", None) is None or X.shape[0] == 0:
        return
    E, c = state_monomials(model)
    if E.shape[0] == 0:
        return
    with np.errstate(divide="ignore"):
        big = np.maximum(np.log2(np.abs(X)), 0.0)  # (n, d); |x| < 1 only lowers a product
    if ((big.max(axis=0) @ E.T + c) < LOG2_MAX).all():
        return  # the common case, in one pass
    size = np.full(X.shape[0], -np.inf)
    for lo in range(0, X.shape[0], PSD_ROWS):
        size[lo : lo + PSD_ROWS] = (big[lo : lo + PSD_ROWS] @ E.T + c).max(axis=1)
    bad = np.flatnonzero(~(size < LOG2_MAX))
    if bad.size == 0:
        return
    r = int(bad[0])
    k = int(np.argmax(big[r] @ E.T + c))
    j = int(np.argmax(E[k] * big[r]))
    import sympy as sp

    term = sp.Mul(*[s ** int(a) for s, a in zip(model.state, E[k])])
    label = "row" if what == "sample" else what
    raise DataError(
        f"{name}: value {X[r, j]:.3g} in column {str(model.state[j])!r}, {label} {r + offset}, "
        f"is too large for model {model.name!r}: its term {term} would be about "
        f"1e{size[r] * math.log10(2):.0f} there, beyond double precision, and the features "
        f"overflow ({bad.size} {label}(s) affected); rescale the state variables (and the model "
        f"with them) to order one, or drop the {label} if the value is a recording error"
    )


def state_signs(model, X, name="X", what="row", offset=0, fix="or drop those rows"):
    """Raise DataError when a column of X (n, d) leaves the sign its state variable was declared
    with (``sp.Symbol("x", positive=True)``, nonnegative, negative, nonpositive).

    SymPy has used the assumption to simplify the drift and D when they were written
    (``Abs(x)`` is ``x``, ``sqrt(x**2)`` is ``x``), so at values of the other sign the kernels
    compute another model than the one written; names the column, the assumption, the first
    such row (counted from ``offset``) and how many there are.
    """
    for j, sym in enumerate(getattr(model, "state", ())):
        row = sign_assumption(sym)
        if row is None:
            continue
        assumption, inside, _, text = row
        bad = np.flatnonzero(~inside(np.asarray(X[:, j], dtype=float)))
        if bad.size:
            r = int(bad[0])
            import sympy as sp

            raise DataError(
                f"{name}: column {str(sym)!r} holds {bad.size} value(s) {text} ({what} "
                f"{r + offset}: {X[r, j]:.3g}), but model {model.name!r} declares {sym} "
                f"{assumption}=True, under which SymPy has already simplified its drift and "
                f"D (Abs({sym}) is {sp.Abs(sym)}); declare it real=True "
                f"(sp.Symbol({str(sym)!r}, real=True)) and write the model for both signs, "
                f"{fix}"
            )
