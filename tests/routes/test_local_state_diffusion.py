"""State-dependent diffusion in both routes, on a model whose stationary law is known exactly.

D(x) = ½(I + x xᵀ) (full, state dependent) and f = a·x + c·‖x‖²·x.  Zero probability flux,
f = ∇·D + D∇log p, holds for p = N(0, I) when (a, c) = (1, −½): ∇·D = 3x/2 and
D(−x) = −x/2 − ‖x‖²x/2.  The local residual then needs the ∇·D, ∂ᵢDᵢⱼ and ∇·∇·D terms, the
global Stein features need D(x) inside; all of them are derived symbolically.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_array
from dynosed_sym.reference import local_rows_reference, stein_system_reference

TRUTH = np.array([1.0, -0.5])


@pytest.fixture(scope="module")
def sd_model(tmp_path_factory):
    x, y = sp.symbols("x y", real=True)
    a, c = sp.symbols("a c", real=True)
    r2 = x**2 + y**2
    D = sp.Rational(1, 2) * (sp.eye(2) + sp.Matrix([x, y]) * sp.Matrix([[x, y]]))
    model = ds.SDEModel(
        [x, y],
        [a, c],
        [a * x + c * r2 * x, a * y + c * r2 * y],
        diffusion=D,
        name="state_diffusion",
        nominal={a: 1.0, c: -0.5},
    )
    out = str(tmp_path_factory.mktemp("state_diffusion"))
    return model, out


def test_symbolic_divergences(sd_model):
    model, _ = sd_model
    der = model.derivation
    x, y = model.state
    assert sp.simplify(der.div_D - sp.Matrix([3 * x / 2, 3 * y / 2])) == sp.zeros(2, 1)
    assert der.div_div_D == 3
    s0, s1 = der.local.score
    J = der.local.jacobian
    expected = (
        (1 + x**2) / 2 * s0**2
        + x * y * s0 * s1
        + (1 + y**2) / 2 * s1**2
        + (1 + x**2) / 2 * J[0]
        + x * y / 2 * (J[1] + J[2])
        + (1 + y**2) / 2 * J[3]
        + 3 * x * s0
        + 3 * y * s1
        + 3
        - der.local.dlogp_dt
    )
    assert sp.simplify(der.local.beta - expected) == 0


def test_local_rows_and_global_fill_match_reference(sd_model):
    model, out = sd_model
    cm = ds.compile_model(model, out)
    rng = np.random.default_rng(0)
    P = rng.standard_normal((9, 2))
    S, J = rng.standard_normal((9, 2)), rng.standard_normal((9, 2, 2))
    from dynosed_sym.assembly.local import local_rows

    A, b = local_rows(cm, P, S, J)
    A_ref, b_ref = local_rows_reference(model, P, S, J)
    np.testing.assert_allclose(A, A_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b, b_ref, rtol=1e-12, atol=1e-12)
    X = rng.standard_normal((200, 2))
    feats = draw_features(2, 50, 1.0, seed=1)
    A, b, *_ = assemble_array(cm, X, np.array([0, 200]), feats)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    np.testing.assert_allclose(A, A_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, b_ref, rtol=1e-10, atol=1e-12)


def test_local_exact_scores(sd_model):
    model, out = sd_model
    P = np.random.default_rng(1).standard_normal((8, 2))
    J = np.broadcast_to(-np.eye(2), (8, 2, 2))
    fit = ds.fit_local(
        model,
        None,
        P,
        scores=ds.Scores(score=(-P, J)),
        solver=ds.Solver(lam=1e-12),
        execution=ds.Execution(out_dir=out),
    )
    np.testing.assert_allclose(fit.theta, TRUTH, atol=1e-9)
    assert np.linalg.norm(fit.A @ TRUTH - fit.b) < 1e-10
    # the ∇·D terms matter: without 2sᵀ(∇·D) + ∇·∇·D = −3‖x‖² + 3 in β the fit is far off
    b_wrong = fit.b - (-3 * (P**2).sum(axis=1) + 3) / np.sqrt(8)
    theta_wrong = np.linalg.lstsq(fit.A, b_wrong, rcond=None)[0]
    assert np.abs(theta_wrong - TRUTH).max() > 0.5


BALLS = ds.Balls(np.array([[0.0, 0.0], [1.2, 0.0], [-0.6, 1.0], [-0.6, -1.0], [0.0, 1.5]]), 0.8)


def test_local_score_matching_on_exact_samples(sd_model):
    model, out = sd_model
    X = np.random.default_rng(2).standard_normal((200_000, 2))
    fit = ds.fit_local(
        model,
        BALLS.restrict(X),
        BALLS,
        scores=ds.Scores(score="score_matching"),
        execution=ds.Execution(out_dir=out),
    )
    assert fit.report.unique
    np.testing.assert_allclose(fit.theta, TRUTH, rtol=0.1)


def test_global_on_exact_samples(sd_model):
    model, out = sd_model
    X = np.random.default_rng(3).standard_normal((100_000, 2))
    fit = ds.fit_global(model, X, features=ds.Features(seed=0), execution=ds.Execution(out_dir=out))
    assert fit.report.unique and fit.report.consistent
    np.testing.assert_allclose(fit.theta, TRUTH, rtol=0.05)


@pytest.mark.slow
def test_both_routes_on_simulated_samples(sd_model):
    """Euler–Maruyama chains with the generated G(x) (½GGᵀ = D(x)): both routes recover (a, c)."""
    model, out = sd_model
    X = ds.simulate(
        model,
        TRUTH,
        100_000,
        dt=0.002,
        burn_in=5000,
        thin=20,
        seed=0,
        execution=ds.Execution(out_dir=out),
    )
    np.testing.assert_allclose(np.cov(X.T), np.eye(2), atol=0.05)
    fit = ds.fit_global(model, X, features=ds.Features(seed=0), execution=ds.Execution(out_dir=out))
    np.testing.assert_allclose(fit.theta, TRUTH, rtol=0.05)
    fit = ds.fit_local(
        model,
        BALLS.restrict(X),
        BALLS,
        scores=ds.Scores(score="score_matching"),
        execution=ds.Execution(out_dir=out),
    )
    np.testing.assert_allclose(fit.theta, TRUTH, rtol=0.15)
