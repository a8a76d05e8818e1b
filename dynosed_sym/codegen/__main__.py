"""``python -m dynosed_sym.codegen MODEL.py …``: print the generated modules of model files."""

from __future__ import annotations

import argparse
import os

from ..model import load_model
from .files import default_output_dir, module_filename, stale_files, write_if_changed
from .render import render_module
from .spec import build_spec


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m dynosed_sym.codegen",
        description="Print the generated kernel module of model files.",
    )
    ap.add_argument("models", nargs="+", help="model files (each defines `model`)")
    ap.add_argument(
        "--out", default=None, help="output folder (default: see docs/generated-code.md)"
    )
    ap.add_argument(
        "--prune",
        action="store_true",
        help="delete older generated files of the same model names in the output folder",
    )
    args = ap.parse_args(argv)
    for path in args.models:
        model = load_model(path)
        spec = build_spec(model)
        out_dir = args.out or default_output_dir(model)
        target = os.path.join(out_dir, module_filename(model.name, spec.hash))
        changed = write_if_changed(target, render_module(spec))
        print(f"{'wrote' if changed else 'unchanged'} {target}")
        if args.prune:
            for stale in stale_files(out_dir, model.name, os.path.basename(target)):
                os.unlink(stale)
                print(f"removed {stale}")


if __name__ == "__main__":
    main()
