"""Memory of the global assembly, estimated before anything is allocated.

The global route keeps, per noise block, the partial sums of the system (B × m × (n + 1)
numbers) and the solve and the report work on a few copies of them; the random features
themselves take m × (d + 2).  Measured peaks (tracemalloc, ``fit_global`` on ou2d and Lorenz,
m = 4096 … 65,536, B = 8 and 32) are 4.5–5.1 × 8·B·m·(n + 1) bytes, hence
``ASSEMBLY_COPIES``.  :func:`check_assembly_memory` refuses, with the number, a request that
would not fit in the machine's available memory (``n_features=10**9`` was killed by the
out-of-memory killer at 23 GB, after minutes).

The simulator (:func:`dynosed_sym.simulate`) writes its records into one (n_keep, C, d) array of
doubles (n_keep = ⌈n_samples / C⌉ records of C chains), reorders them into the (n_samples, d)
result and checks their stationarity; start states, keys and status take a few numbers per
chain.  Measured peaks (tracemalloc, ou2d and Lorenz, n_samples = 2·10⁵ … 4·10⁵, C = 2048 …
2·10⁵) are 4.1–6.6 × 8·n_samples·d bytes, hence ``SIMULATION_COPIES`` and
:func:`simulation_bytes`; :func:`check_simulation_memory` refuses, naming n_samples and n_chains,
a simulation that would not fit.

A block bootstrap (:meth:`dynosed_sym.routes.result.FitResult.bootstrap`) keeps θ* of every
resample, (n_boot, n) doubles, and draws the blocks of every resample at once, (n_boot, B)
integers; its percentiles and spread sort and centre copies of θ*; each resample works on its
drawn blocks.  Measured peaks (tracemalloc, Lorenz and ou2d, n_boot = 2 … 8·10⁴, B = 8 and 32)
are 8·n_boot·(B + 2.4 n) bytes beside 2.5–3 copies of the kept per-block means, hence
``BOOTSTRAP_COPIES``, ``BOOTSTRAP_BLOCK_COPIES`` and :func:`bootstrap_bytes`;
:func:`check_bootstrap_memory` refuses, naming n_boot, a request that would not fit
(``n_boot=10**9`` was a bare ``MemoryError`` for 238 GiB of draws).
"""

from __future__ import annotations

import numbers
import os

from ..errors import DataError

__all__ = [
    "assembly_bytes",
    "stein_sums_rows",
    "lazy_blocks",
    "DENSE_BLOCKS_BYTES",
    "CHUNK_BYTES",
    "available_memory",
    "check_assembly_memory",
    "ASSEMBLY_COPIES",
    "MEMORY_SHARE",
    "simulation_bytes",
    "check_simulation_memory",
    "SIMULATION_COPIES",
    "bootstrap_bytes",
    "check_bootstrap_memory",
    "BOOTSTRAP_COPIES",
    "BOOTSTRAP_BLOCK_COPIES",
]

#: Copies of the per-block system (B × m × (n + 1) doubles) alive at the peak of a fit.
ASSEMBLY_COPIES = 5

#: Largest dense per-block means (B·m·n·8 bytes) an assembly returns; beyond it the assembly
#: keeps the fill's sums (:class:`~dynosed_sym.assembly.contraction.BlockMeans`) and the solve
#: regenerates the block deviations a chunk at a time (:mod:`dynosed_sym.solve.blockops`).
DENSE_BLOCKS_BYTES = 1 << 30
#: Bytes of one chunk of the solve's streamed block products.
CHUNK_BYTES = 1 << 28
#: Beyond DENSE_BLOCKS_BYTES: n × n arrays alive at the peak of a fit (V, the bread and its
#: copies, the resolution matrix, the sandwich covariance, …), and m × n ones (A, A/a, AV, U, …).
#: Counted when the report still held its null space as named combinations of Python floats
#: (about four n × n arrays more, now made only when read): an upper bound since.
LAZY_SQUARE_COPIES = 14
LAZY_ROW_COPIES = 8

#: Copies of the simulator's output (n_keep × C × d doubles) alive at the peak of a simulation.
SIMULATION_COPIES = 6

#: Copies of the bootstrap's replicates θ* (n_boot × n doubles) alive at its peak, beside the
#: draws (n_boot × B integers): measured 2.35–2.45.
BOOTSTRAP_COPIES = 3
#: Copies of the kept per-block means a resample works on (its drawn blocks, the estimator's
#: products): measured 2.5–3.
BOOTSTRAP_BLOCK_COPIES = 4

#: Share of the available memory (:func:`available_memory`) a global fit may plan to use.
MEMORY_SHARE = 0.9


def lazy_blocks(n, m, n_blocks):
    """Whether the per-block means of this size are kept as the fill's sums (not dense)."""
    return 8 * n_blocks * m * n > DENSE_BLOCKS_BYTES


def assembly_bytes(d, n, m, n_blocks, n_sums=None) -> int:
    """Estimated peak bytes of a global fit with m features, B noise blocks, n parameters.

    Dense block means: ``ASSEMBLY_COPIES`` copies of B·m·(n + 1) doubles.  Beyond
    ``DENSE_BLOCKS_BYTES`` (:func:`lazy_blocks`): the fill's sums (``n_sums`` rows of m per block:
    the model's distinct sin and cos factors, :func:`stein_sums_rows`, and one for a ``dlogp_dt``
    column; n + 1 when not given — a network's are d times fewer than n, a small model's may be
    more), the b column's copies, three chunks of the streamed
    products, and the fit's n × n and m × n arrays (``LAZY_SQUARE_COPIES``, ``LAZY_ROW_COPIES``).
    """
    features = 8 * m * (2 * d + 4)
    if not lazy_blocks(n, m, n_blocks):
        return 8 * ASSEMBLY_COPIES * n_blocks * m * (n + 1) + features
    rows = (n if n_sums is None else int(n_sums)) + 1  # (+ 1: a dlogp_dt column)
    per_block = n_blocks * m * (rows + ASSEMBLY_COPIES)
    arrays = LAZY_SQUARE_COPIES * n * n + LAZY_ROW_COPIES * m * n
    return 8 * (per_block + arrays) + 3 * max(CHUNK_BYTES, 8 * m * n) + features


def stein_sums_rows(model):
    """Rows of the fill's per-block sums of ``model`` (its distinct sin and cos factors of x, the
    :class:`~dynosed_sym.model.derivation.SteinPieces`), or None for a drift not affine in θ."""
    der = model.derivation
    if not der.is_affine:
        return None
    pieces = der.stein
    return len(pieces.sin_features) + len(pieces.cos_features)


def available_memory():
    """Bytes of memory available to this process: ``MemAvailable`` of /proc/meminfo (Linux),
    else the physical memory, else None (unknown: nothing is refused)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _size(nbytes):
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB"):
        if nbytes < 1000 or unit == "PB":
            return f"{nbytes:.3g} {unit}" if unit != "bytes" else f"{int(nbytes)} bytes"
        nbytes /= 1000.0
    return f"{nbytes:.3g} EB"  # pragma: no cover


def check_assembly_memory(model, n_features, n_blocks, available=None):
    """Raise DataError when a global fit of ``model`` with ``n_features`` features and
    ``n_blocks`` noise blocks would need more than ``MEMORY_SHARE`` of the available memory.

    ``n_blocks`` None means the default; invalid values are left to their own checks.
    """
    from ..options import DEFAULT_BLOCKS

    B = DEFAULT_BLOCKS if n_blocks is None else n_blocks
    if isinstance(B, bool) or not isinstance(B, numbers.Integral) or B < 1:
        return
    B, n_features = int(B), int(n_features)
    need = assembly_bytes(model.d, model.n, n_features, B, stein_sums_rows(model))
    have = available_memory() if available is None else available
    if have is None or need <= MEMORY_SHARE * have:
        return
    how = (
        "kept as the fill's sums, with the fit's n × n arrays"
        if lazy_blocks(model.n, n_features, B)
        else f"{ASSEMBLY_COPIES} copies of 8 bytes"
    )
    raise DataError(
        f"n_features={n_features:,} with n_blocks={B:,} would need about {_size(need)} of memory "
        f"for the global system ({B:,} noise blocks × {n_features:,} features × {model.n + 1} "
        f"columns, {how}), more than the {_size(have)} available; "
        "lower n_features (a few thousand suffice for most models) or n_blocks"
    )


def simulation_bytes(d, n_samples, n_chains) -> int:
    """Estimated peak bytes of :func:`dynosed_sym.simulate` (module docstring)."""
    n_keep = -(-n_samples // n_chains)
    return 8 * (SIMULATION_COPIES * n_keep * n_chains * d + 2 * n_chains * (d + 2))


def check_simulation_memory(model, n_samples, n_chains, available=None):
    """Raise DataError when simulating ``n_samples`` states of ``model`` with ``n_chains`` chains
    would need more than ``MEMORY_SHARE`` of the available memory (nothing is allocated)."""
    need = simulation_bytes(model.d, n_samples, n_chains)
    have = available_memory() if available is None else available
    if have is None or need <= MEMORY_SHARE * have:
        return
    n_keep = -(-n_samples // n_chains)
    more = (
        " (n_chains > n_samples: every chain records at least one state, so lower n_chains)"
        if n_chains > n_samples
        else ""
    )
    raise DataError(
        f"simulate: n_samples={n_samples:,} with n_chains={n_chains:,} would need about "
        f"{_size(need)} of memory ({n_keep:,} records × {n_chains:,} chains × d = {model.d} "
        f"states, {SIMULATION_COPIES} copies of 8 bytes), more than the {_size(have)} "
        f"available{more}; lower n_samples (or n_chains), or simulate in several calls with "
        "different seeds"
    )


def bootstrap_bytes(n_boot, n, n_blocks, block_bytes=0) -> int:
    """Estimated peak bytes of a block bootstrap of n parameters over B noise blocks (module
    docstring): the draws and ``BOOTSTRAP_COPIES`` copies of the replicates, and
    ``BOOTSTRAP_BLOCK_COPIES`` copies of the kept per-block means (``block_bytes``)."""
    replicates = 8 * n_boot * (n_blocks + BOOTSTRAP_COPIES * n)
    return replicates + BOOTSTRAP_BLOCK_COPIES * int(block_bytes)


def check_bootstrap_memory(n_boot, n, n_blocks, block_bytes=0, available=None):
    """Raise DataError when a block bootstrap with ``n_boot`` resamples would need more than
    ``MEMORY_SHARE`` of the available memory (nothing is allocated)."""
    need = bootstrap_bytes(n_boot, n, n_blocks, block_bytes)
    have = available_memory() if available is None else available
    if have is None or need <= MEMORY_SHARE * have:
        return
    blocks = BOOTSTRAP_BLOCK_COPIES * int(block_bytes)
    if blocks >= MEMORY_SHARE * have:  # the kept block means alone: n_boot does not matter
        raise DataError(
            f"the bootstrap would need about {_size(need)} of memory, more than the "
            f"{_size(have)} available: {BOOTSTRAP_BLOCK_COPIES} copies of the kept per-block "
            f"means ({_size(int(block_bytes))} each) whatever n_boot; refit with fewer blocks "
            "(Execution(n_blocks=…)) or features, or use the sandwich intervals"
        )
    raise DataError(
        f"n_boot={n_boot:,} would need about {_size(need)} of memory for the bootstrap "
        f"({n_boot:,} resamples × ({n_blocks:,} drawn blocks + {BOOTSTRAP_COPIES} copies of "
        f"{n} parameters), 8 bytes each, and {BOOTSTRAP_BLOCK_COPIES} copies of the kept "
        f"per-block means, {_size(blocks)}), more than the {_size(have)} available; lower n_boot "
        "(a few hundred to a few thousand resamples suffice for standard errors and 95 % "
        "intervals)"
    )
