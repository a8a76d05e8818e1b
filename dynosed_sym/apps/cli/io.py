"""Reading models, parameter assignments and data files; writing samples and JSON."""

from __future__ import annotations

import json
import os

import click
import numpy as np

from ...data.sources import load_npy
from ...errors import DataError, DynosedError
from .app import DATA_SUFFIXES


def _echo_json(obj):
    click.echo(json.dumps(obj, indent=2, allow_nan=False))


def _finite(obj):
    """NaN/inf → None, numpy → Python, recursively (strict JSON), as FitResult.to_json does."""
    from ...routes.result import finite_or_none as _finite_or_none
    from ...routes.result import plain as _plain

    return _finite_or_none(_plain(obj))


# --------------------------------------------------------------------------- arguments
def _load_model(model_file):
    from ...model import load_model

    if not str(model_file).endswith(".py"):
        raise click.BadParameter(
            f"{model_file!r}: expected a Python model file (.py) that defines "
            "an SDEModel named 'model'",
            param_hint="MODEL",
        )
    return load_model(model_file)


def _parse_assignments(model, items, option):
    """``("k=1.5", "W[0,1]=2")`` → {name: value}, names checked against the model's parameters."""
    values = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=option)
        name, _, val = item.partition("=")
        name = name.strip()
        if name in values:  # the last one silently won (a typo for another parameter, often)
            raise click.BadParameter(
                f"{name!r} is given twice ({values[name]:g} and {val.strip()}); give each "
                "parameter once",
                param_hint=option,
            )
        try:
            values[name] = float(val)
        except ValueError:
            raise click.BadParameter(
                f"value of {name!r} is not a number: {val!r}", param_hint=option
            ) from None
        if not np.isfinite(values[name]):  # (it failed later, as an error of the command: exit 1)
            raise click.BadParameter(
                f"value of {name!r} is not finite: {val.strip()!r}", param_hint=option
            )
        if name not in model.param_names:
            raise click.BadParameter(
                f"{name!r} is not a parameter of {model.name!r} "
                f"(parameters: {', '.join(model.param_names)})",
                param_hint=option,
            )
    return values


def _full_theta(model, items, option, required_for):
    """Model nominal overridden by NAME=VALUE items → dict for every parameter, or None if no items
    and no nominal."""
    values = _parse_assignments(model, items, option)
    base = {} if model.nominal is None else dict(zip(model.param_names, model.nominal.tolist()))
    if not values and not base:
        return None
    base.update(values)
    missing = [p for p in model.param_names if p not in base]
    if missing:
        raise click.BadParameter(
            f"no value for {missing[0]!r} (the model file gives no nominal values; {required_for})",
            param_hint=option,
        )
    return base


def _parse_nominal(model, items):
    """Backwards-compatible helper of ``check``: the full nominal vector or None."""
    if not items:
        return None
    return _full_theta(model, items, "--nominal", "pass --nominal NAME=VALUE for each parameter")


def _parse_prior_scale(text):
    """--prior-scale: 'ml', 'none' or a non-negative number."""
    low = str(text).strip().lower()
    if low == "ml":
        return "ml"
    if low == "none":
        return None
    try:
        val = float(low)
    except ValueError:
        val = -1.0
    if not (val >= 0 and val < float("inf")):
        raise click.BadParameter(
            f"expected 'ml', 'none' or a non-negative number, got {text!r}",
            param_hint="--prior-scale",
        )
    return val


def _suffix(path, option):
    low = str(path).lower()
    for s in DATA_SUFFIXES:
        if low.endswith(s):
            return s
    raise click.BadParameter(
        f"{path!r}: expected a file ending in {', '.join(DATA_SUFFIXES)}", param_hint=option
    )


def _out_folder(out, option="--out"):
    """BadParameter when the folder of the output file ``out`` does not exist: said before the
    work (``fit --out missing/fit.json`` ran the whole fit, then failed with FileNotFoundError)."""
    if out is None:
        return
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise click.BadParameter(f"folder {folder!r} of {out!r} does not exist", param_hint=option)


def _refuse_overwrite(out, inputs, option="--out"):
    """BadParameter when ``out`` is one of the ``inputs`` (the same file, also through a symlink,
    a hard link or another relative path): writing results there would destroy the data."""
    if out is None or not os.path.exists(out):
        return
    for path in inputs:
        try:
            same = os.path.samefile(out, path)
        except OSError:
            same = os.path.realpath(out) == os.path.realpath(path)
        if same:
            shown = (
                repr(out)
                if os.path.abspath(out) == os.path.abspath(path)
                else (f"{out!r} (the same file as {path!r})")
            )
            raise click.BadParameter(
                f"{shown} is an input file of this command: writing the results there would "
                "overwrite it; choose another file name",
                param_hint=option,
            )


def _read_table(path, suffix):
    try:
        import pandas as pd
    except ImportError:
        raise DynosedError(f"reading {suffix} files needs pandas: pip install pandas") from None
    if suffix == ".csv":
        try:
            frame = pd.read_csv(path, float_precision="round_trip")  # exact for %.17g files
        except pd.errors.EmptyDataError:
            raise DataError(f"{path}: the file is empty (no header row, no data)") from None
        except UnicodeDecodeError as exc:  # (it was the bare "Error: UnicodeDecodeError: …")
            raise DataError(_not_utf8(path, exc)) from None
        except pd.errors.ParserError as exc:  # a row with more fields, an unclosed quote, …
            text = str(exc).strip()
            what = (
                "the rows do not have the same number of fields"
                if "Expected" in text and "fields" in text
                else "the file cannot be read as CSV"
            )
            raise DataError(
                f"{path}: {what} ({text}); every row needs one value per header column"
            ) from None
        _unique_header(path)
        _header_covers_rows(path, frame)
        return frame
    try:
        return pd.read_parquet(path)
    except ImportError:
        raise DynosedError(
            "reading .parquet files needs pyarrow: pip install 'dynosed_sym[parquet]'"
        ) from None
    except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid: a truncated or other file
        raise DataError(
            f"{path}: the file cannot be read as Parquet ({type(exc).__name__}: "
            f"{str(exc).strip()}); write it with pandas.DataFrame.to_parquet(path), or give the "
            "data as .csv or .npy"
        ) from None


def _not_utf8(path, exc):
    """The message for a CSV file that is not UTF-8 text (a UTF-16 export names its encoding)."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    kind = (
        "UTF-16 text (it starts with a UTF-16 byte-order mark), as spreadsheet programs write "
        "'Unicode text' and pandas to_csv(encoding='utf-16')"
        if head in (b"\xff\xfe", b"\xfe\xff")
        else f"not UTF-8 text (it holds the byte 0x{exc.object[exc.start]:02x}, which UTF-8 does "
        "not decode there: a Latin-1 or Windows-1252 file, or not text)"
    )
    return (
        f"{path}: the file is {kind}; CSV files are read as UTF-8: save it as UTF-8 "
        "(a spreadsheet's 'CSV UTF-8'; pandas to_csv's default)"
    )


def _header_covers_rows(path, frame):
    """A DataError when every data row has more fields than the header names: pandas then reads
    the first field of each row as its label, and every column took its right neighbour's
    values (``x,y`` over ``1,2,3`` gave x = 2, y = 3) without a word."""
    import pandas as pd

    if isinstance(frame.index, pd.RangeIndex):
        return
    extra = frame.index.nlevels
    names = ", ".join(str(c) for c in frame.columns)
    raise DataError(
        f"{path}: the data rows have {extra} field(s) more than the header names "
        f"({frame.shape[1]}: {names}): the first field of each row would be read as a row label "
        "and every column as its right neighbour's values; give the header one name per field "
        "(or drop the extra field — a delimiter at the end of every row makes one)"
    )


def _unique_header(path):
    """A DataError naming a column whose name the CSV header repeats: pandas renames the second
    'x' to 'x.1', so the columns would be read by name from whichever copy keeps it."""
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        header = next(csv.reader(fh), [])
    names = [h.strip() for h in header]
    repeated = sorted({h for h in names if names.count(h) > 1})
    if repeated:
        raise DataError(
            f"{path}: the header names column {repeated[0]!r} {names.count(repeated[0])} times; "
            "keep the one that holds the state variable (or rename the others)"
        )


def _load_data(path, model, in_memory):
    """DATA → array/DataFrame (``.csv``/``.parquet``) or the ``.npy`` path (memory-mapped)."""
    suffix = _suffix(path, "DATA")
    if suffix == ".npy":
        return load_npy(path, path) if in_memory else path
    return _read_table(path, suffix)


def _write_samples(X, model, path, suffix):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise DynosedError(f"--out: folder {folder!r} does not exist")
    if suffix == ".npy":
        with open(path, "wb") as fh:  # np.save(path) appends ".npy" to "x.NPY": not the file named
            np.save(fh, X)
        return
    try:
        import pandas as pd
    except ImportError:
        raise DynosedError(f"writing {suffix} files needs pandas: pip install pandas") from None
    df = pd.DataFrame(X, columns=model.state_names)
    if suffix == ".csv":
        df.to_csv(path, index=False, float_format="%.17g")
    else:
        try:
            df.to_parquet(path, index=False)
        except ImportError:
            raise DynosedError(
                "writing .parquet files needs pyarrow: pip install 'dynosed_sym[parquet]'"
            ) from None


# --------------------------------------------------------------------------- check records
def _structural_dict(rep):
    return {
        "rank": getattr(rep, "rank", None),
        "n_params": getattr(rep, "n_params", None),
        "identifiable": getattr(rep, "identifiable", None),
        "rank_is_exact": getattr(rep, "rank_is_exact", None),
        "combinations": [c.get("combination") for c in getattr(rep, "combinations", [])],
        "free_params": list(getattr(rep, "free_params", [])),
    }


def _check_dict(chk):
    out = {
        "model": chk.model_name,
        "route": chk.route,
        "n_samples": chk.n_samples,
        "structural": _structural_dict(chk.structural),
        "rank": chk.rank,
        "n_params": chk.n_params,
        "unique": chk.unique,
        "null_space": [str(c) for c in chk.null_space],
        "null_space_coefficients": [list(c.coefficients) for c in chk.null_space],
        "free_params": list(chk.free_params),
    }
    if chk.report is not None:
        need = chk.n_required if chk.n_required is not None else [None] * chk.n_params
        se = chk.std_errors if chk.std_errors is not None else [None] * chk.n_params
        rep = chk.report
        bias = chk.bias_sd if chk.bias_sd is not None else [0.0] * chk.n_params
        status = rep.status or [
            "not identifiable" if nm in rep.free_params else "identified" for nm in chk.param_names
        ]
        combos = rep.combinations or [None] * chk.n_params
        out["parameters"] = [
            {
                "name": nm,
                "nominal": float(chk.nominal[k]),
                "std_error_at_n": se[k],
                "bias_sd_at_n": bias[k],
                "freeness_normalised": float(chk.freeness_normalised[k]),
                "n_required": need[k],
                "status": status[k],
                "combination": None if combos[k] is None else str(combos[k]),
            }
            for k, nm in enumerate(chk.param_names)
        ]
        out["prior_scale"] = chk.prior_scale
        out["rel_error"], out["level"] = chk.rel_error, chk.level
    return out
