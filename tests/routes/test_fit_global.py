"""Global kernel-Stein fit: recovery, identifiability, consistency, FitResult, argument checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sympy as sp

import dynosed_sym as ds

OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])  # models/ou2d.py nominal, D = I


# --------------------------------------------------------------------------- Lorenz
def _lorenz_estimates(model, N, seeds):
    return np.array(
        [
            ds.fit_global(
                model, ds.simulate(model, model.nominal, N, seed=s), features=ds.Features(seed=s)
            ).theta
            for s in seeds
        ]
    )


def test_lorenz_n300_mean_of_20_draws_within_15_percent(models):
    m = models["lorenz"]
    est = _lorenz_estimates(m, 300, range(20))
    rel = est.mean(axis=0) / m.nominal - 1.0
    assert np.all(np.abs(rel) < 0.15), f"mean relative errors {dict(zip(m.param_names, rel))}"


@pytest.mark.slow
def test_lorenz_n5000_mean_of_20_draws_within_3_percent(models):
    m = models["lorenz"]
    est = _lorenz_estimates(m, 5000, range(100, 120))
    rel = est.mean(axis=0) / m.nominal - 1.0
    assert np.all(np.abs(rel) < 0.03), f"mean relative errors {dict(zip(m.param_names, rel))}"


def test_lorenz_fit_report(models):
    m = models["lorenz"]
    fit = ds.fit_global(m, ds.simulate(m, m.nominal, 2000, seed=7), features=ds.Features(seed=7))
    rep = fit.report
    assert rep.rank == 3 and rep.unique and rep.n_params == 3
    assert rep.free_params == [] and rep.null_space == []
    assert rep.consistent


# --------------------------------------------------------------------------- 2-D OU, exact samples
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ou_all_free_rank_3_null_space_m12_m21(models, ou_samples, seed):
    m = models["ou2d"]
    X = ou_samples(OU_M, 1.0, 30_000, seed)
    fit = ds.fit_global(m, X, features=ds.Features(seed=seed))
    rep = fit.report
    assert rep.n_params == 4
    assert rep.rank == 3 and not rep.unique
    assert rep.null_vectors.shape == (4, 1)
    # Σ = I here, so the divergence-free current direction is exactly M12 − M21
    v = rep.null_vectors[:, 0]
    v = v * np.sign(v[1])
    np.testing.assert_allclose(v, [0.0, 1 / np.sqrt(2), -1 / np.sqrt(2), 0.0], atol=0.05)
    assert sorted(rep.free_params) == ["M12", "M21"]
    assert len(rep.null_space) == 1
    combo = str(rep.null_space[0])
    assert "M12" in combo and "M21" in combo and "−" in combo
    # the identifiable combinations are recovered: the diagonal and M12 + M21 (Σ symmetric part)
    M11, M12, M21, M22 = fit.theta
    assert abs(M11 + 1) < 0.05 and abs(M22 + 1) < 0.05 and abs(M12 + M21) < 0.05
    assert rep.consistent
    text = fit.summary()
    assert "NOT identifiable" in text and "M12" in text


def test_ou_m12_only_recovered_within_2_percent(models, ou_samples):
    """M12 alone is identifiable and recovered within 2 % at N = 1e5.

    The single-draw sampling error of this estimator at N = 1e5 is ≈ 1.6 % (standard deviation
    over data draws, measured over 30 seeds; the random features contribute only ≈ 0.15 %), so
    a single draw exceeds 2 % about a third of the time by genuine sampling noise.  The test
    therefore checks the mean over 10 independent draws (standard error ≈ 0.5 %) against 2 %,
    and every single draw against 4 standard deviations (6.5 %).
    """
    m = models["ou2d_m12"]
    est = []
    for seed in range(10):
        fit = ds.fit_global(
            m, ou_samples(OU_M, 1.0, 100_000, seed), features=ds.Features(seed=seed)
        )
        assert fit.report.rank == 1 and fit.report.unique and fit.report.free_params == []
        est.append(fit.theta[0])
    rel = np.array(est) / 0.5 - 1.0
    assert abs(rel.mean()) < 0.02, f"mean relative error {rel.mean():.4f}; per draw {rel}"
    assert np.all(np.abs(rel) < 0.065), f"a single draw is off by more than 4 sd: {rel}"


@pytest.mark.slow
def test_ou_m12_error_shrinks_with_n(models, ou_samples):
    """Consistency: the RMS error over seeds shrinks like N^(-1/2) (factor ≈ 0.32 for 10×N)."""
    m = models["ou2d_m12"]

    def rms(N):
        fits = [
            ds.fit_global(m, ou_samples(OU_M, 1.0, N, 50 + s), features=ds.Features(seed=s))
            for s in range(8)
        ]
        err = [fit.theta[0] / 0.5 - 1 for fit in fits]
        return float(np.sqrt(np.mean(np.square(err))))

    small, large = rms(10_000), rms(100_000)
    assert large < 0.6 * small, f"RMS error {small:.4f} at N = 1e4 vs {large:.4f} at N = 1e5"
    fit = ds.fit_global(m, ou_samples(OU_M, 1.0, 1_000_000, 99), features=ds.Features(seed=0))
    assert abs(fit.theta[0] / 0.5 - 1) < 0.01


# --------------------------------------------------------------------------- limit cycle
@pytest.mark.parametrize("seed", [0, 1])
def test_limit_cycle_omega_free_a_c_identifiable(models, seed):
    m = models["limit_cycle"]
    # one sample per chain: independent samples (chains started at N(0, I), 10 time units of
    # burn-in)
    X = ds.simulate(m, m.nominal, 20_000, n_chains=20_000, burn_in=1000, thin=1, seed=seed)
    fit = ds.fit_global(m, X, features=ds.Features(seed=seed))
    rep = fit.report
    assert rep.rank == 2 and not rep.unique
    assert rep.free_params == ["omega"]
    assert "omega" in str(rep.null_space[0])
    assert abs(rep.null_vectors[2, 0]) > 0.95
    # a and c are nearly collinear here (σ₂ ≈ 10 × its noise), so the sampling error of each
    # is several per cent at this N; the loose bound only guards against gross errors.
    a, c, _ = fit.theta
    assert abs(a - 1.0) < 0.15 and abs(c - 1.0) < 0.15
    assert rep.consistent


def test_limit_cycle_exact_samples(models, radial_sampler):
    """Same verdict from exact samples of p ∝ exp((a r²/2 − c r⁴/4)/D), a = c = 1, D = 0.1."""
    m = models["limit_cycle"]
    X = radial_sampler(lambda r2: (r2 / 2 - r2**2 / 4) / 0.1, 40_000, seed=3)
    fit = ds.fit_global(m, X, features=ds.Features(seed=3))
    assert fit.report.rank == 2 and fit.report.free_params == ["omega"]
    a, c, _ = fit.theta
    assert abs(a - 1.0) < 0.05 and abs(c - 1.0) < 0.05


# --------------------------------------------------------------------------- structural dependency
def test_two_parameters_same_basis_function(sampler_1d):
    x = sp.Symbol("x", real=True)
    a, b, c = sp.symbols("a b c", real=True)
    model = ds.SDEModel(
        [x], [a, b, c], [a * x + b * x + c * x**3], diffusion=sp.Rational(1, 2), name="same_basis"
    )
    # a + b = −1, c = −1: p ∝ exp((−x²/2 − x⁴/4)/D)
    X = sampler_1d(lambda s: (-(s**2) / 2 - s**4 / 4) / 0.5, 20_000, seed=0)
    fit = ds.fit_global(model, X, features=ds.Features(seed=0))
    rep = fit.report
    assert rep.rank == 2 and not rep.unique
    v = rep.null_vectors[:, 0]
    v = v * np.sign(v[0])
    np.testing.assert_allclose(v, [1 / np.sqrt(2), -1 / np.sqrt(2), 0.0], atol=1e-8)
    assert sorted(rep.free_params) == ["a", "b"]
    combo = str(rep.null_space[0])
    assert combo in ("0.707·a − 0.707·b", "0.707·b − 0.707·a"), combo
    # the minimum-norm (Tikhonov) solution splits the shared coefficient equally
    ta, tb, tc = fit.theta
    assert abs(ta - tb) < 1e-8 * max(1.0, abs(ta))
    # the identifiable part equals the fit of the reduced model f = s·x + c·x³ on the same data
    reduced = ds.SDEModel(
        [x], [a, c], [a * x + c * x**3], diffusion=sp.Rational(1, 2), name="reduced"
    )
    red = ds.fit_global(reduced, X, features=ds.Features(seed=0))
    assert red.report.unique
    np.testing.assert_allclose([ta + tb, tc], red.theta, rtol=1e-3)
    # s = a + b and c are strongly anti-correlated in this model (σ₂/σ₁ ≈ 0.16): their sampling
    # error is ≈ 10 % at N = 2e4 (measured over seeds), so only a gross-error bound here
    assert abs(ta + tb + 1.0) < 0.3 and abs(tc + 1.0) < 0.3
    assert rep.consistent
    # the dependency is already visible in the symbols: U has two identical columns
    assert model.U[:, 0] == model.U[:, 1]


# --------------------------------------------------------------------------- misspecification
@pytest.mark.parametrize("seed", [0, 1])
def test_misspecified_model_is_inconsistent(models, seed):
    true = models["lorenz"]
    x, y, z = true.state
    sigma, rho, beta = true.params
    lacking = ds.SDEModel(
        [x, y, z],
        [sigma, rho, beta],
        [sigma * (y - x), x * (rho - z) - y, -beta * z],  # the x·y term is missing
        diffusion=sp.Rational(3, 10),
        name="lorenz_without_xy",
    )
    X = ds.simulate(true, true.nominal, 5000, seed=seed)
    with pytest.warns(ds.StationarityWarning, match="variance along z"):
        # its drift cannot balance Var(z) either
        bad = ds.fit_global(lacking, X, features=ds.Features(seed=seed))
    good = ds.fit_global(true, X, features=ds.Features(seed=seed))
    assert bad.info["stationarity"] != "stationary" and good.stationarity.verdict == "stationary"
    assert bad.report.consistent is False
    assert good.report.consistent is True
    assert bad.report.residual_ratio > 3 * good.report.residual_ratio
    assert "INCONSISTENT" in bad.summary()


# --------------------------------------------------------------------------- FitResult
@pytest.fixture(scope="module")
def lorenz_fit(models):
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 1000, seed=21)
    return m, X, ds.fit_global(m, X, features=ds.Features(seed=0))


def test_fit_result_fields(lorenz_fit):
    m, X, fit = lorenz_fit
    assert fit.theta.shape == (3,) and fit.A.shape == (2048, 3) and fit.b.shape == (2048,)
    assert fit.params == dict(zip(m.param_names, fit.theta.tolist()))
    assert list(fit.params) == ["sigma", "rho", "beta"]
    assert fit.n_samples == 1000 and fit.route == "global"
    assert fit.info["m"] == 2048 and fit.info["lam"] == 1e-6 and fit.info["seed"] == 0
    assert isinstance(fit.report, ds.IdentifiabilityReport)
    assert "rank=3/3" in repr(fit)


def test_fit_report_quantities(lorenz_fit):
    m, X, fit = lorenz_fit
    rep, A, b, lam = fit.report, fit.A, fit.b, fit.report.lam
    np.testing.assert_allclose(rep.singular_values, np.linalg.svd(A, compute_uv=False), rtol=1e-12)
    H = A.T @ A + lam * np.eye(3)
    np.testing.assert_allclose(rep.freeness, np.diag(np.linalg.inv(H)), rtol=1e-9)
    np.testing.assert_allclose(rep.freeness_normalised, lam * rep.freeness, rtol=1e-12)
    assert np.all((rep.freeness_normalised > 0) & (rep.freeness_normalised <= 1))
    # statistic="v" is the Tikhonov solve (the default: tests/solve/test_ustat.py)
    v = ds.fit_global(m, X, features=ds.Features(seed=0), solver=ds.Solver(statistic="v"))
    np.testing.assert_allclose(v.theta, np.linalg.solve(H, A.T @ b), rtol=1e-9)
    # one misspecification verdict: the residual is taken where the test is (the Tikhonov
    # solution, profiled along the resolved directions: here all three), its ratio is the
    # test's √T, and "consistent" is the test's p ≥ 0.01
    assert rep.misspec_profiled and not np.array_equal(rep.misspec_at, v.theta)
    np.testing.assert_allclose(rep.residual_norm, np.linalg.norm(A @ rep.misspec_at - b))
    assert rep.residual_norm >= np.linalg.norm(A @ v.theta - b)  # the Tikhonov one is smallest
    np.testing.assert_allclose(rep.residual_ratio**2, rep.misspec_stat, rtol=1e-12)
    assert rep.consistent == (rep.p_value >= 0.01)
    assert rep.singular_noise is not None and rep.singular_noise.shape == (3,)


def test_summary_names_every_parameter(models, model_points):
    for name in ("lorenz", "grn_bcell"):
        m = models[name]
        fit = ds.fit_global(
            m, model_points(m, 400, seed=1), features=ds.Features(n_features=256, seed=0)
        )
        for text in (
            fit.summary(),
            fit.summary(truth=m.nominal),
            fit.summary(truth=dict(zip(m.param_names, m.nominal))),
            fit.summary(truth=dict(zip(m.params, m.nominal))),
        ):
            for p in m.param_names:
                assert p in text, f"{p} missing from the summary of {name}"
            assert "rank" in text and m.name in text


@pytest.mark.parametrize("bootstrap", [5, "no", 0])
def test_summary_bootstrap_must_be_a_truth_value(lorenz_fit, bootstrap):
    """summary(bootstrap=5), meant as a number of replicates, and bootstrap="no" were read as
    True (200 replicates drawn and shown)."""
    _, _, fit = lorenz_fit
    with pytest.raises(ds.DataError, match="summary: bootstrap must be True or False, got "):
        fit.summary(bootstrap=bootstrap)
    assert "boot.se" not in fit.summary(bootstrap=np.bool_(False))


def test_report_bootstrap_and_intervals_check_their_arguments(lorenz_fit):
    """The report's own methods (FitResult's delegate to them): n_boot=0 raised a bare
    IndexError, level=2 NumPy's ValueError, theta of the wrong length a broadcast error."""
    _, _, fit = lorenz_fit
    rep = fit.report
    for kwargs, match in (
        (dict(n_boot=0), "n_boot must be at least 2"),
        (dict(level=2), "level must be between 0 and 1"),
        (dict(seed=-1), "seed must be at least 0"),
    ):
        with pytest.raises(ds.DataError, match=match):
            rep.bootstrap(**kwargs)
        with pytest.raises(ds.DataError, match=match):
            fit.bootstrap(**kwargs)
    with pytest.raises(ds.DataError, match="theta: expected 3 values, one per parameter"):
        rep.intervals(fit.theta[:2], 0.9)
    np.testing.assert_array_equal(rep.intervals(fit.theta, rep.ci_level), fit.conf_int())


def test_bootstrap_beyond_memory_is_refused_before_allocating(lorenz_fit, monkeypatch):
    """fit.bootstrap(n_boot=10**9) was a bare MemoryError (238 GiB of drawn blocks): now refused
    at once with the estimate, which covers the peak tracemalloc measures (the oracle is the
    allocator, not the formula)."""
    from conftest import traced_peak

    from dynosed_sym.assembly import memory

    _, _, fit = lorenz_fit
    A_blocks, b_blocks, counts = fit.report._blocks
    kept = fit.report.bootstrap_result
    try:
        monkeypatch.setattr(memory, "available_memory", lambda: 16 * 10**9)
        with pytest.raises(
            ds.DataError,
            match=r"^n_boot=1,000,000,000 would need about 328 GB of memory for the bootstrap "
            r"\(1,000,000,000 resamples × \(32 drawn blocks \+ 3 copies of 3 parameters\), "
            r"8 bytes each, and 4 copies of the kept per-block means, [0-9.]+ [kM]B\), more than "
            r"the 16 GB available; lower n_boot",
        ):
            fit.bootstrap(n_boot=10**9)
        with pytest.raises(ds.DataError, match=r"^n_boot=1,000,000,000 would need about 328 GB"):
            fit.report.bootstrap(n_boot=10**9)  # the report's own method too
        monkeypatch.undo()
        # block means too large for any n_boot: the message names them, not n_boot (review)
        with pytest.raises(ds.DataError, match=r"^the bootstrap would need .* whatever n_boot"):
            memory.check_bootstrap_memory(2, 3, 32, block_bytes=256 * 2**20, available=10**9)
        n_boot = 1000
        peak = traced_peak(lambda: fit.bootstrap(n_boot=n_boot))
        need = memory.bootstrap_bytes(n_boot, 3, counts.size, A_blocks.nbytes + b_blocks.nbytes)
        assert peak <= need < 2 * peak
    finally:
        fit.report.bootstrap_result = kept  # (the fixture is shared)


def test_summary_labels_the_bootstrap_at_its_own_level(lorenz_fit):
    """After conf_int(0.8, method="bootstrap") the summary showed that 80 % result under
    "bootstrap 95% CI" (the report's level)."""
    _, _, fit = lorenz_fit
    try:
        ci80 = fit.conf_int(0.8, method="bootstrap")
        text = fit.summary(bootstrap=True)
        assert "bootstrap 80% CI" in text and "bootstrap 95% CI" not in text
        assert fit.report.bootstrap_result.level == 0.8 and np.isfinite(ci80).all()
    finally:
        fit.report.bootstrap_result = None  # (the fixture is shared)


@pytest.mark.parametrize("n_features", [1, 2])
def test_fewer_features_than_parameters(lorenz_fit, n_features):
    m, X, _ = lorenz_fit
    fit = ds.fit_global(m, X, features=ds.Features(n_features=n_features, seed=0))
    rep = fit.report
    assert fit.A.shape == (n_features, 3)
    assert rep.rank <= n_features and not rep.unique
    assert len(rep.null_space) == 3 - rep.rank == rep.null_vectors.shape[1]
    assert rep.singular_values.shape == (3,) and np.all(np.isfinite(fit.theta))


def test_same_seed_same_result(lorenz_fit):
    m, X, fit = lorenz_fit
    again = ds.fit_global(m, X, features=ds.Features(seed=0))
    assert np.array_equal(again.theta, fit.theta) and np.array_equal(again.A, fit.A)
    other = ds.fit_global(m, X, features=ds.Features(seed=1))
    assert not np.array_equal(other.A, fit.A)
    np.testing.assert_allclose(other.theta, fit.theta, rtol=0.15)


def test_explicit_bandwidth_and_lambda(lorenz_fit):
    m, X, fit = lorenz_fit
    f2 = ds.fit_global(m, X, features=ds.Features(bandwidth=fit.info["bandwidth"], seed=0))
    np.testing.assert_allclose(f2.theta, fit.theta, rtol=1e-4)
    with pytest.warns(ds.StationarityWarning):  # a drift shrunk to ≈ 0 confines nothing
        heavy = ds.fit_global(
            m, X, solver=ds.Solver(lam=1e6, estimator="ridge"), features=ds.Features(seed=0)
        )
    assert np.linalg.norm(heavy.theta) < 0.1 * np.linalg.norm(fit.theta)  # shrunk towards 0
    # the resolved estimator (default) does not regularise the directions the data resolve
    assert np.array_equal(
        ds.fit_global(m, X, solver=ds.Solver(lam=1e6), features=ds.Features(seed=0)).theta,
        fit.theta,
    )
    unreg = ds.fit_global(m, X, solver=ds.Solver(lam=0), features=ds.Features(seed=0))
    np.testing.assert_allclose(unreg.theta, fit.theta, rtol=1e-3)


def test_dataframe_input_shuffled_and_extra_columns(lorenz_fit):
    m, X, fit = lorenz_fit
    df = pd.DataFrame(
        {"z": X[:, 2], "cell_id": np.arange(len(X)), "x": X[:, 0], "batch": "a", "y": X[:, 1]}
    )
    f2 = ds.fit_global(m, df, features=ds.Features(seed=0))
    assert np.array_equal(f2.theta, fit.theta)
    assert np.array_equal(f2.A, fit.A) and np.array_equal(f2.b, fit.b)


def test_dataframe_missing_column(lorenz_fit):
    m, X, _ = lorenz_fit
    df = pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "w": X[:, 2]})
    with pytest.raises(ds.DataError, match="'z'"):
        ds.fit_global(m, df)


# --------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    "kwargs, name",
    [
        (lambda: {"features": ds.Features(n_features=0)}, "n_features"),
        (lambda: {"features": ds.Features(n_features=-3)}, "n_features"),
        (lambda: {"features": ds.Features(n_features=2.5)}, "n_features"),
        (lambda: {"features": ds.Features(n_features=True)}, "n_features"),
        (lambda: {"features": ds.Features(bandwidth=0.0)}, "bandwidth"),
        (lambda: {"features": ds.Features(bandwidth=-1.0)}, "bandwidth"),
        (lambda: {"features": ds.Features(bandwidth=float("nan"))}, "bandwidth"),
        (lambda: {"features": ds.Features(bandwidth=float("inf"))}, "bandwidth"),
        (lambda: {"features": ds.Features(bandwidth="silverman")}, "bandwidth"),
        (lambda: {"solver": ds.Solver(lam=-1e-6)}, "lam"),
        (lambda: {"solver": ds.Solver(lam=float("nan"))}, "lam"),
        (lambda: {"solver": ds.Solver(lam=float("inf"))}, "lam"),
        (lambda: {"execution": ds.Execution(n_blocks=0)}, "n_blocks"),
    ],
)
def test_bad_arguments_raise_data_error(lorenz_fit, kwargs, name):
    """Each bad setting, built inside the call, is refused with a DataError naming it."""
    m, X, _ = lorenz_fit
    with pytest.raises(ds.DataError, match=name):
        ds.fit_global(m, X, **kwargs())


@pytest.mark.parametrize("lam", [None, "small"])
def test_non_numeric_lambda_raises_data_error(lorenz_fit, lam):
    m, X, _ = lorenz_fit
    with pytest.raises(ds.DataError, match="lam"):
        ds.fit_global(m, X, solver=ds.Solver(lam=lam))


def test_nan_in_x(lorenz_fit):
    m, X, _ = lorenz_fit
    Xb = X.copy()
    Xb[17, 1] = np.nan
    with pytest.raises(ds.DataError, match=r"X.*NaN.*17"):
        ds.fit_global(m, Xb)
    Xb[17, 1] = np.inf
    with pytest.raises(ds.DataError, match="X"):
        ds.fit_global(m, Xb)


@pytest.mark.parametrize("shape", [(100, 2), (100, 4), (300,), (5, 3, 2)])
def test_wrong_shape_x(lorenz_fit, shape):
    m, _, _ = lorenz_fit
    with pytest.raises(ds.DataError, match="X") as info:
        ds.fit_global(m, np.ones(shape))
    if len(shape) == 2:
        assert f"{shape[1]} columns" in str(info.value)


def test_too_few_or_non_numeric_samples(lorenz_fit):
    m, _, _ = lorenz_fit
    with pytest.raises(ds.DataError, match="X"):
        ds.fit_global(m, np.ones((1, 3)))
    with pytest.raises(ds.DataError, match="X"):
        ds.fit_global(m, [["a", "b", "c"], ["d", "e", "f"]])
    with pytest.raises(ds.DataError, match="X"):
        ds.fit_global(m, np.zeros((10, 3)))  # median distance zero: no default bandwidth


def test_fit_records_the_wall_time_of_each_stage(lorenz_fit):
    """info["timings"]: assembly, solve, report and the stationarity checks add up to the total;
    kept out of the summary header (whose numbers are reproducible)."""
    m, X, fit = lorenz_fit
    t = fit.info["timings"]
    assert set(t) == {"assembly", "solve", "report", "checks", "total"}
    assert all(v >= 0 for v in t.values())
    assert abs(t["assembly"] + t["solve"] + t["report"] + t["checks"] - t["total"]) < 1e-3
    assert "timings" not in fit.summary().splitlines()[0]


def test_a_fit_survives_pickling_with_its_bootstrap(models, ou_samples):
    """A FitResult pickles and unpickles (its bootstrap estimator is a module-level partial, not a
    closure: ``pickle.dumps(fit)`` raised "Can't pickle local object"), and the copy's summary
    and block bootstrap are the original's, bit for bit."""
    import pickle

    fit = ds.fit_global(
        models["ou2d"], ou_samples(OU_M, 1.0, 5000, 3), features=ds.Features(seed=3)
    )
    copy = pickle.loads(pickle.dumps(fit))
    assert copy.summary() == fit.summary()
    np.testing.assert_array_equal(copy.theta, fit.theta)
    got, want = copy.bootstrap(n_boot=20, seed=1), fit.bootstrap(n_boot=20, seed=1)
    np.testing.assert_array_equal(got.thetas, want.thetas)
