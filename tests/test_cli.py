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
