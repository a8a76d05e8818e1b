"""Optional progress bars (tqdm) for streamed and distributed work, and the first-compile note.

``progress=None`` (the default of the functions that take it) shows a bar only for work
on streamed or distributed data and only when standard error is a terminal;
``progress=True`` / ``False`` force it on or off.  Without tqdm installed
(``pip install 'dynosed_sym[progress]'``) there is never a bar and nothing else changes.

:func:`note_first_compile` prints one line on standard error when a model's generated kernels
have no entry in Numba's on-disk cache yet, so the pause of the first compilation (seconds per
kernel) is explained.  Set ``DYNOSED_QUIET=1`` to silence it.
"""

from __future__ import annotations

import os
import sys

__all__ = ["progress_enabled", "progress_bar", "note_first_compile", "cold_kernels"]


def _stderr_isatty():
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):
        return False


def progress_enabled(progress, streamed=True) -> bool:
    """Resolve a ``progress`` argument (None, True or False) into whether to show a bar."""
    if progress is None:
        return bool(streamed) and _stderr_isatty()
    return bool(progress)


class _NoBar:
    """Stands in for a tqdm bar when none is shown."""

    n = 0

    def update(self, n=1):
        self.n += n

    def set_postfix_str(self, *args, **kwargs):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(enabled, total=None, desc=None, unit="rows"):
    """A tqdm bar on standard error, or a silent stand-in with the same ``update``/``close``.

    Parameters
    ----------
    enabled : bool
        From :func:`progress_enabled`.
    total : int, optional
        Expected total (unknown for a stream of chunks).
    desc : str, optional
    unit : str
    """
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=True,
        leave=False,
        dynamic_ncols=True,
        file=sys.stderr,
    )


def cold_kernels(module) -> tuple:
    """(cold, total): public Numba kernels of ``module`` without an on-disk cache index, and all.

    Numba writes one index file per cached function (``<module>.<function>-<line>.pyXY.nbi``);
    a kernel without one is compiled on its first call.  Functions whose cache location cannot
    be read are not counted.
    """
    cold, total = [], 0
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        try:
            index = obj._cache._cache_file._index_path
        except AttributeError:
            continue
        total += 1
        if not os.path.exists(index):
            cold.append(name)
    return cold, total


def note_first_compile(module, model_name, stream=None) -> bool:
    """One line on standard error when ``module`` has never been compiled (no kernel cached).

    A model whose kernels were compiled before (some of them cached) stays silent: kernels of
    a route not used so far compile on their first call, in seconds.  Returns whether the note
    was written.
    """
    if os.environ.get("DYNOSED_QUIET"):
        return False
    cold, total = cold_kernels(module)
    if not total or len(cold) < total:
        return False
    print(
        f"dynosed: first use of model {model_name!r}: Numba compiles its kernels as they are "
        "first called (a few seconds each; cached on disk afterwards)",
        file=stream or sys.stderr,
        flush=True,
    )
    return True
