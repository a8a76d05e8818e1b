"""The ``bench`` subcommand (benchmarks of :mod:`dynosed_sym.apps.bench`)."""

from __future__ import annotations

import click

from .app import main
from .options import count_option, file_option


@main.command(context_settings={"ignore_unknown_options": False})
@click.option("--quick", is_flag=True, help="Smaller sizes and fewer repeats.")
@click.option(
    "--only",
    default=None,
    metavar="SECTIONS",
    help="Comma-separated sections among fill, scaling, compile, simulator, large, projection, "
    "calibration [default: all but calibration].",
)
@count_option("--repeats", help="Timed repeats per measurement (the median is reported).")
@file_option("--json", "json_file", help="Also write every number to this JSON file.")
def bench(quick, only, repeats, json_file):
    """Benchmarks of the compiled kernels against the NumPy reference, measured in the same run
    (see python -m dynosed_sym.apps.bench --help and docs/testing-and-benchmarks.md)."""
    from .. import bench as bench_module

    if only is not None:
        wanted = [s.strip() for s in only.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in bench_module.SECTIONS]
        if unknown or not wanted:
            raise click.BadParameter(
                f"unknown section {unknown[0] if unknown else only!r}; choose from "
                f"{', '.join(bench_module.SECTIONS)}",
                param_hint="--only",
            )
    argv = (["--quick"] if quick else []) + (["--only", only] if only else [])
    argv += (["--repeats", str(repeats)] if repeats else []) + (
        ["--json", json_file] if json_file else []
    )
    bench_module.main(argv)
