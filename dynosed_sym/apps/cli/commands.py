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
    _parse_nominal,
    _structural_dict,
    _suffix,
    _write_samples,
)


@main.command(name="compile")
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for the generated module (default: generated/ beside models/; see "
    "docs/generated-code.md).",
)
@click.option("--equations", is_flag=True, help="Also print the declared SDE.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON record instead of text.")
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
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--nominal",
    "nominal_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="Nominal parameter value (repeatable; defaults to the model's nominal).",
)
@click.option(
    "--route", type=click.Choice(["global", "local"]), default="global", show_default=True
)
@click.option(
    "-N",
    "--n-samples",
    type=click.IntRange(min=16),
    default=20_000,
    show_default=True,
    help="Simulated samples for the design-time study.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--rel-error",
    type=click.FloatRange(min=0, min_open=True),
    default=0.1,
    show_default=True,
    help="Target relative error per parameter (half-width of the interval).",
)
@click.option(
    "--level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of that target.",
)
@click.option(
    "--features",
    "n_features",
    type=click.IntRange(min=1),
    default=2048,
    show_default=True,
    help="Random Fourier features m (global route).",
)
@click.option("--dt", type=click.FloatRange(min=0, min_open=True), default=0.01, show_default=True)
@click.option(
    "--burn-in",
    type=click.IntRange(min=0),
    default=5000,
    show_default=True,
    help="Simulator steps discarded per chain.",
)
@click.option("--thin", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--n-chains",
    type=click.IntRange(min=1),
    default=None,
    help="Chains of the design-time simulation (default: one per sample, i.e. N independent "
    "snapshots; 2048 gives the earlier correlated default).",
)
@click.option(
    "--structural-only", is_flag=True, help="Only the exact symbolic check (no simulation)."
)
@click.option(
    "--input",
    "input_items",
    multiple=True,
    metavar="[ENV:]NAME=VALUE[,...]",
    help="A design: input values of environment ENV (repeatable; docs/designs.md).",
)
@click.option("--times", default=None, help="A time-course design: snapshot times t1,t2,...")
@click.option("--initial-mean", default=None, help="Time course: mean of the law at t = 0.")
@click.option(
    "--initial-var", type=float, default=None, help="Time course: variance (isotropic) at t = 0."
)
@click.option("--no-advise", is_flag=True, help="Design: skip the design advice.")
@click.option(
    "--candidate",
    "candidate_items",
    multiple=True,
    metavar="NAME=VALUE[,...]",
    help="Design advice: a candidate environment's inputs (repeatable; default: a grid).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON record instead of text.")
def check(
    model_file,
    nominal_items,
    route,
    n_samples,
    seed,
    rel_error,
    level,
    n_features,
    dt,
    burn_in,
    thin,
    n_chains,
    structural_only,
    input_items,
    times,
    initial_mean,
    initial_var,
    no_advise,
    candidate_items,
    as_json,
):
    """Identifiability of MODEL before any data: which parameters snapshots can pin down,
    which combinations they cannot, and how many samples each parameter needs.

    With --input (or --times) the check is of a design: environments with known inputs
    (``--input A:s=1 --input B:s=3``), time courses, and advice on what to add."""
    from ...identifiability import check_identifiability, structural_check
    from ...simulation import Simulation

    t0 = time.perf_counter()
    model = _load_model(model_file)
    nominal = _parse_nominal(model, nominal_items)
    if nominal is None and model.nominal is None and not structural_only:
        raise click.UsageError(
            f"{model_file} gives no nominal parameters: pass --nominal NAME=VALUE "
            "for each parameter, or --structural-only"
        )
    if structural_only and nominal is None and model.nominal is None:
        rep = structural_check(model, route=route)
        if as_json:
            _echo_json(_finite({"model": model.name, "structural": _structural_dict(rep)}))
        else:
            click.echo(str(rep))
        return
    if input_items or times or model.inputs or model.env_params:
        from .designs import check_design

        result = check_design(
            model,
            nominal,
            input_items,
            times,
            initial_mean,
            initial_var,
            dict(
                n_samples=n_samples,
                seed=seed,
                n_features=n_features,
                simulation=Simulation(
                    dt=dt, burn_in=burn_in, thin=thin, n_chains=n_chains or "independent"
                ),
                simulate=not structural_only,
                advise=not no_advise,
            ),
            candidate_items,
        )
        if as_json:
            _echo_json(_finite(result.to_dict()))
        else:
            click.echo(str(result))
            click.echo(f"\n({time.perf_counter() - t0:.1f} s)")
        return
    result = check_identifiability(
        model,
        nominal=nominal,
        route=route,
        n_samples=n_samples,
        seed=seed,
        rel_error=rel_error,
        level=level,
        n_features=n_features,
        simulation=Simulation(
            dt=dt, burn_in=burn_in, thin=thin, n_chains=n_chains or "independent"
        ),
        simulate=not structural_only,
    )
    if as_json:
        _echo_json(_finite(_check_dict(result)))
        return
    click.echo(str(result))
    click.echo(f"\n({time.perf_counter() - t0:.1f} s)")


@main.command()
@click.argument("model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-n",
    "--n",
    "n_samples",
    type=click.IntRange(min=1),
    required=True,
    help="Number of samples to write.",
)
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
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
@click.option(
    "--dt",
    type=click.FloatRange(min=0, min_open=True),
    default=0.01,
    show_default=True,
    help="Time step.",
)
@click.option(
    "--burn-in",
    type=click.IntRange(min=0),
    default=5000,
    show_default=True,
    help="Steps discarded at the start of every chain.",
)
@click.option(
    "--thin",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Steps between recorded states.",
)
@click.option(
    "--chains",
    "n_chains",
    type=click.IntRange(min=1),
    default=None,
    help="Independent chains [default: min(n, 2048)].",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--input",
    "input_items",
    multiple=True,
    metavar="NAME=VALUE[,...]",
    help="Values of the model's known inputs (repeatable).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar over chains [default: on a terminal].",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON record instead of text.")
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
    from ...simulation import simulate as run

    suffix = _suffix(out, "--out")
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
        progress=progress,
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
