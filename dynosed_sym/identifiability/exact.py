"""Exact null spaces of families of functions of the state: which combinations vanish identically.

The certificates behind the structural check (:mod:`.structural`): coefficient matrices over the
distinct x-dependent terms with exact (rational or algebraic) entries, and evaluation ranks at
random rational points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

__all__ = [
    "NullSpace",
    "function_null_space",
    "rat",
    "exact",
    "exact_rank",
    "is_zero",
    "numeric_nonzero",
    "orthonormal",
    "EVAL_DIGITS",
]


EVAL_DIGITS = 30  # significant digits of the evaluation rank certificate


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
        except Exception:  # pragma: no cover - exotic generators
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


def _exact_nullspace(C, n):
    """Null space (list of n×1 exact Matrices) of the exact matrix C (rows × n)."""
    if C.rows == 0:
        return [sp.Matrix(sp.eye(n)[:, k]) for k in range(n)]
    try:
        from sympy.polys.matrices import DomainMatrix

        dM = DomainMatrix.from_Matrix(C)
        if dM.domain.is_Exact and not dM.domain.is_EX:
            N = dM.to_field().nullspace().to_Matrix()
            return [N[i, :].T for i in range(N.rows)]
    except Exception:  # pragma: no cover - fall back to SymPy's generic routine
        pass
    return [vec.applyfunc(sp.nsimplify) for vec in C.nullspace(simplify=True)]


def exact_rank(vectors, n):
    if not vectors:
        return 0
    M = sp.Matrix.hstack(*vectors)
    try:
        from sympy.polys.matrices import DomainMatrix

        dM = DomainMatrix.from_Matrix(M)
        if dM.domain.is_Exact and not dM.domain.is_EX:
            return int(dM.to_field().rank())
    except Exception:  # pragma: no cover
        pass
    return int(M.rank(simplify=True))


def is_zero(expr, state):
    """Exact test ``expr ≡ 0`` (common denominator + expansion, else ``simplify``)."""
    expr = exact(expr)
    if expr == 0:
        return True
    terms, mono = _common_denominator_terms([expr], state)
    if not terms.get(0):
        return True
    if mono:
        return False
    return sp.simplify(expr) == 0 or sp.simplify(sp.trigsimp(expr)) == 0


def _random_points(state, k, seed):
    rng = np.random.default_rng(seed)
    # rationals in (0.3, 1.7): away from the origin and from negative arguments of log/sqrt
    num = rng.integers(300, 1700, size=(k, len(state)))
    return [[sp.Rational(int(a), 1000) for a in row] for row in num]


def _mp_evaluator(exprs, state):
    return sp.lambdify(list(state), exprs, modules="mpmath")


def numeric_nonzero(exprs, state, seed=0, n_points=3):
    """True if some expression is certainly nonzero at a random point (30-digit evaluation)."""
    import mpmath

    if not exprs:
        return False
    f = _mp_evaluator(list(exprs), state)
    with mpmath.workdps(30):
        for pt in _random_points(state, n_points, seed):
            try:
                vals = f(*[mpmath.mpf(p.p) / p.q for p in pt])
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue
            for v in np.atleast_1d(vals):
                try:
                    if abs(mpmath.mpmathify(v)) > mpmath.mpf(10) ** -20:
                        return True
                except (TypeError, ValueError):
                    continue
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
        ``"exact"`` when every dependency is a proven identity and the independence of the rest is
        proven (distinct monomials, or a certified evaluation rank); ``"numerical"`` otherwise.
    """

    basis: list
    numerical: list = field(default_factory=list)
    certificate: str = "exact"

    @property
    def dim(self):
        return len(self.basis)


class _Evaluator:
    """Evaluates the (L, n) matrix of column functions at random rational points.

    ``rank()`` is a *certified lower bound* on the rank of the functions.  The matrix is evaluated
    with ``EVAL_DIGITS`` (30) and again with ``EVAL_DIGITS + 15`` significant digits; the
    difference bounds the rounding error ``‖ΔE‖`` of the 30-digit matrix (with a safety factor of
    10³), and by Weyl's inequality every singular value above that bound belongs to a nonzero
    singular value of the exact matrix — whose rank is a lower bound on the rank of the functions.
    """

    def __init__(self, exprs, state, seed):
        self.n = len(exprs[0]) if exprs else 0
        self.L = len(exprs)
        self.state = state
        self.seed = seed
        self.rows, self.rows_hi = [], []
        self.tries = 0
        self._f = _mp_evaluator(exprs, state) if exprs else None

    def _eval(self, pt, dps):
        import mpmath

        with mpmath.workdps(dps):
            vals = self._f(*[mpmath.mpf(p.p) / p.q for p in pt])
            block = [[mpmath.mpmathify(vals[j][k]) for k in range(self.n)] for j in range(self.L)]
            if any(isinstance(v, mpmath.mpc) and v.imag != 0 for r in block for v in r):
                raise ValueError("complex value")
            if any(not mpmath.isfinite(v) for r in block for v in r):
                raise ValueError("not finite")
            return [[mpmath.re(v) for v in r] for r in block]

    def add_points(self, k):
        got, limit = 0, self.tries + 4 * k + 4
        while got < k and self.tries < limit:
            pt = _random_points(self.state, 1, self.seed + 7919 * self.tries)[0]
            self.tries += 1
            try:
                lo = self._eval(pt, EVAL_DIGITS)
                hi = self._eval(pt, EVAL_DIGITS + 15)
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue
            self.rows.extend(lo)
            self.rows_hi.extend(hi)
            got += 1
        return got

    def rank(self):
        """(certified rank lower bound, numerical null vectors (list of n-lists)).

        The SVD runs in float64 on the 30-digit values rounded to doubles; its backward error
        and the rounding (both ≲ 1e-15‖E‖) are covered by the 1e-12‖E‖_F term of the tolerance,
        the evaluation error by 10³·‖E₃₀ − E₄₅‖_F.
        """
        import mpmath

        if not self.rows:
            return 0, []
        with mpmath.workdps(EVAL_DIGITS + 15):
            err2 = mpmath.fsum(
                (a - b) ** 2 for ra, rb in zip(self.rows, self.rows_hi) for a, b in zip(ra, rb)
            )
            err = float(mpmath.sqrt(err2))
        E = np.array([[float(v) for v in r] for r in self.rows])
        scale = float(np.linalg.norm(E))
        if scale == 0.0:
            return 0, [list(row) for row in np.eye(self.n)]
        _, S, Vt = np.linalg.svd(E, full_matrices=True)
        tol = max(1000.0 * err, 1e-12 * scale, 1e-300)
        rank = int(np.sum(S > tol))
        null = [list(Vt[i]) for i in range(rank, self.n)]
        return rank, null


def _coefficient_nullspace(exprs, state):
    """Null space of the coefficient matrix over the distinct x-dependent terms (exact)."""
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
    return _exact_nullspace(C, n), all_mono


def function_null_space(columns, state, seed=0) -> NullSpace:
    """Combinations c with ``Σ_k c_k columns[k](x) ≡ 0`` as functions of x, exactly.

    Strategy: a certified lower bound on the rank from a 30-digit evaluation at random rational
    points (:class:`_Evaluator`) settles full rank at once.  Otherwise every row is expanded over
    a common denominator and the exact null space of the coefficient matrix is computed: each of
    its vectors is a proven identity.  If the two bounds meet, the answer is exact.  If not
    (distinct non-polynomial terms can be dependent, ``sin² + cos² = 1``), the numerical null
    space is rationalised and each candidate proven with ``simplify``; unproven candidates are
    kept and flagged as numerical.

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
    r_num, _ = ev.rank()
    if r_num >= n:
        return NullSpace([], [], "exact")
    basis, all_mono = _coefficient_nullspace(exprs, state)
    if all_mono or r_num >= n - len(basis):
        return NullSpace(basis, [], "exact")
    ev.add_points(n + 2)
    r_num, null = ev.rank()
    if r_num >= n - len(basis):
        return NullSpace(basis, [], "exact")
    # extra dependencies among non-polynomial terms: rationalise and prove
    found, numerical = list(basis), []
    for vec in _rref_rows(np.array(null)):
        if exact_rank(found, n) >= n - r_num:
            break
        exact_vec = sp.Matrix([_rationalise(v) for v in vec])
        if exact_rank(found + [exact_vec], n) == exact_rank(found, n):
            continue
        combo = [sum(exact_vec[k] * row[k] for k in range(n)) for row in exprs]
        if all(is_zero(c, state) for c in combo):
            found.append(exact_vec)
        else:
            found.append(sp.Matrix([sp.Float(v, 15) for v in vec]))
            numerical.append(len(found) - 1)
    return NullSpace(found, numerical, "numerical" if numerical else "exact")


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
