"""The ``dynosed`` command.

::

    dynosed check models/lorenz.py                 # identifiability before any data
    dynosed check models/ou2d.py --structural-only  # exact symbolic check only (milliseconds)
    dynosed check models/grn_bcell.py -N 50000 --burn-in 30000 --n-chains 2048
    dynosed check my_model.py --nominal k=1.5 --nominal D0=0.2 --rel-error 0.05
    dynosed compile models/lorenz.py               # derive, print and load the kernels

``check`` runs :func:`dynosed_sym.check_identifiability`: the exact structural check from the
symbols, then a design-time study by simulation at the nominal parameters (rank against sampling
noise, free combinations, predicted standard errors as a function of N, and the N needed for a
relative error per parameter).  Exit status 0 on success, 1 on a model error, 2 on a usage error.
"""

from __future__ import annotations

import sys
import time

import click

from .errors import DynosedError

__all__ = ["main"]


def _parse_nominal(model, items):
    """``("k=1.5", "W[0,1]=2")`` → full nominal vector (the model's nominal fills the rest)."""
    if not items:
        return None
    values = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--nominal")
        name, _, val = item.partition("=")
        try:
            values[name.strip()] = float(val)
        except ValueError:
            raise click.BadParameter(f"value of {name!r} is not a number: {val!r}",
                                     param_hint="--nominal") from None
    base = {} if model.nominal is None else dict(zip(model.param_names, model.nominal.tolist()))
    unknown = [k for k in values if k not in model.param_names]
    if unknown:
        raise click.BadParameter(f"{unknown[0]!r} is not a parameter of {model.name!r} "
                                 f"(parameters: {', '.join(model.param_names)})", param_hint="--nominal")
    base.update(values)
    missing = [p for p in model.param_names if p not in base]
    if missing:
        raise click.BadParameter(f"no nominal value for {missing[0]!r} (the model file gives none)",
                                 param_hint="--nominal")
    return base


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dynosed_sym", prog_name="dynosed")
def main():
    """dynosed — identify SDE parameters from unordered snapshots."""


@main.command()
@click.argument("model_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--nominal", "nominal_items", multiple=True, metavar="NAME=VALUE",
              help="Nominal parameter value (repeatable; defaults to the model's nominal).")
@click.option("--route", type=click.Choice(["global", "local"]), default="global", show_default=True)
@click.option("-N", "--n-samples", type=click.IntRange(min=16), default=20_000, show_default=True,
              help="Simulated samples for the design-time study.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--rel-error", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True,
              help="Target relative error per parameter (half-width of the interval).")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Confidence level of that target.")
@click.option("--features", "n_features", type=click.IntRange(min=1), default=2048, show_default=True,
              help="Random Fourier features m (global route).")
@click.option("--dt", type=click.FloatRange(min=0, min_open=True), default=0.01, show_default=True)
@click.option("--burn-in", type=click.IntRange(min=0), default=5000, show_default=True,
              help="Simulator steps discarded per chain.")
@click.option("--thin", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--n-chains", type=click.IntRange(min=1), default=None,
              help="Independent chains (default min(N, 2048)).")
@click.option("--structural-only", is_flag=True, help="Only the exact symbolic check (no simulation).")
def check(model_file, nominal_items, route, n_samples, seed, rel_error, level, n_features, dt, burn_in,
          thin, n_chains, structural_only):
    """Identifiability of MODEL_FILE before any data: which parameters snapshots can pin down,
    which combinations they cannot, and how many samples each parameter needs."""
    from .identifiability import check_identifiability
    from .model import load_model

    t0 = time.perf_counter()
    try:
        model = load_model(model_file)
        nominal = _parse_nominal(model, nominal_items)
        if nominal is None and model.nominal is None and not structural_only:
            raise click.UsageError(f"{model_file} gives no nominal parameters: pass --nominal NAME=VALUE "
                                   "for each parameter, or --structural-only")
        if structural_only and nominal is None and model.nominal is None:
            from .identifiability import structural_check

            click.echo(str(structural_check(model, route=route)))
            return
        result = check_identifiability(model, nominal=nominal, route=route, n_samples=n_samples, seed=seed,
                                       rel_error=rel_error, level=level, n_features=n_features, dt=dt,
                                       burn_in=burn_in, thin=thin, n_chains=n_chains,
                                       simulate=not structural_only)
    except DynosedError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(str(result))
    click.echo(f"\n({time.perf_counter() - t0:.1f} s)")


@main.command(name="compile")
@click.argument("model_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Folder for the generated module (default: generated/ beside models/, see README).")
def compile_cmd(model_file, out_dir):
    """Derive, print and load the Numba kernels of MODEL_FILE (cached: a no-op when unchanged)."""
    from .compiled import compile_model
    from .model import load_model

    t0 = time.perf_counter()
    try:
        model = load_model(model_file)
        cm = compile_model(model, out_dir)
    except DynosedError as exc:
        raise click.ClickException(str(exc)) from None
    path = getattr(cm, "path", None) or getattr(getattr(cm, "module", None), "__file__", "?")
    click.echo(f"{model.name}: {path} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
