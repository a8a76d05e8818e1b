"""The demo's command line: ``python -m dynosed_sym.apps.demo``."""

from __future__ import annotations

import argparse
import os
import time

from .common import _rule
from .designs_example import figure_knockdown, knockdown_example
from .figures import make_figures
from .global_examples import (
    grn_example,
    grn_pre_data,
    identifiability_before_data,
    limit_cycle_example,
    lorenz_table,
    ou_example,
    uncertainty_example,
)
from .local_examples import (
    lorenz_local,
    nonstationary_example,
    ou_local_example,
    state_dependent_example,
)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m dynosed_sym.apps.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="fewer draws and a smaller GRN data set")
    ap.add_argument(
        "--figures",
        default="demo_output",
        metavar="DIR",
        help="folder the figures are written to (default: demo_output)",
    )
    ap.add_argument("--figures-only", action="store_true", help="only write the figures")
    ap.add_argument("--no-figures", action="store_true", help="skip the figures")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    designs = None
    if not args.figures_only:
        identifiability_before_data()
        lorenz_table(n_draws=5 if args.quick else 20)
        ou_example()
        limit_cycle_example()
        n_grn = 10_000 if args.quick else 50_000
        fit = grn_example(n_grn)
        grn_pre_data(fit, n_grn)
        uncertainty_example(50 if args.quick else 200, 5 if args.quick else 20)
        ou_local_example(n_draws=4 if args.quick else 8)
        state_dependent_example()
        nonstationary_example()
        if args.quick:
            lorenz_local(n_draws=1, n_dense=20_000_000)
        else:
            lorenz_local()
        designs = knockdown_example()
    if not args.no_figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("\nfigures skipped: pip install 'dynosed_sym[plot]' (matplotlib) to draw them")
        else:
            _rule(f"Figures (written to {args.figures}/)")
            for path in make_figures(args.figures, quick=args.quick):
                print(os.path.relpath(path))
            if designs is None:
                designs = knockdown_example()
            print(os.path.relpath(figure_knockdown(designs, args.figures)))
    print(f"\ndemo finished in {time.perf_counter() - t0:.0f} s")
