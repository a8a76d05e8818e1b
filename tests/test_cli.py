"""The ``dynosed`` command (click): ``check`` and ``compile``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib import metadata

import pytest
from click.testing import CliRunner

from dynosed_sym.cli import main


@pytest.fixture
def runner():
    return CliRunner()


def _model(project_root, name):
    return str(project_root / "models" / f"{name}.py")


def test_help(runner):
    res = runner.invoke(main, ["--help"])
    assert res.exit_code == 0 and "check" in res.output and "compile" in res.output
    res = runner.invoke(main, ["check", "--help"])
    assert res.exit_code == 0 and "--rel-error" in res.output and "--structural-only" in res.output


def test_check_lorenz(runner, project_root):
    res = runner.invoke(main, ["check", _model(project_root, "lorenz"), "-N", "4000"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "structural check" in out and "design-time check: 4,000 simulated samples" in out
    assert "rank 3 of 3 (identifiable)" in out
    for name in ("sigma", "rho", "beta"):
        assert name in out
    assert "N for ±10%" in out


def test_check_structural_only_ou(runner, project_root):
    res = runner.invoke(main, ["check", _model(project_root, "ou2d"), "--structural-only"])
    assert res.exit_code == 0, res.output
    assert "rank 3 of 4 (exact)" in res.output and "M12 − M21" in res.output
    assert "design-time" not in res.output.split("structural check")[0]


def test_check_nominal_override_and_rel_error(runner, project_root):
    res = runner.invoke(main, ["check", _model(project_root, "ou2d_m12"), "--nominal", "M12=0.8",
                               "-N", "4000", "--rel-error", "0.05"])
    assert res.exit_code == 0, res.output
    assert "N for ±5%" in res.output and "0.8" in res.output


def test_check_errors(runner, project_root, tmp_path):
    res = runner.invoke(main, ["check", _model(project_root, "lorenz"), "--nominal", "nope=1"])
    assert res.exit_code == 2 and "not a parameter" in res.output
    res = runner.invoke(main, ["check", _model(project_root, "lorenz"), "--nominal", "sigma"])
    assert res.exit_code == 2 and "NAME=VALUE" in res.output
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    res = runner.invoke(main, ["check", str(bad)])
    assert res.exit_code == 1 and "SDEModel" in res.output
    nonom = tmp_path / "nonom.py"
    nonom.write_text("import sympy as sp\nimport dynosed_sym as ds\nx, a = sp.symbols('x a')\n"
                     "model = ds.SDEModel([x], [a], [-a*x], diffusion=1, name='nonom')\n")
    res = runner.invoke(main, ["check", str(nonom)])
    assert res.exit_code == 2 and "--nominal" in res.output
    res = runner.invoke(main, ["check", str(nonom), "--structural-only"])
    assert res.exit_code == 0 and "rank 1 of 1" in res.output


def test_compile(runner, project_root):
    res = runner.invoke(main, ["compile", _model(project_root, "ou2d_m12")])
    assert res.exit_code == 0, res.output
    assert "ou2d_m12" in res.output and ".py" in res.output


def test_console_script_entry_point():
    eps = metadata.entry_points(group="console_scripts")
    assert any(ep.name == "dynosed" and ep.value == "dynosed_sym.cli:main" for ep in eps)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lorenz", "grn_bcell"])
def test_dynosed_check_command_end_to_end(project_root, name):
    """The installed command, as a user types it (timing printed, not asserted: DESIGN §5)."""
    exe = shutil.which("dynosed", path=os.path.dirname(sys.executable)) or shutil.which("dynosed")
    cmd = [exe] if exe else [sys.executable, "-m", "dynosed_sym.cli"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd + ["check", f"models/{name}.py"], cwd=project_root, capture_output=True,
                         text=True, timeout=600)
    elapsed = time.perf_counter() - t0
    print(f"\n`dynosed check models/{name}.py`: {elapsed:.1f} s")
    assert res.returncode == 0, res.stderr
    assert "design-time check" in res.stdout


# --------------------------------------------------------------------------- the installed command,
# end to end, as a user types it (subprocess; few and small: the Numba cache is shared on disk)
def _dynosed(project_root, *args, cwd=None):
    """Run ``dynosed ARGS`` in a fresh process → CompletedProcess (text)."""
    exe = shutil.which("dynosed", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "dynosed_sym.cli"]
    env = dict(os.environ, DYNOSED_QUIET="1")
    return subprocess.run(cmd + [str(a) for a in args], cwd=cwd or project_root, capture_output=True,
                          text=True, timeout=600, env=env)


def _ok(res):
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return res.stdout


def _one_line_error(res, *words):
    """Non-zero exit, no traceback, exactly one non-empty line on stderr naming ``words``."""
    assert res.returncode != 0
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in res.stderr
    err = [ln for ln in lines if ln.startswith("Error")]
    assert len(err) == 1, res.stderr
    for w in words:
        assert w in err[0], err[0]
    return err[0]


def test_cli_simulate_fit_compile_check_end_to_end(project_root, tmp_path):
    """simulate → .csv / .npy / .parquet; fit (global, JSON) gives the library's fit of the same
    array; local route table; compile and check; all through the installed command."""
    import json

    import numpy as np
    import pandas as pd

    import dynosed_sym as ds

    model_file = project_root / "models" / "ou2d.py"
    csv, npy, pq = tmp_path / "ou.csv", tmp_path / "ou.npy", tmp_path / "ou.parquet"
    out = _ok(_dynosed(project_root, "simulate", model_file, "-n", 3000, "--burn-in", 500, "--seed", 3,
                       "--out", csv))
    assert "3,000 × 2 samples of 'ou2d'" in out and "M12 = 0.5" in out
    rec = json.loads(_ok(_dynosed(project_root, "simulate", model_file, "-n", 3000, "--burn-in", 500,
                                  "--seed", 3, "--theta", "M12=0.7", "--out", npy, "--json")))
    assert rec["theta"]["M12"] == 0.7 and rec["theta"]["M11"] == -1.0 and rec["n_samples"] == 3000
    _ok(_dynosed(project_root, "simulate", model_file, "-n", 3000, "--burn-in", 500, "--seed", 3,
                 "--out", pq))

    model = ds.load_model(model_file)
    X = ds.simulate(model, model.nominal, 3000, burn_in=500, seed=3)
    frame = pd.read_csv(csv, float_precision="round_trip")
    assert list(frame.columns) == ["x", "y"]
    np.testing.assert_array_equal(frame.to_numpy(), X)           # %.17g round-trips exactly
    np.testing.assert_array_equal(pd.read_parquet(pq).to_numpy(), X)
    X7 = ds.simulate(model, {"M11": -1, "M12": 0.7, "M21": -0.5, "M22": -1}, 3000, burn_in=500, seed=3)
    np.testing.assert_array_equal(np.load(npy), X7)

    res = json.loads(_ok(_dynosed(project_root, "fit", model_file, csv, "--features", 256, "--json")))
    ref = ds.fit_global(model, X, n_features=256, seed=0)
    np.testing.assert_allclose([p["estimate"] for p in res["parameters"]], ref.theta, rtol=1e-12)
    assert res["report"]["rank"] == ref.report.rank == 3
    assert [p["identifiable"] for p in res["parameters"]] == [True, False, False, True]

    table = _ok(_dynosed(project_root, "fit", model_file, npy, "--route", "local", "--probes", 6,
                         "--temperature", 4, "--show-nominal", "--out", tmp_path / "fit.csv"))
    assert "local route" in table and "identifiable" in table and "rank" in table
    saved = pd.read_csv(tmp_path / "fit.csv", index_col=0)
    assert list(saved.index) == model.param_names and "std_error" in saved.columns

    assert "ou2d" in _ok(_dynosed(project_root, "compile", model_file))
    out = _ok(_dynosed(project_root, "check", model_file, "--structural-only"))
    assert "rank 3 of 4" in out


def test_cli_bench_end_to_end(project_root, tmp_path):
    import json

    out = _ok(_dynosed(project_root, "bench", "--quick", "--only", "simulator", "--repeats", 1,
                       "--json", tmp_path / "b.json"))
    assert "simulator" in out and "NumPy reference" in out
    data = json.loads((tmp_path / "b.json").read_text())
    assert "simulator" in data and data["quick"] is True


def test_cli_bad_arguments_one_line_errors(project_root, tmp_path):
    ou = project_root / "models" / "ou2d.py"
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("x,q\n1,2\n3,4\n5,6\n")
    txt = tmp_path / "x.txt"
    txt.write_text("1 2\n")
    cases = [  # (arguments, words the message names, exit status: 2 usage error, 1 bad model/data)
        (("simulate", ou, "-n", 10, "--out", tmp_path / "x.txt"), ("--out", ".npy"), 2),
        (("simulate", ou, "-n", 10, "--theta", "nope=1", "--out", tmp_path / "x.npy"), ("nope",), 2),
        (("fit", ou, bad_csv), ("'y'", "columns: x, q"), 1),
        (("fit", ou, txt), ("DATA", ".csv"), 2),
        (("fit", ou, tmp_path / "missing.csv"), ("missing.csv",), 2),
        (("fit", ou, bad_csv, "--route", "sideways"), ("sideways",), 2),
        (("bench", "--only", "nope"), ("nope", "simulator"), 2),
        (("check", txt), ("x.txt", ".py"), 2),
    ]
    for args, words, status in cases:
        res = _dynosed(project_root, *args)
        _one_line_error(res, *words)
        assert res.returncode == status, (args, res.stderr)
