"""Figures of the dynamics → density demonstration (matplotlib, imported only when drawing).

Part of ``python -m dynosed_sym.apps.demo`` (:func:`density_demo` writes
``density_hopf_ring.png`` and ``density_swirl_bistable.png``).

``pip install 'dynosed_sym[plot]'`` provides matplotlib.  Figures are built without ``pyplot``
(a :class:`matplotlib.figure.Figure` on an Agg canvas), so drawing never changes the caller's
matplotlib backend (e.g. a notebook's inline one).
"""

from __future__ import annotations

import os
import time

import numpy as np

from ...errors import DynosedError
from ..plotting import require_matplotlib
from .density_examples import grid_points, grid_tv, histogram_tv

__all__ = ["plot_density_comparison", "density_demo"]


def _new_figure(figsize):
    """A Figure on its own Agg canvas (no pyplot: the global backend is left alone)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _pairs(extent):
    """(xmin, xmax, ymin, ymax) → ((xmin, xmax), (ymin, ymax))."""
    xmin, xmax, ymin, ymax = extent
    return (xmin, xmax), (ymin, ymax)


def plot_density_comparison(
    density,
    *,
    log_density=None,
    samples=None,
    extent=(-4, 4, -4, 4),
    grid=161,
    bins=60,
    title=None,
    path=None,
):
    """Learned density, reference density and the training loss side by side.

    Parameters
    ----------
    density : LearnedDensity (2-D)
    log_density : callable, optional
        Exact unnormalised log density ``f(P (M, 2)) -> (M,)``; drawn normalised on the grid.
    samples : numpy.ndarray (N, 2), optional
        Reference samples (e.g. a long simulation), drawn as a normalised 2-D histogram.
    extent : (xmin, xmax, ymin, ymax)
    grid : int
        Grid points per axis for the contours.
    bins : int
        Histogram bins per axis for ``samples``.
    title : str, optional
    path : str, optional
        Where to save the figure (PNG); the folder is created.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if density.d != 2:
        raise DynosedError(f"plot_density_comparison draws 2-D densities, got d={density.d}")
    if (log_density is None) == (samples is None):
        raise DynosedError(
            "give exactly one reference: log_density= (exact) or samples= (histogram)"
        )
    fig = _new_figure((13.5, 4.2))
    (xs, ys), P, area = grid_points(_pairs(extent), grid)
    q = density.prob(P).reshape(grid, grid).T
    axes = fig.subplots(1, 3)
    levels = np.linspace(0.0, q.max(), 14)[1:]
    axes[0].contourf(xs, ys, q, levels=levels, cmap="viridis", extend="max")
    axes[0].set_title("learned from dynamics (no data)")
    if log_density is not None:
        lp = np.asarray(log_density(P), dtype=float)
        p = np.exp(lp - lp.max())
        p = (p / (p.sum() * area)).reshape(grid, grid).T
        axes[1].contourf(xs, ys, p, levels=levels, cmap="viridis", extend="max")
        axes[1].set_title("exact stationary density")
    else:
        H, xe, ye = np.histogram2d(
            samples[:, 0], samples[:, 1], bins=bins, range=[extent[:2], extent[2:]], density=True
        )
        axes[1].pcolormesh(xe, ye, H.T, cmap="viridis", vmin=0, vmax=q.max())
        axes[1].set_title(f"histogram of {samples.shape[0]:,} simulated samples")
    for ax in axes[:2]:
        ax.contour(xs, ys, q, levels=levels[::3], colors="w", linewidths=0.6)
        ax.set_aspect("equal")
        ax.set_xlabel(density.model.state_names[0])
        ax.set_ylabel(density.model.state_names[1])
    axes[2].semilogy(density.loss_history, lw=0.8)
    axes[2].set_xlabel("Adam step")
    axes[2].set_ylabel("mean R² at collocation points")
    axes[2].set_title("training loss")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def density_demo(out_dir, *, seed=0, progress=None, n_simulated=400_000, verbose=True):
    """Train both demonstration densities, measure them and save their figures.

    Parameters
    ----------
    out_dir : str
        Folder for ``density_hopf_ring.png`` and ``density_swirl_bistable.png``.
    seed : int
    progress : bool, optional
    n_simulated : int
        Simulated samples for the non-gradient example's reference histogram.
    verbose : bool
        Print one line per example (distance, integral, training time).

    Returns
    -------
    dict
        Per example: ``png`` (path), ``tv`` and ``train_seconds``; the closed-form example also
        ``integral``, the simulated one ``tv_sampling_noise`` (half vs half of the simulation).
    """
    _new_figure((1, 1))  # fail early (before training) without matplotlib
    ring = _demo_ring(out_dir, seed, progress)
    swirl = _demo_swirl(out_dir, seed, progress, n_simulated)
    if verbose:
        print(
            f"density hopf_ring: TV to exact = {ring['tv']:.4f}, "
            f"integral = {ring['integral']:.6f}, training {ring['train_seconds']:.1f} s"
        )
        print(
            f"density swirl_bistable: TV to {n_simulated:,} simulated samples = "
            f"{swirl['tv']:.4f} (half-vs-half sampling noise {swirl['tv_sampling_noise']:.4f}), "
            f"training {swirl['train_seconds']:.1f} s"
        )
    return {"hopf_ring": ring, "swirl_bistable": swirl}


def _demo_ring(out_dir, seed, progress):
    """The limit-cycle oscillator against its exact law."""
    from ...density import density_from_dynamics
    from .density_examples import hopf_log_density, hopf_oscillator

    model, theta = hopf_oscillator()
    dens = density_from_dynamics(model, theta, seed=seed, progress=progress)
    extent = (-4.5, 4.5, -4.5, 4.5)
    tv, integral = grid_tv(dens, hopf_log_density, _pairs(extent), 300)
    title = f"limit-cycle oscillator: TV = {tv:.3f}, ∫q = {integral:.5f}"
    png = _save(dens, out_dir, "density_hopf_ring.png", title, extent, log_density=hopf_log_density)
    return dict(png=png, tv=tv, integral=integral, train_seconds=dens.train_seconds)


def _demo_swirl(out_dir, seed, progress, n_simulated):
    """The non-gradient bistable drift against a long simulation."""
    from ...density import density_from_dynamics
    from ...simulation import simulate
    from .density_examples import swirl_bistable

    model, theta = swirl_bistable()
    dens = density_from_dynamics(model, theta, seed=seed, progress=progress)
    t0 = time.perf_counter()
    X = simulate(
        model, theta, n_simulated, dt=0.01, burn_in=3000, thin=25, n_chains=2000, seed=seed + 1
    )
    sim_seconds = time.perf_counter() - t0
    extent = (-5, 5, -5, 5)
    tv = histogram_tv(dens, X, _pairs(extent), bins=40)
    H1, _, _ = np.histogram2d(X[::2, 0], X[::2, 1], bins=40, range=[extent[:2], extent[2:]])
    H2, _, _ = np.histogram2d(X[1::2, 0], X[1::2, 1], bins=40, range=[extent[:2], extent[2:]])
    noise = 0.5 * float(np.abs(H1 / X[::2].shape[0] - H2 / X[1::2].shape[0]).sum())
    title = f"non-gradient bistable drift: TV to simulation = {tv:.3f}"
    png = _save(dens, out_dir, "density_swirl_bistable.png", title, extent, samples=X)
    return dict(
        png=png,
        tv=tv,
        tv_sampling_noise=noise,
        train_seconds=dens.train_seconds,
        simulate_seconds=sim_seconds,
    )


def _save(dens, out_dir, name, title, extent, **reference):
    """Draw ``dens`` against ``reference`` (log_density= or samples=) into out_dir/name → path."""
    png = os.path.join(out_dir, name)
    plot_density_comparison(dens, extent=extent, path=png, title=title, **reference)
    return png
