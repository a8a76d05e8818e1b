"""Input data: arrays, DataFrames, files and streams, and the noise blocks they are cut into.

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
    - a ``dask.array`` (or dask DataFrame), normally handed to :mod:`dynosed_sym.distributed`.
AnnData (single-cell data; ``pip install 'dynosed_sym[anndata]'``)
    An ``anndata.AnnData`` whose ``var_names`` include the state names is read from ``.X``;
    :func:`from_anndata` chooses other variables (``var_names=``) or a layer (``layer=``).

Noise blocks
------------
A and b are means over samples; their sampling noise is estimated from per-block means
(:mod:`dynosed_sym.report`).  :class:`NoiseBlocks` decides which rows form a block and holds
the partial sums of the fill per block, independently of how the rows arrive:

- when the number of rows N is known (arrays, files, dask arrays) the blocks are those of an
  in-memory array, :func:`block_edges` — so a ``.npy`` file gives the same blocks, and the
  same report, as the array loaded into memory;
- for a stream of unknown length the blocks all have the same size, starting at
  ``MIN_BLOCK_ROWS`` rows; when ``2 · n_blocks`` blocks are full, adjacent pairs are merged
  and the block size doubles.  The partition therefore depends only on N (never on the
  chunking of the stream): a stream yielding one huge chunk is still cut into
  ``n_blocks … 2·n_blocks`` blocks, a single small chunk into blocks of a few rows, and
  the memory held for the blocks stays bounded.

Bandwidth rows
--------------
The median-heuristic bandwidth of :func:`dynosed_sym.fit_global` is computed from the first
``BANDWIDTH_ROWS`` rows of every kind of input, so that streamed, distributed and in-memory
fits of the same data use the same length scale.
"""

from __future__ import annotations

import os

import numpy as np

from .errors import DataError

__all__ = ["as_samples", "from_anndata", "check_finite", "iter_blocks", "block_edges", "open_source", "DataSource",
           "NoiseBlocks", "assemble_stream", "rows_differ", "validate_rows",
           "DEFAULT_BLOCKS", "MIN_BLOCK_ROWS", "CHUNK_ROWS", "BANDWIDTH_ROWS"]

DEFAULT_BLOCKS = 32       # data blocks for sampling-noise estimates
MIN_BLOCK_ROWS = 4        # smallest noise block
CHUNK_ROWS = 65536        # rows per kernel call when streaming (bounds the memory of one call)
BANDWIDTH_ROWS = 65536    # the median bandwidth is taken from (a subsample of) the first rows


# ----------------------------------------------------------------------------------------------
# validation of in-memory samples and of streamed rows
# ----------------------------------------------------------------------------------------------

def _from_frame(X, model, name):
    cols = [str(c) for c in X.columns]
    missing = [s for s in model.state_names if s not in cols]
    if missing:
        raise DataError(f"{name}: DataFrame has no column {missing[0]!r} for state variable "
                        f"{missing[0]!r} (columns: {', '.join(cols)})")
    return X[model.state_names].to_numpy(dtype=float)


def _is_frame(X):
    return hasattr(X, "columns") and hasattr(X, "to_numpy")


def as_samples(X, model, name="X", min_samples=2) -> np.ndarray:
    """Validate in-memory samples → C-contiguous float64 (N, d).

    Accepts a NumPy array (N, d) in ``model.state`` column order or a pandas
    DataFrame whose columns include the state names (order and extra columns
    do not matter), or an AnnData whose ``var_names`` include them (:func:`from_anndata`).
    """
    if _is_anndata(X):
        return from_anndata(X, model, name=name, min_samples=min_samples)
    if _is_frame(X):
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


def _is_anndata(X):
    return type(X).__name__ == "AnnData" and (type(X).__module__ or "").startswith("anndata")


def from_anndata(adata, model, var_names=None, layer=None, name="X", min_samples=2) -> np.ndarray:
    """The model's state columns of an AnnData object → validated float64 (N, d).

    Parameters
    ----------
    adata : anndata.AnnData
        Cells × variables (genes, proteins ...).
    model : SDEModel
    var_names : None, sequence of str (length d) or dict
        Which variables are the state: None → the variables named like the state variables;
        a sequence → the variables in ``model.state`` order; a dict ``{state name: var name}``
        (state variables not in it keep their own name).
    layer : str, optional
        Read ``adata.layers[layer]`` instead of ``adata.X``.

    Returns
    -------
    (N, d) array in ``model.state`` order.  Dense or sparse storage; only the chosen
    columns are densified.
    """
    if not _is_anndata(adata):
        raise DataError(f"{name}: expected an anndata.AnnData, got {type(adata).__name__}")
    states = model.state_names
    if var_names is None:
        chosen = list(states)
    elif isinstance(var_names, dict):
        unknown = [k for k in var_names if str(k) not in states]
        if unknown:
            raise DataError(f"{name}: var_names key {str(unknown[0])!r} is not a state variable of "
                            f"{model.name!r} ({', '.join(states)})")
        chosen = [str(var_names.get(s, var_names.get(sym, s))) for s, sym in zip(states, model.state)]
    else:
        chosen = [str(v) for v in var_names]
        if len(chosen) != model.d:
            raise DataError(f"{name}: var_names has {len(chosen)} entries, model {model.name!r} has "
                            f"{model.d} state variables ({', '.join(states)})")
    available = [str(v) for v in adata.var_names]
    index = {v: i for i, v in enumerate(available)}
    for s, v in zip(states, chosen):
        if v not in index:
            shown = ", ".join(available[:10]) + (" ..." if len(available) > 10 else "")
            raise DataError(f"{name}: AnnData has no variable {v!r} for state variable {s!r} "
                            f"(var_names: {shown}); pass var_names= to choose the state columns")
    if layer is None:
        mat = adata.X
    else:
        if layer not in adata.layers:
            raise DataError(f"{name}: AnnData has no layer {layer!r} (layers: "
                            f"{', '.join(adata.layers.keys()) or 'none'})")
        mat = adata.layers[layer]
    if mat is None:
        raise DataError(f"{name}: AnnData.X is empty; pass layer=")
    cols = mat[:, [index[v] for v in chosen]]
    if hasattr(cols, "toarray"):  # scipy.sparse
        cols = cols.toarray()
    return as_samples(np.asarray(cols, dtype=float), model, name, min_samples=min_samples)


def check_finite(arr, name, offset=0):
    """Raise DataError naming the rows (counted from ``offset``) that hold NaN or inf."""
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        shown = ", ".join(str(int(r) + offset) for r in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise DataError(f"{name}: {rows.size} row(s) contain NaN or inf (rows {shown})")


def validate_rows(raw, d, name="X", offset=0) -> np.ndarray:
    """Rows ``offset …`` of a streamed input → C-contiguous float64 (n, d), checked finite.

    Used for reads from files, Zarr/HDF5 arrays and dask chunks (also on Dask workers),
    where the columns are already in ``model.state`` order.
    """
    try:
        arr = np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: rows from {offset} cannot be converted to floats ({exc})") from exc
    if arr.ndim == 1 and d == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != d:
        raise DataError(f"{name}: rows from {offset} have shape {arr.shape}, expected (n, {d})")
    check_finite(arr, name, offset=offset)
    return np.ascontiguousarray(arr)


def block_edges(n, n_blocks=DEFAULT_BLOCKS) -> np.ndarray:
    """Row edges (B + 1,) of the noise blocks of N = ``n`` samples whose number is known.

    ``B = max(1, min(n_blocks, n // MIN_BLOCK_ROWS))`` contiguous blocks of (almost) equal size.
    """
    nb = max(1, min(int(n_blocks), int(n) // MIN_BLOCK_ROWS))
    return np.linspace(0, int(n), nb + 1).round().astype(np.int64)


def _windows(n, rows, start=0):
    """(lo, hi) windows of at most ``rows`` rows covering [start, n)."""
    rows = max(1, int(rows))
    for lo in range(start, n, rows):
        yield lo, min(n, lo + rows)


# ----------------------------------------------------------------------------------------------
# sources
# ----------------------------------------------------------------------------------------------

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
        self.d = model.d
        self.name = name

    def head(self, rows) -> np.ndarray:
        """The first ``min(N, rows)`` validated rows (for the bandwidth)."""
        raise NotImplementedError

    def chunks(self, chunk_rows=CHUNK_ROWS):
        """Yield validated (n_c, d) arrays of at most ``chunk_rows`` rows, in row order."""
        raise NotImplementedError

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
        for lo, hi in _windows(self.n_rows, chunk_rows):
            yield self.array[lo:hi]

    def blocks(self, n_blocks=DEFAULT_BLOCKS):
        """The noise blocks (views), as consumed by :func:`dynosed_sym.assembly.assemble_global`."""
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
        return np.memmap(self.filename, dtype=self.dtype, mode="r", offset=self.offset,
                         shape=self.shape, order=self.order)


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


class SliceSource(DataSource):
    """A file-backed 2-D array read by row windows (npy, memmap, Zarr, HDF5)."""

    def __init__(self, kind, obj, model, name, reader=None, closer=None, location=None):
        super().__init__(model, name)
        self.kind = kind
        self.obj = obj
        self.reader = reader
        self._closer = closer
        self.location = location
        shape = tuple(obj.shape)
        if len(shape) == 1 and model.d == 1:
            shape = (shape[0], 1)
        if len(shape) != 2 or shape[1] != model.d:
            raise DataError(f"{name}: {location or kind} holds an array of shape {tuple(obj.shape)}, "
                            f"expected (N, {model.d}) with columns {', '.join(model.state_names)}")
        self.n_rows = int(shape[0])
        native = getattr(obj, "chunks", None)
        self.native_rows = int(native[0]) if isinstance(native, tuple) and native else None

    def read(self, lo, hi) -> np.ndarray:
        """Validated rows [lo, hi)."""
        return validate_rows(self.obj[lo:hi], self.d, self.name, offset=lo)

    def window_rows(self, chunk_rows):
        """Rows per read: ``chunk_rows`` rounded to whole native (Zarr/HDF5) chunks."""
        if self.native_rows:
            return self.native_rows * max(1, int(chunk_rows) // self.native_rows)
        return int(chunk_rows)

    def head(self, rows):
        return self.read(0, min(self.n_rows, int(rows)))

    def chunks(self, chunk_rows=CHUNK_ROWS):
        for lo, hi in _windows(self.n_rows, self.window_rows(chunk_rows)):
            block = self.read(lo, hi)
            for a, b in _windows(hi - lo, chunk_rows):
                yield block[a:b]

    def close(self):
        if self._closer is not None:
            self._closer()
            self._closer = None


class IterSource(DataSource):
    """An iterable of chunks (arrays or DataFrames) of unknown total length.

    Chunks read ahead by :meth:`head` are buffered (at most ``rows`` rows plus one
    chunk) and replayed by :meth:`chunks`; an iterator can be consumed only once.
    """

    kind = "iterator"

    def __init__(self, iterable, model, name):
        super().__init__(model, name)
        self.model = model
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
            if _is_frame(raw):
                block = as_samples(raw, self.model, label, min_samples=0)
            else:
                block = validate_rows(raw, self.d, label, offset=self._offset)
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
            for a, b in _windows(chunk.shape[0], chunk_rows):
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

    Normally fitted on Dask workers (:func:`dynosed_sym.distributed.assemble_dask`); with
    ``backend="local"`` its chunks are computed one window at a time in this process.
    """

    kind = "dask"

    def __init__(self, X, model, name):
        super().__init__(model, name)
        if hasattr(X, "columns") and hasattr(X, "to_dask_array"):  # dask DataFrame
            cols = [str(c) for c in X.columns]
            missing = [s for s in model.state_names if s not in cols]
            if missing:
                raise DataError(f"{name}: dask DataFrame has no column {missing[0]!r} for state "
                                f"variable {missing[0]!r} (columns: {', '.join(cols)})")
            X = X[model.state_names].to_dask_array(lengths=True)
        if X.ndim == 1 and model.d == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[1] != model.d:
            raise DataError(f"{name}: dask array of shape {X.shape}, expected (N, {model.d}) with "
                            f"columns {', '.join(model.state_names)}")
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        if len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        self.array = X
        self.n_rows = int(X.shape[0])

    def head(self, rows):
        return validate_rows(self.array[: min(self.n_rows, int(rows))].compute(), self.d, self.name)

    def chunks(self, chunk_rows=CHUNK_ROWS):
        for lo, hi in _windows(self.n_rows, chunk_rows):
            yield validate_rows(self.array[lo:hi].compute(), self.d, self.name, offset=lo)


def _optional(module, extra):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise DataError(f"reading this input needs the optional package {module!r}: "
                        f"pip install 'dynosed_sym[{extra}]'") from None


def _single_array(candidates, what, path, hint):
    arrays = [(n, a) for n, a in candidates if len(a.shape) == 2 or len(a.shape) == 1]
    if len(arrays) == 1:
        return arrays[0]
    names = ", ".join(n for n, _ in candidates) or "none"
    raise DataError(f"X: {path!r} holds {len(arrays)} {what} arrays ({names}); {hint}")


def _open_path(path, model, name):
    low = path.lower().rstrip("/\\")
    if low.endswith(".npy"):
        try:
            mm = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise DataError(f"{name}: cannot read {path!r} ({exc})") from exc
        return SliceSource("npy", mm, model, name, reader=NpyReader(os.path.abspath(path), mm),
                           location=path)
    if low.endswith(".zarr"):
        zarr = _optional("zarr", "zarr")
        try:
            node = zarr.open(path, mode="r")
        except Exception as exc:
            raise DataError(f"{name}: cannot open Zarr store {path!r} ({exc})") from exc
        if not hasattr(node, "shape"):  # a group
            key, node = _single_array(list(node.arrays()), "Zarr", path,
                                      "pass the array itself: zarr.open(path)[name]")
        return SliceSource("zarr", node, model, name, reader=ZarrReader(node), location=path)
    if low.endswith((".h5", ".hdf5", ".he5")):
        h5py = _optional("h5py", "hdf5")
        try:
            fh = h5py.File(path, "r")
        except OSError as exc:
            raise DataError(f"{name}: cannot open HDF5 file {path!r} ({exc})") from exc
        found = []
        fh.visititems(lambda n, obj: found.append((n, obj)) if isinstance(obj, h5py.Dataset) else None)
        try:
            key, ds = _single_array(found, "HDF5", path, "pass the dataset itself: h5py.File(path)[name]")
        except DataError:
            fh.close()
            raise
        return SliceSource("hdf5", ds, model, name, reader=H5Reader(os.path.abspath(path), ds.name, ds),
                           closer=fh.close, location=path)
    raise DataError(f"{name}: cannot stream {path!r}: expected a .npy file, a .zarr store or an "
                    ".h5/.hdf5 file (load other formats yourself and pass an array or an iterator "
                    "of chunks)")


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
        return SliceSource("memmap", X, model, name, reader=reader, location=getattr(X, "filename", None))
    if isinstance(X, np.ndarray) or _is_frame(X):
        return ArraySource(as_samples(X, model, name), model, name)
    if _is_anndata(X):
        return ArraySource(from_anndata(X, model, name=name), model, name)
    module = type(X).__module__ or ""
    if module.startswith("zarr") and hasattr(X, "shape"):
        return SliceSource("zarr", X, model, name, reader=ZarrReader(X), location=repr(X))
    if module.startswith("h5py") and hasattr(X, "shape"):
        reader = H5Reader(X.file.filename, X.name, X)
        return SliceSource("hdf5", X, model, name, reader=reader, location=f"{X.file.filename}:{X.name}")
    if isinstance(X, (list, tuple)):
        if X and all(_is_frame(c) or (isinstance(c, np.ndarray) and c.ndim == 2) for c in X):
            return IterSource(X, model, name)
        return ArraySource(as_samples(X, model, name), model, name)
    if hasattr(X, "__array__"):
        return ArraySource(as_samples(X, model, name), model, name)
    try:
        iter(X)
    except TypeError:
        raise DataError(f"{name}: expected an array, DataFrame, file path (.npy, .zarr, .h5), Zarr or "
                        f"HDF5 array, dask array or iterable of chunks, got {type(X).__name__}") from None
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


# ----------------------------------------------------------------------------------------------
# noise blocks and streamed assembly
# ----------------------------------------------------------------------------------------------

class NoiseBlocks:
    """Partial sums (P_s, P_c, count) of the Stein fill per noise block, in row order.

    Parameters
    ----------
    n_rows : int or None
        Total number of samples when known (blocks of :func:`block_edges`); None for a
        stream (equal blocks with pairwise merging, see the module docstring).
    n_blocks : int
    start : int
        Global index of the first row this accumulator sees (a chunk processed on a Dask
        worker starts inside the data).

    Notes
    -----
    The sums are opaque arrays from :func:`dynosed_sym.assembly.block_sums`; they are only
    added and finally contracted, so their layout is the fill kernel's business.  For a
    given partition the arithmetic is that of :func:`~dynosed_sym.assembly.assemble_global`
    (block sums added in block order, then contracted), so a block read in one piece gives
    bit-for-bit the in-memory result.
    """

    def __init__(self, n_rows=None, n_blocks=DEFAULT_BLOCKS, start=0):
        self.n_blocks = max(1, int(n_blocks))
        self.n_rows = None if n_rows is None else int(n_rows)
        self.edges = None if n_rows is None else block_edges(n_rows, self.n_blocks)
        self.size = MIN_BLOCK_ROWS
        self.row = int(start)
        self.sums = {}
        self.first_row = None   # the first row seen, until a different one is (see accumulate)
        self.spread = False     # whether two rows seen differ

    def split(self, X):
        """Yield ``(block, rows)`` pieces of X, whose rows follow those already seen.

        Add each piece's sums (:meth:`add`) before asking for the next one: in stream
        mode full blocks are merged pairwise when the next piece starts.
        """
        n, i = X.shape[0], 0
        while i < n:
            r = self.row
            if self.edges is not None:
                if r >= self.n_rows:
                    raise DataError(f"X: more rows than the {self.n_rows} announced")
                k = int(np.searchsorted(self.edges, r, side="right")) - 1
                end = int(self.edges[k + 1])
            else:
                k = r // self.size
                if k >= 2 * self.n_blocks:
                    self._merge_pairs()
                    k = r // self.size
                end = (k + 1) * self.size
            take = min(n - i, end - r)
            yield k, X[i:i + take]
            i += take
            self.row += take

    def add(self, k, P_s, P_c, count):
        """Add the sums over ``count`` rows of block ``k`` (the arrays become owned)."""
        entry = self.sums.get(k)
        if entry is None:
            self.sums[k] = [P_s, P_c, int(count)]
        else:
            entry[0] += P_s
            entry[1] += P_c
            entry[2] += int(count)

    def absorb(self, partial):
        """Add the per-block sums of a later stretch of rows (a dict from another accumulator)."""
        for k in sorted(partial):
            self.add(k, *partial[k])

    def _merge_pairs(self):
        merged = {}
        for k in sorted(self.sums):
            j = k // 2
            if j in merged:
                e, o = merged[j], self.sums[k]
                e[0] += o[0]
                e[1] += o[1]
                e[2] += o[2]
            else:
                merged[j] = self.sums[k]
        self.sums = merged
        self.size *= 2

    @property
    def counts(self) -> np.ndarray:
        """Samples per block so far, in block order."""
        return np.array([self.sums[k][2] for k in sorted(self.sums)], dtype=np.int64)

    def finish(self, cm, feats):
        """Contract the sums → ``A, b, A_blocks, b_blocks, counts`` (as ``assemble_global``)."""
        from .assembly import contract_blocks

        if not self.sums:
            raise DataError("X: no samples")
        total = int(self.counts.sum())
        if self.n_rows is not None and total != self.n_rows:
            raise DataError(f"X: {total} rows were read but {self.n_rows} were announced")
        keys = sorted(self.sums)
        if self.edges is None and len(keys) > 1 and 2 * self.sums[keys[-1]][2] < self.size:
            last = self.sums.pop(keys.pop())  # a short tail joins the previous block
            self.add(keys[-1], *last)
        return contract_blocks(cm, feats, [self.sums[k] for k in keys])


def accumulate(cm, feats, blocks: NoiseBlocks, chunks, bar=None):
    """Run the fill over ``chunks`` (validated arrays in row order) into ``blocks``.

    Each chunk is checked first (errors name global rows): the feature arguments, and a
    state-dependent D(x) at every row.  ``blocks.spread`` records whether two rows differ.
    """
    from .assembly import block_sums
    from .validate import diffusion_psd, feature_arguments

    for chunk in chunks:
        feature_arguments(chunk, feats, offset=blocks.row)  # names global rows
        diffusion_psd(cm.model, chunk, "X", offset=blocks.row)
        if not blocks.spread and chunk.shape[0]:
            if blocks.first_row is None:
                blocks.first_row = chunk[0].copy()
            blocks.spread = bool((chunk != blocks.first_row).any())
        for k, piece in blocks.split(chunk):
            P_s, P_c = block_sums(cm, piece, feats)
            blocks.add(k, P_s, P_c, piece.shape[0])
        if bar is not None:
            bar.update(chunk.shape[0])
    return blocks


def assemble_stream(cm, source: DataSource, feats, n_blocks=DEFAULT_BLOCKS, chunk_rows=CHUNK_ROWS,
                    bar=None):
    """Assemble A, b from a streamed source in this process with memory independent of N.

    Returns
    -------
    A : (m, n), b : (m,), A_blocks : (B, m, n), b_blocks : (B, m), counts : (B,)
        As :func:`dynosed_sym.assembly.assemble_global`.
    """
    from .validate import same_point

    blocks = NoiseBlocks(source.n_rows, n_blocks)
    accumulate(cm, feats, blocks, source.chunks(chunk_rows), bar)
    if not blocks.spread and blocks.row >= 2:
        same_point(blocks.row, blocks.first_row, source.name)
    return blocks.finish(cm, feats)


def rows_differ(source: DataSource, point, chunk_rows=CHUNK_ROWS) -> bool:
    """Whether a re-readable source (file, Zarr/HDF5, dask array) has a row other than ``point``.

    Reads the source in this process until such a row is found (for a stream whose first
    rows are all one point, before it is fitted elsewhere).
    """
    return any(bool((chunk != point).any()) for chunk in source.chunks(chunk_rows))

