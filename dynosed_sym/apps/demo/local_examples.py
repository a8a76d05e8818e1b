"""The local route: OU with exact and estimated scores, state-dependent D, a non-stationary
snapshot, Lorenz in balls."""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg

import dynosed_sym as ds

from .common import _load, _rule


def _lorenz_in_balls(model, balls, n_total, seed, chunk_chains=4096, records=977):
    """``n_total`` steady-state Lorenz samples (dt 0.01, thin 10), kept only inside ``balls``.

    Simulated in chunks of ``chunk_chains × records`` samples; every chunk continues the chains
    of the previous one (burn-in 5000 steps once), so memory stays at one chunk.
    """
    chunk = chunk_chains * records
    parts, x0 = [], None
    for k in range(-(-int(n_total) // chunk)):
        X = ds.simulate(
            model,
            model.nominal,
            chunk,
            burn_in=5000 if x0 is None else 0,
            n_chains=chunk_chains,
            seed=seed * 1000 + k,
            x0=x0,
        )
        x0 = X.reshape(chunk_chains, records, model.d)[:, -1]
        parts.append(balls.restrict(X, allow_empty=True))
    return np.concatenate(parts)


LORENZ_TEMPERATURES = (5, 10, 20, 35, 49, 70, 100)


def lorenz_local_fits(model, X, balls, temperatures=LORENZ_TEMPERATURES):
    """{(estimator, T): θ̂} for one data set in balls (kernel, local Gaussian, score matching)."""
    import warnings

    out = {}
    for T in temperatures:
        for est in ("kernel", "local_gaussian"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out[est, T] = ds.fit_local(
                        model, X, balls, scores=ds.Scores(temperature=T, score=est)
                    ).theta
            except ds.DataError:  # too few points within the kernel at this T
                out[est, T] = np.full(model.n, np.nan)
    out["score_matching", None] = ds.fit_local(
        model, X, balls, scores=ds.Scores(score="score_matching")
    ).theta
    return out


def lorenz_local(
    n_draws=3, n_dense=100_000_000, sparse_per_ball=1000, temperatures=LORENZ_TEMPERATURES
):
    """The reference paper's Lorenz local-route experiment: ten balls on the attractor."""
    model = _load("lorenz")
    truth = model.nominal
    centres = ds.choose_probes(
        ds.simulate(model, truth, 200_000, seed=0), 10, method="random", seed=1, min_separation=5.0
    )
    balls = ds.Balls(centres, 2.0)
    _rule(
        f"Lorenz, local route: 10 balls of radius 2 on the attractor, probes at their centres, "
        f"{n_draws} independent draws"
    )
    t0 = time.perf_counter()
    dense, sparse, counts = [], [], []
    for r in range(n_draws):
        X = _lorenz_in_balls(model, balls, n_dense, seed=7 + r)
        counts.append(balls.counts(X))
        dense.append(lorenz_local_fits(model, X, balls, temperatures))
        sparse.append(
            lorenz_local_fits(
                model, balls.restrict(X, max_per_ball=sparse_per_ball, seed=r), balls, temperatures
            )
        )
    counts = np.mean(counts, axis=0)
    print(
        f"dense: {n_dense:.0e} steady-state samples per draw (dt 0.01, thin 10), of which "
        f"{counts.sum():,.0f} fall in the balls ({counts.min():,.0f} … {counts.max():,.0f} per "
        "ball); "
        f"sparse: {sparse_per_ball} of them per ball; {time.perf_counter() - t0:.0f} s"
    )
    print(
        "kernel: docs/method.md §2 estimator ŝ = T(Σw x − x), ∇ŝ = T²Cov_w − T I (the score of p "
        "smoothed by "
        "N(0, I/T));\nlocal Gaussian: the same weights, s = Cov_w⁻¹(Σw x − x), J = T I − Cov_w⁻¹ "
        "(no "
        "smoothing bias);\nscore matching: boundary-weighted Hyvärinen fit of a local quadratic "
        "log-density in each ball (no T)"
    )
    names = model.param_names
    head = (
        f"{'balls':<7}{'T':>5}  {'estimator':<15}"
        + "".join(f"{f'{p} ({t:.4g})':>19}" for p, t in zip(names, truth))
        + "   mean err  rms err"
    )
    print(head)
    print("-" * len(head))
    for label, res in (("dense", dense), ("sparse", sparse)):
        keys = [(e, T) for T in temperatures for e in ("kernel", "local_gaussian")] + [
            ("score_matching", None)
        ]
        for est, T in keys:
            th = np.array([d[est, T] for d in res])
            ok = np.isfinite(th).all(axis=1)
            if not ok.any():
                cells = "".join(f"{'(too few points)':>19}" for _ in names)
                err = ""
            else:
                mu, sd = (
                    th[ok].mean(axis=0),
                    (th[ok].std(axis=0, ddof=1) if ok.sum() > 1 else np.full(model.n, np.nan)),
                )
                cells = "".join(f"{f'{m:7.2f} ± {s:5.2f}':>19}" for m, s in zip(mu, sd))
                rms = np.sqrt(np.mean((th[ok] / truth - 1) ** 2, axis=0))
                err = f"   {100 * np.max(np.abs(mu / truth - 1)):6.1f} %  {100 * rms.max():5.1f} %"
                if not ok.all():
                    err += f"  ({ok.sum()} of {len(ok)} draws; the others had too few points)"
            mark = "  ← T* = |λ_min|/D" if T == 49 else ""
            tcol = "" if T is None else str(T)
            print(f"{label:<7}{tcol:>5}  {est.replace('_', ' '):<15}{cells}{err}{mark}")
        print()
    print(
        "cells: mean ± sd over draws of the local-route estimates (truth in the header); mean err: "
        "largest relative error of the mean, rms err: largest root-mean-square relative error of a "
        "single draw"
    )


def _ou_triangular():
    """2-D OU with M = [[a, b], [0, c]] (all three identifiable), truth (−1, 0.8, −2), D = I."""
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    a, b, c = sp.symbols("a b c", real=True)
    model = ds.SDEModel(
        [x, y],
        [a, b, c],
        [a * x + b * y, c * y],
        diffusion=1,
        name="ou_triangular",
        nominal={a: -1.0, b: 0.8, c: -2.0},
    )
    M = np.array([[-1.0, 0.8], [0.0, -2.0]])
    L = np.linalg.cholesky(scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2)))
    return model, L


#: Probe balls for the OU examples: the origin and six k-means centres of the stationary law.
OU_BALL_CENTRES = np.array(
    [
        [0.0, 0.0],
        [-0.371, -0.634],
        [-1.707, -0.448],
        [0.367, 0.622],
        [-0.787, 0.480],
        [0.789, -0.485],
        [1.712, 0.443],
    ]
)


def kernel_temperature_table(
    temperatures=(2, 4, 8, 16, 32, 64, 128), n_draws=8, n_samples=300_000, radius=1.0, seed=0
):
    """Bias and spread of the kernel estimator over T on exact OU samples restricted to balls.

    Returns ``{T: dict(bias (3,), sd (3,), rmse (3,), score_err, jac_err)}``: parameter bias and sd
    over draws, and the mean over draws of the largest score / Jacobian error at the probes against
    the exact Gaussian ones.
    """
    model, L = _ou_triangular()
    truth = model.nominal
    Prec = np.linalg.inv(L @ L.T)
    balls = ds.Balls(OU_BALL_CENTRES, radius)
    rows = {}
    data = [
        balls.restrict(np.random.default_rng(seed + r).standard_normal((n_samples, 2)) @ L.T)
        for r in range(n_draws)
    ]
    for T in temperatures:
        th, se, je = [], [], []
        for X in data:
            fit = ds.fit_local(
                model,
                X,
                OU_BALL_CENTRES,
                scores=ds.Scores(temperature=T),
                execution=ds.Execution(n_blocks=0),
            )
            th.append(fit.theta)
            se.append(np.abs(fit.scores.score + OU_BALL_CENTRES @ Prec).max())
            je.append(np.abs(fit.scores.jacobian + Prec).max())
        th = np.array(th)
        bias, sd = th.mean(axis=0) - truth, th.std(axis=0, ddof=1)
        rows[T] = dict(
            bias=bias,
            sd=sd,
            rmse=np.sqrt(bias**2 + sd**2),
            score_err=float(np.mean(se)),
            jac_err=float(np.mean(je)),
        )
    return rows


def ou_local_example(n_draws=8):
    model, L = _ou_triangular()
    truth = model.nominal
    full = _load("ou2d")
    M = full.nominal.reshape(2, 2)
    _rule(
        "Local route on the 2-D OU: exact scores, then estimated ones from region-restricted "
        "samples"
    )
    Prec = np.linalg.inv(scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2)))
    P = np.random.default_rng(0).normal(size=(12, 2))
    fit = ds.fit_local(
        full,
        None,
        P,
        scores=ds.Scores(score=(-P @ Prec, np.broadcast_to(-Prec, (12, 2, 2)))),
        solver=ds.Solver(lam=1e-12),
    )
    t = fit.theta
    print(
        f"exact scores and Jacobians at 12 probes (all four entries free): rank {fit.report.rank} "
        "of 4, "
        f"free combination {fit.report.null_space[0]}; |M11 + 1| = {abs(t[0] + 1):.1e}, "
        f"|M22 + 1| = {abs(t[3] + 1):.1e}, |M12 + M21| = {abs(t[1] + t[2]):.1e}"
    )
    balls = ds.Balls(OU_BALL_CENTRES, 1.0)
    X = balls.restrict(np.random.default_rng(1).standard_normal((1_000_000, 2)) @ L.T)
    fit = ds.fit_local(model, X, balls, scores=ds.Scores(score="score_matching"))
    print(
        f"M = [[a, b], [0, c]], truth (a, b, c) = (−1, 0.8, −2); 10⁶ exact stationary samples, "
        f"{X.shape[0]:,} of them in 7 balls of radius 1:"
    )
    print(
        "  score matching: (" + ", ".join(f"{v:.3f}" for v in fit.theta) + "), max relative error "
        f"{100 * np.max(np.abs(fit.theta / truth - 1)):.1f} %, {fit.report.rank} of 3 resolved, "
        f"consistent: {fit.report.consistent}"
    )
    rows = kernel_temperature_table(n_draws=n_draws)
    print(
        f"kernel estimator (docs/method.md §2) over the temperature T, {n_draws} draws of 3·10⁵ "
        "samples restricted to the same balls:"
    )
    print(
        f"  {'T':>5}  {'bias (a, b, c)':>24}  {'sd (a, b, c)':>22}  {'RMSE':>6}  "
        f"{'max|ŝ − s|':>10}  "
        f"{'max|Ĵ − J|':>10}"
    )
    for T, r in rows.items():
        print(
            f"  {T:>5}  "
            + " ".join(f"{v:+7.3f}" for v in r["bias"])
            + "  "
            + " ".join(f"{v:6.3f}" for v in r["sd"])
            + f"  {np.linalg.norm(r['rmse']):6.3f}"
            + f"  {r['score_err']:10.3f}  {r['jac_err']:10.3f}"
        )
    print(
        "  small T: smoothing bias (the estimate is the score of p ∗ N(0, I/T)); large T: variance"
    )


def state_dependent_example():
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    a, c = sp.symbols("a c", real=True)
    D = sp.Rational(1, 2) * (sp.eye(2) + sp.Matrix([x, y]) * sp.Matrix([[x, y]]))
    model = ds.SDEModel(
        [x, y],
        [a, c],
        [a * x + c * (x**2 + y**2) * x, a * y + c * (x**2 + y**2) * y],
        diffusion=D,
        name="state_diffusion_demo",
    )
    _rule(
        "State-dependent diffusion D(x) = ½(I + xxᵀ), f = a·x + c‖x‖²x: stationary law N(0, I) at "
        "(1, −½)"
    )
    X = np.random.default_rng(2).standard_normal((200_000, 2))
    g = ds.fit_global(model, X, features=ds.Features(seed=0))
    balls = ds.Balls(np.array([[0.0, 0.0], [1.2, 0.0], [-0.6, 1.0], [-0.6, -1.0], [0.0, 1.5]]), 0.8)
    loc = ds.fit_local(model, balls.restrict(X), balls, scores=ds.Scores(score="score_matching"))
    print(
        f"2·10⁵ exact samples: global route (a, c) = ({g.theta[0]:.3f}, {g.theta[1]:.3f}); local "
        "route "
        f"(score matching in 5 balls) ({loc.theta[0]:.3f}, {loc.theta[1]:.3f})"
    )


def nonstationary_example():
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    S_inf = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    E = scipy.linalg.expm(0.4 * M)
    mu = E @ np.array([2.0, -1.0])
    S = S_inf + E @ (np.array([[0.3, 0.1], [0.1, 0.2]]) - S_inf) @ E.T
    Pm, S_dot, mu_dot = np.linalg.inv(S), M @ S + S @ M.T + 2 * np.eye(2), M @ mu

    def dlogp_dt(X):
        Y = X - mu
        return (
            -0.5 * np.trace(Pm @ S_dot)
            + Y @ (Pm @ mu_dot)
            + 0.5 * np.einsum("ij,jk,ik->i", Y, Pm @ S_dot @ Pm, Y)
        )

    model = _load("ou2d")
    _rule("Non-stationary snapshot: OU started from N((2, −1), Σ₀), observed once at t = 0.4")
    X = np.random.default_rng(3).multivariate_normal(mu, S, 100_000)
    P = X[:12]
    sc = (-(P - mu) @ Pm, np.broadcast_to(-Pm, (12, 2, 2)))
    for label, kw in (("∂ₜlog p given  ", {"dlogp_dt": dlogp_dt}), ("∂ₜlog p omitted", {})):
        loc = ds.fit_local(
            model, None, P, scores=ds.Scores(score=sc), solver=ds.Solver(lam=1e-12), **kw
        )
        glo = ds.fit_global(model, X, features=ds.Features(seed=0), **kw)
        print(
            f"{label}: local (exact scores) M = "
            + np.array2string(loc.theta, precision=3)
            + f" rank {loc.report.rank}; global (10⁵ samples) M = "
            + np.array2string(glo.theta, precision=3)
            + f", consistent: {glo.report.consistent}"
        )
    print("truth M = [-1, 0.5, -0.5, -1]: the transient law even identifies all four entries")
