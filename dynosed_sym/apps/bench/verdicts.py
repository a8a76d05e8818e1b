"""The misspecification verdict on correct and on wrong models (``--only verdicts``; results:
benchmarks/verdicts.txt).

Per cell, 20 data sets of a sweep family (the sweep's own data sets — at N ≤ 1000 the small-N
table's — from its cache or drawn now: :func:`.calibration_data.load_dataset`) fitted with the
default ``fit_global`` (the features' seed k for set k, as the sweep) — with the family's own
model (*correct*: every "INCONSISTENT" is a false alarm) and with wrong models written as a user
might have (*wrong*: every "INCONSISTENT" is power; the toggle switch's Hill-1 model and
Stuart–Landau's with an isotropic noise leave directions unresolved, where a moderate misfit may
be "undetermined").  Per cell: the verdicts' counts and how many test p-values were < 0.01 at the
point the verdict's test is taken — the verdict before "undetermined" existed
(docs/design-statistics.md §7).  One family more, simulated here: a
linear model with a free rotation fitted to a rotation-invariant quartic law, whose rotation
the law does not depend on (a symmetry, open at every N: its rejection must stay), at N = 2000
and 20,000.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from dataclasses import replace

import sympy as sp

import dynosed_sym as ds

from ...solve.verdicts import NOISE_INFLATION_MAX
from .calibration_data import default_cache_dir, load_dataset
from .calibration_families import family

R = sp.Rational
N_SETS = 20
VERDICTS = ("consistent", "INCONSISTENT", "undetermined")


def _wrong_models():
    """{family: [(label, model), …]}: wrong models of the sweep's families."""
    x, y = sp.symbols("x y", real=True)
    c1, c2, c3, c4, c5 = sp.symbols("c1:6", real=True)
    D_fhn = [R(1, 20), R(1, 20)]
    fhn = [
        (
            "no c2",
            ds.SDEModel(
                [x, y],
                [c1, c3, c4, c5],
                [c1 * (x - x**3 / 3 - y), c3 * x + c4 - c5 * y],
                diffusion=D_fhn,
                name="wrong_fhn_noc2",
            ),
        ),
        (
            "x³/4",
            ds.SDEModel(
                [x, y],
                [c1, c2, c3, c4, c5],
                [c1 * (x - x**3 / 4 - y) + c2, c3 * x + c4 - c5 * y],
                diffusion=D_fhn,
                name="wrong_fhn_cubic4",
            ),
        ),
    ]
    a, mu, k, b, c = sp.symbols("a mu k b c", real=True)
    vdp = [
        (label, ds.SDEModel([x, y], [a, mu, k], [a * y, damp * y - k * x], R(1, 10), name=name))
        for label, damp, name in (
            ("linear damping", mu, "wrong_vdp_lin"),
            ("μ(1 − x²/2)", mu * (1 - x**2 / 2), "wrong_vdp_half"),
        )
    ]
    selkov = [
        (
            "xy for x²y",
            ds.SDEModel(
                [x, y],
                [k, a, b],
                [-k * x + a * y + x * y, b - a * y - x * y],
                R(1, 100),
                name="wrong_selkov_xy",
            ),
        ),
        (
            "D = diag(1, 2)/100",
            ds.SDEModel(
                [x, y],
                [k, a, b, c],
                [-k * x + a * y + c * x**2 * y, b - a * y - c * x**2 * y],
                diffusion=[R(1, 100), R(1, 50)],
                name="wrong_selkov_D",
            ),
        ),
    ]
    g1, g2, e1, e2, w = sp.symbols("g1 g2 e1 e2 w", real=True)
    toggle = [
        (
            "Hill 1 + constants",
            ds.SDEModel(
                [x, y],
                [a, g1, b, g2, e1, e2],
                [a / (1 + y) - g1 * x + e1, b / (1 + x) - g2 * y + e2],
                R(1, 4),
                name="wrong_toggle_h1",
            ),
        )
    ]
    r2 = x**2 + y**2
    hopf = [
        (
            "D = I/8",
            ds.SDEModel(
                [x, y],
                [a, c, w],
                [a * x - c * r2 * x - w * y, a * y - c * r2 * y + w * x],
                [R(1, 8), R(1, 8)],
                name="wrong_hopf_isotropic",
            ),
        )
    ]
    return {
        "fhn_focus": fhn,
        "fhn_cycle": fhn,
        "vdp": vdp,
        "selkov": selkov,
        "toggle": toggle,
        "hopf": hopf,
    }


#: (family, N): the small-N cells where the sweep's correct fits were called INCONSISTENT most,
#: and the toggle switch, whose wrong model leaves directions unresolved.
CELLS = (
    ("fhn_focus", 500),
    ("fhn_cycle", 500),
    ("fhn_cycle", 1000),
    ("vdp", 1000),
    ("hopf", 1000),
    ("selkov", 2000),
    ("toggle", 2000),  # (its wrong model has weak directions: power where they may absorb)
)


#: The rotation misfit at two N: its rejection must not erode with more data.
ROTATION_SIZES = (2000, 20_000)


def _count(fits):
    """{"verdicts": counts, "p_below_0.01": …, "warned": …, "noise_ratios": …} over (report,
    warnings) pairs; ``noise_ratios``: the residual noise at the point the test profiled along
    every direction reached, over the estimate's, where the report took that test (a rejection
    with unresolved directions: ``misspec_unresolved``)."""
    tests = [rep.misspec_unresolved for rep, _ in fits if rep.misspec_unresolved is not None]
    return {
        "verdicts": dict(Counter(rep.verdict for rep, _ in fits)),
        "p_below_0.01": sum(rep.p_value is not None and rep.p_value < 0.01 for rep, _ in fits),
        "warned": sum(bool(warned) for _, warned in fits),
        "noise_ratios": sorted(float(t.noise_ratio) for t in tests),
    }


def _ratios(r):
    """The noise ratios of a cell as "min–max (k)", "–" without any."""
    if not r:
        return "–"
    return f"{r[0]:.3g}–{r[-1]:.3g} ({len(r)})" if len(r) > 1 else f"{r[0]:.3g} (1)"


def _row(label, N, what, c, n):
    counts = " ".join(f"{c['verdicts'].get(v, 0):>12d}" for v in VERDICTS)
    line = f"  {label:<22} {N:>6} {what:<24} {counts} {c['p_below_0.01']:>9d}/{n} {c['warned']:>7d}"
    return line + f"  {_ratios(c['noise_ratios'])}"


def _fit(model, X, seed):
    """(report, warning categories) of the default fit: its warnings (a wrong model's
    stationarity check, weak directions) are counted per cell, not shown one by one."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = ds.fit_global(model, X, features=ds.Features(seed=seed))
    return fit.report, sorted({w.category.__name__ for w in caught})


def rotation_models():
    """(linear, quartic): a linear model with all four entries free, and the law it misfits,
    ``dx = (−a r² x − ω J x) dt + √(2D) dW`` with D = 1/10, whose stationary law
    ``p ∝ exp(−a r⁴/(4D))`` is rotation-invariant — the linear model's rotation is a direction
    the law does not depend on (also ``tests/solve/test_verdicts.py``)."""
    x, y = sp.symbols("x y", real=True)
    m = sp.symbols("m11 m12 m21 m22", real=True)
    linear = ds.SDEModel(
        [x, y], list(m), [m[0] * x + m[1] * y, m[2] * x + m[3] * y], R(1, 10), name="verdict_rot_ou"
    )
    a, om = sp.symbols("a om", real=True)
    r2 = x**2 + y**2
    quartic = ds.SDEModel(
        [x, y],
        [a, om],
        [-a * r2 * x - om * y, -a * r2 * y + om * x],
        R(1, 10),
        name="verdict_rot_quartic",
    )
    return linear, quartic


def rotation_data(quartic, N, seed, execution=None):
    """N independent draws of the quartic law at (a, ω) = (1, 1) (chains from N(0, I), 20 time
    units of burn-in: the radial relaxation time is about 1)."""
    return ds.simulate(
        quartic, [1.0, 1.0], N, n_chains=N, dt=0.005, burn_in=4000, seed=seed, execution=execution
    )


def _rotation(sets, N):
    """The linear model with a free rotation fitted to the quartic rotation-invariant law."""
    linear, quartic = rotation_models()
    return [_fit(linear, rotation_data(quartic, N, 300 + s), s) for s in range(sets)]


def section_verdicts(quick, repeats):
    print("\n== verdicts: the misspecification verdict on correct and wrong models ==")
    print(
        f"   default fit_global on {N_SETS} data sets per cell (the sweep's); p<0.01: the test "
        "at the verdict's point rejects (the verdict before 'undetermined'); noise×: where a "
        "rejection leaves directions unresolved, the residual noise at the point the test "
        "profiled along every direction reaches over the estimate's, min–max (fits) — at most "
        f"{NOISE_INFLATION_MAX:g} for 'undetermined' (docs/design-statistics.md §7)"
    )
    head = f"  {'family':<22} {'N':>6} {'model':<24} " + " ".join(f"{v:>12}" for v in VERDICTS)
    print(head + f" {'p<0.01':>12} {'warned':>7}  noise× (profiled along every direction)")
    t0 = time.perf_counter()
    sets = 4 if quick else N_SETS
    wrong, cache, out = _wrong_models(), default_cache_dir(), {}
    for name, N in CELLS:
        model, truth, protocol = family(name)
        if N <= 1000:  # the small-N sweep's data sets (its command: --sizes 500,1000)
            protocol = replace(protocol, sizes=(500, 1000))
        data = [load_dataset(name, model, truth, protocol, k, N, cache)[:N] for k in range(sets)]
        for label, m in [("correct", model)] + [("wrong: " + w, m) for w, m in wrong.get(name, [])]:
            c = out[f"{name}/{N}/{label}"] = _count([_fit(m, X, k) for k, X in enumerate(data)])
            print(_row(name, N, label, c, sets), flush=True)
    for N in ROTATION_SIZES:
        c = out[f"rotation/{N}"] = _count(_rotation(sets, N))
        print(_row("quartic rotation law", N, "wrong: linear + rotation", c, sets), flush=True)
    print(f"\nverdicts: {time.perf_counter() - t0:.0f} s")
    return out


__all__ = ["section_verdicts", "CELLS", "rotation_models", "rotation_data"]
