"""``python -m dynosed_sym.demo`` — the package's main job on the bundled models.

1. Lorenz, global route: mean ± sd of (σ, ρ, β) over 20 independent draws at N = 300 and 5000.
2. 2-D Ornstein–Uhlenbeck from exact Gaussian samples: all four entries of M free (rank 3
   of 4, the free combination named) versus only M12 free (identified).
3. Noisy limit cycle: the rotation frequency is not identifiable from snapshots.
4. B-cell gene-regulatory network, the reference paper's protocol: recovered 3×7 matrix
   beside the truth and the normalised freeness matrix.
5. Identifiability before any data: the exact structural check of every bundled model (and of
   a model with two parameters on one basis function), the design-time check of the OU model,
   the GRN's pre-data freeness ordering against the post-data one, and the calibration of the
   standard errors and of the misspecification p-value.
6. Figures (``--figures DIR``, default ``demo_output/``): the Lorenz local/global figure, the GRN's
   true and inferred matrices, steady-state clouds and freeness, and the OU ill-posedness figure
   with the singular-value spectra (the copies in ``docs/images/`` come from
   ``python -m dynosed_sym.demo --figures-only --figures docs/images``).
7. Local route: the 2-D OU with exact and with estimated scores (score matching in balls, the
   kernel estimator's bias–variance table over the temperature T), state-dependent diffusion
   and a non-stationary snapshot (both routes), and the reference paper's Lorenz experiment:
   ten balls on the attractor, a sweep of T (including T* = |λ_min|/D ≈ 49), dense and sparse balls.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import scipy.linalg

import dynosed_sym as ds

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "models")


def _load(name):
    return ds.load_model(os.path.join(MODELS, f"{name}.py"))


def _rule(title):
    print()
    print(title)
    print("=" * len(title))


def lorenz_table(n_draws=20, sizes=(300, 5000)):
    model = _load("lorenz")
    truth = model.nominal
    _rule(f"Lorenz, global route: {n_draws} independent draws per N (m = 2048, median bandwidth)")
    print(f"{'N':>6}  " + "  ".join(f"{p:>22}" for p in model.param_names) + "   max |mean error|")
    for N in sizes:
        est = np.array([ds.fit_global(model, ds.simulate(model, truth, N, seed=1000 * N + s), seed=s).theta
                        for s in range(n_draws)])
        mean, sd = est.mean(axis=0), est.std(axis=0, ddof=1)
        cells = [f"{mu:8.3f} ± {s:6.3f} ({t:5.3g})" for mu, s, t in zip(mean, sd, truth)]
        rel = np.abs(mean - truth) / np.abs(truth)
        print(f"{N:>6}  " + "  ".join(f"{c:>22}" for c in cells) + f"   {100 * rel.max():5.2f} %")
    print("cells: mean ± sd over draws (truth)")


def _ou_samples(M, N, seed):
    Sigma = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))  # D = I
    return np.random.default_rng(seed).multivariate_normal(np.zeros(2), Sigma, N)


def ou_example():
    full, m12 = _load("ou2d"), _load("ou2d_m12")
    M = full.nominal.reshape(2, 2)
    _rule("2-D Ornstein–Uhlenbeck from exact stationary samples (Lyapunov equation)")
    fit = ds.fit_global(full, _ou_samples(M, 20000, 0), seed=0)
    print(f"all four entries free, N = 20,000: rank {fit.report.rank} of {fit.report.n_params}")
    for combo in fit.report.null_space:
        print(f"  free combination: {combo}")
    print(f"  not identifiable: {', '.join(fit.report.free_params)}")
    fit = ds.fit_global(m12, _ou_samples(M, 100_000, 1), seed=0)
    print(f"only M12 free, N = 100,000: M12 = {fit.theta[0]:.4f} (truth {m12.nominal[0]}), "
          f"rank {fit.report.rank} of 1, consistent: {fit.report.consistent}")


def limit_cycle_example():
    model = _load("limit_cycle")
    _rule("Noisy limit cycle (Stuart–Landau): rotation frequency vs a rotation-invariant law")
    X = ds.simulate(model, model.nominal, 20000, burn_in=2000, thin=10, seed=0)
    fit = ds.fit_global(model, X, seed=0)
    print(fit.summary(truth=model.nominal))


def grn_example(n_samples=50_000):
    model = _load("grn_bcell")
    truth = model.nominal.reshape(3, 7)
    _rule(f"B-cell GRN, paper protocol: 2048 chains, burn-in 30,000 × dt 0.01, thin 10, N = {n_samples:,}")
    t0 = time.perf_counter()
    X = ds.simulate(model, model.nominal, n_samples, dt=0.01, burn_in=30_000, thin=10, n_chains=2048, seed=0)
    t1 = time.perf_counter()
    fit = ds.fit_global(model, X, n_features=2048, bandwidth="median", lam=1e-6, seed=0)
    t2 = time.perf_counter()
    print(f"simulation {t1 - t0:.1f} s, fit {t2 - t1:.2f} s (first runs include Numba compilation)")
    est = fit.theta.reshape(3, 7)
    free = fit.report.freeness_normalised.reshape(3, 7)
    basis = ["π", "β", "ρ", "πβ", "πρ", "βρ", "πβρ"]
    head = "      " + "".join(f"{b:>8}" for b in basis)
    for title, mat, fmt in (("true W", truth, "{:8.0f}"), ("inferred W", est, "{:8.3f}"),
                            ("normalised freeness λ·diag(H⁻¹) (1 = unconstrained)", free, "{:8.3f}")):
        print(f"\n{title}\n{head}")
        for i, row in enumerate(mat):
            print(f"  {'pbr'[i]}   " + "".join(fmt.format(v) for v in row))
    err = np.abs(est - truth)
    worst = np.unravel_index(np.argmax(err), err.shape)
    tight = free < 0.01
    print(f"\nrank {fit.report.rank} of 21; entries with normalised freeness < 0.01: "
          f"max |error| {err[tight].max():.3f}")
    print(f"worst-recovered entry: W[{worst[0]},{worst[1]}] ({est[worst]:.3f} vs {truth[worst]:.0f})")
    # the entry the reference paper reports as misestimated (last of the second row)
    print(f"W[1,6] (paper's misestimated entry): {est[1, 6]:.3f} vs {truth[1, 6]:.0f}, normalised "
          f"freeness {free[1, 6]:.3f}, {'not ' if 'W[1,6]' in fit.report.free_params else ''}"
          f"identifiable per the report; entries with normalised freeness > 0.5: "
          f"{int((free > 0.5).sum())} of 21")
    return fit


def identifiability_before_data():
    """Structural check of the zoo (symbols only) and the design-time check of the OU model."""
    import glob

    import sympy as sp

    _rule("Identifiability before any data: structural check from the symbols (no simulation)")
    for path in sorted(glob.glob(os.path.join(MODELS, "*.py"))):
        rep = ds.structural_check(ds.load_model(path))
        verdict = {True: "identifiable", False: "NOT identifiable", None: "no obstruction in the symbols"}
        line = (f"{os.path.basename(path):<16} {1e3 * rep.elapsed:6.0f} ms  rank {rep.rank:>2} of "
                f"{rep.n_params:<2} ({'exact' if rep.rank_is_exact else 'upper bound'}): "
                f"{verdict[rep.identifiable]}")
        print(line + "".join(f"; free: {c['combination']} [{c['kind']}]" for c in rep.combinations))
    x, a, b, c = sp.symbols("x a b c", real=True)
    two = ds.SDEModel([x], [a, b, c], [a * x + b * x - c * x**3], diffusion=0.5, name="two_on_one")
    rep = ds.structural_check(two)
    print(f"dx = (a·x + b·x − c·x³)dt + noise: rank {rep.rank} of 3, free combination "
          f"{rep.combinations[0]['combination']} ({1e3 * rep.elapsed:.0f} ms, no data, no simulation)")

    _rule("Design-time check of the all-free 2-D OU (simulated at nominal, before any data)")
    chk = ds.check_identifiability(_load("ou2d"), n_samples=20_000, seed=0)
    print(str(chk).split("\n\n", 2)[-1])


def grn_pre_data(fit, n_samples=50_000):
    """Pre-data freeness (design check at nominal, independent seed) against the post-data fit."""
    from scipy import stats

    model = _load("grn_bcell")
    _rule("B-cell GRN: freeness before data (design check) against after data (the fit above)")
    chk = ds.check_identifiability(model, n_samples=n_samples, seed=123, dt=0.01, burn_in=30_000, thin=10,
                                   n_chains=2048)
    pre, post = chk.freeness_normalised, fit.report.freeness_normalised
    rho = stats.spearmanr(pre, post).statistic
    top_pre = [model.param_names[i] for i in np.argsort(-pre)[:8]]
    top_post = [model.param_names[i] for i in np.argsort(-post)[:8]]
    print(f"design check {chk.timings['total']:.1f} s: rank {chk.rank} of 21 before data, "
          f"{fit.report.rank} of 21 after; Spearman correlation of the normalised freeness {rho:.4f}")
    print(f"8 most free before data: {', '.join(top_pre)}")
    print(f"8 most free after data:  {', '.join(top_post)}")
    i16 = model.param_names.index("W[1,6]")
    print(f"W[1,6]: normalised freeness {pre[i16]:.3f} before data, {post[i16]:.3f} after; "
          f"directions: {chk.direction_verdict.count('resolved')} resolved, "
          f"{chk.direction_verdict.count('weak')} weak (more data resolves them), "
          f"{chk.direction_verdict.count('unconstrained')} unconstrained")


def uncertainty_example(n_reps=200, n_lorenz=20):
    """Coverage of the 95 % intervals on an exactly sampled model; misspecification p-values."""
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    m11, m12, m22 = sp.symbols("M11 M12 M22", real=True)
    model = ds.SDEModel([x, y], [m11, m12, m22], [m11 * x + m12 * y, -x / 2 + m22 * y], diffusion=1,
                        name="ou3", nominal=[-1.0, 0.5, -1.0])
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    _rule(f"Uncertainty: {n_reps} exactly sampled OU data sets (M11, M12, M22 free), N = 2000, m = 256")
    est, se, cover, pv = [], [], [], []
    for r in range(n_reps):
        fit = ds.fit_global(model, _ou_samples(M, 2000, 10_000 + r), n_features=256, seed=r)
        ci = fit.conf_int()
        est.append(fit.theta)
        se.append(fit.std_errors)
        cover.append((ci[:, 0] <= model.nominal) & (model.nominal <= ci[:, 1]))
        pv.append(fit.report.p_value)
    est, se, pv = np.array(est), np.array(se), np.array(pv)
    ratio = np.sqrt((se**2).mean(axis=0)) / est.std(axis=0, ddof=1)
    for k, nm in enumerate(model.param_names):
        print(f"  {nm}: 95% interval covers the truth in {100 * np.mean(cover, axis=0)[k]:.1f}% of data sets; "
              f"predicted se / empirical sd = {ratio[k]:.3f}")
    print(f"  misspecification p-value under the true model: P(p < 0.05) = {np.mean(pv < 0.05):.3f}, "
          f"P(p < 0.5) = {np.mean(pv < 0.5):.3f}")
    true = _load("lorenz")
    xs, ys, zs = true.state
    s_, r_, b_ = true.params
    lacking = ds.SDEModel([xs, ys, zs], [s_, r_, b_], [s_ * (ys - xs), xs * (r_ - zs) - ys, -b_ * zs],
                          diffusion=sp.Rational(3, 10), name="lorenz_without_xy")
    p_good, p_bad, c_good, c_bad = [], [], [], []
    for s in range(n_lorenz):
        X = ds.simulate(true, true.nominal, 5000, seed=900 + s)
        good, bad = ds.fit_global(true, X, seed=s).report, ds.fit_global(lacking, X, seed=s).report
        p_good.append(good.p_value)
        p_bad.append(bad.p_value)
        c_good.append(good.consistent)
        c_bad.append(bad.consistent)
    p_good, p_bad = np.array(p_good), np.array(p_bad)
    print(f"  Lorenz, N = 5000, {n_lorenz} draws: true model consistent in {100 * np.mean(c_good):.0f}%, "
          f"p < 0.01 in {100 * np.mean(p_good < 0.01):.0f}% (smallest p {p_good.min():.2g}); without the "
          f"x·y term of dz inconsistent in {100 - 100 * np.mean(c_bad):.0f}%, largest p {p_bad.max():.2g}")


# ----------------------------------------------------------------------------------------------
# local route: Lorenz reproduction of the reference paper (ten balls on the attractor)
# ----------------------------------------------------------------------------------------------

def _lorenz_in_balls(model, balls, n_total, seed, chunk_chains=4096, records=977):
    """``n_total`` steady-state Lorenz samples (dt 0.01, thin 10), kept only inside ``balls``.

    Simulated in chunks of ``chunk_chains × records`` samples; every chunk continues the chains
    of the previous one (burn-in 5000 steps once), so memory stays at one chunk.
    """
    chunk = chunk_chains * records
    parts, x0 = [], None
    for k in range(-(-int(n_total) // chunk)):
        X = ds.simulate(model, model.nominal, chunk, burn_in=5000 if x0 is None else 0,
                        n_chains=chunk_chains, seed=seed * 1000 + k, x0=x0)
        x0 = X.reshape(chunk_chains, records, model.d)[:, -1]
        parts.append(balls.restrict(X, allow_empty=True))
    return np.concatenate(parts)


LORENZ_TEMPERATURES = (5, 10, 20, 35, 49, 70, 100)


def lorenz_local_fits(model, X, balls, temperatures=LORENZ_TEMPERATURES):
    """{(estimator, T): θ̂} for one data set restricted to balls (kernel, local Gaussian, score matching)."""
    import warnings

    out = {}
    for T in temperatures:
        for est in ("kernel", "local_gaussian"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out[est, T] = ds.fit_local(model, X, balls, temperature=T, score=est).theta
            except ds.DataError:  # too few points within the kernel at this T
                out[est, T] = np.full(model.n, np.nan)
    out["score_matching", None] = ds.fit_local(model, X, balls, score="score_matching").theta
    return out


def lorenz_local(n_draws=3, n_dense=100_000_000, sparse_per_ball=1000, temperatures=LORENZ_TEMPERATURES):
    """The reference paper's Lorenz local-route experiment: ten balls on the attractor."""
    model = _load("lorenz")
    truth = model.nominal
    centres = ds.choose_probes(ds.simulate(model, truth, 200_000, seed=0), 10, method="random", seed=1,
                               min_separation=5.0)
    balls = ds.Balls(centres, 2.0)
    _rule(f"Lorenz, local route: 10 balls of radius 2 on the attractor, probes at their centres, "
          f"{n_draws} independent draws")
    t0 = time.perf_counter()
    dense, sparse, counts = [], [], []
    for r in range(n_draws):
        X = _lorenz_in_balls(model, balls, n_dense, seed=7 + r)
        counts.append(balls.counts(X))
        dense.append(lorenz_local_fits(model, X, balls, temperatures))
        sparse.append(lorenz_local_fits(model, balls.restrict(X, max_per_ball=sparse_per_ball, seed=r),
                                        balls, temperatures))
    counts = np.mean(counts, axis=0)
    print(f"dense: {n_dense:.0e} steady-state samples per draw (dt 0.01, thin 10), of which "
          f"{counts.sum():,.0f} fall in the balls ({counts.min():,.0f} … {counts.max():,.0f} per ball); "
          f"sparse: {sparse_per_ball} of them per ball; {time.perf_counter() - t0:.0f} s")
    print("kernel: DESIGN §2 estimator ŝ = T(Σw x − x), ∇ŝ = T²Cov_w − T I (the score of p smoothed by "
          "N(0, I/T));\nlocal Gaussian: the same weights, s = Cov_w⁻¹(Σw x − x), J = T I − Cov_w⁻¹ (no "
          "smoothing bias);\nscore matching: boundary-weighted Hyvärinen fit of a local quadratic "
          "log-density in each ball (no T)")
    names = model.param_names
    head = (f"{'balls':<7}{'T':>5}  {'estimator':<15}" + "".join(f"{f'{p} ({t:.4g})':>19}" for p, t in
                                                                zip(names, truth))
            + "   mean err  rms err")
    print(head)
    print("-" * len(head))
    for label, res in (("dense", dense), ("sparse", sparse)):
        keys = [(e, T) for T in temperatures for e in ("kernel", "local_gaussian")] + [("score_matching", None)]
        for est, T in keys:
            th = np.array([d[est, T] for d in res])
            ok = np.isfinite(th).all(axis=1)
            if not ok.any():
                cells = "".join(f"{'(too few points)':>19}" for _ in names)
                err = ""
            else:
                mu, sd = th[ok].mean(axis=0), (th[ok].std(axis=0, ddof=1) if ok.sum() > 1 else
                                                np.full(model.n, np.nan))
                cells = "".join(f"{f'{m:7.2f} ± {s:5.2f}':>19}" for m, s in zip(mu, sd))
                rms = np.sqrt(np.mean((th[ok] / truth - 1) ** 2, axis=0))
                err = f"   {100 * np.max(np.abs(mu / truth - 1)):6.1f} %  {100 * rms.max():5.1f} %"
                if not ok.all():
                    err += f"  ({ok.sum()} of {len(ok)} draws; the others had too few points)"
            mark = "  ← T* = |λ_min|/D" if T == 49 else ""
            tcol = "" if T is None else str(T)
            print(f"{label:<7}{tcol:>5}  {est.replace('_', ' '):<15}{cells}{err}{mark}")
        print()
    print("cells: mean ± sd over draws of the local-route estimates (truth in the header); mean err: "
          "largest relative error of the mean, rms err: largest root-mean-square relative error of a "
          "single draw")


# ----------------------------------------------------------------------------------------------
# local route on exactly known laws (OU, state-dependent diffusion, non-stationary snapshot)
# ----------------------------------------------------------------------------------------------

def _ou_triangular():
    """2-D OU with M = [[a, b], [0, c]] (all three identifiable), truth (−1, 0.8, −2), D = I."""
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    a, b, c = sp.symbols("a b c", real=True)
    model = ds.SDEModel([x, y], [a, b, c], [a * x + b * y, c * y], diffusion=1, name="ou_triangular",
                        nominal={a: -1.0, b: 0.8, c: -2.0})
    M = np.array([[-1.0, 0.8], [0.0, -2.0]])
    L = np.linalg.cholesky(scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2)))
    return model, L


#: Probe balls for the OU examples: the origin and six k-means centres of the stationary law.
OU_BALL_CENTRES = np.array([[0.0, 0.0], [-0.371, -0.634], [-1.707, -0.448], [0.367, 0.622],
                            [-0.787, 0.480], [0.789, -0.485], [1.712, 0.443]])


def kernel_temperature_table(temperatures=(2, 4, 8, 16, 32, 64, 128), n_draws=8, n_samples=300_000,
                             radius=1.0, seed=0):
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
    data = [balls.restrict(np.random.default_rng(seed + r).standard_normal((n_samples, 2)) @ L.T)
            for r in range(n_draws)]
    for T in temperatures:
        th, se, je = [], [], []
        for X in data:
            fit = ds.fit_local(model, X, OU_BALL_CENTRES, temperature=T, n_blocks=0)
            th.append(fit.theta)
            se.append(np.abs(fit.scores.score + OU_BALL_CENTRES @ Prec).max())
            je.append(np.abs(fit.scores.jacobian + Prec).max())
        th = np.array(th)
        bias, sd = th.mean(axis=0) - truth, th.std(axis=0, ddof=1)
        rows[T] = dict(bias=bias, sd=sd, rmse=np.sqrt(bias**2 + sd**2), score_err=float(np.mean(se)),
                       jac_err=float(np.mean(je)))
    return rows


def ou_local_example(n_draws=8):
    model, L = _ou_triangular()
    truth = model.nominal
    full = _load("ou2d")
    M = full.nominal.reshape(2, 2)
    _rule("Local route on the 2-D OU: exact scores, then estimated ones from region-restricted samples")
    Prec = np.linalg.inv(scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2)))
    P = np.random.default_rng(0).normal(size=(12, 2))
    fit = ds.fit_local(full, None, P, score=(-P @ Prec, np.broadcast_to(-Prec, (12, 2, 2))), lam=1e-12)
    t = fit.theta
    print(f"exact scores and Jacobians at 12 probes (all four entries free): rank {fit.report.rank} of 4, "
          f"free combination {fit.report.null_space[0]}; |M11 + 1| = {abs(t[0] + 1):.1e}, "
          f"|M22 + 1| = {abs(t[3] + 1):.1e}, |M12 + M21| = {abs(t[1] + t[2]):.1e}")
    balls = ds.Balls(OU_BALL_CENTRES, 1.0)
    X = balls.restrict(np.random.default_rng(1).standard_normal((1_000_000, 2)) @ L.T)
    fit = ds.fit_local(model, X, balls, score="score_matching")
    print(f"M = [[a, b], [0, c]], truth (a, b, c) = (−1, 0.8, −2); 10⁶ exact stationary samples, "
          f"{X.shape[0]:,} of them in 7 balls of radius 1:")
    print("  score matching: (" + ", ".join(f"{v:.3f}" for v in fit.theta) + "), max relative error "
          f"{100 * np.max(np.abs(fit.theta / truth - 1)):.1f} %, {fit.report.rank} of 3 resolved, "
          f"consistent: {fit.report.consistent}")
    rows = kernel_temperature_table(n_draws=n_draws)
    print(f"kernel estimator (DESIGN §2) over the temperature T, {n_draws} draws of 3·10⁵ samples "
          "restricted to the same balls:")
    print(f"  {'T':>5}  {'bias (a, b, c)':>24}  {'sd (a, b, c)':>22}  {'RMSE':>6}  {'max|ŝ − s|':>10}  "
          f"{'max|Ĵ − J|':>10}")
    for T, r in rows.items():
        print(f"  {T:>5}  " + " ".join(f"{v:+7.3f}" for v in r["bias"]) + "  "
              + " ".join(f"{v:6.3f}" for v in r["sd"]) + f"  {np.linalg.norm(r['rmse']):6.3f}"
              + f"  {r['score_err']:10.3f}  {r['jac_err']:10.3f}")
    print("  small T: smoothing bias (the estimate is the score of p ∗ N(0, I/T)); large T: variance")


def state_dependent_example():
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    a, c = sp.symbols("a c", real=True)
    D = sp.Rational(1, 2) * (sp.eye(2) + sp.Matrix([x, y]) * sp.Matrix([[x, y]]))
    model = ds.SDEModel([x, y], [a, c], [a * x + c * (x**2 + y**2) * x, a * y + c * (x**2 + y**2) * y],
                        diffusion=D, name="state_diffusion_demo")
    _rule("State-dependent diffusion D(x) = ½(I + xxᵀ), f = a·x + c‖x‖²x: stationary law N(0, I) at (1, −½)")
    X = np.random.default_rng(2).standard_normal((200_000, 2))
    g = ds.fit_global(model, X, seed=0)
    balls = ds.Balls(np.array([[0.0, 0.0], [1.2, 0.0], [-0.6, 1.0], [-0.6, -1.0], [0.0, 1.5]]), 0.8)
    loc = ds.fit_local(model, balls.restrict(X), balls, score="score_matching")
    print(f"2·10⁵ exact samples: global route (a, c) = ({g.theta[0]:.3f}, {g.theta[1]:.3f}); local route "
          f"(score matching in 5 balls) ({loc.theta[0]:.3f}, {loc.theta[1]:.3f})")


def nonstationary_example():
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    S_inf = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    E = scipy.linalg.expm(0.4 * M)
    mu = E @ np.array([2.0, -1.0])
    S = S_inf + E @ (np.array([[0.3, 0.1], [0.1, 0.2]]) - S_inf) @ E.T
    Pm, S_dot, mu_dot = np.linalg.inv(S), M @ S + S @ M.T + 2 * np.eye(2), M @ mu

    def dlogp_dt(X):
        Y = X - mu
        return (-0.5 * np.trace(Pm @ S_dot) + Y @ (Pm @ mu_dot)
                + 0.5 * np.einsum("ij,jk,ik->i", Y, Pm @ S_dot @ Pm, Y))

    model = _load("ou2d")
    _rule("Non-stationary snapshot: OU started from N((2, −1), Σ₀), observed once at t = 0.4")
    X = np.random.default_rng(3).multivariate_normal(mu, S, 100_000)
    P = X[:12]
    sc = (-(P - mu) @ Pm, np.broadcast_to(-Pm, (12, 2, 2)))
    for label, kw in (("∂ₜlog p given  ", {"dlogp_dt": dlogp_dt}), ("∂ₜlog p omitted", {})):
        loc = ds.fit_local(model, None, P, score=sc, lam=1e-12, **kw)
        glo = ds.fit_global(model, X, seed=0, **kw)
        print(f"{label}: local (exact scores) M = " + np.array2string(loc.theta, precision=3)
              + f" rank {loc.report.rank}; global (10⁵ samples) M = " + np.array2string(glo.theta, precision=3)
              + f", consistent: {glo.report.consistent}")
    print("truth M = [-1, 0.5, -0.5, -1]: the transient law even identifies all four entries")


# ----------------------------------------------------------------------------------------------
# figures (matplotlib, the `plot` extra): written to demo_output/ by `make demo`
# ----------------------------------------------------------------------------------------------

def _new_figure(figsize):
    from .plotting import require_matplotlib

    matplotlib = require_matplotlib()
    matplotlib.use("Agg")  # files only; no display needed
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def lorenz_balls(model, n_pool=200_000):
    """The ten balls of radius 2 on the attractor used by the local route (same as :func:`lorenz_local`)."""
    centres = ds.choose_probes(ds.simulate(model, model.nominal, n_pool, seed=0), 10, method="random", seed=1,
                               min_separation=5.0)
    return ds.Balls(centres, 2.0)


def figure_lorenz_local_global(out_dir, n_dense=20_000_000, sparse_per_ball=1000, n_draws=3,
                               temperatures=LORENZ_TEMPERATURES, sizes=(300, 1000, 3000, 10_000),
                               n_global_draws=10, n_features=2048, dpi=80):
    """The reference paper's Lorenz figure: local route against T (dense and sparse balls) and
    global route against N, beside the samples each row uses.  Returns the PNG's path.

    Local rows: kernel-estimator fits at each temperature T over ``n_draws`` draws of ``n_dense``
    steady-state samples restricted to ten balls (dense), and of ``sparse_per_ball`` of them per
    ball (sparse); global row: ``n_global_draws`` fits per N.  Lines: mean; bands: ±1 sd;
    dashed: truth; dotted vertical: T* = |λ_min|/D ≈ 49.
    """
    from . import plotting

    model = _load("lorenz")
    truth = model.nominal
    balls = lorenz_balls(model, n_pool=min(200_000, max(20_000, n_dense // 10)))
    dense_fits, sparse_fits, dense_X, sparse_X = [], [], None, None
    for r in range(n_draws):
        X = _lorenz_in_balls(model, balls, n_dense, seed=7 + r)
        Xs = balls.restrict(X, max_per_ball=sparse_per_ball, seed=r)
        dense_fits.append(lorenz_local_fits(model, X, balls, temperatures))
        sparse_fits.append(lorenz_local_fits(model, Xs, balls, temperatures))
        if r == 0:
            dense_X, sparse_X = X, Xs
    T = np.array(temperatures, dtype=float)
    local = {label: np.array([[fits[r]["kernel", t] for r in range(n_draws)] for t in temperatures])
             for label, fits in (("dense", dense_fits), ("sparse", sparse_fits))}
    glob = np.array([[ds.fit_global(model, ds.simulate(model, truth, N, seed=1000 * N + s), seed=s,
                                    n_features=n_features).theta for s in range(n_global_draws)]
                     for N in sizes])
    X300 = ds.simulate(model, truth, sizes[0], seed=1000 * sizes[0])

    fig = _new_figure((12.5, 8.4))
    axes = fig.subplots(3, 4, gridspec_kw={"width_ratios": [1.15, 1, 1, 1]})
    rows = (("dense", dense_X, f"local, dense balls: {dense_X.shape[0]:,} points, {n_draws} draws"),
            ("sparse", sparse_X, f"local, sparse balls: {sparse_per_ball} per ball, {n_draws} draws"),
            ("global", X300, f"global: N = {sizes[0]} shown; {n_global_draws} draws per N"))
    rng = np.random.default_rng(0)
    for i, (label, X, title) in enumerate(rows):
        ax = axes[i, 0]
        pts = X if X.shape[0] <= 6000 else X[rng.choice(X.shape[0], 6000, replace=False)]
        ax.scatter(pts[:, 0], pts[:, 2], s=1.5 if label != "global" else 4, color=plotting.TRUE_COLOUR,
                   alpha=0.6, lw=0, rasterized=True)
        ax.set_xlim(-22, 22)
        ax.set_ylim(0, 50)
        ax.set_xlabel("x")
        ax.set_ylabel("z")
        ax.set_title(title, fontsize=9)
        if label == "global":
            plotting.plot_estimates(sizes, glob, truth, model.param_names, xlabel="N", axes=axes[i, 1:],
                                    marker="o")
        else:
            plotting.plot_estimates(T, local[label], truth, model.param_names, xlabel="temperature T",
                                    axes=axes[i, 1:], marker="o")
            for ax in axes[i, 1:]:
                ax.axvline(49, color="0.5", ls=":", lw=1)
    fig.suptitle("Lorenz: local route (kernel scores at 10 balls) against T, global route (KSD) against N; "
                 "mean ± sd over draws, dashed: truth", fontsize=10)
    return plotting.save_figure(fig, os.path.join(out_dir, "lorenz_local_global.png"), dpi=dpi)


def figure_grn(out_dir, n_samples=20_000, burn_in=30_000, n_cloud=5000, dpi=80):
    """GRN figure: true and inferred 3×7 W, steady-state (p, b, r) clouds of the true and the
    fitted dynamics, and the normalised freeness.  Returns the PNG's path."""
    from . import plotting

    model = _load("grn_bcell")
    X = ds.simulate(model, model.nominal, n_samples, dt=0.01, burn_in=burn_in, thin=10, n_chains=2048, seed=0)
    fit = ds.fit_global(model, X, n_features=2048, lam=1e-6, seed=0)
    n_cl = min(n_cloud, n_samples)
    Y = ds.simulate(model, fit.theta, n_cl, dt=0.01, burn_in=burn_in, thin=10, n_chains=min(2048, n_cl),
                    seed=1)
    basis = ["π", "β", "ρ", "πβ", "πρ", "βρ", "πβρ"]
    rows = ["p", "b", "r"]
    fig = _new_figure((12.0, 7.4))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.35])
    plotting.plot_parameter_matrices(model.nominal, fit, (3, 7), rows, basis, axes=top.subplots(1, 2),
                                     titles=("true W", f"inferred W (global route, N = {n_samples:,})"))
    ax1 = bottom.add_subplot(1, 3, 1, projection="3d")
    ax2 = bottom.add_subplot(1, 3, 2, projection="3d")
    ax3 = bottom.add_subplot(1, 3, 3)
    plotting.plot_steady_state(X, Y, dims=(0, 1, 2), state_names=model.state_names, axes=[ax1, ax2],
                               max_points=n_cl, size=1.5)
    plotting.plot_freeness(fit, shape=(3, 7), row_labels=rows, col_labels=basis, ax=ax3, annotate=False,
                           title="normalised freeness (dark: weakly constrained)")
    return plotting.save_figure(fig, os.path.join(out_dir, "grn_recovery.png"), dpi=dpi)


def figure_ou(out_dir, n_samples=20_000, dpi=80):
    """OU ill-posedness: true drift, the all-free fit (min-norm: the flux-free M_alt), the fit with
    only M12 free, over the stationary density; and the two singular-value spectra."""
    from . import plotting

    full, m12 = _load("ou2d"), _load("ou2d_m12")
    M = full.nominal.reshape(2, 2)
    Sigma = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    X = _ou_samples(M, n_samples, 0)
    fit_all = ds.fit_global(full, X, seed=0)
    fit_12 = ds.fit_global(m12, X, seed=0)
    M12 = np.array([[-1.0, fit_12.theta[0]], [-0.5, -1.0]])  # ou2d_m12 fixes the other entries
    # the flux-free drift with the same stationary density: D ∇log p = −Σ⁻¹x (D = I)
    M_alt = -np.linalg.inv(Sigma)
    g = np.linspace(-2.7, 2.7, 10)
    gx, gy = np.meshgrid(g, g)
    P = np.linalg.inv(Sigma)
    dens_g = np.linspace(-3, 3, 121)
    dx, dy = np.meshgrid(dens_g, dens_g)
    logp = -0.5 * (P[0, 0] * dx**2 + 2 * P[0, 1] * dx * dy + P[1, 1] * dy**2)
    fig = _new_figure((13.0, 3.6))
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1.25]})
    panels = ((M, "true drift M_true", plotting.TRUE_COLOUR),
              (M_alt, "flux-free M_alt = −DΣ⁻¹: the same density,\nwrong dynamics (no rotation)", "0.35"),
              (M12, f"prior: only M12 free → M12 = {fit_12.theta[0]:.3f}", plotting.FIT_COLOUR))
    for ax, (Mk, title, colour) in zip(axes, panels):
        ax.contour(dx, dy, logp, levels=6, colors="0.7", linewidths=0.8)
        u = Mk[0, 0] * gx + Mk[0, 1] * gy
        v = Mk[1, 0] * gx + Mk[1, 1] * gy
        ax.quiver(gx, gy, u, v, color=colour, angles="xy", scale_units="xy", scale=8, width=0.006)
        ax.set_xlim(-3, 3)
        ax.set_ylim(-3, 3)
        ax.set_aspect("equal")
        ax.set_title(title + "\n" + np.array2string(np.round(Mk, 2) + 0.0, precision=2, separator=", ").replace("\n", ""),
                     fontsize=8)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    plotting.plot_singular_values(fit_all, ax=axes[3], label="all free", color="C3")
    plotting.plot_singular_values(fit_12, ax=axes[3], label="M12 only", color="C0")
    axes[3].set_title(f"singular values of A: all 4 free → rank {fit_all.report.rank};\n"
                      f"M12 only → rank {fit_12.report.rank} (open: unresolved)", fontsize=8)
    fig.suptitle(f"2-D Ornstein–Uhlenbeck, {n_samples:,} exact stationary samples, level sets of the "
                 "stationary density", fontsize=10)
    return plotting.save_figure(fig, os.path.join(out_dir, "ou_ill_posed.png"), dpi=dpi)


#: The figures :func:`make_figures` writes (file names), also committed under docs/images/.
PAPER_FIGURES = ("lorenz_local_global.png", "grn_recovery.png", "ou_ill_posed.png")
DENSITY_FIGURES = ("density_hopf_ring.png", "density_swirl_bistable.png")  # density.figures.density_demo
FIGURES = PAPER_FIGURES + DENSITY_FIGURES


def make_figures(out_dir="demo_output", quick=False):
    """Write every figure to ``out_dir`` and return their paths (needs the ``plot`` extra)."""
    paths = [figure_ou(out_dir),
             figure_grn(out_dir, n_samples=10_000 if quick else 20_000),
             figure_lorenz_local_global(out_dir, n_dense=4_000_000 if quick else 20_000_000,
                                        n_draws=2 if quick else 3, n_global_draws=5 if quick else 10)]
    # dynamics → density: both examples trained from the drift alone (≈ 25 s), with their numbers
    from ..density.figures import density_demo

    _rule("Dynamics → density (no data: trained on the Fokker–Planck residual)")
    results = density_demo(out_dir)
    paths += [results["hopf_ring"]["png"], results["swirl_bistable"]["png"]]
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dynosed_sym.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer draws and a smaller GRN data set")
    ap.add_argument("--figures", default="demo_output", metavar="DIR",
                    help="folder the figures are written to (default: demo_output)")
    ap.add_argument("--figures-only", action="store_true", help="only write the figures")
    ap.add_argument("--no-figures", action="store_true", help="skip the figures")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if not args.figures_only:
        identifiability_before_data()
        lorenz_table(n_draws=5 if args.quick else 20)
        ou_example()
        limit_cycle_example()
        n_grn = 10_000 if args.quick else 50_000
        fit = grn_example(n_grn)
        grn_pre_data(fit, n_grn)
        uncertainty_example(50 if args.quick else 200, 5 if args.quick else 20)
        ou_local_example(n_draws=4 if args.quick else 8)
        state_dependent_example()
        nonstationary_example()
        if args.quick:
            lorenz_local(n_draws=1, n_dense=20_000_000)
        else:
            lorenz_local()
    if not args.no_figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("\nfigures skipped: pip install 'dynosed_sym[plot]' (matplotlib) to draw them")
        else:
            _rule(f"Figures (written to {args.figures}/)")
            for path in make_figures(args.figures, quick=args.quick):
                print(os.path.relpath(path))
    print(f"\ndemo finished in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
