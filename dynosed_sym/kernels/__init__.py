"""Shared Numba helpers, compiled once for every model.

One module per kernel family:

* :mod:`.trig` — the polynomial ``sin(2πv)`` and its range reduction (no libm calls);
* :mod:`.rng` — the simulator's counter-based random numbers (SplitMix64, Box–Muller);
* :mod:`.lanes` — the simulator's lane blocks: layout, RK4 / Euler–Maruyama stages, normals,
  divergence check and records (imported by every generated ``simulate_chains``);
* :mod:`.stein_fill` — the model-independent fill of the global route's partial sums;
* :mod:`.kernel_score` — the Gaussian-kernel sums of the local route's score estimator;
* :mod:`.balls` — which ball a sample falls in (probe regions).
* :mod:`.threads` — the ordered map that runs GIL-releasing kernels' parts on Python threads;
* :mod:`.blas` — how many BLAS threads the solve and the checks use (``DYNOSED_BLAS_THREADS``).

Nothing here imports the rest of the package (but its errors): these are leaves of the
dependency graph.
"""
