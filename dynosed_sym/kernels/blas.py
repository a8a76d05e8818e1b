"""How many BLAS threads the solve and the checks use.

The solve is a handful of dense factorisations (SVDs, Gram products) of matrices with at most a
few thousand rows, run right after Numba's parallel assembly.  OpenBLAS's worker threads then
compete with Numba's (still spinning) ones and with any other process on the machine: on a busy
2-core machine one SVD of a 2048 × 100 system took 0.40 s with two BLAS threads and 0.034 s with
one.  The solve therefore runs with ``DYNOSED_BLAS_THREADS`` BLAS threads (default 1), and so
does the whole of ``fit_global`` and ``fit_local`` (their stationarity check and report make small
BLAS calls too, which compete the same way) and ``check_stationarity`` called on its own; set it
to a larger number on a quiet many-core machine with very large systems.  The dense solve's
largest products use both cores anyway, as independent single-threaded products on Python threads
(:mod:`dynosed_sym.solve.grams`).  The module sits in the lowest layer, with the other thread
helpers, so that every layer can use it.
"""

from __future__ import annotations

import functools
import os
import sys
from contextlib import contextmanager

__all__ = ["blas_threads", "blas_limit", "limited_blas", "single_blas", "ENV"]

ENV = "DYNOSED_BLAS_THREADS"


def _limit():
    raw = os.environ.get(ENV, "1").strip()
    try:
        n = int(raw)
    except ValueError:
        from ..errors import DynosedError

        raise DynosedError(f"{ENV} must be a positive integer, got {raw!r}") from None
    if n < 1:
        from ..errors import DynosedError

        raise DynosedError(f"{ENV} must be a positive integer, got {raw!r}")
    return n


def _controller():
    """One ``threadpoolctl.ThreadpoolController`` for the process, rebuilt when modules were
    imported since (a new extension may have loaded another BLAS).  ``threadpool_limits`` scans
    the process's shared libraries on every call: 2 ms, 40 % of a 100-resample bootstrap of a
    three-parameter model, whose every resample is a solve.  None without threadpoolctl."""
    key = len(sys.modules)
    if _state.controller is None or _state.controller_key != key:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - a dependency; kept optional for vendored installs
            return None
        _state.controller, _state.controller_key = ThreadpoolController(), len(sys.modules)
    return _state.controller


@contextmanager
def blas_threads():
    """Limit the BLAS thread pools to ``DYNOSED_BLAS_THREADS`` inside the block (no-op when
    threadpoolctl is not installed)."""
    controller = _controller()
    if controller is None:  # pragma: no cover
        yield
        return
    with controller.limit(limits=_limit(), user_api="blas"):
        yield


def blas_limit():
    """The BLAS threads a limited call may use (``DYNOSED_BLAS_THREADS``, default 1)."""
    return _limit()


@contextmanager
def limited_blas():
    """The limit of :func:`single_blas` as a with-block: a public entry point wraps its body in it
    instead of being decorated, so no frame comes between it and its caller (the package's
    warnings name the caller's line by a fixed ``stacklevel``; a decorator's frame took it)."""
    if getattr(_state, "active", False):
        yield
        return
    _state.active = True
    try:
        with blas_threads():
            yield
    finally:
        _state.active = False


def single_blas(fn):
    """Run ``fn`` inside :func:`blas_threads` (nested calls reuse the outer limit).

    The "inside" flag is per process, as the limit itself (one OpenBLAS setting): two limited
    calls running at once on two threads share one limit, which the first to return lifts.  Not
    counted per thread because OpenBLAS ignored a new thread count set from a worker thread in a
    test (after the main thread had set one), so a second thread could not re-establish it."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with limited_blas():
            return fn(*args, **kwargs)

    return wrapper


class _State:
    active = False
    controller = None
    controller_key = -1


_state = _State()
