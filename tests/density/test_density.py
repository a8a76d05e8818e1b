"""Dynamics → density: the flow-mixture density model, its exact derivatives, the
residual it is trained on, and what training achieves on two planar SDEs.

Oracles: finite differences of log_prob / score / the surrogate loss; SymPy (the claimed exact
stationary law has a residual that simplifies to 0); a drift-only finite-difference divergence;
the closed-form stationary density; a long simulation with the package's compiled integrator.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.apps.demo.density_examples import (
    hopf_log_density,
    hopf_oscillator,
    swirl_bistable,
)
from dynosed_sym.density import Architecture, Start, Training
from dynosed_sym.density import _tape as tp
from dynosed_sym.density import flow_mixture as fm
from dynosed_sym.density.dynamics import DynamicsTerms
from dynosed_sym.density.train import LearnedDensity, residual_loss
from dynosed_sym.errors import ConvergenceWarning, TrainingDivergedError


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("density_generated"))


@pytest.fixture(scope="module")
def hopf():
    return hopf_oscillator()


@pytest.fixture(scope="module")
def swirl():
    return swirl_bistable()


def _random_density(model, theta, n_components=5, n_layers=4, seed=3, tail=False):
    """A LearnedDensity with random (non-identity) flow and mixture parameters."""
    rng = np.random.default_rng(seed)
    spec = fm.FlowMixtureSpec(model.d, n_components, n_layers, 6, tail=tail)
    p = fm.init_params(spec, np.zeros(model.d), 1.0, rng)
    for l in range(n_layers):
        p[f"A{l}"] = 0.3 * rng.standard_normal(p[f"A{l}"].shape)
        p[f"B{l}"] = 0.3 * rng.standard_normal(p[f"B{l}"].shape)
    p["precision_chol"] = p["precision_chol"] + 0.2 * np.tril(
        rng.standard_normal((model.d, model.d))
    )
    p["log_weights"] = rng.standard_normal(n_components)
    return LearnedDensity(model, theta, spec, p, np.array([]), 0.0, {})


def _central_differences(f, P, axis, h=1e-5):
    """Central differences of f along each coordinate at the rows of P, stacked on ``axis``."""
    return np.stack(
        [(f(P + h * e) - f(P - h * e)) / (2 * h) for e in np.eye(P.shape[1])], axis=axis
    )


# ----------------------------------------------------------------------------- density model
def test_score_and_divergence_match_finite_differences(hopf):
    dens = _random_density(*hopf)
    P = np.random.default_rng(0).standard_normal((25, 2)) * 1.5
    fd_score = _central_differences(dens.log_prob, P, axis=1)
    np.testing.assert_allclose(dens.score(P), fd_score, rtol=1e-6, atol=1e-7)
    fd_jac = _central_differences(dens.score, P, axis=2)
    np.testing.assert_allclose(dens.score_jacobian(P), fd_jac, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        dens.score_divergence(P), np.trace(fd_jac, axis1=1, axis2=2), rtol=1e-6, atol=1e-7
    )
    # the Jacobian of a gradient is symmetric
    J = dens.score_jacobian(P)
    np.testing.assert_allclose(J, J.transpose(0, 2, 1), atol=1e-12)


def test_density_is_normalised_and_sampling_inverts_the_flow(hopf):
    dens = _random_density(*hopf, n_layers=2)  # (4 random layers spread mass beyond the grid)
    g = np.linspace(-9, 9, 721)
    h = g[1] - g[0]
    XX, YY = np.meshgrid(g, g)
    q = dens.prob(np.column_stack([XX.ravel(), YY.ravel()]))
    assert abs(q.sum() * h * h - 1.0) < 1e-3
    # samples: T(T⁻¹(ξ)) = ξ, and their mean matches the quadrature mean of the density
    xi = fm.sample_latent(dens.spec, dens.params, 1000, np.random.default_rng(1))
    x = fm.inverse_flow(dens.spec, dens.params, xi)
    back = fm._flow_jets(dens.spec, dens.params, x)[0]
    np.testing.assert_allclose(back, xi, atol=1e-10)
    S = dens.sample(200_000, seed=2)
    mean_quad = np.array([(q * XX.ravel()).sum(), (q * YY.ravel()).sum()]) * h * h
    sd = S.std(axis=0)
    assert np.all(np.abs(S.mean(axis=0) - mean_quad) < 4 * sd / np.sqrt(S.shape[0]) + 1e-3)
    assert np.array_equal(dens.sample(10, seed=5), dens.sample(10, seed=5))


def test_identity_flow_at_initialisation(hopf):
    model, theta = hopf
    spec = fm.FlowMixtureSpec(2, 3, 2, 4)
    p = fm.init_params(spec, np.zeros(2), 1.0, np.random.default_rng(0))
    X = np.random.default_rng(1).standard_normal((7, 2))
    z, J, H, ld, _, _ = fm._flow_jets(spec, p, X)
    np.testing.assert_array_equal(z, X)
    np.testing.assert_array_equal(ld, 0.0)


# ----------------------------------------------------------------------------- residual pieces
def test_dynamics_terms_against_finite_differences_of_the_drift(swirl, out_dir):
    model, theta = swirl
    terms = DynamicsTerms(model, theta, out_dir)
    cm = ds.compile_model(model, out_dir)
    P = np.random.default_rng(0).standard_normal((30, 2)) * 2
    c, e, D = terms(P)
    h = 1e-6
    div_fd = sum(
        (cm.drift(P + h * E, theta)[:, j] - cm.drift(P - h * E, theta)[:, j]) / (2 * h)
        for j, E in enumerate(np.eye(2))
    )
    np.testing.assert_allclose(e, div_fd, rtol=1e-6, atol=1e-7)  # constant D: e = ∇·f
    np.testing.assert_allclose(c, cm.drift(P, theta), rtol=0, atol=0)  # constant D: c = f
    np.testing.assert_allclose(D, np.broadcast_to(0.4 * np.eye(2), D.shape))


def test_state_dependent_diffusion_terms():
    x, y = sp.symbols("x y", real=True)
    a = sp.Symbol("a", real=True)
    Dm = sp.Matrix([[1 + x**2, x * y / 4], [x * y / 4, 1 + y**2 / 2]])
    model = ds.SDEModel(
        state=[x, y], params=[a], drift=[-a * x**3, -y], diffusion=Dm, name="density_sd"
    )
    P = np.random.default_rng(0).standard_normal((9, 2))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        c, e, D = DynamicsTerms(model, np.array([1.5]), tmp)(P)
    X, Y = P[:, 0], P[:, 1]
    divD = np.column_stack([2 * X + X / 4, Y / 4 + Y])  # Σ_j ∂_j D_ij
    f = np.column_stack([-1.5 * X**3, -Y])
    np.testing.assert_allclose(c, f - 2 * divD, rtol=1e-12)
    np.testing.assert_allclose(e, (-4.5 * X**2 - 1) - (2 + 0.25 + 0.25 + 1), rtol=1e-12)
    np.testing.assert_allclose(D[:, 0, 1], X * Y / 4)


def test_exact_law_has_zero_residual_symbolically_and_numerically(hopf, out_dir):
    model, theta = hopf
    x, y = model.state
    subs = dict(zip(model.params, [sp.Rational(2), sp.Rational(2)]))
    f = model.drift.subs(subs)
    D = model.D
    logp = -(x**2 + y**2) / 2 - 2 * sp.exp(-(x**2 + y**2) / (2 * sp.Rational(49, 100)))
    # stationary FP: ∇·(f p) = Σ ∂_i∂_j (D_ij p), checked on log p directly
    p = sp.exp(logp)
    fp = sum(sp.diff(f[i] * p, v) for i, v in enumerate((x, y)))
    diff = sum(
        sp.diff(D[i, j] * p, vi, vj) for i, vi in enumerate((x, y)) for j, vj in enumerate((x, y))
    )
    assert sp.simplify((diff - fp) / p) == 0
    # the residual assembled from DynamicsTerms vanishes with the exact score and Jacobian
    P = np.random.default_rng(0).standard_normal((20, 2)) * 1.5
    c, e, Dn = DynamicsTerms(model, theta, out_dir)(P)
    r2 = (P**2).sum(1)
    k = 2.0 / 0.49 * np.exp(-r2 / 0.98) - 1.0
    s = k[:, None] * P
    dk = -2.0 / 0.49 / 0.49 * np.exp(-r2 / 0.98)  # ∂k/∂(r²)·2 → ∇k = dk x
    J = k[:, None, None] * np.eye(2) + dk[:, None, None] * P[:, :, None] * P[:, None, :]
    R = (s * c).sum(1) - np.einsum("ni,nij,nj->n", s, Dn, s) - np.einsum("nij,nij->n", Dn, J) + e
    np.testing.assert_allclose(R, 0.0, atol=1e-10)
    np.testing.assert_allclose(hopf_log_density(P), -r2 / 2 - 2 * np.exp(-r2 / 0.98))


def test_loss_gradient_matches_finite_differences(swirl, out_dir):
    """Tape gradient of the surrogate = FD of mean R² + FD of the score-function term (fixed X)."""
    model, theta = swirl
    dens = _random_density(model, theta, n_components=3, n_layers=2, seed=7)
    spec, params = dens.spec, dens.params
    X = fm.inverse_flow(spec, params, fm.sample_latent(spec, params, 40, np.random.default_rng(0)))
    terms = DynamicsTerms(model, theta, out_dir)(X)
    nodes = {k: tp.var(v) for k, v in params.items()}
    loss, R = residual_loss(spec, nodes, X, terms)
    names = list(params)
    grads = dict(zip(names, tp.backward(loss, [nodes[k] for k in names])))
    w = R**2 - np.mean(R**2)  # the fixed score-function weights at these parameters

    def objective(p):
        value = residual_loss(spec, p, X, terms)[0]  # value = mean R² (the measure term is 0)
        logq = fm.jets(spec, p, X, order=0)[0]
        return float(value) + float(np.mean(logq * w))

    h = 1e-6
    worst = 0.0
    for k in names:
        for idx in np.ndindex(params[k].shape):
            plus = {kk: vv.copy() for kk, vv in params.items()}
            minus = {kk: vv.copy() for kk, vv in params.items()}
            plus[k][idx] += h
            minus[k][idx] -= h
            fd = (objective(plus) - objective(minus)) / (2 * h)
            worst = max(worst, abs(fd - grads[k][idx]) / (1.0 + abs(fd)))
    assert worst < 1e-6


def test_tape_einsum_broadcast_and_lse_gradients():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    a, b = tp.var(A), tp.var(B)
    out = tp.total(tp.lse(tp.einsum("ij,jk->ik", a, b) * 0.5 + np.ones(5), axis=1) * np.arange(3.0))
    ga, gb = tp.backward(out, [a, b])
    f = lambda A_, B_: float(np.sum(np.log(np.exp(0.5 * A_ @ B_ + 1).sum(1)) * np.arange(3.0)))
    h = 1e-6
    for G, M, which in ((ga, A, 0), (gb, B, 1)):
        for idx in np.ndindex(M.shape):
            P_, M_ = M.copy(), M.copy()
            P_[idx] += h
            M_[idx] -= h
            args_p = (P_, B) if which == 0 else (A, P_)
            args_m = (M_, B) if which == 0 else (A, M_)
            assert abs((f(*args_p) - f(*args_m)) / (2 * h) - G[idx]) < 1e-6


# ----------------------------------------------------------------------------- training
def test_training_is_reproducible_from_the_seed(swirl, out_dir):
    model, theta = swirl
    kw = dict(
        architecture=Architecture(n_components=4, n_layers=1, n_hidden=4),
        training=Training(n_steps=25, n_points=64),
        start=Start(n_chains=2000),
        out_dir=out_dir,
        warn=False,  # 25 steps cannot converge: the flag is checked below instead
    )
    a = ds.density_from_dynamics(model, theta, seed=11, **kw)
    b = ds.density_from_dynamics(model, theta, seed=11, **kw)
    c = ds.density_from_dynamics(model, theta, seed=12, **kw)
    assert a.loss_history.shape == (25,) and not a.converged
    assert np.array_equal(a.loss_history, b.loss_history)
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    assert not np.array_equal(a.loss_history, c.loss_history)
    text = repr(a)
    assert "swirl_bistable" in text and "steps=25" in text and "components=4" in text


def test_theta_by_dict_or_nominal_gives_the_same_training(swirl, out_dir):
    model, theta = swirl
    kw = dict(
        architecture=Architecture(n_components=3, n_layers=0),
        training=Training(n_steps=5, n_points=32),
        start=Start(n_chains=2000),
        out_dir=out_dir,
        warn=False,
    )
    a = ds.density_from_dynamics(model, {"k": 0.8, "g": 1.5}, progress=True, **kw)
    b = ds.density_from_dynamics(model, None, **kw)  # model.nominal
    assert np.array_equal(a.loss_history, b.loss_history)
    # the residual method agrees with the training residual at the same points
    P = a.sample(50, seed=0)
    terms = DynamicsTerms(model, a.theta, out_dir)(P)
    np.testing.assert_allclose(
        a.residual(P), residual_loss(a.spec, a.params, P, terms)[1], rtol=1e-12
    )
    np.testing.assert_allclose(a.prob(P), np.exp(a.log_prob(P)))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(theta=[1.0]), "expected 2 values"),
        (dict(theta={"k": 1.0}), "no value for parameter 'g'"),
        (dict(theta={"k": 1.0, "g": 1.0, "zz": 1.0}), "'zz' is not a parameter"),
        (dict(training=dict(n_steps=0)), "n_steps must be at least 1"),
        (dict(architecture=dict(n_components=2.5)), "n_components must be an integer"),
        (dict(architecture=dict(n_layers=-1)), "n_layers must be at least 0"),
        (dict(training=dict(learning_rate=-1.0)), "learning_rate must be positive"),
        (dict(training=dict(final_learning_rate=0.0)), "final_learning_rate must be positive"),
        (
            dict(training=dict(final_learning_rate=0.5)),
            r"final_learning_rate \(0.5\) must not exceed learning_rate",
        ),
        (dict(init="histogram"), "init must be 'simulation', 'blob' or an"),
        (dict(init=np.zeros((5, 2))), r"init: need at least \d+ samples"),
        (dict(init=np.zeros((100, 3))), r"init: expected shape \(M, 2\)"),
        (dict(architecture=dict(tail="yes")), "tail must be True or False"),
        (dict(training=dict(anchor=-1.0)), "anchor must be non-negative"),
        (dict(training=dict(tol=-1e-3)), "tol must be non-negative"),
        (dict(training=dict(rtol=1.5)), r"rtol must be in \(0, 1\)"),
        (dict(training=dict(window=10)), "window must be at least 50"),
        (dict(training=dict(restarts=-1)), "restarts must be at least 0"),
        (dict(start=dict(center=[0.0, 0.0, 1.0])), r"Start.center: expected 2 values.*got 3"),
        (dict(start=dict(center=[[0.0], [1.0]])), r"Start.center: .*got shape \(2, 1\)"),
        (dict(start=dict(center=[0.0, np.inf])), "Start.center: contains NaN or inf"),
        (dict(start=dict(scale=0.0)), "Start.scale must be positive"),
        (dict(start=dict(n_chains=50)), "Start.n_chains must be at least 100"),
        (dict(seed=-1), "seed must be at least 0"),
        (dict(progress="yes"), "progress must be True, False or None"),
        (dict(warn="no"), "warn must be True or False, got 'no'"),  # (was read as True)
    ],
)
def test_bad_arguments_raise_named_errors(swirl, out_dir, kwargs, match):
    """Each bad setting is refused with a message naming it — for a field of an option object
    as soon as the object is built, before any work."""
    model, theta = swirl
    kwargs = dict(kwargs)
    th = kwargs.pop("theta", theta)
    fields = {"training": {"n_steps": 1, "n_points": 8, **kwargs.pop("training", {})}}
    fields.update({k: kwargs.pop(k) for k in ("architecture", "start") if k in kwargs})
    classes = {"training": Training, "architecture": Architecture, "start": Start}
    with pytest.raises(ds.DynosedError, match=match):
        options = {k: classes[k](**v) for k, v in fields.items()}
        ds.density_from_dynamics(model, th, out_dir=out_dir, **options, **kwargs)


@pytest.mark.parametrize("name", ["architecture", "training", "start"])
def test_options_must_be_option_objects(swirl, name):
    """None means the defaults; a dict, or another option class, is refused naming the keyword
    and the class to build (nothing is trained)."""
    model, theta = swirl
    cls = {"architecture": Architecture, "training": Training, "start": Start}[name]
    with pytest.raises(
        ds.DataError, match=rf"{name} must be a dynosed_sym\.density\..*{cls.__name__}"
    ):
        ds.density_from_dynamics(model, theta, **{name: {"n_steps": 5}})
    other = Training() if name != "training" else Start()
    with pytest.raises(ds.DataError, match=rf"{name} must be a .*{cls.__name__} or None, got"):
        ds.density_from_dynamics(model, theta, **{name: other})


def test_option_objects_are_frozen_and_replaceable():
    """Defaults are the documented ones; fields are stored checked; replace() builds a variant
    (and checks it again); the objects cannot be changed in place."""
    import dataclasses

    t = Training()
    assert (t.n_steps, t.n_points, t.learning_rate, t.final_learning_rate) == (
        3000,
        512,
        0.02,
        1.25e-3,
    )
    assert (t.anchor, t.tol, t.rtol, t.window, t.restarts) == (3e-2, 1e-4, 0.3, 200, 1)
    assert Architecture() == Architecture(16, 2, 8, True)
    assert Start() == Start(None, 1.0, 20000)
    longer = dataclasses.replace(t, n_steps=6000.0)
    assert longer.n_steps == 6000 and type(longer.n_steps) is int and longer.tol == t.tol
    with pytest.raises(ds.DataError, match="Training.n_steps must be at least 1"):
        dataclasses.replace(t, n_steps=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.n_steps = 10
    assert Start(center=np.array([[1, 2]])).center == (1.0, 2.0)
    assert Start(center=0.5) == Start(center=[0.5])
    assert Architecture(tail=np.bool_(False)).tail is False


def test_flat_keywords_give_the_same_density_as_the_option_objects(swirl, out_dir):
    """Every flat keyword of the earlier signature, at a value other than its default, still
    works — with a FutureWarning that spells the option objects — and gives bitwise the density
    those objects give."""
    model, theta = swirl
    old = dict(
        n_components=4,
        n_layers=1,
        n_hidden=4,
        tail=True,
        n_steps=60,
        n_points=64,
        learning_rate=0.03,
        final_learning_rate=0.005,
        anchor=0.05,
        tol=1e-5,
        rtol=0.4,
        window=100,
        restarts=0,
        init_center=[0.2, -0.1],
        init_scale=1.5,
        n_chains=2000,
    )
    new = dict(
        architecture=Architecture(n_components=4, n_layers=1, n_hidden=4, tail=True),
        training=Training(
            n_steps=60,
            n_points=64,
            learning_rate=0.03,
            final_learning_rate=0.005,
            anchor=0.05,
            tol=1e-5,
            rtol=0.4,
            window=100,
            restarts=0,
        ),
        start=Start(center=[0.2, -0.1], scale=1.5, n_chains=2000),
    )
    common = dict(seed=5, out_dir=out_dir, warn=False)
    with pytest.warns(FutureWarning, match=r"pass architecture=Architecture\(n_components=4"):
        a = ds.density_from_dynamics(model, theta, **common, **old)
    b = ds.density_from_dynamics(model, theta, **common, **new)
    assert a.settings == b.settings and a.settings["training"] == new["training"]
    assert np.array_equal(a.loss_history, b.loss_history) and a.loss_history.size == 60
    assert all(np.array_equal(a.params[k], b.params[k]) for k in b.params)
    assert a.diagnostic.residual_ratio == b.diagnostic.residual_ratio
    with pytest.raises(ds.DataError, match="n_steps given both as keywords and through training="):
        ds.density_from_dynamics(model, theta, training=Training(), n_steps=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_step'"):
        ds.density_from_dynamics(model, theta, n_step=5)


def test_bad_model_and_points(swirl):
    with pytest.raises(ds.ModelError, match="expected an SDEModel"):
        ds.density_from_dynamics("swirl", [1.0, 1.0])
    dens = _random_density(*swirl)
    with pytest.raises(ds.DataError, match=r"P: expected shape \(M, 2\)"):
        dens.log_prob(np.zeros((4, 3)))
    with pytest.raises(ds.DataError, match="NaN"):
        dens.score(np.array([[0.0, np.nan]]))
    with pytest.raises(ds.DataError, match="n must be at least 1"):
        dens.sample(0)
    assert dens.log_prob([0.5, 0.5]).shape == (1,)


def test_points_far_beyond_the_support_are_named(swirl):
    """Far out the learned tails overflow: with the tail maps, log p and the score at x = 1e100
    were NaN with only NumPy's RuntimeWarnings; now a DataError naming the row and the point. A
    log density that underflows to −∞ (density 0) is kept; ordinary points are unchanged."""
    dens = _random_density(*swirl, tail=True)
    P = np.array([[0.5, -0.5], [1e100, 0.0]])
    where = r"is not finite at row 1 \(x = 1e\+100, y = 0; 1 row\(s\) in all\)"
    for method, what in ((dens.log_prob, "log density"), (dens.score, "score")):
        with pytest.raises(ds.DataError, match=rf"P: the learned density's {what} " + where):
            method(P)
    with pytest.raises(ds.DataError, match="score Jacobian is not finite at row 1"):
        dens.score_divergence(P)
    assert dens.log_prob([[1e50, 0.0]])[0] == -np.inf  # (its score overflows there: refused)
    logp = fm.jets(dens.spec, dens.params, P[:1], order=0)[0]
    np.testing.assert_array_equal(dens.log_prob(P[:1]), logp)


@pytest.mark.slow
def test_limit_cycle_density_matches_exact_law(hopf, out_dir):
    model, theta = hopf
    dens = ds.density_from_dynamics(model, theta, seed=0, out_dir=out_dir)
    g = np.linspace(-5.0, 5.0, 251)
    h = g[1] - g[0]
    XX, YY = np.meshgrid(g, g)
    P = np.column_stack([XX.ravel(), YY.ravel()])
    q = dens.prob(P)
    r2 = XX.ravel() ** 2 + YY.ravel() ** 2
    p = np.exp(-r2 / 2 - 2.0 * np.exp(-r2 / 0.98))
    p /= p.sum() * h * h
    tv = 0.5 * np.abs(q - p).sum() * h * h
    integral = q.sum() * h * h
    print(
        f"limit cycle: TV = {tv:.4f}, integral = {integral:.6f}, "
        f"training {dens.train_seconds:.1f} s"
    )
    assert (
        tv < 0.03
    )  # issue 14: 0.010-0.016 over seeds 0-3 (the 1500-step blob start gave 0.018-0.023)
    assert abs(integral - 1.0) < 1e-3
    # (before issue 14 training started from a blob and the loss fell 20-fold; it now starts from a
    # mixture fitted to a short simulation, so the verdict of the convergence checks is asserted)
    assert dens.converged and dens.diagnostic.residual_ok and dens.diagnostic.sim_ok


@pytest.mark.slow
def test_non_gradient_density_matches_long_simulation(swirl, out_dir):
    model, theta = swirl
    x, y = model.state
    f = model.drift.subs(dict(zip(model.params, theta)))
    assert sp.simplify(sp.diff(f[0], y) - sp.diff(f[1], x)) != 0  # not a gradient field
    dens = ds.density_from_dynamics(model, theta, seed=0, out_dir=out_dir)
    X = ds.simulate(
        model,
        theta,
        400_000,
        dt=0.01,
        burn_in=3000,
        thin=25,
        n_chains=2000,
        seed=1,
        execution=ds.Execution(out_dir=out_dir),
    )
    edges = np.linspace(-5.0, 5.0, 41)
    H, _, _ = np.histogram2d(X[:, 0], X[:, 1], bins=[edges, edges])
    H /= X.shape[0]
    sub = 4  # learned mass per bin by a 4 × 4 midpoint rule
    w = (edges[1] - edges[0]) / sub
    c = edges[0] + w * (np.arange(40 * sub) + 0.5)
    XX, YY = np.meshgrid(c, c, indexing="ij")
    Q = (
        (dens.prob(np.column_stack([XX.ravel(), YY.ravel()])) * w * w)
        .reshape(40, sub, 40, sub)
        .sum((1, 3))
    )
    tv = 0.5 * (np.abs(Q - H).sum() + abs(H.sum() - Q.sum()))
    print(
        f"non-gradient model: TV to simulation histogram = {tv:.4f}, "
        f"training {dens.train_seconds:.1f} s"
    )
    # 0.04, not the 0.03: this histogram of 4·10⁵ samples has noise of its own (the sweep's
    # 'swirl' rows compare with 2·10⁶ samples and print that noise)
    assert tv < 0.04
    assert dens.converged
    # a non-gradient law carries a probability current J = q (f − D s) that is not zero
    P = dens.sample(2000, seed=3)
    current = dens.prob(P)[:, None] * (
        ds.compile_model(model, out_dir).drift(P, theta) - 0.4 * dens.score(P)
    )
    assert np.median(np.linalg.norm(current, axis=1)) > 1e-3


@pytest.mark.parametrize(
    "learning_rate",
    [
        pytest.param(
            200.0, id="flow-overflow"
        ),  # once a DataError blaming the drift for the inf points
        pytest.param(
            50.0, id="nan-gradient"
        ),  # once a ValueError: NaN mixture weights in rng.choice
        pytest.param(1000.0, id="singular-covariance"),  # once a bare numpy LinAlgError
    ],
)
def test_divergence_raises_training_diverged_naming_the_step(swirl, out_dir, learning_rate):
    """Step sizes far too large for this start: each once raised the wrong error (the ids).
    Now a run that diverges raises TrainingDivergedError naming the step; one that does not —
    which of the two happens is chaotic in the last bits of the arithmetic (at 200 this
    machine's BLAS ends unconverged where another overflowed) — returns flagged unconverged,
    with a ConvergenceWarning.  Never another error type, never an unflagged result."""
    import warnings

    from dynosed_sym.errors import ConvergenceWarning

    model, theta = swirl
    with np.errstate(all="ignore"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ds.density_from_dynamics(
                model,
                theta,
                architecture=Architecture(n_components=3, n_layers=2, n_hidden=4),
                training=Training(
                    n_steps=40,
                    n_points=32,
                    learning_rate=learning_rate,
                    final_learning_rate=learning_rate,
                    anchor=1e-2,  # the anchor at which these step sizes reached those failures
                ),
                start=Start(n_chains=2000),
                seed=0,
                out_dir=out_dir,
            )
        except TrainingDivergedError as exc:
            assert re.search(r"diverged at step \d+ \(", str(exc))
            return
    assert result.converged is False
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_drawing_leaves_the_matplotlib_backend_alone(tmp_path):
    """No pyplot and no matplotlib.use: a notebook's backend (here svg) survives drawing."""
    pytest.importorskip("matplotlib")
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        import matplotlib
        matplotlib.use("svg")
        import numpy as np
        from dynosed_sym.density import flow_mixture as fm
        from dynosed_sym.apps.demo.density_examples import hopf_log_density, hopf_oscillator
        from dynosed_sym.apps.demo.density_figures import plot_density_comparison
        from dynosed_sym.density.train import LearnedDensity
        model, theta = hopf_oscillator()
        spec = fm.FlowMixtureSpec(2, 3, 1, 4)
        params = fm.init_params(spec, np.zeros(2), 2.0, np.random.default_rng(0))
        dens = LearnedDensity(model, theta, spec, params, np.array([1.0, 0.5, 0.2]), 0.0, {})
        fig = plot_density_comparison(dens, log_density=hopf_log_density, grid=41, path=sys.argv[1])
        canvas = type(fig.canvas).__name__
        print(matplotlib.get_backend(), "matplotlib.pyplot" in sys.modules, canvas)
    """)
    png = tmp_path / "g.png"
    out = subprocess.run(
        [sys.executable, "-c", code, str(png)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["svg", "False", "FigureCanvasAgg"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_figures(tmp_path, out_dir, monkeypatch):
    pytest.importorskip("matplotlib")
    from dynosed_sym.apps.demo.density_figures import plot_density_comparison

    model, theta = hopf_oscillator()
    dens = ds.density_from_dynamics(
        model,
        theta,
        training=Training(n_steps=20, n_points=64),
        start=Start(n_chains=2000),
        out_dir=out_dir,
        warn=False,
    )
    path = tmp_path / "f.png"
    fig = plot_density_comparison(dens, log_density=hopf_log_density, path=str(path))
    assert path.stat().st_size > 10_000 and len(fig.axes) >= 3
    with pytest.raises(ds.DynosedError, match="exactly one reference"):
        plot_density_comparison(dens)


def test_three_dimensional_model_derivatives_and_normalisation():
    x, y, z = sp.symbols("x y z", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x, y, z], [a], [-a * x, -y, -z], diffusion=1, name="density_3d")
    dens = _random_density(model, np.array([1.0]), n_components=3, n_layers=3, seed=5)
    assert [list(m) for m in dens.spec.masks] == [[1, 1, 0], [0, 0, 1], [1, 1, 0]]
    P = np.random.default_rng(0).standard_normal((15, 3))
    fd = _central_differences(dens.log_prob, P, axis=1)
    np.testing.assert_allclose(dens.score(P), fd, rtol=1e-6, atol=1e-7)
    fdj = _central_differences(dens.score, P, axis=2)
    np.testing.assert_allclose(dens.score_jacobian(P), fdj, rtol=1e-6, atol=1e-7)
    # normalisation by importance sampling from the model itself: E_q[1/q · q] = 1 is trivial, so
    # use a broad Gaussian proposal instead
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((100_000, 3)) * 3.0
    logg = -0.5 * (Z**2).sum(1) / 9.0 - 1.5 * np.log(2 * np.pi * 9.0)
    w = np.exp(dens.log_prob(Z) - logg)
    assert abs(w.mean() - 1.0) < 5 * w.std() / np.sqrt(w.size) + 1e-3


def test_one_dimensional_ou_density(out_dir):
    x = sp.Symbol("x", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a], [-a * x], diffusion=sp.Rational(1, 2), name="density_ou1")
    dens = ds.density_from_dynamics(
        model,
        [2.0],
        architecture=Architecture(n_components=3),
        training=Training(n_steps=300, n_points=256),
        out_dir=out_dir,
    )
    assert dens.spec.n_layers == 0  # no coupling in one dimension
    g = np.linspace(-4, 4, 2001)
    h = g[1] - g[0]
    q = dens.prob(g[:, None])
    p = np.exp(-(g**2) / 0.5) / np.sqrt(np.pi * 0.5)  # N(0, D/a) = N(0, 1/4)
    assert 0.5 * np.abs(q - p).sum() * h < 0.01
    # in one dimension a 1-D array is M points (a column), not one point
    np.testing.assert_array_equal(dens.prob(g), q)
    assert dens.score(g[:5]).shape == (5, 1)
    # Start.center: d values (a scalar or a one-element list here)
    for center in (0.5, [0.5]):
        one = ds.density_from_dynamics(
            model,
            [2.0],
            architecture=Architecture(n_components=2),
            training=Training(n_steps=1, n_points=8),
            start=Start(center=center),
            out_dir=out_dir,
            warn=False,  # one step: not converged, flagged (the argument is what is tested)
        )
        assert one.settings["start"].center == (0.5,) and not one.converged
    with pytest.raises(ds.DataError, match=r"Start.center: expected 1 value .*got 2"):
        ds.density_from_dynamics(
            model,
            [2.0],
            training=Training(n_steps=1, n_points=8),
            start=Start(center=[0.5, 1.0]),
            out_dir=out_dir,
        )


def test_tape_division_tanh_and_repeated_use():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((4, 3))
    a = tp.var(A)
    t = tp.tanh(a)
    out = tp.total(t / (a * a + 2.0) - t * np.arange(3.0) + tp.exp(-a))  # `a` used four times
    (g,) = tp.backward(out, [a])
    f = lambda M: float(
        np.sum(np.tanh(M) / (M * M + 2.0) - np.tanh(M) * np.arange(3.0) + np.exp(-M))
    )
    h = 1e-6
    for idx in np.ndindex(A.shape):
        P_, M_ = A.copy(), A.copy()
        P_[idx] += h
        M_[idx] -= h
        assert abs((f(P_) - f(M_)) / (2 * h) - g[idx]) < 1e-6


# ------------------------------------------------------------- issue 14: tails, start, checks
def test_tape_log_gradient():
    rng = np.random.default_rng(2)
    A = rng.random((3, 4)) + 0.5
    a = tp.var(A)
    (g,) = tp.backward(tp.total(tp.log(a * a + 1.0) * np.arange(4.0)), [a])
    np.testing.assert_allclose(g, 2 * A / (A * A + 1) * np.arange(4.0), rtol=1e-12)


def _tail_density(model, d, seed=4, gamma=0.7, n_layers=2):
    rng = np.random.default_rng(seed)
    W = np.eye(d) / 1.3 + 0.2 * np.tril(rng.standard_normal((d, d)), -1)
    spec = fm.FlowMixtureSpec(
        d, 4, n_layers, 5, tail=True, center=0.3 * rng.standard_normal(d), whiten=W
    )
    p = fm.init_params(spec, np.zeros(d), 1.0, rng)
    p["tail_log_gamma"] = np.array([np.log(gamma)])
    p["tail_log_gamma_axes"] = np.log(0.2 + rng.random(d))  # per-axis map switched on as well
    for l in range(spec.n_layers):
        p[f"A{l}"] = 0.3 * rng.standard_normal(p[f"A{l}"].shape)
        p[f"B{l}"] = 0.3 * rng.standard_normal(p[f"B{l}"].shape)
    p["log_weights"] = rng.standard_normal(4)
    return LearnedDensity(
        model, np.array([1.0] * len(model.params)), spec, p, np.array([]), 0.0, {}
    )


@pytest.mark.parametrize("d", [1, 2, 3])
def test_tail_map_derivatives_inverse_and_normalisation(d):
    xs = sp.symbols(" ".join(f"x{i}" for i in range(d)), real=True, seq=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel(list(xs), [a], [-a * v for v in xs], diffusion=1, name=f"density_tail{d}")
    dens = _tail_density(model, d)
    P = np.random.default_rng(0).standard_normal((15, d)) * 1.5
    np.testing.assert_allclose(
        dens.score(P), _central_differences(dens.log_prob, P, axis=1), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        dens.score_jacobian(P), _central_differences(dens.score, P, axis=2), rtol=1e-5, atol=1e-5
    )
    xi = fm.sample_latent(dens.spec, dens.params, 500, np.random.default_rng(1))
    x = fm.inverse_flow(dens.spec, dens.params, xi)
    np.testing.assert_allclose(fm._flow_jets(dens.spec, dens.params, x)[0], xi, atol=1e-10)
    np.testing.assert_allclose(fm.forward_flow(dens.spec, dens.params, x), xi, atol=1e-10)
    if d <= 2:  # normalised: quadrature
        g = np.linspace(-8, 8, 20001 if d == 1 else 801)
        h = g[1] - g[0]
        G = np.meshgrid(*([g] * d), indexing="ij")
        q = dens.prob(np.column_stack([c.ravel() for c in G]))
        assert abs(q.sum() * h**d - 1.0) < 1e-6


def test_tail_map_gives_quartic_tails():
    """One latent Gaussian behind the tail map alone: log q(x) → −γ|Wx|⁴/(2σ²) far out."""
    x, y = sp.symbols("x y", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x, y], [a], [-a * x, -a * y], diffusion=1, name="density_quartic")
    spec = fm.FlowMixtureSpec(2, 1, 0, 2, tail=True, whiten=np.eye(2) / 0.8)
    p = fm.mixture_params(
        spec,
        np.zeros((1, 2)),
        [1.0],
        0.5 * np.eye(2),
        np.random.default_rng(0),
        log_gamma=np.log(0.3),
        log_gamma_axes=np.full(2, -40.0),
    )  # radial map only
    dens = LearnedDensity(model, np.array([1.0]), spec, p, np.array([]), 0.0, {})
    r = np.array([20.0, 40.0])
    P = np.column_stack([r, r]) / np.sqrt(2)
    u4 = (r / 0.8) ** 4
    lq = dens.log_prob(P)
    slope = (lq[1] - lq[0]) / (u4[1] - u4[0])  # d log q / d|u|⁴ → −γ / (2σ²) = −0.3
    assert abs(slope + 0.3) < 0.01


def test_loss_gradient_with_tail_map_matches_finite_differences(swirl, out_dir):
    model, theta = swirl
    dens = _tail_density(model, 2, seed=9, n_layers=1)
    spec, params = dens.spec, dens.params
    X = fm.inverse_flow(spec, params, fm.sample_latent(spec, params, 30, np.random.default_rng(0)))
    terms = DynamicsTerms(model, theta, out_dir)(X)
    nodes = {k: tp.var(v) for k, v in params.items()}
    loss, R = residual_loss(spec, nodes, X, terms)
    grads = dict(zip(params, tp.backward(loss, [nodes[k] for k in params])))
    w = R**2 - np.mean(R**2)

    def objective(p):
        return float(residual_loss(spec, p, X, terms)[0]) + float(
            np.mean(fm.jets(spec, p, X, order=0)[0] * w)
        )

    h = 1e-6
    for k in ("tail_log_gamma", "tail_log_gamma_axes", "precision_chol", "A0", "centroids"):
        for idx in list(np.ndindex(params[k].shape))[:6]:
            plus = {kk: vv.copy() for kk, vv in params.items()}
            minus = {kk: vv.copy() for kk, vv in params.items()}
            plus[k][idx] += h
            minus[k][idx] -= h
            fd = (objective(plus) - objective(minus)) / (2 * h)
            assert abs(fd - grads[k][idx]) < 1e-5 * (1 + abs(fd)), (k, idx)


def test_tied_mixture_em_recovers_a_known_mixture():
    from dynosed_sym.density.init import fit_tied_mixture

    rng = np.random.default_rng(0)
    mu = np.array([[-2.0, 0.0], [2.0, 1.0]])
    S = np.array([[0.5, 0.2], [0.2, 0.3]])
    k = rng.random(20000) < 0.3
    Z = (
        np.where(k[:, None], mu[0], mu[1])
        + rng.standard_normal((20000, 2)) @ np.linalg.cholesky(S).T
    )
    m, w, C, _ = fit_tied_mixture(Z, 2, np.random.default_rng(1))
    order = np.argsort(m[:, 0])
    np.testing.assert_allclose(m[order], mu, atol=0.03)
    np.testing.assert_allclose(w[order], [0.3, 0.7], atol=0.01)
    np.testing.assert_allclose(C, S, atol=0.02)


def test_simulation_start_reaches_the_ou_law_with_a_step_from_the_drift():
    from dynosed_sym.density.init import simulation_start, tail_exponent

    x = sp.Symbol("x", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a], [-a * x], diffusion=sp.Rational(1, 2), name="density_ou1")
    st = simulation_start(model, np.array([4.0]), Start(center=[3.0], scale=0.1), seed=0)
    assert st.equilibrated
    assert st.dt == pytest.approx(0.02 / 4.0, rel=1e-3)  # κ = |∂f/∂x| = 4
    X = st.samples[:, 0]
    var = 0.5 / 4.0  # D/a
    assert abs(X.mean()) < 4 * np.sqrt(var / st.n_chains)
    assert abs(X.var() / var - 1.0) < 0.03  # Euler–Maruyama bias a·dt/2 = 1 %, noise ≈ 0.5 %
    terms = DynamicsTerms(model, np.array([4.0]))
    assert tail_exponent(terms, np.zeros(1), np.eye(1), np.random.default_rng(0)) == pytest.approx(
        1.0, abs=1e-6
    )
    cubic = ds.SDEModel([x], [a], [a * x - x**3], diffusion=sp.Rational(1, 5), name="density_dw1_t")
    m = tail_exponent(
        DynamicsTerms(cubic, np.array([1.0])), np.zeros(1), np.eye(1), np.random.default_rng(0)
    )
    assert m == pytest.approx(np.log2(60.0 / 6.0))  # |x − x³| from 6 at x = 2 to 60 at x = 4


def test_residual_ratio_vanishes_at_the_exact_law_only(out_dir):
    from dynosed_sym.density.diagnostics import residual_ratio

    x = sp.Symbol("x", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a], [-a * x], diffusion=sp.Rational(1, 2), name="density_ou1")
    terms = DynamicsTerms(model, np.array([2.0]), out_dir)
    spec = fm.FlowMixtureSpec(1, 1, 0, 1)
    X = np.random.default_rng(0).standard_normal((2000, 1)) * 0.5
    for var, small in ((0.25, True), (0.3, False)):  # exact law N(0, D/a = 1/4), then a wrong one
        p = fm.mixture_params(spec, np.zeros((1, 1)), [1.0], [[var]], np.random.default_rng(0))
        rho = residual_ratio(spec, p, terms, X)[0]
        assert (rho < 1e-20) if small else (rho > 1e-3)


def test_residual_ratio_oracle_on_a_non_normal_ou(out_dir):
    """ρ at the exact law of a 2-D non-normal OU (Σ from SciPy's Lyapunov solver, written as a
    one-component density) is 0; it grows with the error of an inflated Σ and flags a 50 %
    inflation and the law one gets by ignoring the rotation (Σ = D for the diagonal part of the
    drift).  ρ is scale-free: rescaling time (f, D → λf, λD) leaves it unchanged.  (A 30 %
    inflation gives ρ ≈ 0.011, below the threshold: a global scale error is the simulation
    check's job — docs/density.md.)"""
    from scipy.linalg import solve_continuous_lyapunov

    from dynosed_sym.density.diagnostics import RESIDUAL_RATIO_THRESHOLD, residual_ratio

    x, y, k = sp.symbols("x y k", real=True)
    M = np.array([[-1.0, 2.0], [0.0, -1.0]])  # non-normal: the rotation couples the axes
    D = np.diag([0.5, 0.25])

    def model(lam):
        drift = [lam * (-x + k * y), lam * (-y)]
        diffusion = lam * sp.diag(sp.Rational(1, 2), sp.Rational(1, 4))
        return ds.SDEModel([x, y], [k], drift, diffusion, name=f"density_ou2_nonnormal_{lam}")

    Sigma = solve_continuous_lyapunov(M, -2.0 * D)  # M Σ + Σ Mᵀ = −2D
    spec = fm.FlowMixtureSpec(2, 1, 0, 1)
    X = np.random.default_rng(0).multivariate_normal(np.zeros(2), Sigma, 4000)

    def rho(cov, scale=1):
        terms = DynamicsTerms(model(scale), np.array([2.0]), out_dir)
        p = fm.mixture_params(spec, np.zeros((1, 2)), [1.0], cov, np.random.default_rng(0))
        return residual_ratio(spec, p, terms, X)[0]

    assert rho(Sigma) < 1e-20
    inflated = [rho(c * Sigma) for c in (1.1, 1.3, 1.5, 2.0)]
    assert np.all(np.diff(inflated) > 0)
    assert inflated[0] < RESIDUAL_RATIO_THRESHOLD < inflated[2]
    assert rho(D) > RESIDUAL_RATIO_THRESHOLD
    assert rho(1.3 * Sigma, scale=7) == pytest.approx(inflated[1], rel=1e-10)


def test_sim_check_flags_mass_in_the_wrong_well(out_dir):
    """The soft-cell TV to the simulation sees a shift of mass between wells (which R cannot)."""
    from dynosed_sym.apps.demo.density_examples import double_well_1d
    from dynosed_sym.density.diagnostics import sim_tv
    from dynosed_sym.density.init import simulation_start, starting_mixture

    model, theta = double_well_1d(1.0 / 12.0)  # barrier 3 D
    st = simulation_start(model, theta, Start(n_chains=4000), seed=0, out_dir=out_dir)
    assert (
        abs((st.samples > 0).mean() - 0.5) < 0.03
    )  # symmetric law: half the mass per well (s.e. 0.008)
    terms = DynamicsTerms(model, theta, out_dir)
    spec, p0, _ = starting_mixture(
        st.samples,
        Architecture(n_components=8, n_layers=0, n_hidden=1),
        np.random.default_rng(0),
        terms_of=terms,
    )
    rng = np.random.default_rng(1)
    tv0, noise = sim_tv(spec, p0, spec, p0, st.samples, st.n_chains, rng)
    shifted = {k: v.copy() for k, v in p0.items()}
    right = fm.forward_flow(spec, p0, np.zeros((1, 1)))[0, 0] < p0["centroids"][:, 0]
    shifted["log_weights"][right] += np.log(1.5)  # right well 50 % → 60 %
    tv1, _ = sim_tv(spec, shifted, spec, p0, st.samples, st.n_chains, rng)
    assert tv0 < 0.01 and noise < 0.01
    assert 0.08 < tv1 < 0.12


def test_short_run_is_flagged_and_warned(swirl, out_dir):
    model, theta = swirl
    short = dict(training=Training(n_steps=60, n_points=64), start=Start(n_chains=2000))
    with pytest.warns(ConvergenceWarning, match="stopping rule did not fire within n_steps=60"):
        dens = ds.density_from_dynamics(model, theta, seed=0, out_dir=out_dir, **short)
    assert dens.converged is False
    dg = dens.diagnostic
    assert dg.stop_reason == "n_steps" and dg.steps == 60 and len(dg.runs) == 1
    assert dg.simulation["equilibrated"] and dg.sim_tv is not None
    text = repr(dens)
    assert "converged=False" in text and "residual_ratio=" in text and "sim_tv=" in text
    assert "stopped by: n_steps" in str(dg)
    quiet = ds.density_from_dynamics(model, theta, seed=0, out_dir=out_dir, warn=False, **short)
    assert quiet.converged is False
    assert np.array_equal(quiet.loss_history, dens.loss_history)


def test_model_without_parameters_simulates_and_trains_like_a_fixed_parameter(out_dir):
    """params=[] is a valid model: simulate and density_from_dynamics give what the same drift
    with a parameter fixed at 1 gives (same seed ⇒ same numbers), with theta None, [] or {}."""
    x, a = sp.symbols("x a", real=True)
    bare = ds.SDEModel([x], [], [x - x**3], diffusion=sp.Rational(1, 4), name="density_noparam")
    with_a = ds.SDEModel([x], [a], [a * x - x**3], diffusion=sp.Rational(1, 4), name="density_a")
    sim = dict(dt=0.01, burn_in=200, thin=5, n_chains=50, seed=4)
    sim["execution"] = ds.Execution(out_dir=out_dir)
    X0 = ds.simulate(bare, None, 500, **sim)
    np.testing.assert_allclose(X0, ds.simulate(with_a, [1.0], 500, **sim), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(X0, ds.simulate(bare, {}, 500, **sim))
    kw = dict(
        training=Training(n_steps=100, n_points=64),
        start=Start(n_chains=2000),
        seed=2,
        out_dir=out_dir,
        warn=False,
    )
    dens = ds.density_from_dynamics(bare, None, **kw)
    ref = ds.density_from_dynamics(with_a, {"a": 1.0}, **kw)
    assert dens.theta.shape == (0,)
    P = np.linspace(-2.0, 2.0, 9)[:, None]
    np.testing.assert_allclose(dens.log_prob(P), ref.log_prob(P), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(
        dens.loss_history, ds.density_from_dynamics(bare, [], **kw).loss_history
    )
    assert "converged=" in repr(dens)
