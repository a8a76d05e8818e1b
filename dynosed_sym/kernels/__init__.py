"""Shared Numba helpers, compiled once for every model.

One module per kernel family:

* :mod:`.trig` — the polynomial ``sin(2πv)`` and its range reduction (no libm calls);
* :mod:`.stein_fill` — the model-independent fill of the global route's partial sums;
* :mod:`.kernel_score` — the Gaussian-kernel sums of the local route's score estimator;
* :mod:`.balls` — which ball a sample falls in (probe regions).

Nothing here imports the rest of the package: these are leaves of the dependency graph.
"""
