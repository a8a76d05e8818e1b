"""``python -m dynosed_sym.apps.bench``: the benchmarks."""

from .run import main

main()
