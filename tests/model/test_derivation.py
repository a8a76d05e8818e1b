"""Symbolic derivation: exact affine split, NotAffineError, divergences, Stein pieces."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.model.derivation import SteinPieces, derive, split_coefficient

x, y, z = sp.symbols("x y z", real=True)
k, j, th1, th2 = sp.symbols("k j theta1 theta2", real=True)


def is_zero(expr):
    """Exact zero test: expand first (cheap), simplify only when needed."""
    expr = sp.sympify(expr)
    if sp.expand(expr) == 0:
        return True
    return sp.simplify(expr) == 0


def mat_is_zero(M):
    return all(is_zero(e) for e in M)


# Extra models exercising what the zoo does not: state-dependent full D, state-dependent
# noise G, transcendental and rational terms, constant parameter columns.
def _extra_models():
    a, b, c, e = sp.symbols("a b c e", real=True)
    out = {}
    out["full_state_dependent_D"] = ds.SDEModel(
        [x, y],
        [a, b, c],
        [a * x + b * sp.sin(y) - x**3, c * y / (1 + x**2) - y**3 + 1],
        diffusion=sp.Matrix([[1 + x**2, x * y / 4], [x * y / 4, 2 + sp.cos(y)]]),
        name="full_sd",
    )
    out["state_dependent_noise"] = ds.SDEModel(
        [x, y, z],
        [a, b, c, e],
        [a - x + b * sp.exp(-(z**2)), -y + c * x * z, e * sp.tanh(x) - z],
        noise=sp.Matrix([[1 + y**2, 0], [x, 1], [0, sp.sqrt(2)]]),
        name="sd_noise",
    )
    out["rational_1d"] = ds.SDEModel(
        [x],
        [a, b],
        [a / (1 + x**2) + b * x - x**3],
        diffusion=sp.Rational(1, 10) * (1 + x**2),
        name="rational_1d",
    )
    return out


EXTRA = _extra_models()


@pytest.fixture(params=sorted(EXTRA))
def extra_model(request):
    return EXTRA[request.param]


def all_models(models):
    return list(models.values()) + list(EXTRA.values())


# --------------------------------------------------------------------------- affine split
def test_affine_roundtrip_every_model(model):
    """U θ + v − f simplifies to exactly 0 for every model in models/."""
    assert model.is_affine
    U, v = model.U, model.v
    assert U.shape == (model.d, model.n) and v.shape == (model.d, 1)
    theta = sp.Matrix(model.params)
    residual = U * theta + v - model.drift
    assert mat_is_zero(residual), f"U θ + v − f = {residual.T} for model {model.name}"
    # U and v are free of parameters; U = ∂f/∂θ and v = f(θ=0)
    pset = set(model.params)
    assert not any(e.free_symbols & pset for e in U)
    assert not any(e.free_symbols & pset for e in v)
    assert mat_is_zero(U - model.drift.jacobian(model.params))


def test_affine_roundtrip_extra(extra_model):
    m = extra_model
    assert m.is_affine
    assert mat_is_zero(m.U * sp.Matrix(m.params) + m.v - m.drift)


def test_zoo_U_v_values(models):
    lor = models["lorenz"]
    assert lor.U == sp.Matrix([[y - x, 0, 0], [0, x, 0], [0, 0, -z]]).subs(
        {x: lor.state[0], y: lor.state[1], z: lor.state[2]}
    )
    X, Y, Z = lor.state
    assert mat_is_zero(lor.v - sp.Matrix([0, -X * Z - Y, X * Y]))
    ou = models["ou2d"]
    X, Y = ou.state
    assert ou.U == sp.Matrix([[X, Y, 0, 0], [0, 0, X, Y]])
    assert ou.v == sp.zeros(2, 1)
    m12 = models["ou2d_m12"]
    X, Y = m12.state
    assert m12.U == sp.Matrix([Y, 0])
    assert mat_is_zero(m12.v - sp.Matrix([-X, -sp.Rational(1, 2) * X - Y]))


@pytest.mark.parametrize(
    "drift, param, term",
    [
        (k**2 * x, k, k**2 * x),
        (sp.exp(k * x), k, sp.exp(k * x)),
        (-x + sp.sin(k) * x, k, sp.sin(k) * x),
        (x / k, k, x / k),
        (sp.sqrt(k) - x, k, sp.sqrt(k)),
    ],
)
def test_not_affine_names_parameter_and_term(drift, param, term):
    mod = ds.SDEModel([x], [k], [drift], diffusion=1)  # declaring is fine
    assert mod.is_affine is False
    with pytest.raises(ds.NotAffineError) as info:
        _ = mod.U
    err = info.value
    assert err.param == param
    assert err.component == 0
    assert sp.simplify(err.term - term) == 0
    msg = str(err)
    assert str(param) in msg and sp.sstr(term) in msg and "drift[0]" in msg
    with pytest.raises(ds.NotAffineError):
        _ = mod.v


def test_not_affine_product_of_parameters():
    mod = ds.SDEModel([x, y], [th1, th2], [-x + th1 * th2 * x, th1 * y], diffusion=1)
    assert not mod.is_affine
    with pytest.raises(ds.NotAffineError) as info:
        _ = mod.U
    err = info.value
    assert err.param in (th1, th2)
    assert err.component == 0
    assert sp.simplify(err.term - th1 * th2 * x) == 0
    msg = str(err)
    assert str(err.param) in msg and sp.sstr(th1 * th2 * x) in msg


def test_not_affine_names_the_right_component():
    mod = ds.SDEModel([x, y], [k, j], [-k * x, -j * y + sp.cos(k * y)], diffusion=1)
    with pytest.raises(ds.NotAffineError) as info:
        _ = mod.U
    assert info.value.component == 1 and info.value.param == k
    assert "drift[1]" in str(info.value) and "cos(k*y)" in str(info.value)


def test_not_affine_error_from_fit_global():
    mod = ds.SDEModel([x], [k], [-(k**2) * x], diffusion=1)
    with pytest.raises(ds.NotAffineError, match="k"):
        ds.fit_global(mod, np.random.default_rng(0).standard_normal((50, 1)))


@pytest.mark.parametrize(
    "drift",
    [
        k * x + k * (1 - x),  # = k
        (k + 1) ** 2 - k**2 - x,  # = 2k + 1 − x
        sp.sin(k) ** 2 + sp.cos(k) ** 2 - x,  # = 1 − x, parameter-free
        k * (x + 1) ** 2 - k * x**2 - 2 * k * x,  # = k
        sp.exp(sp.log(2) * k) / 2**k * x - k * x,  # 2^k/2^k = 1
    ],
)
def test_cancellations_are_affine(drift):
    mod = ds.SDEModel([x], [k], [drift], diffusion=1)
    assert mod.is_affine
    assert mat_is_zero(mod.U * sp.Matrix([k]) + mod.v - mod.drift)


def test_not_affine_names_true_culprit_despite_cancelling_terms():
    mod = ds.SDEModel([x], [k], [(k + 1) ** 2 - k**2 + k**2 * x], diffusion=1)
    with pytest.raises(ds.NotAffineError) as info:
        _ = mod.U
    assert sp.simplify(info.value.term - k**2 * x) == 0


# --------------------------------------------------------------------------- divergences
def _direct_div_D(D, state):
    return sp.Matrix([sp.Matrix([D.row(i)]).jacobian(state).trace() for i in range(len(state))])


def _check_divergences(m):
    der = m.derivation
    st = m.state
    div_D = _direct_div_D(m.D, st)
    assert der.div_D.shape == (m.d, 1)
    assert mat_is_zero(der.div_D - div_D)
    # ∇·(∇·D) = Σ_ij ∂_i ∂_j D_ij
    ddD = sum(sp.diff(m.D[i, jj], st[i], st[jj]) for i in range(m.d) for jj in range(m.d))
    assert is_zero(der.div_div_D - ddD)
    # ∇·U_k = ∂/∂θ_k (∇·f) and ∇·v = (∇·f)|θ=0: an independent route through the drift
    div_f = m.drift.jacobian(st).trace()
    assert der.div_U.shape == (m.n, 1)
    for kk, p in enumerate(m.params):
        assert is_zero(der.div_U[kk] - sp.diff(div_f, p)), f"div U[{kk}] of {m.name}"
    assert is_zero(der.div_v - div_f.xreplace({p: 0 for p in m.params}))


def test_divergences_every_model(model):
    _check_divergences(model)
    # constant D everywhere in the zoo: ∇·D ≡ 0
    assert model.derivation.div_D == sp.zeros(model.d, 1)


def test_divergences_extra(extra_model):
    _check_divergences(extra_model)


def test_div_D_state_dependent_values():
    m = EXTRA["full_state_dependent_D"]
    # D = [[1 + x², xy/4], [xy/4, 2 + cos y]]
    assert mat_is_zero(m.derivation.div_D - sp.Matrix([2 * x + x / 4, y / 4 - sp.sin(y)]))
    assert is_zero(m.derivation.div_div_D - (2 + sp.Rational(1, 2) - sp.cos(y)))


def test_limit_cycle_divergences(models):
    m = models["limit_cycle"]
    X, Y = m.state
    # f = (a x − ω y − c x r², a y + ω x − c y r²):  ∇·f = 2a − 4c r²
    assert mat_is_zero(m.derivation.div_U - sp.Matrix([2, -4 * (X**2 + Y**2), 0]))
    assert m.derivation.div_v == 0


# --------------------------------------------------------------------------- Stein pieces
def _check_stein(m):
    st: SteinPieces = m.derivation.stein
    assert isinstance(st, SteinPieces)
    d, n = m.d, m.n
    w = sp.Matrix(sp.symbols(f"w0:{d}", real=True))
    # no duplicated factors; factors depend on the state only
    assert len(set(st.sin_features)) == len(st.sin_features)
    assert len(set(st.cos_features)) == len(st.cos_features)
    pset = set(m.params)
    for f in st.sin_features + st.cos_features:
        assert not (sp.sympify(f).free_symbols & pset)
    # ωᵀU, column by column
    wU = w.T * m.U
    for kk in range(n):
        rebuilt = sum(
            (c * w[jj] * st.sin_features[e] for e, jj, k2, c in st.a_terms if k2 == kk),
            sp.Integer(0),
        )
        assert is_zero(rebuilt - wU[kk]), f"ωᵀU[:, {kk}] of {m.name}"
    # ωᵀv
    rebuilt = sum((c * w[jj] * st.sin_features[e] for e, jj, c in st.b_sin_terms), sp.Integer(0))
    assert is_zero(rebuilt - (w.T * m.v)[0])
    # ωᵀ D ω (off-diagonal entries counted twice, upper triangle only)
    rebuilt = sum(
        (c * w[jj] * w[ll] * st.cos_features[e] for e, jj, ll, c in st.b_cos_terms), sp.Integer(0)
    )
    assert all(jj <= ll for _, jj, ll, _ in st.b_cos_terms)
    assert is_zero(rebuilt - (w.T * m.D * w)[0])
    # indices in range
    assert all(
        0 <= e < len(st.sin_features) and 0 <= jj < d and 0 <= k2 < n for e, jj, k2, _ in st.a_terms
    )
    assert all(0 <= e < len(st.cos_features) for e, *_ in st.b_cos_terms)


def test_stein_pieces_every_model(model):
    _check_stein(model)


def test_stein_pieces_extra(extra_model):
    _check_stein(extra_model)


def test_stein_pieces_deduplicate_shared_factors():
    # the same factor x*y appears in two places and with two coefficients
    a, b = sp.symbols("a b", real=True)
    m = ds.SDEModel([x, y], [a, b], [a * x * y + 3 * x * y, -2 * b * x * y - y], diffusion=1)
    st = m.derivation.stein
    assert sum(1 for f in st.sin_features if f == x * y) == 1
    _check_stein(m)


def test_lorenz_stein_tables(models):
    st = models["lorenz"].derivation.stein
    assert len(st.cos_features) == 1 and st.cos_features[0] == 1
    # D = 0.3 I: three diagonal entries with coefficient 3/10
    assert sorted((jj, ll, c) for _, jj, ll, c in st.b_cos_terms) == [
        (0, 0, sp.Rational(3, 10)),
        (1, 1, sp.Rational(3, 10)),
        (2, 2, sp.Rational(3, 10)),
    ]


@pytest.mark.parametrize(
    "expr, c, base",
    [
        (3 * x * y, 3, x * y),
        (-x, -1, x),
        (sp.Rational(1, 2), sp.Rational(1, 2), 1),
        (x + 1, 1, x + 1),
        (sp.Float(0.3) * sp.sin(x), sp.Float(0.3), sp.sin(x)),
    ],
)
def test_split_coefficient(expr, c, base):
    cc, bb = split_coefficient(expr)
    assert cc == c and bb == base
    assert sp.expand(cc * bb - expr) == 0


def test_derive_is_what_model_uses(models):
    m = models["ou2d"]
    der = derive(m)
    assert der.U == m.U and der.v == m.v and der.is_affine
    assert der.offending is None
