"""Caches that cannot be planted (issue 22): one test per attack on what compile_model reads back.

* a generated module whose body was edited and whose banner hash was recomputed (anyone who can
  write to a shared ``DYNOSED_GENERATED_DIR`` can do that) is not executed: it is not what the
  declaration generates, so it is rewritten with a warning;
* a ``.pyc`` planted beside a trusted module (an unchecked-hash one, which Python's importer
  would use without looking at the source) is never run;
* Numba cache files (``.nbi`` index, ``.nbc`` data) with a bit flipped or a zeroed middle (first
  and last bytes intact), or sealed with another user's key, are deleted with a warning and the
  kernel compiled again — in a subprocess, where the old behaviour was an UnpicklingError or an
  LLVM abort (SIGABRT) on every run;
* the trust folder: key created once and atomically by concurrent processes, private modes; a
  folder other users can open is refused with a warning, and nothing is cached on disk then.

The committed modules of models/ load from a fresh trust folder without a warning, unchanged
byte for byte, and a trusted module loads without any symbolic derivation.
"""

from __future__ import annotations

import hashlib
import json
import os
import py_compile
import stat
import subprocess
import sys
import time

import numpy as np
import pytest
import sympy as sp
from conftest import GENERATED_SNAPSHOT, MODEL_FILES

import dynosed_sym as ds
from dynosed_sym.codegen import loading, trust
from dynosed_sym.codegen.files import content_hash_of, module_filename, split_banner
from dynosed_sym.codegen.render import render_module
from dynosed_sym.codegen.spec import build_spec, spec_hash

x, y = sp.symbols("x y", real=True)
k = sp.Symbol("k", real=True)


def small_model(name):
    return ds.SDEModel(
        [x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)], name=name
    )


def drift_oracle(X, kv):
    return np.column_stack([-kv * X[:, 0] + X[:, 1], -X[:, 0] - kv * X[:, 1] ** 3])


@pytest.fixture
def trust_folder(tmp_path, monkeypatch):
    """A fresh, empty trust folder for this test (and the subprocesses it starts)."""
    folder = tmp_path / "trust"
    monkeypatch.setenv("DYNOSED_TRUST_DIR", str(folder))
    monkeypatch.setattr(loading, "_LOADED", {})  # nothing loaded by an earlier test is reused
    return folder


def planted_text(genuine, marker):
    """``genuine`` with code added to its body (creating ``marker`` when run) and a drift
    coefficient changed — and its banner's content hash recomputed, as an attacker would."""
    recorded, body = split_banner(genuine)
    evil = body.replace(
        "\nimport numba\n", f"\nimport numba\nopen({str(marker)!r}, 'w').close()\n", 1
    )
    evil = evil.replace("out[0] =", "out[0] = 2.0 *", 1)
    assert evil.count(str(marker)) == 1 and evil.count("2.0 *") >= 1
    head = genuine[: len(genuine) - len(body)].replace(recorded, content_hash_of(evil))
    return head + evil


def assert_genuine_drift(cm):
    out = np.empty(2)
    cm.module.drift_point.py_func(np.array([1.0, 2.0]), np.array([0.5]), out)
    np.testing.assert_allclose(out, drift_oracle(np.array([[1.0, 2.0]]), 0.5)[0], rtol=1e-15)


# --------------------------------------------------------------------------- generated modules
def test_planted_module_with_recomputed_hash_is_rewritten(tmp_path, trust_folder):
    """The banner check alone accepts the planted file (its hash was recomputed); compile_model
    does not run it: the text differs from what the declaration generates, so it is rewritten
    with a warning, and the kernels are the genuine ones."""
    m = small_model("planted")
    genuine = render_module(build_spec(m))
    path = tmp_path / module_filename(m.name, spec_hash(m))
    marker = tmp_path / "planted_code_ran"
    path.write_text(planted_text(genuine, marker), encoding="utf-8")
    assert loading._valid_file(str(path), spec_hash(m)) is not None  # fooled, as before
    with pytest.warns(UserWarning, match="is not what this declaration generates"):
        cm = ds.compile_model(m, str(tmp_path))
    assert not marker.exists()
    assert path.read_text(encoding="utf-8") == genuine
    assert_genuine_drift(cm)


def test_module_planted_after_it_was_trusted_is_rewritten(tmp_path, trust_folder):
    """Trust is in the text, not the file name: a genuine module is loaded (and recorded), then
    replaced by a planted one; the next load rewrites it.  A record named by the plain SHA-256
    of the planted text (what an attacker without the key could compute) does not help."""
    m = small_model("planted_later")
    cm = ds.compile_model(m, str(tmp_path))
    genuine = open(cm.path, encoding="utf-8").read()
    assert trust.module_is_trusted(genuine.encode())
    marker = tmp_path / "planted_code_ran"
    evil = planted_text(genuine, marker)
    with open(cm.path, "w", encoding="utf-8") as fh:
        fh.write(evil)
    (trust_folder / "modules" / hashlib.sha256(evil.encode()).hexdigest()).touch()
    loading._LOADED.clear()
    with pytest.warns(UserWarning, match="is not what this declaration generates"):
        cm2 = ds.compile_model(m, str(tmp_path))
    assert not marker.exists()
    assert open(cm2.path, encoding="utf-8").read() == genuine
    assert_genuine_drift(cm2)


def test_module_swapped_after_its_check_is_not_run(tmp_path, trust_folder, monkeypatch):
    """The module executed is the text that was checked, not the file read a second time."""
    m = small_model("swapped")
    path = tmp_path / module_filename(m.name, spec_hash(m))
    marker = tmp_path / "planted_code_ran"
    real = loading._trusted_text

    def check_then_swap(model, p, h):
        out = real(model, p, h)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(planted_text(render_module(build_spec(model)), marker))
        return out

    ds.compile_model(m, str(tmp_path))  # written and trusted
    loading._LOADED.clear()
    monkeypatch.setattr(loading, "_trusted_text", check_then_swap)
    cm = ds.compile_model(m, str(tmp_path))
    assert not marker.exists()
    assert_genuine_drift(cm)
    assert "2.0 *" in path.read_text(encoding="utf-8")  # the swap happened


_LOAD = """
import sys, numpy as np, sympy as sp, dynosed_sym as ds
x, y = sp.symbols("x y", real=True); k = sp.Symbol("k", real=True)
m = ds.SDEModel([x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)],
                name=sys.argv[2])
cm = ds.compile_model(m, sys.argv[1])
out = np.empty(2)
cm.module.drift_point.py_func(np.array([1.0, 2.0]), np.array([0.5]), out)
print("DRIFT", out.tolist())
"""


def test_planted_pyc_is_never_run(tmp_path, trust_folder, project_root):
    """Python's importer runs an unchecked-hash ``.pyc`` from ``__pycache__`` without looking at
    the source; compile_model executes the checked text itself, so a planted one is ignored."""
    m = small_model("planted_pyc")
    cm = ds.compile_model(m, str(tmp_path))
    marker = tmp_path / "planted_code_ran"
    evil_source = tmp_path / "evil.py"
    evil_source.write_text(
        planted_text(open(cm.path, encoding="utf-8").read(), marker), encoding="utf-8"
    )
    import importlib.util

    pyc = importlib.util.cache_from_source(cm.path)
    py_compile.compile(
        str(evil_source),
        cfile=pyc,
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", _LOAD, str(tmp_path), m.name],
        env=env,
        cwd=str(project_root),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not marker.exists()
    drift = json.loads(proc.stdout.split("DRIFT ", 1)[1])
    np.testing.assert_allclose(drift, drift_oracle(np.array([[1.0, 2.0]]), 0.5)[0], rtol=1e-15)
    # (the importer itself would have run it: the attack is real)
    spec = importlib.util.spec_from_file_location("planted_pyc_probe", cm.path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert marker.exists()


_COMMITTED = """
import json, sys
import dynosed_sym as ds
from dynosed_sym.codegen import loading
calls = []
real = loading.build_spec
loading.build_spec = lambda model: calls.append(model.name) or real(model)
paths = [ds.compile_model(ds.load_model(p)).path for p in sys.argv[1:]]
print("RESULT " + json.dumps({"regenerated": calls, "paths": paths}))
"""


def test_committed_modules_load_unchanged_from_a_fresh_trust_folder(
    trust_folder, project_root, tmp_path
):
    """The modules of models/ under generated/ load without a warning from an empty trust
    folder (each regenerated once and found equal), stay byte-identical, and load in the next
    process without any symbolic derivation (trusted by their record)."""
    env = dict(os.environ)
    env.pop("DYNOSED_GENERATED_DIR", None)
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-W", "error::UserWarning", "-c", _COMMITTED]
            + [str(p) for p in MODEL_FILES],
            env=env,
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(json.loads(proc.stdout.split("RESULT ", 1)[1]))
    assert sorted(runs[0]["regenerated"]) == sorted(p.stem for p in MODEL_FILES)
    assert runs[1]["regenerated"] == []
    for path in runs[0]["paths"]:
        assert os.path.dirname(path) == str(project_root / "generated")
        assert open(path, encoding="utf-8").read() == GENERATED_SNAPSHOT[os.path.basename(path)]
    assert len(os.listdir(trust_folder / "modules")) == len(MODEL_FILES)


# --------------------------------------------------------------------------- Numba's cache files
_RUN = """
import json, sys, numpy as np, sympy as sp, dynosed_sym as ds
x, y = sp.symbols("x y", real=True); k = sp.Symbol("k", real=True)
m = ds.SDEModel([x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)],
                name=sys.argv[2])
cm = ds.compile_model(m, sys.argv[1])
X = np.array([[1.0, 2.0], [0.5, -1.0], [-0.3, 0.25]])
s, c = cm.stein_features(X)
print("RESULT " + json.dumps({"f": cm.drift(X, [0.7]).tolist(), "s": s.tolist(), "c": c.tolist()}))
"""


def _run(folder, name, cwd):
    proc = subprocess.run(
        [sys.executable, "-W", "always::UserWarning", "-c", _RUN, str(folder), name],
        cwd=str(cwd),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc


def _damage(raw, how, rng):
    """The damaged bytes; first and last bytes intact."""
    raw = bytearray(raw)
    n = len(raw)
    if how == "flip":
        i = int(rng.integers(n // 4, 3 * n // 4))
        raw[i] ^= 1 << int(rng.integers(8))
    elif how == "zero":
        raw[n // 4 : 3 * n // 4] = bytes(3 * n // 4 - n // 4)
    elif how == "foreign_key":  # sealed by another user (another key): a planted pickle
        raw = bytearray(trust._seal(os.urandom(32), "x", bytes(raw[: -trust._TRAILER])))
    elif how == "unsealed":  # Numba's plain format, as any other program would write it
        raw = raw[: -trust._TRAILER]
    return bytes(raw)


@pytest.mark.parametrize(
    "suffix, how",
    [
        ("nbi", "flip"),
        ("nbc", "flip"),
        ("nbi", "zero"),
        ("nbc", "zero"),
        ("nbc", "foreign_key"),
        ("nbi", "unsealed"),
    ],
)
def test_attacked_numba_cache_is_rebuilt(tmp_path, project_root, suffix, how):
    """Every cache file of the drift and feature kernels damaged the same way (bit flip or zeroed
    middle with first and last bytes intact; a foreign seal; no seal): the next process warns,
    deletes the files, recompiles, gets the same numbers, and leaves sealed files behind; the
    process after it loads them without a warning."""
    name = f"attack_{suffix}_{how}"
    first = _run(tmp_path, name, project_root)
    assert first.returncode == 0, first.stderr[-3000:]
    expected = json.loads(first.stdout.split("RESULT ", 1)[1])
    X = np.array([[1.0, 2.0], [0.5, -1.0], [-0.3, 0.25]])
    np.testing.assert_allclose(expected["f"], drift_oracle(X, 0.7), rtol=1e-15)
    files = sorted(
        f
        for f in (tmp_path / "__pycache__").iterdir()
        if f.suffix == "." + suffix and (".drift-" in f.name or ".stein_features-" in f.name)
    )
    assert len(files) == 2
    rng = np.random.default_rng(22)
    for f in files:
        raw = f.read_bytes()
        bad = _damage(raw, how, rng)
        assert bad != raw and bad[:1] == raw[:1]
        if how in ("flip", "zero"):
            assert bad[-1:] == raw[-1:] and len(bad) == len(raw)
        f.write_bytes(bad)
    second = _run(tmp_path, name, project_root)
    assert second.returncode == 0, f"exit {second.returncode}: {second.stderr[-3000:]}"
    assert json.loads(second.stdout.split("RESULT ", 1)[1]) == expected
    reason = "has no checksum" if how == "unsealed" else "fails its checksum"
    for f in files:
        assert f"Numba's cache file {f} {reason}" in " ".join(second.stderr.split()), f
        body = trust._unseal(trust._key()[0], f.name, f.read_bytes())[0]
        assert body is not None  # rebuilt and sealed
    third = _run(tmp_path, name, project_root)
    assert third.returncode == 0 and "UserWarning" not in third.stderr, third.stderr[-3000:]
    assert json.loads(third.stdout.split("RESULT ", 1)[1]) == expected


# --------------------------------------------------------------------------- the trust folder
_KEY = """
import hashlib, os, sys, time
go = sys.argv[1]
from dynosed_sym.codegen import trust
while not os.path.exists(go):
    time.sleep(0.002)
print(hashlib.sha256(trust._key()[0]).hexdigest())
"""


def test_key_is_created_once_atomically_and_privately(trust_folder, tmp_path, project_root):
    """Processes that create the key at the same moment all end with the same key; the folder
    is 0700, the key file 0600 and 32 bytes, nothing temporary is left."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _KEY, str(go)],
            cwd=str(project_root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    time.sleep(1.0)
    go.touch()
    digests = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        digests.append(out.strip())
    assert len(set(digests)) == 1
    key = trust_folder / "key"
    assert hashlib.sha256(key.read_bytes()).hexdigest() == digests[0]
    assert key.stat().st_size == 32
    if os.name == "posix":
        assert stat.S_IMODE(trust_folder.stat().st_mode) == 0o700
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert sorted(os.listdir(trust_folder)) == ["key", "modules"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize("defect", ["folder_mode", "key_mode", "key_size"])
def test_unusable_trust_folder_is_refused_and_nothing_is_cached(
    tmp_path, trust_folder, defect, project_root
):
    """A trust folder others can open, a readable key or a key of the wrong size is not used:
    one warning says why and what to do; the model still compiles and runs, from a module
    checked by regeneration, with its kernels compiled in memory only (no cache on disk that
    no key can verify)."""
    trust_folder.mkdir(mode=0o700)
    (trust_folder / "modules").mkdir(mode=0o700)
    key = trust_folder / "key"
    key.write_bytes(os.urandom(31 if defect == "key_size" else 32))
    key.chmod(0o644 if defect == "key_mode" else 0o600)
    if defect == "folder_mode":
        trust_folder.chmod(0o755)
    out = tmp_path / "gen"
    proc = _run(out, f"untrusted_{defect}", project_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    message = " ".join(proc.stderr.split())
    assert f"cannot use the trust folder {trust_folder}" in message
    assert "DYNOSED_TRUST_DIR" in message
    assert {"folder_mode": "chmod 700", "key_mode": "chmod 600", "key_size": "31 bytes"}[
        defect
    ] in message
    X = np.array([[1.0, 2.0], [0.5, -1.0], [-0.3, 0.25]])
    f = json.loads(proc.stdout.split("RESULT ", 1)[1])["f"]
    np.testing.assert_allclose(f, drift_oracle(X, 0.7), rtol=1e-15)
    assert not list(out.glob("**/*.nb[ic]"))
    assert os.listdir(trust_folder / "modules") == []
