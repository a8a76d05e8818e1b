"""Shared helpers of the demo: loading bundled models, exact OU samples, section rules, figures."""

from __future__ import annotations

import os

import numpy as np
import scipy.linalg

import dynosed_sym as ds

MODELS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
    "models",
)


def _load(name):
    return ds.load_model(os.path.join(MODELS, f"{name}.py"))


def _rule(title):
    print()
    print(title)
    print("=" * len(title))


def _ou_samples(M, N, seed):
    Sigma = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))  # D = I
    return np.random.default_rng(seed).multivariate_normal(np.zeros(2), Sigma, N)


def _new_figure(figsize):
    from ..plotting import require_matplotlib

    matplotlib = require_matplotlib()
    matplotlib.use("Agg")  # files only; no display needed
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")
