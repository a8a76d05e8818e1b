"""Reliability round eleven: the standard errors of data of extreme scales, the identifiability
check's candidate times, the command line's probe count and a time course given to
check_stationarity — each fixed, or refused with a message naming the argument or the option
(docs/reliability.md, one row each).

Oracles: the same fit on the unscaled data (a power-of-two scale is exact, and the drift of
``ou2d`` maps to itself under x ↦ cx with θ ↦ θ/c²), the sandwich formula in plain NumPy, and
the exact transient law of the OU process (Van Loan's exponential, tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import OU_START, gaussian_samples, ou_transient_law

import dynosed_sym as ds
from dynosed_sym.solve import uncertainty as unc
from dynosed_sym.solve.misspecification import block_weights

FEATURES = ds.Features(n_features=64)
RIDGE = ds.Solver(lam=0.0, estimator="ridge")  # its intervals are the sandwich's


@pytest.fixture(scope="module")
def ou(models):
    """ou2d and exact N(0, I) samples of it (M = −I), as tests/test_reliability.py's."""
    return models["ou2d"], np.random.default_rng(22).standard_normal((3000, 2))


def _fit(model, X, solver=RIDGE):
    return ds.fit_global(model, X, features=FEATURES, solver=solver)


def _fit_scaled(model, X, solver=RIDGE):
    # the same D with data × c: the drift M/c² relaxes over ~c² time units, which the fit's
    # stationarity check reads, rightly, as the picture of a diverging process
    with pytest.warns(ds.StationarityWarning, match="confines the samples only over"):
        return _fit(model, X, solver)


@pytest.mark.parametrize("k", [90, 120, 150])
def test_standard_errors_of_data_scaled_by_1e90_to_1e150(ou, k):
    """Data × 10⁹⁰ … 10¹⁵⁰: θ̂ ≈ M/c² was right, but the sandwich covariance was formed in θ's
    own units — influences of size 1/c², squared to ≈ 10⁻³⁶⁰ — so the standard errors read 0
    and every interval was the point θ̂.  Now the sandwich is formed in units of powers of two:
    SE·c² and the interval·c² are the unscaled data's, the same p-value and statuses."""
    model, X = ou
    c = 10.0**k
    ref, got = _fit(model, X), _fit_scaled(model, X * c)
    np.testing.assert_allclose(got.theta * c**2, ref.theta, rtol=0, atol=1e-9)
    se, ci = got.report.std_errors, got.report.ci
    assert np.all(se > 0)  # (they were 0)
    np.testing.assert_allclose(se * c**2, ref.report.std_errors, rtol=1e-6)
    np.testing.assert_allclose(ci * c**2, ref.report.ci, rtol=1e-6)
    assert np.all((ci[:, 0] < got.theta) & (got.theta < ci[:, 1]))
    np.testing.assert_allclose(got.report.p_value, ref.report.p_value, rtol=1e-6)
    assert got.report.status == ref.report.status


@pytest.mark.parametrize("e", [300, 498])  # data × ≈ 2e90, 1.6e150
def test_standard_errors_of_data_scaled_by_a_power_of_two_are_exact(ou, e):
    """A power-of-two scale is exact in the assembly, the solve and now the sandwich: the
    standard errors and intervals of data × 2^e are the unscaled data's × 2^-2e, bit for bit."""
    model, X = ou
    c = 2.0**e
    ref, got = _fit(model, X), _fit_scaled(model, X * c)
    np.testing.assert_array_equal(got.theta * c**2, ref.theta)
    np.testing.assert_array_equal(got.report.std_errors * c**2, ref.report.std_errors)
    np.testing.assert_array_equal(got.report.ci * c**2, ref.report.ci)


def test_the_scaled_sandwich_is_the_plain_formula_bit_for_bit():
    """Wherever the covariance is a normal number the powers of two change no bit: the sandwich
    equals Σ_b w_b IF_b IF_bᵀ / (B − 1) of the block influences, in plain NumPy, on systems of
    scales 10⁻⁵ … 10⁵; and its standard errors √C_jj·u_j are the diagonal's square roots."""
    rng = np.random.default_rng(0)
    B, m, n = 20, 12, 4
    for _ in range(20):
        A_blocks = rng.standard_normal((B, m, n)) * 10.0 ** rng.uniform(-5, 5)
        b_blocks = rng.standard_normal((B, m)) * 10.0 ** rng.uniform(-5, 5)
        counts = rng.integers(50, 100, B).astype(float)
        w = counts / counts.sum()
        A, b = np.tensordot(w, A_blocks, 1), w @ b_blocks
        theta = np.linalg.lstsq(A, b, rcond=None)[0]
        IF = unc.block_influence(A, b, theta, 1e-6, A_blocks, b_blocks)
        plain = (IF * block_weights(counts)[:, None]).T @ IF / (B - 1)
        cov = unc.sandwich_covariance(A, b, theta, 1e-6, A_blocks, b_blocks, counts)
        np.testing.assert_array_equal(cov, plain)
        C, u = unc.scaled_sandwich(A, b, theta, 1e-6, A_blocks, b_blocks, counts)
        np.testing.assert_array_equal(np.sqrt(np.diag(C)) * u, np.sqrt(np.diag(plain)))
        assert np.all(np.log2(u) == np.round(np.log2(u)))  # powers of two


@pytest.mark.xfail(
    strict=True,
    reason="left (docs/reliability.md, round eleven): the resolved estimator's standard errors "
    "come from solve/weak.py's weak_intervals (variances a0, bias², the Fieller set in "
    "solve/intervals.py), formed in θ's own units; they still read 0 at data × 1e90",
)
def test_resolved_estimator_standard_errors_of_data_scaled_by_1e90(ou):
    model, X = ou
    c = 2.0**300
    solver = ds.Solver(lam=0.0)
    ref, got = _fit(model, X, solver), _fit_scaled(model, X * c, solver)
    np.testing.assert_allclose(got.report.std_errors * c**2, ref.report.std_errors, rtol=1e-6)


def _ou_sampler(limit=np.inf):
    """The exact transient law of ou2d (D = I) at ``time``; a DataError beyond ``limit``."""

    def sample(inputs, theta, n, seed, time=None, initial=None):
        if time > limit:
            raise ds.DataError(f"sampler: no law beyond t = {limit:g}, asked for t = {time:g}")
        M = np.asarray(theta, dtype=float).reshape(2, 2)
        return gaussian_samples(*ou_transient_law(M, 1.0, *initial, time), n, seed)

    return sample


def test_candidate_times_the_simulator_cannot_reach_are_named(ou, monkeypatch):
    """``Experiment(candidate_times=[0.2, 1e300])``: the time passed its check (finite, ≥ 0);
    after the structural check, the simulation and the fit, the advice's snapshot at 1e300
    raised "times: t = 1e+300 with dt=0.01 needs 1e+302 steps per chain …" — ``times``, an
    argument the user had not given.  Now refused before any work (the structural check is not
    reached), naming ``Experiment.candidate_times`` and the entry; ``Experiment.times`` alike.
    With a ``sampler=`` any time is drawn as the sampler can, and a DataError it raises at a
    candidate time names the candidate time."""
    from dynosed_sym.identifiability import designs

    model, _ = ou

    def no_structural_check(*args, **kwargs):
        raise AssertionError("the structural check ran before the times were checked")

    def check(study=None, **experiment):
        return ds.check_identifiability(
            model,
            experiment=ds.Experiment(initial=OU_START, **experiment),
            study=study or ds.Study(n_samples=400),
            features=FEATURES,
        )

    with monkeypatch.context() as patch:
        patch.setattr(designs, "design_structural", no_structural_check)
        with pytest.raises(
            ds.DataError,
            match=r"^Experiment\.candidate_times: entry 1 cannot be simulated: t = 1e\+300 with "
            r"dt=0\.01 needs 1e\+302 steps per chain, beyond the 4\.61e\+18 steps a chain can "
            r"count; check the time unit of the candidate times, give the simulation a larger "
            r"step \(study=Study\(simulation=ds\.Simulation\(dt=\.\.\.\)\)\), or a sampler= ",
        ):
            check(times=[0.0, 0.5, 1.0], candidate_times=[0.2, 1e300])
        with pytest.raises(
            ds.DataError, match=r"^Experiment\.times: entry 2 cannot be simulated: t = 1e\+300 "
        ):
            check(times=[0.0, 0.5, 1e300])
    study = ds.Study(n_samples=2000, sampler=_ou_sampler(limit=100.0))
    with pytest.raises(
        ds.DataError,
        match=r"^Experiment\.candidate_times: the design with a snapshot added at t = 1000: "
        r"sampler: no law beyond t = 100, asked for t = 1000$",
    ):
        check(study, times=[0.0, 0.5, 1.0], candidate_times=[1000.0])
    # a time the sampler draws is advised on as before
    advice = check(study, times=[0.0, 0.5, 1.0], candidate_times=[3.0]).advice
    assert sorted(a.time or 0.0 for a in advice if a.kind == "time") == [0.0, 3.0]


def test_cli_probe_count_beyond_the_data_names_the_option(tmp_path, project_root):
    """``dynosed fit M data.csv --route local --probes 100000`` on 300 rows said "Error: cannot
    choose 100000 probes from 300 data point(s)" — not which option asked for them.  Now the
    message names the file (or environment), ``--probes`` and the probe method; the other
    counts the probes cannot meet (k-means on fewer distinct points) likewise."""
    import pandas as pd
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    ou = str(project_root / "models" / "ou2d.py")
    frame = pd.DataFrame(np.random.default_rng(4).normal(size=(300, 2)), columns=["x", "y"])
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    runner = CliRunner()
    res = runner.invoke(main, ["fit", ou, str(path), "--route", "local", "--probes", "100000"])
    assert res.exit_code == 1, res.output
    assert (
        f"Error: {path}: --probes 100000 (--probe-method random): cannot choose 100000 probes "
        "from 300 data point(s)"
    ) in res.output, res.output
    envs = tmp_path / "envs.csv"
    frame.assign(env=["A", "B"] * 150).to_csv(envs, index=False)
    args = ["--route", "local", "--env-column", "env", "--probes", "200"]
    res = runner.invoke(main, ["fit", ou, str(envs), *args])
    assert res.exit_code == 1, res.output
    assert (
        "Error: environment 'A': --probes 200 (--probe-method random): cannot choose 200 probes "
        "from 150 data point(s)"
    ) in res.output, res.output
    few = tmp_path / "few.csv"
    pd.DataFrame(np.repeat(np.eye(3, 2), 100, axis=0), columns=["x", "y"]).to_csv(few, index=False)
    args = ["--route", "local", "--probes", "5", "--probe-method", "kmeans"]
    res = runner.invoke(main, ["fit", ou, str(few), *args])
    assert res.exit_code == 1, res.output
    assert (
        f"Error: {few}: --probes 5 (--probe-method kmeans): k-means: X has only 3 distinct "
        "point(s), fewer than the k = 5 probes asked for"
    ) in res.output, res.output
    res = runner.invoke(main, ["fit", ou, str(path), "--route", "local", "--probes", "6"])
    assert res.exit_code == 0, res.output


def test_check_stationarity_of_a_time_course_says_how_to_check_its_snapshots(ou):
    """``check_stationarity(model, θ, tc)`` said "X: holds a value that is not a number:
    TimeCourse(3 snapshots at t = 0, 0.5, 1); numbers are expected".  Now it says that a time
    course is not one stationary law and how to check its snapshots; both ways it names run and
    give the checks of the snapshot arrays themselves."""
    model, _ = ou
    M = np.asarray(model.nominal, dtype=float).reshape(2, 2)
    X = ds.TimeCourse(
        {t: gaussian_samples(*ou_transient_law(M, 1.0, *OU_START, t), 500, 3) for t in (0, 1, 6)}
    )
    with pytest.raises(
        ds.DataError,
        match=r"^X: TimeCourse\(3 snapshots at t = 0, 1, 6\) is a time course: "
        r"check_stationarity takes samples \(N, d\) of one law .* check one snapshot at a time — "
        r"the last, the most settled, with check_stationarity\(model, theta, X\.snapshots\[-1\]\), "
        r"or each with \{t: check_stationarity\(model, theta, Xt\) for t, Xt in X\.items\(\)\}$",
    ):
        ds.check_stationarity(model, model.nominal, X)
    theta = model.nominal
    last = ds.check_stationarity(model, theta, X.snapshots[-1])
    each = {t: ds.check_stationarity(model, theta, Xt) for t, Xt in X.items()}
    assert list(each) == [0.0, 1.0, 6.0]
    assert last.verdict == each[6.0].verdict == "stationary"
    assert each[0.0].verdict != "stationary"  # N((2, −1), 0.1 I) is far from N(0, Σ)
    direct = ds.check_stationarity(model, theta, np.asarray(X.snapshots[1]))
    assert each[1.0].verdict == direct.verdict
    np.testing.assert_array_equal(each[1.0].mean_rate, direct.mean_rate)


def test_check_stationarity_of_a_dict_says_what_to_pass(ou):
    """A dict as X said "X: holds a value that is not a number: {'A': array(…)}".  A dict of
    environments is told to check each with its own parameters (and the way it names runs and
    gives each array's own check); a dict of columns named by the state variables is told to
    pass a DataFrame, whose check is then the array's."""
    model, X = ou
    envs = {"A": X[:1500], "B": X[1500:]}
    with pytest.raises(
        ds.DataError,
        match=r"^X: a dict with keys 'A', 'B': check_stationarity takes samples \(N, d\) of one "
        r"law; for the environments of a design check each with its own parameters, \{env: "
        r"check_stationarity\(model, theta_env, X_env\) for env, X_env in X\.items\(\)\}",
    ):
        ds.check_stationarity(model, model.nominal, envs)
    each = {e: ds.check_stationarity(model, model.nominal, Xe) for e, Xe in envs.items()}
    np.testing.assert_array_equal(
        each["B"].variance_rate, ds.check_stationarity(model, model.nominal, X[1500:]).variance_rate
    )
    columns = {"x": X[:, 0], "y": X[:, 1]}
    with pytest.raises(
        ds.DataError,
        match=r"^X: a dict with keys 'x', 'y', the state variables of model 'ou2d': pass the "
        r"columns of one data set as a pandas\.DataFrame\(X\)",
    ):
        ds.check_stationarity(model, model.nominal, columns)
    pd = pytest.importorskip("pandas")
    frame = ds.check_stationarity(model, model.nominal, pd.DataFrame(columns))
    array = ds.check_stationarity(model, model.nominal, X)
    assert frame.verdict == array.verdict
    np.testing.assert_array_equal(frame.variance_rate, array.variance_rate)
