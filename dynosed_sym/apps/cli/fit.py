"""The subcommand ``fit`` (one data set, or several environments: :mod:`.designs`)."""

from __future__ import annotations

import json
import time

import click

from ...errors import NotAffineError
from .app import main
from .designs import fit_design
from .io import (
    _echo_json,
    _full_theta,
    _load_data,
    _load_model,
    _parse_prior_scale,
    _refuse_overwrite,
)


@main.command()
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.argument(
    "data_files",
    metavar="DATA...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False),
)
@click.option(
    "--input",
    "input_items",
    multiple=True,
    metavar="[ENV:]NAME=VALUE[,...]",
    help="Known input values of an environment (repeatable; see docs/designs.md). Several DATA "
    "files are environments named after the files; without ENV: the k-th --input goes with the "
    "k-th environment.",
)
@click.option("--env-column", default=None, help="Column of DATA naming each row's environment.")
@click.option(
    "--time-column",
    default=None,
    help="[global] Column holding each row's time: a time course per environment.",
)
@click.option(
    "--order",
    type=click.IntRange(2, 4),
    default=None,
    help="[global] Quadrature order of time courses [default: 4 with ≥ 4 snapshots].",
)
@click.option(
    "--route",
    type=click.Choice(["global", "local"]),
    default="global",
    show_default=True,
    help="global: kernel-Stein discrepancy over all samples; local: Fokker–Planck residuals "
    "at probe points with estimated scores.",
)
@click.option(
    "--lam",
    type=click.FloatRange(min=0),
    default=1e-6,
    show_default=True,
    help="Tikhonov regularisation λ.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seeds the random features (global) or the probe choice (local), and the perturbed "
    "--starts.",
)
@click.option(
    "--n-blocks",
    type=click.IntRange(min=0),
    default=32,
    show_default=True,
    help="Data blocks behind the noise estimates (standard errors, rank, consistency).",
)
@click.option(
    "--features",
    "n_features",
    type=click.IntRange(min=1),
    default=2048,
    show_default=True,
    help="[global] Random Fourier features m.",
)
@click.option(
    "--bandwidth",
    default="median",
    show_default=True,
    help="[global] Kernel length scale ℓ: 'median' or a positive number.",
)
@click.option(
    "--probes",
    "n_probes",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="[local] Number of probe points chosen in the data.",
)
@click.option(
    "--probe-method",
    type=click.Choice(["random", "kmeans", "dense"]),
    default="random",
    show_default=True,
    help="[local] How probes are chosen (dense needs --radius).",
)
@click.option(
    "--radius",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="[local] Ball radius around each probe; the data are restricted to the balls "
    "(needed by --score score_matching).",
)
@click.option(
    "--temperature",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="[local] Precision T of the Gaussian score kernel (default: chosen from the data "
    "around the probes).",
)
@click.option(
    "--score",
    type=click.Choice(["kernel", "local_gaussian", "score_matching"]),
    default="kernel",
    show_default=True,
    help="[local] Score estimator.",
)
@click.option(
    "--theta0",
    "theta0_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="Starting value of the gradient solver (repeatable; unspecified ones take the model's "
    "nominal value). Needed for a model not affine in its parameters without nominal values.",
)
@click.option(
    "--solver",
    type=click.Choice(["auto", "linear", "gradient"]),
    default="auto",
    show_default=True,
    help="auto: one linear solve for a model affine in its parameters, else the gradient solver.",
)
@click.option(
    "--starts",
    "n_starts",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="[gradient solver] Starts: theta0 plus seeded perturbations; the lowest loss wins.",
)
@click.option(
    "--statistic",
    type=click.Choice(["auto", "u", "v"]),
    default="auto",
    show_default=True,
    help="u: the unbiased U-statistic (global: drops the within-block pairs of the Stein "
    "discrepancy that shrink the drift; local: subtracts the jackknife noise of the rows); v: "
    "the reference paper's V-statistic. auto: u for the global route, v for the local one.",
)
@click.option(
    "--estimator",
    type=click.Choice(["auto", "resolved", "ridge"]),
    default="auto",
    show_default=True,
    help="resolved: no regularisation on the directions the data resolve, honest "
    "intervals (bias from unresolved directions included, estimable combinations named); "
    "ridge: Tikhonov on every direction. auto: resolved, except ridge for --statistic v on the "
    "global route (earlier versions' numbers; local: --statistic v --estimator ridge).",
)
@click.option(
    "--prior-scale",
    default="ml",
    show_default=True,
    help="[resolved] Scale τ of the parameters behind the honest intervals: 'ml' "
    "(maximum likelihood from the identified estimates), a positive number, or 'none' "
    "(variance-only intervals).",
)
@click.option(
    "--show-nominal", is_flag=True, help="Show the model's nominal values beside the estimates."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the result as JSON instead of a table."
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the per-parameter results to a .json or .csv file.",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar [default: on a terminal]."
)
def fit(
    model_file,
    data_files,
    input_items,
    env_column,
    time_column,
    order,
    route,
    lam,
    seed,
    n_blocks,
    n_features,
    bandwidth,
    n_probes,
    probe_method,
    radius,
    temperature,
    score,
    theta0_items,
    solver,
    n_starts,
    statistic,
    estimator,
    prior_scale,
    show_nominal,
    as_json,
    out,
    progress,
):
    """Fit the parameters of MODEL to the unordered samples in DATA (.npy, .csv or .parquet).

    .csv/.parquet columns are matched to the state variables by name (order and extra columns do not
    matter); .npy columns must be in the model's state order.  Prints a table: estimate, standard
    error, confidence interval, freeness and whether each parameter is identifiable, then the rank,
    the unresolved combinations and the consistency of the model with the data.

    Several DATA files (or --env-column) are environments of one design with shared parameters,
    e.g. ``dynosed fit model.py A.csv B.csv --input s=1 --input s=3`` (docs/designs.md).
    """
    from ...routes import fit_global, fit_local

    if out is not None and not str(out).lower().endswith((".json", ".csv")):
        raise click.BadParameter(f"{out!r}: expected a .json or .csv file", param_hint="--out")
    _refuse_overwrite(out, (model_file, *data_files))
    if bandwidth != "median":
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            raise click.BadParameter(
                f"expected 'median' or a number, got {bandwidth!r}", param_hint="--bandwidth"
            ) from None
    prior_scale = _parse_prior_scale(prior_scale)
    stat_args = {"prior_scale": prior_scale}
    if statistic != "auto":
        stat_args["statistic"] = statistic
    if estimator != "auto":
        stat_args["estimator"] = estimator
    if route == "local" and score == "score_matching" and radius is None:
        raise click.UsageError(
            "--score score_matching needs --radius (the balls around the probes)"
        )
    if route == "local" and probe_method == "dense" and radius is None:
        raise click.UsageError("--probe-method dense needs --radius (the densest points within it)")
    model = _load_model(model_file)
    if show_nominal and model.nominal is None:
        raise click.UsageError(f"{model_file} gives no nominal values to show (--show-nominal)")
    theta0 = None
    if theta0_items:
        theta0 = _full_theta(
            model, theta0_items, "--theta0", "pass --theta0 NAME=VALUE for each parameter"
        )
    solver_args = {
        "theta0": theta0,
        "solver": None if solver == "auto" else solver,
        "n_starts": n_starts,
    }
    t0 = time.perf_counter()
    data_file = data_files[0] if len(data_files) == 1 else ", ".join(data_files)
    design = (
        len(data_files) > 1
        or env_column is not None
        or time_column is not None
        or bool(input_items)
        or bool(model.inputs)
        or bool(model.env_params)
    )
    try:
        if design:
            result = fit_design(
                model,
                data_files,
                input_items,
                env_column,
                time_column,
                order,
                route,
                dict(
                    n_features=n_features,
                    bandwidth=bandwidth,
                    lam=lam,
                    seed=seed,
                    n_blocks=n_blocks,
                    progress=progress,
                ),
                dict(
                    n_probes=n_probes,
                    probe_method=probe_method,
                    radius=radius,
                    temperature="auto" if temperature is None else temperature,
                    score=score,
                ),
                solver_args,
            )
        elif route == "global":
            from ...codegen.loading import compile_model

            # the gradient solver needs the samples in memory; the linear one streams a .npy file
            gradient = solver == "gradient" or (
                solver == "auto" and not compile_model(model).is_affine
            )
            X = _load_data(data_file, model, in_memory=gradient)
            if not isinstance(X, str):  # a table or array in memory: messages name the file
                from ...data import as_samples

                X = as_samples(X, model, data_file)
            result = fit_global(
                model,
                X,
                n_features=n_features,
                bandwidth=bandwidth,
                lam=lam,
                seed=seed,
                n_blocks=n_blocks,
                progress=progress,
                **stat_args,
                **solver_args,
            )
        else:
            from ...data import as_samples
            from ...routes.probes import Balls, choose_probes

            X = as_samples(_load_data(data_file, model, in_memory=True), model, data_file)
            centres = choose_probes(X, n_probes, method=probe_method, radius=radius, seed=seed)
            probes = centres
            if radius is not None:
                probes = Balls(centres, radius)
                X = probes.restrict(X)
            result = fit_local(
                model,
                X,
                probes,
                temperature="auto" if temperature is None else temperature,
                score=score,
                lam=lam,
                n_blocks=n_blocks,
                progress=progress,
                seed=seed,
                **stat_args,
                **solver_args,
            )
    except NotAffineError as exc:
        # the library asks for ``theta0=``: name the option a terminal user can pass instead
        if theta0 is not None or "theta0=" not in str(exc):
            raise
        what = " ".join(str(exc).split("; the gradient route needs")[0].split())
        raise click.UsageError(
            f"{what}; the gradient solver needs a starting point: pass --theta0 "
            f"NAME=VALUE for each parameter ({', '.join(model.param_names)})"
        ) from None
    elapsed = time.perf_counter() - t0
    truth = model.nominal if show_nominal else None
    if out is not None:
        if str(out).lower().endswith(".json"):
            result.to_json(out, truth=truth)
        else:
            result.to_dataframe(truth=truth).to_csv(out)
    if as_json:
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
