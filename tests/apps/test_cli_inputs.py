"""The ``dynosed`` command and its input files (issue 22): ``--out`` never overwrites an input,
and a malformed table names the file, the column and the row, and says what to do."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

from dynosed_sym.apps.cli import main


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def data_csv(tmp_path, ou_samples):
    """An ou2d data file (exact stationary samples, M = −I)."""
    X = ou_samples(-np.eye(2), 1.0, 400, seed=3)
    path = tmp_path / "data.csv"
    path.write_text("x,y\n" + "".join(f"{a!r},{b!r}\n" for a, b in X.tolist()), encoding="utf-8")
    return path


@pytest.mark.parametrize("form", ["same", "relative", "dotdot", "absolute", "symlink", "hardlink"])
def test_fit_refuses_to_overwrite_its_input(runner, project_root, data_csv, form, monkeypatch):
    """``--out`` naming the data file — as it was given, through another relative path, an
    absolute path, a symlink or a hard link — is refused before the fit (exit 2), and the data
    file is left byte for byte as it was."""
    folder = data_csv.parent
    monkeypatch.chdir(folder)
    (folder / "sub").mkdir()
    out = {
        "same": "data.csv",
        "relative": "./data.csv",
        "dotdot": "sub/../data.csv",
        "absolute": str(data_csv),
        "symlink": "link.csv",
        "hardlink": "hard.csv",
    }[form]
    if form == "symlink":
        os.symlink("data.csv", "link.csv")
    if form == "hardlink":
        os.link("data.csv", "hard.csv")
    before = data_csv.read_bytes()
    model = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["fit", model, "data.csv", "--out", out, "--features", "32"])
    assert res.exit_code == 2, res.output
    assert "Invalid value for --out" in res.output
    assert "is an input file of this command: writing the results there would overwrite it" in (
        " ".join(res.output.split())
    )
    assert data_csv.read_bytes() == before


def test_fit_refuses_to_overwrite_any_of_several_inputs(runner, project_root, data_csv, tmp_path):
    other = tmp_path / "other.csv"
    other.write_bytes(data_csv.read_bytes())
    model = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(
        main,
        ["fit", model, str(data_csv), str(other), "--input", "s=1", "--out", str(other)],
    )
    assert res.exit_code == 2 and "is an input file" in res.output, res.output
    assert other.read_bytes() == data_csv.read_bytes()


def test_fit_writes_a_new_out_file(runner, project_root, data_csv, tmp_path):
    """(the check does not get in the way of a fresh file, or of an existing one that is not an
    input)"""
    model = str(project_root / "models" / "ou2d.py")
    for out in (tmp_path / "fit.csv", tmp_path / "fit.csv"):
        res = runner.invoke(
            main, ["fit", model, str(data_csv), "--out", str(out), "--features", "32"]
        )
        assert res.exit_code == 0, res.output
        assert out.read_text(encoding="utf-8").startswith("parameter,estimate,")


@pytest.mark.parametrize("command", ["fit", "simulate"])
def test_out_in_a_missing_folder_is_refused_before_the_work(
    runner, project_root, data_csv, tmp_path, monkeypatch, command
):
    """fit --out missing/fit.json ran the whole fit, then stopped with "Error: FileNotFoundError:
    [Errno 2] No such file or directory" (exit 1); simulate said so after the simulation. Both
    are usage errors now, before the model is even loaded; FitResult.to_json(path) names the
    path."""
    model = str(project_root / "models" / "ou2d.py")
    out = tmp_path / "missing" / ("fit.json" if command == "fit" else "x.npy")
    args = [model, str(data_csv)] if command == "fit" else [model, "-n", "10"]
    calls = []
    where = "fit" if command == "fit" else "commands"
    monkeypatch.setattr(f"dynosed_sym.apps.cli.{where}._load_model", lambda *a: calls.append(a))
    res = runner.invoke(main, [command, *args, "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert f"Invalid value for --out: folder '{out.parent}' of '{out}' does not exist" in (
        "".join(res.output.split("\n"))
    )
    assert not calls


def test_to_json_into_a_missing_folder_names_the_path(tmp_path, models):
    import dynosed_sym as ds

    fit = ds.fit_local(
        models["ou2d"],
        None,
        np.zeros((3, 2)),
        scores=ds.Scores(score=(np.zeros((3, 2)), np.broadcast_to(-np.eye(2), (3, 2, 2)))),
    )
    path = tmp_path / "missing" / "fit.json"
    with pytest.raises(ds.DataError, match=r"to_json: cannot write path='.*fit\.json': No such"):
        fit.to_json(path)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "x, y\n1,2\n3,4\n0.5,1\n",
            r"bad.csv: DataFrame has no column 'y' for state variable 'y' \(columns: 'x', ' y'\); "
            r"column ' y' differs from 'y' only by spaces: strip them .* or write the file's "
            r"header without spaces after the commas",
        ),
        (
            "x,Y\n1,2\n3,4\n0.5,1\n",
            r"column 'Y' differs from 'y' in case: names are case-sensitive",
        ),
        (
            "x;y\n1;2\n3;4\n0.5;1\n",
            r"\(columns: 'x;y'\); column 'x;y' holds several names: the file's columns are "
            r"separated by another character than ','",
        ),
        (
            "x,y\n1,2\n3,abc\n0.5,1\n",
            r"bad.csv: holds text in column 'y', row 1: 'abc'; numbers are expected: fix or drop "
            r"that entry \(in a CSV file: text, a decimal comma",
        ),
        ('x,y\n"1,5",2\n3,4\n0.5,1\n', r"bad.csv: holds text in column 'x', row 0: '1,5'"),
        ("x,y\n1,2\nTrue,4\n0.5,1\n", r"bad.csv: holds text in column 'x', row 1: 'True'"),
        ("x,y\ntrue,2\nfalse,4\ntrue,1\n", r"bad.csv: holds boolean values in column 'x', row 0"),
        # pandas renamed the second 'x' to 'x.1': the state was read from whichever copy
        ("x,y,x\n5,1,2\n5,3,4\n5,0.5,1\n", r"bad.csv: the header names column 'x' 2 times"),
        ("", r"bad.csv: the file is empty"),
    ],
)
@pytest.mark.parametrize("route", ["global", "local"])
def test_malformed_table_names_file_column_row(
    runner, project_root, tmp_path, text, message, route
):
    """A CSV header with spaces, another case or another separator; text, a decimal comma or
    booleans in a numeric column: one line naming the file, the column as read (repr) and the
    row, and the fix — the data are never cast."""
    bad = tmp_path / "bad.csv"
    bad.write_text(text, encoding="utf-8")
    model = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["fit", model, str(bad), "--route", route])
    assert res.exit_code == 1, res.output
    line = " ".join(res.output.split())
    assert line.startswith("Error: ") and str(bad) in line
    assert re.search(message, line), line


def test_npy_data_file_that_is_not_an_array_is_named(runner, project_root, tmp_path):
    """A pickle saved as DATA.npy: the file is named, without the allow_pickle advice."""
    path = tmp_path / "data.npy"
    path.write_bytes(b"\x80\x04" + bytes(100))
    model = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["fit", model, str(path), "--features", "32"])
    text = " ".join(res.output.split())
    assert res.exit_code == 1, res.output
    assert (
        f"{str(path)!r} is not a numeric .npy array: it does not start with the .npy signature"
        in text
    )
    assert "allow_pickle" not in text
