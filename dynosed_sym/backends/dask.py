"""Dask backend: the global fill over data chunks on Dask workers, simulator chains in groups.

Optional: ``pip install 'dynosed_sym[dask]'``.  Dask is imported only when this backend is
used; without it a :class:`DaskUnavailableError` (a :class:`~dynosed_sym.DynosedError`) says
what to install.

Global fill
-----------
``ds.fit_global(model, X)`` with a ``dask.array`` X (or ``backend="dask"`` with any input the
workers can read) runs here:

1. the client compiles the model (:func:`~dynosed_sym.compile_model`) and ships a
   :class:`KernelPayload` (the model, the generated file's path and text) once to each
   worker; a worker imports the generated module from that same path when it holds the same
   text (a shared filesystem, or one machine), otherwise it writes the text into its own
   cache folder first, so a cluster without a shared filesystem works too.  Numba loads the
   compiled machine code from its on-disk cache where it exists;
2. every task reads one chunk of rows (a dask chunk, or a window of a ``.npy``/Zarr/HDF5
   file opened on the worker by path), validates it and returns the partial sums
   ``(P_s, P_c, count)`` per noise block (:class:`dynosed_sym.data.blocks.NoiseBlocks`);
3. the client adds the partial sums in row order, whatever order the tasks finish in, and
   contracts and solves as in-process.  The result is therefore deterministic, independent
   of the number of workers and of scheduling, and equals the in-process result to rounding
   (bit for bit when the chunks coincide with the in-process reads).

The bandwidth uses the same seeded subsample of the first rows as in-process.

Simulation
----------
:func:`run_chains_dask` splits the chains into groups; a group runs the generated integrator on a
worker with the per-chain keys and start states the in-process simulation gives those chains
(:func:`dynosed_sym.simulation.plan_simulation` prepares them), so ``ds.simulate(...,
backend="dask")`` returns the samples of ``ds.simulate`` with the same seed, bit for bit.

Client
------
Pass ``client=`` or create a ``distributed.Client`` before the call (it becomes the
default).  Without any client the tasks run on Dask's local scheduler in this process.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid

import numpy as np

from ..assembly.stein import accumulate, contract_blocks
from ..codegen.files import user_cache_dir, write_if_changed
from ..codegen.loading import compile_model
from ..data.arrays import validate_rows
from ..data.blocks import NoiseBlocks
from ..data.checks import diffusion_psd
from ..data.sources import ArraySource, DaskSource, IterSource, SliceSource, windows
from ..errors import DaskUnavailableError, DataError
from ..options import CHUNK_ROWS, DEFAULT_BLOCKS
from ..progress import progress_bar

__all__ = ["require_dask", "get_client", "KernelPayload", "assemble_dask", "run_chains_dask"]

_WORKER_MODELS: dict = {}


def require_dask():
    """Import and return ``dask`` (with ``dask.array``), or raise :class:`DaskUnavailableError`."""
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError as exc:
        raise DaskUnavailableError(
            "the Dask backend needs the optional packages dask[array] and distributed: "
            "pip install 'dynosed_sym[dask]'"
        ) from exc
    return dask


def get_client(client=None):
    """``client`` itself, else the default ``distributed.Client`` if one exists, else None."""
    if client is not None:
        return client
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


# One kernel call per process at a time: a worker with several threads (or Dask's local
# threaded scheduler) must not enter Numba's parallel region concurrently — not every Numba
# threading layer allows that, and the kernels use all cores anyway.
_KERNEL_LOCK = threading.Lock()


def _worker_cache_dir():
    return os.environ.get("DYNOSED_GENERATED_DIR") or user_cache_dir()


class KernelPayload:
    """What a worker needs to run a model's generated kernels.

    Attributes
    ----------
    model : SDEModel
    path : str
        The generated module on the client.
    text : str
        Its content (written into the worker's cache folder when ``path`` is not readable
        there or holds something else).
    digest : str
        SHA-256 of ``text`` and of the input values the kernels run with (one module serves
        every input value); keys the per-process cache of loaded modules.
    """

    def __init__(self, cm):
        self.model = cm.model
        self.path = cm.path
        with open(cm.path, encoding="utf-8") as fh:
            self.text = fh.read()
        inputs = b"" if cm.inputs is None else cm.inputs.tobytes()
        self.digest = hashlib.sha256(self.text.encode("utf-8") + b"\0" + inputs).hexdigest()

    def load(self):
        """The :class:`~dynosed_sym.CompiledModel` in this process (loaded once per process)."""
        cm = _WORKER_MODELS.get(self.digest)
        if cm is not None:
            return cm

        directory = os.path.dirname(self.path)
        try:
            with open(self.path, encoding="utf-8") as fh:
                same = fh.read() == self.text
        except OSError:
            same = False
        if not same:
            directory = _worker_cache_dir()
            write_if_changed(os.path.join(directory, os.path.basename(self.path)), self.text)
        cm = compile_model(self.model, directory)
        _WORKER_MODELS[self.digest] = cm
        return cm

    def __repr__(self):
        return f"KernelPayload({self.model.name!r}, {self.path!r})"


def _run_ordered(tasks, weights, client, bar, consume):
    """Compute ``tasks`` (Delayed) and call ``consume(i, result)`` for i = 0, 1, … in order.

    With a distributed client all tasks are submitted at once and results are fetched as the
    ordered prefix completes (so the client holds few of them); without one they are computed
    in small batches by Dask's local scheduler.
    """
    if client is not None:
        from distributed import as_completed

        futures = client.compute(tasks)
        pos = {f.key: i for i, f in enumerate(futures)}
        done, nxt = set(), 0
        try:
            for fut in as_completed(futures):
                if fut.status == "error":
                    fut.result()  # re-raises the worker's exception (e.g. a DataError)
                i = pos[fut.key]
                done.add(i)
                bar.update(weights[i])
                while nxt in done:
                    consume(nxt, futures[nxt].result())
                    futures[nxt] = None
                    done.discard(nxt)
                    nxt += 1
        finally:
            pending = [f for f in futures if f is not None]
            if pending:
                client.cancel(pending)
        return
    import dask

    step = 2 * (os.cpu_count() or 1)
    for s in range(0, len(tasks), step):
        results = dask.compute(*tasks[s : s + step])
        for j, res in enumerate(results):
            consume(s + j, res)
            bar.update(weights[s + j])


def _fill_task(payload, feats, data, reader, lo, hi, n_rows, n_blocks, chunk_rows, d, name):
    """On a worker: rows [lo, hi) → per-noise-block partial sums ``{k: [P_s, P_c, count]}``."""
    raw = reader(lo, hi) if reader is not None else data
    X = validate_rows(raw, d, name, offset=lo)
    if X.shape[0] != hi - lo:
        raise DataError(f"{name}: chunk at row {lo} has {X.shape[0]} rows, expected {hi - lo}")
    cm = payload.load()
    diffusion_psd(cm.model, X, name, offset=lo)
    blocks = NoiseBlocks(n_rows, n_blocks, start=lo)
    with _KERNEL_LOCK:
        accumulate(
            cm,
            feats,
            blocks,
            (X[a:b] for a, b in windows(X.shape[0], chunk_rows)),
            start=lo,
            name=name,
        )
    return blocks.sums


def _parts(source, chunk_rows, client, token):
    """``[(data, reader, lo, hi)]`` for the tasks: dask chunks, scattered arrays or file windows."""
    dask = require_dask()
    if isinstance(source, DaskSource):
        arr = source.array
        chunks = arr.to_delayed()[:, 0]
        edges = np.concatenate([[0], np.cumsum(arr.chunks[0])]).astype(np.int64)
        return [(c, None, int(lo), int(hi)) for c, lo, hi in zip(chunks, edges[:-1], edges[1:])]
    if isinstance(source, ArraySource):
        spans = list(windows(source.n_rows, chunk_rows))
        pieces = [source.array[lo:hi] for lo, hi in spans]
        if client is not None:
            pieces = client.scatter(pieces)
        return [(p, None, lo, hi) for p, (lo, hi) in zip(pieces, spans)]
    if isinstance(source, SliceSource):
        if source.reader is None:
            raise DataError(
                f"{source.name}: this {source.kind} is a view that Dask workers cannot "
                "reopen; pass the file path or the whole array"
            )
        reader = dask.delayed(source.reader, name=f"dynosed-reader-{token}")
        return [
            (None, reader, lo, hi)
            for lo, hi in windows(source.n_rows, source.window_rows(chunk_rows))
        ]
    if isinstance(source, IterSource):
        raise DataError(
            f"{source.name}: an iterator of chunks lives only in this process and cannot be "
            "distributed; pass a dask array, a file path (.npy, .zarr, .h5) or use "
            "backend='local'"
        )
    raise DataError(f"{source.name}: the Dask backend cannot read a {source.kind} input")


def assemble_dask(
    cm, source, feats, n_blocks=DEFAULT_BLOCKS, chunk_rows=CHUNK_ROWS, client=None, bar=None
):
    """Assemble A, b on Dask workers (see the module docstring).

    Parameters
    ----------
    cm : CompiledModel
    source : DataSource
        From :func:`~dynosed_sym.data.sources.open_source`: a dask array, an array (scattered
        to the workers), or a ``.npy``/Zarr/HDF5 file the workers can open by path.
    feats : RandomFeatures
    n_blocks, chunk_rows : int
        Noise blocks; rows per kernel call (and per file window).
    client : distributed.Client, optional
        Default: the current default client; without one, Dask's local scheduler.
    bar : progress bar, optional

    Returns
    -------
    BlockSystem
        As :func:`dynosed_sym.assembly.stein.assemble_source`.
    """
    dask = require_dask()
    client = get_client(client)
    bar = bar if bar is not None else progress_bar(False)
    token = uuid.uuid4().hex[:16]
    payload = dask.delayed(KernelPayload(cm), name=f"dynosed-kernels-{token}")
    feats_d = dask.delayed(feats, name=f"dynosed-features-{token}")
    parts = _parts(source, chunk_rows, client, token)
    n = source.n_rows
    tasks = [
        dask.delayed(_fill_task)(
            payload,
            feats_d,
            data,
            reader,
            lo,
            hi,
            n,
            n_blocks,
            int(chunk_rows),
            source.d,
            source.name,
            dask_key_name=f"dynosed-fill-{token}-{i}",
        )
        for i, (data, reader, lo, hi) in enumerate(parts)
    ]
    blocks = NoiseBlocks(n, n_blocks)
    _run_ordered(
        tasks,
        [hi - lo for _, _, lo, hi in parts],
        client,
        bar,
        lambda i, partial: blocks.absorb(partial),
    )
    return contract_blocks(cm, feats, blocks.finish())


def _simulate_task(payload, x0, theta, G, dt, burn_in, thin, n_keep, keys):
    cm = payload.load()
    with _KERNEL_LOCK:
        return cm.run_chains(x0, theta, G, dt, burn_in, thin, n_keep, keys)


def run_chains_dask(
    cm, x0, theta, G, dt, burn_in, thin, n_keep, keys, *, n_groups=None, client=None, bar=None
):
    """Run the generated integrator of ``cm`` on chains spread over Dask workers.

    The chains (rows of ``x0`` (C, d) and ``keys`` (C,)) are split into ``n_groups`` tasks
    (default: twice the number of workers, at most C); results are those of
    :meth:`~dynosed_sym.codegen.loading.CompiledModel.run_chains` on all chains, bit for bit.

    Returns
    -------
    out : (n_keep, C, d), status : (C,) int64
    """
    dask = require_dask()
    n_chains = x0.shape[0]
    client = get_client(client)
    bar = bar if bar is not None else progress_bar(False)
    if n_groups is None:
        workers = len(client.scheduler_info().get("workers", {})) if client is not None else 1
        n_groups = 2 * max(1, workers)
    n_groups = max(1, min(int(n_groups), n_chains))
    edges = np.linspace(0, n_chains, n_groups + 1).round().astype(np.int64)
    token = uuid.uuid4().hex[:16]
    payload = dask.delayed(KernelPayload(cm), name=f"dynosed-kernels-{token}")
    tasks = [
        dask.delayed(_simulate_task)(
            payload,
            x0[lo:hi],
            theta,
            G,
            dt,
            burn_in,
            thin,
            n_keep,
            keys[lo:hi],
            dask_key_name=f"dynosed-sim-{token}-{g}",
        )
        for g, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))
    ]
    out = np.empty((int(n_keep), n_chains, x0.shape[1]))
    status = np.zeros(n_chains, dtype=np.int64)

    def consume(g, result):
        lo, hi = edges[g], edges[g + 1]
        out[:, lo:hi], status[lo:hi] = result

    _run_ordered(tasks, np.diff(edges).tolist(), client, bar, consume)
    return out, status
