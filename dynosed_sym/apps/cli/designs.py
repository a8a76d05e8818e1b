"""Designs on the command line: several data files or an environment column, ``--input`` values
per environment, a time column; and the design check (``dynosed check --input A:s=1 …``).

``--input`` forms (repeatable):

* ``ENV:NAME=VALUE[,NAME=VALUE…]`` — values of environment ENV (a data file's stem, or a value
  of the environment column);
* ``NAME=VALUE[,NAME=VALUE…]`` — with one environment, its values; with several, the k-th such
  option belongs to the k-th environment (the order of the DATA files, or of first appearance in
  the environment column).
"""

from __future__ import annotations

import os

import click
import numpy as np

from .io import _load_data
from .options import probes_from

__all__ = ["parse_inputs", "design_data", "parse_floats", "fit_design", "check_design"]


def _assignments(text, option):
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise click.BadParameter(
                f"expected [ENV:]NAME=VALUE[,NAME=VALUE], got {text!r}", param_hint=option
            )
        name, _, val = part.partition("=")
        if name.strip() in out:
            raise click.BadParameter(
                f"{name.strip()!r} is given twice in {text!r}; give each input once",
                param_hint=option,
            )
        try:
            out[name.strip()] = float(val)
        except ValueError:
            raise click.BadParameter(
                f"value of {name.strip()!r} is not a number: {val!r}", param_hint=option
            ) from None
    return out


def _merge(into, new, where, option):
    """``into.update(new)``, refusing a name ``into`` already holds (the last value won)."""
    for name, value in new.items():
        if name in into and into[name] != value:
            raise click.BadParameter(
                f"{name!r} is given twice{where} ({into[name]:g} and {value:g}); give each "
                "input once",
                param_hint=option,
            )
        into[name] = value
    return into


def parse_inputs(items, env_names, option="--input"):
    """``--input`` items → {env: {name: value}} (see the module docstring), or None."""
    if not items:
        return None
    named, positional = {}, []
    for item in items:
        head, sep, rest = item.partition(":")
        if sep and "=" not in head:
            env = head.strip()
            if env_names is not None and env not in env_names:
                raise click.BadParameter(
                    f"{env!r} is not an environment ({', '.join(env_names)})", param_hint=option
                )
            _merge(named.setdefault(env, {}), _assignments(rest, option), f" for {env}", option)
        else:
            positional.append(_assignments(item, option))
    if env_names is None:  # the design check: environments are named by --input itself
        if positional and named:
            raise click.BadParameter(
                "give every --input as ENV:NAME=VALUE, or none (one environment)",
                param_hint=option,
            )
        if positional:
            merged = {}
            for p in positional:
                _merge(merged, p, "", option)
            return merged
        return named
    if len(env_names) == 1:
        merged = dict(named.get(env_names[0], {}))
        for p in positional:
            _merge(merged, p, "", option)
        return {env_names[0]: merged}
    if positional:
        if len(positional) != len(env_names):
            raise click.BadParameter(
                f"{len(positional)} --input option(s) without ENV: for {len(env_names)} "
                f"environments ({', '.join(env_names)}); give one per environment or write "
                "ENV:NAME=VALUE",
                param_hint=option,
            )
        for env, p in zip(env_names, positional):
            _merge(named.setdefault(env, {}), p, f" for {env}", option)
    return named


def design_data(files, model, env_column, time_column):
    """DATA files → ({env: data}, env names) for a design, or (data, None) for one plain file."""
    from ...data.designs import refuse_state_column, split_by
    from ...errors import DataError

    for option, column in (("--env-column", env_column), ("--time-column", time_column)):
        try:
            refuse_state_column(model, column, option, option[2:].replace("-", "_"))
        except DataError as exc:
            raise click.BadParameter(str(exc), param_hint=option) from None
    if len(files) == 1 and env_column is None:
        data = _load_data(files[0], model, in_memory=True)
        return _with_column(data, time_column, "--time-column", files[0]), ["data"]
    if env_column is not None:
        if len(files) != 1:
            raise click.UsageError("--env-column takes one DATA file (the column names the rows)")
        frame = _load_data(files[0], model, in_memory=True)
        if isinstance(frame, np.ndarray):
            raise click.UsageError("--env-column needs a .csv or .parquet DATA file")
        for option, column in (("--env-column", env_column), ("--time-column", time_column)):
            _with_column(frame, column, option, files[0])
        parts = split_by(frame, env_column, name=files[0])
        return parts, list(parts)
    names = []
    for f in files:
        stem = os.path.splitext(os.path.basename(f))[0]
        if stem in names:
            raise click.UsageError(
                f"two DATA files are named {stem!r}: environments are named after the files"
            )
        names.append(stem)
    frames = [_load_data(f, model, in_memory=True) for f in files]
    for frame, f in zip(frames, files):
        _with_column(frame, time_column, "--time-column", f)
    return dict(zip(names, frames)), names


def _with_column(frame, column, option, path):
    """``frame``, after checking that a table holds the column an option names (the error
    named X or DATA, not the file)."""
    from ...errors import DataError

    if column is None or isinstance(frame, np.ndarray) or column in frame.columns:
        return frame
    shown = ", ".join(str(c) for c in frame.columns)
    raise DataError(f"{path}: no column {column!r} for {option} (columns: {shown})")


def parse_floats(text, option):
    """``"0,0.2,0.4"`` → list of floats."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(
            f"expected numbers separated by commas, got {text!r}", param_hint=option
        ) from None


def fit_design(model, files, opts, features, scores, solver, execution):
    """The design branch of ``fit``: several DATA files, --env-column, --time-column or --input
    (``opts``: the command's options; the option objects built from them)."""
    from ...data import as_samples
    from ...routes import fit_global, fit_local

    if solver.method == "gradient" or solver.theta0 is not None:
        raise click.UsageError("designs (several environments, time courses) use the linear solver")
    env_column, time_column = opts["env_column"], opts["time_column"]
    data, names = design_data(files, model, env_column, time_column)
    inputs = parse_inputs(opts["input_items"], names)
    if inputs is not None and not isinstance(data, dict):
        inputs = inputs[names[0]]
    objects = dict(solver=solver, execution=execution)
    if opts["route"] == "global":
        return fit_global(
            model,
            data,
            inputs=inputs,
            time_column=time_column,
            order=opts["order"],
            features=features,
            **objects,
        )
    if time_column is not None:
        raise click.UsageError(
            "--time-column with --route local: use the Python API (ds.fit_local with a TimeCourse)"
        )
    parts = data if isinstance(data, dict) else {names[0]: data}
    probes = {
        e: probes_from(
            as_samples(X, model, f"DATA[{e}]"),
            opts,
            f"environment {e!r}" if isinstance(data, dict) else files[0],
        )
        for e, X in parts.items()
    }
    if not isinstance(data, dict):
        probes = probes[names[0]]
    return fit_local(model, data, probes, inputs=inputs, scores=scores, **objects)


def check_design(model, nominal, opts, simulate, study, features):
    """The design branch of ``check``: environments from ``--input ENV:…``, a time course from
    ``--times`` with a Gaussian initial law (``--initial-mean``, ``--initial-var``)."""
    from ...identifiability import Experiment, check_identifiability

    times, initial_mean, initial_var = opts["times"], opts["initial_mean"], opts["initial_var"]
    inputs = parse_inputs(opts["input_items"], None)
    if inputs == {}:
        inputs = None
    ts = parse_floats(times, "--times") if times else None
    initial = None
    if ts is not None:
        if initial_mean is None or initial_var is None:
            raise click.UsageError("--times needs --initial-mean and --initial-var (law at t = 0)")
        mean = parse_floats(initial_mean, "--initial-mean")
        if len(mean) != model.d:
            raise click.BadParameter(
                f"expected {model.d} values, got {len(mean)}", param_hint="--initial-mean"
            )
        initial = (np.array(mean), float(initial_var) * np.eye(model.d))
    candidates = [_assignments(c, "--candidate") for c in opts["candidate_items"]] or None
    experiment = Experiment(
        inputs=inputs,
        times=ts,
        initial=initial,
        advise=not opts["no_advise"],
        candidates=candidates,
    )
    return check_identifiability(
        model,
        nominal,
        simulate=simulate,
        study=study,
        experiment=experiment,
        features=features,
    )
