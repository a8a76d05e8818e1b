"""In-memory samples: a NumPy array (N, d) in ``model.state`` column order, a pandas DataFrame
whose columns include the state names (order and extra columns do not matter), or an AnnData
(single-cell data; ``pip install 'dynosed_sym[anndata]'``) whose ``var_names`` include them —
validated into C-contiguous float64 (N, d).
"""

from __future__ import annotations

import unicodedata

import numpy as np

from ..arguments import float_array
from ..errors import DataError

__all__ = [
    "as_samples",
    "from_anndata",
    "check_finite",
    "validate_rows",
    "is_frame",
    "is_anndata",
    "missing_column",
    "refuse_structured",
    "refuse_ragged_rows",
]


def _is_number_text(text):
    """Whether a column name reads as a number ('1.25', '-3e-2'; pandas suffixes a repeated
    name with '.1', which is cut off)."""
    try:
        float(text.strip())
    except ValueError:
        try:
            float(text.strip().rsplit(".", 1)[0])
        except ValueError:
            return False
    return True


def missing_column(name, state, cols, what="DataFrame", states=None):
    """The DataError of a frame without the column of state variable ``state``: the columns as
    read (repr, so stray spaces show) and, when one differs only by spaces or case, the fix
    (``states``: the model's state names, shown in the fix for pandas' default labels)."""
    near = [c for c in cols if c.strip().lower() == state.lower()]
    same_text = [
        c for c in cols if unicodedata.normalize("NFC", c) == unicodedata.normalize("NFC", state)
    ]
    hint = ""
    if same_text:  # 'é' as one code point or as 'e' + a combining accent: the same text
        hint = (
            f"; column {same_text[0]!r} is the same text in another Unicode form (composed vs "
            "decomposed accents): normalise the names, e.g. df.columns = [unicodedata.normalize"
            "('NFC', c) for c in df.columns], and the model's names the same way"
        )
    elif near and near[0].strip() == state:
        hint = (
            f"; column {near[0]!r} differs from {state!r} only by spaces: strip them "
            "(df.columns = df.columns.str.strip()), or write the file's header without spaces "
            "after the commas"
        )
    elif near:
        hint = f"; column {near[0]!r} differs from {state!r} in case: names are case-sensitive"
    elif cols and cols == [str(i) for i in range(len(cols))]:
        hint = (
            f"; its columns are the default labels 0 … {len(cols) - 1} of pandas.DataFrame(array), "
            "which say nothing about which state each holds: name them (pandas.DataFrame(array, "
            f"columns={list(states or [state])!r})), or pass the array itself, whose columns are "
            "taken in the model's state order"
        )
    elif cols and all(_is_number_text(c) for c in cols):
        hint = (
            "; its column names are all numbers: a file without a header row has its first row "
            "of data read as the names (and lost as data): give the file a header row naming "
            f"the state variables ({','.join(states or [state])}), or read it with header=None "
            "and name the columns"
        )
    elif any(c.startswith("(") and c.endswith(")") for c in cols):
        hint = (
            "; its columns are tuples (a MultiIndex): keep one level, e.g. "
            "df.columns = df.columns.get_level_values(-1)"
        )
    else:
        glued = [c for c in cols if state in c and any(sep in c for sep in ";\t|")]
        if glued:
            hint = (
                f"; column {glued[0]!r} holds several names: the file's columns are separated "
                "by another character than ',' (read it with sep=...)"
            )
    shown = ", ".join(repr(c) for c in cols[:20]) + (" ..." if len(cols) > 20 else "")
    return DataError(
        f"{name}: {what} has no column {state!r} for state variable {state!r} "
        f"(columns: {shown}){hint}"
    )


def refuse_structured(dtype, model, name, var=None):
    """A DataError for a NumPy structured (record) dtype: its rows are records of named fields,
    not rows of numbers (it was "holds a value that is not a number at row 0: (…, …)").  Names
    the fields and the two conversions (``var``: the array's name in them, default ``name``), and
    the state variables the fields lack."""
    var = name if var is None else var
    fields = getattr(dtype, "names", None)
    if not fields:
        return
    states = list(getattr(model, "state_names", ()))
    shown = ", ".join(repr(f) for f in fields[:20]) + (" ..." if len(fields) > 20 else "")
    missing = [s for s in states if s not in fields]
    if missing:
        fix = (
            f"; it has no field {missing[0]!r} for state variable {missing[0]!r} (state "
            f"variables: {', '.join(states)}): rename the fields, or stack the columns yourself "
            f"in the model's order: np.column_stack([{var}[f] for f in (...)])"
        )
    else:
        order = ", ".join(repr(s) for s in states)
        fix = (
            f": pass pandas.DataFrame({var}), whose columns are read by name as the state "
            f"variables, or np.column_stack([{var}[f] for f in ({order}{',' * (len(states) == 1)}"
            f")]) in the model's order"
        )
    raise DataError(
        f"{name}: a NumPy structured (record) array with fields {shown}: each row is one record, "
        f"not a row of numbers{fix}"
    )


def _from_frame(X, model, name):
    cols = [str(c) for c in X.columns]
    for s in model.state_names:
        if s not in cols:
            raise missing_column(name, s, cols, states=model.state_names)
        if cols.count(s) > 1:
            raise DataError(
                f"{name}: DataFrame has {cols.count(s)} columns named {s!r}; keep the one "
                f"that holds state variable {s!r}"
            )
    out = np.empty((len(X), model.d))
    for j, s in enumerate(model.state_names):
        out[:, j] = _column_values(X.iloc[:, cols.index(s)], name, s)
    return out


def _column_values(series, name, state):
    """The numbers of one pandas column (a Series) holding state variable ``state``."""
    if getattr(series.dtype, "kind", "O") in "fiu":
        values = series.to_numpy(dtype=float, na_value=np.nan)  # (nullable Int64, Float64)
    else:
        values = series.to_numpy()
    return float_array(values, name, columns=[state])


def _from_series(X, model, name):
    """A named pandas Series, read by its name as a DataFrame's column is: (N, 1) for a 1-state
    model whose state it names, else a DataError naming both (a Series named 'q' was read as
    the data of state 'x')."""
    label = X.name
    shown = f"{label!r}" if isinstance(label, str) else f"{label!r} ({type(label).__name__})"
    if model.d != 1:
        raise DataError(
            f"{name}: a pandas Series named {shown} holds one column, but model {model.name!r} "
            f"has {model.d} state variables ({', '.join(model.state_names)}): pass a DataFrame "
            "with a column per state variable"
        )
    state = model.state_names[0]
    if str(label) != state:
        raise DataError(
            f"{name}: a pandas Series named {shown}, but the state variable of model "
            f"{model.name!r} is {state!r}: a named Series is read by its name, as a DataFrame's "
            f"columns are; rename it (.rename({state!r})) if it holds {state}, or pass "
            ".to_numpy()"
        )
    return _column_values(X, name, state)[:, None]


def is_frame(X):
    return hasattr(X, "columns") and hasattr(X, "to_numpy")


def is_series(X):
    """A pandas Series (one column with a ``name``), not a DataFrame."""
    return (
        not is_frame(X)
        and getattr(X, "ndim", None) == 1
        and hasattr(X, "name")
        and hasattr(X, "to_numpy")
        and (type(X).__module__ or "").startswith("pandas")
    )


def as_samples(X, model, name="X", min_samples=2) -> np.ndarray:
    """Validate in-memory samples → C-contiguous float64 (N, d).

    Accepts a NumPy array (N, d) in ``model.state`` column order or a pandas
    DataFrame whose columns include the state names (order and extra columns
    do not matter), or an AnnData whose ``var_names`` include them (:func:`from_anndata`).
    A pandas Series is one column: a named one is read by its name (it must name the state
    variable of a 1-state model), an unnamed one (name None) as a 1-D array.
    """
    if is_anndata(X):
        return from_anndata(X, model, name=name, min_samples=min_samples)
    if isinstance(X, np.ndarray):
        refuse_structured(X.dtype, model, name)
    if is_frame(X):
        arr = _from_frame(X, model, name)
    elif is_series(X) and X.name is not None:
        arr = _from_series(X, model, name)
    else:
        refuse_ragged_rows(X, model, name)
        arr = float_array(X, name, columns=model.state_names)
    if arr.ndim == 1 and model.d == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise DataError(f"{name}: expected a 2-D array (N, {model.d}), got {arr.ndim} dimension(s)")
    if arr.shape[1] != model.d:
        turned = (
            f"; it looks transposed (rows are samples): pass {name}.T"
            if (arr.shape[0] == model.d and arr.shape[1] > model.d)
            else ""
        )
        raise DataError(
            f"{name}: has {arr.shape[1]} columns but model {model.name!r} has "
            f"{model.d} state variables ({', '.join(model.state_names)}){turned}"
        )
    check_finite(arr, name)
    if arr.shape[0] < min_samples:
        raise DataError(f"{name}: {arr.shape[0]} sample(s); at least {min_samples} are needed")
    return np.ascontiguousarray(arr)


def refuse_ragged_rows(X, model, name):
    """A DataError for a list of rows of different lengths (NumPy's message was "setting an
    array element with a sequence. The requested array has an inhomogeneous shape …")."""
    if not isinstance(X, (list, tuple)) or len(X) < 2:
        return
    lists = all(isinstance(r, (list, tuple)) for r in X)  # (the common case: rows only)
    row = [True] * len(X) if lists else [_is_row(r) for r in X]
    number = [False] * len(X) if lists else [_is_number(r) for r in X]
    if any(row) and any(number):  # [[0, 0], 1]: rows and single numbers
        i = next(i for i in range(len(X)) if (row[i] or number[i]) and row[i] != row[0])
        kinds = ("one number", "a row")
        raise DataError(
            f"{name}: mixes rows and single numbers: row {i} is {kinds[row[i]]}, row 0 "
            f"{kinds[row[0]]}; give one row per point with one value per state variable of "
            f"model {model.name!r} ({', '.join(model.state_names)})"
        )
    sizes = [
        len(r) if isinstance(r, (list, tuple)) or (isinstance(r, np.ndarray) and r.ndim) else None
        for r in X
    ]
    first = sizes[0]
    for i, n in enumerate(sizes):
        if n != first and None not in (n, first):
            raise DataError(
                f"{name}: rows of different lengths: row {i} has {n} value(s), row 0 has "
                f"{first}; every row holds one value per state variable of model "
                f"{model.name!r} ({', '.join(model.state_names)})"
            )


def _is_row(value):
    """A row of values: a list, tuple, range, pandas Series or an array of at least one axis."""
    if isinstance(value, np.ndarray):
        return value.ndim >= 1
    return isinstance(value, (list, tuple, range)) or type(value).__name__ == "Series"


def _is_number(value):
    """A single real number (a Python or NumPy scalar, a 0-d array); anything else that is not a
    row (None, text, a Decimal, a SymPy number) is left to the conversion's own messages."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "iuf"
    return isinstance(value, (int, float, np.integer, np.floating))


def is_anndata(X):
    return type(X).__name__ == "AnnData" and (type(X).__module__ or "").startswith("anndata")


def from_anndata(adata, model, var_names=None, layer=None, name="X", min_samples=2) -> np.ndarray:
    """The model's state columns of an AnnData object → validated float64 (N, d).

    Parameters
    ----------
    adata : anndata.AnnData
        Cells × variables (genes, proteins ...).
    model : SDEModel
    var_names : None, sequence of str (length d) or dict
        Which variables are the state: None → the variables named like the state variables;
        a sequence → the variables in ``model.state`` order; a dict ``{state name: var name}``
        (state variables not in it keep their own name).
    layer : str, optional
        Read ``adata.layers[layer]`` instead of ``adata.X``.

    Returns
    -------
    (N, d) array in ``model.state`` order.  Dense or sparse storage; only the chosen
    columns are densified.
    """
    if not is_anndata(adata):
        raise DataError(f"{name}: expected an anndata.AnnData, got {type(adata).__name__}")
    states = model.state_names
    if var_names is None:
        chosen = list(states)
    elif isinstance(var_names, dict):
        unknown = [k for k in var_names if str(k) not in states]
        if unknown:
            raise DataError(
                f"{name}: var_names key {str(unknown[0])!r} is not a state variable of "
                f"{model.name!r} ({', '.join(states)})"
            )
        chosen = [
            str(var_names.get(s, var_names.get(sym, s))) for s, sym in zip(states, model.state)
        ]
    else:
        chosen = [str(v) for v in var_names]
        if len(chosen) != model.d:
            raise DataError(
                f"{name}: var_names has {len(chosen)} entries, model {model.name!r} has "
                f"{model.d} state variables ({', '.join(states)})"
            )
    available = [str(v) for v in adata.var_names]
    index = {v: i for i, v in enumerate(available)}
    for s, v in zip(states, chosen):
        if available.count(v) > 1:  # the index would keep the last copy without a word
            raise DataError(
                f"{name}: AnnData has {available.count(v)} variables named {v!r} (state variable "
                f"{s!r}); make var_names unique (adata.var_names_make_unique()) or pass var_names="
            )
        if v not in index:
            shown = ", ".join(available[:10]) + (" ..." if len(available) > 10 else "")
            raise DataError(
                f"{name}: AnnData has no variable {v!r} for state variable {s!r} "
                f"(var_names: {shown}); pass var_names= to choose the state columns"
            )
    if layer is None:
        mat = adata.X
    else:
        if layer not in adata.layers:
            raise DataError(
                f"{name}: AnnData has no layer {layer!r} (layers: "
                f"{', '.join(adata.layers.keys()) or 'none'})"
            )
        mat = adata.layers[layer]
    if mat is None:
        raise DataError(f"{name}: AnnData.X is empty; pass layer=")
    cols = mat[:, [index[v] for v in chosen]]
    if hasattr(cols, "toarray"):  # scipy.sparse
        cols = cols.toarray()
    cols = float_array(cols, name, columns=chosen)
    return as_samples(cols, model, name, min_samples=min_samples)


def check_finite(arr, name, offset=0):
    """Raise DataError naming the rows (counted from ``offset``) that hold NaN or inf."""
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        shown = ", ".join(str(int(r) + offset) for r in rows[:5]) + (
            " ..." if rows.size > 5 else ""
        )
        raise DataError(f"{name}: {rows.size} row(s) contain NaN or inf (rows {shown})")


def validate_rows(raw, d, name="X", offset=0, columns=None) -> np.ndarray:
    """Rows ``offset …`` of a streamed input → C-contiguous float64 (n, d), checked finite.

    Used for reads from files, Zarr/HDF5 arrays and dask chunks (also on Dask workers),
    where the columns are already in ``model.state`` order (``columns``: their names, for the
    messages).
    """
    if isinstance(raw, np.ndarray):
        refuse_structured(raw.dtype, None, name)
    arr = float_array(raw, name, columns=columns, offset=offset)
    if arr.ndim == 1 and d == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != d:
        raise DataError(f"{name}: rows from {offset} have shape {arr.shape}, expected (n, {d})")
    check_finite(arr, name, offset=offset)
    return np.ascontiguousarray(arr)
