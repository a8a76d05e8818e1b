"""Data in: sources that yield checked chunks, and the noise blocks they are cut into.

* :mod:`.arrays` — in-memory samples (arrays, DataFrames, AnnData) → validated float64 (N, d);
* :mod:`.sources` — every kind of input opened as a :class:`~.sources.DataSource` that yields
  validated chunks in row order (files, Zarr/HDF5, iterators, dask arrays);
* :mod:`.blocks` — the partition of the rows into noise blocks (:class:`~.blocks.NoiseBlocks`),
  independent of how the rows arrive;
* :mod:`.designs` — designs beyond one stationary snapshot: :class:`~.designs.TimeCourse`,
  environments (one per value of a column), inputs per environment;
* :mod:`.checks` — checks of data that need the model (a state-dependent D(x) at every row,
  samples that are all one point, per-sample values such as ∂ₜlog p).
"""

from .arrays import as_samples, from_anndata
from .blocks import NoiseBlocks, block_edges
from .designs import TimeCourse, split_by
from .sources import DataSource, is_streamed, open_source

__all__ = [
    "as_samples",
    "from_anndata",
    "open_source",
    "is_streamed",
    "DataSource",
    "NoiseBlocks",
    "block_edges",
    "TimeCourse",
    "split_by",
]
