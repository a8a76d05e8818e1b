"""Experimental designs beyond one stationary snapshot (the data side): several environments
with known inputs, and time courses.

* :class:`TimeCourse` — unpaired snapshots ``{t: X_t}`` at known times after a change (the same
  system, time-homogeneous dynamics from the first snapshot time on);
* :func:`split_by` — rows of a DataFrame (or of an AnnData, by an ``.obs`` column) grouped by the
  value of a column: one environment (or one time) per value;
* :func:`as_design` — every accepted form of design data (a dict of environments, a TimeCourse,
  an environment or time column) with its ``inputs=`` normalised into :class:`Environment`
  records, checked against the model (every input given in every environment, no unknown
  environment or input).

The linear algebra of a design (stacking, quadrature, noise groups) lives in
:mod:`dynosed_sym.assembly.designs`; the fits in :mod:`dynosed_sym.routes.designs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..arguments import float_array
from ..errors import DataError, ModelError
from .arrays import is_anndata, is_frame

__all__ = [
    "TimeCourse",
    "Environment",
    "Design",
    "split_by",
    "as_design",
    "is_design_data",
    "SINGLE_ENV",
]

#: Name of the environment when the data hold only one (a TimeCourse, or one array with inputs).
SINGLE_ENV = "data"


class TimeCourse:
    """Unpaired snapshots of one system at known times after a change.

    Each snapshot is an independent sample of the law p(·, t_k) (different cells at different
    times, as in most single-cell time courses).  The dynamics must be time-homogeneous from the
    first snapshot time on (a step change of the inputs at or before it).

    Parameters
    ----------
    snapshots : dict
        ``{t: X_t}``: a time (float) and its samples (an (N_t, d) array, a DataFrame with the
        state names as columns, or an AnnData), at least two snapshots.  Times are sorted; they
        may be unevenly spaced.

    Attributes
    ----------
    times : (K,) float array, increasing
    snapshots : list
        The samples in time order (as given; validated against a model when fitted).
    """

    def __init__(self, snapshots):
        if isinstance(snapshots, TimeCourse):
            snapshots = dict(zip(snapshots.times.tolist(), snapshots.snapshots))
        if not isinstance(snapshots, dict):
            raise DataError(
                f"TimeCourse: expected a dict {{time: samples}}, got {type(snapshots).__name__}"
            )
        items = []
        for t, X in snapshots.items():
            if np.ndim(t) != 0:
                raise DataError(f"TimeCourse: time {t!r} is not a number")
            tf = float(float_array(t, f"TimeCourse: time {t!r}"))
            if not math.isfinite(tf):
                raise DataError(f"TimeCourse: time {t!r} is not finite")
            if X is None:
                raise DataError(f"TimeCourse: no samples at time {t!r}")
            items.append((tf, X))
        if len(items) < 2:
            raise DataError(
                f"TimeCourse: {len(items)} snapshot(s); a time course needs at least 2 times"
            )
        items.sort(key=lambda it: it[0])
        times = np.array([t for t, _ in items])
        if np.any(np.diff(times) <= 0):
            k = int(np.flatnonzero(np.diff(times) <= 0)[0])
            raise DataError(f"TimeCourse: time {times[k]!r} is given twice")
        _times_apart(times)
        self.times = times
        self.times.setflags(write=False)
        self.snapshots = [X for _, X in items]

    @classmethod
    def from_frame(cls, data, time_column):
        """Snapshots from the rows of a DataFrame (or AnnData ``.obs``) grouped by a time column."""
        parts = split_by(data, time_column, numeric=True)
        return cls({float(k): v for k, v in parts.items()})

    def __len__(self):
        return len(self.snapshots)

    def items(self):
        return zip(self.times.tolist(), self.snapshots)

    def __repr__(self):
        shown = ", ".join(f"{t:g}" for t in self.times[:8]) + (" ..." if len(self) > 8 else "")
        return f"TimeCourse({len(self)} snapshots at t = {shown})"


#: Consecutive times must differ by this many rounding units of a double at their size: their
#: difference Δ is then known to TIME_DIGITS significant digits, the digits a fit reports (the
#: time-course rows scale with 1/Δ, so θ̂ carries Δ's relative error).
TIME_DIGITS = 6
TIME_SEPARATION = 10.0**TIME_DIGITS * np.finfo(float).eps


def _times_apart(times):
    """A DataError naming two consecutive times whose difference is lost in rounding."""
    gap = np.diff(times)
    floor = TIME_SEPARATION * np.maximum(np.abs(times[:-1]), np.abs(times[1:]))
    if np.all(gap >= floor):
        return
    k = int(np.flatnonzero(gap < floor)[0])
    t0, t1 = float(times[k]), float(times[k + 1])
    raise DataError(
        f"TimeCourse: times {t0!r} and {t1!r} differ by {gap[k]:.3g}, less than "
        f"{TIME_SEPARATION:.3g} of their size (1e{TIME_DIGITS} rounding units of a double): "
        f"their difference is known to fewer than {TIME_DIGITS} significant digits, and a fit "
        f"divides the change between the two snapshots by it; if they are one time, merge the "
        "two snapshots, else give times that keep the difference (e.g. subtract the first time "
        "before converting them to floats)"
    )


def _column_values(data, column, name):
    """The values of ``column`` (N,) for a DataFrame or an AnnData (``.obs``)."""
    if is_anndata(data):
        obs = data.obs
        if column not in obs.columns:
            raise DataError(
                f"{name}: AnnData.obs has no column {column!r} (columns: "
                f"{', '.join(map(str, obs.columns)) or 'none'})"
            )
        return np.asarray(obs[column])
    if is_frame(data):
        if column not in data.columns:
            raise DataError(
                f"{name}: DataFrame has no column {column!r} (columns: "
                f"{', '.join(map(str, data.columns))})"
            )
        return np.asarray(data[column])
    raise DataError(
        f"{name}: a column {column!r} needs a DataFrame or an AnnData, got {type(data).__name__}"
    )


def split_by(data, column, numeric=False, name="X"):
    """Rows of ``data`` grouped by the value of ``column``, in order of first appearance.

    Parameters
    ----------
    data : pandas.DataFrame or anndata.AnnData
        For an AnnData the column is looked up in ``.obs``.
    column : str
    numeric : bool
        The values must be finite numbers (a time column).

    Returns
    -------
    dict ``{value: rows}`` (keys ``str(value)`` unless ``numeric``), each a DataFrame / AnnData
    view with the rows of that value in their original order.
    """
    vals = _column_values(data, column, name)
    if vals.size == 0:
        raise DataError(f"{name}: no rows")
    if numeric:
        num = float_array(vals, name, columns=[str(column)])
        if not np.isfinite(num).all():
            raise DataError(f"{name}: column {column!r} holds NaN or inf")
        keys = num
    else:
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals.tolist()):
            raise DataError(f"{name}: column {column!r} has missing values")
        keys = np.array([str(v) for v in vals.tolist()], dtype=object)
    _, first = np.unique(keys, return_index=True)
    out = {}
    for i in np.sort(first):
        key = keys[i]
        mask = keys == key
        part = data[mask] if is_anndata(data) else data.loc[mask]
        out[float(key) if numeric else str(key)] = part
    return out


@dataclass
class Environment:
    """One environment of a design.

    Attributes
    ----------
    name : str
    data : object
        Stationary samples (anything :func:`dynosed_sym.fit_global` accepts) or a
        :class:`TimeCourse`.
    inputs : (k,) float array
        Values of ``model.inputs`` in this environment (shape (0,) for a model without inputs).
    input_names : tuple of str
    """

    name: str
    data: object
    inputs: np.ndarray
    input_names: tuple = ()

    @property
    def input_dict(self):
        """``{input name: value}``."""
        return dict(zip(self.input_names, np.asarray(self.inputs, dtype=float).tolist()))

    @property
    def kind(self):
        return "timecourse" if isinstance(self.data, TimeCourse) else "stationary"

    @property
    def n_groups(self):
        return len(self.data) if isinstance(self.data, TimeCourse) else 1


@dataclass
class Design:
    """Environments of a design, in order (names unique)."""

    envs: list
    single: bool = False
    notes: list = field(default_factory=list)

    @property
    def names(self):
        return [e.name for e in self.envs]

    @property
    def has_time_course(self):
        return any(e.kind == "timecourse" for e in self.envs)


def is_design_data(X):
    """True for data that describe a design: a dict of environments or a TimeCourse."""
    return isinstance(X, (dict, TimeCourse))


def _refuse_columns_as_environments(X, model):
    """DataError for a dict of columns named by the state variables (``{"x": xs, "y": ys}``, a
    natural way to hold one data set): a dict is read as environments, and each 1-D column
    gave "X['x']: expected a 2-D array (N, 2)", blaming the column for being a column."""
    if model.d < 2 or not set(X) <= set(model.state_names):
        return
    if all(not isinstance(v, (dict, TimeCourse)) and np.ndim(v) == 1 for v in X.values()):
        keys = ", ".join(repr(k) for k in X)
        raise DataError(
            f"X: a dict with keys {keys}, state variables of model {model.name!r}, each "
            "holding one column: a dict is read as the environments of a design ({environment: "
            "samples (N, d)}); for the columns of one data set pass pandas.DataFrame(X)"
        )


_COLUMN_ROLES = {
    "env_column": "each row's environment (a label such as 'A', 'B')",
    "time_column": "each row's snapshot time",
}


def refuse_state_column(model, column, option, role):
    """DataError when the column ``option`` names (``role``: "env_column" or "time_column") is
    a state variable of ``model``: its values were split into one environment or snapshot per
    distinct number, and the error named the first, "X['0.1257302210933933']: 1 sample(s)"."""
    if column is not None and str(column) in model.state_names:
        raise DataError(
            f"{option}={column!r} is state variable {column} of model {model.name!r}, whose "
            f"values the fit reads as data: {option} names the column that holds "
            f"{_COLUMN_ROLES[role]}, another column than the state variables "
            f"({', '.join(model.state_names)})"
        )


def _number(label):
    try:
        return float(label)
    except (TypeError, ValueError):
        return None


def _environment_of(key, names):
    """The environment an ``inputs`` key names: its text, or the one environment whose label is
    the same number (an environment column read as floats labels its rows "1.0", which
    ``inputs={1: …}`` means); the key's text when none is."""
    text = str(key)
    if text in names:
        return text
    value = _number(text)
    same = [nm for nm in names if value is not None and _number(nm) == value]
    return same[0] if len(same) == 1 else text


def _per_env_inputs(model, inputs, names):
    """Normalise ``inputs`` to {env: vector}; a plain {input: value} dict is one environment's."""
    k = len(model.inputs)
    if inputs is None:
        if k:
            raise ModelError(
                f"model {model.name!r} has inputs ({', '.join(model.input_names)}): pass their "
                "values with inputs= (one dict per environment)"
            )
        return {nm: np.zeros(0) for nm in names}
    if not isinstance(inputs, dict):
        raise ModelError(
            f"inputs: expected a dict ({{environment: {{input: value}}}}), got "
            f"{type(inputs).__name__}"
        )
    nested = bool(inputs) and all(isinstance(v, dict) for v in inputs.values())
    if not nested:
        if len(names) != 1:
            raise ModelError(
                "inputs: with several environments give one dict per environment: "
                f"inputs={{{', '.join(repr(n) + ': {...}' for n in names[:3])}}}"
            )
        return {names[0]: model.input_vector(inputs, "inputs")}
    keys = {}
    for key, val in inputs.items():
        name = _environment_of(key, names)
        if name in keys:
            raise ModelError(
                f"inputs: environment {name!r} is given twice (as {key!r} and as another label "
                "of the same number); give each environment once"
            )
        keys[name] = val
    unknown = [key for key in keys if key not in names]
    if unknown:
        shown = ", ".join(names[:10]) + (f", … ({len(names)} in all)" if len(names) > 10 else "")
        raise ModelError(f"inputs: environment {unknown[0]!r} has no data (environments: {shown})")
    out = {}
    for nm in names:
        if nm not in keys:
            if k == 0:
                out[nm] = np.zeros(0)
                continue
            raise ModelError(f"inputs: no values for environment {nm!r}")
        out[nm] = model.input_vector(keys[nm], f"inputs[{nm!r}]")
    return out


def as_design(X, model, inputs=None, env_column=None, time_column=None):
    """Normalise design data into a :class:`Design`, or None for one plain stationary snapshot.

    Parameters
    ----------
    X : samples, TimeCourse, or dict ``{environment: samples or TimeCourse}``
    model : SDEModel
    inputs : dict, optional
        ``{environment: {input: value}}``, or ``{input: value}`` for data with one environment.
    env_column : str, optional
        X is a DataFrame / AnnData whose column (``.obs`` column) names the environment of
        each row.
    time_column : str, optional
        The column holding each row's time: every environment becomes a :class:`TimeCourse`.

    Returns
    -------
    Design or None
        None when X is one stationary snapshot of a model without inputs and without env
        parameters (the plain route).
    """
    refuse_state_column(model, env_column, "env_column", "env_column")
    refuse_state_column(model, time_column, "time_column", "time_column")
    if env_column is not None:
        if is_design_data(X):
            raise DataError("env_column= needs X as one DataFrame or AnnData, not a dict")
        X = split_by(X, env_column, name="X")
    if time_column is not None:
        if isinstance(X, TimeCourse):
            raise DataError("time_column= needs DataFrames or AnnData, not a TimeCourse")
        if isinstance(X, dict):
            X = {k: TimeCourse.from_frame(v, time_column) for k, v in X.items()}
        else:
            X = TimeCourse.from_frame(X, time_column)
    if not is_design_data(X) or isinstance(X, TimeCourse):
        if not isinstance(X, TimeCourse) and not model.inputs and not model.env_params:
            if inputs:
                raise ModelError(
                    f"inputs: model {model.name!r} declares no inputs (SDEModel(..., inputs=[...]))"
                )
            return None
        X = {SINGLE_ENV: X}
        single = True
    else:
        single = False
        if not X:
            raise DataError("X: an empty dict of environments")
        X = {str(k): v for k, v in X.items()}
        _refuse_columns_as_environments(X, model)
        if len(X) == 1:
            single = True
    names = list(X)
    for nm in names:
        if X[nm] is None:
            raise DataError(f"X[{nm!r}]: no samples")
        if isinstance(X[nm], dict):
            X[nm] = TimeCourse(X[nm])
    u = _per_env_inputs(model, inputs, names)
    return Design(
        [Environment(nm, X[nm], u[nm], tuple(model.input_names)) for nm in names], single=single
    )
