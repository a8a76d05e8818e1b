"""The estimator interface, the result type, validation of given scores, and one-pass streaming
with per-block sums (shared by the built-in estimators)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ... import arguments
from ...data.blocks import NoiseBlocks, block_edges
from ...data.sources import Columns, DataSource, is_streamed, open_source
from ...errors import DataError
from ...options import CHUNK_ROWS, MIN_BLOCK_ROWS

__all__ = [
    "ScoreEstimate",
    "ScoreEstimator",
    "check_scores",
    "check_temperature",
    "block_edges_or_one",
    "as_xp",
    "open_stream",
    "as_probe_array",
    "data_and_probes",
    "streamed_blocks",
    "StreamBlocks",
]


@dataclass
class ScoreEstimate:
    """Scores and Jacobians at M probes, with optional delete-one-block (jackknife) replicates.

    Attributes
    ----------
    score : (M, d) array
    jacobian : (M, d, d) array, ``jacobian[i, j, l] = ∂s_j/∂x_l``
    n_effective : (M,) array or None
        Data behind each probe: the Kish effective number ``(Σw)²/Σw²`` for the kernel
        estimator, the number of points in the ball for score matching.
    score_blocks : (B, M, d) array or None
        Estimates with block b of the rows of X left out (jackknife replicates).
    jacobian_blocks : (B, M, d, d) array or None
    method : str
    n_samples : int or None
        Rows read from a streamed input (None for data in memory).
    """

    score: np.ndarray
    jacobian: np.ndarray
    n_effective: np.ndarray | None = None
    score_blocks: np.ndarray | None = None
    jacobian_blocks: np.ndarray | None = None
    method: str = ""
    n_samples: int | None = None

    @property
    def n_blocks(self) -> int:
        return 0 if self.score_blocks is None else int(self.score_blocks.shape[0])


def check_scores(S, J, M, d, what="score"):
    """Validate user-supplied scores (M, d) and Jacobians (M, d, d) → float arrays."""
    S = arguments.float_array(S, f"{what}: scores")
    J = arguments.float_array(J, f"{what}: Jacobians")
    if d == 1 and S.shape == (M,):
        S = S[:, None]
    if d == 1 and J.shape in ((M,), (M, 1)):
        J = J.reshape(M, 1, 1)
    if S.shape != (M, d):
        raise DataError(f"{what}: scores have shape {S.shape}, expected (M, d) = ({M}, {d})")
    if J.shape != (M, d, d):
        raise DataError(
            f"{what}: Jacobians have shape {J.shape}, expected (M, d, d) = ({M}, {d}, {d})"
        )
    for arr, nm in ((S, "scores"), (J, "Jacobians")):
        bad = ~np.isfinite(arr.reshape(M, -1)).all(axis=1)
        if bad.any():
            raise DataError(
                f"{what}: {nm} at probe(s) {np.flatnonzero(bad)[:5].tolist()} are not finite"
            )
    return np.ascontiguousarray(S), np.ascontiguousarray(J)


def check_temperature(T):
    try:
        T = float(T)
    except (TypeError, ValueError):
        raise DataError(f"temperature must be a positive number, got {T!r}") from None
    if not (np.isfinite(T) and T > 0):
        raise DataError(f"temperature must be positive and finite, got {T!r}")
    return T


def block_edges_or_one(N, n_blocks):
    if not n_blocks or n_blocks < 2:
        return np.array([0, N], dtype=np.int64)
    return block_edges(N, n_blocks)


def as_xp(X, probes):
    X = np.ascontiguousarray(X, dtype=float)
    P = np.ascontiguousarray(probes, dtype=float)
    if X.ndim != 2 or P.ndim != 2 or X.shape[1] != P.shape[1]:
        raise DataError(
            f"data {X.shape} and probes {P.shape} must be 2-D with the same number of columns"
        )
    if X.shape[0] == 0:
        raise DataError("no data to estimate scores from")
    return X, P


def open_stream(X, P):
    """(source, close) for a streamed input ``X`` whose columns match the probes ``P``."""
    if isinstance(X, DataSource):
        if X.d != P.shape[1]:
            raise DataError(
                f"data ({X.d} columns) and probes {P.shape} must have the same number of columns"
            )
        return X, False
    return open_source(X, Columns(P.shape[1]), "X"), True


def as_probe_array(probes):
    P = np.ascontiguousarray(probes, dtype=float)
    if P.ndim != 2:
        raise DataError(f"probes {P.shape} must be a 2-D array (M, d)")
    return P


def data_and_probes(X, probes):
    """``(X, P, streamed)``: the probes as a float (M, d) array, and X as a float array with the
    same columns, or as given when it is streamed (``is_streamed(X)``: read by
    :func:`streamed_blocks`)."""
    if is_streamed(X):
        return X, as_probe_array(probes), True
    X, P = as_xp(X, probes)
    return X, P, False


@contextmanager
def streamed_blocks(X, P, n_blocks):
    """``(source, blocks)`` for one pass over a streamed X whose columns match the probes P: the
    open source (closed on exit when it was opened here) and its :class:`StreamBlocks`."""
    source, close = open_stream(X, P)
    try:
        yield source, StreamBlocks(source.n_rows, n_blocks)
    finally:
        if close:
            source.close()


class StreamBlocks:
    """Per-block partial sums of a streamed input, in row order (the noise blocks of
    :class:`dynosed_sym.data.blocks.NoiseBlocks`).

    Known N (files, Zarr, HDF5, dask): the blocks of an in-memory array (``block_edges``), so
    the delete-one-block replicates are those of the array loaded into memory.  Unknown N (an
    iterator): equal blocks, merged pairwise when ``2·n_blocks`` are full, a short tail joined
    to the previous block — a partition that depends on N only, not on the chunking.
    ``n_blocks < 2``: one block, no replicates.

    The sums are arrays with the block as first axis (``register``); the estimator adds a
    chunk's rows through ``add(part, starts, blocks)`` (rows ``starts[i]:starts[i+1]`` of
    ``part`` belong to block ``blocks[i]``).
    """

    def __init__(self, n_rows, n_blocks):
        self.n_rows = n_rows
        self.splitter = None
        self.slots = 1
        self.size = MIN_BLOCK_ROWS
        if n_blocks and n_blocks >= 2:
            self.splitter = NoiseBlocks(n_rows, n_blocks)
            self.slots = (
                self.splitter.edges.shape[0] - 1
                if n_rows is not None
                else 2 * self.splitter.n_blocks
            )
        self.counts = np.zeros(self.slots, dtype=np.int64)
        self.arrays = []

    def register(self, *arrays):
        self.arrays.extend(arrays)

    def _merge_pairs(self):
        h = self.slots // 2
        for a in self.arrays + [self.counts]:
            a[:h] = a[0 : 2 * h : 2] + a[1 : 2 * h : 2]
            a[h:] = 0

    def feed(self, chunk, add):
        n = chunk.shape[0]
        if self.splitter is None:
            add(chunk, np.array([0, n], dtype=np.int64), np.array([0], dtype=np.int64))
            self.counts[0] += n
            return
        first, pos, ks, starts = 0, 0, [], [0]

        def flush():
            if ks:
                st = np.asarray(starts, dtype=np.int64) - first
                add(chunk[first:pos], st, np.asarray(ks, dtype=np.int64))

        for k, piece in self.splitter.split(chunk):
            if self.splitter.size != self.size:  # full blocks merged before this piece
                flush()
                self._merge_pairs()
                self.size = self.splitter.size
                first, ks, starts = pos, [], [pos]
            ks.append(int(k))
            pos += piece.shape[0]
            starts.append(pos)
            self.counts[k] += piece.shape[0]
        flush()

    def finish(self):
        """Trim to the blocks used (joining a short tail) → (arrays, counts, N)."""
        used = np.flatnonzero(self.counts)
        total = int(self.counts.sum())
        if total == 0:
            raise DataError("X: no data to estimate scores from")
        if self.n_rows is not None and total != self.n_rows:
            raise DataError(f"X: {total} rows were read but {self.n_rows} were announced")
        K = int(used[-1]) + 1
        if (
            self.splitter is not None
            and self.n_rows is None
            and K > 1
            and 2 * self.counts[K - 1] < self.size
        ):
            for a in self.arrays + [self.counts]:
                a[K - 2] += a[K - 1]
            K -= 1
        return [a[:K] for a in self.arrays], self.counts[:K].copy(), total

    def run(self, source, add, chunk_rows=None, bar=None):
        """Feed every chunk of ``source``; small chunks (e.g. of an iterator) are gathered into
        batches of about ``chunk_rows`` rows, so the per-call cost of the kernels is paid per
        batch, not per chunk."""
        rows = CHUNK_ROWS if chunk_rows is None else int(chunk_rows)
        held, n_held = [], 0

        def flush():
            batch = held[0] if len(held) == 1 else np.concatenate(held)
            held.clear()
            self.feed(batch, add)
            if bar is not None:
                bar.update(batch.shape[0])

        for chunk in source.chunks(rows):
            held.append(chunk)
            n_held += chunk.shape[0]
            if n_held >= rows:
                flush()
                n_held = 0
        if held:
            flush()
        return self.finish()


class ScoreEstimator:
    """Base class: ``est(X, probes) -> (S, J)``; ``est.estimate(X, probes, n_blocks)``.

    ``streams = True`` marks estimators whose ``estimate`` also takes a streamed ``X`` (see
    :func:`is_streamed`) with the keywords ``chunk_rows`` and ``bar`` (a progress bar with
    ``update(rows)``), reading it once with memory independent of N.
    """

    method = "custom"
    streams = False

    def __call__(self, X, probes):
        est = self.estimate(X, probes, n_blocks=0)
        return est.score, est.jacobian

    def estimate(self, X, probes, n_blocks=0) -> ScoreEstimate:  # pragma: no cover - interface
        raise NotImplementedError
