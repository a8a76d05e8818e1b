"""Optional progress bars (tqdm) for streamed and distributed work.

``progress=None`` (the default of the functions that take it) shows a bar only for work
on streamed or distributed data and only when standard error is a terminal;
``progress=True`` / ``False`` force it on or off.  Without tqdm installed
(``pip install 'dynosed_sym[progress]'``) there is never a bar and nothing else changes.
"""

from __future__ import annotations

import sys

__all__ = ["progress_enabled", "progress_bar"]


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
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, leave=False,
                dynamic_ncols=True, file=sys.stderr)
