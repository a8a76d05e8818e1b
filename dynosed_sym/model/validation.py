"""Checks of what a declaration is made of: strings parsed with the declared symbols, constants
that double precision can hold, and the values of parameters and inputs (issue 22).

Used by :class:`~dynosed_sym.model.declaration.SDEModel`; every failure is a ModelError naming
the equation or the entry.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from ..arguments import float_array
from ..errors import ModelError

__all__ = [
    "parse_strings",
    "real_value",
    "assumptions_of",
    "check_constants",
    "refuse_zero_diffusion",
]


def parse_strings(obj, names, what):
    """``obj`` with every string parsed as a SymPy expression whose names are the declared
    symbols (``names``: name → Symbol): ``"-a*x"`` means the declared ``a`` and ``x``, whatever
    their assumptions (``real=True``), and a declared ``E``, ``I`` or ``beta`` is that symbol,
    not SymPy's constant or function of that name.  Lists, tuples and arrays are walked."""
    if isinstance(obj, str):
        try:
            return sp.sympify(obj, locals=dict(names))
        except (sp.SympifyError, SyntaxError, TypeError, ValueError) as exc:
            raise ModelError(
                f"{what}: cannot interpret {obj!r} as an expression ({exc}); names that are "
                "not declared symbols are read as SymPy's own (beta, gamma, E, I, N, S, Q ...)"
            ) from None
    if isinstance(obj, (list, tuple)):
        return type(obj)(parse_strings(o, names, what) for o in obj)
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "OUS":
        return np.array([parse_strings(o, names, what) for o in obj.tolist()], dtype=object)
    return obj


def real_value(value, what, name):
    """One value of a parameter or input: a real number (not a bool, complex or text)."""
    out = float_array(value, f"{what}[{name!r}]", error=ModelError)
    if out.shape != ():
        raise ModelError(f"{what}: value of {name!r} must be one number, got shape {out.shape}")
    return float(out)


def assumptions_of(symbol):
    given = dict(getattr(symbol, "_assumptions_orig", None) or symbol.assumptions0)
    given.pop("commutative", None)
    return ", ".join(f"{k}={v}" for k, v in sorted(given.items())) or "none"


def check_constants(expr, where):
    """Every numeric subexpression (a constant, or a function of constants: ``exp(1000)``) must
    be finite and, if not zero, stay non-zero in double precision: the kernels compute in it."""
    todo = [expr]
    while todo:
        sub = todo.pop()
        if not sub.is_number:
            todo.extend(sub.args)
            continue
        if sub.is_Integer and abs(sub) < 2**53:
            continue
        value = sub.evalf(30)
        if not value.is_real or not value.is_finite:
            continue  # complex, oo, nan: _check_functions names them
        double = float(value)
        text = sp.sstr(sub)
        shown = (f"{text} ≈ " if len(text) <= 30 and not sub.is_Float else "") + (
            f"{sp.Float(value, 4)}"
        )
        if math.isinf(double):
            raise ModelError(
                f"{where}: the constant {shown} is beyond the double-precision range "
                "(±1.8e308) the kernels compute in; rescale the model's units"
            )
        if double == 0.0 and value != 0:
            raise ModelError(
                f"{where}: the constant {shown} underflows to zero in double precision "
                "(below 5e-324); rescale the model's units"
            )


def refuse_zero_diffusion(D, what):
    """ModelError when D is identically zero: the stationary law of dx = f dt sits on the ODE's
    attractor without a density, and ∇·(f p) = ∇·∇·(D p) loses its right-hand side, so it no
    longer fixes the scale of f (for f = Uθ every multiple of θ fits): no information about f."""
    for e in D:
        if not (e.is_zero or (e.free_symbols and sp.simplify(e).is_zero)):
            return
    raise ModelError(
        f"{what} is identically zero: without noise, snapshots carry no information about the "
        "drift (the stationary law of dx = f dt sits on the ODE's attractor and has no density; "
        "∇·(f p) = 0 does not fix the scale of f); declare the noise with diffusion= (D) or "
        "noise= (G), even if it is small"
    )
