"""The subcommand ``fit`` (one data set, or several environments: :mod:`.designs`)."""

from __future__ import annotations

import json
import time

import click

from ...errors import NotAffineError
from .app import main
from .designs import fit_design
from .io import _echo_json, _load_data, _load_model, _out_folder, _refuse_overwrite
from .options import (
    count_option,
    feature_options,
    features_from,
    file_option,
    input_option,
    model_argument,
    probes_from,
    progress_option,
    refuse_ignored_options,
    route_option,
    score_options,
    scores_from,
    seed_option,
    solver_from,
    solver_options,
)


@main.command()
@model_argument
@click.argument(
    "data_files",
    metavar="DATA...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False),
)
@input_option(
    "[ENV:]NAME=VALUE[,...]",
    "Known input values of an environment (repeatable; see docs/designs.md). Several DATA "
    "files are environments named after the files; without ENV: the k-th --input goes with the "
    "k-th environment.",
)
@click.option("--env-column", default=None, help="Column of DATA naming each row's environment.")
@click.option(
    "--time-column",
    default=None,
    help="[global] Column holding each row's time: a time course per environment.",
)
@count_option(
    "--order",
    minimum=2,
    maximum=4,
    help="[global] Quadrature order of time courses [default: 4 with ≥ 4 snapshots].",
)
@route_option(
    "global: kernel-Stein discrepancy over all samples; local: Fokker–Planck residuals "
    "at probe points with estimated scores."
)
@seed_option(
    "Seeds the random features (global) or the probe choice (local), and the perturbed --starts."
)
@count_option(
    "--n-blocks",
    minimum=0,
    default=32,
    help="Data blocks behind the noise estimates (standard errors, rank, consistency).",
)
@feature_options
@score_options
@solver_options
@click.option(
    "--show-nominal", is_flag=True, help="Show the model's nominal values beside the estimates."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the result as JSON instead of a table."
)
@file_option("-o", "--out", help="Also write the per-parameter results to a .json or .csv file.")
@progress_option()
def fit(model_file, data_files, **opts):
    """Fit the parameters of MODEL to the unordered samples in DATA (.npy, .csv or .parquet).

    .csv/.parquet columns are matched to the state variables by name (order and extra columns do not
    matter); .npy columns must be in the model's state order.  Prints a table: estimate, standard
    error, confidence interval, freeness and whether each parameter is identifiable, then the rank,
    the unresolved combinations and the consistency of the model with the data.

    Several DATA files (or --env-column) are environments of one design with shared parameters,
    e.g. ``dynosed fit model.py A.csv B.csv --input s=1 --input s=3`` (docs/designs.md).
    """
    from ...options import Execution

    out = opts["out"]
    if out is not None and not str(out).lower().endswith((".json", ".csv")):
        raise click.BadParameter(f"{out!r}: expected a .json or .csv file", param_hint="--out")
    _out_folder(out)
    _refuse_overwrite(out, (model_file, *data_files))
    refuse_ignored_options(opts)
    features = features_from(opts, opts["seed"])
    scores = scores_from(opts) if opts["route"] == "local" else None
    model = _load_model(model_file)
    if opts["show_nominal"] and model.nominal is None:
        raise click.UsageError(f"{model_file} gives no nominal values to show (--show-nominal)")
    solver = solver_from(opts, model, opts["seed"])
    execution = Execution(n_blocks=opts["n_blocks"], progress=opts["progress"])
    t0 = time.perf_counter()
    data_file = data_files[0] if len(data_files) == 1 else ", ".join(data_files)
    design = (
        len(data_files) > 1
        or opts["env_column"] is not None
        or opts["time_column"] is not None
        or bool(opts["input_items"])
        or bool(model.inputs)
        or bool(model.env_params)
    )
    try:
        if design:
            result = fit_design(model, data_files, opts, features, scores, solver, execution)
        elif opts["route"] == "global":
            result = _fit_global(model, data_file, features, solver, execution)
        else:
            result = _fit_local(model, data_file, opts, scores, solver, execution)
    except NotAffineError as exc:
        # the library asks for ``theta0=``: name the option a terminal user can pass instead
        if solver.theta0 is not None or "theta0=" not in str(exc):
            raise
        what = " ".join(str(exc).split("; the gradient solver needs")[0].split())
        raise click.UsageError(
            f"{what}; the gradient solver needs a starting point: pass --theta0 "
            f"NAME=VALUE for each parameter ({', '.join(model.param_names)})"
        ) from None
    _report(result, model, data_file, opts, time.perf_counter() - t0)


def _fit_global(model, data_file, features, solver, execution):
    """``fit --route global`` on one data file."""
    from ...codegen.loading import compile_model
    from ...routes import fit_global

    # the gradient solver needs the samples in memory; the linear one streams a .npy file
    gradient = solver.method == "gradient" or (
        solver.method is None and not compile_model(model).is_affine
    )
    X = _load_data(data_file, model, in_memory=gradient)
    if not isinstance(X, str):  # a table or array in memory: messages name the file
        from ...data import as_samples

        X = as_samples(X, model, data_file)
    return fit_global(model, X, features=features, solver=solver, execution=execution)


def _fit_local(model, data_file, opts, scores, solver, execution):
    """``fit --route local`` on one data file: probes chosen in the data (balls with --radius)."""
    from ...data import as_samples
    from ...routes import fit_local
    from ...routes.probes import Balls

    X = as_samples(_load_data(data_file, model, in_memory=True), model, data_file)
    radius = opts["radius"]
    probes = probes_from(X, opts, data_file)  # --radius: the dense method's and the balls'
    if radius is not None:
        probes = Balls(probes, radius)
        X = probes.restrict(X)
    return fit_local(model, X, probes, scores=scores, solver=solver, execution=execution)


def _report(result, model, data_file, opts, elapsed):
    """The table (or JSON) on standard output, and the --out file."""
    truth = model.nominal if opts["show_nominal"] else None
    out = opts["out"]
    if out is not None:
        if str(out).lower().endswith(".json"):
            result.to_json(out, truth=truth)
        else:
            result.to_dataframe(truth=truth).to_csv(out)
    if opts["as_json"]:
        rec = json.loads(result.to_json(truth=truth))
        rec["data"] = data_file
        rec["seconds"] = elapsed
        _echo_json(rec)
        return
    click.echo(result.summary(truth=truth))
    click.echo(
        f"\n({data_file}: {result.n_samples:,} samples; {elapsed:.1f} s"
        + (f"; results written to {out}" if out else "")
        + ")"
    )
