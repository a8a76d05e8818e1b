"""Generated files: their names, folders, banner check and atomic writes.

A module is named ``{model name}_{spec hash[:12]}.py``; its banner records the SHA-256 of its
body, so a truncated or hand-edited file is recognised.  Writes are atomic and happen only
when the content changes, so Numba's cache (keyed on the file's modification time) stays valid
for unchanged models.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile

__all__ = [
    "module_filename",
    "content_hash_of",
    "split_banner",
    "write_if_changed",
    "stale_files",
    "default_output_dir",
    "user_cache_dir",
    "CONTENT_MARK",
]

CONTENT_MARK = "# content-sha256: "


def module_filename(name: str, spec_hash: str) -> str:
    """File name of a model's generated module: ``{name}_{hash[:12]}.py``."""
    return f"{name}_{spec_hash[:12]}.py"


def content_hash_of(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def split_banner(text: str):
    """Return ``(recorded_content_hash, body)``, or ``(None, text)`` if no banner is found."""
    end = text.find("# ====", text.find(CONTENT_MARK))
    start = text.find(CONTENT_MARK)
    if start < 0 or end < 0:
        return None, text
    recorded = text[start + len(CONTENT_MARK) : text.find("\n", start)].strip()
    body = text[text.find("\n", end) + 1 :]
    return recorded, body


def write_if_changed(path: str, text: str) -> bool:
    """Atomically write ``text`` to ``path`` unless it already holds exactly that.

    Returns True when the file was (re)written.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # not *.py, so a concurrent directory scan never picks up a half-written module
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".tmp", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would hide the file from other users/workers
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(
            tmp, path
        )  # atomic on POSIX: readers see the old or the new file, never a torn one
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def stale_files(out_dir, name, keep):
    """Generated files of model ``name`` in ``out_dir`` other than ``keep`` (older spec hashes),
    then the Python and Numba caches in ``out_dir/__pycache__`` of every such older module
    (``<module>.*``), which nothing would load again."""
    pattern = re.compile(re.escape(name) + r"_[0-9a-f]{12}\.py")
    stale = sorted(
        os.path.join(out_dir, f) for f in os.listdir(out_dir) if pattern.fullmatch(f) and f != keep
    )
    cache = os.path.join(out_dir, "__pycache__")
    if os.path.isdir(cache):  # also caches left by modules removed earlier
        module = re.compile(re.escape(name) + r"_[0-9a-f]{12}(?=\.)")
        stale += sorted(
            os.path.join(cache, f)
            for f in os.listdir(cache)
            if (m := module.match(f)) and m.group(0) + ".py" != keep
        )
    return stale


def user_cache_dir() -> str:
    """The per-user folder of generated modules, ``~/.cache/dynosed_sym/generated``."""
    return os.path.join(os.path.expanduser("~"), ".cache", "dynosed_sym", "generated")


def default_output_dir(model) -> str:
    """Where a model's generated module goes when no folder is given.

    In order: the ``DYNOSED_GENERATED_DIR`` environment variable; the
    ``generated/`` folder beside the ``models/`` folder a model file was loaded
    from (the project layout); else ``~/.cache/dynosed_sym/generated``.
    """
    env = os.environ.get("DYNOSED_GENERATED_DIR")
    if env:
        return env
    src = getattr(model, "source_path", None)
    if src:
        candidate = os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(src))), "generated"
        )
        if os.path.isdir(candidate):
            return candidate
    return user_cache_dir()
