"""Argument checks shared by the entry points: every failure is a DataError naming the argument."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import DataError

__all__ = ["integer", "number", "seed", "per_row"]


def integer(value, name, minimum=None):
    """``value`` as an int (bools and non-integral numbers are rejected), at least ``minimum``."""
    if isinstance(value, bool):
        raise DataError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise DataError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise DataError(f"{name} must be at least {minimum}, got {value}")
    return value


def number(value, name, positive=False, nonnegative=False):
    """``value`` as a finite float; optionally > 0 or ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DataError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise DataError(f"{name} must be finite, got {value!r}")
    if positive and not value > 0:
        raise DataError(f"{name} must be positive, got {value!r}")
    if nonnegative and value < 0:
        raise DataError(f"{name} must be non-negative, got {value!r}")
    return value


def seed(value, name="seed"):
    """A seed for numpy.random: a non-negative integer."""
    return integer(value, name, minimum=0)


def per_row(values, points, name, what="sample"):
    """One finite value per row of ``points`` (M, d): an array, or a callable ``fn(points)``."""
    if callable(values):
        values = values(points)
    try:
        g = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: cannot convert to a float array ({exc})") from None
    if g.shape != (points.shape[0],):
        raise DataError(f"{name}: expected one value per {what} ({points.shape[0]}), got {g.size}")
    if not np.isfinite(g).all():
        raise DataError(f"{name}: not finite at {what}(s) {np.flatnonzero(~np.isfinite(g))[:5].tolist()}")
    return np.ascontiguousarray(g)
