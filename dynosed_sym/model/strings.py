"""What a drift (D, G) string may hold, read with Python's ``ast`` before SymPy's parser (which
evaluates Python and computes exact numbers) sees it: a formula, not code, and no constant whose
exact value SymPy would compute digit by digit far beyond double precision (``2**2**40``,
``9**9**9``, ``factorial(10**7)``), which took minutes or all the memory.

Used by :mod:`~dynosed_sym.model.validation`; every refusal is a ModelError naming the entry.
"""

from __future__ import annotations

import ast
import builtins
import functools
import math

import sympy as sp

from ..errors import ModelError

__all__ = ["check_string", "sympify_string"]


# Python's own functions that SymPy's parser maps to SymPy (min, max) or that act on SymPy objects
# through their operators (abs, pow); every other builtin (open, eval, input, ...) is refused.
_BUILTIN_CALLS = {"abs": sp.Abs, "pow": sp.Pow, "min": sp.Min, "max": sp.Max}
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.BitXor)  # ^ is ** to sympify
_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@functools.cache
def _sympy_namespace():
    """The names SymPy's parser reads as its own (``from sympy import *``)."""
    return {name: getattr(sp, name) for name in sp.__all__}


def _sympy_callable(obj):
    """A SymPy class of expressions (exp, Abs, Max, Heaviside, Piecewise, Rational, ...) or a
    function of ``sympy.functions`` that builds one (sqrt, cbrt, root): building it computes
    nothing but an expression.  Parsers, printers and tools (sympify, lambdify, var, S) are not."""
    if isinstance(obj, type):
        return issubclass(obj, sp.Basic)
    module = getattr(obj, "__module__", None) or ""
    return callable(obj) and module.startswith("sympy.functions.")


def _refusal(node, names, text):
    """Why ``node`` may not appear in a drift string, or None: numbers, names, + - * / ** (^),
    unary ±, calls of SymPy functions by name, and the comparisons < <= > >= and tuples that
    Piecewise((value, condition), ...) is written with (meaning is checked after parsing)."""
    if isinstance(node, ast.Constant):
        ok = node.value is None or isinstance(node.value, (bool, int, float, complex))
        return None if ok else f"the literal {node.value!r} (only numbers are allowed)"
    if isinstance(node, ast.Name):
        private = node.id.startswith("_") and node.id not in names
        return f"the name {node.id!r} (a name starting with _ is not a symbol)" if private else None
    if isinstance(node, ast.BinOp):
        return None if isinstance(node.op, _OPERATORS) else "the operator " + type(node.op).__name__
    if isinstance(node, ast.UnaryOp):
        ok = isinstance(node.op, (ast.USub, ast.UAdd))
        return None if ok else "the operator " + type(node.op).__name__
    if isinstance(node, ast.Compare):
        ok = all(isinstance(op, _COMPARISONS) for op in node.ops)
        return None if ok else "a comparison other than < <= > >="
    if isinstance(node, ast.Tuple):
        return None
    if isinstance(node, ast.keyword):
        return f"the keyword {node.arg!r}" if node.arg is None or node.arg[:1] == "_" else None
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            return f"a call of {ast.get_source_segment(text, node.func)!r}, not of a function name"
        name = node.func.id
        if name in names:
            return f"a call of {name!r}, a declared symbol and not a function"
        namespace = _sympy_namespace()
        if name.startswith("_") or (
            name in namespace
            and name not in _BUILTIN_CALLS
            and not _sympy_callable(namespace[name])
        ):
            return f"a call of {name}(), which is not a SymPy function"
        if name not in namespace and name not in _BUILTIN_CALLS and name in vars(builtins):
            return f"a call of {name}(), a Python builtin and not a SymPy function"
        return None
    if isinstance(node, (ast.Expression, ast.Load, ast.expr_context)) or isinstance(
        node, (ast.operator, ast.unaryop, ast.cmpop)
    ):
        return None
    return _NODE_NAMES.get(type(node), type(node).__name__)


_NODE_NAMES = {
    ast.Attribute: "an attribute (.)",
    ast.Subscript: "a subscript ([...])",
    ast.Lambda: "a lambda",
    ast.List: "a list",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator",
    ast.JoinedStr: "an f-string",
    ast.NamedExpr: "an assignment (:=)",
    ast.IfExp: "an if-else expression (use Heaviside(), Min(), Max() or sign())",
    ast.BoolOp: "and/or (use Heaviside(), Min(), Max() or sign())",
    ast.Starred: "a starred argument (*)",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "a slice",
}


def check_string(text, names, what):
    """Refuse a drift (D, G) string that is more than a formula before SymPy's parser, which
    evaluates Python, reads it: ModelError naming the string and the first part that is not a
    number, a name, an arithmetic operator or a call of a SymPy function by its name, or the
    first constant whose exact value SymPy would compute digit by digit (see ``_Sizes``)."""
    text = text.strip()
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as exc:
        raise ModelError(
            f"{what}: cannot interpret {text!r} as an expression "
            f"({getattr(exc, 'msg', None) or type(exc).__name__}); write a formula in "
            "Python syntax with the declared symbols, e.g. '-a*x + sqrt(y)'"
        ) from None
    for node in ast.walk(tree):
        why = _refusal(node, names, text)
        if why is not None:
            part = ast.get_source_segment(text, node)
            shown = f" in {part!r}" if part and part != text else ""
            raise ModelError(
                f"{what}: {text!r} holds {why}{shown}; a drift, D or G string may hold only "
                "numbers, symbols, + - * / ** and calls of SymPy functions by name (exp, log, "
                "sqrt, Abs, Max, Heaviside, ...), since SymPy's parser runs it as Python code"
            )
    try:
        _Sizes(names).visit(tree.body)
    except _TooLarge as exc:
        node, why = exc.args
        part = ast.get_source_segment(text, node)
        shown = f"holds {part!r}," if part and part != text else "is"
        raise ModelError(
            f"{what}: {text!r} {shown} {why}: SymPy's parser would compute this exact number "
            "digit by digit (for minutes, or until the memory runs out), far beyond the double "
            "precision (16 digits, magnitudes up to 1.8e308) the kernels compute in; write a "
            "smaller constant, or a float (1e300) if the value is meant"
        ) from None
    except RecursionError:
        raise ModelError(
            f"{what}: the expression {text[:60]!r}… is nested too deeply to be read; write it "
            "with fewer nested operations"
        ) from None


def sympify_string(text, names, what):
    """``text`` (checked by :func:`check_string`) parsed by SymPy with the declared symbols
    ``names``; the parser's own failures, and as a last line of defence running out of memory,
    of recursion depth or of the float range, are a ModelError naming ``what`` and the string."""
    check_string(text, names, what)
    try:
        return sp.sympify(text, locals=dict(names))
    except (sp.SympifyError, SyntaxError, TypeError, ValueError) as exc:
        raise ModelError(
            f"{what}: cannot interpret {text!r} as an expression ({exc}); names that are "
            "not declared symbols are read as SymPy's own (beta, gamma, E, I, N, S, Q ...)"
        ) from None
    except (MemoryError, RecursionError, OverflowError) as exc:
        raise ModelError(
            f"{what}: SymPy could not read {text!r} ({type(exc).__name__}: it needs more "
            "memory, recursion depth or float range than there is); write a smaller formula, "
            "with constants that double precision can hold"
        ) from None


#: A power of constants may have an exponent of magnitude up to this: beyond it any base of
#: magnitude ≥ 2 or ≤ 1/2 is beyond double precision (2**±1000 ≈ 1e±301; doubles stop at
#: 1.8e308 and 4.9e-324), and a base nearer to 1 written exactly (Rational(1001, 1000)) has
#: thousands of digits.  ``x**3``, ``2**0.5``, ``10**-6``, ``(1/2)**3``, ``2**10`` stay far below.
POWER_BOUND = 1000
#: A constant in the arguments of a function SymPy evaluates exactly (factorial, binomial,
#: harmonic, polygamma, legendre, ...) may be up to this: factorial(171) is already beyond double
#: precision, and the two-argument ones grow fast in cost (harmonic(300, 300) and
#: polygamma(300, 300) take a second, harmonic(1000, 1000) eight minutes; at 100: 15 ms).
CALL_BOUND = 100
#: The largest exact number (in bits) a power may make: 100 000 bits (30 000 digits) take
#: microseconds, and no double needs more than 1100 (towers of bounded exponents: (10**999)**999).
BITS_BOUND = 100_000

#: Modules of SymPy functions that evaluate exactly at integer arguments: combinatorial numbers,
#: gamma, zeta and beta functions, orthogonal polynomials (expanded at an integer degree),
#: spherical harmonics, and polynomial objects (Poly, RootOf: expanded, dense).
_EXACT_MODULES = (
    "sympy.functions.combinatorial.",
    "sympy.functions.special.gamma_functions",
    "sympy.functions.special.zeta_functions",
    "sympy.functions.special.beta_functions",
    "sympy.functions.special.polynomials",
    "sympy.functions.special.spherical_harmonics",
    "sympy.functions.special.bsplines",
    "sympy.functions.special.hyper",
    "sympy.ntheory.",
    "sympy.polys.",
    "sympy.concrete.",
)
_CONSTANTS = {
    "pi": math.pi,
    "E": math.e,
    "EulerGamma": 0.5772156649015329,
    "GoldenRatio": 1.618033988749895,
    "Catalan": 0.915965594177219,
    "TribonacciConstant": 1.839286755214161,
    "oo": math.inf,
}
_MATH = {
    **{
        n: getattr(math, n)
        for n in (
            "sin cos tan asin acos atan sinh cosh tanh asinh acosh "
            "atanh exp log sqrt erf erfc floor ceil atan2"
        ).split()
    },
    "ln": math.log,
    "ceiling": math.ceil,
    "Abs": abs,
    "abs": abs,
    "Min": min,
    "min": min,
    "Max": max,
    "max": max,
    "Mul": math.prod,
    "Add": lambda *a: math.fsum(a),
    "sign": lambda v: math.copysign(float(v != 0), v),
    "Heaviside": lambda v, h=0.5: 1.0 if v > 0 else 0.0 if v < 0 else h,
    "Integer": float,
    "Rational": lambda p, q=1: p / q,
}


def _float(fn, *args):
    """``fn(*args)`` in double precision: an overflow is ±inf, a domain error NaN."""
    try:
        out = fn(*args)
    except OverflowError:
        return math.inf
    except (ValueError, ZeroDivisionError, TypeError):
        return math.nan
    return float(out) if isinstance(out, (int, float)) else math.nan


def _largest(*magnitudes):
    """The largest of ``magnitudes``; NaN (a constant not computed here) if one is NaN."""
    return math.nan if any(map(math.isnan, magnitudes)) else max(magnitudes)


def _or_unbounded(value, shown, noun):
    return f"{noun} that cannot be bounded in double precision" if math.isnan(value) else shown


def _exact_function(name):
    obj = _sympy_namespace().get(name)
    module = getattr(obj, "__module__", None) or ""
    return obj is not None and module.startswith(_EXACT_MODULES)


class _TooLarge(Exception):
    """(node, why): a constant whose exact value is unbounded."""


class _Sizes:
    """One walk over a checked string's tree giving each subexpression ``(value, bits, top)``:
    its value as a double if it is a numeric constant (None if it holds a symbol; NaN if it is
    constant but not computed here; ±inf beyond double range), an upper bound on the bits of its
    exact value (None once a float makes it inexact: SymPy's Float arithmetic has a fixed
    precision) and the largest magnitude of a constant inside it.  Nothing exact is computed:
    values are doubles, bits are estimated.  Refuses (``_TooLarge``) a power of constants whose
    exponent is beyond ±POWER_BOUND or whose exact value would exceed BITS_BOUND bits (a tower
    such as 2**2**40 is refused at its top: its exponent is huge), exp() of a constant beyond
    ±POWER_BOUND (exp(n*log(2)) is 2**n), and a call of a function SymPy evaluates exactly with a
    constant beyond CALL_BOUND in its arguments."""

    def __init__(self, names):
        self.names = names

    def visit(self, node):
        kind = type(node).__name__
        value, bits, top = getattr(self, "visit_" + kind, self.other)(node)
        return value, bits, top if value is None else _largest(top, abs(value))

    def other(self, node):  # comparisons, tuples of Piecewise: not a constant
        tops = [self.visit(c)[2] for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        return None, None, _largest(0.0, *tops)

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or v is None:
            return None, None, 0.0
        if isinstance(v, int):
            return _float(float, v), max(v.bit_length(), 1), 0.0
        if isinstance(v, float):
            return v, None, 0.0
        return math.nan, None, 0.0  # a complex literal

    def visit_Name(self, node):
        if node.id in self.names or node.id not in _CONSTANTS and node.id not in ("I", "zoo"):
            return None, None, 0.0
        return _CONSTANTS.get(node.id, math.nan), 2, 0.0

    def visit_UnaryOp(self, node):
        v, bits, top = self.visit(node.operand)
        return (None if v is None else -v if isinstance(node.op, ast.USub) else v), bits, top

    def visit_BinOp(self, node):
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, (ast.Pow, ast.BitXor)):
            return self.power(node, left, right)
        top = _largest(left[2], right[2])
        if left[0] is None or right[0] is None:
            return None, None, top
        op = {ast.Add: float.__add__, ast.Sub: float.__sub__, ast.Mult: float.__mul__}
        fn = op.get(type(node.op), float.__truediv__)
        bits = None if left[1] is None or right[1] is None else left[1] + right[1]
        return _float(fn, float(left[0]), float(right[0])), bits, top

    def power(self, node, base, exponent, what="a power of constants"):
        top = _largest(base[2], exponent[2])
        if base[0] is None or exponent[0] is None:
            return None, None, top
        e = exponent[0]
        if not abs(e) <= POWER_BOUND:
            shown = f"the exponent {e:.3g} (beyond ±{POWER_BOUND})"
            raise _TooLarge(node, f"{what} with {_or_unbounded(e, shown, 'an exponent')}")
        exact = base[1] is not None and exponent[1] is not None
        bits = abs(e) * base[1] + exponent[1] if exact else None
        if exact and bits > BITS_BOUND:
            raise _TooLarge(node, f"{what} whose exact value has about {bits * 0.30103:.2g} digits")
        return _float(math.pow, base[0], e), bits, top

    def visit_Call(self, node):
        name = node.func.id
        args = [self.visit(a) for a in node.args]
        kwargs = [self.visit(k.value) for k in node.keywords]
        top = _largest(0.0, *(a[2] for a in args + kwargs))
        if _exact_function(name) and not top <= CALL_BOUND:
            shown = f"the constant {top:.3g} (beyond {CALL_BOUND})"
            why = f"{_or_unbounded(top, shown, 'a constant')} among its arguments"
            raise _TooLarge(node, f"a call of {name}(), which SymPy evaluates exactly, with {why}")
        if name in ("Pow", "pow") and len(args) == 2:
            return self.power(node, *args)
        if name == "root" and len(args) == 2 and args[1][0] is not None:
            inverse = (_float(lambda: 1.0 / args[1][0]), args[1][1], args[1][2])
            return self.power(node, args[0], inverse)
        if name == "exp" and len(args) == 1:  # exp(n*log(2)) is 2**n
            return self.power(node, (math.e, 2, math.e), args[0], "exp() of a constant")
        if kwargs or any(a[0] is None for a in args):
            return None, None, top
        values = [a[0] for a in args]
        value = _float(_MATH[name], *values) if name in _MATH else math.nan
        if _exact_function(name):  # factorial(100) has 525 bits, harmonic(100, 100) 14 000
            bits = 8 * math.prod(max(2.0, abs(v)) for v in values)
        else:
            bits = None if any(a[1] is None for a in args) else sum(a[1] for a in args) + 2
        return value, bits, top
