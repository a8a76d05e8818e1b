"""Profile intervals of drifts not affine in θ (dynosed_sym.solve.profile).

Oracles: a linear residual, whose profile is exactly quadratic (the profile interval is the
linearised one); a one-parameter residual with a closed-form profile; a two-parameter banana
whose profile is checked against SciPy's scalar minimiser at every traced point; the dense
evaluation against the fill's; and fits of a Michaelis–Menten model with a constant K on exact
draws of its stationary law."""

from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.errors import DataError
from dynosed_sym.solve import profile as P

Q = 2.04  # about the 95 % Student-t quantile with 31 d.o.f.


class _Residual:
    """A problem of the interface profile_traces reads: ``model.n`` and
    ``evaluate(θ, cols) -> (r, ∂r/∂θ_cols)``; ``fun(θ) -> (r, J)``."""

    def __init__(self, n, fun, domain=None):
        self.model = SimpleNamespace(n=n)
        self.fun, self.domain = fun, domain

    def evaluate(self, theta, cols=None):
        if self.domain is not None and not self.domain(theta):
            raise DataError("the drift is not finite at sample 0")
        r, J = self.fun(np.asarray(theta, float))
        cols = list(range(self.model.n)) if cols is None else list(cols)
        return r, J[:, cols]


def _linear(A, b):
    return _Residual(A.shape[1], lambda th: (A @ th - b, A))


def _optimum(prob, n, lam=0.0):
    from scipy.optimize import least_squares

    def fun(th):
        return np.concatenate([prob.evaluate(th)[0], np.sqrt(lam) * th])

    return least_squares(fun, np.zeros(n), xtol=1e-15, ftol=1e-15, gtol=1e-15).x


@given(seed=st.integers(0, 10_000), n=st.integers(1, 4), width=st.floats(0.01, 10.0))
@settings(max_examples=30, deadline=None)
def test_a_quadratic_loss_keeps_the_linearised_interval(seed, n, width):
    """r = Aθ − b: the profile is exactly quadratic, so each side ends where the linearised
    interval does, whatever its width (the scale is the interval's own)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((12, n)) + 3 * np.eye(12, n)
    b = rng.standard_normal(12)
    prob = _linear(A, b)
    theta = _optimum(prob, n)
    half = width * (1 + rng.random(n))
    ci = np.column_stack([theta - half, theta + 0.7 * half])  # a skewed interval
    traces = P.profile_traces(prob, 0.0, theta, theta, ci, Q)
    for j, tr in enumerate(traces):
        lo, hi = tr.interval(Q)
        assert lo == pytest.approx(ci[j, 0], rel=1e-6, abs=1e-9 * width)
        assert hi == pytest.approx(ci[j, 1], rel=1e-6, abs=1e-9 * width)
        assert tr.converged and tr.lo.end == tr.hi.end == "reached"
    np.testing.assert_allclose(P.hull(ci, traces, Q), ci, rtol=1e-6, atol=1e-9 * width)


@given(g_hat=st.floats(-1.0, 1.0), half=st.floats(0.05, 0.6))
@settings(max_examples=30, deadline=None)
def test_one_parameter_profile_follows_the_loss(g_hat, half):
    """r(θ) = (e^θ − e^ĝ)·u: L − L0 ∝ (e^θ − e^ĝ)², so z(t) = FIRST·q·|e^t − e^ĝ| /
    |e^{t1} − e^ĝ| with t1 the first point; the bounds solve z = q in closed form.  The trace
    interpolates z linearly between its points: the true z at each bound is within 5 % of q."""
    u = np.array([1.0, -2.0, 0.5])
    prob = _Residual(
        1, lambda th: ((np.exp(th[0]) - np.exp(g_hat)) * u, np.exp(th[0]) * u[:, None])
    )
    theta = np.array([g_hat])
    tr = P.profile_traces(prob, 0.0, theta, theta, np.array([[g_hat - half, g_hat + half]]), Q)[0]
    lo, hi = tr.interval(Q)
    for side, t1 in ((lo, g_hat - P.FIRST_STEP * half), (hi, g_hat + P.FIRST_STEP * half)):
        z = P.FIRST_STEP * Q * abs(np.exp(side) - np.exp(g_hat)) / abs(np.exp(t1) - np.exp(g_hat))
        assert 0.95 * Q <= z <= 1.05 * Q
    assert hi - g_hat < g_hat - lo  # the loss rises faster above ĝ (e^θ convex): skewed left


def test_banana_profile_is_the_constrained_minimum():
    """r = [θ₀θ₁ − 1, 0.1(θ₁ − 1), 0.05 θ₀] (a curved valley θ₀θ₁ = 1): at every traced t the
    loss the trace recorded is the minimum over θ₁ found by SciPy's bounded scalar minimiser."""
    from scipy.optimize import minimize_scalar

    def fun(th):
        r = np.array([th[0] * th[1] - 1.0, 0.1 * (th[1] - 1.0), 0.05 * th[0]])
        J = np.array([[th[1], th[0]], [0.0, 0.1], [0.05, 0.0]])
        return r, J

    prob = _Residual(2, fun)
    theta = _optimum(prob, 2)
    L0 = float(fun(theta)[0] @ fun(theta)[0])
    ci = np.column_stack([theta - 0.3, theta + 0.3])
    traces = P.profile_traces(prob, 0.0, theta, theta, ci, Q)
    checked = 0
    for j, tr in enumerate(traces):
        for side in (tr.lo, tr.hi):
            # the scale c from the first point: z1 = FIRST_STEP·q
            t1 = side.t[0]
            for t, z in zip(side.t, side.z, strict=True):

                def Lp(v, t=t, j=j):
                    th = np.array([t, v]) if j == 0 else np.array([v, t])
                    r = fun(th)[0]
                    return r @ r

                best = minimize_scalar(
                    Lp, bounds=(-50, 50), method="bounded", options={"xatol": 1e-12}
                )
                ref1 = minimize_scalar(
                    lambda v, t1=t1: Lp(v, t1),
                    bounds=(-50, 50),
                    method="bounded",
                    options={"xatol": 1e-12},
                )
                c = (P.FIRST_STEP * Q) ** 2 / (ref1.fun - L0)
                assert z == pytest.approx(np.sqrt(max(best.fun - L0, 0.0) * c), rel=2e-2, abs=2e-2)
                checked += 1
    assert checked >= 8


def test_a_side_where_the_drift_is_undefined_ends_there():
    """r = tanh(20(θ − 1)), defined only for θ > 0.5 (a constant crossing a sample): the loss
    saturates below the quantile, so the lower side is traced out to the first undefined value,
    which ends the interval; without the domain that side would be open."""

    def fun(th):
        h = np.tanh(20 * (th[0] - 1.0))
        return np.array([h]), np.array([[20 * (1 - h * h)]])

    theta = np.array([1.0])
    ci = np.array([[0.9, 1.1]])
    tr = P.profile_traces(
        _Residual(1, fun, domain=lambda th: th[0] > 0.5), 0.0, theta, theta, ci, Q
    )[0]
    assert tr.lo.end == "undefined" and tr.lo.t[-1] <= 0.5 and np.isinf(tr.lo.z[-1])
    assert tr.interval(Q)[0] == tr.lo.t[-1]
    free = P.profile_traces(_Residual(1, fun), 0.0, theta, theta, ci, Q)[0]
    assert free.lo.end == "open" and free.interval(Q)[0] == -np.inf


def test_a_flat_side_is_open():
    """r = (θ₀ − 1)·e^{−θ₀}·u: the loss rises to a maximum at θ₀ = 2 and flattens towards 0
    above it; where the linearised interval (±0.5) needs more than that rise (z at most 1.7 at
    the maximum), there is no upper bound."""
    u = np.array([1.0, 1.0])

    def fun(th):
        e = np.exp(-th[0])
        return (th[0] - 1.0) * e * u, ((1.0 - (th[0] - 1.0)) * e * u)[:, None]

    prob = _Residual(1, fun)
    theta = np.array([1.0])
    tr = P.profile_traces(prob, 0.0, theta, theta, np.array([[0.5, 1.5]]), Q)[0]
    assert tr.hi.end == "open" and tr.interval(Q)[1] == np.inf
    assert np.isfinite(tr.interval(Q)[0])


def _mm_model():
    x = sp.Symbol("x", real=True)
    k, v, K = sp.symbols("k v K", real=True)
    drift = [k - v * x / (K + x)]
    D = [(1 + 2 * x / (1 + x)) / 40]
    return ds.SDEModel(
        [x], [k, v, K], drift, D, name="profile_mm", nominal=dict(k=1.2, v=2.5, K=1.5)
    )


def _mm_draws(n, seed):
    """Exact draws of p ∝ exp(∫ f/D)/D for (k, v, K) = (1, 2, 1) (inverse CDF on a grid)."""
    u = np.linspace(1e-6, 8.0, 400_001)
    D = (1 + 2 * u / (1 + u)) / 40
    ratio = (1 - 2 * u / (1 + u)) / D
    phi = np.concatenate([[0.0], np.cumsum(0.5 * (ratio[1:] + ratio[:-1]) * np.diff(u))]) - np.log(
        D
    )
    w = np.exp(phi - phi.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(u))])
    cdf /= cdf[-1]
    return np.interp(np.random.default_rng(seed).random(n), cdf, u)[:, None]


@pytest.fixture(scope="module")
def mm(tmp_path_factory):
    return _mm_model(), ds.Execution(out_dir=str(tmp_path_factory.mktemp("gen_profile")))


def test_michaelis_menten_profile_reaches_the_truth(mm):
    """N = 2000 exact draws (seed 3005), K weakly identified: the linearised interval of k
    excludes its truth 1 ([0.35, 0.95] around 0.65, the estimate moved along the valley
    v ∝ K); the profile follows the valley and reaches it.  Every profiled interval contains the
    linearised one, and ``profile=False`` gives the linearised intervals back."""
    model, ex = mm
    X = _mm_draws(10_000, 3005)[:2000]
    kw = dict(features=ds.Features(seed=5), execution=ex)
    lin = ds.fit_global(model, X, solver=ds.Solver(profile=False), **kw)
    fit = ds.fit_global(model, X, **kw)
    ci, ci_lin = fit.conf_int(), lin.conf_int()
    np.testing.assert_array_equal(fit.theta, lin.theta)
    assert ci_lin[0, 1] < 1.0 <= ci[0, 1]
    assert np.all(ci[:, 0] <= ci_lin[:, 0]) and np.all(ci[:, 1] >= ci_lin[:, 1])
    assert lin.report.profile is None and fit.report.profile is not None
    assert "profile (drift not affine in θ)" in fit.summary()
    # other levels read off the same trace: nested, and each at least the linearised one
    ci90, ci90_lin = fit.conf_int(0.9), lin.conf_int(0.9)
    assert np.all(ci90[:, 0] >= ci[:, 0]) and np.all(ci90[:, 1] <= ci[:, 1])
    assert np.all(ci90[:, 0] <= ci90_lin[:, 0]) and np.all(ci90[:, 1] >= ci90_lin[:, 1])


def test_dense_evaluation_is_the_fills(mm):
    """GlobalProblem.dense(): the Stein mean and Jacobian from the held feature sines equal the
    fill's (one product instead of N·m sines), at several θ and column sets."""
    from dynosed_sym.assembly.features import draw_features
    from dynosed_sym.codegen.loading import compile_model
    from dynosed_sym.data.blocks import block_edges
    from dynosed_sym.solve.gradient import GlobalProblem

    model, ex = mm
    X = _mm_draws(3000, 1)
    cm = compile_model(model, ex.out_dir)
    prob = GlobalProblem(cm, X, draw_features(1, 256, 0.4, seed=0), block_edges(3000, 8))
    fast = prob.dense()
    assert prob.dense(max_bytes=8 * 3000 * 256 - 1) is None
    for theta in ([1.0, 2.0, 1.0], [0.3, 5.0, 2.5], [2.0, 0.1, 0.2]):
        for cols in (None, [1, 2], []):
            r1, J1 = prob.evaluate(np.array(theta), cols)
            r2, J2 = fast.evaluate(np.array(theta), cols)
            np.testing.assert_allclose(r2, r1, rtol=1e-11, atol=1e-13 * np.abs(r1).max())
            assert J2.shape == J1.shape
            if J1.size:
                np.testing.assert_allclose(J2, J1, rtol=1e-11, atol=1e-13 * np.abs(J1).max())


def test_solver_profile_flag_is_checked():
    with pytest.raises(DataError, match="profile"):
        ds.Solver(profile="yes")


def test_local_route_profiles_too(mm):
    """fit_local of the same model: the intervals are the hull of the linearised ones and the
    profile's (estimates unchanged), and profile=False gives the linearised ones."""
    model, ex = mm
    X = _mm_draws(10_000, 3005)[:2000]
    probes = ds.choose_probes(X, 20, method="kmeans", seed=5)
    fit = ds.fit_local(model, X, probes, execution=ex)
    lin = ds.fit_local(model, X, probes, solver=ds.Solver(profile=False), execution=ex)
    ci, ci_lin = fit.conf_int(), lin.conf_int()
    np.testing.assert_array_equal(fit.theta, lin.theta)
    assert fit.report.profile is not None and lin.report.profile is None
    assert np.all(ci[:, 0] <= ci_lin[:, 0]) and np.all(ci[:, 1] >= ci_lin[:, 1])
    assert np.any(ci != ci_lin)  # this data set's valley: k, v and K reach beyond


def test_a_runaway_corrected_fixed_point_falls_back_to_the_v_optimum(tmp_path):
    """a·e^{−bx} − g·x on exact draws (the held-out sweep's data set 12 at N = 2000): the
    corrected Gauss–Newton loop stopped at b = −107, a ≈ 0 (residual 10⁸², every direction
    unresolved, estimates (−0.001, −107, 0) with whole-line intervals).  That fixed point is not
    the U-statistic's trade against the V-statistic optimum, so the V-statistic optimum is
    reported with a ConvergenceWarning and a note; its intervals cover the truth."""
    from dynosed_sym.apps.bench.calibration_data import data_seed, draw
    from dynosed_sym.apps.bench.calibration_families import family

    model, truth, protocol = family("exp_rate")
    X = draw(model, truth, protocol, max(protocol.sizes), data_seed("exp_rate", 12))[:2000]
    with pytest.warns(ds.ConvergenceWarning, match="not the estimator's trade"):
        fit = ds.fit_global(
            model, X, features=ds.Features(seed=12), execution=ds.Execution(out_dir=str(tmp_path))
        )
    assert fit.info["gn_stop"] == "fell back" and not fit.converged
    ci = fit.conf_int()
    assert np.all((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
    assert np.all(np.abs(fit.theta) < 10)


def test_local_corrected_loop_out_of_the_drifts_range_falls_back(tmp_path):
    """The same model on the local route (the sweep's data set 2 at N = 2000, its 20 k-means
    probes): the loop's candidates overflowed the local residual (an SVD that did not converge),
    then its last iterate b = −197 overflowed the report.  Such candidates are refused and such a
    fixed point falls back to the V-statistic optimum: a finite fit, with the warning."""
    from dynosed_sym.apps.bench.calibration_data import data_seed, draw
    from dynosed_sym.apps.bench.calibration_families import family
    from dynosed_sym.apps.bench.calibration_sweep import _probes

    model, truth, protocol = family("exp_rate")
    X = draw(model, truth, protocol, max(protocol.sizes), data_seed("exp_rate", 2))[:2000]
    ex = ds.Execution(out_dir=str(tmp_path))
    with pytest.warns(ds.ConvergenceWarning, match="not the estimator's trade"):
        fit = ds.fit_local(model, X, _probes(X, protocol, 2), execution=ex)
    assert fit.info["gn_stop"] == "fell back"
    assert np.all(np.isfinite(fit.theta)) and np.all(np.abs(fit.theta) < 10)


def test_an_open_profile_labels_the_parameter_unbounded():
    """attach() on the flat-sided residual above: the interval shown is open above, and its
    identifiability label says so instead of the linearised interval's ``yes ±50%``."""
    from dataclasses import replace

    from dynosed_sym.solve.report import IdentifiabilityReport

    u = np.array([1.0, 1.0])

    def fun(th):
        e = np.exp(-th[0])
        return (th[0] - 1.0) * e * u, ((1.0 - (th[0] - 1.0)) * e * u)[:, None]

    fields = {f: None for f in IdentifiabilityReport.__dataclass_fields__}
    rep = IdentifiabilityReport(**fields)
    rep = replace(
        rep,
        param_names=["a"],
        ci=np.array([[0.5, 1.5]]),
        ci_level=0.95,
        dof=31.0,
        notes=[],
        strength=["yes ±50%"],
        status=["identified"],
        data_factor=np.array([np.nan]),
    )
    out = P.attach(rep, _Residual(1, fun), 0.0, np.array([1.0]), np.array([1.0]))
    assert out.ci[0, 1] == np.inf and out.strength == ["no (open profile)"]
    assert out.status == ["not identifiable"]  # the status the summary and to_frame read
    assert "no bound on the open side" in out.notes[-1]
