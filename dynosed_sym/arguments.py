"""Checks of scalar arguments shared by every entry point (a DataError names the argument)."""

from __future__ import annotations

import math
import numbers

from .errors import DataError

__all__ = ["integer", "number", "seed", "choice"]


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


def choice(value, name, allowed):
    """``value`` if it is one of ``allowed`` (a tuple), else a DataError listing them."""
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise DataError(f"{name} must be one of {shown}, got {value!r}")
    return value
