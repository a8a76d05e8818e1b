"""The compile options of the shared kernels, written once.

Every kernel here is cached on disk, uses NumPy's error model (a division by zero gives inf or
NaN, never an exception inside a loop), runs without bounds checks and releases the GIL; what
differs between them is whether it is parallel, which fastmath flags it allows and whether
Numba inlines it into its caller.
"""

import numba

__all__ = ["kernel"]


def kernel(*, parallel=False, fastmath=False, inline=None):
    """``numba.njit`` with the shared options; ``inline="always"`` for a helper Numba inlines
    into the calling kernel (whose flags then apply to its arithmetic)."""
    options = dict(
        parallel=parallel,
        fastmath=fastmath,
        cache=True,
        error_model="numpy",
        boundscheck=False,
        nogil=True,
    )
    if inline is not None:
        options["inline"] = inline
    return numba.njit(**options)
