"""The command line on designs: several data files with --input, an environment column, and the
design check (issue 16)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import OU_M, ou_stationary_samples

from dynosed_sym.apps.cli import main

MODEL = "docs/examples/ou2d_noise.py"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    folder = tmp_path_factory.mktemp("designs")
    out = {}
    for j, s in enumerate((1.0, 3.0)):
        X = ou_stationary_samples(OU_M, np.diag([s, 1.0]), 40_000, 70 + j)
        path = folder / f"s{s:g}.csv"
        pd.DataFrame(X, columns=["x", "y"]).to_csv(path, index=False, float_format="%.17g")
        out[s] = str(path)
    frame = pd.concat(
        [
            pd.read_csv(out[s], float_precision="round_trip").assign(condition=f"s{s:g}")
            for s in (1.0, 3.0)
        ],
        ignore_index=True,
    )
    out["both"] = str(folder / "both.csv")
    frame.to_csv(out["both"], index=False, float_format="%.17g")
    return out


def test_fit_two_files_with_inputs(files):
    runner = CliRunner()
    args = [
        "fit",
        MODEL,
        files[1.0],
        files[3.0],
        "--input",
        "s=1",
        "--input",
        "s=3",
        "--features",
        "512",
        "--json",
    ]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    assert rec["report"]["rank"] == 4
    est = np.array([p["estimate"] for p in rec["parameters"]])
    assert np.abs(est - OU_M.reshape(-1)).max() < 0.1
    assert [e["inputs"] for e in rec["design"]["environments"]] == [{"s": 1.0}, {"s": 3.0}]
    # the same with named environments (file stems) and an environment column
    named = runner.invoke(
        main,
        [
            "fit",
            MODEL,
            files[1.0],
            files[3.0],
            "--input",
            "s3:s=3",
            "--input",
            "s1:s=1",
            "--features",
            "512",
            "--json",
        ],
    )
    col = runner.invoke(
        main,
        [
            "fit",
            MODEL,
            files["both"],
            "--env-column",
            "condition",
            "--input",
            "s1:s=1",
            "--input",
            "s3:s=3",
            "--features",
            "512",
            "--json",
        ],
    )
    for other in (named, col):
        assert other.exit_code == 0, other.output
        assert [p["estimate"] for p in json.loads(other.stdout)["parameters"]] == est.tolist()


def test_fit_one_file_rank_3_and_errors(files):
    runner = CliRunner()
    res = runner.invoke(main, ["fit", MODEL, files[1.0], "--input", "s=1", "--features", "256"])
    assert res.exit_code == 0, res.output
    assert "rank 3 of 4" in res.output and "M12" in res.output
    res = runner.invoke(main, ["fit", MODEL, files[1.0], files[3.0], "--input", "s=1"])
    assert (
        res.exit_code == 2 and "1 --input option(s) without ENV: for 2 environments" in res.output
    )
    res = runner.invoke(main, ["fit", MODEL, files[1.0], files[3.0], "--input", "z:s=1"])
    assert res.exit_code == 2 and "'z' is not an environment" in res.output
    res = runner.invoke(main, ["fit", MODEL, files[1.0]])
    assert res.exit_code == 1 and "has inputs (s)" in res.output


def test_check_design_structural_only():
    res = CliRunner().invoke(
        main, ["check", MODEL, "--input", "A:s=1", "--input", "B:s=3", "--structural-only"]
    )
    assert res.exit_code == 0, res.output
    assert "structural check of the design (exact" in res.output and "rank 4 of 4" in res.output
    res = CliRunner().invoke(
        main, ["check", MODEL, "--input", "s=1", "--structural-only", "--json"]
    )
    rec = json.loads(res.stdout)
    assert rec["structural"]["rank"] == 3 and rec["structural"]["combinations"] == ["M12 − M21"]
    # the text comes with its coefficients: M12 − M21, two entries of equal size, opposite sign
    assert rec["null_space"] == ["M12 − M21"]
    (coef,) = rec["null_space_coefficients"]
    nonzero = [c for c in coef if c != 0]
    assert len(nonzero) == 2 and nonzero[0] == -nonzero[1] != 0


@pytest.mark.slow
def test_check_design_with_the_simulator_and_advice():
    """The compiled simulator per environment (one compile per input value) and the advice."""
    res = CliRunner().invoke(
        main,
        ["check", MODEL, "--input", "s=1", "-N", "4000", "--features", "256", "--burn-in", "300"],
    )
    assert res.exit_code == 0, res.output
    assert "design advice" in res.output and "→ add an environment with s =" in res.output


def test_fit_time_column(tmp_path):
    pd = pytest.importorskip("pandas")
    from conftest import ou_time_course

    snaps = ou_time_course([0.0, 0.2, 0.4, 0.6, 0.8], 4000, seed=4)
    frame = pd.concat(
        [pd.DataFrame(X, columns=["x", "y"]).assign(hours=t) for t, X in snaps.items()]
    )
    path = tmp_path / "course.csv"
    frame.to_csv(path, index=False, float_format="%.17g")
    res = CliRunner().invoke(
        main,
        [
            "fit",
            "models/ou2d.py",
            str(path),
            "--time-column",
            "hours",
            "--features",
            "256",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    env = rec["design"]["environments"][0]
    assert env["kind"] == "timecourse" and env["times"] == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert env["order"] == 4 and rec["report"]["rank"] == 4
