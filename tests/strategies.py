"""Shared test helpers: Hypothesis strategies over random SDE models, a CompiledModel whose kernels
run as pure Python (``.py_func``), comparisons against the NumPy reference, and exact samplers of
one- and two-dimensional densities given by their log.

Imported by the test modules as ``from strategies import …`` (``tests/`` is on the path).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_global
from dynosed_sym.codegen import CompiledModel
from dynosed_sym.reference import drift_reference, stein_system_reference

STATE = sp.symbols("x0:3", real=True)


PARAMS = sp.symbols("p0:4", real=True)


COEFS = [
    sp.Integer(1),
    sp.Integer(-1),
    sp.Integer(2),
    sp.Rational(-1, 2),
    sp.Rational(3, 4),
    sp.Float("0.3"),
    sp.Float("-1.7"),
]


def _basis(kind, xi, xj):
    if kind == "poly":
        return [xi, xi**2, xi * xj, xi**3, -xi * xj**2, sp.Integer(1)]
    if kind == "rational":
        return [1 / (1 + xi**2), xi / (1 + xj**2), xi * xj / (2 + xi**2 + xj**2)]
    return [
        sp.sin(xi),
        sp.cos(xj),
        sp.exp(sp.sin(xi)),
        sp.exp(-(xi**2)),
        sp.tanh(xi),
        sp.sin(xi) * sp.cos(xj),
        sp.exp(sp.cos(xi + xj) / 2),
    ]


@st.composite
def basis_functions(draw, d):
    xs = STATE[:d]
    i = draw(st.integers(0, d - 1))
    j = draw(st.integers(0, d - 1))
    kind = draw(st.sampled_from(["poly", "rational", "transcendental"]))
    return draw(st.sampled_from(_basis(kind, xs[i], xs[j])))


@st.composite
def sde_models(draw, name="hyp"):
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 4))
    xs, ps = STATE[:d], PARAMS[:n]
    comps = [sp.Integer(0)] * d
    # every parameter appears at least once, then some extra parameter terms
    placements = [(k, draw(st.integers(0, d - 1))) for k in range(n)]
    placements += draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, d - 1)), max_size=3)
    )
    for k, j in placements:
        comps[j] += draw(st.sampled_from(COEFS)) * ps[k] * draw(basis_functions(d))
    for j in range(d):
        for _ in range(draw(st.integers(0, 2))):
            comps[j] += draw(st.sampled_from(COEFS)) * draw(basis_functions(d))
    kind = draw(st.sampled_from(["isotropic", "diagonal", "noise", "state_diagonal"]))
    kw = {}
    if kind == "isotropic":
        kw["diffusion"] = draw(
            st.sampled_from([sp.Rational(1, 10), sp.Integer(1), sp.Float("0.3")])
        )
    elif kind == "diagonal":
        kw["diffusion"] = [
            draw(st.sampled_from([sp.Rational(1, 10), sp.Integer(2), sp.Float("0.25")]))
            for _ in range(d)
        ]
    elif kind == "noise":
        G = sp.zeros(d, d)
        for a in range(d):
            G[a, a] = draw(st.sampled_from([sp.Integer(1), sp.Rational(1, 2), sp.sqrt(2)]))
            for b in range(a):
                G[a, b] = draw(st.sampled_from([sp.Integer(0), sp.Integer(1), sp.Rational(-1, 3)]))
        kw["noise"] = G
    else:
        entries = []
        for _ in range(d):
            xj = xs[draw(st.integers(0, d - 1))]
            entries.append(
                draw(
                    st.sampled_from(
                        [
                            sp.Rational(1, 10) * (1 + xj**2),
                            sp.Rational(1, 5) + sp.sin(xj) ** 2 / 10,
                            sp.Float("0.05") * sp.exp(-(xj**2)) + sp.Rational(1, 20),
                            sp.Rational(1, 4),
                        ]
                    )
                )
            )
        kw["diffusion"] = entries
    return ds.SDEModel(list(xs), list(ps), comps, name=name, **kw)


@st.composite
def models_and_data(draw, max_rows=40):
    model = draw(sde_models())
    N = draw(st.integers(5, max_rows))
    X = draw(
        hnp.arrays(
            np.float64,
            (N, model.d),
            elements=st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False),
        )
    )
    theta = draw(
        hnp.arrays(
            np.float64,
            (model.n,),
            elements=st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False),
        )
    )
    m = draw(st.sampled_from([16, 37, 128, 130]))
    ell = draw(st.floats(0.3, 3.0))
    seed = draw(st.integers(0, 2**32 - 1))
    return model, X, theta, m, ell, seed


def assert_rel_close(got, ref, rtol, what):
    # Relative to the largest entry; below the smallest normal double (tiny inputs such as
    # x = 1e-160 squared) subnormals carry no relative precision, so the scale is floored there.
    scale = max(np.abs(ref).max(), np.finfo(float).tiny)
    err = np.abs(np.asarray(got) - ref).max()
    assert err <= rtol * scale, f"{what}: max abs error {err:.3g} > {rtol:g} × {scale:.3g}"


# --------------------------------------------------------------------------- generated code
class PyFuncModel(CompiledModel):
    """A CompiledModel whose per-sample kernels run as pure Python (``.py_func``)."""

    def drift(self, X, theta):
        out = np.empty_like(X)
        for i in range(X.shape[0]):
            self.module.drift_point.py_func(X[i], theta, out[i])
        return out

    def stein_features(self, X):
        s = np.empty((X.shape[0], self.n_sin))
        c = np.empty((X.shape[0], self.n_cos))
        for i in range(X.shape[0]):
            self.module.stein_features_point.py_func(X[i], s[i], c[i])
        return s, c


def _check_against_reference(cm, X, theta, m, ell, seed):
    model = cm.model
    assert_rel_close(cm.drift(X, theta), drift_reference(model, X, theta), 1e-10, "drift")
    feats = draw_features(model.d, m, ell, seed=seed)
    half = X.shape[0] // 2
    blocks = [X[:half], X[half:]] if half else [X]
    A, b, *_ = assemble_global(cm, blocks, feats)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    assert_rel_close(A, A_ref, 1e-10, "A")
    assert_rel_close(b, b_ref, 1e-10, "b")


def _random_inputs(model, points, seed):
    rng = np.random.default_rng(seed)
    M, d = points.shape
    S = rng.standard_normal((M, d)) * 2.0
    J = rng.standard_normal((M, d, d))
    J = J + np.swapaxes(J, 1, 2)
    g = rng.standard_normal(M)
    return S, J, g


def _rows_py(module, P, S, J, g, n):
    A = np.empty((P.shape[0], n))
    b = np.empty(P.shape[0])
    for i in range(P.shape[0]):
        module.local_row_point.py_func(P[i], S[i], J[i], g[i], A[i], b[i : i + 1])
    return A, b


def tanh_model():
    """dx = (a tanh(kx) − x + e x²) dt + √2 dW₁, dy = −y dt + √2 dW₂: not affine in k (the
    non-affine fuzz family of tests/test_fuzz.py and the fixed-point tests)."""
    x, y = STATE[:2]
    a, k, e = PARAMS[:3]
    return ds.SDEModel(
        [x, y],
        [a, k, e],
        [a * sp.tanh(k * x) - x + e * x**2, -y],
        diffusion=1,
        nominal=[1.0, 0.5, 0.0],
        name="fuzz_tanh",
    )


def sample_1d(logp, n, seed, lo=-15.0, hi=15.0):
    """Exact draws from p ∝ exp(logp) by inverse CDF on a fine grid (linear interpolation)."""
    g = np.linspace(lo, hi, 600_001)
    lp = logp(g)
    c = np.cumsum(np.exp(lp - lp.max()))
    c /= c[-1]
    return np.interp(np.random.default_rng(seed).uniform(size=n), c, g)[:, None]


def sample_2d(logp, n, seed, lim=7.0, cells=1200):
    """Draws from p ∝ exp(logp(x, y)): a cell by its probability, then uniform inside it."""
    rng = np.random.default_rng(seed)
    e = np.linspace(-lim, lim, cells + 1)
    c = 0.5 * (e[1:] + e[:-1])
    G1, G2 = np.meshgrid(c, c, indexing="ij")
    lp = logp(G1, G2)
    p = np.exp(lp - lp.max()).ravel()
    idx = rng.choice(p.size, size=n, p=p / p.sum())
    h = e[1] - e[0]
    return np.column_stack([G1.ravel()[idx], G2.ravel()[idx]]) + rng.uniform(-h / 2, h / 2, (n, 2))


def corrected_profile(linearisation, k, linear=(0, 2), nonlinear=1, n=3):
    """The corrected (U-statistic) loss ``‖r‖² − Σ_b (N_b/N)‖r_b − r‖²/(B − 1)`` minimised over
    the parameters that enter linearly, at a fixed value k of the remaining one, in NumPy: for
    fixed k the residuals are exactly affine in the others (the tanh model's a and e), with the
    columns of the linearisation at θ = k·e_nonlinear.  Returns (minimum, minimiser, smallest
    eigenvalue of its Hessian/2); an oracle of the non-affine fits' loss independent of
    dynosed_sym.solve."""
    theta = np.zeros(n)
    theta[nonlinear] = k
    A, b, A_blocks, b_blocks, counts = linearisation(theta)
    A_blocks, b_blocks = np.asarray(A_blocks), np.asarray(b_blocks)
    r0 = A @ theta - b
    dr = np.einsum("bmn,n->bm", A_blocks, theta) - b_blocks - r0
    C = A[:, list(linear)]
    dC = A_blocks[:, :, list(linear)] - C
    w = np.asarray(counts, dtype=float) / np.sum(counts) / (len(counts) - 1)
    H = C.T @ C - np.einsum("b,bmi,bmj->ij", w, dC, dC)
    g = C.T @ r0 - np.einsum("b,bmi,bm->i", w, dC, dr)
    c0 = r0 @ r0 - np.einsum("b,bm,bm->", w, dr, dr)
    z = -np.linalg.solve(H, g)
    return float(c0 + g @ z), z, float(np.linalg.eigvalsh(H).min())


def noisy_column_fit(seed, delta=0.0, signal=0.03):
    """A block system whose columns are noisy against their signal (m = 40 moments, n = 3
    columns ``signal``·N(0, 1), 32 blocks of 100 with unit noise), solved with the default
    estimator and reported: ``(report, estimate, (A, b, A_blocks, b_blocks, counts))``.  The
    least-squares θ is attenuated; at ``signal`` = 0.015 most data sets leave a direction
    unresolved.  ``delta``: size of b's component off the range of A (0: a correct model)."""
    import warnings

    from dynosed_sym.solve.report import analyse
    from dynosed_sym.solve.ustat import solve_system

    B, m, Nb = 32, 40, 100
    rng = np.random.default_rng(seed)
    A_pop = signal * rng.standard_normal((m, 3))
    b_pop = A_pop @ np.array([3.0, -1.5, 2.4]) + delta * np.linalg.svd(A_pop)[0][:, -1]
    A_blocks = A_pop[None] + rng.standard_normal((B, m, 3)) / np.sqrt(Nb)
    b_blocks = b_pop[None] + rng.standard_normal((B, m)) / np.sqrt(Nb)
    counts = np.full(B, Nb)
    A, b = A_blocks.mean(0), b_blocks.mean(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = solve_system(A, b, A_blocks, b_blocks, counts, 1e-9)
        names = ["a", "b", "c"]
        rep = analyse(A, b, est.theta, 1e-9, names, A_blocks, b_blocks, counts, estimate=est)
    return rep, est, (A, b, A_blocks, b_blocks, counts)
