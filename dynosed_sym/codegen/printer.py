"""A SymPy printer that writes scalar Numba code with symbols mapped to array slots."""

from __future__ import annotations

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

__all__ = ["SlotPrinter", "cse_block"]


class SlotPrinter(PythonCodePrinter):
    """Print expressions as ``math``-module Python that Numba compiles.

    Parameters
    ----------
    slots : dict
        Maps each SymPy symbol to the source text of its array slot, for example
        ``{x: "x[0]", sigma: "theta[0]"}``.  CSE temporaries are left as names.
    """

    def __init__(self, slots):
        super().__init__(
            {
                "standard": "python3",
                "fully_qualified_modules": True,
                "inline": True,
                "allow_unknown_functions": False,
            }
        )
        self._slots = dict(slots)

    def _print_Symbol(self, expr):
        slot = self._slots.get(expr)
        return slot if slot is not None else super()._print_Symbol(expr)

    def _print_Float(self, expr):
        # full double precision, independent of the Float's decimal precision
        return repr(float(expr))

    def _print_Rational(self, expr):
        # float literal, so Numba never sees integer division or int overflow
        return repr(float(expr))

    def _print_Half(self, expr):
        return "0.5"

    def _print_NaN(self, expr):
        from ..errors import CodegenError

        raise CodegenError("refusing to print NaN into a kernel (an expression is undefined)")

    _print_ComplexInfinity = _print_Infinity = _print_NegativeInfinity = _print_NaN


def cse_block(outputs, printer, indent="    ", tmp_prefix="t"):
    """Joint common-subexpression elimination over all outputs of a kernel.

    Parameters
    ----------
    outputs : list of (target_source, sympy.Expr)
        Left-hand sides (e.g. ``"out[0]"``) and the expressions to assign.
    printer : SlotPrinter

    Returns
    -------
    lines : list of str
        Assignments of temporaries followed by the outputs.
    n_ops : int
        Operation count after CSE (``sympy.count_ops`` summed over all lines).
    """
    exprs = [sp.sympify(e) for _, e in outputs]
    temps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp_prefix), order="canonical")
    lines, n_ops = [], 0
    for sym, expr in temps:
        lines.append(f"{indent}{sym} = {printer.doprint(expr)}")
        n_ops += sp.count_ops(expr)
    for (target, _), expr in zip(outputs, reduced):
        lines.append(f"{indent}{target} = {printer.doprint(expr)}")
        n_ops += sp.count_ops(expr)
    return lines, int(n_ops)
