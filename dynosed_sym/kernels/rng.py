"""Counter-based random numbers of the simulator: SplitMix64 hashing, uniforms built from bits,
and Box–Muller normals with a polynomial log, sqrt and sine (no libm calls, so a loop over lanes
vectorises).

Uniform number k of the stream with key ``key`` is the SplitMix64 hash of ``key + k·φ`` (φ the
64-bit golden ratio), so any number of any stream is computed directly, in any order.  Every
function is ``inline="always"``: Numba inlines it into the caller (the lane loop of
:func:`dynosed_sym.kernels.lanes.normals_lanes`), whose compile flags then apply.
"""

import numpy as np

from .jit import kernel
from .trig import fold, sin_turns

__all__ = [
    "GOLDEN",
    "inline_helper",
    "mix64",
    "unit_float",
    "log_unit",
    "sqrt_nonneg",
    "normal_pair",
]

#: The 64-bit golden ratio 2**64/φ: the stride between consecutive numbers of a stream.
GOLDEN = 0x9E3779B97F4A7C15

#: Compile options of the inlined helpers here and in :mod:`.lanes`: Numba inlines them into the
#: calling kernel, so that kernel's flags apply to their arithmetic in the end.
inline_helper = kernel(inline="always")


@inline_helper
def mix64(z):
    """SplitMix64 finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@inline_helper
def unit_float(h):
    """1 + (top 52 bits of h) / 2**52: a uniform double in [1, 2), built from bits."""
    return np.uint64((h >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64)


@inline_helper
def log_unit(u):
    """log(u) for a normal double u in (0, 1]; error below 4e-16 relative (no libm call)."""
    b = np.float64(u).view(np.uint64)
    # u = 2**e * m with m in [1, 2); e as a double by the 2**52 trick (no int -> float conversion)
    m_bits = np.uint64((b & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000))
    e_bits = np.uint64((b >> np.uint64(52)) | np.uint64(0x4330000000000000))
    m = m_bits.view(np.float64)
    e = e_bits.view(np.float64) - 4503599627371519.0
    big = m > 1.4142135623730951
    m = 0.5 * m if big else m
    e = e + 1.0 if big else e
    # log m = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.1716: odd series to s^19
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    p = 0.10526315789473684
    p = p * z + 0.11764705882352941
    p = p * z + 0.13333333333333333
    p = p * z + 0.15384615384615385
    p = p * z + 0.18181818181818182
    p = p * z + 0.2222222222222222
    p = p * z + 0.2857142857142857
    p = p * z + 0.4
    p = p * z + 0.6666666666666666
    # log 2 split into an exact high part and a low part: e * 0.693147180369... is exact
    return e * 0.6931471803691238 + (e * 1.9082149292705877e-10 + (2.0 * s + s * z * p))


@inline_helper
def sqrt_nonneg(a):
    """sqrt(a) for finite a >= 0: Newton steps on 1/sqrt(a) (Numba's sqrt is a libm call that
    blocks vectorisation); error about 1 ulp."""
    bits = np.uint64(0x5FE6EB50C7B537A9) - (np.float64(a).view(np.uint64) >> np.uint64(1))
    y = np.uint64(bits).view(np.float64)
    h = 0.5 * a
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    r = a * y
    return r + y * (h - 0.5 * r * r)


@inline_helper
def normal_pair(z1, z2):
    """Box–Muller: two independent standard normals from the stream positions z1, z2 (uint64).

    The radius comes from ``2 - unit_float(mix64(z1))`` in (0, 1] (multiples of 2**-52, so
    |eta| <= 8.49), the angle in turns from ``unit_float(mix64(z2)) - 1.5`` in [-1/2, 1/2).
    """
    u1 = 2.0 - unit_float(mix64(z1))  # (0, 1], multiples of 2**-52
    t = unit_float(mix64(z2)) - 1.5  # angle in turns, [-1/2, 1/2)
    rad = sqrt_nonneg(-2.0 * log_unit(u1))  # at most 8.49
    w = t + 0.25  # cos(2 pi t) = sin(2 pi (t + 1/4)); exact
    w = w - np.floor(w + 0.5)
    return rad * sin_turns(fold(w)), rad * sin_turns(fold(t))
