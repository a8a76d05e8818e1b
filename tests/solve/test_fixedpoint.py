"""Safeguarded Anderson acceleration of a fixed-point map (dynosed_sym.solve.fixedpoint), the
driver of the corrected Gauss–Newton loop.  Oracles: the fixed point of a linear map by a
linear solve, the Dottie number (cos x = x), and maps with no fixed point."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dynosed_sym.solve.fixedpoint import anderson_fixed_point

TOL = 1e-10


def _linear_map(eigenvalues, seed):
    """G(x) = Mx + c with the given eigenvalues (non-normal M) and its fixed point."""
    rng = np.random.default_rng(seed)
    n = len(eigenvalues)
    V = rng.standard_normal((n, n)) + 2 * np.eye(n)
    M = V @ np.diag(eigenvalues) @ np.linalg.inv(V)
    c = rng.standard_normal(n)
    return (lambda x: M @ x + c), np.linalg.solve(np.eye(n) - M, c)


@pytest.mark.parametrize(
    "eigenvalues",
    [
        [-0.71, 0.2, 0.0],  # the oscillation of the tanh fit (plain: 50 steps reach 7e-9)
        [-1.5, 0.3, 0.5],  # plain iteration diverges (an oscillation that grows)
        [0.99, -0.99, 0.5, 0.1],  # plain iteration: ~2300 steps to 1e-10
        [3.0, -2.0],  # expanding in every direction
    ],
)
def test_linear_maps_converge_to_their_fixed_point(eigenvalues):
    G, xstar = _linear_map(eigenvalues, seed=len(eigenvalues))
    x, info = anderson_fixed_point(G, np.zeros(len(eigenvalues)), 50, TOL)
    assert info["converged"], info
    # a linear problem: the multisecant step is exact once it holds n independent differences
    assert info["steps"] <= 2 * len(eigenvalues) + 4, info
    np.testing.assert_allclose(x, xstar, rtol=1e-8, atol=1e-8)


@settings(max_examples=40, deadline=None)
@given(
    eigenvalues=st.lists(
        st.floats(-3.0, 3.0).filter(lambda v: abs(v - 1.0) > 0.05), min_size=1, max_size=6
    ),
    seed=st.integers(0, 2**31),
)
def test_any_linear_map_without_eigenvalue_one(eigenvalues, seed):
    """Whatever the eigenvalues (not 1: then the fixed point is unique), the iteration either
    converges to the fixed point or says it did not."""
    G, xstar = _linear_map(eigenvalues, seed)
    x, info = anderson_fixed_point(G, np.ones(len(eigenvalues)), 60, TOL)
    if info["converged"]:
        scale = 1.0 + np.abs(xstar).max()
        cond = np.linalg.cond(np.eye(len(eigenvalues)) - _jacobian(G, len(eigenvalues)))
        assert np.abs(x - xstar).max() <= 1e-9 * scale * max(1.0, cond)
    else:
        assert info["steps"] == 60


def _jacobian(G, n):
    return np.column_stack([G(e) - G(np.zeros(n)) for e in np.eye(n)])


def test_dottie_number():
    """cos x = x: G' = −sin x* ≈ −0.67, the plain iteration oscillates and needs ~60 steps."""
    x, info = anderson_fixed_point(np.cos, np.array([1.0]), 50, TOL)
    assert info["converged"] and info["steps"] <= 10, info
    assert abs(x[0] - 0.7390851332151607) <= 1e-12


def test_already_at_the_fixed_point_is_one_evaluation():
    x, info = anderson_fixed_point(lambda x: 2.0 * x, np.zeros(3), 50, TOL)
    assert info == {
        "steps": 1,
        "converged": True,
        "step": 0.0,
        "accelerated": 0,
        "rejected": 0,
        "backtracked": 0,
        "stop": "converged",
        "first_step": 0.0,
    }
    assert np.array_equal(x, np.zeros(3))


def test_extrapolation_stays_in_the_reported_subspace():
    """A map that moves only the first two components (as the resolved estimator keeps θ's
    unresolved components): with the basis reported, the accelerated iterates keep the third
    component of the start exactly, and the first two converge to the fixed point."""
    G2, xstar = _linear_map([-0.9, 0.6], seed=3)
    basis = np.eye(3)[:, :2]

    def G(x):
        return np.r_[G2(x[:2]), x[2]], basis, None, 0.0

    x, info = anderson_fixed_point(G, np.array([0.0, 0.0, 0.37]), 50, TOL)
    assert info["converged"] and info["accelerated"] > 0, info
    assert x[2] == 0.37
    np.testing.assert_allclose(x[:2], xstar, rtol=1e-9)


def test_a_rising_merit_refuses_every_step():
    """A merit that rises at every evaluation refuses every step, extrapolated or plain: the plain
    step is halved until it is 2⁻²⁰ of the full step, and the iteration stops there, unconverged
    ("no descent"), at the start."""
    G1, _ = _linear_map([-1.5, 0.3], seed=4)
    calls = []

    def G(x):
        calls.append(1)
        return G1(x), None, float(len(calls)), 0.0

    x, info = anderson_fixed_point(G, np.zeros(2), 200, TOL)
    assert not info["converged"] and info["stop"] == "no descent", info
    assert info["accelerated"] == 0 and info["backtracked"] == 21 and info["steps"] == 22, info
    assert np.array_equal(x, np.zeros(2))


def _overshooting_newton(curvatures, scale, seed):
    """L(x) = ½(x − x*)ᵀH(x − x*) with its Newton step taken with the curvature underestimated
    ``scale``-fold along one direction: G(x) = x − H₀⁻¹∇L, G′ = I − H₀⁻¹H has the eigenvalue
    1 − scale there (below −1 for scale > 2: the plain step overshoots and raises L)."""
    rng = np.random.default_rng(seed)
    n = len(curvatures)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    H = Q @ np.diag(curvatures) @ Q.T
    H0 = H - (1.0 - 1.0 / scale) * curvatures[0] * np.outer(Q[:, 0], Q[:, 0])
    xstar = rng.standard_normal(n)

    def G(x):
        e = x - xstar
        return x - np.linalg.solve(H0, H @ e), None, 0.5 * e @ H @ e, 0.0

    return G, xstar


@pytest.mark.parametrize("scale", [2.5, 8.0, 40.0])
def test_overshooting_steps_are_shortened_until_the_merit_falls(scale):
    """A Gauss–Newton-type step that overshoots the minimum of its merit (G′ eigenvalue 1 − scale)
    is shortened until it lowers the merit; the iterates never raise it, and the iteration
    converges to the minimum."""
    G, xstar = _overshooting_newton([1.0, 3.0, 0.5], scale, seed=int(scale))
    accepted = []

    def recorded(x):
        out = G(x)
        accepted.append((x.copy(), out[2]))
        return out

    x, info = anderson_fixed_point(recorded, np.zeros(3), 60, TOL)
    assert info["converged"] and info["backtracked"] > 0, info
    np.testing.assert_allclose(x, xstar, rtol=1e-8, atol=1e-8)
    # the merit at the returned point is the smallest evaluated, and far below the start's
    merits = np.array([m for _, m in accepted])
    assert G(x)[2] <= merits.min() + 1e-12 and merits.min() < 1e-12 * merits[0]


def test_a_merit_falling_toward_infinity_is_a_runaway():
    """L(x) = 1/x₀ + (x₁ − 1)², x₀ > 0, has no minimiser; a step x₀ along x₀ (as large as the
    iterate: twice its Newton step x₀/2) runs off while L keeps falling and the step grows.  The
    iteration stops after RUNAWAY_STEPS such steps ("runaway"), not at max_steps, unconverged.
    With a step x₀/10 (smaller than RUNAWAY_REACH of the iterate) it runs to max_steps."""

    def merit(x):
        return (1.0 / x[0] if x[0] > 0 else np.inf) + (x[1] - 1.0) ** 2

    def G(x):  # its fixed point x₀ = 0 is where L is infinite (refused)
        return np.array([2.0 * x[0], 1.0]), None, merit(x), 0.0

    x, info = anderson_fixed_point(G, np.array([1.0, 0.0]), 50, TOL)
    assert not info["converged"] and info["stop"] == "runaway", info
    assert info["steps"] < 50 and info["step"] > info["first_step"], info
    assert x[0] > 1.0 and merit(x) < merit(np.array([1.0, 0.0]))

    def G_small(x):
        return np.array([1.1 * x[0], 1.0]), None, merit(x), 0.0

    x, info = anderson_fixed_point(G_small, np.array([1.0, 0.0]), 50, TOL)
    assert not info["converged"] and info["stop"] == "max_steps", info


@example(slope=-0.8, edge=1.5, start=-2.0)  # the first plain step lands at 3.4 > 1.5
@given(
    slope=st.floats(-0.9, -0.3),
    edge=st.floats(1.2, 3.0),
    start=st.floats(-3.0, -1.0),
)
@settings(max_examples=40, deadline=None)
def test_candidates_where_the_map_is_undefined_are_refused(slope, edge, start):
    """G(x) = 1 + slope·(x − 1) on x ≤ edge, undefined (NaN) beyond — a drift that overflows at
    the data past some parameter value.  From a start whose full step lands past the edge, the
    undefined candidate is refused like a rising one (the step halved) and the iteration reaches
    the fixed point 1; it used to accept the NaN and stop "not finite"."""

    def G(x):
        return np.where(x <= edge, 1.0 + slope * (x - 1.0), np.nan)

    x, info = anderson_fixed_point(G, np.array([start]), 60, TOL)
    assert info["converged"] and info["stop"] == "converged"
    assert abs(x[0] - 1.0) <= 1e-8
    lands = start + (1.0 + slope * (start - 1.0) - start)
    if lands > edge:
        assert info["backtracked"] >= 1


@pytest.mark.parametrize(
    "G",
    [
        lambda x: x + 1.0,  # a translation: no fixed point
        lambda x: x + 1.0 + 0.1 * np.sin(x),  # no fixed point, not affine
    ],
)
def test_no_fixed_point_is_reported_unconverged(G):
    x, info = anderson_fixed_point(G, np.zeros(2), 25, TOL)
    assert info["converged"] is False and info["steps"] == 25
    assert np.isfinite(x).all() and info["step"] > 0.5


def test_tanh_fit_converges_to_the_plain_iterations_fixed_point(tmp_path, monkeypatch):
    """Regression (test_fuzz.py::test_nonaffine_exact_law_and_a_zero_parameter, global route,
    a = 1.5, k = 1, seed 11549): the plain corrected Gauss–Newton iteration oscillates there
    (successive steps in ratio ≈ −0.71, the eigenvalue of G′ at the fixed point) and 50 steps
    left a step of 7·10⁻⁹, so the fit was flagged unconverged.  Accelerated, the loop converges
    in a few steps, to the fixed point of the plain iteration run to convergence (the oracle:
    the same map, iterated up to 500 times)."""
    from strategies import sample_1d, tanh_model

    import dynosed_sym as ds
    from dynosed_sym.routes import global_route
    from dynosed_sym.solve.gauss_newton import corrected_gauss_newton
    from dynosed_sym.solve.ustat import solve_system

    model = tanh_model()
    seed = 11549
    xs = sample_1d(lambda g: 1.5 * np.log(np.cosh(g)) - g**2 / 2, 2000, seed)
    X = np.column_stack([xs[:, 0], np.random.default_rng(seed).standard_normal(xs.shape[0])])
    calls = []

    def recorded(linearisation, theta0, lam, names=None, temper=True, **rule):
        calls.append((linearisation, np.array(theta0), lam, rule))
        return corrected_gauss_newton(
            linearisation, theta0, lam, names=names, temper=temper, **rule
        )

    monkeypatch.setattr(global_route, "corrected_gauss_newton", recorded)
    fit = ds.fit_global(
        model,
        X,
        features=ds.Features(n_features=64),
        solver=ds.Solver(theta0=[1.5, 1.0, 0.0]),
        execution=ds.Execution(out_dir=str(tmp_path)),
    )
    assert fit.converged and fit.info["gn_converged"] and fit.info["gn_steps"] <= 20, fit.info
    ((linearisation, theta0, lam, rule),) = calls

    def G(theta):
        est = solve_system(
            *linearisation(theta), lam, second_order=False, tikhonov=False, handover=False, **rule
        )
        VR = est.subspace  # the loop's step: no hand-over (its merit is the corrected loss)
        return est.theta_resolved + theta - VR @ (VR.T @ theta)

    theta, steps = theta0, []
    for _ in range(500):
        new = G(theta)
        steps.append(new - theta)
        theta = new
        if np.abs(steps[-1]).max() <= 1e-12 * (1 + np.abs(theta).max()):
            break
    assert 50 < len(steps) < 500
    ratio = steps[30] @ steps[31] / (steps[30] @ steps[30])
    assert -0.8 < ratio < -0.6  # the oscillation: G′ ≈ −0.71 along the slow direction
    # (the fixed point itself: not tempered towards the start)
    accelerated, _, info = corrected_gauss_newton(linearisation, theta0, lam, temper=False, **rule)
    assert info["converged"]
    plain = solve_system(*linearisation(theta), lam, **rule)
    rel = np.abs(accelerated.theta - plain.theta).max() / np.abs(plain.theta).max()
    print(f"steps {info['steps']} (plain {len(steps)}), ratio {ratio:.3f}, relative {rel:.1e}")
    np.testing.assert_allclose(accelerated.theta, plain.theta, rtol=1e-9)


def test_tanh_fit_without_a_finite_minimiser_says_so(tmp_path, monkeypatch):
    """Regression (test_fuzz.py::test_nonaffine_exact_law_and_a_zero_parameter, global route,
    a = 1.5, k = 0.5, start at the truth, seed 729013): the corrected loop used to stop at its
    50-step cap with a last step of 368, its accepted plain steps raising the corrected loss
    (4.50·10⁻⁴ → 7.14·10⁻⁴).  On these data the corrected loss has no finite minimiser: the
    oracle minimises it over a and e (which enter linearly) in NumPy at fixed k, and this profile
    falls all the way from the start's k to k → 0 (a → ∞ with a·k → 0.574: the linear drift,
    which the tanh model reaches only in the limit; the data's cubic coefficient has the sign
    tanh cannot give).  The loop now descends and says so: unconverged, before the cap, with a
    message naming the runaway, a flag, NOT CONVERGED in the summary and a ConvergenceWarning;
    the intervals at the last iterate's linearisation (finite, "identifiable", before) are the
    whole line."""
    from strategies import corrected_profile, sample_1d, tanh_model

    import dynosed_sym as ds
    from dynosed_sym.routes import global_route
    from dynosed_sym.solve.gauss_newton import GN_MAX_STEPS, corrected_gauss_newton

    a, k, seed = 1.5, 0.5, 729013
    xs = sample_1d(lambda g: a / k * np.log(np.cosh(k * g)) - g**2 / 2, 2000, seed)
    X = np.column_stack([xs[:, 0], np.random.default_rng(seed).standard_normal(xs.shape[0])])
    calls = []

    def recorded(linearisation, theta0, lam, **kw):
        out = corrected_gauss_newton(linearisation, theta0, lam, **kw)
        calls.append((linearisation, np.array(theta0), out[2]["last"]))
        return out

    monkeypatch.setattr(global_route, "corrected_gauss_newton", recorded)
    with pytest.warns(ds.ConvergenceWarning, match="appears to have no finite minimiser"):
        fit = ds.fit_global(
            tanh_model(),
            X,
            solver=ds.Solver(theta0=[a, k, 0.0]),
            features=ds.Features(n_features=64),
            execution=ds.Execution(out_dir=str(tmp_path)),
        )
    assert not fit.converged and "NOT CONVERGED" in fit.summary()
    assert fit.info["gn_stop"] == "runaway" and fit.info["gn_steps"] < GN_MAX_STEPS, fit.info
    assert np.isinf(fit.conf_int()).all() and "no finite minimiser" in fit.summary()
    assert np.isinf(fit.conf_int(level=0.5)).all()  # at every level
    assert all(st == "no (no minimiser)" for st in fit.report.strength)
    assert not fit.report.unique and np.isinf(fit.report.std_errors).all()
    ((linearisation, theta0, theta),) = calls
    # the last iterate is only where the loop noticed: the search's optimum is reported
    np.testing.assert_array_equal(fit.theta, theta0)
    # the oracle: the profile falls monotonically from the start's k (0.163) toward k → 0
    ks = theta0[1] * np.geomspace(1.0, 1e-3, 25)
    prof = [corrected_profile(linearisation, kk) for kk in ks]
    values = np.array([p[0] for p in prof])
    assert all(p[2] > 0 for p in prof)  # a strictly convex quadratic in (a, e) at each k
    assert np.all(np.diff(values) < 0), values
    limit = np.array([p[1][0] * kk for p, kk in zip(prof, ks)])  # a·k along the profile
    assert np.ptp(limit[-5:]) < 1e-3 * abs(limit[-1]) and 0.5 < limit[-1] < 0.65, limit
    # the loop went down that valley: k smaller and the loss lower than at the start
    assert 0 < theta[1] < theta0[1]
    assert corrected_profile(linearisation, theta[1])[0] < values[0]
