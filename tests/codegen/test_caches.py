"""Caches on disk (issue 9): concurrent compiles, damaged files, generator changes, read-only
folders, damaged Numba caches.  Nothing on disk may be left corrupt, and no stale file may be
reused.  (Truncated and hand-edited generated files: tests/test_codegen.py, damage cases.)
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
import types
import warnings

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.codegen import loading as compiled_mod
from dynosed_sym.codegen import render as emit_mod
from dynosed_sym.codegen import spec as spec_mod
from dynosed_sym.codegen.files import content_hash_of, module_filename, split_banner
from dynosed_sym.codegen.render import render_module
from dynosed_sym.codegen.spec import build_spec, spec_hash

x, y = sp.symbols("x y", real=True)
k = sp.Symbol("k", real=True)


def small_model(name):
    return ds.SDEModel(
        [x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)], name=name
    )


def assert_intact(path):
    """A complete generated module: banner hash matches the body."""
    recorded, body = split_banner(open(path, encoding="utf-8").read())
    assert recorded is not None and recorded == content_hash_of(body)


# --------------------------------------------------------------------------- concurrency
_WORKER = """
import json, os, sys, time
import numpy as np, sympy as sp
import dynosed_sym as ds
out, go = sys.argv[1], sys.argv[2]
x, y = sp.symbols("x y", real=True); k = sp.Symbol("k", real=True)
m = ds.SDEModel([x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)],
                name="race")
while not os.path.exists(go):      # start together
    time.sleep(0.005)
cm = ds.compile_model(m, out)      # emit (all at once) ...
X = np.linspace(-1, 1, 20).reshape(10, 2)
f = cm.drift(X, [0.7])             # ... and Numba compile + cache write (all at once)
s, c = cm.stein_features(X)
print(json.dumps({"path": cm.path, "f": f.tolist(), "s": s.tolist()}))
"""


def test_processes_compiling_the_same_model_at_once(tmp_path, project_root):
    """Three processes emit and jit-compile the same model into one folder simultaneously: all
    succeed with the same results, the file is intact, no temporary file is left behind, and a
    later process loads it without regenerating."""
    out, go = str(tmp_path / "gen"), str(tmp_path / "go")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, out, go],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(project_root),
        )
        for _ in range(3)
    ]
    time.sleep(1.5)  # let the interpreters import numba/sympy before the start signal
    open(go, "w").close()
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert len({r["path"] for r in results}) == 1
    assert all(r["f"] == results[0]["f"] and r["s"] == results[0]["s"] for r in results)
    path = results[0]["path"]
    assert_intact(path)
    assert set(os.listdir(out)) == {os.path.basename(path), "__pycache__"}  # no .tmp_ left
    assert not [n for n in os.listdir(os.path.join(out, "__pycache__")) if ".tmp" in n]
    m = small_model("race")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "modified or truncated", no damaged Numba cache
        cm = ds.compile_model(m, out)
    X = np.linspace(-1, 1, 20).reshape(10, 2)
    np.testing.assert_array_equal(cm.drift(X, [0.7]), np.array(results[0]["f"]))


def test_threads_compiling_the_same_model_at_once(tmp_path):
    """Threads of one process share one loaded module (the loader is locked)."""
    from concurrent.futures import ThreadPoolExecutor

    m = small_model("race_threads")
    with ThreadPoolExecutor(4) as pool:
        cms = list(pool.map(lambda _: ds.compile_model(m, str(tmp_path)), range(8)))
    assert len({id(cm.module) for cm in cms}) == 1
    assert_intact(cms[0].path)


# --------------------------------------------------------------------------- generator version
def test_generator_version_change_never_reuses_old_files(tmp_path, monkeypatch):
    old = ds.compile_model(small_model("genver"), str(tmp_path))
    old_text = open(old.path, encoding="utf-8").read()
    new_version = spec_mod.GENERATOR_VERSION + ".next"
    for mod in (spec_mod, compiled_mod, emit_mod):
        monkeypatch.setattr(mod, "GENERATOR_VERSION", new_version)
    m = small_model("genver")  # a fresh declaration: its spec hash is computed anew
    new_path = os.path.join(str(tmp_path), module_filename(m.name, spec_hash(m)))
    assert new_path != old.path  # the version is part of the hash that names the file
    # an old generator's text planted under the new name is recognised as stale
    with open(new_path, "w", encoding="utf-8") as fh:
        fh.write(old_text)
    with pytest.warns(UserWarning, match="modified or truncated"):
        cm = ds.compile_model(m, str(tmp_path))
    assert cm.path == new_path and cm.module is not old.module
    assert cm.module.GENERATOR_VERSION == new_version
    assert f"GENERATOR_VERSION = {new_version!r}" in open(new_path, encoding="utf-8").read()
    assert_intact(new_path)
    assert open(old.path, encoding="utf-8").read() == old_text  # the old file is left alone


def test_generator_fingerprint_follows_its_sources(tmp_path, monkeypatch):
    """GENERATOR_VERSION hashes every generator source, comments excluded: fingerprinting
    temporary copies, a changed token changes the hash, a changed comment, blank line or line
    ending does not."""
    assert set(spec_mod._GENERATOR_SOURCES) >= {
        "codegen/spec.py",
        "model/derivation.py",
        "codegen/printer.py",
        "codegen/wrapping.py",
        "codegen/legend.py",
        "codegen/templates.py",
        "codegen/render.py",
        "kernels/lanes.py",
        "kernels/rng.py",
        "kernels/trig.py",
    }
    here = os.path.dirname(os.path.dirname(os.path.abspath(spec_mod.__file__)))  # the package
    for rel in spec_mod._GENERATOR_SOURCES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(open(os.path.join(here, rel), "rb").read())
    monkeypatch.setattr(spec_mod, "__file__", str(tmp_path / "codegen" / "spec.py"))  # the copies
    original = spec_mod._generator_fingerprint()
    assert spec_mod.GENERATOR_VERSION.endswith("+" + original)
    for rel in spec_mod._GENERATOR_SOURCES:  # every source counts
        source = tmp_path / rel
        text = source.read_text(encoding="utf-8")

        def fingerprint_of(new_text, source=source):
            source.write_bytes(new_text.encode("utf-8"))
            return spec_mod._generator_fingerprint()

        assert fingerprint_of("# a new comment\n\n" + text + "\n# and another\n\n") == original, rel
        assert fingerprint_of(text + "\n_UNUSED = 1\n") != original, rel
        assert fingerprint_of(text.replace("\n", "\r\n")) == original, rel  # a CRLF checkout
        assert fingerprint_of(text) == original, rel
    templates = tmp_path / "codegen" / "templates.py"
    text = templates.read_text(encoding="utf-8")
    templates.write_text(text.replace("fastmath=False", "fastmath=True", 1), encoding="utf-8")
    assert spec_mod._generator_fingerprint() != original  # a changed token inside a template


def _package_imports(tree, package_dir, here):
    """Package files (relative to ``package_dir``) that the module ``tree`` (a file in folder
    ``here``) imports: ``from dynosed_sym.a import b`` / ``from .a import b``, where b is a
    submodule or a name of a."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            parts = node.module.split(".") if node.module else []
        elif node.module and node.module.split(".")[0] == "dynosed_sym":
            base, parts = package_dir, node.module.split(".")[1:]
        else:
            continue
        folder = os.path.join(base, *parts)
        for alias in node.names:
            submodule = os.path.join(folder, alias.name + ".py")
            target = submodule if os.path.exists(submodule) else folder + ".py"
            if not os.path.exists(target):
                target = os.path.join(folder, "__init__.py")
            found.add(os.path.relpath(target, package_dir).replace(os.sep, "/"))
    return found


def test_generator_sources_cover_what_generated_modules_import():
    """Numba's cache of a generated kernel does not notice a change in a function it calls from
    another module: every package module a generated module imports (directly, or through the
    imports of those modules) is part of GENERATOR_VERSION's fingerprint."""
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(spec_mod.__file__)))
    state_noise = ds.SDEModel([x], [k], [-k * x], diffusion=(1 + x**2) / 2, name="imports_em")
    todo = set()
    for m in (small_model("imports"), state_noise):
        todo |= _package_imports(ast.parse(render_module(build_spec(m))), package_dir, "")
    seen = set()
    while todo:
        rel = todo.pop()
        seen.add(rel)
        path = os.path.join(package_dir, rel)
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        todo |= _package_imports(tree, package_dir, os.path.dirname(path)) - seen
    assert {"kernels/lanes.py", "kernels/rng.py", "kernels/trig.py"} <= seen
    assert seen <= set(spec_mod._GENERATOR_SOURCES), seen - set(spec_mod._GENERATOR_SOURCES)


# --------------------------------------------------------------------------- read-only folders
def _refuse_writes_under(monkeypatch, folder):
    real = compiled_mod.write_if_changed

    def write(path, text):
        if os.path.abspath(path).startswith(os.path.abspath(folder)):
            raise PermissionError(13, "Permission denied", path)
        return real(path, text)

    monkeypatch.setattr(compiled_mod, "write_if_changed", write)


def test_read_only_chosen_folder_is_a_clear_error(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    _refuse_writes_under(monkeypatch, ro)
    with pytest.raises(ds.CodegenError, match=r"cannot write generated kernels to .*ro'.*out_dir="):
        ds.compile_model(small_model("ro_chosen"), str(ro))
    monkeypatch.setenv("DYNOSED_GENERATED_DIR", str(ro))  # chosen by environment: also an error
    with pytest.raises(ds.CodegenError, match="DYNOSED_GENERATED_DIR"):
        ds.compile_model(small_model("ro_env"))


def test_read_only_default_folder_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    """The project's generated/ folder is read-only (an installed checkout): the kernels go to
    the per-user cache, with a warning naming both."""
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "generated").mkdir()
    user = tmp_path / "user_cache"
    (project / "models" / "fb.py").write_text(
        "import sympy as sp\nimport dynosed_sym as ds\n"
        "x, y = sp.symbols('x y', real=True)\nk = sp.Symbol('k', real=True)\n"
        "model = ds.SDEModel([x, y], [k], [-k * x, -y], diffusion=1, name='fallback')\n"
    )
    monkeypatch.delenv("DYNOSED_GENERATED_DIR", raising=False)
    monkeypatch.setattr(compiled_mod, "user_cache_dir", lambda: str(user))
    _refuse_writes_under(monkeypatch, project / "generated")
    m = ds.load_model(project / "models" / "fb.py")
    assert ds.codegen.default_output_dir(m) == str(project / "generated")
    with pytest.warns(UserWarning, match=r"generated.*using the user cache .*user_cache"):
        cm = ds.compile_model(m)
    assert os.path.dirname(cm.path) == str(user)
    assert_intact(cm.path)
    assert os.listdir(project / "generated") == []


def test_read_only_folder_with_a_valid_file_needs_no_write(tmp_path, monkeypatch):
    m = small_model("ro_valid")
    path = tmp_path / module_filename(m.name, spec_hash(m))
    path.write_text(render_module(build_spec(m)), encoding="utf-8")
    _refuse_writes_under(monkeypatch, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm = ds.compile_model(m, str(tmp_path))
    assert cm.path == str(path)


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0,
    reason="root ignores directory permissions (the monkeypatched tests cover this)",
)
def test_read_only_folder_by_permissions(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(ds.CodegenError, match="cannot write"):
            ds.compile_model(small_model("ro_chmod"), str(ro))
    finally:
        ro.chmod(0o755)


# --------------------------------------------------------------------------- Numba cache
# (deliberate attacks on the cache files — bit flips, zeroed middles, foreign keys, planted
# modules and .pyc files: tests/codegen/test_trust.py)
_COMPILE = """
import sys, numpy as np, sympy as sp, dynosed_sym as ds
x, y = sp.symbols("x y", real=True); k = sp.Symbol("k", real=True)
m = ds.SDEModel([x, y], [k], [-k * x + y, -x - k * y**3], diffusion=[1, sp.Rational(1, 2)],
                name=sys.argv[2])
ds.compile_model(m, sys.argv[1]).drift(np.zeros((2, 2)), [1.0])
"""

#: the warning of a Numba cache file that fails its check (codegen/trust.py)
DAMAGED = r"Numba's cache file .* (fails its checksum|has no checksum)"


def _drift_oracle(X, k):
    return np.column_stack([-k * X[:, 0] + X[:, 1], -X[:, 0] - k * X[:, 1] ** 3])


def _sealed(path):
    """Whether ``path`` ends with a valid HMAC trailer under this user's key."""
    from dynosed_sym.codegen import trust

    key = trust._key()[0]
    return trust._unseal(key, os.path.basename(path), open(path, "rb").read())[0] is not None


@pytest.mark.parametrize("damage", ["index", "data"])
def test_damaged_numba_cache_is_rebuilt(tmp_path, project_root, damage):
    """A truncated Numba index or data file used to raise UnpicklingError from inside the first
    kernel call; now it fails its check before Numba reads it, is deleted with a warning and the
    kernel is compiled again (and its cache written anew, sealed)."""
    name = f"nbcache_{damage}"
    subprocess.run(
        [sys.executable, "-c", _COMPILE, str(tmp_path), name],
        check=True,
        cwd=str(project_root),
        timeout=300,
    )
    cache = tmp_path / "__pycache__"
    files = sorted(cache.glob(f"{name}_*.drift-*.nb{'i' if damage == 'index' else 'c'}"))
    assert files and all(_sealed(f) for f in files)
    for f in files:
        f.write_bytes(f.read_bytes()[:40])
    m = small_model(name)
    cm = ds.compile_model(m, str(tmp_path))
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    with pytest.warns(UserWarning, match=DAMAGED):
        f = cm.drift(X, [0.7])  # (kernels load their cache at the first call)
    np.testing.assert_allclose(f, _drift_oracle(X, 0.7), rtol=1e-15)
    assert all(_sealed(f) for f in files)  # rewritten by Numba, through the sealing writer


@pytest.fixture(scope="module")
def warm_module(tmp_path_factory):
    """A small model emitted into a temporary folder and one kernel called: Numba's cache of
    its generated module (``__pycache__/*.nbi``, ``*.nbc``) exists."""
    out = tmp_path_factory.mktemp("nbwarm")
    m = small_model("nbcache_warm")
    cm = ds.compile_model(m, str(out))
    cm.drift(np.zeros((2, 2)), [1.0])
    return m, cm, out


def _stats(files):
    return {f: (os.stat(f).st_ino, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files}


_COUNT_READS = """
import builtins, collections, json, sys
reads = collections.Counter()
_open = builtins.open
def counting_open(file, *args, **kwargs):
    if str(file).endswith((".nbi", ".nbc")):
        reads[str(file)] += 1
    return _open(file, *args, **kwargs)
builtins.open = counting_open
exec(sys.argv[3])
print("READS " + json.dumps(reads))
"""


def test_intact_numba_cache_is_kept_and_read_once(warm_module, project_root):
    """The check never deletes or rewrites an intact cache, and costs no extra read: in a new
    process, every cache file the kernel call needs is opened exactly once (the verified bytes
    are the ones unpickled)."""
    m, cm, out = warm_module
    files = compiled_mod._numba_cache_files(cm.module)
    assert {os.path.dirname(f) for f in files} == {str(out / "__pycache__")}
    assert any(f.endswith(".nbi") for f in files) and any(f.endswith(".nbc") for f in files)
    before = _stats(files)
    proc = subprocess.run(
        [
            sys.executable,
            "-W",
            "error::UserWarning",
            "-c",
            _COUNT_READS,
            str(out),
            m.name,
            _COMPILE,
        ],
        check=True,
        cwd=str(project_root),
        timeout=300,
        capture_output=True,
        text=True,
    )
    reads = json.loads(proc.stdout.split("READS ", 1)[1])
    drift = [f for f in files if ".drift-" in os.path.basename(f)]
    assert drift and all(reads.get(f) == 1 for f in drift), reads
    assert max(reads.values()) == 1
    assert _stats(compiled_mod._numba_cache_files(cm.module)) == before  # loaded, not rewritten


def test_numba_index_of_another_version_is_not_damage(tmp_path):
    """Numba skips an index written by another Numba version (its rest may not unpickle here)
    and rewrites it: one sealed by this user is skipped without a warning and left for Numba to
    replace; an unsealed one is not trusted (deleted, with the warning)."""
    import pickle

    from dynosed_sym.codegen import trust

    trust.verify_numba_caches(types.ModuleType("none"))  # builds the verifying class
    key = trust._key()[0]
    cache_file = trust._VERIFIED[0](str(tmp_path), "f-1.py311", b"stamp")
    cache_file._dynosed_key = key
    index = tmp_path / "f-1.py311.nbi"
    body = pickle.dumps("0.1.0-another-numba", protocol=-1) + b"\x80\x05\x95 not for this Numba"
    index.write_bytes(trust._seal(key, index.name, body))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_file._load_index() == {}
    assert index.exists()
    index.write_bytes(body)
    with pytest.warns(UserWarning, match="has no checksum"):
        assert cache_file._load_index() == {}
    assert not index.exists()
    # an index of this version, sealed: loaded as Numba would
    cache_file._save_index({"key": "f-1.py311.1.nbc"})
    assert _sealed(index) and cache_file._load_index() == {"key": "f-1.py311.1.nbc"}


def test_damaged_cache_in_numba_user_folder_is_found(warm_module, tmp_path, monkeypatch):
    """When Numba keeps the cache outside ``__pycache__`` (its per-user folder for a read-only
    module folder, or NUMBA_CACHE_DIR), the files there are verified too: a damaged one is
    deleted and rebuilt, the intact ones are used as they are; a file that cannot be deleted is
    named in a warning (and not used)."""
    from numba.core import caching, config

    m, cm, out = warm_module
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba_user"))
    elsewhere = tmp_path / "gen"
    path = elsewhere / os.path.basename(cm.path)
    cache = (
        tmp_path
        / "numba_user"
        / caching.UserProvidedCacheLocator.get_suitable_cache_subpath(str(path))
    )

    def plant():  # the warm cache, as Numba would have written it there, one file truncated
        cache.mkdir(parents=True, exist_ok=True)
        planted = []
        for f in compiled_mod._numba_cache_files(cm.module):
            target = cache / os.path.basename(f)
            target.write_bytes(open(f, "rb").read())
            planted.append(target)
        # the drift kernel's data file first: the one truncated
        planted.sort(key=lambda f: not (".drift-" in f.name and f.name.endswith(".nbc")))
        planted[0].write_bytes(planted[0].read_bytes()[:40])
        return planted

    path.parent.mkdir()
    path.write_text(open(cm.path, encoding="utf-8").read(), encoding="utf-8")
    planted = plant()
    assert ".drift-" in planted[0].name and planted[0].name.endswith(".nbc")
    intact = {f: f.read_bytes() for f in planted[1:]}
    X = np.array([[1.0, 2.0], [0.5, -1.0]])
    cm2 = ds.compile_model(m, str(elsewhere))
    with pytest.warns(UserWarning, match=DAMAGED):
        np.testing.assert_allclose(cm2.drift(X, [0.7]), _drift_oracle(X, 0.7), rtol=1e-15)
    assert not (elsewhere / "__pycache__").exists()
    assert _sealed(planted[0])  # rebuilt
    assert {f: f.read_bytes() for f in planted[1:]} == intact

    planted = plant()
    real_unlink = os.unlink

    def refuse(f, *args, **kwargs):
        if str(f).startswith(str(cache)):
            raise PermissionError(13, "Permission denied", str(f))
        return real_unlink(f, *args, **kwargs)

    cm3 = ds.compile_model(m, str(elsewhere), force=True)  # a new module: nothing loaded yet
    with monkeypatch.context() as mp:
        mp.setattr(os, "unlink", refuse)
        with pytest.warns(UserWarning) as record:
            np.testing.assert_allclose(cm3.drift(X, [0.7]), _drift_oracle(X, 0.7), rtol=1e-15)
    messages = [str(w.message) for w in record]
    assert any(re.search(DAMAGED, msg) for msg in messages)
    assert any(
        "cannot delete the damaged Numba cache file" in msg and str(planted[0]) in msg
        for msg in messages
    )
    assert _sealed(planted[0])  # not used, and replaced by Numba's atomic write
