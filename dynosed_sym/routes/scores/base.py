"""Score estimators for the local route: ``s(x) = ∇log p(x)`` and its Jacobian at probes.

Every estimator has the same small interface:

* ``est(X, probes) -> (S, J)`` with ``S`` (M, d) the scores and ``J`` (M, d, d) their Jacobians
  (``J[i, j, l] = ∂s_j/∂x_l`` at probe i), so any callable of that form can be plugged into
  :func:`dynosed_sym.fit_local`;
* ``est.estimate(X, probes, n_blocks=B) -> ScoreEstimate``, which also returns delete-one-block
  (jackknife) estimates over B contiguous blocks of rows of X, from which the local route
  estimates the sampling noise of its linear system.

Estimators
----------
:class:`KernelScore` (``score="kernel"``)
    The Gaussian kernel estimator of DESIGN §2 with temperature T (precision, 1/bandwidth²):
    weights ``w_j ∝ exp(−T‖x − x_j‖²/2)``, ``ŝ(x) = T(Σ_j w_j x_j − x)``,
    ``∇ŝ(x) = T² Cov_w(x_j) − T I`` (the exact score of the Gaussian kernel density estimate).
    A compiled kernel makes two passes over the data per probe (minimum distance, then the
    weighted sums ``Σw``, ``Σw y``, ``Σw yyᵀ`` with ``y = x_j − x`` per block of rows): time
    O(M N d²), memory O(B M d²), never O(N²).  Its bias is the smoothing: for a Gaussian law
    N(μ, Σ) and many data it converges to the score of N(μ, Σ + I/T).
``KernelScore(T, deconvolve=True)`` (``score="local_gaussian"``)
    The same kernel-weighted moments read as a local Gaussian fit: ``s = C⁻¹m``,
    ``J = TI − C⁻¹`` (m, C: weighted mean of ``x_j − x`` and covariance).  Exact for a locally
    Gaussian p at any T, so it removes the smoothing bias of the plain kernel estimator.
:class:`ScoreMatching` (``score="score_matching"``)
    Local Hyvärinen score matching.  In the ball of radius r around each probe, with
    ``u = (x − x_probe)/r``, the log-density is modelled as ``ψ(u) = Σ_k α_k m_k(u)`` over the
    monomials of degree 1 … ``degree`` (2: ``hᵀu − ½uᵀPu``, a local Gaussian; 3 adds cubic
    terms).  The weighted objective

        E[ g(u)(½‖∇ψ‖² + Δψ) + ∇g·∇ψ ],   g(u) = (1 − ‖u‖²)^q  (q = ``weight_power``, default 2)

    equals ``½E[g‖∇ψ − ∇log p‖²]`` up to a constant for data restricted to the ball, because g
    vanishes on the ball's boundary and so kills the boundary terms of the integration by
    parts (the plain objective, g ≡ 1, is biased for data cut off at the edge).  It is
    quadratic in α: ``α = −G⁻¹c`` with ``G = Σ g ∇mᵀ∇m`` and ``c = Σ (g Δm + ∇mᵀ∇g)`` over the
    data in the ball.  Score ``∇ψ(0)/r`` and Jacobian ``∇²ψ(0)/r²``.  Memory O(n_ball·d·K) in
    chunks of rows.
:class:`CallableScore`
    Wraps a user function ``fn(X, probes) -> (S, J)``; the jackknife re-runs it without each
    block.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numba
import numpy as np

from .errors import DataError

__all__ = ["ScoreEstimate", "ScoreEstimator", "KernelScore", "ScoreMatching", "CallableScore",
           "make_estimator", "estimate_scores", "kernel_score", "score_matching",
           "monomial_exponents", "check_scores", "is_streamed", "kernel_stream_sums"]

CHUNK_ROWS = 65536
KERNEL_CHUNK = 2048  # rows per buffered chunk of the kernel estimator (fits in L1/L2)
STREAM_BALL_ROWS = 16384  # rows per window of streamed score matching (bounds its work arrays)


# ----------------------------------------------------------------------------------------------
# result type
# ----------------------------------------------------------------------------------------------

@dataclass
class ScoreEstimate:
    """Scores and Jacobians at M probes, with optional delete-one-block (jackknife) replicates.

    Attributes
    ----------
    score : (M, d) array
    jacobian : (M, d, d) array, ``jacobian[i, j, l] = ∂s_j/∂x_l``
    n_effective : (M,) array or None
        Data behind each probe: the Kish effective number ``(Σw)²/Σw²`` for the kernel
        estimator, the number of points in the ball for score matching.
    score_blocks : (B, M, d) array or None
        Estimates with block b of the rows of X left out (jackknife replicates).
    jacobian_blocks : (B, M, d, d) array or None
    method : str
    n_samples : int or None
        Rows read from a streamed input (None for data in memory).
    """

    score: np.ndarray
    jacobian: np.ndarray
    n_effective: np.ndarray | None = None
    score_blocks: np.ndarray | None = None
    jacobian_blocks: np.ndarray | None = None
    method: str = ""
    n_samples: int | None = None

    @property
    def n_blocks(self) -> int:
        return 0 if self.score_blocks is None else int(self.score_blocks.shape[0])


def check_scores(S, J, M, d, what="score"):
    """Validate user-supplied scores (M, d) and Jacobians (M, d, d) → float arrays."""
    try:
        S = np.asarray(S, dtype=float)
        J = np.asarray(J, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what}: scores and Jacobians must be numeric arrays ({exc})") from None
    if d == 1 and S.shape == (M,):
        S = S[:, None]
    if d == 1 and J.shape in ((M,), (M, 1)):
        J = J.reshape(M, 1, 1)
    if S.shape != (M, d):
        raise DataError(f"{what}: scores have shape {S.shape}, expected (M, d) = ({M}, {d})")
    if J.shape != (M, d, d):
        raise DataError(f"{what}: Jacobians have shape {J.shape}, expected (M, d, d) = ({M}, {d}, {d})")
    for arr, nm in ((S, "scores"), (J, "Jacobians")):
        bad = ~np.isfinite(arr.reshape(M, -1)).all(axis=1)
        if bad.any():
            raise DataError(f"{what}: {nm} at probe(s) {np.flatnonzero(bad)[:5].tolist()} are not finite")
    return np.ascontiguousarray(S), np.ascontiguousarray(J)


def _check_temperature(T):
    try:
        T = float(T)
    except (TypeError, ValueError):
        raise DataError(f"temperature must be a positive number, got {T!r}") from None
    if not (np.isfinite(T) and T > 0):
        raise DataError(f"temperature must be positive and finite, got {T!r}")
    return T


def _block_edges(N, n_blocks):
    from .data import block_edges

    if not n_blocks or n_blocks < 2:
        return np.array([0, N], dtype=np.int64)
    return block_edges(N, n_blocks)


def _as_xp(X, probes):
    X = np.ascontiguousarray(X, dtype=float)
    P = np.ascontiguousarray(probes, dtype=float)
    if X.ndim != 2 or P.ndim != 2 or X.shape[1] != P.shape[1]:
        raise DataError(f"data {X.shape} and probes {P.shape} must be 2-D with the same number of columns")
    if X.shape[0] == 0:
        raise DataError("no data to estimate scores from")
    return X, P


# ----------------------------------------------------------------------------------------------
# streamed data: one pass, per-block partial sums, memory independent of N
# ----------------------------------------------------------------------------------------------

class _Columns:
    """Stands in for a model when a source is opened without one (columns x0, x1, …)."""

    def __init__(self, d):
        self.d = int(d)
        self.state_names = [f"x{i}" for i in range(self.d)]
        self.name = "scores"


def is_streamed(X) -> bool:
    """True for inputs read in chunks (:func:`dynosed_sym.data.open_source`): a
    :class:`~dynosed_sym.data.DataSource`, a file path, a ``numpy.memmap``, a Zarr or HDF5
    array, a dask array or an iterator/iterable of chunks; False for arrays, DataFrames and
    nested lists in memory."""
    import os

    from .data import DataSource

    if isinstance(X, (DataSource, str, os.PathLike, np.memmap)):
        return True
    if isinstance(X, np.ndarray) or X is None:
        return False
    module = type(X).__module__ or ""
    if module.startswith(("zarr", "h5py", "dask")):
        return True
    if isinstance(X, (list, tuple)):
        return bool(X) and all(isinstance(c, np.ndarray) and c.ndim == 2 or hasattr(c, "columns")
                               for c in X)
    if hasattr(X, "__array__") or hasattr(X, "columns"):
        return False
    return hasattr(X, "__iter__") or hasattr(X, "__next__")


def _open_stream(X, P):
    """(source, close) for a streamed input ``X`` whose columns match the probes ``P``."""
    from .data import DataSource, open_source

    if isinstance(X, DataSource):
        if X.d != P.shape[1]:
            raise DataError(f"data ({X.d} columns) and probes {P.shape} must have the same number "
                            "of columns")
        return X, False
    return open_source(X, _Columns(P.shape[1]), "X"), True


def _as_probes(probes):
    P = np.ascontiguousarray(probes, dtype=float)
    if P.ndim != 2:
        raise DataError(f"probes {P.shape} must be a 2-D array (M, d)")
    return P


class _StreamBlocks:
    """Per-block partial sums of a streamed input, in row order (the noise blocks of
    :class:`dynosed_sym.data.NoiseBlocks`).

    Known N (files, Zarr, HDF5, dask): the blocks of an in-memory array (``block_edges``), so
    the delete-one-block replicates are those of the array loaded into memory.  Unknown N (an
    iterator): equal blocks, merged pairwise when ``2·n_blocks`` are full, a short tail joined
    to the previous block — a partition that depends on N only, not on the chunking.
    ``n_blocks < 2``: one block, no replicates.

    The sums are arrays with the block as first axis (``register``); the estimator adds a
    chunk's rows through ``add(part, starts, blocks)`` (rows ``starts[i]:starts[i+1]`` of
    ``part`` belong to block ``blocks[i]``).
    """

    def __init__(self, n_rows, n_blocks):
        from .data import MIN_BLOCK_ROWS, NoiseBlocks

        self.n_rows = n_rows
        self.splitter = None
        self.slots = 1
        self.size = MIN_BLOCK_ROWS
        if n_blocks and n_blocks >= 2:
            self.splitter = NoiseBlocks(n_rows, n_blocks)
            self.slots = (self.splitter.edges.shape[0] - 1 if n_rows is not None
                          else 2 * self.splitter.n_blocks)
        self.counts = np.zeros(self.slots, dtype=np.int64)
        self.arrays = []

    def register(self, *arrays):
        self.arrays.extend(arrays)

    def _merge_pairs(self):
        h = self.slots // 2
        for a in self.arrays + [self.counts]:
            a[:h] = a[0:2 * h:2] + a[1:2 * h:2]
            a[h:] = 0

    def feed(self, chunk, add):
        n = chunk.shape[0]
        if self.splitter is None:
            add(chunk, np.array([0, n], dtype=np.int64), np.array([0], dtype=np.int64))
            self.counts[0] += n
            return
        first, pos, ks, starts = 0, 0, [], [0]

        def flush():
            if ks:
                st = np.asarray(starts, dtype=np.int64) - first
                add(chunk[first:pos], st, np.asarray(ks, dtype=np.int64))

        for k, piece in self.splitter.split(chunk):
            if self.splitter.size != self.size:  # full blocks merged before this piece
                flush()
                self._merge_pairs()
                self.size = self.splitter.size
                first, ks, starts = pos, [], [pos]
            ks.append(int(k))
            pos += piece.shape[0]
            starts.append(pos)
            self.counts[k] += piece.shape[0]
        flush()

    def finish(self):
        """Trim to the blocks used (joining a short tail) → (arrays, counts, N)."""
        used = np.flatnonzero(self.counts)
        total = int(self.counts.sum())
        if total == 0:
            raise DataError("X: no data to estimate scores from")
        if self.n_rows is not None and total != self.n_rows:
            raise DataError(f"X: {total} rows were read but {self.n_rows} were announced")
        K = int(used[-1]) + 1
        if self.splitter is not None and self.n_rows is None and K > 1 and 2 * self.counts[K - 1] < self.size:
            for a in self.arrays + [self.counts]:
                a[K - 2] += a[K - 1]
            K -= 1
        return [a[:K] for a in self.arrays], self.counts[:K].copy(), total

    def run(self, source, add, chunk_rows=None, bar=None):
        """Feed every chunk of ``source``; small chunks (e.g. of an iterator) are gathered into
        batches of about ``chunk_rows`` rows, so the per-call cost of the kernels is paid per
        batch, not per chunk."""
        from .data import CHUNK_ROWS

        rows = CHUNK_ROWS if chunk_rows is None else int(chunk_rows)
        held, n_held = [], 0

        def flush():
            batch = held[0] if len(held) == 1 else np.concatenate(held)
            held.clear()
            self.feed(batch, add)
            if bar is not None:
                bar.update(batch.shape[0])

        for chunk in source.chunks(rows):
            held.append(chunk)
            n_held += chunk.shape[0]
            if n_held >= rows:
                flush()
                n_held = 0
        if held:
            flush()
        return self.finish()


# ----------------------------------------------------------------------------------------------
# Gaussian kernel estimator
# ----------------------------------------------------------------------------------------------

@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _exp_neg(e):
    """exp(−e) for 0 ≤ e < 1000 without a libm call (relative error below 1e-15).

    e = k·ln2 + r with k = round(e/ln2), |r| ≤ ln2/2; exp(−r) by its Taylor series to r¹⁴ (Horner),
    then the exact factor 2⁻ᵏ built from the exponent bits.
    """
    k = np.floor(e * 1.4426950408889634 + 0.5)
    r = (e - k * 0.6931471803691238) - k * 1.9082149292705877e-10  # ln 2 split: exact high part
    p = 1.1470745597729725e-11
    p = p * r - 1.6059043836821613e-10
    p = p * r + 2.08767569878681e-09
    p = p * r - 2.505210838544172e-08
    p = p * r + 2.755731922398589e-07
    p = p * r - 2.7557319223985893e-06
    p = p * r + 2.48015873015873e-05
    p = p * r - 0.0001984126984126984
    p = p * r + 0.001388888888888889
    p = p * r - 0.008333333333333333
    p = p * r + 0.041666666666666664
    p = p * r - 0.16666666666666666
    p = p * r + 0.5
    p = p * r - 1.0
    p = p * r + 1.0
    return p * np.uint64((1023 - np.int64(k)) << 52).view(np.float64)


# fastmath {"reassoc", "contract"} only: lets LLVM vectorise the reductions over a chunk (the
# summation order is fixed by the code, so results do not depend on the number of threads).
@numba.njit(parallel=False, fastmath={"reassoc", "contract"}, cache=True, error_model="numpy",
            boundscheck=False, nogil=True, inline="always")
def _nearest(Xt, p, r2):
    """Squared distance from p to the nearest column of Xt (d, N), in chunks of ``r2.size``."""
    d, N = Xt.shape
    CH = r2.shape[0]
    best = np.inf
    for c0 in range(0, N, CH):
        n = min(CH, N - c0)
        for i in range(n):
            r2[i] = 0.0
        for a in range(d):
            xa = Xt[a, c0:c0 + n]
            pa = p[a]
            for i in range(n):
                t = xa[i] - pa
                r2[i] += t * t
        for i in range(n):
            best = min(best, r2[i])
    return best


@numba.njit(parallel=False, fastmath={"reassoc", "contract"}, cache=True, error_model="numpy",
            boundscheck=False, nogil=True, inline="always")
def _weighted_sums(Xt, lo, hi, p, shift, T, Y, w, r2, m1, m2):
    """Σw and Σw² (returned), Σw·y into m1 and Σw·yyᵀ (lower triangle) into m2 over the columns
    lo..hi of Xt, with y = x − p and w = exp(−T(‖y‖² − shift)/2), in chunks of ``w.size`` rows
    (buffers Y (d, CH), w, r2 (CH,)).  The inner loop shared by the in-memory and streaming kernels.
    """
    d = Xt.shape[0]
    CH = w.shape[0]
    sw = 0.0
    sw2 = 0.0
    for c0 in range(lo, hi, CH):
        n = min(CH, hi - c0)
        for i in range(n):
            r2[i] = 0.0
        for a in range(d):
            xa = Xt[a, c0:c0 + n]
            Ya = Y[a]
            pa = p[a]
            for i in range(n):
                t = xa[i] - pa
                Ya[i] = t
                r2[i] += t * t
        for i in range(n):
            e = min(0.5 * T * (r2[i] - shift), 700.0)
            # weights below e^-40 ≈ 4e-18 of the nearest point's are dropped
            w[i] = _exp_neg(e) if e < 40.0 else 0.0
        s0 = 0.0
        s1 = 0.0
        for i in range(n):
            s0 += w[i]
            s1 += w[i] * w[i]
        sw += s0
        sw2 += s1
        for a in range(d):
            Ya = Y[a]
            acc = 0.0
            for i in range(n):
                acc += w[i] * Ya[i]
            m1[a] += acc
            for c in range(a + 1):
                Yc = Y[c]
                acc = 0.0
                for i in range(n):
                    acc += w[i] * Ya[i] * Yc[i]
                m2[a, c] += acc
    return sw, sw2


@numba.njit(parallel=True, fastmath={"reassoc", "contract"}, cache=True, error_model="numpy",
            boundscheck=False, nogil=True)
def kernel_stream_sums(Xt, P, T, starts, blocks, dmin, W, W2, M1, M2):
    """Add the kernel sums of one chunk into per-block sums (streaming log-sum-exp).

    Weights ``w = exp(−T(‖x_j − p‖² − δ²)/2)``, ``y = x_j − p``, one probe per parallel task.
    Weights below ``e⁻⁴⁰`` (≈ 4·10⁻¹⁸ of the nearest point's) are skipped: a relative change of
    the sums below ``4·10⁻¹⁸ N/Σw``, and no exponential for the far-away bulk of the data.
    The shift δ² is the running minimum ``dmin[m]`` of the squared distances seen so far: when the chunk holds a nearer point, the sums already
    accumulated for that probe (every block) are rescaled by ``exp(−T(δ²_old − δ²_new)/2)``
    (``W2`` by its square) before the chunk is added, so that after the last chunk all sums
    carry the shift of the nearest data point — those of the in-memory kernel up to rounding
    (and up to weights below ``e⁻⁴⁰`` of the nearest point's, kept here when they were above it
    relative to an earlier, larger shift).

    Parameters
    ----------
    Xt : (d, n) chunk, transposed; P : (M, d) probes; T : float
    starts : (S + 1,) int64 row offsets of the chunk's pieces; blocks : (S,) their block index
    dmin : (M,) running squared distance to the nearest point (``inf`` before the first chunk)
    W, W2 : (B, M); M1 : (B, M, d); M2 : (B, M, d, d) sums, updated in place
    """
    d, N = Xt.shape
    M = P.shape[0]
    B = W.shape[0]
    CH = KERNEL_CHUNK
    for m in numba.prange(M):
        p = P[m]
        Y = np.empty((d, CH))
        w = np.empty(CH)
        r2 = np.empty(CH)
        cmin = _nearest(Xt, p, r2)
        dm = dmin[m]
        if cmin < dm:
            if dm < np.inf:
                f = np.exp(-0.5 * T * (dm - cmin))
                f2 = f * f
                for b in range(B):
                    W[b, m] *= f
                    W2[b, m] *= f2
                    for a in range(d):
                        M1[b, m, a] *= f
                        for c in range(d):
                            M2[b, m, a, c] *= f
            dm = cmin
            dmin[m] = cmin
        for s in range(blocks.shape[0]):
            b = blocks[s]
            m1 = np.zeros(d)
            m2 = np.zeros((d, d))
            sw, sw2 = _weighted_sums(Xt, starts[s], starts[s + 1], p, dm, T, Y, w, r2, m1, m2)
            W[b, m] += sw
            W2[b, m] += sw2
            for a in range(d):
                M1[b, m, a] += m1[a]
                for c in range(a + 1):
                    M2[b, m, a, c] += m2[a, c]
                    if c != a:
                        M2[b, m, c, a] += m2[a, c]


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
        return T * mean, T * T * cov - T * np.eye(d)
    flat = cov.reshape((-1, d, d))
    prec = np.full(flat.shape, np.nan)
    ok = np.isfinite(flat).all(axis=(1, 2))
    if ok.any():
        good = flat[ok]
        # symmetric inverse via eigh; non-positive eigenvalues (degenerate data) give nan
        w, V = np.linalg.eigh(0.5 * (good + np.swapaxes(good, 1, 2)))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv_w = np.where(w > 0, 1.0 / w, np.nan)
        prec[ok] = np.einsum("mij,mj,mkj->mik", V, inv_w, V)
    prec = prec.reshape(cov.shape)
    S = np.einsum("...ij,...j->...i", prec, mean)
    J = T * np.eye(d) - prec
    return S, J


class ScoreEstimator:
    """Base class: ``est(X, probes) -> (S, J)``; ``est.estimate(X, probes, n_blocks)``.

    ``streams = True`` marks estimators whose ``estimate`` also takes a streamed ``X`` (see
    :func:`is_streamed`) with the keywords ``chunk_rows`` and ``bar`` (a progress bar with
    ``update(rows)``), reading it once with memory independent of N.
    """

    method = "custom"
    streams = False

    def __call__(self, X, probes):
        est = self.estimate(X, probes, n_blocks=0)
        return est.score, est.jacobian

    def estimate(self, X, probes, n_blocks=0) -> ScoreEstimate:  # pragma: no cover - interface
        raise NotImplementedError


class KernelScore(ScoreEstimator):
    """Gaussian kernel score estimator with temperature ``T`` (see module docstring).

    Parameters
    ----------
    temperature : float
        Precision T > 0 of the kernel (bandwidth ``1/√T``).
    deconvolve : bool
        False (``score="kernel"``, DESIGN §2): the score of the kernel density estimate,
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
        self.temperature = _check_temperature(temperature)
        self.deconvolve = bool(deconvolve)
        self.method = "local_gaussian" if self.deconvolve else "kernel"
        self.min_effective = float(min_effective)

    def __repr__(self):
        extra = ", deconvolve=True" if self.deconvolve else ""
        return f"KernelScore(temperature={self.temperature:g}{extra})"

    def estimate(self, X, probes, n_blocks=0, *, chunk_rows=None, bar=None) -> ScoreEstimate:
        """Scores at ``probes`` from X in memory, or streamed in one pass (``is_streamed(X)``:
        per-block sums with a running nearest-point shift, memory O(B·M·d²))."""
        if is_streamed(X):
            return self._estimate_stream(X, probes, n_blocks, chunk_rows, bar)
        X, P = _as_xp(X, probes)
        M, d = P.shape
        T = self.temperature
        edges = _block_edges(X.shape[0], n_blocks)
        B = edges.shape[0] - 1
        W = np.zeros((B, M))
        W2 = np.zeros((B, M))
        M1 = np.zeros((B, M, d))
        M2 = np.zeros((B, M, d, d))
        # all of X as one chunk: the running shift is then the nearest point's from the start
        kernel_stream_sums(np.ascontiguousarray(X.T), P, T, edges, np.arange(B, dtype=np.int64),
                           np.full(M, np.inf), W, W2, M1, M2)
        return self._from_block_sums(P, W, W2, M1, M2)

    def _estimate_stream(self, X, probes, n_blocks, chunk_rows, bar):
        P = _as_probes(probes)
        M, d = P.shape
        T = self.temperature
        source, close = _open_stream(X, P)
        try:
            blocks = _StreamBlocks(source.n_rows, n_blocks)
            B = blocks.slots
            W = np.zeros((B, M))
            W2 = np.zeros((B, M))
            M1 = np.zeros((B, M, d))
            M2 = np.zeros((B, M, d, d))
            dmin = np.full(M, np.inf)
            blocks.register(W, W2, M1, M2)

            def add(part, starts, ks):
                kernel_stream_sums(np.ascontiguousarray(part.T), P, T, starts, ks, dmin, W, W2, M1, M2)

            (W, W2, M1, M2), _, total = blocks.run(source, add, chunk_rows, bar)
        finally:
            if close:
                source.close()
        est = self._from_block_sums(P, W, W2, M1, M2)
        est.n_samples = total
        return est

    def _from_block_sums(self, P, W, W2, M1, M2) -> ScoreEstimate:
        M = P.shape[0]
        T = self.temperature
        B = W.shape[0]
        Wt, M1t, M2t = W.sum(0), M1.sum(0), M2.sum(0)
        ess = Wt ** 2 / W2.sum(0)
        low = np.flatnonzero(ess < self.min_effective)
        if low.size:
            i = int(low[0])
            raise DataError(f"kernel score: probe {i} (x = {np.array2string(P[i], precision=4)}) has "
                            f"{ess[i]:.2f} effective data point(s) within the kernel at temperature "
                            f"T = {T:g} (at least {self.min_effective:g} needed); lower T or move the probe "
                            "into the data")
        S, J = _kernel_from_sums(Wt, M1t, M2t, T, self.deconvolve)
        if not (np.isfinite(S).all() and np.isfinite(J).all()):
            i = int(np.flatnonzero(~np.isfinite(J).reshape(M, -1).all(axis=1))[0])
            raise DataError(f"local Gaussian score: the kernel-weighted data around probe {i} are "
                            "degenerate (singular covariance); lower T or add data")
        Sb = Jb = None
        if B >= 2:
            Sb, Jb = _kernel_from_sums(Wt[None] - W, M1t[None] - M1, M2t[None] - M2, T, self.deconvolve)
        return ScoreEstimate(S, J, ess, Sb, Jb, self.method)


def kernel_score(X, probes, temperature=49.0):
    """Gaussian-kernel scores (M, d) and Jacobians (M, d, d) at ``probes`` (see :class:`KernelScore`)."""
    return KernelScore(temperature)(X, probes)


# ----------------------------------------------------------------------------------------------
# local score matching
# ----------------------------------------------------------------------------------------------

def monomial_exponents(d, degree):
    """Exponent tuples of the monomials of total degree 1 … ``degree`` in d variables (K, d).

    Ordered by degree, then lexicographically decreasing (``u_0`` before ``u_1``; ``u_0²`` before
    ``u_0u_1``), so the first d rows are the linear monomials.
    """
    rows = []
    for deg in range(1, int(degree) + 1):
        for combo in itertools.combinations_with_replacement(range(d), deg):
            e = [0] * d
            for a in combo:
                e[a] += 1
            rows.append(e)
    return np.array(rows, dtype=np.int64).reshape(-1, d)


def _basis_derivatives(u, E):
    """Gradients (n, d, K) and Laplacians (n, K) of the monomials ``E`` (K, d) at u (n, d)."""
    n, d = u.shape
    K = E.shape[0]
    dmax = int(E.max()) if E.size else 0
    pw = np.ones((n, d, dmax + 1))
    for k in range(1, dmax + 1):
        pw[:, :, k] = pw[:, :, k - 1] * u
    grad = np.zeros((n, d, K))
    lap = np.zeros((n, K))
    for k in range(K):
        e = E[k]
        facs = pw[:, np.arange(d), e]  # (n, d): u_a^{e_a}
        for a in range(d):
            if e[a] == 0:
                continue
            others = np.prod(np.delete(facs, a, axis=1), axis=1) if d > 1 else np.ones(n)
            grad[:, a, k] = e[a] * pw[:, a, e[a] - 1] * others
            if e[a] >= 2:
                lap[:, k] += e[a] * (e[a] - 1) * pw[:, a, e[a] - 2] * others
    return grad, lap


class ScoreMatching(ScoreEstimator):
    """Local Hyvärinen score matching in balls around the probes (see module docstring).

    Parameters
    ----------
    radius : float or (M,) array
        Radius of the ball around each probe.  For data restricted to a region, the ball must
        lie inside that region (its boundary is where the weight vanishes).
    degree : int
        Highest total degree of the monomials of the local log-density (2: quadratic, i.e. a
        local Gaussian; 3: adds cubic terms).
    weight_power : float
        q in the boundary weight ``g(u) = (1 − ‖u‖²)^q`` (q ≥ 1).  q = 0 gives the plain
        Hyvärinen objective (g ≡ 1), which is biased when the data end at the ball's edge; it
        is offered for comparison and for data that extend well beyond the ball.
    min_points : int, optional
        Fewest data points a ball must hold (default ``2·K``, K the number of monomials).
    """

    method = "score_matching"
    streams = True

    def __init__(self, radius, degree=2, weight_power=2.0, min_points=None):
        r = np.asarray(radius, dtype=float) if radius is not None else None
        if r is None or r.ndim > 1 or not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise DataError(f"score matching: radius must be a positive number or one per probe, "
                            f"got {radius!r}")
        self.radius = r
        if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 2:
            raise DataError(f"score matching: degree must be an integer ≥ 2, got {degree!r}")
        self.degree = int(degree)
        if not (np.isfinite(weight_power) and (weight_power >= 1 or weight_power == 0)):
            raise DataError(f"score matching: weight_power must be 0 or ≥ 1, got {weight_power!r}")
        self.weight_power = float(weight_power)
        self.min_points = min_points

    def __repr__(self):
        return f"ScoreMatching(radius={self.radius!r}, degree={self.degree})"

    def _sums(self, X, p, r, E, edges):
        """Per-block G (B, K, K), c (B, K) and point counts (B,) for the ball around ``p``."""
        B = edges.shape[0] - 1
        K = E.shape[0]
        G = np.zeros((B, K, K))
        c = np.zeros((B, K))
        cnt = np.zeros(B, dtype=np.int64)
        for lo in range(0, X.shape[0], CHUNK_ROWS):
            self._chunk_sums(X[lo:lo + CHUNK_ROWS], p, r, E,
                             lambda inside, lo=lo: np.searchsorted(edges, lo + inside, side="right") - 1,
                             G, c, cnt)
        return G, c, cnt

    def _chunk_sums(self, Xc, p, r, E, block_of, G, c, cnt):
        """Add the rows of ``Xc`` in the ball around ``p`` to G (B, K, K), c (B, K), cnt (B,);
        ``block_of(rows)`` gives the block of the chunk's rows (contiguous blocks)."""
        K = E.shape[0]
        q = self.weight_power
        u = (Xc - p) / r
        r2 = np.einsum("ij,ij->i", u, u)
        inside = np.flatnonzero(r2 < 1.0)
        if inside.size == 0:
            return
        u, r2 = u[inside], r2[inside]
        blk = block_of(inside)
        grad, lap = _basis_derivatives(u, E)
        one = 1.0 - r2
        if q == 0:
            g, gradg = np.ones_like(one), np.zeros_like(u)
        else:
            g = one ** q
            gradg = (-2.0 * q * one ** (q - 1))[:, None] * u  # ∇_u g
        for b in np.unique(blk):  # blocks are contiguous: one or two per chunk
            sel = blk == b
            gs = g[sel]
            Gr = (grad[sel] * np.sqrt(gs)[:, None, None]).reshape(-1, K)  # rows (point, axis)
            G[b] += Gr.T @ Gr
            c[b] += lap[sel].T @ gs + grad[sel].reshape(-1, K).T @ gradg[sel].reshape(-1)
            cnt[b] += int(sel.sum())

    def _stream_sums(self, X, P, radius, E, n_blocks, chunk_rows, bar):
        """Per-block sums of every ball from a streamed X in one pass → G (B, M, K, K),
        c (B, M, K), cnt (B, M), N."""
        M = P.shape[0]
        K = E.shape[0]
        source, close = _open_stream(X, P)
        try:
            blocks = _StreamBlocks(source.n_rows, n_blocks)
            B = blocks.slots
            G = np.zeros((B, M, K, K))
            c = np.zeros((B, M, K))
            cnt = np.zeros((B, M), dtype=np.int64)
            blocks.register(G, c, cnt)

            def add(part, starts, ks):
                # windows of STREAM_BALL_ROWS rows bound the basis arrays (n·d·K) of one probe
                for lo in range(0, part.shape[0], STREAM_BALL_ROWS):
                    window = part[lo:lo + STREAM_BALL_ROWS]

                    def block_of(inside, lo=lo):
                        return ks[np.searchsorted(starts, lo + inside, side="right") - 1]

                    for m in range(M):
                        self._chunk_sums(window, P[m], float(radius[m]), E, block_of, G[:, m], c[:, m],
                                         cnt[:, m])

            (G, c, cnt), _, total = blocks.run(source, add, chunk_rows, bar)
        finally:
            if close:
                source.close()
        return G, c, cnt, total

    @staticmethod
    def _solve(G, c):
        try:
            return -np.linalg.solve(G, c[..., None])[..., 0]
        except np.linalg.LinAlgError:
            return np.full(c.shape, np.nan)

    def estimate(self, X, probes, n_blocks=0, *, chunk_rows=None, bar=None) -> ScoreEstimate:
        """Scores at ``probes`` from X in memory, or streamed in one pass (``is_streamed(X)``:
        per-block sums of every ball, memory O(B·M·K²))."""
        streamed = is_streamed(X)
        if streamed:
            P = _as_probes(probes)
        else:
            X, P = _as_xp(X, probes)
        M, d = P.shape
        radius = np.broadcast_to(self.radius, (M,)) if self.radius.ndim == 0 else self.radius
        if radius.shape != (M,):
            raise DataError(f"score matching: {radius.shape[0]} radii for {M} probes")
        E = monomial_exponents(d, self.degree)
        K = E.shape[0]
        need = int(self.min_points) if self.min_points is not None else 2 * K
        total = None
        if streamed:
            Gs, cs, cnts, total = self._stream_sums(X, P, radius, E, n_blocks, chunk_rows, bar)
            B = Gs.shape[0]
        else:
            edges = _block_edges(X.shape[0], n_blocks)
            B = edges.shape[0] - 1
        lin = [int(np.flatnonzero(E[a])[0]) for a in range(d)]  # rows 0..d-1 are linear
        quad = {}
        for k in range(K):
            if E[k].sum() == 2:
                nz = np.flatnonzero(E[k])
                a, b = (nz[0], nz[0]) if nz.size == 1 else (nz[0], nz[1])
                quad[k] = (int(a), int(b), 2.0 if a == b else 1.0)

        def score_jac(alpha, r):
            s = alpha[..., lin] / r
            J = np.zeros(alpha.shape[:-1] + (d, d))
            for k, (a, b, f) in quad.items():
                J[..., a, b] = f * alpha[..., k] / (r * r)
                J[..., b, a] = J[..., a, b]
            return s, J

        S = np.empty((M, d))
        J = np.empty((M, d, d))
        counts = np.empty(M)
        Sb = np.empty((B, M, d)) if B >= 2 else None
        Jb = np.empty((B, M, d, d)) if B >= 2 else None
        for m in range(M):
            r = float(radius[m])
            if streamed:
                G, c, cnt = Gs[:, m], cs[:, m], cnts[:, m]
            else:
                G, c, cnt = self._sums(X, P[m], r, E, edges)
            n_in = int(cnt.sum())
            counts[m] = n_in
            if n_in < need:
                raise DataError(f"score matching: the ball of radius {r:g} around probe {m} "
                                f"(x = {np.array2string(P[m], precision=4)}) holds {n_in} data point(s); "
                                f"the degree-{self.degree} basis ({K} terms) needs at least {need}")
            Gt, ct = G.sum(0), c.sum(0)
            if np.linalg.cond(Gt) > 1e12:
                raise DataError(f"score matching: the data in the ball around probe {m} do not determine "
                                f"the degree-{self.degree} local log-density (singular system); use a "
                                "larger radius, more data or a lower degree")
            S[m], J[m] = score_jac(self._solve(Gt, ct), r)
            if B >= 2:
                Sb[:, m], Jb[:, m] = score_jac(self._solve(Gt[None] - G, ct[None] - c), r)
        return ScoreEstimate(S, J, counts, Sb, Jb, self.method, total)


def score_matching(X, probes, radius, degree=2, weight_power=2.0):
    """Local score-matching scores (M, d) and Jacobians (M, d, d) (see :class:`ScoreMatching`)."""
    return ScoreMatching(radius, degree, weight_power)(X, probes)


# ----------------------------------------------------------------------------------------------
# user-supplied estimators
# ----------------------------------------------------------------------------------------------

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
            raise DataError("score: the callable must return a pair (S (M, d), J (M, d, d))") from None
        return check_scores(S, J, P.shape[0], P.shape[1], "score callable")

    def estimate(self, X, probes, n_blocks=0, **_) -> ScoreEstimate:
        if is_streamed(X):
            raise DataError("score: a callable estimator needs X in memory (an array or DataFrame); "
                            "for a file or a stream of chunks use score='kernel', 'local_gaussian' or "
                            "'score_matching', which read it in one pass")
        X, P = _as_xp(X, probes)
        S, J = self._call(X, P)
        edges = _block_edges(X.shape[0], n_blocks)
        B = edges.shape[0] - 1
        if B < 2:
            return ScoreEstimate(S, J, None, None, None, self.method)
        Sb = np.empty((B,) + S.shape)
        Jb = np.empty((B,) + J.shape)
        for b in range(B):
            keep = np.concatenate([X[: edges[b]], X[edges[b + 1]:]])
            Sb[b], Jb[b] = self._call(keep, P)
        return ScoreEstimate(S, J, None, Sb, Jb, self.method)


def make_estimator(score="kernel", temperature=49.0, radius=None, degree=2) -> ScoreEstimator:
    """The estimator named by ``score``: "kernel", "local_gaussian", "score_matching", an
    estimator or a callable."""
    if isinstance(score, ScoreEstimator):
        return score
    if isinstance(score, str):
        if score == "kernel":
            return KernelScore(temperature)
        if score == "local_gaussian":
            return KernelScore(temperature, deconvolve=True)
        if score == "score_matching":
            if radius is None:
                raise DataError("score='score_matching' needs radius= (or probes given as Balls, "
                                "whose radius is used)")
            return ScoreMatching(radius, degree)
        raise DataError(f"score must be 'kernel', 'local_gaussian', 'score_matching', (S, J) arrays "
                        f"or a callable, got {score!r}")
    if callable(score):
        return CallableScore(score)
    raise DataError(f"score must be 'kernel', 'local_gaussian', 'score_matching', (S, J) arrays or a "
                    f"callable, got {score!r}")


def estimate_scores(X, probes, score="kernel", *, temperature=49.0, radius=None, degree=2,
                    n_blocks=0) -> ScoreEstimate:
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
