"""The benchmarks' command line: ``python -m dynosed_sym.apps.bench``."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .calibration import section_calibration
from .calibration_designs_local import section_local_designs
from .calibration_sweep import add_arguments as add_sweep_arguments
from .calibration_sweep import section_sweep
from .common import DEFAULT_SECTIONS, SECTIONS, TARGETS, machine_info
from .compile import section_compile
from .data_factors import section_factors
from .fill import section_fill, section_scaling
from .large import section_large
from .network import section_network
from .projection import section_projection
from .simulator import section_simulator
from .verdicts import section_verdicts


# --------------------------------------------------------------------------- entry point
def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m dynosed_sym.apps.bench", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    ap.add_argument(
        "--only",
        default=",".join(DEFAULT_SECTIONS),
        help=f"comma-separated sections among {', '.join(SECTIONS)} (default: all but "
        + "calibration and sweep; calibration runs the bundled cases and then the sweep)",
    )
    ap.add_argument(
        "--repeats", type=int, default=None, help="timed repeats per measurement (median reported)"
    )
    ap.add_argument("--json", default=None, help="also write all numbers to this JSON file")
    _add_network_arguments(ap)
    ap.add_argument(
        "--no-sweep",
        action="store_true",
        help="with --only calibration: the bundled cases alone, not the sweep after them (a "
        "full sweep writes benchmarks/calibration_sweep.*, whose committed run has its own "
        "options)",
    )
    add_sweep_arguments(ap)
    args = ap.parse_args(argv)
    args.argv_text = " ".join(sys.argv[1:] if argv is None else argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    repeats = args.repeats or (3 if args.quick else 7)
    info = machine_info()
    print("dynosed_sym benchmark" + (" (--quick)" if args.quick else ""))
    print(
        f"  CPU {info['cpu']}; LLVM target {info['llvm_target_cpu']} ({'+'.join(info['simd'])}); "
        f"{info['os_cpus']} CPUs, {info['numba_threads']} Numba threads"
    )
    print(
        f"  Python {info['python']}, NumPy {info['numpy']}, Numba {info['numba']}; "
        f"medians of {repeats} timed runs after a warm-up"
    )
    results = {"machine": info, "quick": args.quick, "repeats": repeats, "targets": TARGETS}
    t_all = time.perf_counter()
    runners = {
        "fill": section_fill,
        "scaling": section_scaling,
        "compile": section_compile,
        "simulator": section_simulator,
        "large": section_large,
        "projection": section_projection,
        "network": section_network,
        "calibration": section_calibration,
        "verdicts": section_verdicts,
        "factors": section_factors,
    }
    kw = _network_options(args)
    if kw:
        runners["network"] = lambda quick, reps: section_network(quick, reps, **kw)
    if "calibration" in only and "sweep" not in only and not args.no_sweep:
        only.append("sweep")  # the calibration is part of the sweep
    for name in SECTIONS:
        if name == "sweep" and name in only:
            results[name] = section_sweep(args)
        elif name == "local_designs" and name in only:
            results[name] = section_local_designs(args)
        elif name in only and not args.reanalyse:
            results[name] = runners[name](args.quick, repeats)
    print(f"\ntotal benchmark time {time.perf_counter() - t_all:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2, default=float)
        print(f"wrote {args.json}")
    return results


def _add_network_arguments(ap):
    """The network section's options."""
    ap.add_argument(
        "--network-fit-max-d",
        type=int,
        default=None,
        help="network section: largest d fitted whole (larger: the assembly only; default 50)",
    )
    ap.add_argument(
        "--network-sizes",
        default=None,
        help="network section: comma-separated d (default 10,20,50,100; --quick 10,20)",
    )
    ap.add_argument(
        "--network-n",
        type=int,
        default=None,
        help="network section: samples of the warm simulate and fit for every d (default 20,000; "
        "100,000 at d = 100)",
    )
    ap.add_argument(
        "--network-kind",
        choices=("w", "rates"),
        default="w",
        help="network section: W·h(x) − x + 1/2 (w, default) or W·h(x) − g⊙x + β with the decay "
        "and basal rates unknown too (rates)",
    )


def _network_options(args):
    """Keywords of section_network from the options (None: all defaults)."""
    given = args.network_fit_max_d is not None or args.network_sizes or args.network_n
    if not given and args.network_kind == "w":
        return None
    kw = {"sizes": [int(v) for v in (args.network_sizes or "").split(",") if v.strip()]}
    kw["kind"] = args.network_kind
    if args.network_fit_max_d is not None:
        kw["full_fit_max_d"] = args.network_fit_max_d
    if args.network_n is not None:
        kw["n_warm"] = args.network_n
    return kw
