"""A SymPy printer that writes scalar Numba code with symbols mapped to array slots.

Numeric subexpressions are folded into float literals (``0.01*pi`` → ``0.031415926535897934``,
``sqrt(2)`` → ``1.4142135623730951``), exactly: a literal is the value Python computes for the
printed subexpression, operation for operation in double precision, i.e. what the kernel would
have computed at run time.  In a product the leading run of numeric factors (the usual place:
SymPy orders numbers first) becomes one literal, as left-to-right evaluation groups it; a numeric
factor after a symbol, a numeric term of a sum, or a denominator becomes a literal of its own
(merging it would change the rounding).  So folding never changes a kernel's result, bit for
bit.  Plain numbers are left as they are (``x**2`` keeps its integer exponent, ``9*t0`` its
integer factor).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass

import sympy as sp
from sympy.core.mul import _keep_coeff
from sympy.printing.pycode import PythonCodePrinter

from .wrapping import wrap_assignment

__all__ = ["SlotPrinter", "PrintedBlock", "print_block", "cse_block", "count_ops"]

_NEGATIVE_LITERAL = re.compile(r"\(-[0-9.e+-]+\)")
_PLUS_NEGATIVE = re.compile(r" \+ \(-([0-9.e+-]+)\)")


def _is_constant(expr):
    """A numeric subexpression worth folding: no free symbols, not already a plain number."""
    return (
        isinstance(expr, sp.Expr)
        and not expr.is_Number
        and (expr.is_NumberSymbol or bool(expr.args))
        and not expr.free_symbols
    )


def _denominator(item):
    """True for a factor CodePrinter._print_Mul prints in the denominator."""
    return item.is_commutative and item.is_Pow and item.exp.is_Rational and item.exp.is_negative


class SlotPrinter(PythonCodePrinter):
    """Print expressions as ``math``-module Python that Numba compiles.

    Parameters
    ----------
    slots : dict
        Maps each SymPy symbol to the source text of its array slot, for example
        ``{x: "x[0]", sigma: "theta[0]"}``.  CSE temporaries are left as names.
    fold : bool
        Fold numeric subexpressions into float literals (see the module docstring).
    """

    def __init__(self, slots, fold=True):
        super().__init__(
            {
                "standard": "python3",
                "fully_qualified_modules": True,
                "inline": True,
                "allow_unknown_functions": False,
            }
        )
        self._slots = dict(slots)
        self._raw = SlotPrinter(slots, fold=False) if fold else None

    def _value(self, expr):
        """The double the unfolded code of ``expr`` computes, or None (not a finite real)."""
        if expr.is_Number:
            return float(expr)
        try:
            value = eval(self._raw.doprint(expr), {"math": math, "__builtins__": {}})
        except (ArithmeticError, ValueError, TypeError):
            return None
        if isinstance(value, int):
            value = float(value)
        if not isinstance(value, float) or not math.isfinite(value):
            return None
        return value

    def _print(self, expr, **kwargs):
        if self._raw is not None and _is_constant(expr):
            value = self._value(expr)
            if value is not None:  # a negative literal keeps its parentheses (a Pow base)
                return repr(value) if value >= 0 else f"({value!r})"
        return super()._print(expr, **kwargs)

    def parenthesize(self, item, level, strict=False):
        if self._raw is not None and _is_constant(item) and self._value(item) is not None:
            return self._print(item)  # a literal: an atom (negative ones in parentheses)
        return super().parenthesize(item, level, strict)

    def _print_Mul(self, expr):
        """CodePrinter's product, with its leading run of numeric factors folded into one."""
        if self._raw is None:
            return super()._print_Mul(expr)
        c, e = expr.as_coeff_Mul()
        negative = c < 0
        core = _keep_coeff(-c, e) if negative else expr  # what CodePrinter prints after "-"
        factors = list(core.as_ordered_factors())
        numerator = [f for f in factors if not _denominator(f)]
        run = []
        for f in numerator:
            if f.free_symbols:
                break
            run.append(f)
        if not run or (len(run) == 1 and run[0].is_Number):
            return super()._print_Mul(expr)
        values = [self._value(f) for f in run]
        if any(v is None for v in values):
            return super()._print_Mul(expr)
        value = values[0]
        for v in values[1:]:
            value = value * v  # left to right, as the printed product runs
        rest = list(factors)
        for f in run:
            rest.remove(f)
        if not rest:
            return self._print(sp.Float(-value if negative else value))
        coefficient = sp.Float(-value if negative else value)
        return super()._print_Mul(sp.Mul(coefficient, *rest, evaluate=False))

    def _print_Add(self, expr, order=None):
        text = super()._print_Add(expr, order)
        # a folded negative term: x + (-1.5) is x - 1.5, exactly
        return _PLUS_NEGATIVE.sub(r" - \1", text) if self._raw is not None else text

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


def count_ops(code):
    """Operations in a printed expression: arithmetic operators, calls, comparisons and
    conditional expressions (not the sign of a literal, nor index arithmetic like ``LANES + l``).
    """
    n, todo = 0, [ast.parse(code, mode="eval").body]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Subscript):
            continue
        if isinstance(node, (ast.BinOp, ast.Call, ast.Compare, ast.IfExp, ast.BoolOp)):
            n += 1
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant):
            n += 1
        todo.extend(ast.iter_child_nodes(node))
    return n


@dataclass(frozen=True)
class PrintedBlock:
    """A kernel body printed by :func:`print_block`.

    Attributes
    ----------
    lines : list of str
        Intermediate terms, then the output assignments (nonzero outputs only when zeros are
        skipped), wrapped at 100 columns.
    ops : int
        Operations of the printed code (:func:`count_ops`, after CSE and folding).
    n_terms : int
        Intermediate terms (CSE temporaries).
    n_outputs, n_written : int
        Outputs of the kernel, and those assigned (the others are structural zeros).
    symbols : frozenset
        Input symbols the printed code reads.
    skipped : tuple of str
        Targets left out as structural zeros.
    """

    lines: list
    ops: int
    n_terms: int
    n_outputs: int
    n_written: int
    symbols: frozenset
    skipped: tuple = ()


def print_block(outputs, printer, indent="    ", tmp_prefix="t", skip_zeros=True, width=100):
    """Joint common-subexpression elimination over the outputs of a kernel, folded and wrapped.

    Parameters
    ----------
    outputs : list of (target_source, sympy.Expr)
        Left-hand sides (e.g. ``"out[0]"``) and the expressions to assign.
    printer : SlotPrinter
    skip_zeros : bool
        Leave structurally zero outputs out (the caller zeroes the output array first).

    Returns
    -------
    PrintedBlock
    """
    exprs = [sp.sympify(e) for _, e in outputs]
    kept = [k for k, e in enumerate(exprs) if not (skip_zeros and e == 0)]
    temps, reduced = sp.cse(
        [exprs[k] for k in kept], symbols=sp.numbered_symbols(tmp_prefix), order="canonical"
    )
    lines, n_ops, symbols = [], 0, set()
    assignments = [(str(sym), e) for sym, e in temps]
    assignments += [(outputs[k][0], e) for k, e in zip(kept, reduced)]
    for target, expr in assignments:
        code = printer.doprint(expr)
        if _NEGATIVE_LITERAL.fullmatch(code):
            code = code[1:-1]
        lines += wrap_assignment(target, code, indent, width)
        n_ops += count_ops(code)
        symbols |= expr.free_symbols
    symbols -= {sym for sym, _ in temps}
    skipped = tuple(outputs[k][0] for k in sorted(set(range(len(outputs))) - set(kept)))
    return PrintedBlock(
        lines, int(n_ops), len(temps), len(outputs), len(kept), frozenset(symbols), skipped
    )


def cse_block(outputs, printer, indent="    ", tmp_prefix="t"):
    """Joint CSE over all outputs, every output assigned (zeros included): ``(lines, n_ops)``.

    See :func:`print_block`, which also reports terms, outputs and inputs.
    """
    block = print_block(outputs, printer, indent, tmp_prefix, skip_zeros=False)
    return block.lines, block.ops
