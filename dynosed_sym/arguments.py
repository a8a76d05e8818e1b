"""Checks of scalar arguments shared by every entry point (a DataError names the argument)."""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
import os

import numpy as np

from .errors import DataError

__all__ = [
    "integer",
    "number",
    "seed",
    "choice",
    "flag",
    "level",
    "relative_error",
    "bootstrap_options",
    "parameter_vector",
    "snapshot_times",
    "check_field",
    "float_array",
    "numeric_dtype",
    "labelled_values",
    "folder_path",
]


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


def snapshot_times(values, name, minimum=1):
    """``values`` as (K,) snapshot times: at least ``minimum``, finite, ≥ 0 and each given once,
    in the order given; else a DataError naming ``name`` (a repeated time would merge two
    snapshots into one: a time course said "1 snapshot(s)")."""
    ts = float_array(values, name).reshape(-1)
    if ts.size < minimum:
        raise DataError(
            f"{name}: at least {minimum} snapshot time{'s' * (minimum > 1)} needed, got {ts.size}"
        )
    bad = np.flatnonzero(~np.isfinite(ts) | (ts < 0))
    if bad.size:  # (the first one, not the whole list: a list of 200 times was 6000 characters)
        k = int(bad[0])
        raise DataError(f"{name}: time {float(ts[k]):g} (entry {k}) is not a finite time ≥ 0")
    repeated = np.unique(ts[np.flatnonzero(np.diff(np.sort(ts)) == 0)])
    if repeated.size:
        raise DataError(f"{name}: time {float(repeated[0]):g} is given twice; give each time once")
    return ts


def seed(value, name="seed"):
    """A seed for numpy.random: a non-negative integer."""
    return integer(value, name, minimum=0)


def level(value, name="level"):
    """A confidence level: a number strictly between 0 and 1 (0.95 for a 95 % interval), at
    least 0.5: a level below one half is the error rate α given for the coverage 1 − α (the
    ``alpha=0.05`` of statsmodels and SciPy), which gave a 5 % interval without a word."""
    value = number(value, name)
    if not 0.0 < value < 1.0:
        hint = f" (for a {value:g} % interval pass {value / 100:g})" if 50 <= value < 100 else ""
        raise DataError(
            f"{name} must be between 0 and 1 (exclusive), e.g. 0.95 for a 95 % interval, "
            f"got {value!r}{hint}"
        )
    if value < 0.5:
        raise DataError(
            f"{name}={value:g} asks for a {100 * value:g} % interval: {name} is the coverage, "
            f"not the error rate alpha; for a {100 * (1 - value):g} % interval (alpha = "
            f"{value:g}) pass {name}={1 - value:g} (levels below 0.5 are refused)"
        )
    return value


def relative_error(value, name="rel_error"):
    """A target relative error: a fraction of |θ| in (0, 1] (0.1 for ±10 %).  Above 1 it is a
    percentage given as a number (``rel_error=5`` meant as ±5 %), which planned for ±500 %: the
    handful of samples for an interval wider than the parameter itself, without a word."""
    value = number(value, name, positive=True)
    if value > 1.0:
        raise DataError(
            f"{name} is a fraction of |θ| (0.1 for an interval of half-width ±10 %), at most 1; "
            f"got {value:g}, i.e. ±{100 * value:g} %"
            + (f" (for ±{value:g} % pass {value / 100:g})" if value <= 100 else "")
        )
    return value


def bootstrap_options(n_boot, seed_value, level_value):
    """``(n_boot, seed, level)`` of a block bootstrap, checked (``level`` None: the report's)."""
    level_value = None if level_value is None else level(level_value)
    return integer(n_boot, "n_boot", minimum=2), seed(seed_value), level_value


def parameter_vector(values, name, n):
    """``values`` as a finite float vector of the n parameters, or a DataError naming it."""
    out = float_array(values, name)
    if out.shape != (n,):
        raise DataError(f"{name}: expected {n} values, one per parameter, got shape {out.shape}")
    if not np.isfinite(out).all():
        raise DataError(f"{name}: entries {np.flatnonzero(~np.isfinite(out)).tolist()} not finite")
    return out


def flag(value, name):
    """``value`` as a bool: True or False (NumPy's too), nothing else (no 0/1, no "yes")."""
    if not isinstance(value, (bool, np.bool_)):
        raise DataError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_field(options, name, check, **kwargs):
    """Validate one field of a frozen option dataclass, in its ``__post_init__``.

    The field's value is replaced by ``check(value, "Class.field", **kwargs)`` (e.g.
    :func:`integer` with ``minimum=1``), so an error names the class and the field and a valid
    value is stored in its checked form (an int, a float, a bool).  Returns that value.
    """
    value = check(getattr(options, name), f"{type(options).__name__}.{name}", **kwargs)
    object.__setattr__(options, name, value)  # the dataclass is frozen once built
    return value


def choice(value, name, allowed):
    """``value`` if it is one of ``allowed`` (a tuple), else a DataError listing them."""
    if value not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise DataError(f"{name} must be one of {shown}, got {value!r}")
    return value


# --------------------------------------------------------------------------- arrays of numbers
#: what a dtype kind (or a cell's type) holds, and what to do about it
_REFUSED = {
    "b": ("boolean values", "convert it explicitly if True/False mean 1/0 (e.g. .astype(float))"),
    "c": (
        "complex numbers",
        "pass real numbers (e.g. .real, if the imaginary parts are rounding noise)",
    ),
    "M": (
        "dates/times",
        "convert it to numbers explicitly (e.g. seconds since a reference time)",
    ),
    "m": ("time spans", "convert it to numbers explicitly (e.g. .total_seconds())"),
    "U": ("text", "numbers are expected"),
    "O": ("a value that is not a number", "numbers are expected"),
}
_REFUSED["S"] = _REFUSED["T"] = _REFUSED["U"]


def _cell_kind(value):
    """The dtype kind a Python cell value stands for: "f" (a real number), "n" (missing: None,
    pandas.NA), or a refused kind of ``_REFUSED``."""
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (numbers.Real, decimal.Decimal, np.floating, np.integer)):
        return "f"
    if value is None or type(value).__name__ == "NAType":
        return "n"
    if isinstance(value, (complex, np.complexfloating)):
        return "c"
    if isinstance(value, (str, bytes)):
        return "U"
    if isinstance(value, (datetime.date, datetime.time, np.datetime64)) or (
        type(value).__name__ == "NaTType"
    ):
        return "M"
    if isinstance(value, (datetime.timedelta, np.timedelta64)):
        return "m"
    return "O"


def _where(index, shape, columns, entries, offset):
    """Where the cell at flat ``index`` of an array of ``shape`` is, in the caller's words."""
    if not shape:
        return ""
    pos = np.unravel_index(index, shape)
    if len(shape) == 1:
        if entries is not None and len(entries) == shape[0]:
            return f" at {entries[pos[0]]!r}"
        if columns is not None and len(columns) == 1:
            return f" in column {columns[0]!r}, row {int(pos[0]) + offset}"
        return f" at row {int(pos[0]) + offset}"
    col = int(pos[-1])
    label = columns[col] if columns is not None and col < len(columns) else col
    where = f" in column {label!r}, row {int(pos[0]) + offset}"
    return where + (f" (index {tuple(int(p) for p in pos)})" if len(shape) > 2 else "")


def folder_path(value, name):
    """A folder path given as str or os.PathLike, as str with "~" expanded (a literal "~"
    made a folder named "~" in the working directory); anything else a DataError."""
    if not isinstance(value, (str, os.PathLike)):
        raise DataError(
            f"{name} must be a folder path (str or os.PathLike), got {type(value).__name__} "
            f"{value!r}"
        )
    return os.path.expanduser(os.fspath(value))


def file_path(value, name):
    """A file path given as str or os.PathLike, as str with "~" expanded; anything else a
    DataError — an integer above all, which ``open()`` takes as a file descriptor and closes
    when done (``fit.to_json(1)``, or ``True``, wrote to standard output and closed it)."""
    if isinstance(value, (str, os.PathLike)):
        return os.path.expanduser(os.fspath(value))
    hint = ""
    if isinstance(value, (int, np.integer)):
        hint = ": open() would take an integer as a file descriptor and close it after writing" + (
            " (1 is standard output)" if value == 1 else ""
        )
    raise DataError(
        f"{name} must be a file path (str or os.PathLike), got {type(value).__name__} "
        f"{value!r}{hint}"
    )


def labelled_values(values):
    """A pandas Series, or a one-row DataFrame, as the dict of its labels (what it says it holds);
    anything else unchanged.  Read by position, a Series of parameter values in another order than
    the model's was silently misassigned (``simulate(model, series)``, ``nominal=series``); a
    Series with the default integer labels 0, 1, … is positional and stays so."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        return values
    if isinstance(values, pd.DataFrame):
        if values.shape[0] != 1:
            return values
        values = values.iloc[0]
    if isinstance(values, pd.Series):
        if isinstance(values.index, pd.RangeIndex) and values.index.start == 0:
            return values.to_numpy()
        return dict(values.items())
    return values


def float_array(values, name, columns=None, entries=None, offset=0, error=DataError):
    """``values`` as a float64 array, or ``error`` naming what in it is not a real number.

    Real numbers of any width (floats, integers, and Python numbers in an object array) are
    converted; missing cells (None, pandas.NA) become NaN, for the caller's finiteness check.
    Refused, never cast: booleans, complex numbers (even with zero imaginary parts), dates,
    times, time spans and text — the message names the column (``columns``: labels of the last
    axis; a 1-D array with one label is that column) and the first row (counted from
    ``offset``), or the entry (``entries``: labels of a vector), shows the value and says what
    to do.  Long-double values beyond the double range are refused too.
    """
    if type(values).__module__.startswith("scipy.sparse"):  # np.asarray: a 0-d object array
        raise error(
            f"{name}: a scipy.sparse {type(values).__name__}; pass a dense array "
            "(.toarray()) — an AnnData with sparse storage is read column by column"
        )
    if np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any():
        # np.asarray drops the mask: the masked cells' hidden values would be read as data
        mask = np.ma.getmaskarray(values)
        i = int(np.flatnonzero(mask.reshape(-1))[0])
        raise error(
            f"{name}: a masked array with {int(mask.sum())} masked entries (the first"
            f"{_where(i, mask.shape, columns, entries, offset)}); its mask would be ignored: drop "
            "those rows or fill them (X[~X.mask.any(axis=1)].data, or X.filled(...))"
        )
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:  # e.g. ragged nested lists
        raise error(f"{name}: cannot convert to an array of numbers ({exc})") from None
    kind = arr.dtype.kind
    if kind in "iu":
        return arr.astype(float)
    if kind == "f":
        with np.errstate(over="ignore"):
            out = arr.astype(float)
        if arr.dtype.itemsize > 8:
            over = np.isinf(out) & np.isfinite(arr)
            if over.any():
                i = int(np.flatnonzero(over.reshape(-1))[0])
                raise error(
                    f"{name}: value{_where(i, arr.shape, columns, entries, offset)} is beyond "
                    f"the double-precision range ({_show(arr.reshape(-1)[i])}); rescale the data"
                )
        return out
    flat = arr.reshape(-1)
    if kind in "OUST":
        if kind == "O":
            kinds = np.array([_cell_kind(v) for v in flat], dtype="<U1")
        else:  # a text array (a list mixing numbers and text becomes one): all text
            kinds = np.full(flat.shape, "U")
        refused = np.flatnonzero((kinds != "f") & (kinds != "n"))
        if refused.size == 0:
            out = np.empty(flat.shape)
            missing = kinds == "n"
            out[missing] = np.nan
            try:
                out[~missing] = [float(v) for v in flat[~missing]]
            except OverflowError:
                i = next(j for j, v in enumerate(flat) if kinds[j] == "f" and _too_big(v))
                raise error(
                    f"{name}: value{_where(i, arr.shape, columns, entries, offset)} is beyond "
                    f"the double-precision range ({_show(flat[i])}); rescale the data"
                ) from None
            return out.reshape(arr.shape)
        i = int(refused[0])
        kind = str(kinds[i])
        if kind == "U":  # the text that is not a number (a column read as text has both)
            bad = [j for j in refused if kinds[j] != "U" or not _numeric_text(flat[j])]
            if not bad:
                where = _where(i, arr.shape, columns, entries, offset)
                raise error(
                    f"{name}: holds numbers stored as text{where}: {_show(flat[i])}; convert "
                    "them to numbers first (e.g. pandas.to_numeric, .astype(float))"
                )
            i = int(bad[0])
            kind = str(kinds[i])
    elif kind == "c" and flat.size:
        nonreal = np.flatnonzero(flat.imag != 0)
        i = int(nonreal[0]) if nonreal.size else 0
    else:
        i = 0
    what, advice = _REFUSED.get(kind, _REFUSED["O"])
    if kind in "UST" and columns is not None:
        advice += (
            ": fix or drop that entry (in a CSV file: text, a decimal comma or an unusual "
            "missing-value marker in that column)"
        )
    if not flat.size:
        raise error(f"{name}: holds {what} (dtype {arr.dtype}), not real numbers; {advice}")
    value = flat[i]
    raise error(
        f"{name}: holds {what}{_where(i, arr.shape, columns, entries, offset)}: "
        f"{_show(value)}; {advice}"
    )


def _numeric_text(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def numeric_dtype(dtype, name, error=DataError):
    """Raise ``error`` unless ``dtype`` holds real numbers (float, signed or unsigned integer):
    what :func:`float_array` refuses, told from the dtype alone (nothing is read)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fiu":
        return
    what, advice = _REFUSED.get(dtype.kind, _REFUSED["O"])
    raise error(f"{name}: holds {what} (dtype {dtype}), not real numbers; {advice}")


def _too_big(value):
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _show(value):
    """A cell value for a message: its repr, shortened."""
    if isinstance(value, (np.datetime64, np.timedelta64)):
        text = f"{type(value).__name__}({str(value)!r})"
    else:
        text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 60 else text[:57] + "..."
