"""Checks of what a declaration is made of: the symbols of the drift and the diffusion, strings
parsed with the declared symbols, constants that double precision can hold, functions a kernel
can compute, a diffusion that can be a diffusion, and the values of parameters and inputs.

Used by :class:`~dynosed_sym.model.declaration.SDEModel`; every failure is a ModelError naming
the equation or the entry.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import sympy as sp

from ..arguments import float_array
from ..errors import ModelError
from .strings import check_string, sympify_string

__all__ = [
    "parse_strings",
    "check_string",
    "expression",
    "expression_array",
    "real_value",
    "assumptions_of",
    "check_constants",
    "numeric_parts",
    "refuse_zero_diffusion",
    "diffusion_range",
    "check_functions",
    "SUPPORTED_FUNCTIONS",
    "TIME_NAMES",
    "distinct_symbols",
    "continuous_symbols",
    "drift_symbols",
    "diffusion_symbols",
    "diffusion_matrix",
    "env_param_list",
    "declared_signs",
    "sign_assumption",
    "SIGN_ASSUMPTIONS",
    "values_by_name",
]


def parse_strings(obj, names, what):
    """``obj`` with every string parsed as a SymPy expression whose names are the declared
    symbols (``names``: name → Symbol): ``"-a*x"`` means the declared ``a`` and ``x``, whatever
    their assumptions (``real=True``), and a declared ``E``, ``I`` or ``beta`` is that symbol,
    not SymPy's constant or function of that name.  Lists, tuples and arrays are walked."""
    if isinstance(obj, str):
        return sympify_string(obj, names, what)
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "OUS":
        return np.array(parse_strings(obj.tolist(), names, what), dtype=object)
    if isinstance(obj, (list, tuple)):
        inner = what + "[{}]" if what[-1:] != "]" else what[:-1] + ",{}]"
        return type(obj)(parse_strings(o, names, inner.format(i)) for i, o in enumerate(obj))
    return obj


def expression(value, where):
    """``value`` as a SymPy expression: ModelError for what sympify accepts but is no number or
    formula (True, None, a relation ``x < a`` or ``Eq(x, a)``, a set, a dict)."""
    if isinstance(value, (bool, np.bool_)):
        value = sp.true if value else sp.false
    if isinstance(value, str):  # one that parse_strings did not reach (e.g. in a pandas Series)
        value = sympify_string(value, {}, where)
    try:
        out = sp.sympify(value)
    except (sp.SympifyError, TypeError, ValueError) as exc:
        raise ModelError(f"{where}: cannot interpret {value!r} as an expression ({exc})") from None
    if isinstance(out, sp.Expr):
        return out
    if out is None:
        raise ModelError(f"{where}: no value (None); give a number or an expression")
    if isinstance(out, sp.logic.boolalg.BooleanAtom):
        raise ModelError(
            f"{where}: {out} is a truth value, not a number or an expression (True is not 1: "
            "write the number)"
        )
    if isinstance(out, (sp.core.relational.Relational, sp.logic.boolalg.Boolean)):
        raise ModelError(
            f"{where}: {sp.sstr(out)} is a condition ({type(out).__name__}), not an expression: "
            "write the right-hand side itself (a - x, not Eq(x, a) or x < a); for a switch use "
            "Heaviside(), Min(), Max() or sign()"
        )
    raise ModelError(f"{where}: {out!r} is a {type(out).__name__}, not a number or an expression")


def expression_array(value, what):
    """``value`` (a number, an expression, a sequence of them, nested at most twice, or a matrix)
    as an object array of SymPy expressions with 0, 1 or 2 dimensions; entries are checked by
    :func:`expression` and named ``what[i]`` or ``what[i,j]``."""
    if isinstance(value, sp.MatrixSymbol):
        value = value.as_explicit()
    if isinstance(value, sp.MatrixBase):
        value = value.tolist()
    try:
        arr = np.array(value, dtype=object)
    except ValueError:  # ragged nesting (older NumPy)
        arr = None
    nested = (list, tuple, np.ndarray, sp.MatrixBase)
    if arr is None or (arr.ndim == 1 and any(isinstance(e, nested) for e in arr)):
        raise ModelError(f"{what}: rows of different lengths; every row needs as many entries")
    if arr.ndim > 2:
        raise ModelError(
            f"{what}: expected a number, a vector or a matrix, got {arr.ndim} dimensions "
            f"(shape {arr.shape})"
        )
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(arr.shape):
        where = f"{what}[{','.join(map(str, idx))}]" if idx else what
        out[idx] = expression(arr[idx], where)
    return out


def real_value(value, what, name, error=ModelError):
    """One value of a parameter or input: a real number (not a bool, complex or text)."""
    out = float_array(value, f"{what}[{name!r}]", error=error)
    if out.shape != ():
        raise error(f"{what}: value of {name!r} must be one number, got shape {out.shape}")
    return float(out)


def assumptions_of(symbol):
    given = dict(getattr(symbol, "_assumptions_orig", None) or symbol.assumptions0)
    given.pop("commutative", None)
    return ", ".join(f"{k}={v}" for k, v in sorted(given.items())) or "none"


def numeric_parts(expr):
    """The largest numeric subexpressions of ``expr`` (constants, or functions of constants such
    as ``exp(1000)``), not descending into them."""
    todo = [expr]
    while todo:
        sub = todo.pop()
        if sub.is_number:
            yield sub
        else:
            todo.extend(sub.args)


def check_constants(expr, where):
    """Every numeric subexpression (a constant, or a function of constants: ``exp(1000)``) must
    be finite and, if not zero, stay non-zero in double precision: the kernels compute in it."""
    for sub in numeric_parts(expr):
        if sub.is_Integer and abs(sub) < 2**53:
            continue
        value = sub.evalf(30)
        if not value.is_real or not value.is_finite:
            continue  # complex, oo, nan: check_functions names them
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


def diffusion_range(D, what):
    """Refuse a constant entry of D that double precision cannot hold (``what``: the argument D
    came from, ``"diffusion"`` or ``"noise"``).  A nonzero entry that underflows to zero (½GGᵀ
    of ``noise=[[1e-170]]`` is 5e-341) leaves the kernels without that noise — no noise, no
    information about the drift — and one whose 2D = GGᵀ (the variance rate of the noise, whose
    square root the simulator takes) is beyond the double range overflows in every kernel."""
    for i, j in np.ndindex(D.shape):
        e = D[i, j]
        if not e.is_number or e.is_zero:
            continue
        value = e.evalf(30)
        if not (value.is_real and value.is_finite):
            continue  # complex, oo, nan: check_functions names them
        shown = f"D[{i},{j}] = " + (f"½(GGᵀ)[{i},{j}] = " if what == "noise" else "")
        shown += f"{sp.Float(value, 4)}"
        if math.isinf(float(2 * value)):
            raise ModelError(
                f"{what}: {shown} is beyond double precision: 2D = GGᵀ, the variance rate of "
                "the noise, must stay below 1.8e308 (the range the kernels compute in); rescale "
                "the model's units"
            )
        if float(value) == 0.0:
            raise ModelError(
                f"{what}: {shown} underflows to zero in double precision (below 5e-324): the "
                "kernels would run without this noise, and snapshots without noise carry no "
                "information about the drift; rescale the model's units"
            )


# SymPy function classes the code printer maps onto ``math`` functions that
# Numba compiles.  Anything else (undefined functions, special functions without
# a Numba implementation) is rejected at declaration time, not at compile time.
SUPPORTED_FUNCTIONS = (
    sp.sin,
    sp.cos,
    sp.tan,
    sp.asin,
    sp.acos,
    sp.atan,
    sp.atan2,
    sp.sinh,
    sp.cosh,
    sp.tanh,
    sp.asinh,
    sp.acosh,
    sp.atanh,
    sp.exp,
    sp.log,
    sp.erf,
    sp.erfc,
    sp.Abs,
    sp.sign,
    sp.floor,
    sp.ceiling,
    sp.Min,
    sp.Max,
    sp.Heaviside,
)


_NUMBERS = sp.core.numbers
#: What check_functions looks for, found in one traversal of an expression.
_CHECKED = (sp.Function, sp.Integral, sp.Derivative, sp.Sum, sp.Product, _NUMBERS.ImaginaryUnit)
_CHECKED += (_NUMBERS.ComplexInfinity, _NUMBERS.Infinity, _NUMBERS.NegativeInfinity, _NUMBERS.NaN)


def check_functions(expr, where):
    """Raise ModelError for what a kernel cannot compute: undefined or unsupported functions,
    Piecewise, unevaluated integrals/derivatives/sums/products, complex numbers, infinities,
    NaN, constants beyond double range."""
    found = expr.atoms(*_CHECKED)
    for f in sorted((f for f in found if isinstance(f, sp.Function)), key=sp.default_sort_key):
        if isinstance(f, sp.core.function.AppliedUndef):
            raise ModelError(
                f"{where}: undefined function {f.func.__name__}() — give it an explicit formula"
            )
        if isinstance(f, sp.Piecewise):
            raise ModelError(
                f"{where}: Piecewise() cannot be compiled (its branches have no derivatives the "
                "Stein features could use); write it with Heaviside(), Min(), Max(), Abs() or "
                "sign(), whose derivatives are taken almost everywhere"
            )
        if not isinstance(f, SUPPORTED_FUNCTIONS):
            raise ModelError(
                f"{where}: function {f.func.__name__}() cannot be compiled by Numba; supported: "
                + ", ".join(sorted(c.__name__ for c in SUPPORTED_FUNCTIONS))
            )
    for bad in (sp.Integral, sp.Derivative, sp.Sum, sp.Product):
        if any(isinstance(f, bad) for f in found):
            raise ModelError(f"{where}: unevaluated {bad.__name__} cannot be compiled")
    if any(f is sp.I for f in found):
        raise ModelError(f"{where}: complex numbers are not supported")
    if any(isinstance(f, _CHECKED[6:]) for f in found):
        raise ModelError(f"{where}: contains an infinity or NaN")
    check_computable(expr, where)
    check_constants(expr, where)


#: What a kernel computes: numbers, symbols, + * ** and the functions checked above.
_COMPUTABLE = (sp.Symbol, sp.Number, sp.NumberSymbol, sp.Add, sp.Mul, sp.Pow, sp.Function)
_COMPUTABLE += (sp.Min, sp.Max)


def check_computable(expr, where):
    """Refuse a SymPy object that is an expression but no formula a kernel can compute: a
    ``Lambda`` (a function, not its value), ``Subs``, ``Order`` ``O(x)``, ``AccumBounds``,
    ``UnevaluatedExpr`` — they passed the declaration and failed in the printer or in Numba
    ("name 'Lambda' is not defined", "Unsupported by NumPyPrinter: Order")."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, _COMPUTABLE):
            continue
        kind, shown = type(node).__name__, sp.sstr(node)
        if isinstance(node, sp.Lambda):
            raise ModelError(
                f"{where}: {sp.sstr(node)} is a function (Lambda), not an expression: write its "
                f"value, e.g. {sp.sstr(node.expr)}, or call it on the state variables"
            )
        raise ModelError(
            f"{where}: {f'{kind}({shown})' if kind == 'UnevaluatedExpr' else shown} is a SymPy "
            f"{kind}, which no kernel can compute (a kernel computes numbers, symbols, "
            "+ - * / ** and supported functions); evaluate it (.doit()) or write the formula "
            "itself"
        )


#: Functions whose SymPy derivative of a symbol not declared real holds re() and im().
_REAL_ONLY = (sp.Abs, sp.arg, sp.re, sp.im, sp.conjugate)


def check_real_arguments(expr, where, declared):
    """Refuse Abs, arg, re, im, conjugate of a declared symbol not known to be real: their
    derivatives then hold re() and im() of it (d|x|/dx = (re(x)·d re(x)/dx + …)/|x|), which no
    kernel can compute — it failed as a SymPy printer error in every entry point."""
    for f in sorted(expr.atoms(*_REAL_ONLY), key=sp.default_sort_key):
        loose = sorted((s for s in f.free_symbols & declared if not s.is_real), key=str)
        if loose:
            names = ", ".join(str(s) for s in loose)
            raise ModelError(
                f"{where}: {f} takes {names}, which SymPy does not know to be real, and "
                f"differentiates it through re() and im(); declare it real, e.g. "
                f"sp.symbols('{names.replace(', ', ' ')}', real=True)"
            )


# Names read as time: the stationary routes cannot use a drift f(x, t) (see SDEModel).
TIME_NAMES = ("t", "time", "tau")


def distinct_symbols(state_syms, param_syms, input_syms):
    """Refuse a symbol declared twice, or two different symbols with one name."""
    seen = {}
    for s, kind in (
        [(s, "state") for s in state_syms]
        + [(s, "params") for s in param_syms]
        + [(s, "inputs") for s in input_syms]
    ):
        if s in seen:
            raise ModelError(f"symbol {s} is declared twice ({seen[s]} and {kind})")
        seen[s] = kind
    names = collections.Counter(str(s) for s in state_syms + param_syms + input_syms)
    dup = {n for n, count in names.items() if count > 1}
    if dup:
        raise ModelError(f"two different symbols share the name {sorted(dup)[0]!r}")


def continuous_symbols(state_syms, param_syms, input_syms=()):
    """Refuse a state variable or a parameter SymPy knows to be an integer (``integer=True``, or
    ``even``, ``odd``, ``prime``, ``zero``) or not real (``imaginary=True``, ``infinite=True``,
    where ``re(x)`` is 0 or ``floor(x)`` is ``x``): SymPy has already used that to simplify the
    drift it was written into — ``floor(x)`` is ``x``, ``sin(pi*x)`` is 0, ``(-1)**(2*x)`` is 1
    — before the model sees it, while a state moves and a fit estimates on the real line, so the
    kernels would compute another drift than the one written, without a word."""
    kinds = (
        ("state variable", state_syms, "a state of an SDE moves on the real line"),
        ("parameter", param_syms, "a fit estimates it on the real line"),
        ("input", input_syms, "an input's value may be any real number"),
    )
    for kind, syms, why in kinds:
        for s in syms:
            if s.is_real is False:  # imaginary=True, infinite=True, or a nonreal complex
                raise ModelError(
                    f"{kind} {s} is declared with {assumptions_of(s)}, not a real number: {why}, "
                    "and SymPy has already used the assumption to simplify the expressions "
                    f"written with it ({_simplified(s)}), so the kernels would compute another "
                    f"drift; declare it real: sp.Symbol('{s}', real=True)"
                )
            if s.is_integer:
                raise ModelError(
                    f"{kind} {s} is declared with {assumptions_of(s)}, an integer: {why}, and "
                    "SymPy has already used the assumption to simplify the expressions written "
                    "with it (floor(x) is x, sin(pi*x) is 0, (-1)**(2*x) is 1), so the kernels "
                    f"would compute another drift; declare it real: sp.Symbol('{s}', real=True)"
                )


def _simplified(s):
    """What SymPy makes of a few functions of a symbol declared not real, e.g. "re(z) is 0"."""
    shown = []
    for f in (sp.re, sp.floor, sp.Abs, sp.sign):
        written, value = f"{f.__name__}({s})", f(s)
        if str(value) != written:
            shown.append(f"{written} is {value}")
    return ", ".join(shown) or "its functions are those of a complex number"


def drift_symbols(fj, where, declared, names, has_inputs):
    """Refuse a drift component with a symbol that is not declared: time, a same-named symbol
    with other assumptions, or an unknown one (``names``: name → declared Symbol)."""
    extra = fj.free_symbols - declared
    if not extra:
        return
    bad = sorted(extra, key=str)[0]
    if str(bad) in TIME_NAMES:
        raise ModelError(
            f"{where}: the drift depends on time {bad}; snapshot routes need a "
            "time-homogeneous drift f(x; θ) (the stationary Fokker–Planck equation has "
            "no t).  For a snapshot that is not stationary keep f(x; θ) and pass "
            "∂ₜlog p as dlogp_dt= to fit_global/fit_local; for a periodic forcing make "
            f"the phase a state variable"
        )
    if str(bad) in names:  # same name, another Symbol (other assumptions)
        raise ModelError(
            f"{where}: symbol {bad} is not the declared {bad}: it was made with other "
            f"assumptions ({assumptions_of(bad)} instead of "
            f"{assumptions_of(names[str(bad)])}); build the drift from the declared "
            "Symbol objects, or write it as a string"
        )
    raise ModelError(
        f"{where}: symbol {bad} is neither a state variable, a parameter nor an input"
        + ("" if has_inputs else " (declare known per-experiment values as inputs=)")
    )


def diffusion_symbols(Dij, where, params, known):
    """Refuse a diffusion entry holding a parameter, time or an undeclared symbol (``params``:
    the set of parameters, ``known``: the set of state variables and inputs)."""
    p_in = Dij.free_symbols & params
    if p_in:
        raise ModelError(
            f"{where}: parameter {sorted(p_in, key=str)[0]} appears in the "
            "diffusion; D must be known (only the drift may hold parameters)"
        )
    extra = Dij.free_symbols - known
    if extra and str(sorted(extra, key=str)[0]) in TIME_NAMES:
        raise ModelError(
            f"{where}: the diffusion depends on time {sorted(extra, key=str)[0]}; "
            "snapshot routes need a time-homogeneous D(x)"
        )
    if extra:
        raise ModelError(
            f"{where}: symbol {sorted(extra, key=str)[0]} is not a state variable or an input"
        )


def diffusion_matrix(D, d, what, G):
    """Refuse a D that is not symmetric, zero, or provably not positive semi-definite; for a
    state-dependent non-diagonal D without a given noise matrix ``G``, the symbolic Cholesky
    factor L of 2D (the simulator's G) is returned, refused where it divides by zero."""
    for i in range(d):
        for j in range(i + 1, d):
            if D[i, j] != D[j, i] and sp.simplify(D[i, j] - D[j, i]) != 0:
                raise ModelError(
                    f"diffusion D is not symmetric: D[{i},{j}] = {D[i, j]} but "
                    f"D[{j},{i}] = {D[j, i]}"
                )
    refuse_zero_diffusion(D, what)
    for i in range(d):
        # a state-dependent D is checked where it is used (validate.diffusion_psd); here only
        # what the symbols prove: a diagonal entry negative for every real state
        if D[i, i].free_symbols and D[i, i].is_negative:
            raise ModelError(
                f"diffusion D[{i},{i}] = {D[i, i]} is negative for every state; "
                "D must be positive semi-definite"
            )
    if not any(D[i, j].free_symbols for i in range(d) for j in range(d)):
        Dn = np.array(D.evalf(), dtype=float)
        eig = np.linalg.eigvalsh(Dn)
        if eig.min() < -1e-12 * max(1.0, abs(eig).max()):
            raise ModelError(
                f"diffusion D is not positive semi-definite (eigenvalue {eig.min():.3g})"
            )
        return None
    if G is not None or D.is_diagonal():
        return None
    # the simulator needs G with ½GGᵀ = D, taken as the symbolic Cholesky factor of 2D;
    # a factor that divides by zero (a diagonal entry vanishing where its row does not)
    # cannot be printed into a kernel, so say so here rather than at code generation
    L = (2 * D).cholesky(hermitian=False)
    bad = [(i, j) for i, j in np.ndindex(L.shape) if L[i, j].has(sp.zoo, sp.nan, sp.oo)]
    if bad:
        i, j = bad[0]
        raise ModelError(
            f"diffusion D has no symbolic Cholesky factor: entry G[{i},{j}] of 2D = GGᵀ "
            f"divides by zero (D = {D.tolist()}); D must be positive semi-definite with "
            "D[k,k] > 0 wherever its row is nonzero, or declare the noise as noise=G"
        )
    return L


def env_param_list(env_params, params, param_repl):
    """The declared parameters named by ``env_params`` (symbols, names or MatrixSymbol
    elements), each once."""
    env = []
    for item in [] if env_params is None else list(env_params):
        key = param_repl.get(item, item)
        match = [p for p in params if p == key or str(p) == str(key)]
        if not match:
            raise ModelError(
                f"env_params: {str(key)!r} is not a parameter of the model "
                f"(parameters: {', '.join(map(str, params)) or 'none'})"
            )
        if match[0] in env:
            raise ModelError(f"env_params: {match[0]} is listed twice")
        env.append(match[0])
    return env


def values_by_name(keyed, names, what, kind, model_name, error=ModelError):
    """``{name: value}`` as a vector in the order of ``names``: every name needs a real value,
    and no other name is allowed.  ``kind``: (``"a parameter"``, what an empty list shows);
    ``error``: the exception raised (a DataError for data such as start states)."""
    noun, empty = kind
    bare = noun.split(" ", 1)[1]  # (the article dropped: "parameter", "state variable")
    by_name = {}
    for name, val in keyed.items():
        if name not in names:
            raise error(
                f"{what}: {name!r} is not {noun} of model {model_name!r} "
                f"({bare}s: {', '.join(names) or empty})"
            )
        by_name[name] = real_value(val, what, name, error)
    missing = [n for n in names if n not in by_name]
    if missing:
        raise error(f"{what}: no value for {bare} {missing[0]!r}")
    return np.array([by_name[n] for n in names], dtype=float)


#: SymPy sign assumptions, strongest first: (assumption, inside(values) — elementwise on arrays —,
#: the values it admits, the values it excludes).
SIGN_ASSUMPTIONS = (
    ("positive", lambda v: v > 0, "> 0", "≤ 0"),
    ("nonnegative", lambda v: v >= 0, "≥ 0", "< 0"),
    ("negative", lambda v: v < 0, "< 0", "≥ 0"),
    ("nonpositive", lambda v: v <= 0, "≤ 0", "> 0"),
)


def sign_assumption(sym):
    """The row of :data:`SIGN_ASSUMPTIONS` of the strongest sign assumption ``sym`` was declared
    with (the one checked), or None.  ``extended_positive=True`` (and the other extended signs)
    simplify alike (``Abs(x)`` is ``x``) without making ``x.is_positive`` true (x might be ∞):
    such a row is returned with its assumption named ``extended_positive``."""
    for row in SIGN_ASSUMPTIONS:
        if getattr(sym, f"is_{row[0]}", None):
            return row
    for row in SIGN_ASSUMPTIONS:
        if getattr(sym, f"is_extended_{row[0]}", None):
            return (f"extended_{row[0]}", *row[1:])
    return None


def declared_signs(symbols, values, what, noun, model_name):
    """Raise ModelError when a value lies outside the sign its symbol was declared with
    (``sp.Symbol("s", positive=True)``, nonnegative, negative, nonpositive).

    SymPy used the assumption when the drift and D were written (``Abs(s)`` is ``s``), so at a
    value of the other sign the kernels would compute another model, without a word.  Names the
    symbol (``noun``: "input", "parameter"), the value, the assumption and SymPy's simplifications.
    """
    for sym, v in zip(symbols, np.asarray(values, dtype=float).tolist()):
        row = sign_assumption(sym)
        if row is None or row[1](v):
            continue
        assumption, _, allowed, _ = row
        name = str(sym)
        raise ModelError(
            f"{what}: value of {name!r} is {v:g}, but model {model_name!r} declares "
            f"{noun} {name} {assumption}=True, under which SymPy has already simplified "
            f"the drift and D written with it (Abs({name}) is {sp.Abs(sym)}, "
            f"sqrt({name}**2) is {sp.sqrt(sym**2)}), so at {v:g} the kernels would "
            f"compute another model; give a value {allowed}, or declare it real=True "
            f"(sp.Symbol({name!r}, real=True)) and write the model for both signs"
        )
