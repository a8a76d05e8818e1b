"""Reliability round ten: data of extreme scales on the local route, the settings a fit
records, the identifiability check's option objects, a fit's interval method and the command
line's unreadable data files — each fixed, or refused with a message naming the argument or the
file (docs/reliability.md, one row each).

Oracles: the same fit on the unscaled data (a power-of-two scale is exact, and the drift of
this model maps to itself under x ↦ cx with θ ↦ θ/c²), the fit's exact length scale and
temperature, and the files themselves.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds

X_, Y_, A_, B_, C_ = sp.symbols("x y a b c", real=True)
S_ = sp.Symbol("s", real=True)
FEATURES = ds.Features(n_features=64)


@pytest.fixture(scope="module")
def coupled():
    """dx = (−a x + c y) dt + √2 dW₁, dy = −b y dt + √2 dW₂: identifiable, and every parameter
    scales as 1/c² with the data (D = 1 fixed)."""
    model = ds.SDEModel(
        [X_, Y_],
        [A_, B_, C_],
        [-A_ * X_ + C_ * Y_, -B_ * Y_],
        diffusion=1,
        name="coupled_r10",
        nominal={"a": 1.0, "b": 2.0, "c": 0.3},
    )
    return model, ds.simulate(model, model.nominal, 3000, seed=1)


@pytest.mark.parametrize("k", [250, 332, 498])  # data × ≈ 1.8e75, 8.7e99, 1.6e150
def test_kernel_score_on_data_times_1e100_is_the_unscaled_fit(coupled, k):
    """``fit_local(score="kernel")`` on data × 10¹⁰⁰ returned θ̂·c² = (3.69, 11.7, 0.25) for
    (0.94, 1.51, 1.03) on the same data unscaled, without a word: its Jacobian T²·C − T·I
    squared the temperature T ≈ 7·10⁻²⁰⁰ first, which underflowed to 0, so J was −T·I.  Now
    T·(T·C): the fit is the unscaled one (θ̂ ÷ c²), as the local Gaussian score's already was."""
    model, X = coupled
    c = 2.0**k  # exact scaling
    P = ds.choose_probes(X, 8, seed=0)
    scores = ds.Scores(score="kernel")
    ref = ds.fit_local(model, X, P, scores=scores)
    got = ds.fit_local(model, X * c, P * c, scores=scores)
    np.testing.assert_allclose(got.theta * c**2, ref.theta, rtol=1e-9)
    assert got.info["temperature"] == pytest.approx(ref.info["temperature"] / c**2, rel=1e-5)


def test_the_recorded_bandwidth_and_temperature_keep_their_digits_at_small_scales(coupled):
    """Data × 10⁻¹⁰: ``info["bandwidth"]`` (global route) and ``info["temperature"]`` (local)
    were rounded to 6 decimals — 0.0 and 6.75e+20 — so the summary and the JSON record said
    "bandwidth = 0.0", and ``Features(bandwidth=fit.info["bandwidth"])`` was refused ("must be
    positive").  Now they keep 6 significant digits below 0.1 (values from 0.1 up as before),
    and the recorded bandwidth refits the data."""
    model, X = coupled
    c = 1e-10
    fit = ds.fit_global(model, X * c, features=FEATURES)
    ell = fit.lengthscale
    assert 1e-11 < ell < 1e-9
    assert fit.info["bandwidth"] == pytest.approx(ell, rel=1e-5)
    assert f"bandwidth = {fit.info['bandwidth']:g}," in fit.summary()
    assert fit.to_dict()["settings"]["bandwidth"] == fit.info["bandwidth"]
    again = ds.fit_global(
        model, X * c, features=ds.Features(n_features=64, bandwidth=fit.info["bandwidth"])
    )
    np.testing.assert_allclose(again.theta, fit.theta, rtol=1e-3)
    # (the same D with data × 1e10: a drift of 1e-20 that the fit's check reads, rightly, as the
    # picture of a diverging process)
    with pytest.warns(ds.StationarityWarning, match="the picture of a diverging process"):
        local = ds.fit_local(model, X / c, 8)  # T ≈ 7e-20
    T = local.info["temperature"]
    assert T == pytest.approx(ds.fit_local(model, X, 8).info["temperature"] * c**2, rel=1e-5)
    assert f"temperature = {T:g}," in local.summary()
    unscaled = ds.fit_global(model, X, features=FEATURES)  # 0.1 and above: 6 decimals, as before
    assert unscaled.info["bandwidth"] == round(unscaled.lengthscale, 6)


def test_study_refuses_a_wrong_simulation_and_a_second_source_of_samples():
    """``Study(simulation="fast")`` was accepted and failed only inside the check; a Study with
    ``samples=`` and ``sampler=`` (or ``sampler=`` and ``simulation=``) used the first and
    ignored the other without a word.  Both are refused when the Study is built."""
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "Study.simulation must be a dynosed_sym.Simulation (dt, burn_in, thin, n_chains, x0) "
            "or None, got str 'fast'"
        ),
    ):
        ds.Study(simulation="fast")

    def sampler(inputs, theta, n, seed):
        return np.random.default_rng(seed).normal(size=(n, 1))

    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "Study: samples= and sampler= are both given: the check takes its samples from "
            "samples= and would ignore sampler=; give one of them"
        ),
    ):
        ds.Study(samples=np.zeros((50, 1)), sampler=sampler)
    with pytest.raises(ds.DataError, match=r"^Study: sampler= and simulation= are both given"):
        ds.Study(sampler=sampler, simulation=ds.Simulation(dt=0.005))
    assert ds.Study(sampler=sampler).sampler is sampler  # one source: as before


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"order": 7}, "Experiment.order must be 2, 3 or 4, got 7"),
        ({"order": "two"}, "Experiment.order must be an integer, got 'two'"),
        (
            {"candidates": "all"},
            "Experiment.candidates must be a list of candidate environments' inputs, "
            "[{input: value}, ...], got str 'all'",
        ),
        (
            {"candidates": {"s": 3.0}},
            "Experiment.candidates must be a list of candidate environments' inputs, "
            "[{input: value}, ...], got dict {'s': 3.0} (for one candidate, a list of one dict: "
            "[{...}])",
        ),
        ({"candidate_times": "mid"}, "Experiment.candidate_times: holds text: 'mid'"),
        (
            {"candidate_times": [0.5, np.nan]},
            "Experiment.candidate_times: time nan (entry 1) is not a finite time ≥ 0",
        ),
    ],
)
def test_experiment_checks_order_and_candidates_when_built(kw, message):
    """``Experiment(order=7)`` (or 1.5) was accepted and the design check ran (``fit_global``
    refuses it); ``order="two"`` failed inside the check with "invalid literal for int()",
    ``candidates="all"`` or one dict with "dictionary update sequence element #0 has length 1",
    ``candidate_times="mid"`` with "could not convert string to float", ``[0.5, nan]`` with
    "t must be finite, got nan" — none named the argument.  Each is refused when the
    Experiment is built, naming the field."""
    with pytest.raises(ds.DataError, match="^" + re.escape(message)):
        ds.Experiment(**kw)
    # what the fields take
    e = ds.Experiment(order=3, candidates=[{"s": 3.0}], candidate_times={"A": [0.5, 2.0]})
    assert (e.order, e.candidates, e.candidate_times) == (3, [{"s": 3.0}], {"A": [0.5, 2.0]})


def test_conf_int_with_an_unknown_method_is_a_value_error(coupled):
    """``fit.conf_int(method="profile")`` raised the bare ``DynosedError``, which
    ``except ValueError`` let through (round nine made the checks' bad arguments ValueErrors);
    now a ``DataError`` naming conf_int, with a word on the profile intervals."""
    model, X = coupled
    fit = ds.fit_global(model, X, features=FEATURES)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "conf_int: method must be 'sandwich' or 'bootstrap', got 'profile' (the 'sandwich' "
            "intervals of the resolved estimator are the profile-Fieller ones)"
        ),
    ):
        fit.conf_int(method="profile")
    with pytest.raises(ds.DataError, match=r"^conf_int: method must be .* got 'bogus'$"):
        fit.conf_int(method="bogus")


def test_cli_names_a_data_file_that_is_not_utf8_or_not_parquet(tmp_path, project_root):
    """A CSV file saved as UTF-16 (a spreadsheet's 'Unicode text', pandas
    ``to_csv(encoding="utf-16")``) or Latin-1 said "Error: UnicodeDecodeError: 'utf-8' codec
    can't decode byte 0xff in position 0", a truncated Parquet file "Error: ArrowInvalid: Could
    not open Parquet input source '<Buffer>' …" — neither named the file.  Now each names the
    file and what it is; the same table saved as UTF-8 fits as the array."""
    import pandas as pd
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    ou = str(project_root / "models" / "ou2d_m12.py")
    data = np.random.default_rng(3).normal(size=(300, 2))
    frame = pd.DataFrame(data, columns=["x", "y"])
    runner = CliRunner()
    utf16 = tmp_path / "u16.csv"
    frame.to_csv(utf16, index=False, encoding="utf-16")
    res = runner.invoke(main, ["fit", ou, str(utf16), "--features", "64"])
    assert res.exit_code == 1, res.output
    assert (
        f"{utf16}: the file is UTF-16 text (it starts with a UTF-16 byte-order mark), as "
        "spreadsheet programs write 'Unicode text' and pandas to_csv(encoding='utf-16'); CSV "
        "files are read as UTF-8: save it as UTF-8"
    ) in res.output, res.output
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"x,y\n1,2\n\xe9,3\n")
    res = runner.invoke(main, ["fit", ou, str(latin), "--features", "64"])
    assert res.exit_code == 1, res.output
    assert f"{latin}: the file is not UTF-8 text (it holds the byte 0xe9" in res.output
    pq = tmp_path / "t.parquet"
    frame.to_parquet(pq)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(pq.read_bytes()[:-20])
    res = runner.invoke(main, ["fit", ou, str(cut), "--features", "64"])
    assert res.exit_code == 1, res.output
    assert f"{cut}: the file cannot be read as Parquet (ArrowInvalid: " in res.output
    good = tmp_path / "good.csv"
    frame.to_csv(good, index=False, float_format="%.17g")
    res = runner.invoke(main, ["fit", ou, str(good), "--features", "64", "--json"])
    assert res.exit_code == 0, res.output
    fit = ds.fit_global(ds.load_model(ou), data, features=FEATURES)
    record = json.loads(res.stdout[res.stdout.index("{") : res.stdout.rindex("}") + 1])
    assert record["parameters"][0]["estimate"] == fit.theta[0]


def test_repeated_probe_points_are_refused_and_random_probes_are_distinct(coupled):
    """Probes given with a point twice (``[[0, 0], [1, 0], [0, 0], …]``) were fitted, the data
    around the repeated point counted twice, without a word — round six refused such repeats
    from k-means, not given ones — and ``choose_probes(X, k, method="random")`` drew one point
    twice from data with repeated rows (integer counts).  Now the given repeats are refused
    where the scores are estimated from data, naming the rows; random probes are drawn among
    the distinct rows when the draw repeats one (data without repeats keep their draw)."""
    model, X = coupled
    P = ds.choose_probes(X, 6, seed=0)
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"probes: rows 1 and 6 are the same point (x = {P[1]}), 1 repeat(s) in all: a "
            "repeated probe counts the data around it twice; drop the repeats (e.g. "
            "np.unique(probes, axis=0))"
        ),
    ):
        ds.fit_local(model, X, np.vstack([P, P[1]]))
    with pytest.raises(ds.DataError, match=r"^probes: rows 0 and 1 are the same point"):
        ds.check_identifiability(model, model.nominal, route="local", probes=[[0, 0], [0, 0]])
    # the distinct probes fit as before
    fit = ds.fit_local(model, X, P)
    assert np.isfinite(fit.theta).all()
    counts = np.repeat(np.random.default_rng(0).integers(0, 4, size=(6, 2)), 50, axis=0)
    distinct = np.unique(counts, axis=0)
    R = ds.choose_probes(counts, len(distinct), method="random", seed=0)
    np.testing.assert_array_equal(np.unique(R, axis=0), distinct)
    with pytest.raises(
        ds.DataError,
        match=rf"^random probes: X has only {len(distinct)} distinct point\(s\), fewer than the "
        rf"k = {len(distinct) + 1} probes asked for",
    ):
        ds.choose_probes(counts, len(distinct) + 1, method="random")
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(
        ds.choose_probes(X, 5, method="random", seed=3), X[np.sort(rng.choice(len(X), 5, False))]
    )


def test_load_model_names_what_a_file_defines_instead_of_model(tmp_path):
    """A model file that builds its SDEModel under another name (``m = ds.SDEModel(…)``), or
    whose ``model`` is a function that builds one, said only "must define an SDEModel named
    'model'"; now the message names what the file defines and the line that loads it.  With
    ``model = m`` the file loads the model it named."""
    head = "import sympy as sp\nimport dynosed_sym as ds\nx, a = sp.symbols('x a', real=True)\n"
    build = "ds.SDEModel([x], [a], [-a*x], diffusion=1, name='other_r10')"
    other = tmp_path / "other.py"
    other.write_text(f"{head}m = {build}\n")
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            f"model file {str(other)!r} must define an SDEModel named 'model'; it defines the "
            "SDEModel(s) m (model 'other_r10'): name the one to load model (model = m)"
        ),
    ):
        ds.load_model(other)
    factory = tmp_path / "factory.py"
    factory.write_text(f"{head}def model():\n    return {build}\n")
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "must define an SDEModel named 'model'; its 'model' is a function: end the file with "
            "model = model() to load its result"
        ),
    ):
        ds.load_model(factory)
    number = tmp_path / "number.py"
    number.write_text("model = 3\n")
    with pytest.raises(ds.ModelError, match=r"named 'model'; its 'model' is int 3$"):
        ds.load_model(number)
    other.write_text(f"{head}m = {build}\nmodel = m\n")
    assert ds.load_model(other).name == "other_r10"


def test_local_design_probes_keyed_by_an_unknown_environment_are_refused():
    """``fit_local(model, {"A": XA, "B": XB}, {"A": PA, "B": PB, "C": PC}, inputs=…)``: the
    probes of 'C', an environment without data (a typo, a dropped sample), were ignored without
    a word — the fit was that of A and B alone — where ``inputs={"C": …}`` is refused.  Now the
    probes are refused too, naming the key and the environments."""
    model = ds.SDEModel([X_], [A_], [-A_ * X_ + S_], diffusion=1, inputs=[S_], name="in_probes_r10")
    inputs = {"A": {"s": 1.0}, "B": {"s": 3.0}}
    data = {
        e: ds.simulate(model, [1.0], 1000, inputs=inputs[e], seed=k) for k, e in enumerate(inputs)
    }
    probes = {"A": [[0.5], [1.0], [1.5]], "B": [[2.5], [3.0], [3.5]]}
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "probes: environment 'C' has no data (environments: A, B); give the probes of each "
            "environment under its name"
        ),
    ):
        ds.fit_local(model, data, {**probes, "C": [[1.0], [2.0]]}, inputs=inputs)
    fit = ds.fit_local(model, data, probes, inputs=inputs)
    assert abs(fit.theta[0] - 1.0) < 0.3


@pytest.mark.parametrize("indent", ["x", "--", 2.5, True, -1])
def test_to_json_refuses_an_indent_that_is_not_whitespace(coupled, indent, tmp_path):
    """``fit.to_json(path, indent="x")`` wrote a file that no JSON reader reads (json.dumps puts
    the string before every line: ``{\\nx"model": …``); 2.5 failed with "can't multiply sequence
    by non-int of type 'float'", True and -1 were taken as 1 and 0.  Now they are refused before
    the file is written; a count of spaces, a whitespace string or None give the same record."""
    model, X = coupled
    fit = ds.fit_global(model, X, features=FEATURES)
    path = tmp_path / "fit.json"
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "to_json: indent must be None, a number of spaces (an integer ≥ 0) or a string of "
            f"whitespace (e.g. '\\t'), got {type(indent).__name__} {indent!r}"
        ),
    ):
        fit.to_json(path, indent=indent)
    assert not path.exists()
    record = json.loads(fit.to_json())
    for good in (0, 4, np.int64(3), "\t", None):
        assert json.loads(fit.to_json(path, indent=good)) == record
        assert json.loads(path.read_text()) == record


def test_cli_names_the_file_without_the_env_or_time_column(tmp_path, project_root):
    """``dynosed fit M data.csv --time-column t`` on a file without that column said "X:
    DataFrame has no column 't' (columns: x, y)", ``--env-column env`` "DATA: DataFrame has no
    column 'env' …" — names the terminal user never typed, and not the file (every other
    message of the command names it).  Now "data.csv: no column 't' for --time-column (columns:
    x, y)"; a file that has the columns fits as before."""
    import pandas as pd
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    ou = str(project_root / "models" / "ou2d_m12.py")
    frame = pd.DataFrame(np.random.default_rng(4).normal(size=(300, 2)), columns=["x", "y"])
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    other = tmp_path / "other.csv"
    frame.to_csv(other, index=False)
    runner = CliRunner()
    for args, option, column in (
        (["--time-column", "t"], "--time-column", "t"),
        (["--env-column", "env"], "--env-column", "env"),
        (["--env-column", "env", "--time-column", "t"], "--env-column", "env"),
    ):
        res = runner.invoke(main, ["fit", ou, str(path), *args])
        assert res.exit_code == 1, res.output
        assert f"{path}: no column {column!r} for {option} (columns: x, y)" in res.output
    res = runner.invoke(main, ["fit", ou, str(path), str(other), "--time-column", "t"])
    assert f"{path}: no column 't' for --time-column (columns: x, y)" in res.output, res.output
    frame["env"] = ["A", "B"] * 150
    frame.to_csv(path, index=False)
    res = runner.invoke(main, ["fit", ou, str(path), "--env-column", "env", "--features", "64"])
    assert res.exit_code == 0, res.output


def test_score_matching_names_a_ball_far_wider_than_its_data(coupled):
    """``Balls(P, 1e8)`` around data of unit spread: the basis, in units of the radius, hardly
    varies over the data, and the singular ball said "use a larger radius, more data or a lower
    degree" — the opposite of the cure.  Now it names the ratio of the radius to the farthest
    data point in the ball; a radius of the data's scale fits as before."""
    model, X = coupled
    P = ds.choose_probes(X, 5, seed=0)
    reach = np.sqrt(((X - P[0]) ** 2).sum(axis=1)).max()
    scores = ds.Scores(score="score_matching")
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "score matching: the data in the ball around probe 0 do not determine the degree-2 "
            f"local log-density (singular system); its radius 1e+08 is {1e8 / reach:.3g} times "
            f"the distance of the farthest data point in it ({reach:.3g}): in units of the "
            "radius the data hardly spread; use a radius of the data's scale around the probe"
        ),
    ):
        ds.fit_local(model, X, ds.Balls(P, 1e8), scores=scores)
    fit = ds.fit_local(model, X, ds.Balls(P, 2.0), scores=scores)
    assert np.isfinite(fit.theta).all()


def test_local_time_course_probes_keyed_by_a_time_without_a_snapshot_are_refused():
    """``fit_local(model, tc, {0.5: P, 0.7: P})`` on snapshots at t = 0, 0.5, 1: the probes of
    0.7, a time without a snapshot (a typo), were ignored without a word — the fit was that of
    ``{0.5: P}``.  Now they are refused, naming the time and the snapshot times; probes given for
    every snapshot time (the end times' unused: ∂ₜlog p needs a snapshot before and after) fit
    as before."""
    from dynosed_sym.simulation.simulate import simulate_time_course

    model = ds.SDEModel([X_], [A_], [-A_ * X_], diffusion=1, name="tc_probes_r10")
    tc = simulate_time_course(model, [1.0], [0, 0.5, 1.0], 800, initial=([2.0], [[0.1]]), seed=1)
    P = ds.choose_probes(tc.snapshots[1], 4, seed=0)
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "probes: time 0.7 of environment 'data' is not one of its snapshot times (0, 0.5, 1); "
            "its probes would be ignored"
        ),
    ):
        ds.fit_local(model, tc, {0.5: P, 0.7: P})
    ref = ds.fit_local(model, tc, P).theta
    np.testing.assert_array_equal(ds.fit_local(model, tc, {0.5: P}).theta, ref)
    np.testing.assert_array_equal(ds.fit_local(model, tc, {0: P, 0.5: P, 1: P}).theta, ref)


def test_simulate_reads_a_labelled_start_by_name(coupled):
    """``simulate(…, x0=pd.DataFrame([[5, -5]], columns=["y", "x"]))`` (or a Series, or
    ``Simulation(x0=…)``) started the chains at x = 5, y = -5: the labels were dropped and the
    values read by position — round seven read a DataFrame of initial samples by name, not
    ``x0``.  Now a DataFrame, a labelled Series and a dict are read by the state names, and
    equal the array in the model's order bit for bit; an unknown or missing name is refused."""
    import pandas as pd

    model, _ = coupled
    kw = dict(burn_in=0, thin=1, n_chains=2, seed=4)
    ref = ds.simulate(model, model.nominal, 6, x0=[-5.0, 5.0], **kw)
    for x0 in (
        pd.DataFrame([[5.0, -5.0]], columns=["y", "x"]),
        pd.DataFrame([[5.0, -5.0], [5.0, -5.0]], columns=["y", "x"]),
        pd.Series({"y": 5.0, "x": -5.0}),
        {"y": 5.0, "x": -5.0},
    ):
        np.testing.assert_array_equal(ds.simulate(model, model.nominal, 6, x0=x0, **kw), ref)
        sim = ds.Simulation(x0=x0, burn_in=0, thin=1, n_chains=2)
        np.testing.assert_array_equal(
            ds.simulate(model, model.nominal, 6, seed=4, **sim.keywords(6)), ref
        )
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "x0: 'z' is not a state variable of model 'coupled_r10' (state variables: x, y)"
        ),
    ):
        ds.simulate(model, model.nominal, 6, x0={"x": 1.0, "y": 2.0, "z": 0.0})
    with pytest.raises(ds.DataError, match=r"^x0: no value for state variable 'y'$"):
        ds.simulate(model, model.nominal, 6, x0=pd.Series({"x": 1.0}))
