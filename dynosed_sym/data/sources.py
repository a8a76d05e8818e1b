"""Sources: every kind of input, opened for reading in row order as validated chunks.

Input data: arrays, DataFrames, files and streams, and the noise blocks they are cut into.

Inputs
------
In memory
    A NumPy array (N, d) in ``model.state`` column order, or a pandas DataFrame
    whose columns include the state names (order and extra columns do not matter).
Streamed (read in chunks of at most ``chunk_rows`` rows; memory does not grow with N)
    - a path to a ``.npy`` file (memory-mapped), a ``.zarr`` store or an HDF5 file
      (``.h5``/``.hdf5``) holding one 2-D array;
    - a ``numpy.memmap``, a Zarr array or an h5py ``Dataset`` (columns in state order);
    - any iterable or iterator of chunks (arrays or DataFrames), e.g. a generator or
      ``pandas.read_csv(path, chunksize=...)``;
    - a ``dask.array`` (or dask DataFrame), normally handed to :mod:`dynosed_sym.backends.dask`.
AnnData (single-cell data; ``pip install 'dynosed_sym[anndata]'``)
    An ``anndata.AnnData`` whose ``var_names`` include the state names is read from ``.X``;
    :func:`from_anndata` chooses other variables (``var_names=``) or a layer (``layer=``).

Bandwidth rows
--------------
The median-heuristic bandwidth of :func:`dynosed_sym.fit_global` is computed from the first
``BANDWIDTH_ROWS`` (:mod:`dynosed_sym.options`) rows of every kind of input, so that streamed,
distributed and in-memory fits of the same data use the same length scale.
"""

from __future__ import annotations

import os

import numpy as np

from ..arguments import numeric_dtype
from ..errors import DataError
from ..options import CHUNK_ROWS, DEFAULT_BLOCKS
from .arrays import (
    as_samples,
    from_anndata,
    is_anndata,
    is_frame,
    is_series,
    missing_column,
    refuse_structured,
    validate_rows,
)
from .blocks import block_edges
from .checks import Spread, diffusion_psd, state_overflow, state_signs

__all__ = [
    "open_source",
    "is_streamed",
    "iter_blocks",
    "rows_differ",
    "windows",
    "DataSource",
    "ArraySource",
    "SliceSource",
    "IterSource",
    "DaskSource",
    "Columns",
]


def windows(n, rows, start=0):
    """(lo, hi) windows of at most ``rows`` rows covering [start, n)."""
    rows = max(1, int(rows))
    for lo in range(start, n, rows):
        yield lo, min(n, lo + rows)


class DataSource:
    """One input opened for reading in row order.

    Attributes
    ----------
    kind : str
        ``"array"`` (in memory), ``"npy"``, ``"memmap"``, ``"zarr"``, ``"hdf5"``,
        ``"iterator"`` or ``"dask"``.
    n_rows : int or None
        Number of samples, None for a stream of unknown length.
    streamed : bool
        False only for data already in memory.
    d : int
        Columns (the model's state dimension).
    """

    kind = "?"
    streamed = True
    n_rows = None

    def __init__(self, model, name):
        self.model = model
        self.d = model.d
        self.name = name

    def head(self, rows) -> np.ndarray:
        """The first ``min(N, rows)`` validated rows (for the bandwidth)."""
        raise NotImplementedError

    def chunks(self, chunk_rows=CHUNK_ROWS):
        """Yield validated (n_c, d) arrays of at most ``chunk_rows`` rows, in row order."""
        raise NotImplementedError

    def checked_chunks(self, chunk_rows=CHUNK_ROWS):
        """The chunks of :meth:`chunks`, each also checked where the model is needed: a
        state-dependent D(x) at every row, the declared signs of the state and terms that
        overflow (errors name the input, e.g. the environment ``X['B']`` of a design, and global
        rows); after the last chunk, a DataError when all rows were the same point."""
        spread = Spread()
        row = 0
        for chunk in self.chunks(chunk_rows):
            diffusion_psd(self.model, chunk, self.name, offset=row)
            state_signs(self.model, chunk, self.name, offset=row)
            state_overflow(self.model, chunk, self.name, offset=row)
            spread.see(chunk)
            row += chunk.shape[0]
            yield chunk
        spread.check(self.name)

    def close(self):
        """Release files opened by :func:`open_source`."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        n = "?" if self.n_rows is None else self.n_rows
        return f"<{type(self).__name__} {self.kind}: {n} × {self.d}>"


class ArraySource(DataSource):
    """Samples already in memory (validated copy or view in ``array``)."""

    kind = "array"
    streamed = False

    def __init__(self, array, model, name):
        super().__init__(model, name)
        self.array = array
        self.n_rows = int(array.shape[0])

    def head(self, rows):
        return self.array[:rows]

    def chunks(self, chunk_rows=CHUNK_ROWS):
        for lo, hi in windows(self.n_rows, chunk_rows):
            yield self.array[lo:hi]

    def blocks(self, n_blocks=DEFAULT_BLOCKS):
        """The noise blocks (views), in the order the assembly reads them."""
        edges = block_edges(self.n_rows, n_blocks)
        for lo, hi in zip(edges[:-1], edges[1:]):
            yield self.array[lo:hi]


class _RowReader:
    """Picklable ``reader(lo, hi) → raw rows`` that (re)opens its file in each process."""

    def __init__(self, handle=None):
        self._handle = handle

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_handle"] = None
        return state

    def _open(self):
        raise NotImplementedError

    def __call__(self, lo, hi):
        if self._handle is None:
            self._handle = self._open()
        return self._handle[lo:hi]


class NpyReader(_RowReader):
    """Rows of a ``.npy`` file, memory-mapped."""

    def __init__(self, path, handle=None):
        super().__init__(handle)
        self.path = path

    def _open(self):
        return np.load(self.path, mmap_mode="r")


class MemmapReader(_RowReader):
    """Rows of a raw ``numpy.memmap`` (file name, dtype, shape, offset, order)."""

    def __init__(self, mm):
        super().__init__(mm)
        self.filename, self.dtype, self.shape = mm.filename, mm.dtype, mm.shape
        self.offset = mm.offset
        self.order = "F" if (mm.flags.f_contiguous and not mm.flags.c_contiguous) else "C"

    def _open(self):
        return np.memmap(
            self.filename,
            dtype=self.dtype,
            mode="r",
            offset=self.offset,
            shape=self.shape,
            order=self.order,
        )


class ZarrReader(_RowReader):
    """Rows of a Zarr array (the array object itself pickles with its store)."""

    def __init__(self, array):
        super().__init__(array)
        self.array = array

    def _open(self):
        return self.array


class H5Reader(_RowReader):
    """Rows of an HDF5 dataset, reopened by file name and dataset path in other processes."""

    def __init__(self, filename, dataset, handle=None):
        super().__init__(handle)
        self.filename, self.dataset = filename, dataset

    def _open(self):
        h5py = _optional("h5py", "hdf5")
        return h5py.File(self.filename, "r")[self.dataset]


#: How each file kind's transpose is stored (the hint for a (d, N) array; a memmap's to a new
#: file: numpy.save to its own path truncates the file it is still reading).
_TRANSPOSE = {
    "npy": "numpy.save(path, numpy.load(path).T)",
    "memmap": "numpy.save(new_path, numpy.array(X).T), X the stored (d, N) array",
    "zarr": "zarr.save(new_path, X[:].T), X the stored (d, N) array",
    "hdf5": "f.create_dataset(new_name, data=X[()].T) in the file f opened with mode 'a', X the "
    "stored (d, N) array",
}


class SliceSource(DataSource):
    """A file-backed 2-D array read by row windows (npy, memmap, Zarr, HDF5)."""

    def __init__(self, kind, obj, model, name, reader=None, closer=None, location=None):
        super().__init__(model, name)
        self.kind = kind
        self.obj = obj
        self.reader = reader
        self._closer = closer
        self.location = location
        var = f"np.load({location!r})" if kind == "npy" else "X[:]"  # (the array in the fix)
        refuse_structured(getattr(obj, "dtype", None), model, f"{name}: {location or kind}", var)
        shape = tuple(obj.shape)
        if len(shape) == 1 and model.d == 1:
            shape = (shape[0], 1)
        if len(shape) != 2 or shape[1] != model.d:
            turned = (
                "; it looks transposed (rows are samples): store its transpose "
                f"({_TRANSPOSE[kind]})"
                if len(shape) == 2 and shape[0] == model.d and shape[1] > model.d
                else ""
            )
            raise DataError(
                f"{name}: {location or kind} holds an array of shape {tuple(obj.shape)}, "
                f"expected (N, {model.d}) with columns {', '.join(model.state_names)}{turned}"
            )
        _numeric_dtype(obj, name, location or kind)
        self.n_rows = int(shape[0])
        native = getattr(obj, "chunks", None)
        self.native_rows = int(native[0]) if isinstance(native, tuple) and native else None

    def read(self, lo, hi) -> np.ndarray:
        """Validated rows [lo, hi)."""
        return validate_rows(
            self.obj[lo:hi], self.d, self.name, offset=lo, columns=self.model.state_names
        )

    def window_rows(self, chunk_rows):
        """Rows per read: ``chunk_rows`` rounded to whole native (Zarr/HDF5) chunks."""
        if self.native_rows:
            return self.native_rows * max(1, int(chunk_rows) // self.native_rows)
        return int(chunk_rows)

    def head(self, rows):
        return self.read(0, min(self.n_rows, int(rows)))

    def chunks(self, chunk_rows=CHUNK_ROWS):
        for lo, hi in windows(self.n_rows, self.window_rows(chunk_rows)):
            block = self.read(lo, hi)
            for a, b in windows(hi - lo, chunk_rows):
                yield block[a:b]

    def close(self):
        if self._closer is not None:
            self._closer()
            self._closer = None


def _numeric_dtype(obj, name, where):
    """Refuse, before reading anything, a file-backed array that does not hold real numbers.

    An array of Python objects is refused for its own sake: a Zarr 2 store decodes such chunks
    with pickle, i.e. reading a planted store runs its code (data files are never executed)."""
    try:
        dtype = np.dtype(obj.dtype)
    except TypeError:
        return  # an exotic dtype: each read is still checked
    if dtype.kind == "O":
        raise DataError(
            f"{name}: {where} holds Python objects (dtype object), not numbers: such chunks are "
            "decoded with pickle, which can run code; store the data as float64"
        )
    numeric_dtype(dtype, f"{name}: {where}")


class IterSource(DataSource):
    """An iterable of chunks (arrays or DataFrames) of unknown total length.

    Chunks read ahead by :meth:`head` are buffered (at most ``rows`` rows plus one
    chunk) and replayed by :meth:`chunks`; an iterator can be consumed only once.
    """

    kind = "iterator"

    def __init__(self, iterable, model, name):
        super().__init__(model, name)
        self._iterable = iterable
        self._it = iter(iterable)
        self._buffer = []
        self._offset = 0
        self._consumed = False

    def _next_chunk(self):
        while True:
            try:
                raw = next(self._it)
            except StopIteration:
                return None
            label = f"{self.name} (chunk starting at row {self._offset})"
            if is_frame(raw) or is_series(raw):  # (a named Series is read by its name)
                block = as_samples(raw, self.model, label, min_samples=0)
            elif isinstance(raw, np.ndarray) and raw.dtype.names:  # a record array's chunk
                refuse_structured(raw.dtype, self.model, label, var="chunk")
            else:
                block = validate_rows(
                    raw, self.d, label, offset=self._offset, columns=self.model.state_names
                )
            if block.shape[0]:
                self._offset += block.shape[0]
                return block

    def head(self, rows):
        have = sum(c.shape[0] for c in self._buffer)
        while have < rows:
            chunk = self._next_chunk()
            if chunk is None:
                break
            self._buffer.append(chunk)
            have += chunk.shape[0]
        parts, need = [], int(rows)
        for c in self._buffer:
            if need <= 0:
                break
            parts.append(c[:need])
            need -= parts[-1].shape[0]
        return np.concatenate(parts) if parts else np.empty((0, self.d))

    def chunks(self, chunk_rows=CHUNK_ROWS):
        if self._consumed:
            raise DataError(f"{self.name}: this iterator of chunks has already been consumed")
        self._consumed = True
        while True:
            chunk = self._buffer.pop(0) if self._buffer else self._next_chunk()
            if chunk is None:
                return
            for a, b in windows(chunk.shape[0], chunk_rows):
                yield chunk[a:b]

    def close(self):
        closer = getattr(self._iterable, "close", None)
        if callable(closer) and self._consumed:
            try:
                closer()
            except Exception:  # closing a foreign reader must never mask the result
                pass


class DaskSource(DataSource):
    """A ``dask.array`` (N, d) (dask DataFrames are converted by column name).

    Normally fitted on Dask workers (:func:`dynosed_sym.backends.dask.assemble_dask`); with
    ``backend="local"`` its chunks are computed one window at a time in this process.
    """

    kind = "dask"

    def __init__(self, X, model, name):
        super().__init__(model, name)
        if hasattr(X, "columns") and hasattr(X, "to_dask_array"):  # dask DataFrame
            cols = [str(c) for c in X.columns]
            missing = [s for s in model.state_names if s not in cols]
            if missing:
                raise missing_column(
                    name, missing[0], cols, "dask DataFrame", states=model.state_names
                )
            X = X[model.state_names].to_dask_array(lengths=True)
        if X.ndim == 1 and model.d == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != model.d:
            raise DataError(
                f"{name}: dask array of shape {X.shape}, expected (N, {model.d}) with "
                f"columns {', '.join(model.state_names)}"
            )
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        self.array = X
        self.n_rows = int(X.shape[0])

    def head(self, rows):
        return validate_rows(
            self.array[: min(self.n_rows, int(rows))].compute(),
            self.d,
            self.name,
            columns=self.model.state_names,
        )

    def chunks(self, chunk_rows=CHUNK_ROWS):
        for lo, hi in windows(self.n_rows, chunk_rows):
            yield validate_rows(
                self.array[lo:hi].compute(),
                self.d,
                self.name,
                offset=lo,
                columns=self.model.state_names,
            )


def _optional(module, extra):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise DataError(
            f"reading this input needs the optional package {module!r}: "
            f"pip install 'dynosed_sym[{extra}]'"
        ) from None


_NPY_MAGIC = b"\x93NUMPY"


def load_npy(path, where, mmap_mode=None):
    """The array of the ``.npy`` file ``path``, never unpickled: a DataError starting with
    ``where`` for a file that is not a .npy array of numbers (other bytes, a pickle, an object
    array), instead of NumPy's advice to load it with allow_pickle=True."""
    fix = "save the data with numpy.save(path, X) from an array of numbers"
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_NPY_MAGIC))
    except OSError as exc:
        raise DataError(f"{where}: cannot read the file ({exc})") from None
    if head != _NPY_MAGIC:
        kind = (
            " (it is a Python pickle)"
            if head[:1] == b"\x80"
            else " (it is a zip archive, e.g. an .npz file)"
            if head[:2] == b"PK"
            else ""
        )
        raise DataError(
            f"{where} is not a numeric .npy array: it does not start with the .npy signature"
            f"{kind}; {fix}"
        )
    try:
        return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except ValueError as exc:
        if "object" in str(exc) or "pickle" in str(exc):
            raise DataError(
                f"{where} is not a numeric .npy array: it holds Python objects (dtype object), "
                f"which would have to be unpickled and are never loaded; {fix}"
            ) from None
        raise DataError(f"{where} is not a readable .npy array ({exc}); {fix}") from None
    except OSError as exc:
        raise DataError(f"{where}: cannot read the file ({exc})") from None


def _single_array(candidates, what, path, hint):
    arrays = [(n, a) for n, a in candidates if len(a.shape) == 2 or len(a.shape) == 1]
    if len(arrays) == 1:
        return arrays[0]
    names = ", ".join(n for n, _ in candidates) or "none"
    raise DataError(f"X: {path!r} holds {len(arrays)} {what} arrays ({names}); {hint}")


def _open_path(path, model, name):
    low = path.lower().rstrip("/\\")
    if low.endswith(".npy"):
        mm = load_npy(path, f"{name}: {path!r}", mmap_mode="r")
        return SliceSource(
            "npy", mm, model, name, reader=NpyReader(os.path.abspath(path), mm), location=path
        )
    if low.endswith(".zarr"):
        zarr = _optional("zarr", "zarr")
        try:
            node = zarr.open(path, mode="r")
        except Exception as exc:
            raise DataError(f"{name}: cannot open Zarr store {path!r} ({exc})") from exc
        if not hasattr(node, "shape"):  # a group
            key, node = _single_array(
                list(node.arrays()), "Zarr", path, "pass the array itself: zarr.open(path)[name]"
            )
        return SliceSource("zarr", node, model, name, reader=ZarrReader(node), location=path)
    if low.endswith((".h5", ".hdf5", ".he5")):
        h5py = _optional("h5py", "hdf5")
        try:
            fh = h5py.File(path, "r")
        except OSError as exc:
            raise DataError(f"{name}: cannot open HDF5 file {path!r} ({exc})") from exc
        found = []
        fh.visititems(
            lambda n, obj: found.append((n, obj)) if isinstance(obj, h5py.Dataset) else None
        )
        try:
            key, ds = _single_array(
                found, "HDF5", path, "pass the dataset itself: h5py.File(path)[name]"
            )
        except DataError:
            fh.close()
            raise
        reader = H5Reader(os.path.abspath(path), ds.name, ds)
        try:
            return SliceSource(
                "hdf5", ds, model, name, reader=reader, closer=fh.close, location=path
            )
        except DataError:  # refused: the file is closed (reopening it to fix it then works)
            fh.close()
            raise
    raise DataError(
        f"{name}: cannot stream {path!r}: expected a .npy file, a .zarr store or an "
        ".h5/.hdf5 file (load other formats yourself and pass an array or an iterator "
        "of chunks)"
    )


def _is_dask(X):
    graph = getattr(X, "__dask_graph__", None)
    return callable(graph) and type(X).__module__.startswith("dask")


def open_source(X, model, name="X") -> DataSource:
    """Recognise the kind of input ``X`` and open it (see the module docstring)."""
    if isinstance(X, (str, os.PathLike)):
        return _open_path(os.fspath(X), model, name)
    if _is_dask(X):
        return DaskSource(X, model, name)
    if isinstance(X, np.memmap):
        reader = MemmapReader(X) if X.base is not None and type(X.base).__name__ == "mmap" else None
        return SliceSource(
            "memmap", X, model, name, reader=reader, location=getattr(X, "filename", None)
        )
    if isinstance(X, np.ndarray) or is_frame(X):
        return ArraySource(as_samples(X, model, name), model, name)
    if is_anndata(X):
        return ArraySource(from_anndata(X, model, name=name), model, name)
    module = type(X).__module__ or ""
    if module.startswith("zarr") and hasattr(X, "shape"):
        return SliceSource("zarr", X, model, name, reader=ZarrReader(X), location=repr(X))
    if module.startswith("h5py") and hasattr(X, "shape"):
        reader = H5Reader(X.file.filename, X.name, X)
        return SliceSource(
            "hdf5", X, model, name, reader=reader, location=f"{X.file.filename}:{X.name}"
        )
    if isinstance(X, (list, tuple)):
        if chunk_list(X):
            return IterSource(X, model, name)
        return ArraySource(as_samples(X, model, name), model, name)
    if hasattr(X, "__array__"):
        return ArraySource(as_samples(X, model, name), model, name)
    try:
        iter(X)
    except TypeError:
        raise DataError(
            f"{name}: expected an array, DataFrame, file path (.npy, .zarr, .h5), Zarr or "
            f"HDF5 array, dask array or iterable of chunks, got {type(X).__name__}"
        ) from None
    return IterSource(X, model, name)


def iter_blocks(X, model, name="X", n_blocks=DEFAULT_BLOCKS, chunk_rows=CHUNK_ROWS):
    """Yield validated (N_b, d) blocks of ``X`` in order.

    An in-memory array or DataFrame is split into its ``n_blocks`` noise blocks
    (:func:`block_edges`); any streamed input (see :func:`open_source`) is read in
    chunks of at most ``chunk_rows`` rows.
    """
    source = open_source(X, model, name)
    try:
        if isinstance(source, ArraySource):
            yield from source.blocks(n_blocks)
        else:
            yield from source.chunks(chunk_rows)
    finally:
        source.close()


def rows_differ(source: DataSource, point, chunk_rows=CHUNK_ROWS) -> bool:
    """Whether a re-readable source (file, Zarr/HDF5, dask array) has a row other than ``point``.

    Reads the source in this process until such a row is found (for a stream whose first
    rows are all one point, before it is fitted elsewhere).
    """
    return any(bool((chunk != point).any()) for chunk in source.chunks(chunk_rows))


def chunk_list(X) -> bool:
    """Whether the list or tuple ``X`` holds chunks — DataFrames, 2-D arrays, or NumPy record
    arrays (refused chunk by chunk, naming their fields) — rather than rows of numbers."""
    return bool(X) and all(
        is_frame(c) or (isinstance(c, np.ndarray) and (c.ndim == 2 or bool(c.dtype.names)))
        for c in X
    )


def is_streamed(X) -> bool:
    """True for inputs read in chunks (:func:`open_source`): a
    :class:`DataSource`, a file path, a ``numpy.memmap``, a Zarr or HDF5
    array, a dask array or an iterator/iterable of chunks; False for arrays, DataFrames and
    nested lists in memory."""
    if isinstance(X, (DataSource, str, os.PathLike, np.memmap)):
        return True
    if isinstance(X, np.ndarray) or X is None:
        return False
    module = type(X).__module__ or ""
    if module.startswith(("zarr", "h5py", "dask")):
        return True
    if isinstance(X, (list, tuple)):
        return chunk_list(X)
    if hasattr(X, "__array__") or hasattr(X, "columns"):
        return False
    return hasattr(X, "__iter__") or hasattr(X, "__next__")


class Columns:
    """Stands in for a model when a source is opened without one (columns x0, x1, …)."""

    def __init__(self, d):
        self.d = int(d)
        self.state_names = [f"x{i}" for i in range(self.d)]
        self.name = "scores"
