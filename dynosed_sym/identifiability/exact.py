"""Exact null spaces of families of functions of the state: which combinations vanish identically.

The certificates behind the structural check (:mod:`.structural`): coefficient matrices over the
distinct x-dependent terms with exact (rational or algebraic) entries, and proven lower bounds on
the rank from the functions evaluated at random rational points — exactly in rationals for
rational functions, with interval arithmetic (``mpmath.iv``) otherwise.  What cannot be proven
either way is reported as numerical (:class:`NullSpace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .rigorous import (
    EVAL_DIGITS,
    Evaluator,
    Undefined,
    Unsupported,
    evaluate,
    exactly_evaluable,
    iv_digits,
    random_points,
)

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


def proven_nonzero(exprs, state, seed=0, n_points=3):
    """True when some expression is *proven* nonzero at a random rational point: evaluated
    exactly in rationals, or an ``mpmath.iv`` enclosure that excludes 0.  False says nothing."""
    if not exprs:
        return False
    exprs = [exact(e) for e in exprs]
    exact_mode = all(exactly_evaluable(e) for e in exprs)
    for pt in random_points(state, n_points, seed):
        point = dict(zip(state, pt))
        cache = {}
        for e in exprs:
            try:
                with iv_digits():
                    v = evaluate(e, point, exact_mode, cache)
            except (Undefined, Unsupported, ZeroDivisionError, ValueError):
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
    points (:class:`Evaluator`: exact rationals for rational functions, interval arithmetic
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
    ev = Evaluator(exprs, state, seed)
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
