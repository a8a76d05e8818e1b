"""Pictures of fits and identifiability (matplotlib, an optional extra:
``pip install 'dynosed_sym[plot]'``).

Every function draws into ``ax`` when given (so panels combine into one figure) and otherwise
creates its own :class:`matplotlib.figure.Figure`; it returns the figure.  Figures are built
without ``pyplot``, so nothing here depends on an interactive backend; save them with
:func:`save_figure` (or ``fig.savefig``), or show them in a notebook.

- :func:`plot_freeness` — heatmap of the (normalised) freeness λ·diag(H_λ⁻¹), optionally as a
  matrix (e.g. the GRN's 3×7 W);
- :func:`plot_parameter_matrices` — true and inferred parameter matrices side by side, same colours;
- :func:`plot_estimates` — estimates against N, the temperature T or any setting, with bands;
- :func:`plot_steady_state` — steady-state clouds of the true and the fitted dynamics side by side;
- :func:`plot_singular_values` — the identifiability spectrum: singular values of A against their
  noise level, resolved and unresolved directions marked.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import DynosedError

__all__ = [
    "plot_freeness",
    "plot_parameter_matrices",
    "plot_estimates",
    "plot_steady_state",
    "plot_singular_values",
    "save_figure",
    "require_matplotlib",
]

#: Colours of the truth and of the fit (matplotlib's default cycle's first two).
TRUE_COLOUR, FIT_COLOUR = "#1f77b4", "#ff7f0e"


def require_matplotlib():
    """Import matplotlib or raise a :class:`DynosedError` naming the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise DynosedError("pictures need matplotlib: pip install 'dynosed_sym[plot]'") from None
    return matplotlib


def _figure(ax, figsize, projection=None):
    """(fig, ax): ``ax``'s figure, or a new Figure with one axes."""
    if ax is not None:
        return ax.figure, ax
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1, projection=projection)


def save_figure(fig, path, dpi=110):
    """Write ``fig`` to ``path`` (folders created; PNG at ``dpi``).  Returns the path."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def _values_and_names(obj, attr):
    """(values, names) from a FitResult, an IdentifiabilityReport/Check or a plain array."""
    rep = getattr(obj, "report", None)
    if rep is not None and hasattr(rep, attr):
        return np.asarray(getattr(rep, attr), dtype=float), list(rep.param_names)
    if hasattr(obj, attr):
        return np.asarray(getattr(obj, attr), dtype=float), list(getattr(obj, "param_names", []))
    return np.asarray(obj, dtype=float), []


def _grid(ax, mat, row_labels, col_labels, cmap, norm, fmt, title):
    im = ax.imshow(mat, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(mat.shape[1]))
    ax.set_yticks(range(mat.shape[0]))
    ax.set_xticklabels(col_labels if col_labels is not None else range(mat.shape[1]))
    ax.set_yticklabels(row_labels if row_labels is not None else range(mat.shape[0]))
    if fmt:
        lo, hi = np.nanmin(mat), np.nanmax(mat)
        for (i, j), v in np.ndenumerate(mat):
            if np.isfinite(v):
                frac = norm(v) if norm is not None else (v - lo) / (hi - lo if hi > lo else 1.0)
                ax.text(
                    j,
                    i,
                    fmt.format(v),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if frac > 0.6 else "black",
                )
    if title:
        ax.set_title(title, fontsize=10)
    return im


def plot_freeness(
    fit,
    shape=None,
    normalised=True,
    row_labels=None,
    col_labels=None,
    ax=None,
    annotate=True,
    title=None,
):
    """Heatmap of the freeness of each parameter (large = weakly constrained by the data).

    Parameters
    ----------
    fit : FitResult, IdentifiabilityReport, IdentifiabilityCheck or (n,) array
    shape : (rows, cols), optional
        Draw the n values as a matrix (row-major, as ``params=MatrixSymbol(...)`` flattens);
        default: one row with the parameter names.
    normalised : bool
        λ·diag(H_λ⁻¹) in (0, 1] (logarithmic colours from 10⁻⁴) instead of diag(H_λ⁻¹).
    """
    matplotlib = require_matplotlib()
    vals, names = _values_and_names(fit, "freeness_normalised" if normalised else "freeness")
    if shape is None:
        mat = vals[None, :]
        col_labels = col_labels if col_labels is not None else (names or None)
        row_labels = row_labels if row_labels is not None else [""]
    else:
        mat = vals.reshape(shape)
    fig, ax = _figure(ax, (1.2 + 0.75 * mat.shape[1], 0.9 + 0.55 * mat.shape[0]))
    finite = mat[np.isfinite(mat) & (mat > 0)]
    lo = (
        max(1e-4, finite.min())
        if normalised and finite.size
        else (finite.min() if finite.size else 1e-12)
    )
    hi = 1.0 if normalised else (finite.max() if finite.size else 1.0)
    norm = matplotlib.colors.LogNorm(vmin=min(lo, hi / 10), vmax=hi)
    im = _grid(
        ax,
        np.clip(mat, norm.vmin, None),
        row_labels,
        col_labels,
        "Greys",
        norm,
        "{:.2g}" if annotate else None,
        title or ("normalised freeness λ·diag(H⁻¹)" if normalised else "freeness diag(H⁻¹)"),
    )
    fig.colorbar(im, ax=ax, shrink=0.9)
    return fig


def plot_parameter_matrices(
    truth,
    estimate,
    shape,
    row_labels=None,
    col_labels=None,
    axes=None,
    annotate=True,
    titles=("true", "inferred"),
):
    """True and inferred parameter matrices side by side with one symmetric colour scale.

    Parameters
    ----------
    truth, estimate : (n,) arrays (or FitResult for ``estimate``)
    shape : (rows, cols)
    axes : two matplotlib axes, optional
    """
    require_matplotlib()
    import matplotlib.colors as mcolors

    est = np.asarray(getattr(estimate, "theta", estimate), dtype=float).reshape(shape)
    tru = np.asarray(truth, dtype=float).reshape(shape)
    if axes is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(2.0 + 1.3 * shape[1], 0.9 + 0.6 * shape[0]), layout="constrained")
        axes = fig.subplots(1, 2, sharey=True)
    fig = axes[0].figure
    vmax = float(np.nanmax(np.abs(np.concatenate([tru.ravel(), est.ravel()])))) or 1.0
    norm = mcolors.TwoSlopeNorm(vcenter=0.0, vmin=-vmax, vmax=vmax)
    im = None
    for ax, mat, title in zip(axes, (tru, est), titles):
        im = _grid(
            ax, mat, row_labels, col_labels, "RdBu_r", norm, "{:.2g}" if annotate else None, title
        )
    fig.colorbar(im, ax=list(axes), shrink=0.9)
    return fig


def plot_estimates(
    x,
    estimates,
    truth=None,
    param_names=None,
    band="sd",
    xlabel="N",
    logx=True,
    axes=None,
    marker=None,
    title=None,
):
    """Estimates against a setting (N, temperature T ...) with bands, one panel per parameter.

    Parameters
    ----------
    x : (L,) array
        The setting of each level.
    estimates : (L, R, n) array or (L, n) array
        R repeated estimates per level (NaN entries are ignored): the line is their mean and the
        band ±1 standard deviation (``band="sd"``) or the 16–84 % range (``band="quantile"``).
        A (L, n) array is drawn as a line without band, unless ``band`` is an (L, n) array of
        standard errors (band ±1 se).
    truth : (n,) array, optional
        Dashed horizontal lines.
    axes : n matplotlib axes, optional
    """
    require_matplotlib()
    x = np.asarray(x, dtype=float)
    est = np.asarray(estimates, dtype=float)
    if est.ndim == 2:
        est = est[:, None, :]
    L, R, n = est.shape
    if x.shape != (L,):
        raise DynosedError(f"plot_estimates: x has shape {x.shape}, expected ({L},) like estimates")
    if axes is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(3.0 * n, 2.6), layout="constrained")
        axes = fig.subplots(1, n, squeeze=False)[0]
    fig = axes[0].figure
    names = param_names or [f"θ{k}" for k in range(n)]
    with np.errstate(invalid="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(est, axis=1)
        if isinstance(band, np.ndarray) or (not isinstance(band, str) and band is not None):
            half = np.asarray(band, dtype=float).reshape(L, n)
            lo, hi = mean - half, mean + half
        elif band == "quantile" and R > 1:
            lo, hi = np.nanquantile(est, 0.16, axis=1), np.nanquantile(est, 0.84, axis=1)
        elif band == "sd" and R > 1:
            sd = np.nanstd(est, axis=1, ddof=1)
            lo, hi = mean - sd, mean + sd
        else:
            lo = hi = None
    for k, ax in enumerate(axes):
        ax.plot(x, mean[:, k], color=FIT_COLOUR, marker=marker, lw=1.6)
        if lo is not None:
            ax.fill_between(x, lo[:, k], hi[:, k], color=FIT_COLOUR, alpha=0.25, lw=0)
        if truth is not None:
            ax.axhline(float(np.asarray(truth, dtype=float)[k]), color="k", ls="--", lw=1)
        if logx:
            ax.set_xscale("log")
            ax.minorticks_off()
        ax.set_xticks(x)
        ax.set_xticklabels([f"{v:g}" for v in x], fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_title(names[k], fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_steady_state(
    X_true,
    X_fit,
    dims=(0, 1),
    state_names=None,
    axes=None,
    max_points=5000,
    seed=0,
    titles=("true dynamics", "fitted dynamics"),
    size=2.0,
):
    """Steady-state clouds of the true and the fitted dynamics side by side, same axes limits.

    Parameters
    ----------
    X_true, X_fit : (N, d) arrays
        Samples (e.g. ``simulate(model, truth, …)`` and ``simulate(model, fit.theta, …)``).
    dims : 2 or 3 column indices
        Which state variables to draw; three give 3-D scatter plots.
    max_points : int
        A seeded subsample of at most this many points per cloud is drawn.
    """
    require_matplotlib()
    dims = tuple(int(i) for i in dims)
    if len(dims) not in (2, 3):
        raise DynosedError(f"plot_steady_state: dims must hold 2 or 3 columns, got {dims}")
    rng = np.random.default_rng(seed)
    clouds = []
    for X in (X_true, X_fit):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or max(dims) >= X.shape[1]:
            raise DynosedError(
                f"plot_steady_state: samples of shape {X.shape} have no column {max(dims)}"
            )
        if X.shape[0] > max_points:
            X = X[rng.choice(X.shape[0], max_points, replace=False)]
        clouds.append(X[:, dims])
    proj = "3d" if len(dims) == 3 else None
    if axes is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7.5, 3.6), layout="constrained")
        axes = [
            fig.add_subplot(1, 2, 1, projection=proj),
            fig.add_subplot(1, 2, 2, projection=proj),
        ]
    fig = axes[0].figure
    both = np.concatenate(clouds)
    lo, hi = both.min(axis=0), both.max(axis=0)
    pad = 0.03 * (hi - lo)
    labels = [state_names[i] if state_names else f"x{i}" for i in dims]
    for ax, C, colour, title in zip(axes, clouds, (TRUE_COLOUR, FIT_COLOUR), titles):
        ax.scatter(*C.T, s=size, color=colour, alpha=0.5, lw=0, rasterized=True)
        ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
        ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
        ax.set_xlabel(labels[0])
        ax.set_ylabel(labels[1])
        if proj:
            ax.set_zlim(lo[2] - pad[2], hi[2] + pad[2])
            ax.set_zlabel(labels[2])
            ax.set_box_aspect(None, zoom=0.85)  # keeps the axis labels inside the panel
        ax.set_title(title, fontsize=10)
    return fig


def plot_singular_values(fit, ax=None, label=None, title=None, threshold=None, color="C0"):
    """Identifiability spectrum: singular values σ_i of A against their noise level.

    A direction is resolved when σ_i exceeds ``threshold`` (the report's rank rule, 3) times the
    standard error of ``A v_i``; the figure shows σ_i (filled: resolved, open: unresolved) and
    that threshold.

    Parameters
    ----------
    fit : FitResult, IdentifiabilityReport or IdentifiabilityCheck
    """
    from ..solve.directions import SIGNAL_THRESHOLD as RANK_THRESHOLD

    rep = getattr(fit, "report", None) or fit
    threshold = RANK_THRESHOLD if threshold is None else threshold
    s = np.asarray(rep.singular_values, dtype=float)
    noise = None if rep.singular_noise is None else np.asarray(rep.singular_noise, dtype=float)
    fig, ax = _figure(ax, (4.2, 3.0))
    i = np.arange(1, s.size + 1)
    floor = np.finfo(float).tiny
    shown = np.maximum(s, floor)
    resolved = np.arange(s.size) < rep.rank if noise is None else s > threshold * noise
    ax.plot(i, shown, color=color, lw=1, alpha=0.5, zorder=1)
    ax.scatter(
        i[resolved],
        shown[resolved],
        color=color,
        zorder=3,
        label=(label + ": resolved") if label else "resolved",
    )
    ax.scatter(
        i[~resolved],
        shown[~resolved],
        facecolors="none",
        edgecolors=color,
        zorder=3,
        label=(label + ": unresolved") if label else "unresolved",
    )
    if noise is not None:
        ax.plot(
            i,
            threshold * noise,
            ls=":",
            color=color,
            label=(f"{label}: " if label else "") + f"{threshold:g} × noise level",
        )
    ax.set_yscale("log")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("singular direction i")
    ax.set_ylabel("σ_i of A")
    ax.set_title(title or f"rank {rep.rank} of {rep.n_params}", fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    return fig
