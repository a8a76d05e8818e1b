"""Section ``projection``: variable projection against the full search of the gradient solver."""

from __future__ import annotations

import numpy as np

from .common import _fmt_s, _timed


def projection_model():
    """3-D gradient-form model (a, k non-affine; c1, c2, c3, ρ1, ρ2 separable), exact sampler.

    f = −∇V with V = ½(c1·x² + c2·y² + c3·z²) − ρ1·xy − ρ2·yz − a·log cosh(x − k), D = I, so
    p ∝ exp(−V): with w = (y, z) and Q = [[c2, −ρ2], [−ρ2, c3]], w | x ~ N(Q⁻¹(ρ1x, 0), Q⁻¹)
    and the x-marginal ∝ cosh(x − k)^a exp(−(c1 − ρ1²(Q⁻¹)₁₁) x²/2) (inverse CDF on a fine
    grid): an asymmetric double well.  (A shifted tanh rather than a·tanh(kx), which is
    unchanged under (a, k) → (−a, −k) and so has two equivalent optima.)  Returns
    ``(model, truth, sample(n, seed))``.
    """
    import sympy as sp

    from ...model import SDEModel

    x, y, z = sp.symbols("x y z", real=True)
    a, k, c1, c2, c3, r1, r2 = sp.symbols("a k c1 c2 c3 rho1 rho2", real=True)
    model = SDEModel(
        [x, y, z],
        [a, k, c1, c2, c3, r1, r2],
        [a * sp.tanh(x - k) - c1 * x + r1 * y, -c2 * y + r1 * x + r2 * z, -c3 * z + r2 * y],
        diffusion=1,
        name="bench_projection",
    )
    truth = np.array([2.0, 0.5, 1.0, 1.0, 1.0, 0.5, 0.5])

    def sample(n, seed):
        A, K, C1, C2, C3, R1, R2 = truth
        Qi = np.linalg.inv(np.array([[C2, -R2], [-R2, C3]]))
        g = np.linspace(-15.0, 15.0, 600_001)
        lp = A * np.log(np.cosh(g - K)) - (C1 - R1**2 * Qi[0, 0]) * g**2 / 2
        c = np.cumsum(np.exp(lp - lp.max()))
        rng = np.random.default_rng(seed)
        xs = np.interp(rng.uniform(size=n), c / c[-1], g)
        w = np.outer(xs * R1, Qi[:, 0]) + rng.standard_normal((n, 2)) @ np.linalg.cholesky(Qi).T
        return np.column_stack([xs, w])

    return model, truth, sample


def section_projection(quick, repeats):
    from ...assembly.features import draw_features, median_lengthscale
    from ...codegen.loading import compile_model
    from ...data.blocks import block_edges
    from ...routes.probes import choose_probes
    from ...routes.scores import make_estimator
    from ...solve.gradient import GlobalProblem, LocalProblem, fit_gradient, separable_params

    print(
        "\n== projection: variable projection vs full search (gradient solver, non-affine model) =="
    )
    model, truth, sample = projection_model()
    N, m = (20_000, 512) if quick else (50_000, 2048)
    repeats = min(repeats, 3)
    X = sample(N, 0)
    start = np.array([0.5, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0])
    sep = separable_params(model)
    print(
        "  model: f = (a tanh(x − k) − c1 x + ρ1 y, ρ1 x − c2 y + ρ2 z, ρ2 y − c3 z), D = I; N = "
        f"{N:,} exact "
        "draws; searched by projection: "
        f"{', '.join(model.param_names[i] for i in range(model.n) if i not in sep)}"
        f" (eliminated: {', '.join(model.param_names[i] for i in sep)}); start {start.tolist()}"
    )
    # default output folder: a second run loads the kernels from Numba's cache
    cm = compile_model(model)
    feats = draw_features(model.d, m, median_lengthscale(X, seed=0), seed=0)
    P = choose_probes(X[:20_000], 60, seed=0)
    est = make_estimator("score_matching", radius=2.0, degree=2).estimate(X, P, n_blocks=0)
    # local first: its millisecond searches are the ones disturbed by threads still busy
    # right after the global route's long parallel fills
    problems = {
        "local (60 probes)": LocalProblem(cm, P, est.score[None], est.jacobian[None], np.zeros(60)),
        f"global (m = {m})": GlobalProblem(cm, X, feats, block_edges(N, 16)),
    }
    r = {"N": N, "m": m}
    for name, prob in problems.items():
        prob.evaluate(start)  # compile (or load) the kernels outside the timings
        row = {}
        for label, proj in (("full", False), ("projected", True)):
            out = {}

            def run(proj=proj, out=out, prob=prob):
                out["theta"], out["info"] = fit_gradient(prob, 1e-6, start, projection=proj)

            row[f"{label}_s"], _, _ = _timed(run, repeats, warmup=0)
            row[f"{label}_nfev"] = out["info"]["nfev"]
            row[f"{label}_theta"] = out["theta"].tolist()
        dtheta = float(np.abs(np.subtract(row["full_theta"], row["projected_theta"])).max())
        row.update(
            ratio=row["full_s"] / row["projected_s"],
            max_abs_dtheta=dtheta,
            max_rel_error=float(np.abs(np.array(row["projected_theta"]) / truth - 1).max()),
        )
        r[name] = row
        print(f"  {name}")
        full_label = f"full search ({model.n} parameters)"
        proj_label = f"variable projection ({model.n - len(sep)} searched)"
        print(f"    {full_label:<34}{_fmt_s(row['full_s'])}  {row['full_nfev']:3d} evaluations")
        print(
            f"    {proj_label:<34}{_fmt_s(row['projected_s'])}  {row['projected_nfev']:3d} "
            "evaluations"
            f"   ratio {row['ratio']:5.1f} x"
        )
        print(
            f"    same optimum: max |Δθ| = {dtheta:.1e}; estimate vs truth: max rel. error "
            f"{row['max_rel_error']:.3f}"
        )
    return r
