"""Exact null spaces of families of functions of the state: which combinations vanish identically.

The certificates behind the structural check (:mod:`.structural`): coefficient matrices over the
distinct x-dependent terms with exact (rational or algebraic) entries, and proven lower bounds on
the rank from the functions evaluated at random rational points — exactly in rationals for
rational functions, with interval arithmetic (``mpmath.iv``) otherwise.  What cannot be proven
either way is reported as numerical (:class:`NullSpace`).
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

__all__ = [
    "NullSpace",
    "function_null_space",
    "rat",
    "exact",
    "exact_rank",
    "is_zero",
    "proven_nonzero",
    "orthonormal",
    "EVAL_DIGITS",
]


EVAL_DIGITS = 30  # working digits of the interval (and numerical) evaluations


def rat(value):
    """A float as the rational number it displays (``2.6 → 13/5``, ``8/3 → 8/3``)."""
    v = float(value)
    if v == 0.0:
        return sp.Integer(0)
    r = sp.Rational(v).limit_denominator(10**9)
    if abs(float(r) - v) <= 1e-15 * abs(v):
        return r
    return sp.Rational(repr(v))


def exact(expr):
    """Replace Floats in ``expr`` by rationals (see :func:`rat`)."""
    expr = sp.sympify(expr)
    floats = expr.atoms(sp.Float)
    return expr.xreplace({f: rat(f) for f in floats}) if floats else expr


def _is_monomial(base, state):
    """True when ``base`` is 1 or a product of non-negative integer powers of state symbols."""
    if base == 1:
        return True
    for factor in sp.Mul.make_args(base):
        b, e = factor.as_base_exp()
        if b not in state or not (e.is_Integer and e > 0):
            return False
    return True


def _common_denominator_terms(entries, state):
    """Expand the entries of one row over a common denominator.

    Returns ``({k: [(coeff, base), ...]}, all_monomial)`` with ``entries[k] · L(x) = Σ coeff·base``
    for one nonzero function L(x) shared by the row (multiplying a row by a nonzero function does
    not change which combinations of columns vanish).
    """
    nz = [k for k, e in enumerate(entries) if e != 0]
    fracs = {}
    for k in nz:
        num, den = sp.fraction(sp.together(entries[k]))
        # constants belong to the coefficients, not to the denominator
        dc, dx = den.as_independent(*state, as_Add=False)
        fracs[k] = (num / dc, dx)
    dens = list({fr[1] for fr in fracs.values()})
    if len(dens) <= 1:
        common = dens[0] if dens else sp.Integer(1)
    else:
        try:
            common = sp.lcm_list(dens)
        except sp.PolynomialError:  # e.g. Piecewise denominators (no polynomial generators)
            common = sp.Mul(*dens)
    out, all_mono = {}, True
    for k in nz:
        num, den = fracs[k]
        q = sp.cancel(common / den) if den != common else sp.Integer(1)
        terms = []
        for term in sp.Add.make_args(sp.expand(num * q)):
            c, base = term.as_independent(*state, as_Add=False)
            if c != 0:
                terms.append((c, base))
                if all_mono and not _is_monomial(base, state):
                    all_mono = False
        out[k] = terms
    return out, all_mono


def _domain_matrix(M):
    """``M`` as a DomainMatrix over a domain where its rank is decided exactly, or None.

    Exact: ZZ/QQ (rational entries), an algebraic number field for entries with a few square
    roots of rationals (``QQ<√2>``), or a polynomial ring in π or e alone (transcendental, so an
    indeterminate).  Not exact: floats, other constants (``ZZ[sin(1), cos(1)]`` treats
    sin 1 and cos 1 as independent, which they are not) — the caller then proves what it claims
    by other means or reports it as numerical.
    """
    from sympy.polys.matrices import DomainMatrix

    dM = DomainMatrix.from_Matrix(M)
    dom = dM.domain
    if dom.is_ZZ or dom.is_QQ:
        return dM
    if dom.is_PolynomialRing and dom.domain.is_ZZ and list(dom.symbols) in ([sp.pi], [sp.E]):
        return dM
    if dom.is_EX:
        surds = {
            a
            for e in M
            for a in e.atoms(sp.Pow)
            if a.base.is_Rational and a.exp.is_Rational and not a.exp.is_Integer
        }
        others = set().union(*(e.atoms(sp.NumberSymbol, sp.Function, sp.Float) for e in M))
        if not others and len(surds) <= 3 and all(a.exp.q == 2 for a in surds):
            dM = DomainMatrix.from_Matrix(M, extension=True)
            if dM.domain.is_AlgebraicField:
                return dM
    return None


def _exact_nullspace(C, n):
    """Null space of the constant matrix C (rows × n): (list of n×1 Matrices, exact?).

    Exact (every vector satisfies C v = 0 exactly, and there are no others) when C has a
    :func:`_domain_matrix`; otherwise SymPy's generic routine (zero tests by ``simplify``), whose
    vectors the caller must prove.
    """
    if C.rows == 0:
        return [sp.Matrix(sp.eye(n)[:, k]) for k in range(n)], True
    dM = _domain_matrix(C)
    if dM is not None:
        N = dM.to_field().nullspace().to_Matrix()
        return [N[i, :].T for i in range(N.rows)], True
    return [vec.applyfunc(sp.nsimplify) for vec in C.nullspace(simplify=True)], False


def exact_rank(vectors, n):
    """Rank of n×1 vectors: exact for exact entries (:func:`_domain_matrix`), else the rank of
    their floating-point values (vectors flagged as numerical)."""
    if not vectors:
        return 0
    M = sp.Matrix.hstack(*vectors)
    dM = _domain_matrix(M)
    if dM is not None:
        return int(dM.to_field().rank())
    F = np.array([[complex(v) for v in row] for row in M.tolist()])
    return int(np.linalg.matrix_rank(F, tol=1e-9 * max(1.0, np.abs(F).max())))


def _constant_is_zero(c):
    """``c == 0`` proven for an x-free constant (exact for rationals and algebraic numbers in an
    exact domain, by ``simplify`` otherwise; False: not proven)."""
    if c == 0:
        return True
    if c.is_Rational or _domain_matrix(sp.Matrix([[c]])) is not None:
        return False  # a nonzero element of an exact domain
    return sp.simplify(c) == 0


def is_zero(expr, state):
    """True when ``expr ≡ 0`` is proven: over a common denominator, the coefficients of distinct
    monomials all vanish; otherwise ``simplify`` reaches 0.  False means "not proven"."""
    expr = exact(expr)
    if expr == 0:
        return True
    terms, mono = _common_denominator_terms([expr], state)
    if not terms.get(0):
        return True
    if mono:  # distinct monomials are independent: zero iff every collected coefficient is
        coeffs = {}
        for c, base in terms[0]:
            coeffs[base] = coeffs.get(base, 0) + c
        return all(_constant_is_zero(c) for c in coeffs.values())
    return sp.simplify(expr) == 0 or sp.simplify(sp.trigsimp(expr)) == 0


def _random_points(state, k, seed):
    rng = np.random.default_rng(seed)
    # rationals in (0.3, 1.7): away from the origin and from negative arguments of log/sqrt
    num = rng.integers(300, 1700, size=(k, len(state)))
    return [[Fraction(int(a), 1000) for a in row] for row in num]


class _Unsupported(Exception):
    """An expression the rigorous evaluator cannot bound (an unknown function, complex values)."""


class _Undefined(Exception):
    """The expression is not defined (or not bounded) at this point: try another point."""


def _step(v, exact):
    """(sign(v) + 1)/2 away from 0 (Heaviside); sign is 2·step − 1."""
    if exact:
        if v == 0:
            raise _Undefined
        return Fraction(int(v > 0))
    if 0 in v:
        raise _Undefined
    return v * 0 + int(v.a > 0)


def _minmax(args, exact, hi):
    """Max (``hi``) or Min: monotone in every argument, so the endpoints bound it."""
    if exact:
        return max(args) if hi else min(args)
    from mpmath import iv
    from mpmath.libmp import mpf_cmp

    sgn = 1 if hi else -1

    def pick(s, t):
        return s if sgn * mpf_cmp(s, t) >= 0 else t

    lo = functools.reduce(pick, [a._mpi_[0] for a in args])
    up = functools.reduce(pick, [a._mpi_[1] for a in args])
    return iv.make_mpf((lo, up))


def _evaluate(expr, point, exact, cache):
    """``expr`` at ``point`` ({symbol: Fraction}): a Fraction (``exact``; rational operations,
    Abs, Min, Max, sign and Heaviside only) or an ``mpmath.iv`` interval that contains the
    exact value (``EVAL_DIGITS`` digits, outward rounding)."""
    if expr in cache:
        return cache[expr]
    if expr.is_Symbol:
        if expr not in point:
            raise _Unsupported(f"free symbol {expr}")
        q = point[expr]
        val = q if exact else _iv_rational(q)
    elif expr.is_Rational:
        q = Fraction(int(expr.p), int(expr.q))
        val = q if exact else _iv_rational(q)
    elif expr.is_Add or expr.is_Mul:
        vals = [_evaluate(a, point, exact, cache) for a in expr.args]
        val = vals[0]
        for v in vals[1:]:
            val = val + v if expr.is_Add else val * v
    elif expr.is_Pow:
        base = _evaluate(expr.base, point, exact, cache)
        e = expr.exp
        if e.is_Integer:
            if exact or int(e) >= 0:
                try:
                    val = base ** int(e)
                except ZeroDivisionError:
                    raise _Undefined from None
            else:
                val = 1 / _nonzero(base) ** (-int(e))
        elif exact:
            raise _Unsupported("a non-integer power")
        else:
            from mpmath import iv

            if e == sp.S.Half:
                val = iv.sqrt(_positive(base))
            else:
                val = iv.exp(_evaluate(e, point, exact, cache) * iv.log(_positive(base)))
    elif isinstance(expr, (sp.Abs, sp.Min, sp.Max, sp.sign, sp.Heaviside)):
        many = isinstance(expr, (sp.Min, sp.Max))
        args = [_evaluate(a, point, exact, cache) for a in (expr.args if many else expr.args[:1])]
        if isinstance(expr, sp.Abs):
            val = abs(args[0])
        elif many:
            val = _minmax(args, exact, isinstance(expr, sp.Max))
        elif isinstance(expr, sp.sign):
            val = 2 * _step(args[0], exact) - 1
        else:
            val = _step(args[0], exact)
    elif exact:
        raise _Unsupported(f"{expr.func.__name__} is not rational")
    else:
        val = _iv_function(expr, point, cache)
    if not exact and not _finite(val):
        raise _Undefined
    cache[expr] = val
    return val


@contextlib.contextmanager
def _iv_digits():
    """``mpmath.iv`` at ``EVAL_DIGITS`` digits (it has no ``workdps``)."""
    from mpmath import iv

    old = iv.dps
    iv.dps = EVAL_DIGITS
    try:
        yield
    finally:
        iv.dps = old


def _finite(v):
    from mpmath.libmp import finf, fnan, fninf

    return v._mpi_[0] not in (fninf, finf, fnan) and v._mpi_[1] not in (fninf, finf, fnan)


def _iv_rational(q):
    from mpmath import iv

    return iv.mpf(q.numerator) / q.denominator


def _nonzero(v):
    if 0 in v:
        raise _Undefined
    return v


def _positive(v):
    if not v.a > 0:
        raise _Undefined
    return v


def _iv_function(expr, point, cache):
    """Interval enclosure of a transcendental function or constant (``mpmath.iv``)."""
    from mpmath import iv

    if expr is sp.pi:
        return iv.pi
    if expr is sp.E:
        return iv.e
    if not isinstance(expr, sp.Function) or len(expr.args) != 1:
        raise _Unsupported(f"no interval enclosure of {type(expr).__name__}")
    x = _evaluate(expr.args[0], point, False, cache)
    name = expr.func.__name__
    if name in ("exp", "sin", "cos", "tan"):
        return getattr(iv, name)(x)
    if name == "log":
        return iv.log(_positive(x))
    if name in ("sinh", "cosh"):
        ex, emx = iv.exp(x), iv.exp(-x)
        return (ex - emx) / 2 if name == "sinh" else (ex + emx) / 2
    if name == "tanh":  # 1 − 2/(e^{2x} + 1): no cancellation for large |x|
        return 1 - 2 / (iv.exp(2 * x) + 1)
    raise _Unsupported(f"no interval enclosure of {name}")


def _is_exactly_evaluable(expr):
    """True when :func:`_evaluate` can evaluate ``expr`` in rationals (no error bound needed)."""
    for node in sp.preorder_traversal(expr):
        if node.is_Symbol or node.is_Rational or node.is_Add or node.is_Mul:
            continue
        if node.is_Pow and node.exp.is_Integer:
            continue
        if isinstance(node, (sp.Abs, sp.Min, sp.Max, sp.sign, sp.Heaviside)):
            continue
        return False
    return True


def _mp_evaluator(exprs, state):
    return sp.lambdify(list(state), exprs, modules="mpmath")


def proven_nonzero(exprs, state, seed=0, n_points=3):
    """True when some expression is *proven* nonzero at a random rational point: evaluated
    exactly in rationals, or an ``mpmath.iv`` enclosure that excludes 0.  False says nothing."""
    if not exprs:
        return False
    exprs = [exact(e) for e in exprs]
    exact_mode = all(_is_exactly_evaluable(e) for e in exprs)
    for pt in _random_points(state, n_points, seed):
        point = dict(zip(state, pt))
        cache = {}
        for e in exprs:
            try:
                with _iv_digits():
                    v = _evaluate(e, point, exact_mode, cache)
            except (_Undefined, _Unsupported, ZeroDivisionError, ValueError):
                continue
            if (v != 0) if exact_mode else (0 not in v):
                return True
    return False


@dataclass
class NullSpace:
    """Exact null space of a family of column functions.

    Attributes
    ----------
    basis : list of sympy.Matrix (n, 1)
        Combinations c with ``Σ_k c_k col_k(x) ≡ 0``; proven identities unless listed in
        ``numerical``.
    numerical : list of int
        Indices into ``basis`` of dependencies seen at 30 digits but not proven symbolically.
    certificate : str
        How the independence of the remaining columns (and every dependency) was established:
        ``"exact"`` — proven in exact arithmetic (distinct monomials over a common denominator,
        or the exact rank of the functions evaluated in rationals at rational points);
        ``"interval"`` — proven with interval arithmetic (an ``mpmath.iv`` enclosure of the
        functions at rational points has a minor whose determinant excludes 0);
        ``"numerical"`` — not proven: a dependency could not be proven symbolically, or the
        independence was seen only in a 30-digit evaluation.
    """

    basis: list
    numerical: list = field(default_factory=list)
    certificate: str = "exact"

    @property
    def dim(self):
        return len(self.basis)

    @property
    def proven(self):
        return self.certificate != "numerical"


class _Evaluator:
    """The (L, n) matrix of column functions at random rational points, with a rigorous rank.

    ``method``: ``"exact"`` when every function is evaluated exactly in rationals (rational
    functions, Abs, Min, Max, sign, Heaviside), ``"interval"`` when they are enclosed by
    ``mpmath.iv`` intervals at ``EVAL_DIGITS`` digits, ``"numerical"`` when some function has no
    enclosure here (a 30-digit ``mpmath`` evaluation; no rank is proven).  :meth:`rank` returns a
    *proven* lower bound on the rank of the functions (the rank of the evaluated matrix: exact,
    or the size of a minor whose interval determinant excludes 0), the numerical rank and the
    numerical null vectors.
    """

    def __init__(self, exprs, state, seed):
        self.n = len(exprs[0]) if exprs else 0
        self.L = len(exprs)
        self.exprs = exprs
        self.state = state
        self.seed = seed
        self.rows = []
        self.points = []
        self.tries = 0
        flat = [e for row in exprs for e in row]
        self.method = "exact" if all(_is_exactly_evaluable(e) for e in flat) else "interval"

    def _eval(self, pt):
        if self.method == "numerical":
            import mpmath

            with mpmath.workdps(EVAL_DIGITS):
                vals = self._f(*[mpmath.mpf(p.numerator) / p.denominator for p in pt])
                block = [
                    [mpmath.mpmathify(vals[j][k]) for k in range(self.n)] for j in range(self.L)
                ]
                if any(isinstance(v, mpmath.mpc) and v.imag != 0 for r in block for v in r):
                    raise _Undefined
                if any(not mpmath.isfinite(v) for r in block for v in r):
                    raise _Undefined
                return [[float(mpmath.re(v)) for v in r] for r in block]

        point = dict(zip(self.state, pt))
        cache = {}
        with _iv_digits():
            return [
                [_evaluate(e, point, self.method == "exact", cache) for e in row]
                for row in self.exprs
            ]

    def _numerical(self):
        """Switch to a 30-digit evaluation (no certificate) and redo the points so far."""
        self.method = "numerical"
        self._f = _mp_evaluator(self.exprs, self.state)
        pts, self.rows, self.points = self.points, [], []
        for pt in pts:
            self._add(pt)

    def _add(self, pt):
        try:
            block = self._eval(pt)
        except (_Undefined, ZeroDivisionError, ValueError, TypeError, OverflowError):
            return False  # a pole, a branch cut, a complex value: another point
        self.rows.extend(block)
        self.points.append(pt)
        return True

    def add_points(self, k):
        got, limit = 0, self.tries + 4 * k + 4
        while got < k and self.tries < limit:
            pt = _random_points(self.state, 1, self.seed + 7919 * self.tries)[0]
            self.tries += 1
            try:
                got += self._add(pt)
            except _Unsupported:
                self._numerical()
                got += self._add(pt)
        return got

    def _floats(self):
        if self.method == "exact":
            return np.array([[float(v) for v in r] for r in self.rows])
        if self.method == "interval":
            return np.array([[float(v.mid) for v in r] for r in self.rows])
        return np.array(self.rows, dtype=float)

    def rank(self):
        """(proven rank lower bound, numerical rank, numerical null vectors (list of n-lists))."""
        if not self.rows:
            return 0, 0, []
        if self.method == "exact":
            from sympy.polys.domains import QQ
            from sympy.polys.matrices import DomainMatrix

            dM = DomainMatrix(
                [[QQ(v.numerator, v.denominator) for v in r] for r in self.rows],
                (len(self.rows), self.n),
                QQ,
            )
            N = dM.nullspace().to_Matrix()
            null = [[float(v) for v in N.row(i)] for i in range(N.rows)]
            r = self.n - len(null)
            return r, r, null
        E = self._floats()
        scale = float(np.linalg.norm(E))
        if scale == 0.0 or not np.isfinite(scale):
            return 0, 0, [list(row) for row in np.eye(self.n)]
        _, S, Vt = np.linalg.svd(E, full_matrices=True)
        r_num = int(np.sum(S > 1e-12 * scale))
        null = [list(Vt[i]) for i in range(r_num, self.n)]
        r_cert = self._certified_rank(E, r_num) if self.method == "interval" else 0
        return r_cert, r_num, null

    def _certified_rank(self, E, r_num):
        """Largest k ≤ r_num with a k×k minor (rows and columns chosen by pivoted QR of the
        midpoints) whose interval determinant excludes 0: the exact matrix — every entry lies in
        its interval — has that minor nonzero, so its rank, and the functions' rank, is ≥ k."""
        import scipy.linalg

        _, _, cols = scipy.linalg.qr(E, pivoting=True, mode="economic")
        for k in range(r_num, 0, -1):
            c = cols[:k]
            _, _, rows = scipy.linalg.qr(E[:, c].T, pivoting=True, mode="economic")
            sub = [[self.rows[i][j] for j in c] for i in rows[:k]]
            with _iv_digits():
                if _det_excludes_zero(sub):
                    return k
        return 0


def _det_excludes_zero(M):
    """Interval Gaussian elimination on the k×k interval matrix M (pivots by midpoint
    magnitude): True when every pivot interval excludes 0, i.e. every matrix inside M is
    nonsingular."""
    A = [list(r) for r in M]
    k = len(A)
    for j in range(k):
        p = max(range(j, k), key=lambda i: abs(float(A[i][j].mid)))
        if 0 in A[p][j]:
            return False
        A[j], A[p] = A[p], A[j]
        for i in range(j + 1, k):
            f = A[i][j] / A[j][j]
            A[i] = [A[i][l] - f * A[j][l] if l > j else A[i][l] for l in range(k)]
    return True


def _coefficient_nullspace(exprs, state):
    """Null space of the coefficient matrix over the distinct x-dependent terms.

    Returns ``(basis, all_monomial, exact)``: ``exact`` when the null space was computed in an
    exact domain (:func:`_exact_nullspace`), so that each vector is a proven identity.
    """
    L, n = len(exprs), len(exprs[0])
    rows, all_mono = {}, True
    for j in range(L):
        terms, mono = _common_denominator_terms(exprs[j], state)
        all_mono &= mono
        for k, tl in terms.items():
            for c, base in tl:
                row = rows.setdefault((j, base), {})
                row[k] = row.get(k, 0) + c
    keys = [key for key, row in rows.items() if any(v != 0 for v in row.values())]
    C = sp.Matrix(len(keys), n, lambda i, k: rows[keys[i]].get(k, 0)) if keys else sp.zeros(0, n)
    basis, exact_domain = _exact_nullspace(C, n)
    return basis, all_mono, exact_domain


def _identity(vec, exprs, state):
    """True when ``Σ_k vec_k exprs[j][k] ≡ 0`` for every row j is proven (:func:`is_zero`)."""
    n = len(vec)
    return all(is_zero(sum(vec[k] * row[k] for k in range(n)), state) for row in exprs)


def function_null_space(columns, state, seed=0) -> NullSpace:
    """Combinations c with ``Σ_k c_k columns[k](x) ≡ 0`` as functions of x, exactly.

    Strategy: a proven lower bound on the rank from the functions evaluated at random rational
    points (:class:`_Evaluator`: exact rationals for rational functions, interval arithmetic
    otherwise) settles full rank at once.  Otherwise every row is expanded over a common
    denominator and the exact null space of the coefficient matrix is computed: each of its
    vectors is a proven identity, and when all terms are monomials they are the whole null space.
    If the proven rank meets the coefficient bound, the answer is proven.  If not (distinct
    non-polynomial terms can be dependent, ``sin² + cos² = 1``), the numerical null space is
    rationalised and each candidate proven with ``simplify``; unproven candidates are kept and
    flagged as numerical.  ``certificate`` says how far the result is proven (:class:`NullSpace`).

    Parameters
    ----------
    columns : sequence of n sequences of L SymPy expressions
        ``columns[k][j]`` is component j of the k-th function.
    state : sequence of sympy.Symbol
    seed : int
        Seeds the evaluation points.

    Returns
    -------
    NullSpace
    """
    n = len(columns)
    if n == 0:
        return NullSpace([])
    L = len(columns[0])
    state = tuple(state)
    exprs = [[exact(columns[k][j]) for k in range(n)] for j in range(L)]
    exprs = [row for row in exprs if any(e != 0 for e in row)]
    if not exprs:
        return NullSpace([sp.Matrix(sp.eye(n)[:, k]) for k in range(n)])
    ev = _Evaluator(exprs, state, seed)
    ev.add_points(max(2, -(-2 * n // len(exprs)) + 1))
    r_cert, r_num, null = ev.rank()
    if r_cert >= n:
        return NullSpace([], [], ev.method)
    basis, all_mono, exact_domain = _coefficient_nullspace(exprs, state)
    numerical = []
    if not exact_domain:  # constants outside an exact domain: prove each vector
        numerical = [i for i, vec in enumerate(basis) if not _identity(vec, exprs, state)]
    if all_mono and exact_domain:
        return NullSpace(basis, [], "exact")
    if r_cert >= n - len(basis):
        return NullSpace(basis, numerical, "numerical" if numerical else ev.method)
    ev.add_points(n + 2)
    r_cert, r_num, null = ev.rank()
    if r_cert >= n - len(basis):
        return NullSpace(basis, numerical, "numerical" if numerical else ev.method)
    # extra dependencies among non-polynomial terms (or an unproven rank): rationalise, prove
    found = list(basis)
    for vec in _rref_rows(np.array(null)):
        if exact_rank(found, n) >= n - r_num:
            break
        exact_vec = sp.Matrix([_rationalise(v) for v in vec])
        if exact_rank(found + [exact_vec], n) == exact_rank(found, n):
            continue
        if _identity(exact_vec, exprs, state):
            found.append(exact_vec)
        else:
            found.append(sp.Matrix([sp.Float(v, 15) for v in vec]))
            numerical.append(len(found) - 1)
    # proven: every dependency is an identity and the rest is independent by a proven bound
    proven = not numerical and r_cert >= n - len(found)
    return NullSpace(found, numerical, ev.method if proven else "numerical")


def _rationalise(v, max_den=10**8):
    """The simplest rational within float precision of ``v`` (a candidate, proven afterwards)."""
    from fractions import Fraction

    f = Fraction(float(v)).limit_denominator(max_den)
    return sp.Rational(f.numerator, f.denominator)


def _rref_rows(N):
    """Reduced row echelon basis (numerical) of the row space of N (k, n)."""
    N = np.array(N, dtype=float)
    if N.size == 0:
        return []
    R = N.copy()
    k, n = R.shape
    row = 0
    for col in range(n):
        if row >= k:
            break
        piv = row + int(np.argmax(np.abs(R[row:, col])))
        if abs(R[piv, col]) < 1e-9:
            continue
        R[[row, piv]] = R[[piv, row]]
        R[row] /= R[row, col]
        for i in range(k):
            if i != row:
                R[i] -= R[i, col] * R[row]
        row += 1
    R[np.abs(R) < 1e-12] = 0.0
    return [R[i] for i in range(row)]


def orthonormal(vectors, n):
    if not vectors:
        return np.zeros((n, 0))
    M = np.array([[float(v) for v in vec] for vec in vectors]).T
    Q, R = np.linalg.qr(M)
    keep = np.abs(np.diag(R)) > 1e-12 * max(1.0, np.abs(R).max())
    return Q[:, keep]
