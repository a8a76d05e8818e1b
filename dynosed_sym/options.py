"""Execution options shared by the entry points, and the constants behind their defaults.

Every entry point that reads data or runs kernels (:func:`~dynosed_sym.simulate`,
:func:`~dynosed_sym.fit_global`, :func:`~dynosed_sym.fit_local`,
:func:`~dynosed_sym.check_identifiability`, :func:`~dynosed_sym.density_from_dynamics`) takes
the same keyword options for *how* it runs — noise blocks, rows per kernel call, progress bar,
folder of generated kernels, Dask backend — documented once here (:data:`EXECUTION_DOC`) and
validated once (:meth:`Execution.resolve`).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import arguments

__all__ = [
    "Execution",
    "EXECUTION_DOC",
    "execution_doc",
    "DEFAULT_BLOCKS",
    "MIN_BLOCK_ROWS",
    "CHUNK_ROWS",
    "BANDWIDTH_ROWS",
    "BACKENDS",
]

DEFAULT_BLOCKS = 32  # data blocks for sampling-noise estimates
MIN_BLOCK_ROWS = 4  # smallest noise block
CHUNK_ROWS = 65536  # rows per kernel call when streaming (bounds the memory of one call)
BANDWIDTH_ROWS = 65536  # the median bandwidth is taken from (a subsample of) the first rows
BACKENDS = (None, "local", "dask")

#: The numpydoc "Parameters" entries of the execution options, shared by the entry points.
EXECUTION_DOC = {
    "n_blocks": """\
    n_blocks : int
        Contiguous data blocks behind the sampling-noise estimates (rank, standard errors,
        p-value); default 32.  For a stream of unknown length: between ``n_blocks`` and
        ``2·n_blocks`` blocks of equal size.
""",
    "chunk_rows": """\
    chunk_rows : int, optional
        Rows per kernel call and per file read for streamed input (default 65,536); bounds the
        memory of one call.
""",
    "progress": """\
    progress : bool or None
        Progress bar (tqdm) on standard error; None shows one for streamed or distributed work
        when standard error is a terminal.
""",
    "out_dir": """\
    out_dir : str, optional
        Folder of the generated kernel modules (default:
        :func:`dynosed_sym.codegen.default_output_dir`).
""",
    "backend": """\
    backend : {None, "local", "dask"}
        Where the work runs.  None: on Dask workers for a dask array (or when ``client`` is
        given), in this process otherwise.
""",
    "client": """\
    client : distributed.Client, optional
        Cluster for the Dask backend (default: the current default client, else Dask's local
        scheduler).
""",
}

_MARK = "    <execution options>\n"


def execution_doc(*names):
    """Decorator: put the :data:`EXECUTION_DOC` entries of ``names`` (default: all) where a
    docstring says ``<execution options>``."""

    def decorate(func):
        keys = names or tuple(EXECUTION_DOC)
        if func.__doc__ and _MARK in func.__doc__:
            func.__doc__ = func.__doc__.replace(_MARK, "".join(EXECUTION_DOC[k] for k in keys))
        return func

    return decorate


@dataclass(frozen=True)
class Execution:
    """How a call runs (validated): see :data:`EXECUTION_DOC` for each field."""

    n_blocks: int = DEFAULT_BLOCKS
    chunk_rows: int = CHUNK_ROWS
    progress: bool | None = None
    out_dir: str | None = None
    backend: str | None = None
    client: object = None

    @classmethod
    def resolve(
        cls,
        *,
        n_blocks=DEFAULT_BLOCKS,
        chunk_rows=None,
        progress=None,
        out_dir=None,
        backend=None,
        client=None,
        min_blocks=1,
    ) -> Execution:
        """Validate the options (a DataError names the argument) → :class:`Execution`."""
        n_blocks = arguments.integer(n_blocks, "n_blocks", minimum=min_blocks)
        chunk_rows = arguments.integer(
            CHUNK_ROWS if chunk_rows is None else chunk_rows, "chunk_rows", minimum=1
        )
        arguments.choice(backend, "backend", BACKENDS)
        if progress is not None and not isinstance(progress, bool):
            raise arguments.DataError(f"progress must be True, False or None, got {progress!r}")
        return cls(n_blocks, chunk_rows, progress, out_dir, backend, client)

    @property
    def dask_requested(self) -> bool:
        """``backend="dask"``, or a client given without ``backend="local"``."""
        return self.backend == "dask" or (self.client is not None and self.backend is None)
