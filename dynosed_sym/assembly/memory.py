"""Memory of the global assembly, estimated before anything is allocated.

The global route keeps, per noise block, the partial sums of the system (B × m × (n + 1)
numbers) and the solve and the report work on a few copies of them; the random features
themselves take m × (d + 2).  Measured peaks (tracemalloc, ``fit_global`` on ou2d and Lorenz,
m = 4096 … 65,536, B = 8 and 32) are 4.5–5.1 × 8·B·m·(n + 1) bytes, hence
``ASSEMBLY_COPIES``.  :func:`check_assembly_memory` refuses, with the number, a request that
would not fit in the machine's available memory (``n_features=10**9`` was killed by the
out-of-memory killer at 23 GB, after minutes).
"""

from __future__ import annotations

import numbers
import os

from ..errors import DataError

__all__ = [
    "assembly_bytes",
    "available_memory",
    "check_assembly_memory",
    "ASSEMBLY_COPIES",
    "MEMORY_SHARE",
]

#: Copies of the per-block system (B × m × (n + 1) doubles) alive at the peak of a fit.
ASSEMBLY_COPIES = 5

#: Share of the available memory (:func:`available_memory`) a global fit may plan to use.
MEMORY_SHARE = 0.9


def assembly_bytes(d, n, m, n_blocks) -> int:
    """Estimated peak bytes of a global fit with m features, B noise blocks, n parameters."""
    return 8 * (ASSEMBLY_COPIES * n_blocks * m * (n + 1) + m * (2 * d + 4))


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
    need = assembly_bytes(model.d, model.n, n_features, B)
    have = available_memory() if available is None else available
    if have is None or need <= MEMORY_SHARE * have:
        return
    raise DataError(
        f"n_features={n_features:,} with n_blocks={B:,} would need about {_size(need)} of memory "
        f"for the global system ({B:,} noise blocks × {n_features:,} features × {model.n + 1} "
        f"columns, {ASSEMBLY_COPIES} copies of 8 bytes), more than the {_size(have)} available; "
        "lower n_features (a few thousand suffice for most models) or n_blocks"
    )
