"""Reliability round eight: the last review's findings, each refused with a message that names
the argument, the field or the option and says what to do (docs/reliability.md, one row each).

Oracles: the messages of the same checks on the inputs they document (a record array given
whole, a one-point probe array), and the fit of the corrected input.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from conftest import records

import dynosed_sym as ds
from dynosed_sym.simulation.simulate import simulate_time_course

OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])  # ou2d's nominal drift; D = I


@pytest.fixture(scope="module")
def ou_data(ou_samples):
    return ou_samples(OU_M, 1.0, 600, seed=8)


def test_a_list_of_record_chunks_names_their_fields(models, ou_data):
    """A list of structured arrays, streamed as chunks, said "holds a value that is not a number
    in column 'x', row 0: (…, …)" (NumPy stacked the records); now each chunk is refused as a
    record array whole is, naming its fields and the chunk."""
    ou = models["ou2d"]
    rec = records(ou_data, ["x", "y"])
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "X (chunk starting at row 0): a NumPy structured (record) array with fields 'x', 'y': "
            "each row is one record, not a row of numbers: pass pandas.DataFrame(chunk)"
        ),
    ):
        ds.fit_global(ou, [rec[:300], rec[300:]], features=ds.Features(n_features=16))
    other = records(ou_data, ["x1", "x2"])
    with pytest.raises(ds.DataError, match=r"has no field 'x' for state variable 'x'"):
        ds.fit_global(ou, (other[:300], other[300:]), features=ds.Features(n_features=16))
    # the local route reads the same lists, and a record chunk among DataFrames is named too
    with pytest.raises(ds.DataError, match=r"^X \(chunk starting at row 0\): a NumPy structured"):
        ds.fit_local(ou, [rec[:300], rec[300:]], np.zeros((4, 2)) + 0.1 * np.arange(4)[:, None])
    frame = pd.DataFrame(ou_data[:300], columns=["x", "y"])
    probes = np.zeros((4, 2)) + 0.1 * np.arange(4)[:, None]  # (streamed: explicit probes)
    for fit in (lambda Z: ds.fit_local(ou, Z, probes), lambda Z: ds.fit_global(ou, Z)):
        with pytest.raises(
            ds.DataError, match=r"^X \(chunk starting at row 300\): a NumPy structured"
        ):
            fit([frame, rec[300:]])


def test_probes_mixing_rows_and_numbers_are_named(models, ou_data):
    """``[[0, 0], 1]`` gave NumPy's "setting an array element with a sequence …"."""
    ou = models["ou2d"]
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "probes: mixes rows and single numbers: row 1 is one number, row 0 a row; give one "
            "row per point with one value per state variable of model 'ou2d' (x, y)"
        ),
    ):
        ds.fit_local(ou, ou_data, [[0.0, 0.0], 1.0])
    with pytest.raises(ds.DataError, match=r"row 1 is a row, row 0 one number"):
        ds.fit_local(ou, ou_data, [1.0, [0.0, 0.0]])
    # rows of any kind are rows: a range, a pandas row, a NumPy row (the check refused them);
    # the fit equals the one on the plain nested list, bit for bit
    frame = pd.DataFrame(ou_data, columns=["x", "y"])
    mixed = [[0.5, 1.0], range(2), frame.iloc[1], ou_data[2]]  # (distinct: repeats are refused)
    plain = [[0.5, 1.0], [0.0, 1.0], ou_data[1].tolist(), ou_data[2].tolist()]
    a, b = ds.fit_local(ou, ou_data, mixed), ds.fit_local(ou, ou_data, plain)
    np.testing.assert_array_equal(a.theta, b.theta)


def test_a_one_state_models_float_probe_says_how_to_give_one_point():
    """``probes=0.5`` for a d = 1 model is refused (a count is an integer) and the message says
    how one point at 0.5 is written; that spelling fits."""
    import sympy as sp

    x, a = sp.symbols("x a", real=True)
    m = ds.SDEModel([x], [a], [-a * x], [[sp.Rational(1, 2)]], name="ou1_round8")
    X = np.random.default_rng(0).normal(0.0, np.sqrt(0.5), size=(800, 1))
    with pytest.raises(ds.DataError, match=re.escape("one probe at 0.5 is probes=[[0.5]]")):
        ds.fit_local(m, X, 0.5)
    fit = ds.fit_local(m, X, [[0.5]])
    assert fit.theta.shape == (1,) and np.isfinite(fit.theta).all()


def test_simulate_time_course_refuses_nested_sample_counts(models):
    """``n_samples=[[100], [200]]`` was a raw broadcast ValueError."""
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "n_samples: one count, or a flat list of one per time (2), got an array of shape (2, 1)"
        ),
    ):
        simulate_time_course(
            models["ou2d"], OU_M.ravel(), [0.5, 1.0], n_samples=[[100], [200]], initial=np.zeros(2)
        )


@pytest.mark.parametrize(
    "kw, message",
    [
        (
            dict(n_samples=[[50], [60, 70]]),
            "n_samples: one count, or a flat list of one per time "
            "(2), got rows of different lengths",
        ),
        (dict(times=[1.0]), "times: at least 2 snapshot times needed, got 1"),
        (
            dict(times=[0.5 * k for k in range(200)] + [-1.0]),
            "times: time -1 (entry 200) is not a finite time ≥ 0",
        ),
    ],
)
def test_simulate_time_course_names_the_bad_entry(kw, message, models):
    """Ragged counts were NumPy's "inhomogeneous shape"; one time was "TimeCourse: 1
    snapshot(s)"; a bad time among 201 printed the whole list (6000 characters) without saying
    which."""
    args = dict(times=[0.5, 1.0], n_samples=20, initial=(np.zeros(2), np.eye(2)))
    args.update(kw)
    times = args.pop("times")
    with pytest.raises(ds.DataError, match="^" + re.escape(message) + "$"):
        simulate_time_course(models["ou2d"], OU_M.ravel(), times, **args)


@pytest.mark.parametrize(
    "value, why",
    [
        ("nan", "nan is not a finite number"),
        ("inf", "inf is not a finite number"),
        ("-inf", "-inf is not in the range x>0"),
    ],
)
def test_cli_positive_options_refuse_non_finite_values(value, why, tmp_path, ou_data, project_root):
    """``dynosed fit --temperature nan`` named ``Scores.temperature`` (click's range lets nan
    through); now click names the option, for every positive number option (``--dt`` too)."""
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    data = tmp_path / "x.npy"
    np.save(data, ou_data)
    model = str(project_root / "models" / "ou2d.py")
    runner = CliRunner()
    res = runner.invoke(
        main, ["fit", model, str(data), "--route", "local", f"--temperature={value}"]
    )
    assert res.exit_code == 2, res.output
    assert f"Invalid value for '--temperature': {why}" in res.output, res.output
    res = runner.invoke(main, ["simulate", model, "-n", "10", f"--dt={value}"])
    assert res.exit_code == 2 and f"Invalid value for '--dt': {why}" in res.output, res.output
    if value == "nan":  # the other number options: --lam (≥ 0), --level (0, 1)
        res = runner.invoke(main, ["fit", model, str(data), "--lam=nan"])
        assert "Invalid value for '--lam': nan is not a finite number." in res.output
        res = runner.invoke(main, ["check", model, "--structural-only", "--level=nan"])
        assert "Invalid value for '--level': nan is not a finite number." in res.output
        args = ["check", model, "--times", "0.5,1", "--initial-mean", "0,0", "--initial-var=-1"]
        res = runner.invoke(main, args)  # (a negative variance: the option, not a covariance)
        assert "Invalid value for '--initial-var': -1.0 is not in the range x>=0." in res.output


@pytest.mark.parametrize("kind", ["zarr", "hdf5"])
def test_a_transposed_zarr_or_hdf5_store_gets_a_hint_that_works(kind, models, ou_data, tmp_path):
    """The transposed-array hint said ``numpy.save(path, X.T)`` for Zarr and HDF5 stores too
    (a Zarr or HDF5 array has no ``.T``), and a refused HDF5 file stayed open, so reopening it
    to fix it failed.  The hint is followed here as written; the fit of the fixed store equals
    the fit of the array, bit for bit."""
    features = ds.Features(n_features=16)
    want = ds.fit_global(models["ou2d"], ou_data, features=features).theta
    if kind == "zarr":
        zarr = pytest.importorskip("zarr")
        path = str(tmp_path / "t.zarr")
        zarr.save(path, ou_data.T.copy())
        with pytest.raises(ds.DataError, match=re.escape("zarr.save(new_path, X[:].T)")):
            ds.fit_global(models["ou2d"], path, features=features)
        X = zarr.open(path, mode="r")
        zarr.save(str(tmp_path / "fixed.zarr"), X[:].T)
        got = ds.fit_global(models["ou2d"], str(tmp_path / "fixed.zarr"), features=features)
    else:
        h5py = pytest.importorskip("h5py")
        path = tmp_path / "t.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("X", data=ou_data.T.copy())
        with pytest.raises(
            ds.DataError, match=re.escape("f.create_dataset(new_name, data=X[()].T)")
        ):
            ds.fit_global(models["ou2d"], str(path), features=features)
        with h5py.File(path, "a") as f:  # (the refused file was left open: this failed)
            f.create_dataset("XT", data=f["X"][()].T)
        with h5py.File(path, "r") as f:
            got = ds.fit_global(models["ou2d"], f["XT"], features=features)
    np.testing.assert_array_equal(got.theta, want)


def test_the_mixed_rows_check_leaves_other_scalars_to_the_conversion(models):
    """Only rows (lists, tuples, ranges, arrays) against plain numbers are "mixed": a Decimal
    among floats is a number (it was called "a row"), None the missing value the NaN check
    names, text the text check's."""
    from decimal import Decimal

    import sympy as sp

    x, a = sp.symbols("x a", real=True)
    m = ds.SDEModel([x], [a], [-a * x], [[sp.Rational(1, 2)]], name="ou1_round8")
    X = list(np.random.default_rng(3).normal(0.0, np.sqrt(0.5), 400))
    plain = ds.fit_global(m, np.array(X)[:, None], features=ds.Features(n_features=16))
    with_decimal = [Decimal(str(X[0]))] + X[1:]
    got = ds.fit_global(m, with_decimal, features=ds.Features(n_features=16))
    np.testing.assert_array_equal(got.theta, plain.theta)
    with pytest.raises(ds.DataError, match=r"^X: 1 row\(s\) contain NaN or inf \(rows 1\)"):
        ds.fit_global(m, [X[0], None] + X[2:])
    with pytest.raises(ds.DataError, match=r"^X: holds numbers stored as text"):
        ds.fit_global(m, [X[0], "0.2"] + X[2:])


def test_the_memmap_transpose_hint_writes_a_new_file(models, ou_data, tmp_path):
    """The memmap hint said numpy.save(path, numpy.asarray(X).T): to the memmap's own file that
    truncates the file it is reading (the data were lost).  Followed as written now, with a new
    path, it gives the fit of the array."""
    path = tmp_path / "t.npy"
    np.save(path, ou_data.T.copy())
    X = np.load(path, mmap_mode="r")
    features = ds.Features(n_features=16)
    with pytest.raises(ds.DataError, match=re.escape("numpy.save(new_path, numpy.array(X).T)")):
        ds.fit_global(models["ou2d"], X, features=features)
    np.save(tmp_path / "fixed.npy", np.array(X).T)
    got = ds.fit_global(models["ou2d"], str(tmp_path / "fixed.npy"), features=features)
    want = ds.fit_global(models["ou2d"], ou_data, features=features)
    np.testing.assert_array_equal(got.theta, want.theta)


def test_a_one_environment_design_takes_probes_keyed_by_its_name(models, ou_data):
    """``fit_local(model, {"a": X}, {"a": P})`` said "probes: holds a value that is not a
    number" (a design of one environment read the dict as the probes); now it is the fit with
    the probes themselves, bit for bit.  A wrong key still says which environment has none."""
    P = np.random.default_rng(1).normal(size=(10, 2)) * 0.5
    keyed = ds.fit_local(models["ou2d"], {"a": ou_data}, {"a": P})
    plain = ds.fit_local(models["ou2d"], {"a": ou_data}, P)
    np.testing.assert_array_equal(keyed.theta, plain.theta)
    two = {"a": ou_data[:300], "b": ou_data[300:]}
    with pytest.raises(ds.DataError, match=r"^probes: no probes for environment 'b'"):
        ds.fit_local(models["ou2d"], two, {"a": P})


def test_a_list_of_chunks_with_a_probe_count_says_how_to_join_them(models, ou_data):
    """``fit_local(model, [X1, X2], 8)`` said X "is streamed (iterator) and is read only once",
    which a list is not; the message now gives the call that works, and that call fits."""
    chunks = [ou_data[:300], ou_data[300:]]
    with pytest.raises(ds.DataError, match=re.escape("ds.choose_probes(np.concatenate(X), 8)")):
        ds.fit_local(models["ou2d"], chunks, 8)
    P = ds.choose_probes(np.concatenate(chunks), 8)
    got = ds.fit_local(models["ou2d"], chunks, P)  # (streamed: the sums in another order)
    want = ds.fit_local(models["ou2d"], ou_data, P).theta
    np.testing.assert_allclose(got.theta, want, rtol=1e-10, atol=1e-12)
