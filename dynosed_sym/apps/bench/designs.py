"""Time courses: the quadrature bias against the snapshot spacing, measured on exact laws.

Usage::

    python -m dynosed_sym.apps.bench.designs                  # the table in benchmarks/
    python -m dynosed_sym.apps.bench.designs --quick          # fewer repetitions

Model: the 2-D OU of ``models/ou2d.py`` (all of M free, D = I) after a change, started from
N((2, −1), 0.1 I) at t = 0 — the issue's example.

1. *Population bias* (no sampling noise): every snapshot's system from the exact Gaussian moments
   of its law (mean e^{Mt}μ₀, covariance by Van Loan), E[sin(ωᵀx + c)] = e^{−ωᵀSω/2} sin(ωᵀμ + c)
   and Stein's lemma for the factors linear in x.  max_k |θ̂_k − M_k| of the stacked population
   system for a fixed span T = 1.6 with uniform spacing Δ (and uneven spacings), for the
   quadrature orders 2 (trapezoid), 3 and 4; mean over 3 feature draws (m = 512, ℓ = the pooled
   median of the exact laws' samples).  The observed rate log₂(bias(2Δ)/bias(Δ)).
2. *Finite samples*: nine snapshots × 20,000 exact samples at Δ = 0.2 (span 1.6), R repetitions:
   max |error| (median, 90th percentile), coverage of the 95 % intervals per entry and the
   fraction of misspecification p-values below 0.05, for orders 2 and 4.
3. *Advice calibration*: the OU with D = diag(s, 1), one environment s = 1 with 100,000 exact
   samples; the advice's predicted N for candidate environments; then R repetitions of the
   augmented design with 0.5×, 1× and 2× that N in the new environment: how often it has rank 4.
4. *Two noise environments*: s = 1 and 3, 2 × 100,000 exact samples, R repetitions: rank, max
   |error|, coverage and p-values (the issue's acceptance case).
5. *Local route on the time course*: nine snapshots × 20,000, scores of the Gaussian fitted to
   each snapshot (so that only the ∂ₜlog p estimate from the neighbouring snapshots is tested),
   17 probes per snapshot within 1.2 sd, kernel bandwidth h of the ∂ₜ densities: max |error|
   using every interior snapshot, or only t ≥ 0.4, t ≥ 0.6.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import scipy.linalg

import dynosed_sym as ds
from dynosed_sym.assembly.designs import (
    Snapshot,
    design_map,
    param_layout,
    pooled_lengthscale,
)
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import BlockSystem
from dynosed_sym.data.designs import as_design
from dynosed_sym.identifiability.designs_structural import gaussian_law_at
from dynosed_sym.solve.linear import solve_tikhonov

from .common import MODELS

M_TRUE = np.array([[-1.0, 0.5], [-0.5, -1.0]])
START = (np.array([2.0, -1.0]), 0.1 * np.eye(2))
SPAN = 1.6


def transient_law(t, M=M_TRUE, D=None, start=START):
    """(μ(t), Σ(t)) of dx = Mx dt + √(2D) dW from N(μ₀, Σ₀) (mean e^{Mt}μ₀, Van Loan)."""
    D = np.eye(M.shape[0]) if D is None else D
    return gaussian_law_at(M, np.zeros(M.shape[0]), D, t, start)


def population_snapshot(feats, mu, S, D=None):
    """Exact (A, b, Z) of the OU model (params M11, M12, M21, M22) under N(μ, S), as a Snapshot.

    A[r, (i, j)] = −√(2/m) ω_ri E[sin(ω_rᵀx + c_r) x_j],  b_r = √(2/m) E[cos(·)] ω_rᵀDω_r,
    Z_r = √(2/m) E[cos(·)], with E[sin·x] = μ E[sin] + Sω E[cos] (Stein's lemma).
    """
    Om, ph = feats.omega, feats.phase
    D = np.eye(Om.shape[1]) if D is None else D
    m = Om.shape[0]
    sc = math.sqrt(2.0 / m)
    damp = np.exp(-0.5 * np.einsum("rj,jl,rl->r", Om, S, Om))
    Es = damp * np.sin(Om @ mu + ph)
    Ec = damp * np.cos(Om @ mu + ph)
    Esx = mu[None, :] * Es[:, None] + (Om @ S) * Ec[:, None]  # (m, d): E[sin·x_j]
    A = -sc * np.einsum("ri,rj->rij", Om, Esx).reshape(m, -1)
    b = sc * Ec * np.einsum("rj,jl,rl->r", Om, D, Om)
    Z = sc * Ec
    system = BlockSystem(A, b, np.stack([A, A]), np.stack([b, b]), np.array([1, 1]))
    return Snapshot(system, Z, np.stack([Z, Z]))


def population_fit(times, order, seed, m=512, model=None):
    """θ̂ of the noise-free stacked time course (equal snapshot sizes)."""
    model = model or ds.load_model(f"{MODELS}/ou2d.py")
    laws = [transient_law(t) for t in times]
    rng = np.random.default_rng(seed)
    pool = [rng.multivariate_normal(mu, S, 400) for mu, S in laws]
    ell = pooled_lengthscale(pool, seed=seed)
    feats = draw_features(2, m, ell, seed=seed)
    snaps = [population_snapshot(feats, mu, S) for mu, S in laws]
    tc = ds.TimeCourse({float(t): np.zeros((2, 2)) for t in times})
    design = as_design(tc, model)
    names, columns = param_layout(model.param_names, [], design.names, True)
    dmap = design_map(
        design, {design.names[0]: [(g, 1) for g in range(len(times))]}, names, columns, order
    )
    A, b = dmap.stack([s.mean() for s in snaps])
    return solve_tikhonov(A, b, 0.0)


def bias_table(n_draws=3):
    rows = []
    for label, grids in (
        ("uniform", {h: np.arange(0.0, SPAN + 1e-9, h) for h in (0.4, 0.2, 0.1, 0.05)}),
        (
            "alternating 0.5h/1.5h",
            {
                h: np.cumsum(
                    [0.0]
                    + [0.5 * h if k % 2 == 0 else 1.5 * h for k in range(int(round(SPAN / h)))]
                )
                for h in (0.4, 0.2, 0.1)
            },
        ),
    ):
        prev = {}
        for h, times in grids.items():
            cells = []
            for order in (2, 3, 4):
                err = np.mean(
                    [
                        np.abs(population_fit(times, order, s) - M_TRUE.reshape(-1)).max()
                        for s in range(n_draws)
                    ]
                )
                rate = math.log2(prev[order] / err) if order in prev else float("nan")
                prev[order] = err
                cells.append((err, rate))
            rows.append((label, h, len(times), cells))
    return rows


def finite_table(reps, n=20_000, m=512):
    model = ds.load_model(f"{MODELS}/ou2d.py")
    times = np.arange(9) * 0.2
    truth = M_TRUE.reshape(-1)
    out = {}
    for order in (2, 4):
        errs, cover, small_p = [], [], []
        for r in range(reps):
            rng = np.random.default_rng(1000 + r)
            tc = ds.TimeCourse(
                {float(t): rng.multivariate_normal(*transient_law(t), n) for t in times}
            )
            fit = ds.fit_global(model, tc, order=order, features=ds.Features(n_features=m, seed=r))
            errs.append(np.abs(fit.theta - truth).max())
            ci = fit.conf_int()
            cover.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
            small_p.append(fit.report.p_value < 0.05)
        out[order] = (np.array(errs), np.mean(cover, axis=0), np.mean(small_p))
    return out


def _aniso_model():
    import sympy as sp

    x, y, s = sp.symbols("x y s", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    return ds.SDEModel(
        [x, y],
        M,
        list(M * sp.Matrix([x, y])),
        [s, 1],
        inputs=[s],
        name="ou2d_noise",
        nominal=M_TRUE.reshape(-1),
    )


def _stationary(s, n, seed):
    S = scipy.linalg.solve_continuous_lyapunov(M_TRUE, -2.0 * np.diag([s, 1.0]))
    return np.random.default_rng(seed).multivariate_normal(np.zeros(2), S, int(n))


def advice_table(reps, candidates=(10.0, 0.5)):
    """Predicted N for each candidate and the rank-4 frequency at 0.5×, 1×, 2× of it."""
    model = _aniso_model()

    def sampler(inputs, theta, n, seed, time=None, initial=None):
        return _stationary(inputs["s"], n, seed)

    check = ds.check_identifiability(
        model,
        experiment=ds.Experiment(inputs={"s": 1.0}, candidates=[{"s": c} for c in candidates]),
        study=ds.Study(sampler=sampler, n_samples=100_000),
        features=ds.Features(n_features=512),
    )
    rows = []
    for adv in check.advice:
        s_c, n_c = adv.inputs["s"], adv.n_needed
        freq = []
        for mult in (0.5, 1.0, 2.0):
            ok = 0
            for r in range(reps):
                data = {
                    "cur": _stationary(1.0, 100_000, 5000 + r),
                    "new": _stationary(s_c, max(50, int(mult * n_c)), 6000 + r),
                }
                fit = ds.fit_global(
                    model,
                    data,
                    inputs={"cur": {"s": 1.0}, "new": {"s": s_c}},
                    features=ds.Features(n_features=512, seed=r),
                    execution=ds.Execution(n_blocks=min(32, int(mult * n_c) // 8)),
                )
                ok += fit.report.rank == 4
            freq.append(ok / reps)
        rows.append((s_c, n_c, freq))
    return rows


def env_table(reps):
    model = _aniso_model()
    truth = M_TRUE.reshape(-1)
    errs, cover, small_p, ranks, thetas, ses = [], [], [], [], [], []
    for r in range(reps):
        data = {"A": _stationary(1.0, 100_000, 7000 + r), "B": _stationary(3.0, 100_000, 8000 + r)}
        fit = ds.fit_global(
            model, data, inputs={"A": {"s": 1.0}, "B": {"s": 3.0}}, features=ds.Features(seed=r)
        )
        errs.append(np.abs(fit.theta - truth).max())
        ci = fit.conf_int()
        cover.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
        small_p.append(fit.report.p_value < 0.05)
        ranks.append(fit.report.rank)
        thetas.append(fit.theta)
        ses.append(fit.report.std_errors)
    spread = (np.std(thetas, axis=0, ddof=1), np.mean(ses, axis=0))
    return np.array(errs), np.mean(cover, axis=0), np.mean(small_p), np.array(ranks), spread


def _gaussian_fit_score(X, P):
    mu = X.mean(axis=0)
    Si = np.linalg.inv(np.cov(X.T))
    return -(P - mu) @ Si, np.broadcast_to(-Si, (P.shape[0],) + Si.shape).copy()


def local_table(bandwidths=(0.15, 0.25, 0.4), n=20_000):
    model = ds.load_model(f"{MODELS}/ou2d.py")
    times = np.arange(9) * 0.2
    rng = np.random.default_rng(3)
    tc = ds.TimeCourse({float(t): rng.multivariate_normal(*transient_law(t), n) for t in times})
    ang = np.linspace(0, 2 * np.pi, 9)[:-1]
    ring = np.concatenate(
        [
            [[0.0, 0.0]],
            0.6 * np.c_[np.cos(ang), np.sin(ang)],
            1.2 * np.c_[np.cos(ang + 0.3), np.sin(ang + 0.3)],
        ]
    )
    probes = {}
    for t in tc.times.tolist():
        mu, S = transient_law(t)
        probes[t] = mu + ring @ np.linalg.cholesky(S).T
    truth = M_TRUE.reshape(-1)
    rows = []
    for h in bandwidths:
        cells = []
        for use in (None, [0.4, 0.6, 0.8, 1.0, 1.2, 1.4], [0.6, 0.8, 1.0, 1.2, 1.4]):
            fit = ds.fit_local(
                model,
                tc,
                probes,
                scores=ds.Scores(score=_gaussian_fit_score, dlogp_bandwidth=h, use_times=use),
                execution=ds.Execution(n_blocks=16),
            )
            cells.append(
                (
                    np.abs(fit.theta - truth).max(),
                    (fit.report.p_value, fit.report.p_value_bound),
                    sum("fast transient" in nt for nt in fit.design.notes),
                )
            )
        rows.append((h, cells))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m dynosed_sym.apps.bench.designs", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="1 feature draw, 5 repetitions")
    ap.add_argument("--reps", type=int, default=None, help="finite-sample repetitions (40)")
    ap.add_argument("--sections", default="1,2,3,4,5", help="sections to run (default: all)")
    args = ap.parse_args(argv)
    run = {int(v) for v in args.sections.split(",") if v.strip()}
    t0 = time.perf_counter()
    print("Time courses: quadrature bias against the snapshot spacing (exact transient OU law)")
    print("model ou2d (M = [[-1, .5], [-.5, -1]], D = I), start N((2, -1), 0.1 I), m = 512")
    sections = {1: _section1, 2: _section2, 3: _section3, 4: _section4, 5: _section5}
    for k in sorted(run):
        sections[k](args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


def _section1(args):
    print()
    print(
        "1. population bias max_k |θ̂_k − M_k| (no sampling noise), span 1.6, mean of "
        f"{1 if args.quick else 3} feature draws; (rate) = log2 of the ratio to the row above"
    )
    print(
        f"{'spacing':<24}{'h':>6}{'snapshots':>10}   {'order 2':>16}   {'order 3':>16}   "
        f"{'order 4':>16}"
    )
    for label, h, k, cells in bias_table(1 if args.quick else 3):
        text = "   ".join(
            f"{e:9.2e} ({r:4.2f})" if np.isfinite(r) else f"{e:9.2e}       " for e, r in cells
        )
        print(f"{label:<24}{h:>6g}{k:>10}   {text}")


def _section2(args):
    reps = args.reps or (5 if args.quick else 40)
    print()
    print(
        f"2. finite samples: 9 snapshots × 20,000 exact samples, Δt = 0.2, m = 512, {reps} "
        "repetitions (seeds 1000+r for the data, r for the features)"
    )
    res = finite_table(reps)
    for order, (errs, cover, small_p) in res.items():
        print(
            f"order {order}: max|error| median {np.median(errs):.3f}, 90th percentile "
            f"{np.quantile(errs, 0.9):.3f}, max {errs.max():.3f}; 95% coverage "
            f"[{' '.join(f'{c:.2f}' for c in cover)}]; p < 0.05 in {100 * small_p:.0f} %"
        )


def _section3(args):
    reps3 = 5 if args.quick else 20
    print()
    print(
        f"3. advice calibration: D = diag(s, 1), current s = 1 with 100,000 samples, m = 512; "
        f"{reps3} repetitions (seeds 5000+r, 6000+r) of the augmented design per multiple"
    )
    for s_c, n_c, freq in advice_table(reps3):
        print(
            f"candidate s = {s_c:g}: predicted N = {n_c:,.0f}; rank 4 at 0.5× / 1× / 2× in "
            + " / ".join(f"{100 * f:.0f} %" for f in freq)
        )


def _section4(args):
    reps4 = 5 if args.quick else 40
    print()
    print(
        f"4. two environments s = 1, 3 (D = diag(s, 1)), 2 × 100,000 exact samples, m = 2048, "
        f"{reps4} repetitions (seeds 7000+r, 8000+r)"
    )
    errs, cover, small_p, ranks, (sd, se) = env_table(reps4)
    print(
        f"rank 4 in {np.mean(ranks == 4) * 100:.0f} %; max|error| median {np.median(errs):.3f}, "
        f"max {errs.max():.3f}; 95% coverage [{' '.join(f'{c:.2f}' for c in cover)}]; "
        f"p < 0.05 in {100 * small_p:.0f} %"
    )
    print(
        f"sd of the estimates [{' '.join(f'{v:.4f}' for v in sd)}] against the mean sandwich "
        f"SE [{' '.join(f'{v:.4f}' for v in se)}]"
    )


def _section5(args):
    print()
    print(
        "5. local route on the time course (9 × 20,000, seed 3; Gaussian-fit scores, 17 probes "
        "per snapshot; cells: max|error|, p-value, snapshots flagged as fast transients)"
    )
    print(f"{'h':>6}   {'every interior t':>32}   {'t ≥ 0.4':>32}   {'t ≥ 0.6':>32}")
    for h, cells in local_table():
        text = "   ".join(
            f"{e:7.3f}  p {'<' if bound else '='} {p:8.2g}  flagged {k}"
            for e, (p, bound), k in cells
        )
        print(f"{h:>6g}   {text}")


if __name__ == "__main__":
    main()
