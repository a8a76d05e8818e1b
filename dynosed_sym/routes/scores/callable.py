"""A user function ``fn(X, probes) -> (S, J)`` as a score estimator."""

from __future__ import annotations

import numpy as np

from ...data.sources import is_streamed
from ...errors import DataError
from .base import ScoreEstimate, ScoreEstimator, as_xp, block_edges_or_one, check_scores

__all__ = ["CallableScore"]


class CallableScore(ScoreEstimator):
    """A user function ``fn(X, probes) -> (S, J)`` as an estimator (jackknife by re-running it)."""

    method = "callable"

    def __init__(self, fn):
        if not callable(fn):
            raise DataError(f"score: expected a callable fn(X, probes) -> (S, J), got {fn!r}")
        self.fn = fn

    def __repr__(self):
        return f"CallableScore({getattr(self.fn, '__name__', self.fn)!r})"

    def _call(self, X, P):
        out = self.fn(X, P)
        try:
            S, J = out
        except (TypeError, ValueError):
            raise DataError(
                "score: the callable must return a pair (S (M, d), J (M, d, d))"
            ) from None
        return check_scores(S, J, P.shape[0], P.shape[1], "score callable")

    def estimate(self, X, probes, n_blocks=0, **_) -> ScoreEstimate:
        if is_streamed(X):
            raise DataError(
                "score: a callable estimator needs X in memory (an array or DataFrame); "
                "for a file or a stream of chunks use score='kernel', 'local_gaussian' or "
                "'score_matching', which read it in one pass"
            )
        X, P = as_xp(X, probes)
        S, J = self._call(X, P)
        edges = block_edges_or_one(X.shape[0], n_blocks)
        B = edges.shape[0] - 1
        if B < 2:
            return ScoreEstimate(S, J, None, None, None, self.method)
        Sb = np.empty((B,) + S.shape)
        Jb = np.empty((B,) + J.shape)
        for b in range(B):
            keep = np.concatenate([X[: edges[b]], X[edges[b + 1] :]])
            Sb[b], Jb[b] = self._call(keep, P)
        return ScoreEstimate(S, J, None, Sb, Jb, self.method)
