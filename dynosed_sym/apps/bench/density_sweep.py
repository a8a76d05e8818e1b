"""Multi-seed sweep of :func:`density_from_dynamics` over SDEs with known stationary laws.

    python -m dynosed_sym.apps.bench.density_sweep                # every case, seeds 0-3
    python -m dynosed_sym.apps.bench.density_sweep --cases ring_issue dw1_issue --seeds 0 1
    python -m dynosed_sym.apps.bench.density_sweep --list

Each run uses the default settings.  Distances are to independent oracles, never to the method's
own estimates:

* d ≤ 2, exact law: total variation ½∫|q − p| by midpoint quadrature on a grid covering the mass
  (p normalised on the same grid);
* d = 3, exact law: KL(p‖q) = E_p[log p − log q] by Monte Carlo over 200 000 exact draws from p
  (Gaussian, or a product of a 1-D law drawn by inverse CDF on a fine grid and Gaussians), with
  its standard error;
* no closed form (non-gradient bistable): total variation between q's mass per bin (4 × 4
  sub-cell quadrature) and a histogram of 2·10⁶ simulated samples, with the half-vs-half noise
  of that histogram.

Cases marked "dev" were used while developing the method; "held-out" ones only through this
sweep.  Output: one row per (case, seed) and a summary per case.

``--known-bad`` runs the given cases with settings known to give bad densities — Gaussian-mixture
tails (no tail map), a blob start at the origin, no cell anchor, no restart, 1500 steps — to show
what the convergence checks say about them (``benchmarks/density_sweep_known_bad.txt``).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ...density import Architecture, Training
from ..demo import density_examples as ex

__all__ = ["CASES", "Case", "measure", "run_case", "main"]

_OU_M1 = np.array([[-1.0, 2.0, 0.0], [0.0, -1.0, 1.0], [0.0, 0.0, -0.5]])
_OU_D1 = 0.5 * np.eye(3)
_OU_M2 = np.array([[-0.5, 3.0, 0.0], [-1.0, -0.5, 0.0], [0.5, 0.0, -2.0]])
_OU_D2 = np.diag([0.2, 0.5, 0.3])


@dataclass
class Case:
    """A sweep case: how to build it and which oracle measures it."""

    name: str
    kind: str  # "dev" or "held-out"
    build: object  # () -> (model, theta)
    oracle: str  # "grid" (exact, d ≤ 2), "kl" (exact, d = 3), "sim" (histogram)
    log_density: object = None  # exact unnormalised log p (grid)
    extent: tuple = ()  # grid box (lo..., hi...) per axis: ((lo, hi), ...)
    sampler: object = None  # (n, rng) -> exact draws with normalised log p: (X, logp)
    note: str = ""


def _grid_case(name, kind, build, logp, extent, note):
    return Case(name, kind, build, "grid", log_density=logp, extent=extent, note=note)


def _sim_case(name, kind, build, note):
    """A case without a closed-form law, compared with a long simulation on (-5, 5)²."""
    extent = ((-5.0, 5.0), (-5.0, 5.0))
    return Case(name, kind, build, "sim", extent=extent, note=f"{note} (vs simulation)")


def _ou_case(name, kind, M, D, note):
    return Case(name, kind, lambda: ex.ou(M, D), "kl", sampler=_ou_sampler(M, D), note=note)


def _ou_sampler(M, D):
    S = ex.ou_covariance(M, D)
    L = np.linalg.cholesky(S)
    d = S.shape[0]
    logdet = 2.0 * np.log(np.diag(L)).sum()

    def draw(n, rng):
        Z = rng.standard_normal((n, d))
        X = Z @ L.T
        logp = -0.5 * (Z**2).sum(1) - 0.5 * logdet - 0.5 * d * np.log(2 * np.pi)
        return X, logp

    return draw


def _well3_sampler(D0=0.25):
    g = np.linspace(-3.0, 3.0, 600_001)
    lp1 = -((g**2 - 1) ** 2 / 4.0) / D0
    w = np.exp(lp1 - lp1.max())
    h = g[1] - g[0]
    Z1 = w.sum() * h
    cdf = np.cumsum(w)
    cdf /= cdf[-1]

    def draw(n, rng):
        x1 = np.interp(rng.random(n), cdf, g)
        rest = rng.standard_normal((n, 2)) * np.sqrt(D0)
        logp = (
            -((x1**2 - 1) ** 2 / 4.0) / D0
            - lp1.max()
            - np.log(Z1)
            - 0.5 * (rest**2).sum(1) / D0
            - np.log(2 * np.pi * D0)
        )
        return np.column_stack([x1, rest]), logp

    return draw


CASES = {
    c.name: c
    for c in [
        # --- development cases (the first failures seen, the bundled examples, one of each kind)
        _grid_case(
            "ring_issue",
            "dev",
            lambda: ex.ring(1.0, 1.0, 1.5, 0.25),
            lambda P: ex.ring_log_density(P, 1.0, 1.0, 0.25),
            ((-2.5, 2.5), (-2.5, 2.5)),
            "ring α=β=1, ω=1.5, D=0.25 (Gaussian tails: TV 0.10-0.17)",
        ),
        _grid_case(
            "dw1_issue",
            "dev",
            lambda: ex.double_well_1d(0.2),
            lambda P: ex.double_well_1d_log_density(P, 0.2),
            ((-3.0, 3.0),),
            "1-D double well x − x³, D=0.2, barrier 1.25 D (blob start: TV 0.23)",
        ),
        _grid_case(
            "dw1_b3",
            "dev",
            lambda: ex.double_well_1d(1.0 / 12.0),
            lambda P: ex.double_well_1d_log_density(P, 1.0 / 12.0),
            ((-3.0, 3.0),),
            "1-D double well, barrier 3 D",
        ),
        _grid_case(
            "dw2_b2",
            "dev",
            lambda: ex.double_well_2d(0.125, 0.5, 0.5),
            lambda P: ex.double_well_2d_log_density(P, 0.125, 0.5),
            ((-2.5, 2.5), (-3.0, 3.0)),
            "2-D double well, barrier 2 D, rotation ω=0.5, coupling c=0.5",
        ),
        _grid_case(
            "hopf",
            "dev",
            lambda: ex.hopf_oscillator(),
            lambda P: ex.hopf_log_density(P),
            ((-5.0, 5.0), (-5.0, 5.0)),
            "bundled limit-cycle oscillator (Gaussian tails)",
        ),
        _ou_case("ou3_nonnormal", "dev", _OU_M1, _OU_D1, "3-D non-normal OU"),
        _sim_case("swirl", "dev", ex.swirl_bistable, "bundled non-gradient bistable"),
        # --- held-out cases
        _grid_case(
            "ring_wide_still",
            "held-out",
            lambda: ex.ring(1.0, 1.0, 0.0, 0.5),
            lambda P: ex.ring_log_density(P, 1.0, 1.0, 0.5),
            ((-3.0, 3.0), (-3.0, 3.0)),
            "ring D=0.5 (wide), no rotation",
        ),
        _grid_case(
            "ring_narrow_fast",
            "held-out",
            lambda: ex.ring(2.0, 1.0, 5.0, 0.2),
            lambda P: ex.ring_log_density(P, 2.0, 1.0, 0.2),
            ((-2.5, 2.5), (-2.5, 2.5)),
            "ring α=2 (radius √2), D=0.2 (narrow), fast rotation ω=5",
        ),
        _grid_case(
            "ring_sl_D0.1",
            "held-out",
            lambda: ex.ring(1.0, 1.0, 2.0, 0.1),
            lambda P: ex.ring_log_density(P, 1.0, 1.0, 0.1),
            ((-2.0, 2.0), (-2.0, 2.0)),
            "models/limit_cycle.py's Stuart–Landau law at D=0.1, ω=2 (Gaussian tails: TV 0.33)",
        ),
        _grid_case(
            "dw1_b1",
            "held-out",
            lambda: ex.double_well_1d(0.25),
            lambda P: ex.double_well_1d_log_density(P, 0.25),
            ((-3.0, 3.0),),
            "1-D double well, barrier 1 D",
        ),
        _grid_case(
            "dw1_b2_tilted",
            "held-out",
            lambda: ex.double_well_1d(0.125, tilt=0.05),
            lambda P: ex.double_well_1d_log_density(P, 0.125, tilt=0.05),
            ((-3.0, 3.0),),
            "1-D tilted double well (x − x³ + 0.05), barrier ≈ 2 D, wells 69 : 31",
        ),
        _grid_case(
            "dw2_b3",
            "held-out",
            lambda: ex.double_well_2d(1.0 / 12.0, 1.0, 0.0),
            lambda P: ex.double_well_2d_log_density(P, 1.0 / 12.0, 0.0),
            ((-2.5, 2.5), (-2.0, 2.0)),
            "2-D double well, barrier 3 D, rotation ω=1",
        ),
        _grid_case(
            "dw2_b1",
            "held-out",
            lambda: ex.double_well_2d(0.25, 2.0, -0.5),
            lambda P: ex.double_well_2d_log_density(P, 0.25, -0.5),
            ((-3.0, 3.0), (-3.5, 3.5)),
            "2-D double well, barrier 1 D, rotation ω=2, coupling c=−0.5",
        ),
        _grid_case(
            "sdw1",
            "held-out",
            lambda: ex.state_dependent_well(1),
            lambda P: ex.state_dependent_well_log_density(P),
            ((-3.0, 3.0),),
            "1-D double well with D(x) = 0.25(1 + x²/2), barrier 1 D₀",
        ),
        _grid_case(
            "sdw2",
            "held-out",
            lambda: ex.state_dependent_well(2),
            lambda P: ex.state_dependent_well_log_density(P),
            ((-3.0, 3.0), (-2.5, 2.5)),
            "2-D double well with D(x) = 0.25(1 + |x|²/2) I, rotation ω=0.5",
        ),
        _ou_case(
            "ou3_rotating", "held-out", _OU_M2, _OU_D2, "3-D OU with rotation and anisotropic D"
        ),
        Case(
            "sdw3",
            "held-out",
            lambda: ex.state_dependent_well(3),
            "kl",
            sampler=_well3_sampler(0.25),
            note="3-D double well with state-dependent D",
        ),
        _sim_case(
            "swirl_variant",
            "held-out",
            ex.swirl_bistable_variant,
            "non-gradient bistable, D=0.3, k=0.5, g=2",
        ),
    ]
}


def _sim_reference(model, theta, seed, n=2_000_000):
    from ...simulation import simulate

    return simulate(model, theta, n, dt=0.005, burn_in=6000, thin=50, n_chains=4000, seed=seed)


def measure(case, dens, seed=0, reference=None):
    """Distance of a learned density to the case's oracle → dict(metric, value, noise)."""
    if case.oracle == "grid":
        n = 4000 if len(case.extent) == 1 else 250
        tv, integral = ex.grid_tv(dens, case.log_density, case.extent, n)
        return {"metric": "TV", "value": tv, "noise": 0.0, "integral": integral}
    if case.oracle == "kl":
        X, logp = case.sampler(200_000, np.random.default_rng(10_000 + seed))
        diff = logp - dens.log_prob(X)
        return {
            "metric": "KL",
            "value": float(diff.mean()),
            "noise": float(diff.std() / np.sqrt(diff.size)),
        }
    X = reference
    if X is None:
        model, theta = case.build()
        X = _sim_reference(model, theta, 777)
    tv = ex.histogram_tv(dens, X, case.extent)
    half = X.shape[0] // 2  # rows are ordered by chain: two halves of the chains
    ext = case.extent
    H1, _, _ = np.histogram2d(X[:half, 0], X[:half, 1], bins=40, range=[ext[0], ext[1]])
    H2, _, _ = np.histogram2d(X[half:, 0], X[half:, 1], bins=40, range=[ext[0], ext[1]])
    noise = 0.5 * float(np.abs(H1 / half - H2 / (X.shape[0] - half)).sum()) / 2.0
    return {"metric": "TV", "value": tv, "noise": noise}


def run_case(case, seed, reference=None, **options):
    """Train with default settings (or the option objects ``options``: ``architecture=``,
    ``training=``, …) and measure → dict for one table row."""
    from ...density import density_from_dynamics

    model, theta = case.build()
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dens = density_from_dynamics(model, theta, seed=seed, **options)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    m = measure(case, dens, seed, reference)
    dg = dens.diagnostic
    return dict(
        case=case.name,
        kind=case.kind,
        seed=seed,
        metric=m["metric"],
        value=m["value"],
        noise=m["noise"],
        converged=dg.converged,
        stop=dg.stop_reason,
        steps=dg.total_steps,
        runs=len(dg.runs),
        rho=dg.residual_ratio,
        sim_tv=dg.sim_tv,
        warned=any("ConvergenceWarning" in type(w.message).__name__ for w in caught),
        wall=wall,
        cpu=cpu,
        density=dens,
    )


def _row(r):
    stv = "—" if r["sim_tv"] is None else f"{r['sim_tv']:.3f}"
    noise = f" ±{r['noise']:.3f}" if r["noise"] else ""
    return (
        f"{r['case']:<18} {r['kind']:<8} {r['seed']:>4} {r['metric']:>3} {r['value']:7.4f}"
        f"{noise:<8} {str(r['converged']):<6} {r['stop']:<8} {r['steps']:>5} {r['runs']:>2} "
        f"{r['rho']:9.2e} {stv:>6} {r['wall']:6.1f} {r['cpu']:6.1f}"
    )


#: Settings known to give bad densities (``--known-bad``): Gaussian-mixture tails, a blob start,
#: no cell anchor, no restart, at most 1500 steps, no stopping on a small residual ratio.
KNOWN_BAD = dict(
    init="blob",
    architecture=Architecture(tail=False),
    training=Training(anchor=0.0, restarts=0, n_steps=1500, tol=0.0),
)

HEADER = (
    f"{'case':<18} {'kind':<8} {'seed':>4} {'':>3} {'dist':>7}{'':<8} {'conv':<6} {'stop':<8} "
    f"{'steps':>5} {'rn':>2} {'rho':>9} {'simTV':>6} {'wall s':>6} {'cpu s':>6}"
)


PROG = "python -m dynosed_sym.apps.bench.density_sweep"


def _parser():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=None, help="case names (default: all)")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--kind", choices=["dev", "held-out"], default=None)
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--known-bad",
        action="store_true",
        help="settings known to give bad densities: no tail map, a blob start, no anchor, "
        "no restart, 1500 steps",
    )
    return parser


def _print_header(args, argv):
    import os
    import platform

    which = f"known-bad settings {KNOWN_BAD}" if args.known_bad else "default settings"
    command = " ".join([PROG] + list(sys.argv[1:] if argv is None else argv))
    print(f"# command: {command}")
    print(
        f"# dynosed_sym density sweep: {which}, seeds {args.seeds}; "
        f"{platform.machine()}, {os.cpu_count()} cores, load average at start "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        "# dist: TV (d ≤ 2; grid quadrature against the exact law, or a 2·10⁶-sample histogram "
        "± its noise for 'sim' cases) or KL(p‖q) (d = 3, Monte Carlo over exact draws ± s.e.)"
    )
    print(
        "# conv/stop/steps/rn: converged flag, stopping reason, Adam steps over all runs, runs; "
        "rho: residual ratio; simTV: soft-cell TV to the starting simulation"
    )
    print(HEADER)


def _print_summary(names, rows):
    print()
    print(
        f"{'case':<18} {'kind':<8} {'dist':>4} {'max':>7} {'mean':>7} {'conv':>5} {'warned':>6} "
        f"{'max rho':>9} {'mean wall s':>11} {'mean cpu s':>10}"
    )
    for name in names:
        rs = [r for r in rows if r["case"] == name]
        v = np.array([r["value"] for r in rs])
        print(
            f"{name:<18} {rs[0]['kind']:<8} {rs[0]['metric']:>4} {v.max():7.4f} {v.mean():7.4f} "
            f"{sum(r['converged'] for r in rs):>2}/{len(rs):<2} "
            f"{sum(r['warned'] for r in rs):>3}/{len(rs):<2} "
            f"{max(r['rho'] for r in rs):9.2e} {np.mean([r['wall'] for r in rs]):11.1f} "
            f"{np.mean([r['cpu'] for r in rs]):10.1f}"
        )


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for c in CASES.values():
            print(f"{c.name:<18} {c.kind:<8} {c.oracle:<4} {c.note}")
        return 0
    names = args.cases or [n for n, c in CASES.items() if args.kind is None or c.kind == args.kind]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r} (see --list)")
    _print_header(args, argv)
    rows = []
    for name in names:
        case = CASES[name]
        reference = None
        if case.oracle == "sim":
            model, theta = case.build()
            reference = _sim_reference(model, theta, 777)
        for seed in args.seeds:
            r = run_case(case, seed, reference, **(KNOWN_BAD if args.known_bad else {}))
            r.pop("density")
            rows.append(r)
            print(_row(r), flush=True)
    _print_summary(names, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
