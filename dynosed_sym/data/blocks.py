"""Noise blocks: which rows form a block, and the per-block partial sums of a fill.

Noise blocks
------------
A and b are means over samples; their sampling noise is estimated from per-block means
(:mod:`dynosed_sym.solve.report`).  :class:`NoiseBlocks` decides which rows form a block and holds
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
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..options import DEFAULT_BLOCKS, MIN_BLOCK_ROWS

__all__ = ["block_edges", "NoiseBlocks"]


def block_edges(n, n_blocks=DEFAULT_BLOCKS) -> np.ndarray:
    """Row edges (B + 1,) of the noise blocks of N = ``n`` samples whose number is known.

    ``B = max(1, min(n_blocks, n // MIN_BLOCK_ROWS))`` contiguous blocks of (almost) equal size.
    """
    nb = max(1, min(int(n_blocks), int(n) // MIN_BLOCK_ROWS))
    return np.linspace(0, int(n), nb + 1).round().astype(np.int64)


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
    The sums are opaque arrays (those of :func:`dynosed_sym.assembly.stein.block_sums`, or any
    arrays with the block's sums); they are only
    added and finally contracted, so their layout is the fill kernel's business.  For a
    given partition the arithmetic is that of :func:`~dynosed_sym.assembly.stein.assemble_global`
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
            yield k, X[i : i + take]
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

    def finish(self):
        """The sums ``[P_s, P_c, count]`` of every block, in block order (a short tail of a stream
        joined to the previous block), checked against the announced number of rows."""
        if not self.sums:
            raise DataError("X: no samples")
        total = int(self.counts.sum())
        if self.n_rows is not None and total != self.n_rows:
            raise DataError(f"X: {total} rows were read but {self.n_rows} were announced")
        keys = sorted(self.sums)
        if self.edges is None and len(keys) > 1 and 2 * self.sums[keys[-1]][2] < self.size:
            last = self.sums.pop(keys.pop())  # a short tail joins the previous block
            self.add(keys[-1], *last)
        return [self.sums[k] for k in keys]
