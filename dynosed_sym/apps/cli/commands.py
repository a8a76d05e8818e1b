"""The subcommands ``compile``, ``check`` and ``simulate`` (``fit``: :mod:`.fit`; ``bench``:
:mod:`.tools`)."""

from __future__ import annotations

import time

import click

from .app import main
from .io import (
    _check_dict,
    _echo_json,
    _finite,
    _full_theta,
    _load_model,
    _out_folder,
    _parse_nominal,
    _structural_dict,
    _suffix,
    _write_samples,
)
from .options import (
    FiniteRange,
    count_option,
    feature_options,
    features_from,
    file_option,
    input_option,
    json_option,
    model_argument,
    positive_option,
    progress_option,
    route_option,
    seed_option,
    simulation_from,
    simulation_options,
    typed_option,
)


@main.command(name="compile")
@model_argument
@typed_option(
    "--out-dir",
    type=click.Path(file_okay=False),
    help="Folder for the generated module (default: generated/ beside models/; see "
    "docs/generated-code.md).",
)
@click.option("--equations", is_flag=True, help="Also print the declared SDE.")
@json_option
def compile_cmd(model_file, out_dir, equations, as_json):
    """Derive, print and load the Numba kernels of MODEL (cached: a no-op when unchanged)."""
    from ...codegen.loading import compile_model

    t0 = time.perf_counter()
    model = _load_model(model_file)
    cm = compile_model(model, out_dir)
    path = getattr(cm, "path", None) or getattr(getattr(cm, "module", None), "__file__", "?")
    elapsed = time.perf_counter() - t0
    if as_json:
        _echo_json(
            {"model": model.name, "path": path, "affine": bool(cm.is_affine), "seconds": elapsed}
        )
        return
    if equations:
        click.echo(str(model))
    click.echo(f"{model.name}: {path} ({elapsed:.1f} s)")


@main.command()
@model_argument
@click.option(
    "--nominal",
    "nominal_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="Nominal parameter value (repeatable; defaults to the model's nominal).",
)
@route_option()
@count_option(
    "-N",
    "--n-samples",
    minimum=16,
    default=20_000,
    help="Samples simulated for the simulation check.",
)
@seed_option("Seeds the simulation, the random features and the structural check.")
@positive_option(
    "--rel-error",
    default=0.1,
    help="Target relative error per parameter (half-width of the interval), a fraction of "
    "|θ| at most 1: 0.1 for ±10 %.",
)
@typed_option(
    "--level",
    type=FiniteRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    help="Confidence level of that target.",
)
@feature_options
@simulation_options(
    "--n-chains",
    "Chains of the simulation check (default: one per sample, i.e. N independent "
    "snapshots; 2048 gives the earlier correlated default).",
)
@click.option(
    "--structural-only", is_flag=True, help="Only the exact symbolic check (no simulation)."
)
@input_option(
    "[ENV:]NAME=VALUE[,...]",
    "A design: input values of environment ENV (repeatable; docs/designs.md).",
)
@click.option("--times", default=None, help="A time-course design: snapshot times t1,t2,...")
@click.option("--initial-mean", default=None, help="Time course: mean of the law at t = 0.")
@typed_option(
    "--initial-var", type=FiniteRange(min=0), help="Time course: variance (isotropic) at t = 0."
)
@click.option("--no-advise", is_flag=True, help="Design: skip the design advice.")
@click.option(
    "--candidate",
    "candidate_items",
    multiple=True,
    metavar="NAME=VALUE[,...]",
    help="Design advice: a candidate environment's inputs (repeatable; default: a grid).",
)
@json_option
def check(model_file, **opts):
    """Identifiability of MODEL before any data: which parameters snapshots can pin down,
    which combinations they cannot, and how many samples each parameter needs.

    With --input (or --times) the check is of a design: environments with known inputs
    (``--input A:s=1 --input B:s=3``), time courses, and advice on what to add."""
    from ...identifiability import Study, check_identifiability, structural_check

    t0 = time.perf_counter()
    for name in ("initial_mean", "initial_var"):
        if opts[name] is not None and not opts["times"]:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(
                f"{flag} is the law at t = 0 of a time-course design, and without --times there "
                f"is none, so it would be ignored: pass --times t1,t2,..., or drop {flag}"
            )
    model = _load_model(model_file)
    nominal = _parse_nominal(model, opts["nominal_items"])
    structural_only, as_json = opts["structural_only"], opts["as_json"]
    if nominal is None and model.nominal is None and not structural_only:
        raise click.UsageError(
            f"{model_file} gives no nominal parameters: pass --nominal NAME=VALUE "
            "for each parameter, or --structural-only"
        )
    if structural_only and nominal is None and model.nominal is None:
        rep = structural_check(model, route=opts["route"])
        if as_json:
            _echo_json(_finite({"model": model.name, "structural": _structural_dict(rep)}))
        else:
            click.echo(str(rep))
        return
    study = Study(
        n_samples=opts["n_samples"],
        seed=opts["seed"],
        rel_error=opts["rel_error"],
        level=opts["level"],
        simulation=simulation_from(opts, default_chains="independent"),
    )
    features = features_from(opts, 0)  # (seeded by the study)
    if opts["input_items"] or opts["times"] or model.inputs or model.env_params:
        from .designs import check_design

        result = check_design(model, nominal, opts, not structural_only, study, features)
        if as_json:
            _echo_json(_finite(result.to_dict()))
        else:
            click.echo(str(result))
            click.echo(f"\n({time.perf_counter() - t0:.1f} s)")
        return
    result = check_identifiability(
        model,
        nominal=nominal,
        route=opts["route"],
        simulate=not structural_only,
        study=study,
        features=features,
    )
    if as_json:
        _echo_json(_finite(_check_dict(result)))
        return
    click.echo(str(result))
    click.echo(f"\n({time.perf_counter() - t0:.1f} s)")


@main.command()
@model_argument
@count_option("-n", "--n", "n_samples", required=True, help="Number of samples to write.")
@file_option(
    "-o",
    "--out",
    "out",
    required=True,
    help="Output file: .npy, .csv or .parquet (columns named after the state variables).",
)
@click.option(
    "--theta",
    "theta_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="Parameter value (repeatable); unspecified ones take the model's nominal value.",
)
@simulation_options("--chains", "Independent chains [default: min(n, 2048)].")
@seed_option()
@input_option("NAME=VALUE[,...]", "Values of the model's known inputs (repeatable).")
@progress_option("Progress bar over chains [default: on a terminal].")
@json_option
def simulate(
    model_file,
    n_samples,
    out,
    theta_items,
    dt,
    burn_in,
    thin,
    n_chains,
    seed,
    input_items,
    progress,
    as_json,
):
    """Draw N steady-state samples of MODEL (independent chains) and write them to a file.

    The parameters default to the model's nominal values; --theta overrides single ones.
    Rows are ordered chain by chain (contiguous rows hold whole chains).
    """
    from ...options import Execution
    from ...simulation import simulate as run

    suffix = _suffix(out, "--out")
    _out_folder(out)
    model = _load_model(model_file)
    theta = _full_theta(model, theta_items, "--theta", "pass --theta NAME=VALUE for each parameter")
    if theta is None:
        raise click.UsageError(
            f"{model_file} gives no nominal parameters: pass --theta NAME=VALUE for "
            f"each parameter ({', '.join(model.param_names)})"
        )
    t0 = time.perf_counter()
    from .designs import parse_inputs

    inputs = parse_inputs(input_items, ["data"])
    X = run(
        model,
        theta,
        n_samples,
        inputs=None if inputs is None else inputs["data"],
        dt=dt,
        burn_in=burn_in,
        thin=thin,
        n_chains=n_chains,
        seed=seed,
        execution=Execution(progress=progress),
    )
    _write_samples(X, model, out, suffix)
    elapsed = time.perf_counter() - t0
    if as_json:
        _echo_json(
            _finite(
                {
                    "model": model.name,
                    "out": out,
                    "n_samples": int(X.shape[0]),
                    "columns": model.state_names,
                    "theta": theta,
                    "dt": dt,
                    "burn_in": burn_in,
                    "thin": thin,
                    "n_chains": n_chains or min(n_samples, 2048),
                    "seed": seed,
                    "seconds": elapsed,
                }
            )
        )
        return
    vals = ", ".join(f"{k} = {v:.4g}" for k, v in theta.items())
    click.echo(
        f"wrote {X.shape[0]:,} × {X.shape[1]} samples of {model.name!r} to {out} "
        f"(columns {', '.join(model.state_names)}; {vals}) in {elapsed:.1f} s"
    )
