"""Identifiability before data: an exact structural check and a design-time check by simulation.

What snapshots can see
----------------------
Both routes see a parameter direction c (drift change ``Y = U(x) c``) only through

    a(x)ᵀc = ∇·(p Y) / p = Yᵀ∇log p + ∇·Y,

the change of the stationary Fokker–Planck residual: the local route evaluates it at probe points,
the global route integrates it against every test function φ (``E_p[Yᵀ∇φ] = −∫ φ ∇·(pY)``).  In the
infinite-data limit both routes therefore identify exactly the directions c with ``∇·(p U c) ≢ 0``
on the support of p, and the rank of the population system equals the rank of the functions
``a_1 … a_n``.  A direction with ``∇·(p U c) ≡ 0`` changes the dynamics but not the stationary law
(a divergence-free probability current, ``pY``).

Structural check (:func:`structural_check`) — exact, no simulation
------------------------------------------------------------------
1. *Parameters absent from the drift*: zero columns of U.
2. *Linearly dependent columns of U* (two parameters on the same basis function, ``a x + b x``,
   ``a·x/(1+x) + b/(1+x) + c``): the combinations c with ``U(x) c ≡ 0``.  Each row of U is brought
   over a common denominator and expanded; the coefficients of the distinct x-dependent terms form
   a matrix with exact (rational or algebraic) entries, whose null space is computed in exact
   arithmetic: every combination found is a proven identity.  Independence of the remaining
   columns is proven either by the terms being distinct monomials (all rational-function drifts:
   the whole zoo) or by a certified evaluation: at random rational points with 30 significant
   digits, a singular value above 1e-15·σ_max cannot come from rounding errors (Weyl's
   inequality), so the evaluated — and hence the symbolic — rank is at least that large.  Distinct
   transcendental terms can be dependent (``sin²x + cos²x = 1``): such a rank drop seen in the
   evaluation is rationalised and proven with ``simplify``; a dependency that cannot be proven is
   reported as numerical, never silently.
3. *Directions no snapshot route can see, from the symbols alone*: a field ``Y = U c`` that commutes
   with the generator, ``[Y, 𝓛] = 0`` with ``𝓛 = f·∇ + D:∇²``, i.e.

       L_Y D = Y·∇D − (∇Y)D − D(∇Y)ᵀ ≡ 0          and
       (Y·∇)f − (f·∇)Y − D:∇²Y ≡ 0,

   maps stationary laws to stationary laws; when the stationary law is unique it is invariant
   under the flow of Y, so ``∇·(pY) = 0``: the combination c is invisible to both routes.  Both
   conditions are linear in c and solved exactly like step 2.  Checked for every θ (the drift
   replaced by v and by each column of U) and, when nominal values are known, at the nominal θ.
   Example: the rotation term ω(−y, x) of a Stuart–Landau oscillator.
4. *With nominal values, when the stationary density has a closed form*: a drift that is linear in
   x with constant D (Gaussian law, covariance from the Lyapunov equation, solved exactly), or a
   gradient drift ``D⁻¹f = ∇ψ`` with constant D (possibly after removing the invisible directions
   of step 3, which do not change p).  Then the score s is exact and the functions ``a_k = U_kᵀs +
   ∇·U_k`` are analysed as in step 2: the rank is the exact population rank of both routes.
   Example: the 2-D OU with all four entries of M free, rank 3 with free combination ``ΩΣ⁻¹``
   (``M12 − M21`` at the bundled nominal).

What it cannot detect: directions annihilated by a stationary density without a closed form that
are not symmetries (e.g. an OU-like current inside a nonlinear model), near-dependencies (two
columns that differ only where data are rare) and weak directions — the design-time check sees
these by simulation; blind spots of the local route caused by where the probes are (a column
vanishing on every probe region), which depend on probe placement and are measured by the
design-time check with ``route="local"``.  Floating-point constants of the model are read as the
rational numbers they display (``2.6 → 13/5``).

Design-time check (:func:`check_identifiability`)
-------------------------------------------------
Simulates the model at the nominal parameters with the compiled simulator, assembles A with
per-block partial sums, and reports rank, free combinations, freeness, predicted standard errors
as a function of N and the N needed for a requested relative error per parameter.  Directions are
followed across nested subsets of the data blocks: a structurally unconstrained direction has
``‖A_N v‖`` shrinking like N^(-1/2) (pure noise), a real one tends to a constant.
"""

from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .errors import DataError, DynosedError, ModelError

__all__ = ["StructuralReport", "IdentifiabilityCheck", "structural_check", "check_identifiability",
           "function_null_space", "NullSpace"]

EVAL_DIGITS = 30          # significant digits of the evaluation rank certificate
SHRINK_EXPONENT = -0.25   # log-log slope below which an unresolved direction is "unconstrained"
LYAPUNOV_MAX_DIM = 12     # exact Lyapunov solve only up to this state dimension


# ================================================================================================
# exact helpers
# ================================================================================================

def _rat(value):
    """A float as the rational number it displays (``2.6 → 13/5``, ``8/3 → 8/3``)."""
    v = float(value)
    if v == 0.0:
        return sp.Integer(0)
    r = sp.Rational(v).limit_denominator(10**9)
    if abs(float(r) - v) <= 1e-15 * abs(v):
        return r
    return sp.Rational(repr(v))


def _exact(expr):
    """Replace Floats in ``expr`` by rationals (see :func:`_rat`)."""
    expr = sp.sympify(expr)
    floats = expr.atoms(sp.Float)
    return expr.xreplace({f: _rat(f) for f in floats}) if floats else expr


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


def _exact_rank(vectors, n):
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


def _is_zero(expr, state):
    """Exact test ``expr ≡ 0`` (common denominator + expansion, else ``simplify``)."""
    expr = _exact(expr)
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


def _numeric_nonzero(exprs, state, seed=0, n_points=3):
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
            err2 = mpmath.fsum((a - b) ** 2 for ra, rb in zip(self.rows, self.rows_hi)
                               for a, b in zip(ra, rb))
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
    exprs = [[_exact(columns[k][j]) for k in range(n)] for j in range(L)]
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
        if _exact_rank(found, n) >= n - r_num:
            break
        exact_vec = sp.Matrix([_rationalise(v) for v in vec])
        if _exact_rank(found + [exact_vec], n) == _exact_rank(found, n):
            continue
        combo = [sum(exact_vec[k] * row[k] for k in range(n)) for row in exprs]
        if all(_is_zero(c, state) for c in combo):
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


# ================================================================================================
# naming combinations
# ================================================================================================

def _fmt_coef(c):
    if c.is_Rational:
        return str(abs(c))
    return sp.sstr(abs(c)) if not c.is_Float else f"{abs(float(c)):.4g}"


def exact_combination(vec, names):
    """``M12 − M21``, ``a − 2·b``: an exact combination, largest coefficient scaled to 1."""
    vals = [sp.nsimplify(v) if not isinstance(v, sp.Float) else v for v in vec]
    mags = [abs(float(v)) for v in vals]
    k0 = int(np.argmax(mags))
    lead = vals[k0]
    vals = [sp.nsimplify(v / lead) if not isinstance(v, sp.Float) else v / lead for v in vals]
    terms = []
    for v, name in zip(vals, names):
        if v == 0:
            continue
        neg = float(v) < 0
        body = name if abs(float(v)) == 1 and (v.is_Rational or abs(float(v) - round(float(v))) == 0) \
            else f"{_fmt_coef(v)}·{name}"
        terms.append(("− " if neg else "+ ") + body)
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def _orthonormal(vectors, n):
    if not vectors:
        return np.zeros((n, 0))
    M = np.array([[float(v) for v in vec] for vec in vectors]).T
    Q, R = np.linalg.qr(M)
    keep = np.abs(np.diag(R)) > 1e-12 * max(1.0, np.abs(R).max())
    return Q[:, keep]


# ================================================================================================
# symmetries: fields Y = U c commuting with the generator
# ================================================================================================

def _grad(expr, state):
    return [sp.diff(expr, s) for s in state]


def _lie_D(Y, D, state):
    """Components (i ≤ j) of ``L_Y D = Y·∇D − (∇Y)D − D(∇Y)ᵀ``."""
    d = len(state)
    JY = [[sp.diff(Y[i], state[l]) if Y[i] != 0 else 0 for l in range(d)]
          for i in range(d)]  # (∇Y)_il = ∂_l Y_i
    out = []
    for i in range(d):
        for j in range(i, d):
            e = sum(Y[l] * sp.diff(D[i, j], state[l]) for l in range(d)) if D[i, j].free_symbols else 0
            e -= sum(JY[i][l] * D[l, j] for l in range(d) if D[l, j] != 0)
            e -= sum(D[i, l] * JY[j][l] for l in range(d) if D[i, l] != 0)
            out.append(e)
    return out


def _bracket(Y, f, state):
    """Components of ``(Y·∇)f − (f·∇)Y``."""
    d = len(state)
    return [sum(Y[l] * sp.diff(f[q], state[l]) - f[l] * sp.diff(Y[q], state[l]) for l in range(d))
            for q in range(d)]


def _D_hess(Y, D, state):
    """Components of ``D:∇²Y`` (Σ_il D_il ∂_i∂_l Y_q)."""
    d = len(state)
    return [sum(D[i, l] * sp.diff(Y[q], state[i], state[l]) for i in range(d) for l in range(d)
                if D[i, l] != 0) for q in range(d)]


def _symmetry_space(U, D, state, drifts, seed=0):
    """Combinations c such that ``Y = U c`` commutes with the generator.

    ``drifts`` is a list of (vector, with_D_term): the first-order condition must hold for each
    (at fixed θ: [(f_θ, True)]; for every θ: [(v, True), (U_1, False), …]).
    Returns a list of exact n×1 vectors (including the null space of U itself).
    """
    d, n = U.shape
    cols = [[U[j, k] for j in range(d)] for k in range(n)]
    # (i) the diffusion must be invariant: cheap, and it removes almost everything
    ns1 = function_null_space([_lie_D(col, D, state) for col in cols], state, seed)
    if not ns1.basis:
        return []
    Ys = [[sum(vec[k] * cols[k][j] for k in range(n)) for j in range(d)] for vec in ns1.basis]
    comps = []
    for Y in Ys:
        row = []
        hess = _D_hess(Y, D, state)
        for f, with_D in drifts:
            br = _bracket(Y, f, state)
            row.extend([br[q] - hess[q] for q in range(d)] if with_D else br)
        comps.append(row)
    ns2 = function_null_space(comps, state, seed)
    B1 = sp.Matrix.hstack(*ns1.basis)
    return [B1 * z for z in ns2.basis]


# ================================================================================================
# exact stationary score at the nominal parameters
# ================================================================================================

def _hurwitz(M):
    ev = np.linalg.eigvals(np.array(M.evalf(), dtype=float))
    return bool(np.all(ev.real < -1e-12 * max(1.0, np.abs(ev).max())))


def _gaussian_score(f, D, state):
    """Exact score of the Gaussian stationary law of a linear drift f = M x + c (constant D)."""
    d = len(state)
    if d > LYAPUNOV_MAX_DIM:
        return None
    for e in f:
        if not e.is_polynomial(*state) or sp.Poly(e, *state).total_degree() > 1:
            return None
    zero = {s: 0 for s in state}
    M = sp.Matrix(d, d, lambda i, j: sp.diff(f[i], state[j]))
    c0 = f.xreplace(zero)
    if not _hurwitz(M):
        return None
    syms = {}
    S = sp.zeros(d, d)
    for i in range(d):
        for j in range(i, d):
            syms[(i, j)] = sp.Symbol(f"_S{i}_{j}")
            S[i, j] = S[j, i] = syms[(i, j)]
    eqs = M * S + S * M.T + 2 * D
    unknowns = list(syms.values())
    sol = sp.solve([eqs[i, j] for i in range(d) for j in range(i, d)], unknowns, dict=True)
    if not sol:
        return None
    S = S.xreplace(sol[0])
    mu = -M.inv() * c0
    P = S.inv()
    x = sp.Matrix(state)
    s = -P * (x - mu)
    shown = sp.sstr(S.tolist())
    if len(shown) > 100:
        shown = "≈ " + np.array2string(np.array(S.evalf(), dtype=float), precision=3, separator=", ",
                                       max_line_width=10**6).replace("\n", "")
        if len(shown) > 100:
            shown = f"({d}×{d}, exact rationals)"
    desc = f"Gaussian N(μ, Σ), Σ from the Lyapunov equation MΣ + ΣMᵀ + 2D = 0 (exact): Σ = {shown}"
    return [sp.expand(e) for e in s], desc


def _curl(g, state):
    d = len(state)
    return [sp.diff(g[j], state[i]) - sp.diff(g[i], state[j]) for i in range(d) for j in range(i + 1, d)]


def _gradient_score(U, v, D, theta0, invisible, state, seed=0):
    """Score of a gradient drift D⁻¹f = ∇ψ (constant D), allowing a shift along invisible directions.

    Returns (s, description, shifted θ) or None.
    """
    d, n = U.shape
    if D.det() == 0:
        return None
    Dinv = D.inv()
    th = sp.Matrix(theta0)
    g0 = Dinv * (U * th + v)
    curl0 = _curl(g0, state)
    if not invisible:
        if _numeric_nonzero(curl0, state, seed) or not all(_is_zero(c, state) for c in curl0):
            return None
        return [sp.expand(e) for e in g0], "gradient drift: p ∝ exp(ψ) with ∇ψ = D⁻¹f (exact)", th
    # find t with curl(D⁻¹(f(θ0 + N t))) ≡ 0
    cols = [_curl(Dinv * (U * vec), state) for vec in invisible] + [curl0]
    ns = function_null_space(cols, state, seed)
    for vec in ns.basis:
        if vec[-1] != 0:
            t = [vec[q] / vec[-1] for q in range(len(invisible))]
            th1 = th + sum((t[q] * invisible[q] for q in range(len(invisible))), sp.zeros(n, 1))
            g = Dinv * (U * th1 + v)
            return ([sp.expand(e) for e in g],
                    "gradient drift after removing invisible terms (they leave p unchanged): "
                    "p ∝ exp(ψ) with ∇ψ = D⁻¹f (exact)", th1)
    return None


# ================================================================================================
# structural report
# ================================================================================================

@dataclass
class StructuralReport:
    """Result of :func:`structural_check`.

    Attributes
    ----------
    model_name : str
    param_names : list of str
    n_params : int
    route : str
    rank : int
        ``n_params`` minus the number of unidentifiable directions found.  An upper bound on the
        rank any snapshot data can give, exact (the population rank of both routes) when
        ``rank_is_exact``.
    rank_is_exact : bool
        True when the stationary density at the nominal θ has a closed form (``density``).
    identifiable : bool or None
        False when a direction was found; True when ``rank_is_exact`` and the rank is full;
        None ("no obstruction in the symbols") otherwise — the design-time check decides.
    absent : list of str
        Parameters that do not occur in the drift.
    combinations : list of dict
        One per unidentifiable direction (beyond absent parameters): ``combination`` (exact,
        e.g. ``"M12 − M21"``), ``display`` (unit vector, as in
        :class:`~dynosed_sym.report.IdentifiabilityReport`), ``kind`` (``"dependent"``,
        ``"symmetry"``, ``"symmetry at nominal"``, ``"density"``) and ``reason``.
    null_vectors : (n, k) array
        Orthonormal basis of all directions found (absent parameters included).
    free_params : list of str
        Parameters with a nonzero entry in some exact null direction.
    density : str or None
        The closed-form stationary density used, if any.
    certificate : str
        How the rank was established (see :class:`NullSpace`).
    notes : list of str
    elapsed : float
        Seconds.
    """

    model_name: str
    param_names: list
    n_params: int
    route: str
    rank: int
    rank_is_exact: bool
    identifiable: bool | None
    absent: list
    combinations: list
    null_vectors: np.ndarray
    free_params: list
    density: str | None
    nominal: np.ndarray | None
    certificate: str
    notes: list = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def null_space(self):
        """Unidentifiable directions as display strings (absent parameters included)."""
        return list(self.absent) + [c["display"] for c in self.combinations]

    def __str__(self):
        exact = "exact" if self.rank_is_exact else "upper bound"
        verdict = {True: "identifiable", False: "NOT identifiable",
                   None: "no structural obstruction found"}[self.identifiable]
        lines = [f"structural check ({self.route} route, {self.elapsed * 1e3:.0f} ms, no simulation): "
                 f"rank {self.rank} of {self.n_params} ({exact}) — {verdict}"]
        for p in self.absent:
            lines.append(f"  parameter {p} does not occur in the drift")
        for c in self.combinations:
            lines.append(f"  free combination: {c['combination']}   [{c['kind']}: {c['reason']}]")
        if self.free_params:
            lines.append(f"  not identifiable: {', '.join(self.free_params)}")
        if self.density:
            lines.append(f"  stationary density at the nominal θ: {self.density}")
        lines.extend("  " + n for n in self.notes)
        return "\n".join(lines)


def _nominal_vector(model, nominal):
    if nominal is not None:
        return model.theta_vector(nominal, "nominal")
    return None if model.nominal is None else np.asarray(model.nominal, dtype=float)


def structural_check(model, nominal=None, route="global", *, probes=None, use_nominal=True,
                     seed=0) -> StructuralReport:
    """Exact identifiability analysis from the symbols alone (module docstring, steps 1–4).

    Parameters
    ----------
    model : SDEModel
    nominal : array or dict, optional
        Nominal parameters (default ``model.nominal``); enables the checks at the nominal θ.
    route : {"global", "local"}
        Both routes see the same functions a_k; for ``"local"`` a note is added when fewer
        probe points than parameters are given.
    probes : (M, d) array, optional
        Probe points of the local route (only their number is used here).
    use_nominal : bool
        Set False for the θ-independent part only.
    seed : int
        Evaluation points of numerical certificates (non-polynomial models only).

    Returns
    -------
    StructuralReport
    """
    t0 = time.perf_counter()
    if route not in ("global", "local"):
        raise DynosedError(f"route must be 'global' or 'local', got {route!r}")
    state = tuple(model.state)
    names = model.param_names
    d, n = model.d, model.n
    theta0 = _nominal_vector(model, nominal) if use_nominal else None
    theta0_exact = None if theta0 is None else [_rat(t) for t in theta0]
    notes = []
    der = model.derivation
    D = model.D.applyfunc(_exact)
    if der.is_affine:
        U = der.U.applyfunc(_exact)
        v = der.v.applyfunc(_exact)
        linearised = False
    else:
        if theta0 is None:
            p, j, term = der.offending
            raise DynosedError(f"the drift is not affine in {p} (term {sp.sstr(term)}); the structural "
                               "check of a non-affine model needs nominal values to linearise at")
        sub = dict(zip(model.params, theta0_exact))
        f = model.drift.applyfunc(_exact)
        U = sp.Matrix(d, n, lambda j, k: sp.diff(f[j], model.params[k]).xreplace(sub))
        v = f.xreplace(sub) - U * sp.Matrix(theta0_exact)
        linearised = True
        notes.append("the drift is not affine in θ: this is local identifiability of the "
                     "linearisation U = ∂f/∂θ at the nominal θ")
    cols = [[U[j, k] for j in range(d)] for k in range(n)]

    absent = [names[k] for k in range(n) if all(e == 0 for e in cols[k])]
    if linearised:
        absent = [nm for nm in absent if not any(model.params[names.index(nm)] in e.free_symbols
                                                  for e in model.drift)]
    found = [sp.Matrix(sp.eye(n)[:, names.index(nm)]) for nm in absent]
    combos = []
    certificates = []

    def _add(vectors, kind, reason):
        for vec in vectors:
            if _exact_rank(found + [vec], n) > _exact_rank(found, n):
                found.append(vec)
                combos.append({"vector": vec, "kind": kind, "reason": reason})

    # (2) linear dependence of the columns of U
    dep = function_null_space(cols, state, seed)
    certificates.append(dep.certificate)
    _add(dep.basis, "dependent", "columns of U linearly dependent: U(x)·c ≡ 0, the drift does not change")
    if dep.numerical:
        notes.append(f"{len(dep.numerical)} dependency(ies) found by 30-digit evaluation could not be "
                     "proven symbolically")

    # (3) symmetries for every θ, then at the nominal θ
    sym_all = []
    if not linearised:
        drifts = [(v, True)] + [(sp.Matrix(cols[k]), False) for k in range(n)]
        sym_all = _symmetry_space(U, D, state, drifts, seed)
        _add(sym_all, "symmetry", "U·c commutes with the generator for every θ, so ∇·(p U c) = 0")
    sym_nom = []
    if theta0_exact is not None:
        f0 = U * sp.Matrix(theta0_exact) + v
        sym_nom = _symmetry_space(U, D, state, [(f0, True)], seed)
        _add(sym_nom, "symmetry at nominal",
             "U·c commutes with the generator at the nominal θ, so ∇·(p U c) = 0")

    # (4) exact stationary density at the nominal θ
    density = None
    rank_is_exact = False
    if theta0_exact is not None and model.diffusion_is_constant:
        f0 = U * sp.Matrix(theta0_exact) + v
        score = _gaussian_score(f0, D, state)
        if score is None:
            g = _gradient_score(U, v, D, theta0_exact, [c["vector"] for c in combos
                                                        if c["kind"].startswith("symmetry")],
                                state, seed)
            if g is not None:
                score = (g[0], g[1])
        if score is not None:
            s, density = score
            a_cols = [[sum(U[j, k] * s[j] for j in range(d)) + sum(sp.diff(U[j, k], state[j]) for j in range(d))]
                      for k in range(n)]
            pop = function_null_space(a_cols, state, seed)
            certificates.append(pop.certificate)
            _add(pop.basis, "density", "∇·(p U c) ≡ 0 for the stationary density at the nominal θ")
            rank_is_exact = not pop.numerical
            if _exact_rank(found, n) != pop.dim:
                notes.append("warning: the exact density analysis does not contain every direction "
                             "found by the symmetry check (is the stationary law unique?)")
    elif theta0_exact is not None:
        notes.append("state-dependent diffusion: no closed-form stationary density is attempted")

    rank = n - _exact_rank(found, n)
    Q = _orthonormal(found, n)
    free = [names[k] for k in range(n) if any(vec[k] != 0 for vec in found)]
    from .report import format_combination

    out_combos = []
    for c in combos:
        vec = c["vector"]
        if sum(1 for x in vec if x != 0) == 1 and names[[i for i in range(n) if vec[i] != 0][0]] in absent:
            continue
        fv = np.array([float(x) for x in vec])
        out_combos.append({"combination": exact_combination(list(vec), names),
                           "display": format_combination(fv / np.linalg.norm(fv), names),
                           "kind": c["kind"], "reason": c["reason"], "vector": fv / np.linalg.norm(fv)})
    if rank < n:
        identifiable = False
    elif rank_is_exact:
        identifiable = True
    else:
        identifiable = None
        notes.append("no dependency or symmetry in the symbols; whether the stationary density "
                     "separates every parameter is decided by the design-time check "
                     "(ds.check_identifiability)")
    if route == "local" and probes is not None:
        M = int(np.asarray(probes).shape[0])
        if M < rank:
            notes.append(f"only {M} probe points for {rank} identifiable directions: the local system "
                         f"has rank at most {M}")
    cert = "exact" if all(c == "exact" for c in certificates) else "numerical"
    return StructuralReport(
        model_name=model.name, param_names=list(names), n_params=n, route=route, rank=rank,
        rank_is_exact=rank_is_exact, identifiable=identifiable, absent=absent, combinations=out_combos,
        null_vectors=Q, free_params=free, density=density, nominal=theta0, certificate=cert,
        notes=notes, elapsed=time.perf_counter() - t0)


# ================================================================================================
# design-time check by simulation
# ================================================================================================

@dataclass
class IdentifiabilityCheck:
    """Result of :func:`check_identifiability`: structural verdict plus a simulated design study.

    Attributes
    ----------
    model_name : str
    route : str
    param_names : list of str
    nominal : (n,) array
    structural : StructuralReport
    report : IdentifiabilityReport or None
        Report of the system assembled from ``n_samples`` simulated samples (None when
        ``simulate=False``).
    rank, unique, null_space, free_params, freeness, freeness_normalised
        From ``report`` (the structural verdict when not simulated).
    n_samples : int
    levels : (L,) array
        Sample sizes of the nested subsets of data blocks used to follow each direction.
    direction_sv : (L, n) array
        ``‖A_N v_i‖`` for each right singular vector v_i (of the full-N system) and level.
    direction_noise : (L, n) array
        Its standard error estimated from the blocks of that level.
    direction_exponent : (n,) array
        Log-log slope of ``‖A_N v_i‖`` against N: ≈ −½ for a direction the data cannot see
        (pure noise), ≈ 0 for a real one.
    direction_verdict : list of str
        ``"resolved"``, ``"unconstrained"`` (unresolved and shrinking like N^-½ — or, when the
        structural rank is exact, lying in the exact null space) or ``"weak"`` (unresolved but
        real: more data will resolve it).
    direction_n_resolve : (n,) array
        N at which the direction crosses the resolution threshold (σ = 3·noise, noise ∝ N^-½);
        inf for unconstrained directions.
    std_errors : (n,) array
        Predicted standard errors at ``n_samples`` (sandwich; inf when not identifiable).
    rel_error, level : float
        The requested relative error and confidence level.
    n_required : (n,) array
        Samples needed for the half-width of the ``level`` interval to reach ``rel_error·|θ_k|``
        (for a zero nominal value: ``rel_error`` times the RMS of the nonzero nominal values).
    timings : dict
    notes : list of str
    """

    model_name: str
    route: str
    param_names: list
    nominal: np.ndarray
    structural: StructuralReport
    report: object = None
    n_samples: int = 0
    levels: np.ndarray | None = None
    direction_sv: np.ndarray | None = None
    direction_noise: np.ndarray | None = None
    direction_exponent: np.ndarray | None = None
    direction_verdict: list | None = None
    direction_n_resolve: np.ndarray | None = None
    std_errors: np.ndarray | None = None
    rel_error: float = 0.1
    level: float = 0.95
    n_required: np.ndarray | None = None
    timings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    # ------------------------------------------------------------------ summaries
    @property
    def rank(self):
        return self.structural.rank if self.report is None else self.report.rank

    @property
    def n_params(self):
        return len(self.param_names)

    @property
    def unique(self):
        return self.rank == self.n_params

    @property
    def null_space(self):
        return self.structural.null_space if self.report is None else self.report.null_space

    @property
    def free_params(self):
        if self.report is None:
            return list(self.structural.free_params)
        return sorted(set(self.report.free_params) | set(self.structural.free_params),
                      key=self.param_names.index)

    @property
    def freeness(self):
        return None if self.report is None else self.report.freeness

    @property
    def freeness_normalised(self):
        return None if self.report is None else self.report.freeness_normalised

    def se_at(self, N):
        """Predicted standard errors (n,) — or (len(N), n) — at sample size(s) N (∝ N^-½)."""
        if self.std_errors is None:
            raise DynosedError("no design-time simulation was run (simulate=False)")
        N = np.asarray(N, dtype=float)
        return self.std_errors * np.sqrt(self.n_samples / N)[..., None] if N.ndim else \
            self.std_errors * math.sqrt(self.n_samples / float(N))

    def samples_for(self, rel_error=None, level=None):
        """Samples needed per parameter for a ``level`` interval of half-width ``rel_error·|θ_k|``."""
        from .uncertainty import _t_quantile

        if self.std_errors is None:
            raise DynosedError("no design-time simulation was run (simulate=False)")
        rel_error = self.rel_error if rel_error is None else float(rel_error)
        level = self.level if level is None else float(level)
        if not rel_error > 0:
            raise DataError(f"rel_error must be positive, got {rel_error!r}")
        q = _t_quantile(level, np.inf)
        scale = np.abs(self.nominal)
        nz = scale[scale > 0]
        typical = float(np.sqrt(np.mean(nz ** 2))) if nz.size else 1.0
        tol = rel_error * np.where(scale > 0, scale, typical)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = self.n_samples * (q * self.std_errors / tol) ** 2
        return np.where(np.isfinite(self.std_errors), np.ceil(need), np.inf)

    def __str__(self):
        lines = [f"identifiability of {self.model_name!r} ({self.route} route) at the nominal "
                 "parameters", ""]
        lines.append(str(self.structural))
        rep = self.report
        if rep is None:
            lines.extend(self.notes)
            return "\n".join(lines)
        lines.append("")
        names = self.param_names
        t_sim = self.timings.get("simulate", float("nan"))
        lines.append(f"design-time check: {self.n_samples:,} simulated samples ({t_sim:.1f} s simulation, "
                     f"{self.timings.get('assemble', float('nan')):.1f} s assembly): rank {rep.rank} of "
                     f"{rep.n_params} ({'identifiable' if rep.unique else 'NOT identifiable'})")
        for i in range(rep.null_vectors.shape[1]):
            lines.append(f"  unresolved combination: {_short_combination(rep.null_vectors[:, i], names)}")
        lines.append("  singular directions followed over N = "
                     + ", ".join(f"{int(n):,}" for n in self.levels) + ":")
        for i in range(rep.n_params):
            sv = self.direction_sv[-1, i]
            verdict = self.direction_verdict[i]
            extra = ""
            if verdict == "weak":
                nr = self.direction_n_resolve[i]
                extra = (f", resolved from N ≈ {nr:.2g}" if np.isfinite(nr) else
                         ", needs more data (not yet above its noise)")
            lines.append(f"    σ{i + 1} = {sv:9.3g}  noise {self.direction_noise[-1, i]:9.3g}  "
                         f"N-exponent {self.direction_exponent[i]:+5.2f}  {verdict}{extra}")
        names = self.param_names
        w = max(9, max(len(nm) for nm in names))
        Ns = [10**3, 10**4, 10**5, 10**6]
        need = self.samples_for()
        head = (f"{'parameter':<{w}}  {'nominal':>9}  " + "  ".join(f"{'se@' + _short(N):>9}" for N in Ns)
                + f"  {'N for ±' + format(100 * self.rel_error, 'g') + '%':>12}  {'normalised':>10}  identifiable")
        lines += ["", head, "-" * len(head)]
        free = set(self.free_params)
        se = self.se_at(np.array(Ns, dtype=float))
        for k, nm in enumerate(names):
            row = f"{nm:<{w}}  {self.nominal[k]:>9.4g}  " + "  ".join(f"{se[j, k]:>9.3g}" for j in range(len(Ns)))
            row += f"  {_short(need[k]) if np.isfinite(need[k]) else '∞':>12}  {rep.freeness_normalised[k]:>10.3g}  "
            row += "no" if nm in free else "yes"
            lines.append(row)
        lines.append(f"se@N: predicted standard error at N samples (sandwich, ∝ N^-½); N for ±x%: samples for a "
                     f"{100 * self.level:g}% interval of half-width x% of |nominal| (extrapolated: "
                     "below a few hundred samples the asymptotics are optimistic)")
        lines.extend(self.notes)
        return "\n".join(lines)


def _short_combination(vec, names, tol=0.05, max_terms=6):
    """A null vector as a combination of its largest entries (``… + 0.23·W[1,6] + …``)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.linalg.norm(vec)
    if vec[np.argmax(np.abs(vec))] < 0:
        vec = -vec
    keep = [k for k in np.argsort(-np.abs(vec))[:max_terms] if abs(vec[k]) >= tol]
    text = " ".join(f"{'−' if vec[k] < 0 else '+'} {abs(vec[k]):.3g}·{names[k]}" for k in keep)
    text = text[2:] if text.startswith("+ ") else text
    hidden = int(np.sum(np.abs(vec) >= 1e-3)) - len(keep)
    return text + (f" + … ({hidden} smaller terms)" if hidden > 0 else "")


def _short(N):
    N = float(N)
    if not np.isfinite(N):
        return "∞"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if N >= div:
            v = N / div
            return f"{v:.3g}{unit}"
    return f"{N:.0f}"


def _local_available():
    return importlib.util.find_spec("dynosed_sym.local") is not None


def _col_norms_se(blocks_V, mean_V, counts):
    from .report import _col_se

    return np.linalg.norm(_col_se(blocks_V, mean_V, counts), axis=0)


def follow_directions(A_blocks, counts, V, rank_threshold=None):
    """Follow right singular directions over nested block prefixes.

    Parameters
    ----------
    A_blocks : (B, m, n), counts : (B,)
    V : (n, n) right singular vectors of the full system

    Returns
    -------
    levels (L,), sv (L, n), noise (L, n), exponent (n,)
    """
    B = len(counts)
    ks = sorted({k for k in (B // 8, B // 4, B // 2, B) if k >= 2}) or [B]
    counts = np.asarray(counts, dtype=float)
    levels, svs, noises = [], [], []
    for k in ks:
        w = counts[:k] / counts[:k].sum()
        Ak = np.tensordot(w, A_blocks[:k], axes=1)
        AkV = Ak @ V
        svs.append(np.linalg.norm(AkV, axis=0))
        noises.append(_col_norms_se(A_blocks[:k] @ V, AkV, counts[:k]))
        levels.append(counts[:k].sum())
    levels, svs, noises = np.array(levels), np.array(svs), np.array(noises)
    if len(levels) >= 2:
        lx = np.log(levels)
        ly = np.log(np.maximum(svs, 1e-300))
        lx0 = lx - lx.mean()
        expo = (lx0 @ (ly - ly.mean(axis=0))) / (lx0 @ lx0)
    else:
        expo = np.full(V.shape[1], np.nan)
    return levels, svs, noises, expo


def check_identifiability(model, nominal=None, route="global", n_samples=20_000, seed=0, *,
                          rel_error=0.1, level=0.95, n_features=2048, bandwidth="median", lam=1e-6,
                          n_blocks=32, dt=0.01, burn_in=5000, thin=10, n_chains=None, samples=None,
                          probes=None, temperature=49.0, score="kernel", simulate=True,
                          out_dir=None) -> IdentifiabilityCheck:
    """Can snapshots identify θ, which combinations can they not, and how many samples are needed?

    1. :func:`structural_check` (exact, from the symbols; milliseconds).
    2. Unless ``simulate=False``: ``n_samples`` stationary samples at the nominal θ from the
       compiled simulator (:func:`dynosed_sym.simulate`), the system of the chosen route assembled
       with per-block partial sums, and its :class:`~dynosed_sym.report.IdentifiabilityReport`
       (rank against sampling noise, named free combinations, freeness, sandwich standard errors).
       Each right singular direction is followed over nested subsets of the blocks (N/8 … N): a
       direction the route cannot see shrinks like N^-½, a real one does not (when the structural
       rank is exact, its null space decides instead).  Standard errors are extrapolated as N^-½
       and inverted into the N each parameter needs.  The simulation study needs a drift affine
       in θ (a non-affine model gets the linearised structural check only: ``simulate=False``).

    Parameters
    ----------
    model : SDEModel
    nominal : array or dict, optional
        Parameters to simulate at (default ``model.nominal``).
    route : {"global", "local"}
    n_samples : int
        Simulated samples for the design study.
    seed : int
        Seeds the simulation and the random features.
    rel_error : float
        Target relative error per parameter for :attr:`IdentifiabilityCheck.n_required`.
    level : float
        Confidence level of that target.
    n_features, bandwidth, lam, n_blocks
        As :func:`dynosed_sym.fit_global`.
    dt, burn_in, thin, n_chains
        As :func:`dynosed_sym.simulate` (``n_chains`` default ``min(n_samples, 2048)``).
    samples : (N, d) array, optional
        Use these samples (e.g. an exact sampler) instead of simulating.  Rows should be ordered
        so that contiguous blocks are independent (as the simulator's chain-by-chain output).
    probes, temperature, score
        Local route only: probe points (or regions) and the score estimator, as
        :func:`dynosed_sym.fit_local`.
    simulate : bool
        False: the structural check only.
    out_dir : str, optional
        Folder of generated kernel modules.

    Returns
    -------
    IdentifiabilityCheck
    """
    from .report import RANK_THRESHOLD

    if route not in ("global", "local"):
        raise DynosedError(f"route must be 'global' or 'local', got {route!r}")
    if route == "local" and not _local_available():
        raise DynosedError("route='local' needs the local route (dynosed_sym.local), which is not "
                           "part of this installation; use route='global'")
    theta = _nominal_vector(model, nominal)
    if theta is None and simulate:
        raise ModelError(f"model {model.name!r} has no nominal parameters: pass nominal= (or "
                         "simulate=False for the structural check alone)")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 16:
        raise DataError(f"n_samples must be an integer ≥ 16, got {n_samples!r}")
    t0 = time.perf_counter()
    structural = structural_check(model, theta, route, probes=None if probes is None or route != "local"
                                  else _probe_points(probes), use_nominal=theta is not None, seed=seed)
    timings = {"structural": time.perf_counter() - t0}
    check = IdentifiabilityCheck(model_name=model.name, route=route, param_names=list(model.param_names),
                                 nominal=theta, structural=structural, rel_error=float(rel_error),
                                 level=float(level), timings=timings)
    if not simulate:
        return check
    from .simulate import simulate as _simulate

    t1 = time.perf_counter()
    if samples is None:
        X = _simulate(model, theta, int(n_samples), dt=dt, burn_in=burn_in, thin=thin, n_chains=n_chains,
                      seed=seed, out_dir=out_dir)
    else:
        from .data import as_samples

        X = as_samples(samples, model, "samples")
    timings["simulate"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    if route == "global":
        rep, A_blocks, counts, n_used = _global_design(model, X, n_features, bandwidth, lam, seed, n_blocks,
                                                       out_dir)
    else:
        rep, A_blocks, counts, n_used = _local_design(model, X, probes, temperature, score, lam, n_blocks,
                                                      seed)
        check.notes.append(f"local route: {n_used:,} of {X.shape[0]:,} simulated samples fall in the probe "
                           "regions; standard errors are the jackknife's and do not include the bias of "
                           "the score estimator, so N predictions are optimistic")
    timings["assemble"] = time.perf_counter() - t2
    check.report = rep
    check.n_samples = int(n_used)
    if A_blocks is not None and len(counts) >= 2:
        A = np.tensordot(np.asarray(counts, float) / np.sum(counts), A_blocks, axes=1)
        m, n = A.shape
        _, _, Vt = np.linalg.svd(A, full_matrices=True) if m < n else np.linalg.svd(A, full_matrices=False)
        V = Vt.T
        levels, svs, noises, expo = follow_directions(A_blocks, counts, V)
        levels = levels * check.n_samples / float(np.sum(counts))  # local route: blocks → samples
        # the report's verdicts refer to its own SVD: same V (same A) up to signs
        resolved = svs[-1] > RANK_THRESHOLD * noises[-1]
        verdict, n_res = [], np.full(n, np.inf)
        Qs = structural.null_vectors if structural.rank_is_exact else None
        for i in range(n):
            if Qs is not None and not resolved[i]:
                # the exact analysis knows which directions are structurally free
                free_dir = Qs.shape[1] > 0 and np.linalg.norm(Qs.T @ V[:, i]) > 0.9
            else:
                free_dir = expo[i] < SHRINK_EXPONENT
            if resolved[i]:
                verdict.append("resolved")
                n_res[i] = check.n_samples * (RANK_THRESHOLD * noises[-1, i] / svs[-1, i]) ** 2
            elif free_dir:
                verdict.append("unconstrained")
            else:
                verdict.append("weak")
                sig2 = max(svs[-1, i] ** 2 - noises[-1, i] ** 2, 0.0)
                if sig2 > 0:
                    n_res[i] = check.n_samples * (RANK_THRESHOLD * noises[-1, i]) ** 2 / sig2
        check.levels, check.direction_sv, check.direction_noise = levels, svs, noises
        check.direction_exponent, check.direction_verdict, check.direction_n_resolve = expo, verdict, n_res
    check.std_errors = rep.std_errors
    if rep.std_errors is not None:
        check.n_required = check.samples_for()
    _compare(check)
    timings["total"] = time.perf_counter() - t0
    return check


def _probe_points(probes):
    centres = getattr(probes, "centres", None)
    return np.asarray(centres if centres is not None else probes, dtype=float)


def _global_design(model, X, n_features, bandwidth, lam, seed, n_blocks, out_dir):
    """The global system through :func:`dynosed_sym.fit_global` itself (same bandwidth, features,
    blocks and report); the per-block means come from the report (``report._blocks``)."""
    from .fit import fit_global

    fit = fit_global(model, X, n_features=int(n_features), bandwidth=bandwidth, lam=lam, seed=seed,
                     n_blocks=n_blocks, out_dir=out_dir)
    rep = fit.report
    if rep._blocks is None:
        return rep, None, None, X.shape[0]
    return rep, rep._blocks[0], rep._blocks[2], X.shape[0]


def _local_design(model, X, probes, temperature, score, lam, n_blocks, seed):
    """The local route's system via :func:`dynosed_sym.fit_local` (noise from its jackknife)."""
    from . import local

    if probes is None:
        raise DynosedError("route='local' needs probes= (probe points, or Balls: the regions where "
                           "data will be collected)")
    if hasattr(probes, "restrict") and hasattr(probes, "centres"):
        X = probes.restrict(X, seed=seed)  # region-restricted sampling: only data inside the balls
    fit = local.fit_local(model, X, probes, temperature=temperature, score=score, lam=lam,
                          n_blocks=n_blocks)
    rep = fit.report
    blocks = rep._blocks
    if blocks is None:
        return rep, None, None, X.shape[0]
    return rep, blocks[0], blocks[2], X.shape[0]


def _compare(check):
    """Notes where the simulation and the structural check disagree."""
    s, rep = check.structural, check.report
    if rep is None:
        return
    if s.rank_is_exact and rep.rank != s.rank:
        check.notes.append(f"note: the simulation resolves {rep.rank} directions where the exact analysis "
                           f"gives {s.rank}: " + ("too few samples for the weakest direction"
                                                  if rep.rank < s.rank else
                                                  "a structurally free direction looks resolved "
                                                  "(discretisation bias of the simulator?)"))
    if s.null_vectors.shape[1] and rep.null_vectors.shape[1]:
        # principal angles between the structural null space and the unresolved subspace
        Q1, Q2 = s.null_vectors, np.linalg.qr(rep.null_vectors)[0]
        cos = np.linalg.svd(Q1.T @ Q2, compute_uv=False)
        if cos.size and cos.min() > 0.9:
            check.notes.append(f"the simulated unresolved directions contain the structural ones "
                               f"(smallest cosine {cos.min():.3f})")
