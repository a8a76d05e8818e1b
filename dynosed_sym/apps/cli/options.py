"""The command-line options shared by the subcommands, one decorator per group, and the option
objects of the library built from them (:class:`~dynosed_sym.Features`,
:class:`~dynosed_sym.Scores`, :class:`~dynosed_sym.Solver`, :class:`~dynosed_sym.Simulation`).

A group of flags is declared once here and applied with its decorator (``@feature_options``), so
``fit`` and ``check`` spell, default and explain ``--features`` alike; the command passes its
keyword arguments to the builder of the object (``features_from(opts)``).
"""

from __future__ import annotations

import math

import click

from .io import _full_theta, _parse_prior_scale


def group(*decorators):
    """One decorator applying ``decorators`` in the order written (the first is the top option
    in ``--help``)."""

    def apply(func):
        for decorate in reversed(decorators):
            func = decorate(func)
        return func

    return apply


def typed_option(*decls, type=None, default=None, help, **kwargs):
    """``click.option`` whose default, when it has one, ``--help`` shows."""
    return click.option(
        *decls, type=type, default=default, show_default=default is not None, help=help, **kwargs
    )


def count_option(*decls, minimum=1, maximum=None, **kwargs):
    """An integer option of at least ``minimum`` (and at most ``maximum``)."""
    return typed_option(*decls, type=click.IntRange(minimum, maximum), **kwargs)


class FiniteRange(click.FloatRange):
    """A finite number in click's range (which lets nan through — it compares false with both
    bounds — and inf without an upper one: ``--temperature nan`` was reported as
    ``Scores.temperature``, ``--lam nan`` as ``Solver.lam``)."""

    def convert(self, value, param, ctx):
        out = super().convert(value, param, ctx)
        if not math.isfinite(out):
            self.fail(f"{out} is not a finite number.", param, ctx)
        return out


def positive_option(*decls, **kwargs):
    """A finite number option greater than zero."""
    return typed_option(*decls, type=FiniteRange(min=0, min_open=True), **kwargs)


def choice_option(*decls, choices, **kwargs):
    """An option taking one of ``choices``."""
    return typed_option(*decls, type=click.Choice(choices), **kwargs)


def file_option(*decls, **kwargs):
    """A file path option (not a folder)."""
    return typed_option(*decls, type=click.Path(dir_okay=False), **kwargs)


model_argument = click.argument(
    "model_file", metavar="MODEL", type=click.Path(exists=True, dir_okay=False)
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON record instead of text."
)


def seed_option(help="Seeds the random numbers."):
    return count_option("--seed", minimum=0, default=0, help=help)


def input_option(metavar, help):
    return click.option("--input", "input_items", multiple=True, metavar=metavar, help=help)


def progress_option(help="Progress bar [default: on a terminal]."):
    return click.option("--progress/--no-progress", default=None, help=help)


def route_option(help=None):
    return choice_option("--route", choices=["global", "local"], default="global", help=help)


def given(name):
    """Whether the option of parameter ``name`` was given (on the command line or through its
    environment variable), not left at its default."""
    source = click.get_current_context().get_parameter_source(name)
    sources = click.core.ParameterSource
    return source in (sources.COMMANDLINE, sources.ENVIRONMENT)


#: options that one route alone reads: parameter name → (flag, route)
ROUTE_OPTIONS = {
    "n_features": ("--features", "global"),
    "bandwidth": ("--bandwidth", "global"),
    "order": ("--order", "global"),
    "n_probes": ("--probes", "local"),
    "probe_method": ("--probe-method", "local"),
    "radius": ("--radius", "local"),
    "temperature": ("--temperature", "local"),
    "score": ("--score", "local"),
}


def refuse_ignored_options(opts):
    """UsageError for an option of the other route, or ``--order`` without ``--time-column``
    (``opts``: the command's options): they were ignored without a word (``--score
    local_gaussian`` without ``--route local`` fitted the global route)."""
    route = opts["route"]
    for name, (flag, owner) in ROUTE_OPTIONS.items():
        if owner != route and name in opts and given(name):
            raise click.UsageError(
                f"{flag} is an option of the {owner} route ([{owner}] in --help), and this fit "
                f"takes the {route} route, which would ignore it: add --route {owner}, or drop "
                f"{flag}"
            )
    if opts.get("n_blocks") == 0 and route == "global":
        raise click.BadParameter(
            "0 noise blocks is an option of the local route (a fit without standard errors, "
            "rank test or p-value); the global route needs at least 1: pass --n-blocks 1 or "
            "more, or add --route local",
            param_hint="--n-blocks",
        )
    if opts.get("order") is not None and opts.get("time_column") is None:
        raise click.UsageError(
            "--order is the quadrature order of time courses, and this fit has none, so it "
            "would be ignored: pass --time-column (the column of each row's time), or drop "
            "--order"
        )


# --------------------------------------------------------------------------- Features
feature_options = group(
    count_option(
        "--features", "n_features", default=2048, help="[global] Random Fourier features m."
    ),
    typed_option(
        "--bandwidth",
        default="auto",
        help="[global] Kernel length scale ℓ: 'auto' (the median's, or a multiple of it that "
        "resolves more directions), 'median' or a positive number.",
    ),
)


def features_from(opts, seed):
    """:class:`~dynosed_sym.Features` of ``--features``, ``--bandwidth`` and ``seed``."""
    from ...routes.options import Features

    bandwidth = opts["bandwidth"]
    if bandwidth not in ("auto", "median"):
        try:
            bandwidth = float(bandwidth)
        except ValueError:
            bandwidth = None
        # (-1, 0, nan, inf were reported as "Features.bandwidth must be positive", exit 1)
        if bandwidth is None or not (math.isfinite(bandwidth) and bandwidth > 0):
            raise click.BadParameter(
                f"expected 'auto', 'median' or a positive finite number, got {opts['bandwidth']!r}",
                param_hint="--bandwidth",
            ) from None
    return Features(n_features=opts["n_features"], bandwidth=bandwidth, seed=seed)


# --------------------------------------------------------------------------- Simulation
def simulation_options(chains="--n-chains", chains_help=None):
    """--dt, --burn-in, --thin and the chains flag (``chains``: its spelling)."""
    return group(
        positive_option("--dt", default=0.01, help="Time step."),
        count_option(
            "--burn-in",
            minimum=0,
            default=5000,
            help="Simulator steps discarded at the start of every chain.",
        ),
        count_option("--thin", default=10, help="Steps between recorded states."),
        count_option(chains, "n_chains", help=chains_help),
    )


def simulation_from(opts, default_chains=None):
    """:class:`~dynosed_sym.Simulation` of --dt, --burn-in, --thin and the chains flag."""
    from ...simulation import Simulation

    return Simulation(
        dt=opts["dt"],
        burn_in=opts["burn_in"],
        thin=opts["thin"],
        n_chains=opts["n_chains"] or default_chains,
    )


# --------------------------------------------------------------------------- Scores (local route)
score_options = group(
    count_option(
        "--probes",
        "n_probes",
        default=10,
        help="[local] Number of probe points chosen in the data.",
    ),
    choice_option(
        "--probe-method",
        choices=["random", "kmeans", "dense"],
        default="random",
        help="[local] How probes are chosen (dense needs --radius).",
    ),
    positive_option(
        "--radius",
        help="[local] Ball radius around each probe; the data are restricted to the balls "
        "(needed by --score score_matching).",
    ),
    positive_option(
        "--temperature",
        help="[local] Precision T of the Gaussian score kernel (default: chosen from the data "
        "around the probes).",
    ),
    choice_option(
        "--score",
        choices=["kernel", "local_gaussian", "score_matching"],
        default="kernel",
        help="[local] Score estimator.",
    ),
)


def scores_from(opts):
    """:class:`~dynosed_sym.Scores` of --score, --temperature and --radius."""
    from ...routes.options import Scores

    if opts["score"] == "score_matching" and opts["radius"] is None:
        raise click.UsageError(
            "--score score_matching needs --radius (the balls around the probes)"
        )
    if opts["probe_method"] == "dense" and opts["radius"] is None:
        raise click.UsageError("--probe-method dense needs --radius (the densest points within it)")
    temperature = "auto" if opts["temperature"] is None else opts["temperature"]
    # --radius is the balls' radius (any score); Scores.radius only score matching's
    radius = opts["radius"] if opts["score"] == "score_matching" else None
    return Scores(score=opts["score"], temperature=temperature, radius=radius)


def probes_from(X, opts, where):
    """The probes of --probes, --probe-method and --radius (dense) chosen in the samples X of
    ``where`` (the data file, or an environment): a DataError naming those options and
    ``where`` when they cannot be chosen (the message was choose_probes' own, "cannot choose
    100000 probes from 300 data point(s)", which named no option)."""
    from ...errors import DataError
    from ...routes.probes import choose_probes

    k, method, radius = opts["n_probes"], opts["probe_method"], opts["radius"]
    radius = radius if method == "dense" else None
    try:
        return choose_probes(X, k, method=method, radius=radius, seed=opts["seed"])
    except DataError as exc:
        given = f"--probe-method {method}" + ("" if radius is None else f", --radius {radius:g}")
        raise DataError(f"{where}: --probes {k} ({given}): {exc}") from exc


# --------------------------------------------------------------------------- Solver
solver_options = group(
    typed_option("--lam", type=FiniteRange(min=0), default=1e-6, help="Tikhonov regularisation λ."),
    click.option(
        "--theta0",
        "theta0_items",
        multiple=True,
        metavar="NAME=VALUE",
        help="Starting value of the gradient solver (repeatable; unspecified ones take the "
        "model's nominal value). Needed for a model not affine in its parameters without "
        "nominal values.",
    ),
    choice_option(
        "--solver",
        choices=["auto", "linear", "gradient"],
        default="auto",
        help="auto: one linear solve for a model affine in its parameters, else the gradient "
        "solver.",
    ),
    count_option(
        "--starts",
        "n_starts",
        default=1,
        help="[gradient solver] Starts: theta0 plus seeded perturbations; the lowest loss wins.",
    ),
    choice_option(
        "--statistic",
        choices=["auto", "u", "v"],
        default="auto",
        help="u: the unbiased U-statistic (global: drops the within-block pairs of the Stein "
        "discrepancy that shrink the drift; local: subtracts the jackknife noise of the rows); "
        "v: the reference paper's V-statistic. auto: u for the global route, v for the local one.",
    ),
    choice_option(
        "--estimator",
        choices=["auto", "resolved", "ridge"],
        default="auto",
        help="resolved: no regularisation on the directions the data resolve, honest "
        "intervals (bias from unresolved directions included, estimable combinations named); "
        "ridge: Tikhonov on every direction. auto: resolved, except ridge for --statistic v on "
        "the global route (earlier versions' numbers; local: --statistic v --estimator ridge).",
    ),
    typed_option(
        "--prior-scale",
        default="ml",
        help="[resolved] Scale τ of the parameters behind the honest intervals: 'ml' "
        "(maximum likelihood from the identified estimates), a positive number, or 'none' "
        "(variance-only intervals).",
    ),
)


def solver_from(opts, model, seed):
    """:class:`~dynosed_sym.Solver` of the solver flags (``auto`` → the route's default)."""
    from ...routes.options import Solver

    theta0 = None
    if opts["theta0_items"]:
        theta0 = _full_theta(
            model, opts["theta0_items"], "--theta0", "pass --theta0 NAME=VALUE for each parameter"
        )
    auto = {"auto": None}
    return Solver(
        method=auto.get(opts["solver"], opts["solver"]),
        lam=opts["lam"],
        statistic=auto.get(opts["statistic"], opts["statistic"]),
        estimator=auto.get(opts["estimator"], opts["estimator"]),
        prior_scale=_parse_prior_scale(opts["prior_scale"]),
        theta0=theta0,
        n_starts=opts["n_starts"],
        seed=seed,
    )
