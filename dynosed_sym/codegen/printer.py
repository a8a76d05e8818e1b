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

Every folded literal keeps its symbolic form in a comment (``t14 = 0.031415926535897934  #
pi/100``), and so does a rational whose literal does not read back exactly (``# 1/3``).  Symbols
are printed by name: :func:`alias_names` gives every state, parameter and input a Python name
(``W[1,6]`` becomes ``W_1_6``) and a kernel starts by loading the slots it reads into them
(``W_1_6 = theta[13]``).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import re
from dataclasses import dataclass

import sympy as sp
from sympy.core.mul import _keep_coeff
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from .wrapping import wrap_assignment

__all__ = [
    "SlotPrinter",
    "PrintedBlock",
    "print_block",
    "cse_block",
    "count_ops",
    "alias_names",
    "alias_lines",
]

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
        self.folds = []  # (literal, symbolic form) of every literal folded since the last reset

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
                self.folds.append((repr(value), sp.sstr(expr)))
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
        folded = sp.Mul(*run)
        self.folds.append(
            (repr(-value if negative else value), sp.sstr(-folded if negative else folded))
        )
        rest = list(factors)
        for f in run:
            rest.remove(f)
        if not rest:
            return self._print(sp.Float(-value if negative else value))
        coefficient = sp.Float(-value if negative else value)
        return super()._print_Mul(sp.Mul(coefficient, *rest, evaluate=False))

    def _print_Pow(self, expr, rational=False):
        """``x**(-k)`` (integer k ≥ 2) as ``1/x**k``: Numba computes both as 1/(x**k), bit for
        bit, but raises ZeroDivisionError for the first at x = 0 whatever the error model, where
        the second is inf like every other division of a kernel (``error_model="numpy"``)."""
        exp = expr.exp
        if exp.is_Integer and exp < -1:
            denominator = sp.Pow(expr.base, -exp, evaluate=False)
            return "1/" + self.parenthesize(denominator, PRECEDENCE["Mul"], strict=True)
        return super()._print_Pow(expr, rational=rational)

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
        text = repr(float(expr))
        if self._raw is not None and sp.Rational(text) != expr:
            self.folds.append((text, sp.sstr(expr)))
        return text

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


def _comment(folds):
    """The comment naming the symbolic form of each folded literal, once each."""
    seen = dict.fromkeys(f"{lit} = {sym}" for lit, sym in folds if lit != sym)
    return "# " + ", ".join(seen) if seen else ""


def _assignment_lines(target, code, folds, indent, width):
    """``target = code`` (wrapped), with the symbolic form of its folded literals in a comment:
    at the end of the line for a plain literal (``t14 = 0.0314...  # pi/100``), else above."""
    lines = wrap_assignment(target, code, indent, width)
    folds = [(lit, sym) for lit, sym in folds if lit != sym]
    if not folds:
        return lines
    if len(lines) == 1 and code.lstrip("-") == folds[0][0].lstrip("-") and len(folds) == 1:
        short = f"{lines[0]}  # {folds[0][1]}"
        if len(short) <= width:
            return [short]
    comment = _comment(folds)
    if len(indent + comment) > width:
        comment = comment[: width - len(indent) - 4] + " ..."
    return [indent + comment] + lines


def print_block(
    outputs, printer, indent="    ", tmp_prefix="t", skip_zeros=True, width=100, keep=()
):
    """Joint common-subexpression elimination over the outputs of a kernel, folded and wrapped.

    Parameters
    ----------
    outputs : list of (target_source, sympy.Expr)
        Left-hand sides (e.g. ``"out[0]"``) and the expressions to assign.
    printer : SlotPrinter
    skip_zeros : bool
        Leave structurally zero outputs out (the caller zeroes the output array first).
    keep : collection of str
        Targets assigned even when structurally zero (a loop adds to them afterwards).

    Returns
    -------
    PrintedBlock
    """
    exprs = [sp.sympify(e) for _, e in outputs]
    keep = set(keep)
    kept = [
        k for k, e in enumerate(exprs) if not (skip_zeros and e == 0 and outputs[k][0] not in keep)
    ]
    temps, reduced = sp.cse(
        [exprs[k] for k in kept], symbols=sp.numbered_symbols(tmp_prefix), order="canonical"
    )
    lines, n_ops, symbols = [], 0, set()
    assignments = [(str(sym), e) for sym, e in temps]
    assignments += [(outputs[k][0], e) for k, e in zip(kept, reduced)]
    for target, expr in assignments:
        printer.folds = []
        code = printer.doprint(expr)
        if _NEGATIVE_LITERAL.fullmatch(code):
            code = code[1:-1]
        lines += _assignment_lines(target, code, printer.folds, indent, width)
        n_ops += count_ops(code)
        symbols |= expr.free_symbols
    symbols -= {sym for sym, _ in temps}
    skipped = tuple(outputs[k][0] for k in sorted(set(range(len(outputs))) - set(kept)))
    return PrintedBlock(
        lines, int(n_ops), len(temps), len(outputs), len(kept), frozenset(symbols), skipped
    )


#: Names a slot alias never takes: the point and lane kernels' arguments and loop variables,
#: the module names they use, Python's keywords and builtins (a clash gets a trailing ``_``).
_TAKEN = frozenset(
    {"x", "theta", "u", "out", "s", "J", "dlogp_dt", "nl", "work", "acc", "w", "sj", "j", "k"}
    | {"l", "out_a", "out_b", "out_r", "out_dr", "out_sin", "out_cos", "math", "np", "numba"}
    | {"lanes", "LANES"}
    | set(keyword.kwlist)
    | set(dir(builtins))
)
#: Names of the generated code: CSE temporaries, basis arrays and derivatives, block tables.
_GENERATED_NAME = re.compile(r"(t|phi|dphi)\d+(_\d+)*|BLOCK\d+_\w+")


def alias_names(symbols):
    """{symbol: Python name} for the slot aliases of a module, in slot order, all distinct.

    A name is the symbol's with every other character than letters, digits and ``_`` turned
    into ``_`` (``W[1,6]`` → ``W_1_6``); names of the generated code (arguments, temporaries
    ``t0``, builtins) and repeats get a trailing ``_``.
    """
    out, used = {}, set()
    for sym in symbols:
        name = re.sub(r"_+", "_", re.sub(r"\W", "_", str(sym))).strip("_") or "v"
        if name[0].isdigit():
            name = "_" + name
        while name in _TAKEN or name in used or _GENERATED_NAME.fullmatch(name):
            name += "_"
        out[sym] = name
        used.add(name)
    return out


def alias_lines(aliases, slots, symbols, indent="    "):
    """``name = slot`` lines for the symbols of ``aliases`` (in its order) that are read."""
    return [f"{indent}{aliases[s]} = {slots[s]}" for s in aliases if s in symbols]


def cse_block(outputs, printer, indent="    ", tmp_prefix="t"):
    """Joint CSE over all outputs, every output assigned (zeros included): ``(lines, n_ops)``.

    See :func:`print_block`, which also reports terms, outputs and inputs.
    """
    block = print_block(outputs, printer, indent, tmp_prefix, skip_zeros=False)
    return block.lines, block.ops
