"""Symbolic derivation: everything the kernels compute, derived exactly from the declaration.

Everything the numerical routes need is derived here, exactly, from the
declared drift and diffusion:

* the affine split ``f = U(x) θ + v(x)`` with ``U = ∂f/∂θ`` and ``v = f|θ=0``,
  proven by ``∂²f/∂θ² ≡ 0`` (a :class:`NotAffineError` names the parameter and
  the additive term that break it);
* ``∇·D`` and ``∇·(∇·D)`` (state-dependent diffusion);
* ``∇·U`` (one divergence per column) and ``∇·v`` for the local route;
* the Stein-feature pieces of the global route: with
  ``z_r = √(2/m) cos(ω_rᵀx + c_r)`` the Stein feature is
  ``g_r = −√(2/m)[sin(·) ωᵀ(Uθ + v) + cos(·) ωᵀD(x)ω]``.  The x-dependent
  factors multiplying ``sin`` (entries of U and v) and ``cos`` (entries of D)
  are collected, with numeric coefficients split off and duplicates merged, into
  :class:`SteinPieces`;
* the rows of the local route (:class:`LocalPieces`): with the score ``s`` and its
  Jacobian ``J`` (``J[j, l] = ∂s_j/∂x_l``) as symbols, the local Fokker–Planck residual
  ``R = sᵀ(f − ∇·D − Ds) + ∇·(f − ∇·D − Ds) + ∂ₜlog p`` of an affine drift is
  ``a(x, s)ᵀθ − β(x, s, J, ∂ₜlog p)`` with
  ``a = Uᵀs + ∇·U`` and
  ``β = sᵀDs + Σ_jl D_jl J_jl + 2 sᵀ(∇·D) + ∇·(∇·D) − sᵀv − ∇·v − ∂ₜlog p``
  (D symmetric, so ``∇·(Ds) = sᵀ(∇·D) + Σ_jl D_jl J_jl``).  Derivatives of step-like
  functions are taken almost everywhere (:func:`almost_everywhere`);
* for every model, affine or not, the local residual itself as a function of θ and its
  θ-gradient (:class:`LocalResidualPieces`, the local gradient route):
  ``R = sᵀf + ∇·f − β₀`` and ``∂R/∂θ_k = sᵀ ∂f/∂θ_k + ∇·(∂f/∂θ_k)`` with the θ-free
  ``β₀ = sᵀDs + Σ_jl D_jl J_jl + 2 sᵀ(∇·D) + ∇·(∇·D) − ∂ₜlog p`` (for an affine drift
  R = aᵀθ − β, since β = β₀ − sᵀv − ∇·v);
* matrix parameters (:class:`MatrixBlock`): parameters ``θ[first + r·K + k]`` that enter
  component ``rows[r]`` only, as ``coefs[r]·θ·basis[k](x)`` with K basis functions shared by
  the R rows — ``W·φ(x)`` — which the code generator prints as loops
  (:func:`structured_pieces` gives the rest of every kernel).

The derivative ``∂f/∂θ`` is kept sparse (an entry per parameter a component contains): a
network with d = 100 genes and a full interaction matrix has n = 10⁴ parameters and
d·n = 10⁶ entries of which 10⁴ are not zero.  Each additive term ``c·θ_k`` of a component
(one parameter, a θ-free factor) gives its entry without differentiation; only the other
terms are differentiated and checked for affinity.  The dense matrices (``U``, ``jacobian``)
and the per-parameter local pieces are built on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy as sp

from ..errors import ModelError, NotAffineError

__all__ = [
    "Derivation",
    "SteinPieces",
    "LocalPieces",
    "LocalResidualPieces",
    "MatrixBlock",
    "StructuredPieces",
    "derive",
    "structured_pieces",
    "split_coefficient",
    "almost_everywhere",
]

_BAD = (sp.nan, sp.zoo, sp.oo, -sp.oo)


def split_coefficient(expr):
    """Split ``expr`` into ``(c, base)`` with a numeric ``c`` and ``expr = c·base``."""
    expr = sp.sympify(expr)
    c, base = expr.as_coeff_Mul()
    if base == 1 and c != 1:
        return c, sp.Integer(1)
    return c, base


@dataclass(frozen=True)
class SteinPieces:
    """x-dependent factors of the global Stein features, deduplicated.

    ``A[r, k] = −√(2/m)/N Σ_i sin_ri Σ_{(e,j,k,c) in a_terms} c ω_rj  sin_feature_e(x_i)``
    ``b[r]    =  √(2/m)/N Σ_i [sin_ri Σ_{(e,j,c) in b_sin_terms} c ω_rj sin_feature_e(x_i)
                     + cos_ri Σ_{(e,j,l,c) in b_cos_terms} c ω_rj ω_rl cos_feature_e(x_i)]``

    where ``sin_ri = sin(ω_rᵀx_i + c_r)`` and ``cos_ri`` likewise.
    """

    sin_features: tuple  # sympy expressions of x
    cos_features: tuple
    a_terms: tuple  # (feature index e, state index j, param column k, coefficient)
    b_sin_terms: tuple  # (e, j, coefficient)
    b_cos_terms: tuple  # (e, j, l, coefficient); off-diagonal D entries counted twice


@dataclass(frozen=True)
class LocalPieces:
    """Rows ``a(x_i)ᵀθ = β(x_i)`` of the local route as SymPy expressions (module docstring).

    ``score`` (d,) and ``jacobian`` (d×d, row-major, ``J[j, l] = ∂s_j/∂x_l``) are the symbols
    standing for the estimated score and its Jacobian at a probe, ``dlogp_dt`` the symbol of
    ``∂ₜlog p`` there (zero for a stationary snapshot).
    """

    score: tuple
    jacobian: tuple
    dlogp_dt: sp.Symbol
    a: tuple  # n expressions in (x, s)
    beta: sp.Expr  # expression in (x, s, J, dlogp_dt)


@dataclass(frozen=True)
class LocalResidualPieces:
    """Local residual R(x, s, J, ∂ₜlog p; θ) and its θ-gradient as SymPy expressions.

    Same symbols as :class:`LocalPieces`; ``residual`` is R and ``gradient`` the n expressions
    ∂R/∂θ_k (module docstring).  Used by the local gradient route of non-affine models.
    """

    score: tuple
    jacobian: tuple
    dlogp_dt: sp.Symbol
    residual: sp.Expr
    gradient: tuple


@dataclass(frozen=True)
class MatrixBlock:
    """Parameters forming an R × K matrix that multiplies K basis functions of the state.

    ``θ[first + r·K + k]`` (row-major) enters the drift only in component ``rows[r]``, as the
    term ``coefs[r]·θ·basis[k](x)``: ``f[rows[r]] += coefs[r]·Σ_k θ[first + r·K + k]·basis[k]``.
    ``dbasis`` holds the nonzero ``∂basis[k]/∂x[rows[r]]`` (almost everywhere) as
    ``((k, r), expression)`` pairs, for the divergences of the local route.
    """

    first: int
    rows: tuple  # (R,) drift component of each block row
    coefs: tuple  # (R,) numeric coefficient of each block row
    basis: tuple  # (K,) expressions of the state (and inputs)
    dbasis: tuple = ()

    @property
    def shape(self):
        return len(self.rows), len(self.basis)

    @property
    def size(self):
        return len(self.rows) * len(self.basis)

    @property
    def columns(self):
        """Parameter indices of the block, in order."""
        return range(self.first, self.first + self.size)


@dataclass(frozen=True)
class StructuredPieces:
    """What a kernel computes besides its matrix blocks (see :func:`structured_pieces`).

    ``drift`` (d,): f without the blocks' terms; ``jacobian``: {(j, k): ∂f_j/∂θ_k} for the
    parameters outside the blocks; ``a`` and ``gradient``: {k: expression} of the local row
    ``a_k`` and of ``∂R/∂θ_k`` outside the blocks; ``beta`` the local right-hand side;
    ``residual`` R without the blocks' terms (the blocks add Σ θ_k ∂R/∂θ_k).
    """

    blocks: tuple
    drift: tuple
    jacobian: dict
    a: dict
    beta: sp.Expr
    gradient: dict
    residual: sp.Expr


class Derivation:
    """Symbolic results for one model (see module docstring).

    ``entries`` {(j, k): ∂f_j/∂θ_k} holds the nonzero entries of the Jacobian at general θ
    (row-major order); ``U``, ``jacobian``, ``div_U``, ``local`` and ``local_residual`` are
    built from it on first use.
    """

    def __init__(self, state, params, drift, D, entries, v, offending, div_D, div_div_D):
        self.state, self.params = tuple(state), tuple(params)
        self.drift, self.D = drift, D
        self.entries = entries
        self.is_affine = offending is None
        self.offending = offending  # (param, component, term) when not affine
        self.v = v if self.is_affine else None
        self.div_D, self.div_div_D = div_D, div_div_D
        self.separable = _separable(entries, params)
        self.blocks = _find_blocks(entries, len(params), state) if self.is_affine else ()

    def require_affine(self):
        if not self.is_affine:
            p, j, term = self.offending
            raise NotAffineError(
                f"drift[{j}] (d{self.state[j]}) is not affine in parameter {p}: "
                f"the term {sp.sstr(term)} is nonlinear in {p}",
                param=p,
                component=j,
                term=term,
            )
        return self

    @property
    def d(self):
        return len(self.state)

    @property
    def n(self):
        return len(self.params)

    def _dense(self):
        M = sp.zeros(self.d, self.n)
        for (j, k), e in self.entries.items():
            M[j, k] = e
        return M

    @cached_property
    def jacobian(self):
        """∂f/∂θ (d, n) at general θ (every model; the gradient route)."""
        return self._dense()

    @cached_property
    def U(self):
        """∂f/∂θ (d, n) of an affine drift (None for a non-affine one)."""
        return self._dense() if self.is_affine else None

    @cached_property
    def div_U(self):
        """∇·U (n, 1): one divergence per column (affine models)."""
        if not self.is_affine:
            return None
        out = [sp.Integer(0)] * self.n
        for (j, k), e in self.entries.items():
            out[k] = out[k] + sp.diff(e, self.state[j])
        return sp.Matrix(out)

    @cached_property
    def div_v(self):
        if not self.is_affine:
            return None
        return sp.sympify(sum(sp.diff(self.v[j], self.state[j]) for j in range(self.d)))

    @cached_property
    def stein(self):
        """:class:`SteinPieces`; for a non-affine drift only the θ-free diffusion part."""
        if not self.is_affine:
            return _stein_pieces({}, sp.zeros(self.d, 1), self.D)
        return _stein_pieces(self.entries, self.v, self.D)

    @cached_property
    def local(self):
        """:class:`LocalPieces` (affine models)."""
        if not self.is_affine:
            return None
        s, J, g = local_symbols(self.d)
        div_U = self.div_U.applyfunc(almost_everywhere)
        cols = _columns(self.entries, self.n)
        a = tuple(sp.Add(*[e * s[j] for j, e in cols[k]]) + div_U[k] for k in range(self.n))
        return LocalPieces(score=s, jacobian=J, dlogp_dt=g, a=a, beta=self._beta(s, J, g))

    def _beta(self, s, J, g):
        div_v = almost_everywhere(self.div_v)
        return self._beta0(s, J, g) - sp.Add(*[s[j] * self.v[j] for j in range(self.d)]) - div_v

    def _beta0(self, s, J, g):
        return _theta_free_beta(
            self.D,
            self.div_D.applyfunc(almost_everywhere),
            almost_everywhere(self.div_div_D),
            s,
            J,
            g,
        )

    @cached_property
    def local_residual(self):
        """:class:`LocalResidualPieces` (every model)."""
        s, J, g = local_symbols(self.d)
        f, state = self.drift, self.state
        div_f = almost_everywhere(sp.Add(*[sp.diff(f[j], state[j]) for j in range(self.d)]))
        residual = sp.Add(*[s[j] * f[j] for j in range(self.d)]) + div_f - self._beta0(s, J, g)
        cols = _columns(self.entries, self.n)
        grad = tuple(
            sp.Add(*[s[j] * e for j, e in cols[k]])
            + almost_everywhere(sp.Add(*[sp.diff(e, state[j]) for j, e in cols[k]]))
            for k in range(self.n)
        )
        return LocalResidualPieces(
            score=s, jacobian=J, dlogp_dt=g, residual=residual, gradient=grad
        )


def _columns(entries, n):
    """[[(j, entry)] for every column k] of sparse entries (rows ascending)."""
    cols = [[] for _ in range(n)]
    for (j, k), e in entries.items():
        cols[k].append((j, e))
    return cols


# --------------------------------------------------------------------------- the affine split
def _split_terms(fj, order):
    """Additive terms of f_j: ({k: [c, …]} for terms c·θ_k with a θ-free c, [θ-free terms],
    [other terms containing parameters])."""
    simple, rest, hard = {}, [], []
    for term in sp.Add.make_args(fj):
        ps = [p for p in term.free_symbols if p in order]
        if not ps:
            rest.append(term)
            continue
        if len(ps) == 1:
            c, q = term.as_independent(ps[0], as_Add=False)
            if q == ps[0]:
                simple.setdefault(order[q], []).append(c)
                continue
        hard.append(term)
    return simple, rest, hard


def _entries(drift, params):
    """Sparse ∂f/∂θ {(j, k): entry} and, per component, the terms needing an affinity check."""
    order = {p: k for k, p in enumerate(params)}
    entries, parts = {}, []
    for j, fj in enumerate(drift):
        simple, rest, hard = _split_terms(fj, order)
        row = {k: list(cs) for k, cs in simple.items()}
        hard_expr = sp.Add(*hard)
        for p in sorted(hard_expr.free_symbols & set(order), key=order.get):
            row.setdefault(order[p], []).append(sp.diff(hard_expr, p))
        for k in sorted(row):
            e = sp.Add(*row[k])
            if e != 0:
                entries[(j, k)] = e
        parts.append((rest, hard))
    return entries, parts


def _find_nonaffine(drift, params, parts):
    """Return (param, component, term) breaking affinity, or None.

    Affinity holds iff every ∂f_j/∂θ_k is free of θ (i.e. ∂²f/∂θ_k∂θ_l ≡ 0).  Terms ``c·θ_k``
    with a θ-free ``c`` are affine by construction; the others are differentiated, and entries
    that still contain parameters are simplified before a verdict, so cancellations such as
    ``θ·x + θ·(1−x)`` are not misreported.
    """
    pset = set(params)
    order = {p: k for k, p in enumerate(params)}
    for j, (_, hard) in enumerate(parts):
        fj = sp.Add(*hard)
        for pk in sorted(fj.free_symbols & pset, key=order.get):
            dk = sp.diff(fj, pk)
            for pl in sorted(dk.free_symbols & pset, key=order.get):
                if sp.simplify(sp.diff(dk, pl)) != 0:
                    # name the additive term responsible (expanded, so cancelling terms
                    # such as (k+1)**2 - k**2 are not blamed); error path only
                    for term in sp.Add.make_args(sp.expand(drift[j])):
                        if sp.simplify(sp.diff(term, pk, pl)) != 0:
                            return pl, j, term
                    return pl, j, drift[j]
    return None


def _stein_pieces(entries, v, D):
    sin_feats, sin_index = [], {}
    cos_feats, cos_index = [], {}

    def index(expr, feats, table):
        if expr not in table:
            table[expr] = len(feats)
            feats.append(expr)
        return table[expr]

    a_terms, b_sin, b_cos = [], [], []
    for (j, k), e in sorted(entries.items()):
        c, base = split_coefficient(e)
        a_terms.append((index(base, sin_feats, sin_index), j, k, c))
    d = D.shape[0]
    for j in range(d):
        if v[j] != 0:
            c, base = split_coefficient(v[j])
            b_sin.append((index(base, sin_feats, sin_index), j, c))
    for j in range(d):
        for l in range(j, d):
            if D[j, l] != 0:
                c, base = split_coefficient(D[j, l])
                c = c * (1 if j == l else 2)
                b_cos.append((index(base, cos_feats, cos_index), j, l, c))
    return SteinPieces(
        tuple(sin_feats), tuple(cos_feats), tuple(a_terms), tuple(b_sin), tuple(b_cos)
    )


def local_symbols(d):
    """Symbols of the score (d,), its Jacobian (d×d, row-major) and ∂ₜlog p at a probe."""
    score = tuple(sp.Symbol(f"_score{j}", real=True) for j in range(d))
    jac = tuple(sp.Symbol(f"_jac{j}_{l}", real=True) for j in range(d) for l in range(d))
    return score, jac, sp.Symbol("_dlogp_dt", real=True)


_PIECEWISE_CONSTANT = (sp.floor, sp.ceiling, sp.sign, sp.Heaviside)


def almost_everywhere(expr):
    """``expr`` with the distributional parts of derivatives dropped.

    Derivatives of the supported step-like functions (sign, Heaviside — also from Abs, Min, Max
    — floor, ceiling) are zero except on their jumps: ``DiracDelta(·)`` terms and unevaluated
    ``Derivative(floor(·), ·)`` are replaced by 0, so the local residual uses the derivative
    almost everywhere (a probe exactly on a jump has probability zero).
    """
    expr = sp.sympify(expr)
    if expr.has(sp.DiracDelta):
        expr = expr.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.Integer(0))
    if expr.has(sp.Derivative):
        expr = expr.replace(
            lambda e: isinstance(e, sp.Derivative) and isinstance(e.expr, _PIECEWISE_CONSTANT),
            lambda e: sp.Integer(0),
        )
    return expr


def _theta_free_beta(D, div_D, div_div_D, s, J, g):
    """β₀ = sᵀDs + Σ_jl D_jl J_jl + 2 sᵀ(∇·D) + ∇·(∇·D) − ∂ₜlog p: the θ-free part of −R."""
    d = len(s)
    nz = [(j, l) for j in range(d) for l in range(d) if D[j, l] != 0]
    return (
        sp.Add(*[D[j, l] * s[j] * s[l] for j, l in nz])
        + sp.Add(*[D[j, l] * J[j * d + l] for j, l in nz])
        + 2 * sp.Add(*[s[j] * div_D[j] for j in range(d)])
        + div_div_D
        - g
    )


def _separable(entries, params):
    """Indices k with ∂²f/∂θ_k∂θ_l ≡ 0 for all l: θ_k enters f affinely with a θ-free column.

    Such parameters are eliminated exactly by variable projection in the gradient route.
    """
    pset = set(params)
    bad = set()
    for (_, k), e in entries.items():
        if k not in bad and any(sp.simplify(sp.diff(e, p)) != 0 for p in e.free_symbols & pset):
            bad.add(k)
    return tuple(k for k in range(len(params)) if k not in bad)


# --------------------------------------------------------------------------- matrix blocks
def _single_terms(entries, n):
    """Per parameter: (component, coefficient, base) when its column has one entry c·base."""
    info = [None] * n
    count = [0] * n
    for (j, k), e in entries.items():
        count[k] += 1
        info[k] = (j, *split_coefficient(e))
    return [i if c == 1 else None for i, c in zip(info, count)]


def _block_at(info, p0):
    """The largest matrix block starting at parameter p0 (R ≥ 2 rows, K ≥ 2 columns), or None."""
    n = len(info)
    if info[p0] is None:
        return None
    head = info[p0][:2]
    K = 1
    while p0 + K < n and info[p0 + K] is not None and info[p0 + K][:2] == head:
        K += 1
    basis = [info[p0 + k][2] for k in range(K)]
    if K < 2 or len(set(basis)) != K:
        return None
    rows, coefs, p = [head[0]], [head[1]], p0 + K
    while p + K <= n:
        row = info[p : p + K]
        if any(i is None for i in row) or any(i[:2] != row[0][:2] for i in row):
            break
        if [i[2] for i in row] != basis:
            break
        rows.append(row[0][0])
        coefs.append(row[0][1])
        p += K
    if len(rows) < 2:
        return None
    return p0, tuple(rows), tuple(coefs), tuple(basis)


def _find_blocks(entries, n, state):
    """Every matrix block of the parameters (:class:`MatrixBlock`), in parameter order."""
    info = _single_terms(entries, n)
    blocks, k = [], 0
    while k < n:
        found = _block_at(info, k)
        if found is None:
            k += 1
            continue
        first, rows, coefs, basis = found
        dbasis = []
        for kk, phi in enumerate(basis):
            for r, i in enumerate(rows):
                if state[i] in phi.free_symbols:
                    de = almost_everywhere(sp.diff(phi, state[i]))
                    if de != 0:
                        dbasis.append(((kk, r), de))
        blocks.append(MatrixBlock(first, rows, coefs, basis, tuple(sorted(dbasis))))
        k += len(rows) * len(basis)
    return tuple(blocks)


def structured_pieces(der, blocks) -> StructuredPieces:
    """Every kernel's expressions without the terms of ``blocks`` (affine models).

    The drift without the blocks is ``v + Σ_{k outside} U[:, k] θ_k``; the local pieces and the
    residual follow from it as in the module docstring.
    """
    der.require_affine()
    inside = {k for blk in blocks for k in blk.columns}
    rest = {jk: e for jk, e in der.entries.items() if jk[1] not in inside}
    d, state, params = der.d, der.state, der.params
    drift = [der.v[j] for j in range(d)]
    for (j, k), e in rest.items():
        drift[j] = drift[j] + e * params[k]
    s, J, g = local_symbols(d)
    cols = {}
    for (j, k), e in rest.items():
        cols.setdefault(k, []).append((j, e))
    a, grad = {}, {}
    for k, col in cols.items():
        div = almost_everywhere(sp.Add(*[sp.diff(e, state[j]) for j, e in col]))
        a[k] = grad[k] = sp.Add(*[e * s[j] for j, e in col]) + div
    div_f = almost_everywhere(sp.Add(*[sp.diff(drift[j], state[j]) for j in range(d)]))
    residual = sp.Add(*[s[j] * drift[j] for j in range(d)]) + div_f - der._beta0(s, J, g)
    return StructuredPieces(
        blocks=tuple(blocks),
        drift=tuple(drift),
        jacobian=rest,
        a=a,
        beta=der._beta(s, J, g),
        gradient=grad,
        residual=residual,
    )


# --------------------------------------------------------------------------- derive
def _divergences(D, state):
    d = len(state)
    div_D = sp.Matrix(
        [
            sp.sympify(sum(sp.diff(D[i, j], state[j]) for j in range(d) if D[i, j].free_symbols))
            for i in range(d)
        ]
    )
    return div_D, sp.sympify(sum(sp.diff(div_D[i], state[i]) for i in range(d)))


def _affine_parts(model, f, params):
    """(entries, v) of an affine drift; cancels removable singularities at θ = 0 if needed."""
    entries, parts = _entries(f, params)
    zero = {p: 0 for p in params}
    entries = {jk: e.xreplace(zero) if e.free_symbols else e for jk, e in entries.items()}
    v = sp.Matrix([sp.Add(*(rest + [t.xreplace(zero) for t in hard])) for rest, hard in parts])
    if any(e.has(*_BAD) for e in entries.values()) or v.has(*_BAD):
        # a removable singularity at θ = 0, e.g. (k² − k)/k · x: cancel, then substitute again
        f = f.applyfunc(sp.cancel)
        entries, parts = _entries(f, params)
        entries = {jk: e.xreplace(zero) for jk, e in entries.items()}
        v = f.xreplace(zero)
        for j in range(len(f)):
            if v[j].has(*_BAD) or any(e.has(*_BAD) for (i, _), e in entries.items() if i == j):
                raise ModelError(
                    f"drift[{j}] (d{model.state[j]}) is singular at θ = 0 even after "
                    f"cancellation: {sp.sstr(model.drift[j])}; rewrite it"
                )
    return {jk: e for jk, e in entries.items() if e != 0}, v


def derive(model) -> Derivation:
    """Derive all symbolic quantities of ``model`` (an :class:`SDEModel`)."""
    state, params = model.state, model.params
    f, D = model.drift, model.D
    div_D, div_div_D = _divergences(D, state)
    entries, parts = _entries(f, params)
    bad = _find_nonaffine(f, params, parts)
    if bad is not None:
        return Derivation(state, params, f, D, entries, None, bad, div_D, div_div_D)
    entries, v = _affine_parts(model, f, params)
    return Derivation(state, params, f, D, entries, v, None, div_D, div_div_D)
