"""The Gaussian-kernel score estimator (``score="kernel"``) and its local-Gaussian variant
(``score="local_gaussian"``); the sums come from :mod:`dynosed_sym.kernels.kernel_score`."""

from __future__ import annotations

import numpy as np

from ...data.sources import is_streamed
from ...errors import DataError
from ...kernels.kernel_score import kernel_stream_sums
from .base import (
    ScoreEstimate,
    ScoreEstimator,
    as_xp,
    block_edges_or_one,
    check_temperature,
    data_and_probes,
    streamed_blocks,
)

__all__ = ["KernelScore", "kernel_score"]


def _kernel_from_sums(W, M1, M2, T, deconvolve=False):
    """Score and Jacobian from (possibly summed) kernel sums W (..., M), M1 (..., M, d), M2.

    ``deconvolve=False``: the kernel density estimate's score ``T·m`` and Jacobian ``T²C − TI``
    (m = weighted mean of y = x_j − x, C = weighted covariance).  ``deconvolve=True``: the local
    Gaussian fit ``s = C⁻¹m``, ``J = TI − C⁻¹`` (exact when p is Gaussian near the probe).
    """
    d = M1.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = M1 / W[..., None]
        cov = M2 / W[..., None, None] - mean[..., :, None] * mean[..., None, :]
    if not deconvolve:
        # T·(T·C): T² alone underflows for data × 1e100 (T ≈ 1e-200), and J was then −T·I
        return T * mean, T * (T * cov) - T * np.eye(d)
    flat = cov.reshape((-1, d, d))
    prec = np.full(flat.shape, np.nan)
    ok = np.isfinite(flat).all(axis=(1, 2))
    if ok.any():
        good = flat[ok]
        # symmetric inverse via eigh; eigenvalues at or below the rounding of M2/W − mean·meanᵀ
        # (degenerate data: a constant column, or one scaled by 1e-310, whose variance is
        # cancellation noise of either sign) give nan, not a precision of 1e16 or more
        w, V = np.linalg.eigh(0.5 * (good + np.swapaxes(good, 1, 2)))
        with np.errstate(invalid="ignore"):
            second = np.abs(np.diagonal(M2 / W[..., None, None], axis1=-2, axis2=-1))
        floor = 8 * d * np.finfo(float).eps * second.reshape(-1, d).max(axis=1)[ok]
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_w = np.where(w > floor[:, None], 1.0 / w, np.nan)
        prec[ok] = np.einsum("mij,mj,mkj->mik", V, inv_w, V)
    prec = prec.reshape(cov.shape)
    S = np.einsum("...ij,...j->...i", prec, mean)
    J = T * np.eye(d) - prec
    return S, J


def _flat_column(W, M1, M2):
    """``": column j has no spread …"`` when the covariance's flat direction at one probe
    (sums W, M1 (d,), M2 (d, d)) is a column of X: a constant column, or one of subnormal
    numbers such as 1e-310 (whose squares are zero), gives no local covariance to invert."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = M1 / W
        cov = M2 / W - np.outer(mean, mean)
    if not np.isfinite(cov).all():
        return ""
    w, V = np.linalg.eigh(0.5 * (cov + cov.T))
    j = int(np.argmax(np.abs(V[:, 0])))
    if abs(V[j, 0]) < 1.0 - 1e-6:
        return ""
    return (
        f": column {j} of X has no spread there — a constant column, or values far below the "
        "other columns' scale such as subnormal numbers (< 2.2e-308); rescale that column to "
        "order one (and the model with it) or drop it"
    )


#: A probe whose nearest data point has kernel weight below exp(−FAR_EXPONENT) (≈ 1e-300) has no
#: data near it (``T d²/2 > 690``, i.e. farther than ≈ 37 kernel widths).
FAR_EXPONENT = 690.0


class KernelScore(ScoreEstimator):
    """Gaussian kernel score estimator with temperature ``T`` (see module docstring).

    Parameters
    ----------
    temperature : float or "auto"
        Precision T > 0 of the kernel (bandwidth ``1/√T``); ``"auto"``: chosen from the data
        around the probes (:func:`~dynosed_sym.routes.scores.bandwidth.auto_temperature`) when
        :meth:`estimate` first sees them.
    deconvolve : bool
        False (``score="kernel"``, docs/method.md §2): the score of the kernel density estimate,
        ``T·m`` and ``T²C − TI`` with m, C the kernel-weighted mean of ``x_j − x`` and covariance.
        It converges to the score of p smoothed by N(0, I/T), a bias that matters when 1/T is
        not small against the local variance of p.  True (``score="local_gaussian"``): the same
        weighted moments read as a local Gaussian fit of p: the weighted law of a Gaussian p is
        Gaussian with precision ``Λ + TI``, so ``J = TI − C⁻¹`` and ``s = C⁻¹m`` — exact for a
        locally Gaussian p at any T, with a variance comparable to the plain estimator's.
    min_effective : float
        A probe whose effective number of data points ``(Σw)²/Σw²`` is below this raises
        a DataError (no data near the probe at this temperature).
    """

    method = "kernel"
    streams = True

    def __init__(self, temperature=49.0, deconvolve=False, min_effective=2.0):
        self.auto = isinstance(temperature, str) and temperature == "auto"
        self.temperature = None if self.auto else check_temperature(temperature)
        self.deconvolve = bool(deconvolve)
        self.method = "local_gaussian" if self.deconvolve else "kernel"
        self.min_effective = float(min_effective)
        self.auto_info = None

    def __repr__(self):
        extra = ", deconvolve=True" if self.deconvolve else ""
        T = "'auto'" if self.temperature is None else f"{self.temperature:g}"
        return f"KernelScore(temperature={T}{extra})"

    def resolve(self, X, probes, n_rows=None):
        """Fix an ``"auto"`` temperature from data X (in memory: all of it, or the first rows of
        a stream with ``n_rows`` in all) around the probes; returns T."""
        if self.temperature is None:
            from .bandwidth import auto_temperature

            X, P = as_xp(X, probes)
            self.temperature, self.auto_info = auto_temperature(self, X, P, n_rows)
        return self.temperature

    def estimate(self, X, probes, n_blocks=0, *, chunk_rows=None, bar=None) -> ScoreEstimate:
        """Scores at ``probes`` from X in memory, or streamed in one pass (``is_streamed(X)``:
        per-block sums with a running nearest-point shift, memory O(B·M·d²))."""
        return self.estimate_family(X, probes, n_blocks, chunk_rows=chunk_rows, bar=bar)[0]

    def estimate_family(
        self, X, probes, n_blocks=0, *, chunk_rows=None, bar=None, companions=False
    ):
        """``[estimate at T]``, or with ``companions`` ``[estimate at T, local Gaussian at T,
        local Gaussian at T/2]`` from the same pass over X (the smoothing-bias estimate of
        :mod:`dynosed_sym.routes.scores.bandwidth`)."""
        if self.temperature is None:
            if is_streamed(X):
                raise DataError(
                    "temperature='auto' is resolved from the data before streaming: call "
                    "resolve() on the first rows, or pass a temperature"
                )
            self.resolve(X, probes)
        T = self.temperature
        temps = [T, 0.5 * T] if companions else [T]
        sums, P, total = self._sums(X, probes, temps, n_blocks, chunk_rows, bar)
        out = [self._from_block_sums(P, *sums[0], T, self.deconvolve)]
        if companions:
            out += [
                out[0] if self.deconvolve else self._companion(P, sums[0], T),
                self._companion(P, sums[1], 0.5 * T),
            ]
        for est in out:
            if est is not None:
                est.n_samples = total
        return out

    def _sums(self, X, probes, temps, n_blocks, chunk_rows, bar):
        """Per-block kernel sums (W, W2, M1, M2, dmin) for each temperature, one pass over X."""
        X, P, streamed = data_and_probes(X, probes)
        M, d = P.shape

        def zero_sums(B):
            shapes = ((B, M), (B, M), (B, M, d), (B, M, d, d))
            return [tuple(np.zeros(s) for s in shapes) + (np.full(M, np.inf),) for _ in temps]

        def add(part, starts, ks):
            Xt = np.ascontiguousarray(part.T)
            for T, (W, W2, M1, M2, dmin) in zip(temps, sums):
                kernel_stream_sums(Xt, P, T, starts, ks, dmin, W, W2, M1, M2)

        if not streamed:
            # all of X as one chunk: the running shift is the nearest point's from the start
            edges = block_edges_or_one(X.shape[0], n_blocks)
            sums = zero_sums(edges.shape[0] - 1)
            add(X, edges, np.arange(edges.shape[0] - 1, dtype=np.int64))
            return sums, P, None
        with streamed_blocks(X, P, n_blocks) as (source, blocks):
            sums = zero_sums(blocks.slots)
            for W, W2, M1, M2, _ in sums:
                blocks.register(W, W2, M1, M2)
            trimmed, _, total = blocks.run(source, add, chunk_rows, bar)
        out = [(*trimmed[4 * k : 4 * k + 4], dmin) for k, (*_, dmin) in enumerate(sums)]
        return out, P, total

    def _companion(self, P, sums, T):
        """The local Gaussian estimate from ``sums`` at T, or None where it is degenerate."""
        try:
            return self._from_block_sums(P, *sums, T, True)
        except DataError:
            return None

    def _from_block_sums(self, P, W, W2, M1, M2, dmin, T, deconvolve) -> ScoreEstimate:
        M = P.shape[0]
        B = W.shape[0]
        Wt, M1t, M2t = W.sum(0), M1.sum(0), M2.sum(0)
        W2t = W2.sum(0)
        # no weight at all (W2 = 0: every weight underflowed) is an effective size of 0, not 0/0
        ess = np.divide(Wt**2, W2t, out=np.zeros_like(Wt), where=W2t > 0)
        # the sums are shifted by the nearest point's weight; without the shift every weight
        # exp(−T d²/2) of a probe this far from the data underflows: no data point is near it
        far = ~(0.5 * T * dmin <= FAR_EXPONENT)
        bad = np.flatnonzero(far | ~(ess >= self.min_effective))
        if bad.size:
            i = int(bad[0])
            where = f"kernel score: probe {i} (x = {np.array2string(P[i], precision=4)})"
            if far[i]:
                raise DataError(
                    f"{where} is {np.sqrt(T * dmin[i]):.3g} kernel widths (1/√T) from the "
                    "nearest data point: no data point carries kernel weight there; move the "
                    f"probe into the data, or lower temperature= if the kernel width "
                    f"1/√T = {1 / np.sqrt(T):.3g} is small for the data's scale"
                )
            raise DataError(
                f"{where} has {ess[i]:.2f} effective data point(s) within the kernel at "
                f"temperature T = {T:g} (at least {self.min_effective:g} needed); lower T or "
                "move the probe into the data"
            )
        S, J = _kernel_from_sums(Wt, M1t, M2t, T, deconvolve)
        if not (np.isfinite(S).all() and np.isfinite(J).all()):
            i = int(np.flatnonzero(~np.isfinite(J).reshape(M, -1).all(axis=1))[0])
            raise DataError(
                f"local Gaussian score: the kernel-weighted data around probe {i} are "
                f"degenerate (singular covariance{_flat_column(Wt[i], M1t[i], M2t[i])}); "
                "lower T or add data"
            )
        Sb = Jb = None
        if B >= 2:
            Sb, Jb = _kernel_from_sums(Wt[None] - W, M1t[None] - M1, M2t[None] - M2, T, deconvolve)
        method = "local_gaussian" if deconvolve else "kernel"
        return ScoreEstimate(S, J, ess, Sb, Jb, method)


def kernel_score(X, probes, temperature=49.0):
    """Gaussian-kernel scores (M, d) and Jacobians (M, d, d) at ``probes`` (see KernelScore)."""
    return KernelScore(temperature)(X, probes)
