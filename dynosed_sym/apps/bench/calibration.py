"""Section ``calibration``: are the numbers the package prints honest?

Over many independent data sets with a known truth: coverage of the 95 % intervals (finite ones;
an infinite interval says "not identifiable" and is counted apart), uniformity of the
misspecification p-value under the true model (Kolmogorov–Smirnov distance to U(0, 1), fraction
below 0.05), and the small-N bias of the global route — each for the default fit (U-statistic,
resolved estimator, honest intervals) and for ``statistic="v"`` (the V-statistic ridge fit of
earlier versions).

Cases: exact stationary samples of the 2-D OU (all four entries free, Σ = I; all four free with a
null direction loading on every entry; M12 alone), simulated Lorenz (N = 5000), Lorenz at N = 300
(bias; the issue's seed family and a long run), and the B-cell GRN on the paper's protocol.
Results: ``benchmarks/calibration.txt`` (``python -m dynosed_sym.apps.bench --only calibration``);
not part of the default run (``--quick``: a few data sets per case, no GRN).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ...routes.options import Features, Scores, Solver
from .common import _load

FIT = {"u": Solver(), "v": Solver(statistic="v")}


def ou_exact(M, n, seed):
    """n exact draws from the stationary law of dx = Mx dt + √2 dW (Lyapunov covariance)."""
    import scipy.linalg

    S = scipy.linalg.solve_continuous_lyapunov(np.asarray(M, float), -2.0 * np.eye(len(M)))
    L = np.linalg.cholesky(0.5 * (S + S.T))
    return np.random.default_rng(seed).standard_normal((int(n), len(M))) @ L.T


def _coverage(fits, truth):
    """(covered (n,), finite (n,)) of the 95 % intervals over fits."""
    cov, fin = np.zeros(truth.size), np.zeros(truth.size)
    for fit in fits:
        ci = fit.conf_int()
        ok = np.isfinite(ci[:, 0])
        fin += ok
        cov += ok & (ci[:, 0] <= truth) & (truth <= ci[:, 1])
    return cov, fin


def _pvalues(fits):
    from scipy import stats

    p = np.array([f.report.p_value for f in fits])
    return float(stats.kstest(p, "uniform").statistic), float(np.mean(p < 0.05))


def _report_case(name, names, truth, fits_by, out):
    """Print and store coverage per parameter (covered/finite), pooled, and the p-values."""
    out[name] = {}
    for key, fits in fits_by.items():
        cov, fin = _coverage(fits, truth)
        ks, rej = _pvalues(fits)
        pooled = cov.sum() / max(fin.sum(), 1)
        per = "  ".join(f"{nm} {int(c)}/{int(f)}" for nm, c, f in zip(names, cov, fin))
        print(
            f"  {key}: coverage {pooled:.3f} ({int(cov.sum())}/{int(fin.sum())}): {per}; "
            f"p-value KS {ks:.3f}, P(p<0.05) {rej:.3f}"
        )
        out[name][key] = {
            "covered": cov.tolist(),
            "finite": fin.tolist(),
            "coverage": float(pooled),
            "p_ks": ks,
            "p_below_0.05": rej,
            "sets": len(fits),
        }


def _fit_sets(model, sets):
    from ...routes.global_route import fit_global

    return {
        key: [fit_global(model, X, features=Features(seed=k), solver=s) for k, X in enumerate(sets)]
        for key, s in FIT.items()
    }


def _ou_cases(R, out):
    cases = [
        ("ou2d all free, Σ = I", "ou2d", [[-1.0, 0.5], [-0.5, -1.0]]),
        ("ou2d all free, loaded null direction", "ou2d", [[-1.0, 1.0], [0.0, -2.0]]),
        ("ou2d_m12 (M12 only)", "ou2d_m12", [[-1.0, 0.5], [-0.5, -1.0]]),
    ]
    for title, stem, M in cases:
        model = _load(stem)
        truth = np.array(M).ravel() if model.n == 4 else np.array([M[0][1]])
        t0 = time.perf_counter()
        sets = [ou_exact(M, 2000, 7000 + k) for k in range(R)]
        fits = _fit_sets(model, sets)
        print(
            f"\n{title}: M = {M}, exact samples, N = 2000, {R} data sets, m = 2048 "
            f"({time.perf_counter() - t0:.0f} s)"
        )
        _report_case(title, model.param_names, truth, fits, out)


def _lorenz_coverage(R, out):
    from ...simulation.simulate import simulate

    model = _load("lorenz")
    truth = np.array(model.nominal)
    t0 = time.perf_counter()
    sets = [simulate(model, truth, 5000, seed=8000 + k) for k in range(R)]
    fits = _fit_sets(model, sets)
    print(
        f"\nLorenz, simulated, N = 5000, {R} data sets (simulate seed 8000+k, fit seed k) "
        f"({time.perf_counter() - t0:.0f} s)"
    )
    _report_case("lorenz N=5000", model.param_names, truth, fits, out)


def _lorenz_bias(families, out):
    from ...routes.global_route import fit_global
    from ...simulation.simulate import simulate

    model = _load("lorenz")
    truth = np.array(model.nominal)
    print(
        "\nLorenz, N = 300: mean relative bias % (± Monte-Carlo standard error), RMSE %; "
        "simulate seed base+k, fit seed k"
    )
    out["lorenz N=300 bias"] = {}
    for base, R in families:
        est = {key: [] for key in FIT}
        weak = []  # data sets where a direction is not resolved: its curvature t (directions)
        for k in range(R):
            X = simulate(model, truth, 300, seed=base + k)
            for key, solver in FIT.items():
                fit = fit_global(model, X, features=Features(seed=k), solver=solver)
                est[key].append(fit.theta)
                rep = fit.report
                if key == "u" and rep.rank < 3:
                    weak.append(float(np.min(rep.direction_t)))
        for key, vals in est.items():
            rel = np.array(vals) / truth - 1
            bias, se = 100 * rel.mean(0), 100 * rel.std(0, ddof=1) / np.sqrt(R)
            rmse = 100 * np.sqrt((rel**2).mean(0))
            txt = "  ".join(
                f"{nm} {b:+.2f} ± {s:.2f} (RMSE {r:.1f})"
                for nm, b, s, r in zip(model.param_names, bias, se, rmse)
            )
            print(f"  seeds {base}–{base + R - 1}, {key}: {txt}")
            out["lorenz N=300 bias"][f"{base}+{R} {key}"] = {
                "bias_percent": bias.tolist(),
                "se_percent": se.tolist(),
                "rmse_percent": rmse.tolist(),
            }
        print(
            f"    rank 2 in {len(weak)} of {R} data sets (weakest direction's t "
            + ", ".join(f"{r:.2f}" for r in weak)
            + "): its component is the ridge's, as the plain ridge fit on the same data"
        )


def _grn(seeds, out):
    from ...routes.global_route import fit_global
    from ...simulation.simulate import simulate

    model = _load("grn_bcell")
    truth = np.array(model.nominal)
    names = model.param_names
    k15 = names.index("W[1,5]")
    print(
        "\nB-cell GRN, paper protocol (2048 chains, burn-in 30,000 × dt 0.01, thin 10, "
        f"N = 50,000, m = 2048, median bandwidth, λ = 1e-6, fit seed 0), data seeds "
        f"{seeds[0]}–{seeds[-1]}"
    )
    fits = {key: [] for key in FIT}
    for s in seeds:
        t0 = time.perf_counter()
        X = simulate(model, truth, 50_000, dt=0.01, burn_in=30_000, thin=10, n_chains=2048, seed=s)
        for key, solver in FIT.items():
            # the paper's protocol: the median length scale (the default 'auto' may choose another)
            features = Features(n_features=2048, bandwidth="median", seed=0)
            fit = fit_global(model, X, features=features, solver=replace(solver, lam=1e-6))
            fits[key].append(fit)
            ci = fit.conf_int()[k15]
            st = fit.report.status[k15]
            cov, fin = _coverage([fit], truth)
            print(
                f"  seed {s} {key}: covered {int(cov.sum())}/{int(fin.sum())}; W[1,5] = "
                f"{fit.theta[k15]:.4f}, 95% CI [{ci[0]:.4f}, {ci[1]:.4f}] ({st}); "
                f"p = {fit.report.p_value:.3f}"
            )
            if key == "v":
                print(f"    cause (v): {_ridge_bias_text(fit, truth, k15)}")
        print(f"    ({time.perf_counter() - t0:.0f} s)")
        if s == seeds[0]:
            lines = [
                ln
                for ln in fits["u"][-1].summary().splitlines()
                if ln.startswith("W[1,5] ") or "W[1,5] is determined" in ln
            ]
            print("    summary() lines naming W[1,5] (default fit):")
            for ln in lines:
                print("      " + ln.strip())
    _report_case("grn", names, truth, fits, out)


def _local(out):
    """The local route's defaults: U against V statistic (Lorenz, ten dense balls, one draw of
    10⁸ samples), resolved against ridge estimator (all-free OU, exact samples in seven balls)."""
    from ...apps.demo import local_examples as demo
    from ...routes.local_route import fit_local
    from ...routes.probes import Balls, choose_probes
    from ...simulation.simulate import simulate

    model = _load("lorenz")
    truth = np.array(model.nominal)
    centres = choose_probes(
        simulate(model, truth, 200_000, seed=0), 10, method="random", seed=1, min_separation=5.0
    )
    balls = Balls(centres, 2.0)
    X = demo._lorenz_in_balls(model, balls, 100_000_000, seed=7)
    print(
        "\nlocal route, Lorenz, ten balls of radius 2, 10⁸ steady-state samples (seed 7): "
        "estimate (std.err) with statistic v and u"
    )
    out["local lorenz"] = {}
    for score in ("kernel", "local_gaussian", "score_matching"):
        T = None if score == "score_matching" else 49.0
        scores = Scores(score=score) if T is None else Scores(score=score, temperature=T)
        row = {}
        for st in ("v", "u"):
            fit = fit_local(model, X, balls, scores=scores, solver=Solver(statistic=st))
            row[st] = (fit.theta.tolist(), fit.report.std_errors.tolist())
        txt = "; ".join(
            f"{nm} v {row['v'][0][j]:.3f} ({row['v'][1][j]:.3f}) u {row['u'][0][j]:.3f} "
            f"({row['u'][1][j]:.3f})"
            for j, nm in enumerate(model.param_names)
        )
        print(f"  {score}: {txt}")
        out["local lorenz"][score] = row
    ou = _load("ou2d")
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    ring = np.vstack(
        [
            [0.0, 0.0],
            1.6
            * np.column_stack(
                [np.cos(np.arange(6) * np.pi / 3 + 0.3), np.sin(np.arange(6) * np.pi / 3 + 0.3)]
            ),
        ]
    )
    balls = Balls(ring, 1.0)
    est = {"ridge": [], "resolved": []}
    for k in range(20):
        Xk = balls.restrict(ou_exact(M, 200_000, 9000 + k))
        for name in est:
            fit = fit_local(
                ou, Xk, balls, scores=Scores(score="score_matching"), solver=Solver(estimator=name)
            )
            est[name].append(fit.theta)
    print(
        "local route, all-free OU (M12 − M21 unresolved), 200,000 exact samples in seven balls, "
        "score matching, 20 data sets: spread (sd) of the estimates"
    )
    for name, vals in est.items():
        sd = np.std(vals, axis=0, ddof=1)
        print(
            f"  estimator {name}: "
            + "  ".join(f"{nm} {s:.3g}" for nm, s in zip(ou.param_names, sd))
        )
        out.setdefault("local ou", {})[name] = sd.tolist()


def _ridge_bias_text(fit, truth, j):
    """The ridge's bias of parameter j through the unresolved directions, −λ Σ_U v vᵀθ*/(σ² + λ),
    against the estimate's error (the cause of a false interaction in the GRN)."""
    rep = fit.report
    unresolved = ~(rep.direction_t > rep.resolve_threshold)  # the report's rule
    sv = rep.singular_values[unresolved]
    lam = rep.lam
    bias = -(rep.null_vectors * (lam / (sv**2 + lam))) @ (rep.null_vectors.T @ truth)
    return (
        f"error of {fit.model.param_names[j]} {fit.theta[j] - truth[j]:+.4f} = ridge bias through "
        f"unresolved directions {bias[j]:+.4f} + the rest (noise, resolved directions) "
        f"{fit.theta[j] - truth[j] - bias[j]:+.4f}; std.err {rep.std_errors[j]:.4f}"
    )


def section_calibration(quick, repeats):
    print("\n== calibration: coverage of 95 % intervals, p-value uniformity, small-N bias ==")
    print(
        "   u: default fit (U-statistic, resolved estimator, honest intervals); "
        "v: statistic='v' (V-statistic ridge fit of earlier versions)"
    )
    t0 = time.perf_counter()
    out = {}
    R = 10 if quick else 100
    _ou_cases(R, out)
    _lorenz_coverage(R, out)
    _lorenz_bias([(100, 20)] if quick else [(100, 20), (200, 20), (20_000, 200)], out)
    if not quick:
        _grn(list(range(5)), out)
        _local(out)
    print(f"\ncalibration: {time.perf_counter() - t0:.0f} s")
    return out
