"""What is trusted on disk: generated modules and Numba's caches of their kernels, verified.

A generated module is Python code that :func:`~dynosed_sym.codegen.compile_model` executes, and
Numba's cache files (``.nbi`` index, ``.nbc`` data) are pickles that Numba unpickles into
machine code.  Whoever can write to the folder they live in — a shared
``DYNOSED_GENERATED_DIR`` on a cluster, the folder Dask workers share — could otherwise run
code as the next user, and a damaged cache file made every later run fail inside Numba
(``UnpicklingError``, an LLVM abort).  So nothing is used just because it is there:

* **A per-user secret key** (32 random bytes) lives in the *trust folder*
  (``$DYNOSED_TRUST_DIR``, default ``~/.cache/dynosed_sym/trust``): the folder is created with
  mode 0700 and the key file with mode 0600, atomically (written under a temporary name, then
  linked into place: a concurrent process finds either no key or the whole key).  Both are
  checked to belong to this user and to be private before the key is used.
* **A generated module** is used only when it is exactly what its declaration generates.  That
  is established once — by regenerating it and comparing the text, or because this process
  wrote it — and recorded as an empty file named by the HMAC-SHA256 of its text under the trust
  folder (``modules/``).  A later load reads the file once, recomputes the HMAC of those bytes
  and finds the record (one ``stat``); the module is executed from the bytes that were checked,
  so a file swapped after the check, or a planted ``.pyc``, is never run.  A text without a
  record that differs from the regenerated one is rewritten, with a warning.
* **Every Numba cache file** of a generated kernel ends with a trailer holding the HMAC-SHA256
  of its name and body, written in the same atomic write as the file.  Before Numba unpickles a
  cache file, the whole file is read once and its HMAC checked; a file that fails (damaged,
  truncated, written by another user or program) is deleted with a warning and the kernel is
  compiled again.  The trailer follows the pickle's end, so Numba itself would still read it.

When the trust folder cannot be used (not writable, not private), the key lives in this process
only, with one warning: generated modules are then checked by regeneration on every first use,
and their kernels are not cached on disk (they compile in every process).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import stat
import tempfile
import threading
import warnings

__all__ = [
    "trust_dir",
    "module_is_trusted",
    "trust_module",
    "verify_numba_caches",
    "TRAILER_MAGIC",
]

#: Marks the start of the HMAC trailer of a Numba cache file written by dynosed_sym (the pickle
#: before it ends with its STOP opcode; the trailer ends with "." so that a reader checking the
#: last byte of a pickle still accepts the file).
TRAILER_MAGIC = b"\n#dynosed-hmac-sha256:"
_TRAILER = len(TRAILER_MAGIC) + 32 + 1

_LOCK = threading.Lock()
_STATE: dict = {}  # trust folder → (key, persistent) ; in-process records when not persistent
_SESSION_RECORDS: set = set()


def trust_dir() -> str:
    """The trust folder: ``$DYNOSED_TRUST_DIR`` or ``~/.cache/dynosed_sym/trust``."""
    env = os.environ.get("DYNOSED_TRUST_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.join(os.path.expanduser("~"), ".cache", "dynosed_sym", "trust")


class _Unusable(Exception):
    """The trust folder cannot hold the key (the message says why)."""


def _private(st, what, path, mask):
    """Raise _Unusable unless ``st`` belongs to this user and has none of the ``mask`` bits."""
    if os.name != "posix":
        return
    if st.st_uid != os.geteuid():
        raise _Unusable(f"{what} {path} belongs to another user (uid {st.st_uid})")
    if st.st_mode & mask:
        raise _Unusable(
            f"{what} {path} is accessible to other users (mode {stat.S_IMODE(st.st_mode):o}); "
            f"chmod {'700' if what == 'folder' else '600'} it"
        )


def _create_key(path):
    """Write 32 random bytes to ``path`` atomically (mode 0600); keep another process's key."""
    fd, tmp = tempfile.mkstemp(prefix=".key_", dir=os.path.dirname(path))  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(32))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic, and never replaces a key another process created
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _read_key(folder):
    """The key of ``folder`` (created when missing), after checking folder and file are private."""
    os.makedirs(folder, mode=0o700, exist_ok=True)  # (the mode applies to the last level only)
    os.makedirs(os.path.join(folder, "modules"), mode=0o700, exist_ok=True)
    _private(os.stat(folder), "folder", folder, 0o077)
    _private(os.stat(os.path.join(folder, "modules")), "folder", folder + "/modules", 0o077)
    path = os.path.join(folder, "key")
    if not os.path.exists(path):
        _create_key(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _Unusable(f"key {path} is not a regular file")
        _private(st, "key", path, 0o077)
        key = fh.read(33)
    if len(key) != 32:
        raise _Unusable(f"key {path} has {len(key)} bytes, not 32: delete it (a new one is made)")
    return key


def _key():
    """(key, persistent) for the current trust folder; a per-process key when it is unusable."""
    folder = trust_dir()
    with _LOCK:
        state = _STATE.get(folder)
        if state is None:
            try:
                state = (_read_key(folder), True)
            except (OSError, _Unusable) as exc:
                warnings.warn(
                    f"cannot use the trust folder {folder} ({exc}): generated modules are "
                    "checked by regenerating them, and their kernels are compiled in every "
                    "process instead of being cached; set DYNOSED_TRUST_DIR to a private "
                    "folder you can write",
                    stacklevel=4,
                )
                state = (os.urandom(32), False)
            _STATE[folder] = state
    return state


def _mac(key, *parts) -> bytes:
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.digest()


# --------------------------------------------------------------------------- generated modules
def _record(data: bytes):
    key, persistent = _key()
    tag = _mac(key, b"generated module", data).hex()
    if not persistent:
        return tag, None
    return tag, os.path.join(trust_dir(), "modules", tag)


def module_is_trusted(data: bytes) -> bool:
    """Whether the module text ``data`` (bytes) was recorded as generated by this package."""
    tag, path = _record(data)
    if path is None:
        return tag in _SESSION_RECORDS
    return os.path.exists(path)


def trust_module(data: bytes) -> None:
    """Record the module text ``data`` (bytes) as generated: regenerated and compared, or just
    written by this process.  A record that cannot be written is kept for this process only."""
    tag, path = _record(data)
    _SESSION_RECORDS.add(tag)
    if path is not None:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError:
            pass  # checked again by regeneration next time


# --------------------------------------------------------------------------- Numba's caches
def _seal(key, name, body):
    return body + TRAILER_MAGIC + _mac(key, b"numba cache", name.encode(), body) + b"."


def _unseal(key, name, raw):
    """(body, None) when the trailer's HMAC checks, else (None, reason)."""
    if len(raw) < _TRAILER or raw[-_TRAILER:-33] != TRAILER_MAGIC or raw[-1:] != b".":
        return None, (
            "has no checksum (truncated, or written by another program or an earlier version "
            "of dynosed_sym)"
        )
    body = raw[:-_TRAILER]
    if not hmac.compare_digest(raw[-33:-1], _mac(key, b"numba cache", name.encode(), body)):
        return None, "fails its checksum (damaged, or written by another user)"
    return body, None


def _discard(path, reason):
    warnings.warn(
        f"Numba's cache file {path} {reason}; deleting it (the kernel is compiled again)",
        stacklevel=2,
    )
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        warnings.warn(
            f"cannot delete the damaged Numba cache file {path} ({exc}); it is not used, "
            "but delete it by hand",
            stacklevel=2,
        )


def _verified_file_class():
    from numba.core.caching import IndexDataCacheFile

    class VerifiedCacheFile(IndexDataCacheFile):
        """Numba's index/data cache file with an HMAC trailer written and checked (module doc).

        Installed on the cache of each kernel by :func:`verify_numba_caches`; the format of
        the bytes before the trailer is Numba's own.
        """

        _dynosed_key = b""

        def _read_verified(self, path):
            """The checked body of ``path``; None when it failed (then it is deleted)."""
            with open(path, "rb") as fh:
                raw = fh.read()
            body, reason = _unseal(self._dynosed_key, os.path.basename(path), raw)
            if body is None:
                _discard(path, reason)
            return body

        def _write_sealed(self, path, body):
            with self._open_for_write(path) as fh:
                fh.write(_seal(self._dynosed_key, os.path.basename(path), body))

        def _load_index(self):
            try:
                body = self._read_verified(self._index_path)
            except FileNotFoundError:
                return {}
            if body is None:
                return {}
            stream = io.BytesIO(body)
            if pickle.load(stream) != self._version:
                return {}  # another Numba version's index (as Numba: skipped, rewritten)
            stamp, overloads = pickle.loads(stream.read())
            return overloads if stamp == self._source_stamp else {}

        def _save_index(self, overloads):
            body = pickle.dumps(self._version, protocol=-1)
            body += self._dump((self._source_stamp, overloads))
            self._write_sealed(self._index_path, body)

        def _load_data(self, name):
            body = self._read_verified(self._data_path(name))
            return None if body is None else pickle.loads(body)

        def _save_data(self, name, data):
            self._write_sealed(self._data_path(name), self._dump(data))

    return VerifiedCacheFile


_VERIFIED = []


def verify_numba_caches(module) -> int:
    """Make Numba verify every cache file of the kernels defined in ``module`` (module doc).

    Call it after the import and before any kernel call (kernels compile and load their cache
    lazily).  Without a persistent key, disk caching of these kernels is switched off instead.
    Returns the number of kernels covered.
    """
    from numba.core.caching import IndexDataCacheFile, NullCache

    if not _VERIFIED:
        _VERIFIED.append(_verified_file_class())
    cls = _VERIFIED[0]
    key, persistent = _key()
    count = 0
    for obj in vars(module).values():
        cache = getattr(obj, "_cache", None)
        cache_file = getattr(cache, "_cache_file", None)
        if getattr(getattr(obj, "py_func", None), "__module__", None) != module.__name__:
            continue
        if not isinstance(cache_file, IndexDataCacheFile):
            continue
        if persistent:
            cache_file.__class__ = cls
            cache_file._dynosed_key = key
        else:
            obj._cache = NullCache()
        count += 1
    return count
