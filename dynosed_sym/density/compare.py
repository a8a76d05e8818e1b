"""Distances between a learned density and a reference on a grid (used by the demo and the sweep).

* :func:`tv_to_exact` — total variation against an exact (unnormalised) log density, both
  normalised by quadrature on the same grid, and the learned density's own integral there;
* :func:`tv_to_samples` — total variation between the learned density's mass per histogram bin
  (sub-cell quadrature) and a sample histogram, mass outside the box counted too.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError

__all__ = ["grid_points", "tv_to_exact", "tv_to_samples"]


def grid_points(extent, n):
    """Cell centres of an n × n grid over extent = (xmin, xmax, ymin, ymax).

    Returns xs, ys, P (n², 2) and the cell area.
    """
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    if not (xmax > xmin and ymax > ymin):
        raise DataError(f"extent: expected (xmin, xmax, ymin, ymax) with max > min, got {extent}")
    hx, hy = (xmax - xmin) / n, (ymax - ymin) / n
    xs = xmin + hx * (np.arange(n) + 0.5)
    ys = ymin + hy * (np.arange(n) + 0.5)
    XX, YY = np.meshgrid(xs, ys, indexing="ij")
    return xs, ys, np.column_stack([XX.ravel(), YY.ravel()]), hx * hy


def tv_to_exact(density, log_density, extent, n=200):
    """Total variation ½∫|q − p| on a grid, p = exp(log_density) normalised on the same grid.

    Returns
    -------
    tv : float
    integral : float
        ∫ q over the grid (midpoint rule): 1 up to quadrature error and mass outside the box.
    """
    _, _, P, area = grid_points(extent, n)
    q = density.prob(P)
    lp = np.asarray(log_density(P), dtype=float)
    p = np.exp(lp - lp.max())
    p /= p.sum() * area
    return 0.5 * float(np.abs(q - p).sum() * area), float(q.sum() * area)


def tv_to_samples(density, X, extent, bins=40, sub=4):
    """Total variation between the learned mass per bin and the samples' histogram.

    Parameters
    ----------
    density : LearnedDensity (2-D)
    X : numpy.ndarray (N, 2)
    extent : (xmin, xmax, ymin, ymax)
    bins : int
        Bins per axis.
    sub : int
        Midpoint-rule sub-cells per bin and axis for the learned mass.
    """
    X = np.asarray(X, dtype=float)
    xmin, xmax, ymin, ymax = (float(v) for v in extent)
    H, _, _ = np.histogram2d(X[:, 0], X[:, 1], bins=bins, range=[[xmin, xmax], [ymin, ymax]])
    H = H / X.shape[0]
    _, _, P, area = grid_points(extent, bins * sub)
    q = (density.prob(P) * area).reshape(bins, sub, bins, sub).sum(axis=(1, 3))
    outside = abs((1.0 - q.sum()) - (1.0 - H.sum()))
    return 0.5 * float(np.abs(q - H).sum() + outside)
