"""The global route's linear system A θ ≈ b, assembled per noise block.

For every (sample, feature) pair the fill (:func:`dynosed_sym.kernels.stein_fill.accumulate_stein`,
one model-independent kernel) evaluates ``sin``/``cos`` of ``ω_rᵀx_i + c_r`` and contracts them
with the per-sample Stein-feature factors of the model's generated ``stein_features`` kernel, into
partial sums per noise block.  The small contraction with ω (tables ``A_TERMS`` … of the generated
module) then gives A and b, with the scaling of docs/method.md §2.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..codegen.loading import check_finite_output
from ..data.blocks import NoiseBlocks, block_edges
from ..errors import DataError
from ..kernels.stein_fill import FEATURE_BLOCK, accumulate_stein
from ..options import CHUNK_ROWS, DEFAULT_BLOCKS
from . import memory
from .contraction import BlockMeans, contraction_of
from .facesplit import FaceSplit, block_factor, column_factor, face_split_columns, with_face_split
from .features import RandomFeatures, feature_arguments

__all__ = [
    "BlockSystem",
    "assemble_source",
    "assemble_array",
    "assemble_global",
    "accumulate",
    "block_sums",
    "contract",
    "contract_blocks",
]


class BlockSystem(NamedTuple):
    """A linear system of means over samples and its per-block means (what the solve reads).

    Attributes
    ----------
    A : (m, n), b : (m,)
        Means over all samples.
    A_blocks : (B, m, n) array, or BlockMeans above DENSE_BLOCKS_BYTES; b_blocks : (B, m)
        Means over each noise block (:class:`~dynosed_sym.assembly.contraction.BlockMeans`
        stores the sums they come from and contracts a block when it is read).
    counts : (B,)
        Samples per block.
    """

    A: np.ndarray
    b: np.ndarray
    A_blocks: np.ndarray
    b_blocks: np.ndarray
    counts: np.ndarray


def contract(cm, feats: RandomFeatures, P_s, P_c, count, out=None):
    """Turn block-major sums over ``count`` samples into (A (m, n), b (m,)) with the scaling of
    docs/method.md §2 (:class:`~dynosed_sym.assembly.contraction.Contraction`).

    A ``P_c`` with one factor more than the model's cos factors carries ``Σ_i cos_ri ∂ₜlog p(x_i)``
    (non-stationary snapshot, see :func:`block_sums`): the Stein feature's ``−z_r ∂ₜlog p`` term
    adds ``√(2/m)/N Σ_i cos_ri ∂ₜlog p(x_i)`` to b.  ``out`` (m, n), optional: A is written
    there (a block of the stacked per-block means, without a copy).
    """
    plan = contraction_of(cm)
    P_s, P_c = feats.unblock(P_s), feats.unblock(P_c)
    scale = math.sqrt(2.0 / feats.m) / count
    return plan.A(feats.omega, P_s, scale, out), plan.b(feats.omega, P_s, P_c, scale)


def block_sums(cm, X, feats: RandomFeatures, edges=None, dlogp_dt=None):
    """Sums P_s, P_c over the rows of samples X (N_b, d).

    With ``edges`` (G + 1 row boundaries) the sums of every block come from one kernel
    launch, stacked as (G, n_blocks, K, FEATURE_BLOCK); without, X is one block and the
    arrays are (n_blocks, K, FEATURE_BLOCK).  ``dlogp_dt`` (N_b,), optional: ∂ₜlog p at each
    sample, appended as one more per-sample cos factor (see :func:`contract`).
    """
    phi_s, phi_c = cm.stein_features(X)
    check_finite_output(phi_s, "a Stein feature (drift term)", X)
    check_finite_output(phi_c, "a Stein feature (diffusion term)", X)
    if dlogp_dt is not None:
        phi_c = np.ascontiguousarray(np.column_stack([phi_c, np.asarray(dlogp_dt, dtype=float)]))
    one = edges is None
    edges = np.array([0, X.shape[0]], dtype=np.int64) if one else np.asarray(edges, dtype=np.int64)
    G = edges.size - 1
    P_s = np.zeros((G, feats.n_blocks, phi_s.shape[1], FEATURE_BLOCK))
    P_c = np.zeros((G, feats.n_blocks, phi_c.shape[1], FEATURE_BLOCK))
    accumulate_stein(X, phi_s, phi_c, edges, feats.Wt, feats.ct, P_s, P_c)
    return (P_s[0], P_c[0]) if one else (P_s, P_c)


def contract_blocks(cm, feats: RandomFeatures, sums):
    """Per-block sums → totals and per-block means.

    Parameters
    ----------
    sums : sequence of (P_s, P_c, count), in block order

    Returns
    -------
    BlockSystem
        ``A`` (m, n), ``b`` (m,): means over all samples (block sums added in block order, then
        contracted); ``A_blocks`` (B, m, n), ``b_blocks`` (B, m), ``counts`` (B,): per-block
        means, from which the sampling noise of A and b is estimated.
    """
    if not sums:
        raise DataError("X: no samples")
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite results are checked below
        return BlockSystem(*_contract_blocks(cm, feats, sums))


#: Largest dense per-block means (B·m·n·8 bytes) an assembly returns; beyond it ``A_blocks``
#: is a :class:`~dynosed_sym.assembly.contraction.BlockMeans` (the sums, contracted on demand).
DENSE_BLOCKS_BYTES = memory.DENSE_BLOCKS_BYTES


def _contract_blocks(cm, feats, sums):
    plan = contraction_of(cm)
    B, m = len(sums), feats.m
    lazy = B * m * cm.model.n * 8 > DENSE_BLOCKS_BYTES
    b_blocks, counts, kept = [], [], []
    A_blocks = None if lazy else np.empty((B, m, cm.model.n))  # each block contracted in place
    # a matrix block W·φ(x) (and cheap single terms beside it): the block means' factors
    split = None if lazy else face_split_columns(plan)
    factors = [] if split is not None else None
    P_s_tot = P_c_tot = None
    for k, (P_s, P_c, count) in enumerate(sums):
        if lazy:
            Ps, Pc = feats.unblock(P_s), feats.unblock(P_c)
            kept.append((np.ascontiguousarray(Ps), np.ascontiguousarray(Pc)))
            b_blocks.append(plan.b(feats.omega, Ps, Pc, math.sqrt(2.0 / m) / count))
        else:
            _, bb = contract(cm, feats, P_s, P_c, count, out=A_blocks[k])
            b_blocks.append(bb)
            if factors is not None:
                factors.append(column_factor(split.feats, feats.unblock(P_s), count, m))
        counts.append(int(count))
        if P_s_tot is None:
            P_s_tot, P_c_tot = P_s.copy(), P_c.copy()
        else:
            P_s_tot += P_s
            P_c_tot += P_c
    A, b = contract(cm, feats, P_s_tot, P_c_tot, int(sum(counts)))
    if not (np.isfinite(A).all() and np.isfinite(b).all()):
        raise DataError(
            f"the assembled system A θ = b is not finite: the kernel length scale "
            f"(bandwidth = {feats.lengthscale:.3g}) is far too small for the data, or the "
            "drift/diffusion overflow at these samples"
        )
    counts = np.array(counts)
    if lazy:
        A_blocks = BlockMeans(plan, feats.omega, kept, counts)
    elif factors is not None:
        fs = FaceSplit(block_factor(split, feats.omega), np.stack(factors), split.embed)
        A_blocks = with_face_split(A_blocks, fs)
    return A, b, A_blocks, np.array(b_blocks), counts


def assemble_global(cm, blocks, feats: RandomFeatures):
    """Assemble A, b from an iterable of sample blocks (one kernel launch per block).

    Parameters
    ----------
    cm : CompiledModel
    blocks : iterable of (N_b, d) float arrays, processed in order
    feats : RandomFeatures

    Returns
    -------
    BlockSystem
        See :func:`contract_blocks`.
    """
    return contract_blocks(cm, feats, [(*block_sums(cm, Xb, feats), Xb.shape[0]) for Xb in blocks])


def assemble_array(cm, X, edges, feats: RandomFeatures, dlogp_dt=None):
    """Assemble A, b from samples in memory with noise blocks ``X[edges[g]:edges[g+1]]``.

    One kernel launch for all blocks; bitwise the same as :func:`assemble_global` over
    the same blocks.  ``dlogp_dt`` (N,), optional: ∂ₜlog p at each sample (non-stationary
    snapshot, docs/method.md §2).
    """
    P_s, P_c = block_sums(cm, X, feats, edges, dlogp_dt)
    counts = np.diff(np.asarray(edges, dtype=np.int64))
    return contract_blocks(cm, feats, [(P_s[g], P_c[g], counts[g]) for g in range(counts.size)])


def accumulate(
    cm, feats, blocks: NoiseBlocks, chunks, bar=None, *, start=0, name="X", checked=False
):
    """Run the fill over ``chunks`` (validated arrays in row order) into ``blocks``.

    Each chunk's feature arguments are checked first (errors name the input ``name`` — an
    environment's ``X['B']`` — and global rows, counted from ``start``), and the states against
    the model (declared signs, overflowing terms) unless ``checked`` (chunks from
    :meth:`dynosed_sym.data.sources.DataSource.checked_chunks`, which checks them with the
    other data-level checks: finite rows, D(x), spread).
    """
    row = int(start)
    model = None if checked else cm.model
    for chunk in chunks:
        feature_arguments(chunk, feats, name=name, offset=row, model=model)
        for k, piece in blocks.split(chunk):
            P_s, P_c = block_sums(cm, piece, feats)
            blocks.add(k, P_s, P_c, piece.shape[0])
        row += chunk.shape[0]
        if bar is not None:
            bar.update(chunk.shape[0])
    return blocks


def assemble_source(
    cm, source, feats, n_blocks=DEFAULT_BLOCKS, chunk_rows=CHUNK_ROWS, bar=None, dlogp_dt=None
) -> BlockSystem:
    """Assemble A, b from a :class:`~dynosed_sym.data.sources.DataSource` in this process.

    Data in memory: one kernel launch over all noise blocks (:func:`assemble_array`).  A stream:
    chunk by chunk with memory independent of N, into :class:`~dynosed_sym.data.blocks.NoiseBlocks`.
    ``dlogp_dt`` (N,), data in memory only: ∂ₜlog p at each sample.
    """
    if source.kind == "array":
        edges = block_edges(source.n_rows, n_blocks)
        feature_arguments(source.array, feats, name=source.name, model=cm.model)
        system = assemble_array(cm, source.array, edges, feats, dlogp_dt)
        if bar is not None:
            bar.update(source.n_rows)
        return system
    blocks = NoiseBlocks(source.n_rows, n_blocks)
    chunks = source.checked_chunks(chunk_rows)
    accumulate(cm, feats, blocks, chunks, bar, name=source.name, checked=True)
    return contract_blocks(cm, feats, blocks.finish())
