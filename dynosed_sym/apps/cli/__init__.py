"""The ``dynosed`` command: the whole workflow from a terminal.

::

    dynosed compile models/lorenz.py                 # derive, print and load the kernels
    dynosed check models/lorenz.py                   # identifiability before any data
    dynosed check models/ou2d.py --structural-only   # exact symbolic check only (milliseconds)
    dynosed simulate models/lorenz.py -n 5000 --out lorenz.csv          # θ = the model's nominal
    dynosed simulate models/lorenz.py -n 5000 --theta rho=20 --out x.npy
    dynosed fit models/lorenz.py lorenz.csv                             # global route, a table
    dynosed fit models/lorenz.py lorenz.csv --route local --probes 10 --temperature 49
    dynosed fit models/lorenz.py lorenz.csv --json > fit.json           # machine-readable
    dynosed fit my_model.py x.csv --theta0 k=1.5 --starts 4             # a model not affine in θ
    dynosed fit model.py A.csv B.csv --input s=1 --input s=3           # two environments
    dynosed check model.py --input A:s=1 --input B:s=3                 # a design, with advice
    dynosed bench --quick --only simulator                              # benchmarks

Every command takes ``--help``.  Data files: ``.npy`` (columns in the model's state order), ``.csv``
or ``.parquet`` (columns named after the state variables; other columns are ignored, order does
not matter).  Exit status: 0 on success, 1 on an error in the model, the data or a computation
(one line on standard error, no traceback; ``DYNOSED_DEBUG=1`` shows the traceback of an
unexpected error), 2 on a usage error.
"""

from . import commands, fit, tools  # noqa: F401  (register the subcommands on the group)
from .app import main

__all__ = ["main"]
