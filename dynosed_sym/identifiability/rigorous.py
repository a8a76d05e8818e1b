"""Rigorous evaluation of functions of the state at rational points: exactly in rationals
(rational functions, Abs, Min, Max, sign, Heaviside) or as ``mpmath.iv`` intervals that contain
the exact value (transcendental functions), and the proven rank lower bound built on it
(:class:`Evaluator`) — the evaluation certificates of :mod:`.exact`.
"""

from __future__ import annotations

import contextlib
import functools
from fractions import Fraction

import numpy as np
import sympy as sp

__all__ = [
    "Undefined",
    "Unsupported",
    "Evaluator",
    "EVAL_DIGITS",
    "random_points",
    "evaluate",
    "iv_digits",
    "exactly_evaluable",
]

EVAL_DIGITS = 30  # working digits of the interval (and numerical) evaluations


def random_points(state, k, seed):
    rng = np.random.default_rng(seed)
    # rationals in (0.3, 1.7): away from the origin and from negative arguments of log/sqrt
    num = rng.integers(300, 1700, size=(k, len(state)))
    return [[Fraction(int(a), 1000) for a in row] for row in num]


class Unsupported(Exception):
    """An expression the rigorous evaluator cannot bound (an unknown function, complex values)."""


class Undefined(Exception):
    """The expression is not defined (or not bounded) at this point: try another point."""


def _step(v, exact):
    """(sign(v) + 1)/2 away from 0 (Heaviside); sign is 2·step − 1."""
    if exact:
        if v == 0:
            raise Undefined
        return Fraction(int(v > 0))
    if 0 in v:
        raise Undefined
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


def evaluate(expr, point, exact, cache):
    """``expr`` at ``point`` ({symbol: Fraction}): a Fraction (``exact``; rational operations,
    Abs, Min, Max, sign and Heaviside only) or an ``mpmath.iv`` interval that contains the
    exact value (``EVAL_DIGITS`` digits, outward rounding)."""
    if expr in cache:
        return cache[expr]
    if expr.is_Symbol:
        if expr not in point:
            raise Unsupported(f"free symbol {expr}")
        q = point[expr]
        val = q if exact else _iv_rational(q)
    elif expr.is_Rational:
        q = Fraction(int(expr.p), int(expr.q))
        val = q if exact else _iv_rational(q)
    elif expr.is_Add or expr.is_Mul:
        vals = [evaluate(a, point, exact, cache) for a in expr.args]
        val = vals[0]
        for v in vals[1:]:
            val = val + v if expr.is_Add else val * v
    elif expr.is_Pow:
        base = evaluate(expr.base, point, exact, cache)
        e = expr.exp
        if e.is_Integer:
            if exact or int(e) >= 0:
                try:
                    val = base ** int(e)
                except ZeroDivisionError:
                    raise Undefined from None
            else:
                val = 1 / _nonzero(base) ** (-int(e))
        elif exact:
            raise Unsupported("a non-integer power")
        else:
            from mpmath import iv

            if e == sp.S.Half:
                val = iv.sqrt(_positive(base))
            else:
                val = iv.exp(evaluate(e, point, exact, cache) * iv.log(_positive(base)))
    elif isinstance(expr, (sp.Abs, sp.Min, sp.Max, sp.sign, sp.Heaviside)):
        many = isinstance(expr, (sp.Min, sp.Max))
        args = [evaluate(a, point, exact, cache) for a in (expr.args if many else expr.args[:1])]
        if isinstance(expr, sp.Abs):
            val = abs(args[0])
        elif many:
            val = _minmax(args, exact, isinstance(expr, sp.Max))
        elif isinstance(expr, sp.sign):
            val = 2 * _step(args[0], exact) - 1
        else:
            val = _step(args[0], exact)
    elif exact:
        raise Unsupported(f"{expr.func.__name__} is not rational")
    else:
        val = _iv_function(expr, point, cache)
    if not exact and not _finite(val):
        raise Undefined
    cache[expr] = val
    return val


@contextlib.contextmanager
def iv_digits():
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
        raise Undefined
    return v


def _positive(v):
    if not v.a > 0:
        raise Undefined
    return v


def _iv_function(expr, point, cache):
    """Interval enclosure of a transcendental function or constant (``mpmath.iv``)."""
    from mpmath import iv

    if expr is sp.pi:
        return iv.pi
    if expr is sp.E:
        return iv.e
    if not isinstance(expr, sp.Function) or len(expr.args) != 1:
        raise Unsupported(f"no interval enclosure of {type(expr).__name__}")
    x = evaluate(expr.args[0], point, False, cache)
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
    raise Unsupported(f"no interval enclosure of {name}")


def exactly_evaluable(expr):
    """True when :func:`evaluate` can evaluate ``expr`` in rationals (no error bound needed)."""
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


class Evaluator:
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
        self.method = "exact" if all(exactly_evaluable(e) for e in flat) else "interval"

    def _eval(self, pt):
        if self.method == "numerical":
            import mpmath

            with mpmath.workdps(EVAL_DIGITS):
                vals = self._f(*[mpmath.mpf(p.numerator) / p.denominator for p in pt])
                block = [
                    [mpmath.mpmathify(vals[j][k]) for k in range(self.n)] for j in range(self.L)
                ]
                if any(isinstance(v, mpmath.mpc) and v.imag != 0 for r in block for v in r):
                    raise Undefined
                if any(not mpmath.isfinite(v) for r in block for v in r):
                    raise Undefined
                return [[float(mpmath.re(v)) for v in r] for r in block]

        point = dict(zip(self.state, pt))
        cache = {}
        with iv_digits():
            return [
                [evaluate(e, point, self.method == "exact", cache) for e in row]
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
        except (Undefined, ZeroDivisionError, ValueError, TypeError, OverflowError):
            return False  # a pole, a branch cut, a complex value: another point
        self.rows.extend(block)
        self.points.append(pt)
        return True

    def add_points(self, k):
        got, limit = 0, self.tries + 4 * k + 4
        while got < k and self.tries < limit:
            pt = random_points(self.state, 1, self.seed + 7919 * self.tries)[0]
            self.tries += 1
            try:
                got += self._add(pt)
            except Unsupported:
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
            with iv_digits():
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
