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

from dynosed_sym.apps.cli import main


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
    assert "structural check" in out
    assert "simulation check on 4,000 independent simulated snapshots" in out
    assert "rank 3 of 3 (identifiable)" in out
    for name in ("sigma", "rho", "beta"):
        assert name in out
    assert "N for ±10%" in out


def test_check_structural_only_ou(runner, project_root):
    res = runner.invoke(main, ["check", _model(project_root, "ou2d"), "--structural-only"])
    assert res.exit_code == 0, res.output
    assert "rank 3 of 4 (exact)" in res.output and "M12 − M21" in res.output
    assert "simulation check" not in res.output.split("structural check")[0]


def test_check_nominal_override_and_rel_error(runner, project_root):
    res = runner.invoke(
        main,
        [
            "check",
            _model(project_root, "ou2d_m12"),
            "--nominal",
            "M12=0.8",
            "-N",
            "4000",
            "--rel-error",
            "0.05",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "N for ±5%" in res.output and "0.8" in res.output


def test_check_reports_status_bias_and_combinations(runner, project_root):
    """All-free OU whose null direction loads on every entry: the simulation check names the entries
    determined only in combination and includes their bias in the predicted widths; it states the
    combination where the unresolved columns' noise in it is small, and says so where it is not
    (docs/design-statistics.md, "Status and combinations")."""
    import json

    args = ["check", _model(project_root, "ou2d"), "-N", "4000"]
    for item in ("M11=-1", "M12=1", "M21=0", "M22=-2"):
        args += ["--nominal", item]
    res = runner.invoke(main, args + ["--json"])
    assert res.exit_code == 0, res.output
    params = json.loads(res.stdout)["parameters"]
    assert params[1]["status"] == "not identifiable" and params[1]["n_required"] is None
    flagged = [p for p in params if p["status"] == "only in combination"]
    assert flagged and all(p["bias_sd_at_n"] > 0 for p in flagged)
    assert any(p["combination"] for p in flagged)
    text = runner.invoke(main, args).output
    for p in flagged:
        name = p["name"]
        assert f"{name} is determined only in combination" in text
        if p["combination"]:
            assert f"{name} is determined only in combination: {p['combination']} =" in text
        else:
            line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{name} is"))
            assert "no combination is stated" in line
    assert "bias.sd" in text


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
    nonom.write_text(
        "import sympy as sp\nimport dynosed_sym as ds\nx, a = sp.symbols('x a')\n"
        "model = ds.SDEModel([x], [a], [-a*x], diffusion=1, name='nonom')\n"
    )
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
    assert any(ep.name == "dynosed" and ep.value == "dynosed_sym.apps.cli:main" for ep in eps)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lorenz", "grn_bcell"])
def test_dynosed_check_command_end_to_end(project_root, name):
    """The installed command, as a user types it (timing printed, not asserted:
    docs/method.md §5)."""
    exe = shutil.which("dynosed", path=os.path.dirname(sys.executable)) or shutil.which("dynosed")
    cmd = [exe] if exe else [sys.executable, "-m", "dynosed_sym.apps.cli"]
    t0 = time.perf_counter()
    res = subprocess.run(
        cmd + ["check", f"models/{name}.py"],
        cwd=project_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - t0
    print(f"\n`dynosed check models/{name}.py`: {elapsed:.1f} s")
    assert res.returncode == 0, res.stderr
    assert "simulation check" in res.stdout


# --------------------------------------------------------------------------- the installed command,
# end to end, as a user types it (subprocess; few and small: the Numba cache is shared on disk)
def _dynosed(project_root, *args, cwd=None):
    """Run ``dynosed ARGS`` in a fresh process → CompletedProcess (text)."""
    exe = shutil.which("dynosed", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "dynosed_sym.apps.cli"]
    env = dict(os.environ, DYNOSED_QUIET="1")
    return subprocess.run(
        cmd + [str(a) for a in args],
        cwd=cwd or project_root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _ok(res):
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return res.stdout


def _one_line_error(res, *words, status=None):
    """Non-zero exit (``status`` if given), no traceback, one ``Error`` line naming ``words``.

    An error in the model, the data or a computation (exit 1) is exactly one line on standard
    error; a usage error (exit 2) is click's usage, a hint and that line.
    """
    assert res.returncode != 0
    if status is not None:
        assert res.returncode == status, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in res.stderr
    err = [ln for ln in lines if ln.startswith("Error")]
    assert len(err) == 1, res.stderr
    if res.returncode == 1:
        assert lines == err, res.stderr
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
    out = _ok(
        _dynosed(
            project_root,
            "simulate",
            model_file,
            "-n",
            3000,
            "--burn-in",
            500,
            "--seed",
            3,
            "--out",
            csv,
        )
    )
    assert "3,000 × 2 samples of 'ou2d'" in out and "M12 = 0.5" in out
    rec = json.loads(
        _ok(
            _dynosed(
                project_root,
                "simulate",
                model_file,
                "-n",
                3000,
                "--burn-in",
                500,
                "--seed",
                3,
                "--theta",
                "M12=0.7",
                "--out",
                npy,
                "--json",
            )
        )
    )
    assert rec["theta"]["M12"] == 0.7 and rec["theta"]["M11"] == -1.0 and rec["n_samples"] == 3000
    _ok(
        _dynosed(
            project_root,
            "simulate",
            model_file,
            "-n",
            3000,
            "--burn-in",
            500,
            "--seed",
            3,
            "--out",
            pq,
        )
    )

    model = ds.load_model(model_file)
    X = ds.simulate(model, model.nominal, 3000, burn_in=500, seed=3)
    frame = pd.read_csv(csv, float_precision="round_trip")
    assert list(frame.columns) == ["x", "y"]
    np.testing.assert_array_equal(frame.to_numpy(), X)  # %.17g round-trips exactly
    np.testing.assert_array_equal(pd.read_parquet(pq).to_numpy(), X)
    X7 = ds.simulate(
        model, {"M11": -1, "M12": 0.7, "M21": -0.5, "M22": -1}, 3000, burn_in=500, seed=3
    )
    np.testing.assert_array_equal(np.load(npy), X7)

    res = json.loads(
        _ok(_dynosed(project_root, "fit", model_file, csv, "--features", 256, "--json"))
    )
    ref = ds.fit_global(model, X, features=ds.Features(n_features=256, seed=0))
    np.testing.assert_allclose([p["estimate"] for p in res["parameters"]], ref.theta, rtol=1e-12)
    assert res["report"]["rank"] == ref.report.rank == 3
    assert [p["identifiable"] for p in res["parameters"]] == [True, False, False, True]

    table = _ok(
        _dynosed(
            project_root,
            "fit",
            model_file,
            npy,
            "--route",
            "local",
            "--probes",
            6,
            "--temperature",
            4,
            "--show-nominal",
            "--out",
            tmp_path / "fit.csv",
        )
    )
    assert "local route" in table and "identifiable" in table and "rank" in table
    saved = pd.read_csv(tmp_path / "fit.csv", index_col=0)
    assert list(saved.index) == model.param_names and "std_error" in saved.columns

    assert "ou2d" in _ok(_dynosed(project_root, "compile", model_file))
    out = _ok(_dynosed(project_root, "check", model_file, "--structural-only"))
    assert "rank 3 of 4" in out


def test_cli_bench_end_to_end(project_root, tmp_path):
    import json

    out = _ok(
        _dynosed(
            project_root,
            "bench",
            "--quick",
            "--only",
            "simulator",
            "--repeats",
            1,
            "--json",
            tmp_path / "b.json",
        )
    )
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
        (
            ("simulate", ou, "-n", 10, "--theta", "nope=1", "--out", tmp_path / "x.npy"),
            ("nope",),
            2,
        ),
        (("fit", ou, bad_csv), ("'y'", "columns: 'x', 'q'"), 1),
        (("fit", ou, txt), ("DATA", ".csv"), 2),
        (("fit", ou, tmp_path / "missing.csv"), ("missing.csv",), 2),
        (("fit", ou, bad_csv, "--route", "sideways"), ("sideways",), 2),
        (("bench", "--only", "nope"), ("nope", "simulator"), 2),
        (("check", txt), ("x.txt", ".py"), 2),
    ]
    for args, words, status in cases:
        res = _dynosed(project_root, *args)
        _one_line_error(res, *words, status=status)


# --------------------------------------------------------------------------- fit options, in
# process
_NONAFFINE = """import sympy as sp
import dynosed_sym as ds
x, k = sp.symbols("x k", real=True)
model = ds.SDEModel([x], [k], [-(k**2) * x], diffusion=1, name="cli_nonaffine")
"""


def test_fit_theta0_solver_starts_nonaffine_without_nominal(runner, tmp_path, monkeypatch):
    """A model not affine in θ without nominal values: the error names --theta0 (not the library's
    ``theta0=``); --theta0 (both routes), --solver and --starts reach the fit."""
    import json

    import numpy as np

    import dynosed_sym.routes as fit_module

    seen = []
    real_fit = fit_module.fit_global
    monkeypatch.setattr(
        fit_module, "fit_global", lambda *a, **kw: seen.append(kw) or real_fit(*a, **kw)
    )
    (tmp_path / "models").mkdir()
    (tmp_path / "generated").mkdir()  # the generated module goes beside models/, not to ~/.cache
    model_file = tmp_path / "models" / "nl.py"
    model_file.write_text(_NONAFFINE)
    data = tmp_path / "x.npy"  # stationary law of dx = -k² x dt + √2 dW with k = 2: N(0, 1/4)
    np.save(data, np.random.default_rng(0).normal(scale=0.5, size=(2000, 1)))
    args = ["fit", str(model_file), str(data), "--features", "64"]

    res = runner.invoke(main, args)
    assert res.exit_code == 2, res.output
    assert "--theta0 NAME=VALUE" in res.output and "theta0=" not in res.output and "k" in res.output
    res = runner.invoke(
        main, args + ["--theta0", "k=1.5", "--solver", "linear"]
    )  # not affine: exit 1
    assert res.exit_code == 1 and "not affine" in res.output, res.output
    res = runner.invoke(main, args + ["--theta0", "nope=1"])
    assert res.exit_code == 2 and "nope" in res.output and "--theta0" in res.output

    res = runner.invoke(main, args + ["--theta0", "k=1.5", "--starts", "2", "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    assert abs(rec["parameters"][0]["estimate"] - 2.0) < 0.2
    assert rec["settings"]["solver"] == "gradient"
    solver = seen[-1]["solver"]  # the Solver the flags built
    assert solver.theta0 == {"k": 1.5} and solver.n_starts == 2 and solver.method is None
    res = runner.invoke(main, args + ["--theta0", "k=1.5", "--starts", "0"])
    assert res.exit_code == 2 and "--starts" in res.output

    res = runner.invoke(
        main,
        [
            "fit",
            str(model_file),
            str(data),
            "--route",
            "local",
            "--probes",
            "4",
            "--temperature",
            "4",
            "--theta0",
            "k=1.5",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "local route" in res.output and "k " in res.output


def test_fit_usage_errors_exit_2(runner, project_root, tmp_path):
    csv = tmp_path / "ou.csv"
    csv.write_text("x,y\n" + "".join(f"{i % 7 * 0.1},{i % 5 * 0.2}\n" for i in range(50)))
    ou = _model(project_root, "ou2d")
    res = runner.invoke(main, ["fit", ou, str(csv), "--route", "local", "--probe-method", "dense"])
    assert res.exit_code == 2 and "--radius" in res.output, res.output
    res = runner.invoke(main, ["fit", ou, str(csv), "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.output, res.output
    res = runner.invoke(
        main, ["simulate", ou, "-n", "10", "--out", str(tmp_path / "x.npy"), "--seed", "-3"]
    )
    assert res.exit_code == 2 and "--seed" in res.output, res.output
    res = runner.invoke(main, ["check", ou, "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.output, res.output
    for bad in ("mle", "-1", "nan"):
        res = runner.invoke(main, ["fit", ou, str(csv), "--prior-scale", bad])
        assert res.exit_code == 2 and "--prior-scale" in res.output, res.output
    res = runner.invoke(main, ["fit", ou, str(csv), "--statistic", "w"])
    assert res.exit_code == 2 and "--statistic" in res.output, res.output


def test_fit_statistic_estimator_prior_scale_options(runner, project_root, tmp_path, ou_samples):
    """--statistic/--estimator/--prior-scale reach the library; the text shows bias.sd, loading
    and the estimable combinations, the JSON their per-parameter records."""
    import json

    import numpy as np

    import dynosed_sym as ds

    M = np.array([[-1.0, 1.0], [0.0, -2.0]])  # the null direction loads on every entry
    X = ou_samples(M, 1.0, 20_000, 3)
    data = tmp_path / "ou.npy"
    np.save(data, X)
    ou = _model(project_root, "ou2d")
    model = ds.load_model(ou)
    res = runner.invoke(main, ["fit", ou, str(data), "--json"])
    assert res.exit_code == 0, res.output
    rec = json.loads(res.stdout)
    ref = ds.fit_global(model, X)
    np.testing.assert_array_equal([p["estimate"] for p in rec["parameters"]], ref.theta)
    assert [p["status"] for p in rec["parameters"]] == ref.report.status
    assert "only in combination" in ref.report.status
    np.testing.assert_allclose([p["bias_sd"] for p in rec["parameters"]], ref.report.bias_sd)
    res = runner.invoke(main, ["fit", ou, str(data)])
    assert "bias.sd" in res.output and "is determined only in combination" in res.output
    res = runner.invoke(
        main, ["fit", ou, str(data), "--statistic", "v", "--prior-scale", "none", "--json"]
    )
    rec = json.loads(res.stdout)
    ref = ds.fit_global(model, X, solver=ds.Solver(statistic="v", prior_scale=None))
    np.testing.assert_array_equal([p["estimate"] for p in rec["parameters"]], ref.theta)
    assert rec["report"]["statistic"] == "v" and rec["report"]["estimator"] == "ridge"
    res = runner.invoke(
        main, ["fit", ou, str(data), "--estimator", "resolved", "--prior-scale", "2", "--json"]
    )
    rec = json.loads(res.stdout)
    assert rec["report"]["prior_scale"] == 2.0 and rec["report"]["prior_scale_method"] == "given"


def test_fit_show_nominal_loads_the_model_once(runner, project_root, tmp_path, monkeypatch):
    import numpy as np

    import dynosed_sym.model as model_module

    calls = []
    real = model_module.load_model
    monkeypatch.setattr(model_module, "load_model", lambda path: calls.append(path) or real(path))
    data = tmp_path / "ou.npy"
    np.save(data, np.random.default_rng(1).normal(size=(1000, 2)))
    res = runner.invoke(
        main, ["fit", _model(project_root, "ou2d"), str(data), "--features", "64", "--show-nominal"]
    )
    assert res.exit_code == 0, res.output
    assert "truth" in res.output
    assert len(calls) == 1, calls


def test_json_helper_is_the_fit_results_one():
    """cli._finite is FitResult.to_json's conversion (fit._plain + fit._finite_or_none)."""
    import json
    import pathlib

    import numpy as np

    from dynosed_sym.apps.cli import io as cli
    from dynosed_sym.routes.result import finite_or_none as _finite_or_none
    from dynosed_sym.routes.result import plain as _plain

    obj = {
        "a": np.float64("nan"),
        1: (np.int64(2), np.array([np.inf, 1.0])),
        "p": pathlib.Path("f.csv"),
    }
    assert (
        cli._finite(obj)
        == _finite_or_none(_plain(obj))
        == {"a": None, "1": [2, [None, 1.0]], "p": "f.csv"}
    )
    json.dumps(cli._finite(obj), allow_nan=False)
