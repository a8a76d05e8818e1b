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
  R = aᵀθ − β, since β = β₀ − sᵀv − ∇·v).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ..errors import ModelError, NotAffineError

__all__ = [
    "Derivation",
    "SteinPieces",
    "LocalPieces",
    "LocalResidualPieces",
    "derive",
    "split_coefficient",
    "almost_everywhere",
]


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


@dataclass
class Derivation:
    """Symbolic results for one model (see module docstring)."""

    state: tuple
    params: tuple
    drift: sp.Matrix
    D: sp.Matrix
    is_affine: bool
    U: sp.Matrix | None = None
    v: sp.Matrix | None = None
    offending: tuple | None = None  # (param, component, term) when not affine
    jacobian: sp.Matrix | None = None  # ∂f/∂θ (d, n) at general θ (every model; the gradient route)
    div_D: sp.Matrix | None = None
    div_div_D: sp.Expr | None = None
    div_U: sp.Matrix | None = None
    div_v: sp.Expr | None = None
    stein: SteinPieces | None = field(default=None, repr=False)
    local: LocalPieces | None = field(default=None, repr=False)
    local_residual: LocalResidualPieces | None = field(default=None, repr=False)
    separable: tuple = ()  # indices k whose column ∂f/∂θ_k is free of every parameter

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


def _find_nonaffine(drift, params):
    """Return (param, component, term) breaking affinity, or None.

    Affinity holds iff every ∂f_j/∂θ_k is free of θ (i.e. ∂²f/∂θ_k∂θ_l ≡ 0).
    Entries that still contain parameters symbolically are simplified before a
    verdict, so cancellations such as ``θ·x + θ·(1−x)`` are not misreported.
    """
    pset = set(params)
    order = {p: k for k, p in enumerate(params)}
    for j, fj in enumerate(drift):
        for pk in sorted(fj.free_symbols & pset, key=order.get):
            dk = sp.diff(fj, pk)
            for pl in sorted(dk.free_symbols & pset, key=order.get):
                if sp.simplify(sp.diff(dk, pl)) != 0:
                    # name the additive term responsible (expanded, so cancelling terms
                    # such as (k+1)**2 - k**2 are not blamed); error path only
                    for term in sp.Add.make_args(sp.expand(fj)):
                        if sp.simplify(sp.diff(term, pk, pl)) != 0:
                            return pl, j, term
                    return pl, j, fj
    return None


def _jacobian(drift, params):
    """∂f/∂θ (d, n), differentiating each component only by the parameters it contains."""
    order = {p: k for k, p in enumerate(params)}
    U = sp.zeros(len(drift), len(params))
    for j, fj in enumerate(drift):
        for p in fj.free_symbols & set(order):
            U[j, order[p]] = sp.diff(fj, p)
    return U


def _stein_pieces(U, v, D, state):
    sin_feats, sin_index = [], {}
    cos_feats, cos_index = [], {}

    def index(expr, feats, table):
        if expr not in table:
            table[expr] = len(feats)
            feats.append(expr)
        return table[expr]

    a_terms, b_sin, b_cos = [], [], []
    d, n = U.shape
    for j in range(d):
        for k in range(n):
            if U[j, k] != 0:
                c, base = split_coefficient(U[j, k])
                a_terms.append((index(base, sin_feats, sin_index), j, k, c))
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


def _local_pieces(U, v, D, div_D, div_div_D, div_U, div_v):
    d, n = U.shape
    div_D = div_D.applyfunc(almost_everywhere)
    div_div_D = almost_everywhere(div_div_D)
    div_U = div_U.applyfunc(almost_everywhere)
    div_v = almost_everywhere(div_v)
    s, J, g = local_symbols(d)
    a = tuple(sp.Add(*[U[j, k] * s[j] for j in range(d)]) + div_U[k] for k in range(n))
    beta = (
        _theta_free_beta(D, div_D, div_div_D, s, J, g)
        - sp.Add(*[s[j] * v[j] for j in range(d)])
        - div_v
    )
    return LocalPieces(score=s, jacobian=J, dlogp_dt=g, a=a, beta=beta)


def _theta_free_beta(D, div_D, div_div_D, s, J, g):
    """β₀ = sᵀDs + Σ_jl D_jl J_jl + 2 sᵀ(∇·D) + ∇·(∇·D) − ∂ₜlog p: the θ-free part of −R."""
    d = len(s)
    return (
        sp.Add(*[D[j, l] * s[j] * s[l] for j in range(d) for l in range(d)])
        + sp.Add(*[D[j, l] * J[j * d + l] for j in range(d) for l in range(d)])
        + 2 * sp.Add(*[s[j] * div_D[j] for j in range(d)])
        + div_div_D
        - g
    )


def _local_residual_pieces(f, jac, D, div_D, div_div_D, state):
    """R = sᵀf + ∇·f − β₀ and ∂R/∂θ_k = sᵀ∂f/∂θ_k + ∇·(∂f/∂θ_k), any drift (module docstring)."""
    d, n = jac.shape
    s, J, g = local_symbols(d)
    div_f = almost_everywhere(sp.Add(*[sp.diff(f[j], state[j]) for j in range(d)]))
    beta0 = _theta_free_beta(
        D, div_D.applyfunc(almost_everywhere), almost_everywhere(div_div_D), s, J, g
    )
    residual = sp.Add(*[s[j] * f[j] for j in range(d)]) + div_f - beta0
    grad = tuple(
        sp.Add(*[s[j] * jac[j, k] for j in range(d)])
        + almost_everywhere(sp.Add(*[sp.diff(jac[j, k], state[j]) for j in range(d)]))
        for k in range(n)
    )
    return LocalResidualPieces(score=s, jacobian=J, dlogp_dt=g, residual=residual, gradient=grad)


def _separable(jac, params):
    """Indices k with ∂²f/∂θ_k∂θ_l ≡ 0 for all l: θ_k enters f affinely with a θ-free column.

    Such parameters are eliminated exactly by variable projection in the gradient route.
    """
    pset = set(params)
    out = []
    for k in range(jac.shape[1]):
        col = [sp.sympify(jac[j, k]) for j in range(jac.shape[0])]
        if all(sp.simplify(sp.diff(e, p)) == 0 for e in col for p in e.free_symbols & pset):
            out.append(k)
    return tuple(out)


def derive(model) -> Derivation:
    """Derive all symbolic quantities of ``model`` (an :class:`SDEModel`)."""
    state, params = model.state, model.params
    f, D = model.drift, model.D
    d = len(state)
    div_D = sp.Matrix([sum(sp.diff(D[i, j], state[j]) for j in range(d)) for i in range(d)])
    div_div_D = sum(sp.diff(div_D[i], state[i]) for i in range(d))
    der = Derivation(
        state=state,
        params=params,
        drift=f,
        D=D,
        is_affine=False,
        div_D=div_D,
        div_div_D=sp.sympify(div_div_D),
    )
    der.jacobian = _jacobian(f, params)
    der.local_residual = _local_residual_pieces(f, der.jacobian, D, div_D, der.div_div_D, state)
    der.separable = _separable(der.jacobian, params)
    bad = _find_nonaffine(f, params)
    if bad is not None:
        der.offending = bad
        # the gradient route needs only the θ-free diffusion part of the Stein features
        # (cos factors); the drift part is contracted from f and ∂f/∂θ at each θ
        der.stein = _stein_pieces(sp.zeros(d, len(params)), sp.zeros(d, 1), D, state)
        return der
    zero = {p: 0 for p in params}
    U = _jacobian(f, params).xreplace(zero)
    v = f.xreplace(zero)
    if U.has(sp.nan, sp.zoo, sp.oo, -sp.oo) or v.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        # a removable singularity at θ = 0, e.g. (k² − k)/k · x: cancel, then substitute again
        f = f.applyfunc(sp.cancel)
        U = _jacobian(f, params).xreplace(zero)
        v = f.xreplace(zero)
        for j in range(len(f)):
            if U.row(j).has(sp.nan, sp.zoo, sp.oo, -sp.oo) or v[j].has(
                sp.nan, sp.zoo, sp.oo, -sp.oo
            ):
                raise ModelError(
                    f"drift[{j}] (d{state[j]}) is singular at θ = 0 even after "
                    f"cancellation: {sp.sstr(model.drift[j])}; rewrite it"
                )
    der.is_affine = True
    der.U, der.v = U, v
    der.div_U = sp.Matrix(
        [sum(sp.diff(U[j, k], state[j]) for j in range(d)) for k in range(len(params))]
    )
    der.div_v = sp.sympify(sum(sp.diff(v[j], state[j]) for j in range(d)))
    der.stein = _stein_pieces(U, v, D, state)
    der.local = _local_pieces(U, v, D, div_D, der.div_div_D, der.div_U, der.div_v)
    return der
