"""Input data: arrays, DataFrames, ``.npy`` files (memory-mapped) and chunk iterators.

Everything is turned into a sequence of C-contiguous float64 blocks of shape
(N_b, d) whose columns follow ``model.state``; bad values are reported with the
offending rows or columns named.
"""

from __future__ import annotations

import os

import numpy as np

from .errors import DataError

__all__ = ["as_samples", "iter_blocks", "DEFAULT_BLOCKS"]

DEFAULT_BLOCKS = 32  # data blocks for sampling-noise estimates


def _from_frame(X, model, name):
    cols = [str(c) for c in X.columns]
    missing = [s for s in model.state_names if s not in cols]
    if missing:
        raise DataError(f"{name}: DataFrame has no column {missing[0]!r} for state variable "
                        f"{missing[0]!r} (columns: {', '.join(cols)})")
    return X[model.state_names].to_numpy(dtype=float)


def as_samples(X, model, name="X", min_samples=2) -> np.ndarray:
    """Validate in-memory samples → C-contiguous float64 (N, d).

    Accepts a NumPy array (N, d) in ``model.state`` column order or a pandas
    DataFrame whose columns include the state names (order and extra columns
    do not matter).
    """
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        arr = _from_frame(X, model, name)
    else:
        try:
            arr = np.asarray(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{name}: cannot convert to a float array ({exc})") from exc
    if arr.ndim == 1 and model.d == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(f"{name}: expected a 2-D array (N, {model.d}), got {arr.ndim} dimension(s)")
    if arr.shape[1] != model.d:
        raise DataError(f"{name}: has {arr.shape[1]} columns but model {model.name!r} has "
                        f"{model.d} state variables ({', '.join(model.state_names)})")
    check_finite(arr, name)
    if arr.shape[0] < min_samples:
        raise DataError(f"{name}: {arr.shape[0]} sample(s); at least {min_samples} are needed")
    return np.ascontiguousarray(arr)


def check_finite(arr, name, offset=0):
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        shown = ", ".join(str(int(r) + offset) for r in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise DataError(f"{name}: {rows.size} row(s) contain NaN or inf (rows {shown})")


def iter_blocks(X, model, name="X", n_blocks=DEFAULT_BLOCKS, chunk_rows=65536):
    """Yield validated (N_b, d) blocks of ``X``, in order, and the total count via the generator.

    ``X`` may be an array or DataFrame (split into ``n_blocks`` contiguous
    blocks), a path to a ``.npy`` file (memory-mapped and read in chunks of
    ``chunk_rows``), or any iterable of arrays/DataFrames (one block each).
    """
    if isinstance(X, (str, os.PathLike)):
        path = os.fspath(X)
        if not path.endswith(".npy"):
            raise DataError(f"{name}: only .npy files can be streamed directly (got {path!r})")
        try:
            mm = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise DataError(f"{name}: cannot read {path!r} ({exc})") from exc
        if mm.ndim != 2 or mm.shape[1] != model.d:
            raise DataError(f"{name}: {path!r} holds shape {mm.shape}, expected (N, {model.d})")
        n = mm.shape[0]
        rows = max(chunk_rows, -(-n // n_blocks))
        for start in range(0, n, rows):
            block = np.ascontiguousarray(mm[start:start + rows], dtype=float)
            check_finite(block, name, offset=start)
            yield block
        return
    if isinstance(X, np.ndarray) or hasattr(X, "columns"):
        arr = as_samples(X, model, name)
        n = arr.shape[0]
        nb = max(1, min(n_blocks, n // 4))
        edges = np.linspace(0, n, nb + 1).round().astype(int)
        for lo, hi in zip(edges[:-1], edges[1:]):
            yield arr[lo:hi]
        return
    try:
        iterator = iter(X)
    except TypeError:
        raise DataError(f"{name}: expected an array, DataFrame, .npy path or iterable of chunks, "
                        f"got {type(X).__name__}") from None
    offset = 0
    for chunk in iterator:
        block = as_samples(chunk, model, f"{name} (chunk starting at row {offset})", min_samples=1)
        offset += block.shape[0]
        yield block
