"""Benchmarks of the compiled kernels against the NumPy reference, in one run.

Usage::

    python -m dynosed_sym.apps.bench                    # all timings (about 5 minutes on 2 cores)
    python -m dynosed_sym.apps.bench --only calibration # the statistical calibration + sweep
    python -m dynosed_sym.apps.bench --only sweep --families fhn_focus --n-sets 5
    python -m dynosed_sym.apps.bench --quick            # smaller sizes, fewer repeats
    python -m dynosed_sym.apps.bench --only fill,simulator
    python -m dynosed_sym.apps.bench --json results.json

Sections (``--only``):

fill
    Global A, b fill for the GRN case (models/grn_bcell.py, N = 50,000 samples from
    the paper's simulation protocol, m = 2048) and the Lorenz case (N = 1e5, m = 2048):
    seconds, ns per (sample, feature) pair, the NumPy reference
    (:func:`dynosed_sym.reference.stein_system_reference`, on a subsample, scaled
    linearly in N) and the speed-up; and the *memory-free limit*: a kernel that only
    evaluates the phase and the polynomial sin and cos of every pair, accumulating a
    plain sum, with the ratio fill / limit.
scaling
    Fill time against N (1e3 ... 1e7; above 1e6 as a stream of 1e6-row chunks, so
    memory stays flat) and against m (128 ... 8192), with fitted log-log exponents.
compile
    Cold start of the GRN model (symbolic derivation, printing, Numba compilation of
    every kernel the fit and the simulator use) in a fresh process with an empty
    output folder and an empty ``NUMBA_CACHE_DIR``; then the warm start (another fresh
    process, same folders), which must not re-derive anything.
simulator
    GRN paper protocol (2048 chains x 30,250 RK4 steps) with the compiled simulator,
    and the compiled simulator against the vectorised NumPy implementation of the same
    scheme (:func:`dynosed_sym.reference.simulate_reference`) on 2048 chains x 300 steps.
large
    A generated network with d = 50 states and n = 1000 parameters: generation and
    compile times, fill ns/pair, simulator throughput, and agreement of the kernels
    with the NumPy reference on a small N.
projection
    Variable projection against the full search of the gradient solver (non-affine models)
    on a 3-D gradient-form model with two non-affine parameters (a·tanh(x − k)) and five
    separable ones, from 2·10⁴ (--quick) or 5·10⁴ exact draws of its stationary law, both
    routes (global: m = 512 (--quick) or 2048; local: score matching at 60 probes, scores
    estimated once): median time (at most 3 repeats) of the trust-region search alone,
    least-squares evaluations, the ratio, and max |Δθ| between the two optima.
network
    The d-gene network of issue 20 (W·h(x) − x + 1/2, n = d², sparse truth) at d = 10, 20, 50,
    100 (--quick: 10, 20), each in a fresh process with empty caches: cold start stage by stage
    to the first fit (simulate 5000 + fit_global), warm simulate and fit with timings split,
    peak memory of the assembly and of the process, and the simulator's rate in chain-steps ×
    drift operations per second against the GRN's; not in the default run, only with
    ``--only network`` (results: benchmarks/network.txt).
calibration
    Not timings: coverage of the 95 % intervals, uniformity of the misspecification p-value and
    the small-N bias over ≥ 100 data sets each (exact OU, simulated Lorenz, five GRN data sets of
    the paper's protocol), default fit against ``statistic="v"``; 2–3 minutes; not in the
    default run, only with ``--only calibration`` (results: benchmarks/calibration.txt), which
    then runs the sweep.
sweep
    The calibration sweep (:mod:`.calibration_sweep`): 18 model families not
    designed on, both routes, 20 data sets per cell, the default fit against the ridge fit;
    results benchmarks/calibration_sweep.txt and .json.gz; ``--families``, ``--n-sets``,
    ``--routes``, ``--default-options``, ``--candidate``, ``--reanalyse``, ``--resume``.
verdicts
    The misspecification verdict (:mod:`.verdicts`): the sweep's small-N data sets where correct
    fits were most often called INCONSISTENT, fitted with their own model and with wrong ones,
    and a misfit along a symmetry; counts of consistent / INCONSISTENT / undetermined; about 3
    minutes; only with ``--only verdicts`` (results: benchmarks/verdicts.txt).
factors
    The summary's "no (… × N)" label (:mod:`.data_factors`): sweep families fitted at N and at
    5·N; per whole-line interval at N, the factor the label claims and whether 5·N gives a finite
    one; about 3 minutes; only with ``--only factors`` (results: benchmarks/data_factors.txt).
local_designs
    Calibration of local fits on designs (:mod:`.calibration_designs_local`): five families not
    designed on, each a design (input environments, knockdowns, a time course) fitted with
    ``fit_local`` and the default kernel score, 20 data sets per cell, the default fit against
    the ridge fit; 2–4 minutes; only with ``--only local_designs`` (results:
    benchmarks/calibration_sweep_local_designs.txt); ``--families``, ``--n-sets``, ``--sizes``,
    ``--sources``.

Every timing is preceded by an explicit warm-up call (compilation is never mixed with
run time) and is the median over repeats.  No timing is asserted anywhere; the printed
ratios against the reference, measured in the same run, are the result.
"""

from .common import SECTIONS
from .large import synthetic_network
from .projection import projection_model
from .run import main

__all__ = ["main", "synthetic_network", "projection_model", "SECTIONS"]
