"""Choosing an estimator by name: ``score="kernel"``, ``"local_gaussian"``, ``"score_matching"``,
an estimator or a callable."""

from __future__ import annotations

import numpy as np

from ... import arguments
from ...errors import DataError
from .base import ScoreEstimate, ScoreEstimator
from .callable import CallableScore
from .kernel import KernelScore
from .matching import ScoreMatching

__all__ = ["make_estimator", "estimate_scores"]


def make_estimator(score="kernel", temperature=49.0, radius=None, degree=2) -> ScoreEstimator:
    """The estimator named by ``score``: "kernel", "local_gaussian", "score_matching", an
    estimator or a callable."""
    if radius is not None:  # checked whether or not the estimator uses it
        r = arguments.float_array(radius, "radius")
        if r.ndim > 1 or not (np.isfinite(r).all() and (r > 0).all()):
            raise DataError(f"radius must be a positive number or one per probe, got {radius!r}")
    if isinstance(score, ScoreEstimator):
        return score
    if isinstance(score, str):
        if score == "kernel":
            return KernelScore(temperature)
        if score == "local_gaussian":
            return KernelScore(temperature, deconvolve=True)
        if score == "score_matching":
            if radius is None:
                raise DataError(
                    "score='score_matching' needs radius= (or probes given as Balls, "
                    "whose radius is used)"
                )
            return ScoreMatching(radius, degree)
        raise DataError(
            f"score must be 'kernel', 'local_gaussian', 'score_matching', (S, J) arrays "
            f"or a callable, got {score!r}"
        )
    if callable(score):
        return CallableScore(score)
    raise DataError(
        f"score must be 'kernel', 'local_gaussian', 'score_matching', (S, J) arrays or a "
        f"callable, got {score!r}"
    )


def estimate_scores(
    X, probes, score="kernel", *, temperature=49.0, radius=None, degree=2, n_blocks=0
) -> ScoreEstimate:
    """Scores and Jacobians at ``probes`` (M, d) from data ``X`` (N, d) with any estimator.

    Parameters
    ----------
    score : "kernel", "local_gaussian", "score_matching", ScoreEstimator or callable
        ``fn(X, probes) -> (S, J)``
    temperature : float
        Kernel precision T (kernel and local Gaussian estimators).
    radius : float or (M,)
        Ball radius (score matching).
    degree : int
        Monomial degree of the local log-density (score matching).
    n_blocks : int
        When ≥ 2, also return delete-one-block estimates over that many contiguous blocks.
    """
    return make_estimator(score, temperature, radius, degree).estimate(X, probes, n_blocks)
