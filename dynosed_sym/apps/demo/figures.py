"""The figures of the demo (matplotlib): Lorenz local/global, GRN recovery, OU ill-posedness,
dynamics → density."""

from __future__ import annotations

import os

import numpy as np
import scipy.linalg

import dynosed_sym as ds

from .common import _load, _new_figure, _ou_samples, _rule
from .density_figures import density_demo
from .local_examples import LORENZ_TEMPERATURES, _lorenz_in_balls, lorenz_local_fits


def lorenz_balls(model, n_pool=200_000):
    """The ten balls of radius 2 on the attractor of the local route (as :func:`lorenz_local`)."""
    centres = ds.choose_probes(
        ds.simulate(model, model.nominal, n_pool, seed=0),
        10,
        method="random",
        seed=1,
        min_separation=5.0,
    )
    return ds.Balls(centres, 2.0)


def figure_lorenz_local_global(
    out_dir,
    n_dense=20_000_000,
    sparse_per_ball=1000,
    n_draws=3,
    temperatures=LORENZ_TEMPERATURES,
    sizes=(300, 1000, 3000, 10_000),
    n_global_draws=10,
    n_features=2048,
    dpi=80,
):
    """The reference paper's Lorenz figure: local route against T (dense and sparse balls) and
    global route against N, beside the samples each row uses.  Returns the PNG's path.

    Local rows: kernel-estimator fits at each temperature T over ``n_draws`` draws of ``n_dense``
    steady-state samples restricted to ten balls (dense), and of ``sparse_per_ball`` of them per
    ball (sparse); global row: ``n_global_draws`` fits per N.  Lines: mean; bands: ±1 sd;
    dashed: truth; dotted vertical: T* = |λ_min|/D ≈ 49.
    """
    from .. import plotting

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
    local = {
        label: np.array([[fits[r]["kernel", t] for r in range(n_draws)] for t in temperatures])
        for label, fits in (("dense", dense_fits), ("sparse", sparse_fits))
    }
    glob = np.array(
        [
            [
                ds.fit_global(
                    model,
                    ds.simulate(model, truth, N, seed=1000 * N + s),
                    features=ds.Features(seed=s, n_features=n_features),
                ).theta
                for s in range(n_global_draws)
            ]
            for N in sizes
        ]
    )
    X300 = ds.simulate(model, truth, sizes[0], seed=1000 * sizes[0])

    fig = _new_figure((12.5, 8.4))
    axes = fig.subplots(3, 4, gridspec_kw={"width_ratios": [1.15, 1, 1, 1]})
    rows = (
        ("dense", dense_X, f"local, dense balls: {dense_X.shape[0]:,} points, {n_draws} draws"),
        ("sparse", sparse_X, f"local, sparse balls: {sparse_per_ball} per ball, {n_draws} draws"),
        ("global", X300, f"global: N = {sizes[0]} shown; {n_global_draws} draws per N"),
    )
    rng = np.random.default_rng(0)
    for i, (label, X, title) in enumerate(rows):
        ax = axes[i, 0]
        pts = X if X.shape[0] <= 6000 else X[rng.choice(X.shape[0], 6000, replace=False)]
        ax.scatter(
            pts[:, 0],
            pts[:, 2],
            s=1.5 if label != "global" else 4,
            color=plotting.TRUE_COLOUR,
            alpha=0.6,
            lw=0,
            rasterized=True,
        )
        ax.set_xlim(-22, 22)
        ax.set_ylim(0, 50)
        ax.set_xlabel("x")
        ax.set_ylabel("z")
        ax.set_title(title, fontsize=9)
        if label == "global":
            plotting.plot_estimates(
                sizes, glob, truth, model.param_names, xlabel="N", axes=axes[i, 1:], marker="o"
            )
        else:
            plotting.plot_estimates(
                T,
                local[label],
                truth,
                model.param_names,
                xlabel="temperature T",
                axes=axes[i, 1:],
                marker="o",
            )
            for ax in axes[i, 1:]:
                ax.axvline(49, color="0.5", ls=":", lw=1)
    fig.suptitle(
        "Lorenz: local route (kernel scores at 10 balls) against T, global route (KSD) against N; "
        "mean ± sd over draws, dashed: truth",
        fontsize=10,
    )
    return plotting.save_figure(fig, os.path.join(out_dir, "lorenz_local_global.png"), dpi=dpi)


def figure_grn(out_dir, n_samples=20_000, burn_in=30_000, n_cloud=5000, dpi=80):
    """GRN figure: true and inferred 3×7 W, steady-state (p, b, r) clouds of the true and the
    fitted dynamics, and the normalised freeness.  Returns the PNG's path."""
    from .. import plotting

    model = _load("grn_bcell")
    X = ds.simulate(
        model, model.nominal, n_samples, dt=0.01, burn_in=burn_in, thin=10, n_chains=2048, seed=0
    )
    fit = ds.fit_global(  # the paper's settings, as grn_example (the median length scale)
        model,
        X,
        features=ds.Features(n_features=2048, bandwidth="median", seed=0),
        solver=ds.Solver(lam=1e-6),
    )
    n_cl = min(n_cloud, n_samples)
    Y = ds.simulate(
        model, fit.theta, n_cl, dt=0.01, burn_in=burn_in, thin=10, n_chains=min(2048, n_cl), seed=1
    )
    basis = ["π", "β", "ρ", "πβ", "πρ", "βρ", "πβρ"]
    rows = ["p", "b", "r"]
    fig = _new_figure((12.0, 7.4))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.35])
    plotting.plot_parameter_matrices(
        model.nominal,
        fit,
        (3, 7),
        rows,
        basis,
        axes=top.subplots(1, 2),
        titles=("true W", f"inferred W (global route, N = {n_samples:,})"),
    )
    ax1 = bottom.add_subplot(1, 3, 1, projection="3d")
    ax2 = bottom.add_subplot(1, 3, 2, projection="3d")
    ax3 = bottom.add_subplot(1, 3, 3)
    plotting.plot_steady_state(
        X,
        Y,
        dims=(0, 1, 2),
        state_names=model.state_names,
        axes=[ax1, ax2],
        max_points=n_cl,
        size=1.5,
    )
    plotting.plot_freeness(
        fit,
        shape=(3, 7),
        row_labels=rows,
        col_labels=basis,
        ax=ax3,
        annotate=False,
        title="normalised freeness (dark: weakly constrained)",
    )
    return plotting.save_figure(fig, os.path.join(out_dir, "grn_recovery.png"), dpi=dpi)


def figure_ou(out_dir, n_samples=20_000, dpi=80):
    """OU ill-posedness: true drift, the all-free fit (min-norm: the flux-free M_alt), the fit with
    only M12 free, over the stationary density; and the two singular-value spectra."""
    from .. import plotting

    full, m12 = _load("ou2d"), _load("ou2d_m12")
    M = full.nominal.reshape(2, 2)
    Sigma = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    X = _ou_samples(M, n_samples, 0)
    fit_all = ds.fit_global(full, X, features=ds.Features(seed=0))
    fit_12 = ds.fit_global(m12, X, features=ds.Features(seed=0))
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
    panels = (
        (M, "true drift M_true", plotting.TRUE_COLOUR),
        (M_alt, "flux-free M_alt = −DΣ⁻¹: the same density,\nwrong dynamics (no rotation)", "0.35"),
        (M12, f"prior: only M12 free → M12 = {fit_12.theta[0]:.3f}", plotting.FIT_COLOUR),
    )
    for ax, (Mk, title, colour) in zip(axes, panels):
        ax.contour(dx, dy, logp, levels=6, colors="0.7", linewidths=0.8)
        u = Mk[0, 0] * gx + Mk[0, 1] * gy
        v = Mk[1, 0] * gx + Mk[1, 1] * gy
        ax.quiver(gx, gy, u, v, color=colour, angles="xy", scale_units="xy", scale=8, width=0.006)
        ax.set_xlim(-3, 3)
        ax.set_ylim(-3, 3)
        ax.set_aspect("equal")
        ax.set_title(
            title
            + "\n"
            + np.array2string(np.round(Mk, 2) + 0.0, precision=2, separator=", ").replace("\n", ""),
            fontsize=8,
        )
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    plotting.plot_singular_values(fit_all, ax=axes[3], label="all free", color="C3")
    plotting.plot_singular_values(fit_12, ax=axes[3], label="M12 only", color="C0")
    axes[3].set_title(
        f"singular values of A: all 4 free → rank {fit_all.report.rank};\n"
        f"M12 only → rank {fit_12.report.rank} (open: unresolved)",
        fontsize=8,
    )
    fig.suptitle(
        f"2-D Ornstein–Uhlenbeck, {n_samples:,} exact stationary samples, level sets of the "
        "stationary density",
        fontsize=10,
    )
    return plotting.save_figure(fig, os.path.join(out_dir, "ou_ill_posed.png"), dpi=dpi)


#: The figures :func:`make_figures` writes (file names), also committed under docs/images/.
PAPER_FIGURES = ("lorenz_local_global.png", "grn_recovery.png", "ou_ill_posed.png")


DENSITY_FIGURES = (
    "density_hopf_ring.png",
    "density_swirl_bistable.png",
)  # density_figures.density_demo


DESIGN_FIGURES = ("designs_grn_knockdown.png",)  # designs_example.figure_knockdown (run.py)


FIGURES = PAPER_FIGURES + DENSITY_FIGURES + DESIGN_FIGURES


def make_figures(out_dir="demo_output", quick=False):
    """Write every figure to ``out_dir`` and return their paths (needs the ``plot`` extra)."""
    paths = [
        figure_ou(out_dir),
        figure_grn(out_dir, n_samples=10_000 if quick else 20_000),
        figure_lorenz_local_global(
            out_dir,
            n_dense=4_000_000 if quick else 20_000_000,
            n_draws=2 if quick else 3,
            n_global_draws=5 if quick else 10,
        ),
    ]
    # dynamics → density: both examples trained from the drift alone (≈ 25 s), with their numbers
    _rule("Dynamics → density (no data: trained on the Fokker–Planck residual)")
    results = density_demo(out_dir)
    paths += [results["hopf_ring"]["png"], results["swirl_bistable"]["png"]]
    return paths
