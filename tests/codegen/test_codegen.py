"""Generated code: golden files, determinism, banner, atomic write-if-changed, loading, py_func."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import sympy as sp
from conftest import GENERATED_DIR, GENERATED_SNAPSHOT, MODEL_FILES, ROOT

import dynosed_sym as ds
from dynosed_sym.codegen import CompiledModel, default_output_dir
from dynosed_sym.codegen.files import (
    CONTENT_MARK,
    content_hash_of,
    module_filename,
    split_banner,
    stale_files,
    write_if_changed,
)
from dynosed_sym.codegen.render import render_module
from dynosed_sym.codegen.spec import GENERATOR_VERSION, build_spec, spec_hash

#: ``DYNOSED_UPDATE_GOLDEN=1 pytest tests/codegen/test_codegen.py -k golden_or_stale`` rewrites
#: generated/ (and removes stale files) instead of failing, like ``make golden``.
UPDATE_GOLDEN = os.environ.get("DYNOSED_UPDATE_GOLDEN", "") not in ("", "0")

HINT = (
    "generated/ is out of date: run `make golden` (python -m dynosed_sym.codegen --prune "
    "--out generated models/*.py), or rerun the tests with DYNOSED_UPDATE_GOLDEN=1 to rewrite "
    "generated/ instead of failing, and commit the result"
)


def update_golden(folder, fname, text):
    """Write ``text`` to ``folder/fname`` (the golden update of DYNOSED_UPDATE_GOLDEN=1)."""
    write_if_changed(os.path.join(folder, fname), text)
    warnings.warn(f"DYNOSED_UPDATE_GOLDEN: rewrote generated/{fname}", stacklevel=2)


x, y = sp.symbols("x y", real=True)
k = sp.Symbol("k", real=True)


# --------------------------------------------------------------------------- golden files
def test_golden_generated_file(model):
    """render_module(build_spec(model)) equals byte for byte the committed generated file."""
    spec = build_spec(model)
    fname = module_filename(model.name, spec.hash)
    text = render_module(spec)
    if UPDATE_GOLDEN and GENERATED_SNAPSHOT.get(fname) != text:
        update_golden(GENERATED_DIR, fname, text)
        return
    assert fname in GENERATED_SNAPSHOT, (
        f"model {model.name!r} has no generated file generated/{fname} (spec hash "
        f"{spec.hash[:12]}); {HINT}"
    )
    committed = GENERATED_SNAPSHOT[fname]
    if text != committed:
        import difflib

        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True),
                    text.splitlines(True),
                    f"generated/{fname} (committed)",
                    "rendered now",
                )
            )[:60]
        )
        pytest.fail(f"generated/{fname} differs from the rendered module; {HINT}\n{diff}")


def test_no_stale_generated_files(models):
    """Every generated/*.py belongs to a model in models/ at its current spec hash."""
    expected = {module_filename(m.name, spec_hash(m)) for m in models.values()}
    stale = sorted(set(GENERATED_SNAPSHOT) - expected)
    missing = sorted(expected - set(GENERATED_SNAPSHOT))
    if UPDATE_GOLDEN:  # older files of the models and their caches go (as `make golden` does)
        for m in models.values():
            for path in stale_files(
                str(GENERATED_DIR), m.name, module_filename(m.name, spec_hash(m))
            ):
                os.unlink(path)
        stale = [f for f in stale if (GENERATED_DIR / f).exists()]
        missing = []  # written by test_golden_generated_file
    assert not stale, f"stale generated files {stale}; {HINT}"
    assert not missing, f"missing generated files {missing}; {HINT}"


def test_golden_update_writes_instead_of_failing(tmp_path):
    """The DYNOSED_UPDATE_GOLDEN path writes the rendered text (atomically) and says so."""
    with pytest.warns(UserWarning, match="rewrote generated/m_0.py"):
        update_golden(str(tmp_path), "m_0.py", "a = 1\n")
    assert (tmp_path / "m_0.py").read_text() == "a = 1\n"


def test_model_names_unique(models):
    names = [m.name for m in models.values()]
    assert len(set(names)) == len(names), f"two model files share a model name: {names}"


def test_stale_files_helper(tmp_path):
    for f in (
        "lorenz_0123456789ab.py",
        "lorenz_ba9876543210.py",
        "lorenz_x.py",
        "lorenz2_0123456789ab.py",
    ):
        (tmp_path / f).write_text("")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    for f in (
        "lorenz_ba9876543210.cpython-311.pyc",
        "lorenz_ba9876543210.drift-12.py311.nbi",
        "lorenz_ba9876543210.drift-12.py311.1.nbc",
        "lorenz_0123456789ab.drift-12.py311.nbi",
        "lorenz2_0123456789ab.drift-3.py311.nbi",
        "lorenz_00000000000f.drift-9.py311.nbi",
    ):
        (cache / f).write_text("")
    got = stale_files(str(tmp_path), "lorenz", "lorenz_0123456789ab.py")
    # the stale module, then its caches and those of a module removed earlier (the kept
    # module's and other models' caches stay)
    assert [os.path.relpath(p, tmp_path) for p in got] == [
        "lorenz_ba9876543210.py",
        os.path.join("__pycache__", "lorenz_00000000000f.drift-9.py311.nbi"),
        os.path.join("__pycache__", "lorenz_ba9876543210.cpython-311.pyc"),
        os.path.join("__pycache__", "lorenz_ba9876543210.drift-12.py311.1.nbc"),
        os.path.join("__pycache__", "lorenz_ba9876543210.drift-12.py311.nbi"),
    ]


def test_codegen_cli_prune(tmp_path, project_root):
    """The `make golden` command writes into --out and prunes older files of the same model."""
    (tmp_path / "ou2d_m12_000000000000.py").write_text("# old\n")
    (tmp_path / "other_000000000000.py").write_text("# another model's file: kept\n")
    model_file = project_root / "models" / "ou2d_m12.py"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "dynosed_sym.codegen",
            "--prune",
            "--out",
            str(tmp_path),
            str(model_file),
        ],
        capture_output=True,
        text=True,
        cwd=project_root,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in tmp_path.glob("*.py"))
    m = ds.load_model(model_file)
    expected = module_filename(m.name, spec_hash(m))
    assert files == sorted([expected, "other_000000000000.py"])
    assert (tmp_path / expected).read_text() == GENERATED_SNAPSHOT[expected]
    # a second run reports the file as unchanged
    res2 = subprocess.run(
        [sys.executable, "-m", "dynosed_sym.codegen", "--out", str(tmp_path), str(model_file)],
        capture_output=True,
        text=True,
        cwd=project_root,
        timeout=300,
    )
    assert res2.returncode == 0 and "unchanged" in res2.stdout


# --------------------------------------------------------------------------- determinism
def test_render_twice_identical(model):
    a = render_module(build_spec(model))
    # a freshly loaded copy of the model (new SymPy objects, no cached derivation)
    fresh = ds.load_model(model.source_path)
    b = render_module(build_spec(fresh))
    assert a == b


_SUBPROCESS = r"""
import glob, hashlib, sys
import dynosed_sym as ds
from dynosed_sym.codegen.spec import build_spec
from dynosed_sym.codegen.render import render_module
for p in sys.argv[1:]:
    m = ds.load_model(p)
    print(m.name, hashlib.sha256(render_module(build_spec(m)).encode()).hexdigest())
"""


@pytest.mark.parametrize("hashseed", ["0", "987654321"])
def test_render_deterministic_across_processes(models, hashseed):
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    res = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, *map(str, MODEL_FILES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    got = dict(line.split() for line in res.stdout.strip().splitlines())
    for m in models.values():
        here = hashlib.sha256(render_module(build_spec(m)).encode()).hexdigest()
        assert got[m.name] == here, f"{m.name}: output depends on PYTHONHASHSEED={hashseed}"


def test_spec_hash_depends_on_declaration():
    base = ds.SDEModel([x], [k], [-k * x], diffusion=1, name="toy")
    same = ds.SDEModel([x], [k], [-k * x], diffusion=1, name="toy", nominal=[2.0])
    assert spec_hash(base) == spec_hash(same)  # nominal values do not change the kernels
    for other in (
        ds.SDEModel([x], [k], [-k * x], diffusion=2, name="toy"),
        ds.SDEModel([x], [k], [-k * x + 1], diffusion=1, name="toy"),
        ds.SDEModel([x], [k], [-k * x], diffusion=1, name="toy2"),
        ds.SDEModel([x], [k], [-k * x], noise=[[sp.sqrt(2)]], name="toy"),
    ):
        assert spec_hash(other) != spec_hash(base)
    assert re.fullmatch(r"[0-9a-f]{64}", spec_hash(base))


# --------------------------------------------------------------------------- banner / content
def test_banner(model):
    spec = build_spec(model)
    text = render_module(spec)
    head = "\n".join(text.splitlines()[:8])
    assert "DO NOT EDIT" in head
    assert f"model: {model.name}" in head
    assert spec.hash in head
    assert GENERATOR_VERSION in head
    recorded, body = split_banner(text)
    assert recorded is not None and re.fullmatch(r"[0-9a-f]{64}", recorded)
    assert recorded == hashlib.sha256(body.encode()).hexdigest() == content_hash_of(body)
    assert CONTENT_MARK + recorded in head
    # module constants and the docstring of argument shapes
    assert f"SPEC_HASH = {spec.hash!r}" in body
    assert f"GENERATOR_VERSION = {GENERATOR_VERSION!r}" in body
    assert f"NAME = {model.name!r}" in body
    assert "drift(X, theta, out)" in body and f"X (N, {model.d}), theta ({model.n},)" in body
    assert "stein_features(X, out_sin, out_cos)" in body
    assert "simulate_chains(" in body


def test_generated_kernels_spell_out_options(model):
    text = render_module(build_spec(model))
    decorators = re.findall(r"@numba\.njit\((.*?)\)\ndef", text, flags=re.S)
    assert len(decorators) >= 4
    for opts in decorators:
        for opt in (
            "parallel=",
            "fastmath=",
            "cache=True",
            "error_model=",
            "boundscheck=",
            "nogil=",
        ):
            assert opt in opts, f"njit option {opt} not written out in {opts!r}"
    # arrays are arguments, never module globals: no module-level numpy arrays
    assert not re.search(r"^\w+ = np\.(array|zeros|empty|ones)", text, flags=re.M)


def test_generated_module_constants(cmodel, model):
    mod = cmodel.module
    assert mod.NAME == model.name
    assert mod.SPEC_HASH == spec_hash(model)
    assert mod.GENERATOR_VERSION == ds.codegen.GENERATOR_VERSION
    assert tuple(mod.STATE) == tuple(model.state_names)
    assert tuple(mod.PARAMS) == tuple(model.param_names)
    assert mod.IS_AFFINE is True


# --------------------------------------------------------------------------- write_if_changed
def test_write_if_changed_does_not_touch_unchanged(tmp_path):
    p = tmp_path / "sub" / "mod.py"
    assert write_if_changed(str(p), "a = 1\n") is True
    old = time.time() - 1000
    os.utime(p, (old, old))
    before = os.stat(p).st_mtime_ns
    assert write_if_changed(str(p), "a = 1\n") is False
    assert os.stat(p).st_mtime_ns == before
    assert write_if_changed(str(p), "a = 2\n") is True
    assert p.read_text() == "a = 2\n"
    assert os.stat(p).st_mtime_ns != before
    # atomic: no temporary files left behind
    assert sorted(f.name for f in p.parent.iterdir()) == ["mod.py"]


def test_compile_model_leaves_unchanged_file_alone(tmp_path):
    m = ds.SDEModel([x], [k], [-k * x], diffusion=1, name="touch_test")
    cm = ds.compile_model(m, str(tmp_path))
    old = time.time() - 1000
    os.utime(cm.path, (old, old))
    before = os.stat(cm.path).st_mtime_ns
    ds.compile_model(m, str(tmp_path), force=True)
    assert os.stat(cm.path).st_mtime_ns == before


# --------------------------------------------------------------------------- compile_model
def test_compile_model_into_tmp_dir(tmp_path, models):
    m = models["ou2d_m12"]
    cm = ds.compile_model(m, str(tmp_path))
    assert isinstance(cm, CompiledModel)
    fname = module_filename(m.name, spec_hash(m))
    assert os.path.dirname(cm.path) == str(tmp_path)
    assert os.path.basename(cm.path) == fname
    assert (tmp_path / fname).read_text() == GENERATED_SNAPSHOT[fname]
    assert cm.module.SPEC_HASH == spec_hash(m)
    # compiled again: the same loaded module is returned, nothing is rewritten
    again = ds.compile_model(m, str(tmp_path))
    assert again.module is cm.module


def test_compile_model_default_dir_for_project_models(models, compiled):
    m = models["lorenz"]
    assert default_output_dir(m) == str(GENERATED_DIR)
    assert os.path.dirname(compiled["lorenz"].path) == str(GENERATED_DIR)


def test_default_output_dir_env(monkeypatch, tmp_path):
    m = ds.SDEModel([x], [k], [-k * x], diffusion=1, name="envtest")
    monkeypatch.setenv("DYNOSED_GENERATED_DIR", str(tmp_path))
    assert default_output_dir(m) == str(tmp_path)
    monkeypatch.delenv("DYNOSED_GENERATED_DIR")
    assert default_output_dir(m).endswith(os.path.join("dynosed_sym", "generated"))


@pytest.mark.parametrize("damage", ["truncate", "edit_body", "edit_banner_hash", "empty"])
def test_damaged_generated_file_is_regenerated(tmp_path, models, damage):
    m = models["ou2d_m12"]
    good = render_module(build_spec(m))
    path = tmp_path / module_filename(m.name, spec_hash(m))
    if damage == "truncate":
        bad = good[: len(good) // 2]
    elif damage == "edit_body":
        bad = good.replace("out[0] =", "out[0] = 2.0 *", 1)
        assert bad != good
    elif damage == "edit_banner_hash":
        recorded, _ = split_banner(good)
        bad = good.replace(recorded, "0" * 64)
    else:
        bad = ""
    path.write_text(bad)
    with pytest.warns(UserWarning, match="modified or truncated"):
        cm = ds.compile_model(m, str(tmp_path))
    assert path.read_text() == good
    assert cm.path == str(path)
    # the regenerated module is importable and works (pure Python, no compile)
    out = np.empty(2)
    cm.module.drift_point.py_func(np.array([1.0, 2.0]), np.array([0.5]), out)
    np.testing.assert_allclose(out, [-1.0 + 0.5 * 2.0, -0.5 * 1.0 - 2.0], rtol=1e-15)


def test_valid_file_no_warning(tmp_path, models):
    m = models["ou2d_m12"]
    path = tmp_path / module_filename(m.name, spec_hash(m))
    path.write_text(render_module(build_spec(m)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.compile_model(m, str(tmp_path))


def test_unwritable_output_dir_raises_codegen_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    m = ds.SDEModel([x], [k], [-k * x], diffusion=1, name="unwritable")
    with pytest.raises(ds.CodegenError, match="out_dir"):
        ds.compile_model(m, str(blocker / "sub"))


# --------------------------------------------------------------------------- py_func == jit
def _py_drift(module, X, theta):
    out = np.empty_like(X)
    for i in range(X.shape[0]):
        module.drift_point.py_func(X[i], theta, out[i])
    return out


def _py_features(module, X, n_sin, n_cos):
    s = np.empty((X.shape[0], n_sin))
    c = np.empty((X.shape[0], n_cos))
    for i in range(X.shape[0]):
        module.stein_features_point.py_func(X[i], s[i], c[i])
    return s, c


def test_py_func_agrees_with_jit(model, cmodel, model_points):
    X = model_points(model, 200, seed=11)
    theta = model.nominal + np.random.default_rng(3).standard_normal(model.n)
    py = _py_drift(cmodel.module, X, theta)
    jit = cmodel.drift(X, theta)
    np.testing.assert_allclose(jit, py, rtol=1e-13, atol=1e-13 * np.abs(py).max())
    s_py, c_py = _py_features(cmodel.module, X, cmodel.n_sin, cmodel.n_cos)
    s_jit, c_jit = cmodel.stein_features(X)
    np.testing.assert_allclose(s_jit, s_py, rtol=1e-13, atol=1e-13 * np.abs(s_py).max())
    np.testing.assert_allclose(c_jit, c_py, rtol=1e-13, atol=1e-13 * max(np.abs(c_py).max(), 1.0))


def test_negative_integer_powers_print_as_divisions(tmp_path):
    """x**(-2) is printed 1/x**2: Numba raises ZeroDivisionError for the first at x = 0 (whatever
    the error model), the second gives inf like every other division of a kernel."""
    x, a = sp.Symbol("x", real=True), sp.Symbol("a", real=True)
    drift = -x + a * (x**-2 + sp.sin(x**-2)) + a * (1 + x) ** -3
    model = ds.SDEModel([x], [a], [drift], diffusion=sp.Rational(1, 10), name="negative_powers")
    cm = ds.compile_model(model, str(tmp_path))
    with open(cm.path, encoding="utf-8") as fh:
        text = fh.read()
    assert "**(-" not in text
    assert "t0 = 1/x_**2" in text
    X = np.array([[0.0], [0.3], [-1.7], [2.5]])
    out = np.empty_like(X)
    cm.raw_module.drift(X, np.array([1.5]), out)  # raw kernel: no finiteness check
    assert not np.isfinite(out[0, 0])
    v = X[1:, 0]
    ref = -v + 1.5 * (1 / v**2 + np.sin(1 / v**2)) + 1.5 / (1 + v) ** 3
    np.testing.assert_allclose(out[1:, 0], ref, rtol=1e-14)
