"""Reliability round seven: unusual but plausible inputs, each refused with a message that names
the argument, the field, the symbol or the environment and says what to do
(docs/reliability.md, one row each).

Oracles: the documented accepted inputs (a DataFrame read by its column names), SymPy's own
simplification under an assumption, the simulator's chains run again step by step (the same
stream, bit for bit), and the messages of the same checks on plain data.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import sympy as sp
from conftest import records

import dynosed_sym as ds
from dynosed_sym.simulation.simulate import chain_keys, initial_states

OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])  # ou2d's nominal drift; D = I


@pytest.fixture(scope="module")
def ou_data(ou_samples):
    return ou_samples(OU_M, 1.0, 600, seed=7)


# --------------------------------------------------------------------------- record arrays
STRUCTURED = re.escape(
    "X: a NumPy structured (record) array with fields 'x', 'y': each row is one record, not a "
    "row of numbers: pass pandas.DataFrame(X), whose columns are read by name as the state "
    "variables, or np.column_stack([X[f] for f in ('x', 'y')]) in the model's order"
)


def test_a_record_array_is_refused_naming_its_fields_and_the_conversion(models, ou_data):
    """A structured array said "holds a value that is not a number at row 0: (…, …)"."""
    ou = models["ou2d"]
    rec = records(ou_data, ["x", "y"])
    features = ds.Features(n_features=16)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_global(ou, rec, features=features)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_local(ou, rec, 4)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.check_stationarity(ou, ou.nominal, rec)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_global(ou, rec.view(np.recarray), features=features)
    # the conversion the message gives is the fit of the plain array, bit for bit
    plain = ds.fit_global(ou, ou_data, features=features)
    framed = ds.fit_global(ou, pd.DataFrame(rec), features=features)
    np.testing.assert_array_equal(framed.theta, plain.theta)


def test_a_record_array_without_a_state_field_names_it(models, ou_data):
    rec = records(ou_data, ["x", "q"])
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "fields 'x', 'q': each row is one record, not a row of numbers; it has no field 'y' "
            "for state variable 'y' (state variables: x, y)"
        ),
    ):
        ds.fit_global(models["ou2d"], rec, features=ds.Features(n_features=16))


def test_a_record_npy_file_is_refused_before_reading(models, ou_data, tmp_path):
    path = tmp_path / "rec.npy"
    np.save(path, records(ou_data, ["x", "y"]))
    shown = repr(str(path))
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"X: {path}: a NumPy structured (record) array with fields 'x', 'y': each row is one "
            f"record, not a row of numbers: pass pandas.DataFrame(np.load({shown})), whose columns"
        ),
    ):
        ds.fit_global(models["ou2d"], str(path), features=ds.Features(n_features=16))


# --------------------------------------------------------------------------- out_dir=""
EMPTY_OUT_DIR = (
    "out_dir='{v}' is an empty or blank string, not a folder (an empty one was taken as 'not "
    "given': the kernels went to the default folder); pass out_dir='.' for the working "
    "directory, or None (or leave it out) for the default folder"
)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_out_dir_is_refused(models, value):
    """``compile_model(m, out_dir="")`` compiled into the default folder without a word."""
    message = re.escape(EMPTY_OUT_DIR.format(v=value))
    with pytest.raises(ds.DataError, match="^compile_model: " + message):
        ds.compile_model(models["ou2d"], out_dir=value)
    with pytest.raises(ds.DataError, match="^Execution." + message):
        ds.Execution(out_dir=value)


# --------------------------------------------------------------------------- input signs
def _signed_input_model(**assumption):
    x, a = sp.symbols("x a", real=True)
    s = sp.Symbol("s", **assumption)
    return ds.SDEModel(
        [x], [a], [-a * x + sp.Abs(s) - 1], diffusion=1, inputs=[s], name="signed_in"
    ), s


VALID = {"positive": 1.0, "nonnegative": 0.0, "negative": -1.0, "nonpositive": 0.0}


@pytest.mark.parametrize(
    "assumption, value, allowed",
    [
        ("positive", -1.0, "> 0"),
        ("positive", 0.0, "> 0"),
        ("nonnegative", -0.5, "≥ 0"),
        ("negative", 2.0, "< 0"),
        ("nonpositive", 3.0, "≤ 0"),
    ],
)
def test_an_input_outside_its_declared_sign_is_refused(assumption, value, allowed):
    """SymPy simplified Abs(s) to s (or -s) when the drift was written; an input value of the
    other sign ran another model without a word (simulate's mean was −2 instead of 0)."""
    model, s = _signed_input_model(**{assumption: True})
    simplified = sp.Abs(s)  # the oracle: SymPy's own simplification under the assumption
    assert simplified != sp.Abs(sp.Symbol("s", real=True))
    message = re.escape(
        f"inputs: value of 's' is {value:g}, but model 'signed_in' declares input s "
        f"{assumption}=True, under which SymPy has already simplified the drift and D written "
        f"with it (Abs(s) is {simplified}, sqrt(s**2) is {sp.sqrt(s**2)}), so at {value:g} the "
        f"kernels would compute another model; give a value {allowed}, or declare it real=True "
        "(sp.Symbol('s', real=True)) and write the model for both signs"
    )
    with pytest.raises(ds.ModelError, match="^" + message + "$"):
        model.with_inputs({"s": value})
    with pytest.raises(ds.ModelError, match=message):
        ds.simulate(model, [1.0], 100, inputs={"s": value}, seed=0)
    with pytest.raises(ds.ModelError, match=re.escape("inputs['B']: value of 's' is")):
        ds.fit_global(
            model,
            {"A": np.zeros((4, 1)), "B": np.zeros((4, 1))},
            inputs={"A": {"s": VALID[assumption]}, "B": {"s": value}},
        )


def test_an_input_inside_its_declared_sign_simulates_the_declared_model():
    model, _ = _signed_input_model(positive=True)
    X = ds.simulate(model, [1.0], 4000, inputs={"s": 1.0}, seed=0)
    assert abs(X.mean()) < 0.1  # the drift −x + |s| − 1 has its mean at 0


def test_a_nominal_value_outside_its_declared_sign_is_refused():
    x = sp.Symbol("x", real=True)
    b = sp.Symbol("b", positive=True)
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "nominal: value of 'b' is -1, but model 'pos_p' declares parameter b positive=True, "
            "under which SymPy has already simplified the drift and D written with it (Abs(b) is "
            "b, sqrt(b**2) is b)"
        ),
    ):
        ds.SDEModel([x], [b], [-sp.Abs(b) * x], diffusion=1, name="pos_p", nominal=[-1.0])


# --------------------------------------------------------------------------- environments
def test_a_streamed_environment_names_itself_in_the_overflow_error(tmp_path):
    """The data checks of an environment read from a file named X, not X['B']."""
    x, a, s = sp.symbols("x a s", real=True)
    m = ds.SDEModel([x], [a], [-a * x**3 + s], diffusion=1.0, inputs=[s], name="cubic_in")
    rng = np.random.default_rng(0)
    XA, XB = rng.normal(size=(400, 1)), rng.normal(size=(400, 1)) + 0.3
    XB[3, 0] = 1e300
    np.save(tmp_path / "B.npy", XB)
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "X['B']: value 1e+300 in column 'x', row 3, is too large for model 'cubic_in': its "
            "term x**3"
        ),
    ):
        ds.fit_global(
            m,
            {"A": XA, "B": str(tmp_path / "B.npy")},
            inputs={"A": {"s": 0.0}, "B": {"s": 1.0}},
            features=ds.Features(n_features=16),
        )


def test_an_environment_in_memory_names_itself(tmp_path):
    """The same check on an environment held in memory (the global route's feature check) and
    every error of a local design's environment named only X."""
    x, a, s = sp.symbols("x a s", real=True)
    m = ds.SDEModel([x], [a], [-a * x**3 + s], diffusion=1.0, inputs=[s], name="cubic_in")
    rng = np.random.default_rng(0)
    XA, XB = rng.normal(size=(400, 1)), rng.normal(size=(400, 1)) + 0.3
    inputs = {"A": {"s": 0.0}, "B": {"s": 1.0}}
    huge = XB.copy()
    huge[3, 0] = 1e300
    with pytest.raises(ds.DataError, match=re.escape("X['B']: value 1e+300 in column 'x', row 3")):
        ds.fit_global(m, {"A": XA, "B": huge}, inputs=inputs, features=ds.Features(n_features=16))
    nan = XB.copy()
    nan[5, 0] = np.nan
    with pytest.raises(
        ds.DataError, match=r"^environment 'B': X: 1 row\(s\) contain NaN or inf \(rows 5\)"
    ):
        ds.fit_local(m, {"A": XA, "B": nan}, 4, inputs=inputs)


def test_a_cir_chain_leaving_its_domain_in_the_design_check_says_where_dt_is_set(cir):
    """Inside check_identifiability the simulator's "reduce dt" message lost the check's hint on
    where its step is set (the "x0=" messages had it)."""
    study = ds.Study(n_samples=2000, simulation=ds.Simulation(dt=0.05))
    with pytest.raises(ds.DataError) as info:
        ds.check_identifiability(cir, [0.2, 1.0], study=study)
    text = str(info.value)
    assert text.startswith("check_identifiability: the simulation check's samples: simulate: chain")
    assert "reduce dt (e.g. to 0.005)" in text
    assert text.endswith("study=Study(simulation=ds.Simulation(x0=..., dt=..., burn_in=...)))")


def test_one_snapshot_with_inputs_is_not_called_an_environment():
    """A local fit of one snapshot is not a design of environments: its errors name X alone."""
    x, a, s = sp.symbols("x a s", real=True)
    m = ds.SDEModel([x], [a], [-a * x + s], diffusion=1.0, inputs=[s], name="one_in")
    X = np.random.default_rng(0).normal(size=(300, 1))
    X[3, 0] = np.nan
    with pytest.raises(ds.DataError, match=r"^X: 1 row\(s\) contain NaN or inf \(rows 3\)$"):
        ds.fit_local(m, X, 4, inputs={"s": 1.0})


def test_parameter_values_outside_their_declared_sign_are_refused_where_given():
    """SDEModel(nominal=) was checked; θ given to simulate and a nominal given to the check
    simulated another model (Abs(b) is b for b positive=True: the mean of −a·x + |b| − 1 at
    b = −1 came out −2 instead of 0)."""
    x, a = sp.symbols("x a", real=True)
    b = sp.Symbol("b", positive=True)
    m = ds.SDEModel([x], [a, b], [-a * x + sp.Abs(b) - 1], diffusion=1, name="sign_b")
    expected = r"^{}: value of 'b' is -1, but model 'sign_b' declares parameter b positive=True"
    with pytest.raises(ds.ModelError, match=expected.format("theta")):
        ds.simulate(m, [1.0, -1.0], 100)
    with pytest.raises(ds.ModelError, match=expected.format("nominal")):
        ds.check_identifiability(m, [1.0, -1.0])
    X = ds.simulate(m, [1.0, 1.0], 4000, seed=3)
    assert abs(float(X.mean())) < 0.1  # the declared model's mean, 0


@pytest.mark.parametrize(
    "probes, message",
    [
        (
            4.0,
            "probes=4 is one number: a count of probes is an integer (probes=4), probe points "
            "an (M, d) array (one row per point)",
        ),
        (np.float64(2.5), "probes=2.5 is one number: a count of probes is an integer (probes=k)"),
        (np.array(4.0), "probes=4 is one number: a count of probes is an integer (probes=4)"),
        (
            [[0.0, 0.0], [1.0]],
            "probes: rows of different lengths: row 1 has 1 value(s), row 0 "
            "has 2; every row holds one value per state variable of model 'ou2d' (x, y)",
        ),
    ],
)
def test_probes_given_as_a_float_or_ragged_rows_are_named(models, ou_data, probes, message):
    """A float count said "expected an array of shape (M, 2) … got shape ()", ragged rows were
    NumPy's "inhomogeneous shape" message; an integer count still chooses k-means probes."""
    with pytest.raises(ds.DataError, match="^" + re.escape(message)):
        ds.fit_local(models["ou2d"], ou_data, probes)
    assert ds.fit_local(models["ou2d"], ou_data, 4).theta.shape == (4,)


# --------------------------------------------------------------------------- CIR below 0
@pytest.fixture(scope="module")
def cir():
    x = sp.Symbol("x", real=True)
    a, b = sp.symbols("a b", real=True)
    return ds.SDEModel([x], [a, b], [a - b * x], diffusion=[[x]], name="cir_r7", nominal=[1, 1])


def test_an_euler_step_below_zero_of_a_cir_model_is_named_not_called_divergence(cir):
    """D = x: an Euler step that takes x below 0 made the next step's √(2D) NaN, reported as
    "simulation diverged … the drift does not confine the state"."""
    theta, dt = [0.2, 1.0], 0.05
    with pytest.raises(ds.DataError) as info:
        ds.simulate(cir, theta, 2000, dt=dt, seed=1)
    msg = str(info.value)
    assert not isinstance(info.value, ds.StationarityError) and "diverged" not in msg
    found = re.match(
        r"simulate: chain (\d+) of model 'cir_r7' left the domain of its drift and D at step "
        r"(\d+) \(t = ([0-9.e+-]+), dt=0\.05\): an Euler step took it to x = \[(\S+)\], where "
        r"D\(x\) is not positive semi-definite \(smallest eigenvalue \S+; D\[0,0\] = x = (\S+)\), "
        r"and the noise √\(2D\) of the next step is not a number\. It did not diverge: the time "
        r"step is too coarse near the domain's edge; reduce dt \(e\.g\. to 0\.005\)",
        msg,
    )
    assert found, msg
    c, step = int(found[1]), int(found[2])
    assert float(found[3]) == pytest.approx(step * dt)
    # oracle: the chain run again alone, recorded at every step, from the same start and stream
    cm = ds.compile_model(cir)
    x0 = initial_states(cir, 2000, 1, theta=np.array(theta), dt=dt)
    keys = chain_keys(1, 2000)
    out, status = cm.run_chains(
        x0[c : c + 1], np.array(theta), np.zeros((1, 1)), dt, 0, 1, step + 1, keys[c : c + 1]
    )
    assert status[0] == step + 1  # the first non-finite step is the one after
    last = out[step - 1, 0, 0]
    assert last < 0 and np.isfinite(out[:step, 0, 0]).all() and (out[: step - 1, 0, 0] >= 0).all()
    assert float(found[4]) == pytest.approx(last, rel=1e-3)


# --------------------------------------------------------------------------- load_model
@pytest.mark.parametrize(
    "text, code, line",
    [
        ("import sys\nsys.exit(0)\n", 0, 2),
        ("raise SystemExit(3)\n", 3, 1),
        (
            "import argparse\np = argparse.ArgumentParser()\np.add_argument('--k')\n"
            "p.parse_args(['--bogus'])\n",
            2,
            4,
        ),
    ],
)
def test_a_model_file_that_exits_is_a_model_error(tmp_path, text, code, line, capsys):
    """``sys.exit()`` (or argparse reading dynosed's own arguments) at the top of a model file
    ended the calling program: the CLI exited 0 without writing its output."""
    path = tmp_path / "exits.py"
    path.write_text(text, encoding="utf-8")
    message = re.escape(
        f"model file {str(path)!r}, line {line} called sys.exit({code!r}) while it was loaded: a "
        "model file is imported, not run as a script (it ended the calling program); put its "
        "script part (argument parsing, sys.exit) under 'if __name__ == \"__main__\":'"
    )
    with pytest.raises(ds.ModelError, match="^" + message + "$"):
        ds.load_model(path)
    capsys.readouterr()


def test_the_cli_reports_a_model_file_that_exits(tmp_path):
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    out = tmp_path / "x.npy"
    res = CliRunner().invoke(
        main, ["simulate", str(tmp_path / "exits.py"), "-n", "5", "--out", str(out)]
    )
    assert res.exit_code == 1 and not out.exists()
    assert "line 2 called sys.exit(0) while it was loaded" in res.output


# --------------------------------------------------------------------------- CSV rows
def test_a_csv_whose_rows_have_one_field_more_than_its_header_is_refused(tmp_path, project_root):
    """``x,y`` over ``1,2,3``: pandas took the first field as the row label, x = 2 and y = 3."""
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    rng = np.random.default_rng(4)
    rows = "".join(
        f"{i},{a!r},{b!r}\n" for i, (a, b) in enumerate(rng.normal(size=(50, 2)).tolist())
    )
    path = tmp_path / "shifted.csv"
    path.write_text("x,y\n" + rows, encoding="utf-8")
    res = CliRunner().invoke(main, ["fit", str(project_root / "models" / "ou2d.py"), str(path)])
    assert res.exit_code == 1
    assert (
        f"Error: {path}: the data rows have 1 field(s) more than the header names (2: x, y): the "
        "first field of each row would be read as a row label and every column as its right "
        "neighbour's values; give the header one name per field (or drop the extra field — a "
        "delimiter at the end of every row makes one)"
    ) in res.output
    # a file written with its index (header ',x,y') has a name for every field: it is read
    path.write_text(",x,y\n" + rows, encoding="utf-8")
    res = CliRunner().invoke(main, ["fit", str(project_root / "models" / "ou2d.py"), str(path)])
    assert res.exit_code == 0, res.output


def test_a_csv_row_with_an_extra_field_is_a_data_error(tmp_path, project_root):
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    path = tmp_path / "ragged.csv"
    path.write_text("x,y\n1,2\n3,4\n5,6,7\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["fit", str(project_root / "models" / "ou2d.py"), str(path)])
    assert res.exit_code == 1 and "ParserError" not in res.output
    assert (
        f"Error: {path}: the rows do not have the same number of fields (Error tokenizing data. "
        "C error: Expected 2 fields in line 4, saw 3); every row needs one value per header column"
    ) in res.output
    # other parser errors are not called a field count (an unclosed quote)
    path.write_text('x,y\n1,2\n"4,5\n', encoding="utf-8")
    res = CliRunner().invoke(main, ["fit", str(project_root / "models" / "ou2d.py"), str(path)])
    assert res.exit_code == 1 and "ParserError" not in res.output
    assert f"Error: {path}: the file cannot be read as CSV (Error tokenizing data. " in res.output


# --------------------------------------------------------------------------- lists, labels
@pytest.mark.parametrize(
    "rows, bad, n", [([[1.0, 2.0], [3.0]], 1, 1), ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0, 7.0]], 2, 3)]
)
def test_ragged_rows_name_the_row_and_its_length(models, rows, bad, n):
    """NumPy's "setting an array element with a sequence. The requested array has an
    inhomogeneous shape after 1 dimensions …" named no row."""
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"X: rows of different lengths: row {bad} has {n} value(s), row 0 has 2; every row "
            "holds one value per state variable of model 'ou2d' (x, y)"
        ),
    ):
        ds.fit_global(models["ou2d"], rows, features=ds.Features(n_features=16))


def test_a_dataframe_with_pandas_default_labels_says_so(models, ou_data):
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "X: DataFrame has no column 'x' for state variable 'x' (columns: '0', '1'); its "
            "columns are the default labels 0 … 1 of pandas.DataFrame(array), which say nothing "
            "about which state each holds: name them (pandas.DataFrame(array, columns=['x', "
            "'y'])), or pass the array itself"
        ),
    ):
        ds.fit_global(models["ou2d"], pd.DataFrame(ou_data), features=ds.Features(n_features=16))
    # probes in such a frame: the fix names every state (it named the first missing one only)
    with pytest.raises(
        ds.DataError, match=re.escape("(pandas.DataFrame(array, columns=['x', 'y']))")
    ):
        ds.fit_local(models["ou2d"], ou_data, pd.DataFrame(ou_data[:5]))


# --------------------------------------------------------------------------- step counts
@pytest.mark.parametrize(
    "kw, shown",
    [
        (dict(thin=2**63), "5000 + 9223372036854775808 × 1 = 9.22e+18 steps of dt=0.01"),
        (dict(burn_in=2**64), "18446744073709551616 + 10 × 1 = 1.84e+19 steps of dt=0.01"),
    ],
)
def test_more_steps_than_a_chain_can_count_are_refused(models, kw, shown):
    """thin=2**63 wrapped the kernel's int64 step counter around and returned its uninitialised
    record buffer as samples; burn_in=2**64 was a Numba TypingError."""
    with pytest.raises(
        ds.DataError,
        match=re.escape(f"simulate: burn_in + thin × records per chain = {shown} per chain")
        + r" \(t = \S+\), beyond the 4\.61e\+18 steps a chain can count; give burn_in and thin "
        r"as steps of dt",
    ):
        ds.simulate(models["ou2d"], models["ou2d"].nominal, 10, **kw)


# --------------------------------------------------------------------------- time courses
INIT = ([0.0, 0.0], np.eye(2))


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(times=["a", 1.0]), "times: holds text at row 0: 'a'; numbers are expected"),
        (dict(times=[1.0, 1.0]), "times: time 1 is given twice; give each time once"),
        (
            dict(n_samples=[10, 20, 30]),
            "n_samples: one count, or a flat list of one per time (2), got 3",
        ),
        (
            dict(initial=(["a", 0.0], np.eye(2))),
            "initial: mean: holds text at row 0: 'a'; numbers are expected",
        ),
        (
            dict(times=[1e300, 2e300]),
            "times: t = 1e+300 with dt=0.01 needs 1e+302 steps per chain, beyond the 4.61e+18 "
            "steps a chain can count; check the time unit of the snapshot times, or enlarge dt",
        ),
    ],
)
def test_time_course_arguments_are_named(models, kw, message):
    """Were NumPy's "could not convert string to float", "operands could not be broadcast", an
    OverflowError "int too big to convert", and for a repeated time "1 snapshot(s)"."""
    from dynosed_sym.simulation import simulate_time_course

    args = dict(times=[0.5, 1.0], n_samples=10, initial=INIT) | kw
    with pytest.raises(ds.DataError, match="^" + re.escape(message)):
        simulate_time_course(models["ou2d"], models["ou2d"].nominal, **args)


def test_initial_samples_in_a_dataframe_are_read_by_name(models):
    """``initial=DataFrame({"y": …, "x": …})`` was read by position: y's values started x."""
    from dynosed_sym.simulation.simulate import initial_draws, snapshot_at

    ou = models["ou2d"]
    frame = pd.DataFrame({"y": [5.0, 6.0], "x": [0.0, 1.0]})
    X = snapshot_at(ou, ou.nominal, 0.0, 50, initial=frame)
    assert {tuple(r) for r in X.tolist()} == {(0.0, 5.0), (1.0, 6.0)}
    with pytest.raises(ds.DataError, match=r"^initial: a DataFrame of samples \(columns y, x\)"):
        initial_draws(frame, 5, 2, np.random.default_rng(0))  # no model to read the names


# --------------------------------------------------------------------------- files
def test_a_transposed_npy_file_says_so(models, ou_data, tmp_path):
    path = tmp_path / "t.npy"
    np.save(path, ou_data.T.copy())
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"X: {path} holds an array of shape (2, 600), expected (N, 2) with columns x, y; it "
            "looks transposed (rows are samples): store its transpose"
        ),
    ):
        ds.fit_global(models["ou2d"], str(path), features=ds.Features(n_features=16))


def test_simulate_writes_the_npy_file_it_names(tmp_path, project_root, monkeypatch):
    """``--out x.NPY`` wrote x.NPY.npy (np.save appends its suffix, case-sensitively) and said
    "wrote … to x.NPY"; a fit of x.NPY then found no file."""
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    monkeypatch.chdir(tmp_path)
    ou = str(project_root / "models" / "ou2d.py")
    res = CliRunner().invoke(main, ["simulate", ou, "-n", "50", "--out", "x.NPY", "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert "to x.NPY " in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.NPY"]
    X = np.load(tmp_path / "x.NPY")
    model = ds.load_model(ou)
    np.testing.assert_array_equal(X, ds.simulate(model, model.nominal, 50, seed=2))


def test_a_design_checks_dataframe_initial_law_is_read_by_name(models, monkeypatch):
    """The design check drew its t = 0 snapshot from ``initial=`` without the model, so a
    DataFrame of samples was refused there (read by position before this round)."""
    from dynosed_sym.identifiability import designs

    drawn = {}
    draw = designs.draw_design
    monkeypatch.setattr(
        designs, "draw_design", lambda *a, **k: drawn.setdefault("d", draw(*a, **k))
    )
    frame = pd.DataFrame({"y": [5.0, 6.0], "x": [0.0, 1.0]})
    experiment = ds.Experiment(times=[0.0, 0.5, 1.0], initial=frame, advise=False)
    ds.check_identifiability(models["ou2d"], experiment=experiment, study=ds.Study(n_samples=200))
    first = drawn["d"]["data"].snapshots[0]
    assert {tuple(r) for r in np.asarray(first).tolist()} == {(0.0, 5.0), (1.0, 6.0)}


def test_streamed_chunks_are_checked_against_the_model_once(models, ou_data, tmp_path, monkeypatch):
    """The streamed global fit checked each chunk's states against the model twice (the source's
    checked chunks, then the feature check of the fill); once now, still before the fill."""
    from dynosed_sym.assembly import features
    from dynosed_sym.data import sources

    calls = []
    for module in (sources, features):
        real = module.state_overflow
        monkeypatch.setattr(
            module, "state_overflow", lambda *a, _r=real, **k: calls.append(1) or _r(*a, **k)
        )
    path = tmp_path / "ou.npy"
    np.save(path, ou_data)
    ds.fit_global(
        models["ou2d"],
        str(path),
        features=ds.Features(n_features=16, bandwidth=1.0),
        execution=ds.Execution(chunk_rows=200),
    )
    assert len(calls) == 3  # 600 rows in chunks of 200
