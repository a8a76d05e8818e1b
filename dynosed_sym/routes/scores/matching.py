"""Local Hyvärinen score matching in balls around the probes (``score="score_matching"``)."""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import DataError
from ...options import CHUNK_ROWS
from .base import (
    ScoreEstimate,
    ScoreEstimator,
    block_edges_or_one,
    data_and_probes,
    streamed_blocks,
)

__all__ = ["ScoreMatching", "score_matching", "monomial_exponents"]


STREAM_BALL_ROWS = 16384  # rows per window of streamed score matching (bounds its work arrays)


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
            raise DataError(
                f"score matching: radius must be a positive number or one per probe, got {radius!r}"
            )
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
            self._chunk_sums(
                X[lo : lo + CHUNK_ROWS],
                p,
                r,
                E,
                lambda inside, lo=lo: np.searchsorted(edges, lo + inside, side="right") - 1,
                G,
                c,
                cnt,
            )
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
            g = one**q
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
        with streamed_blocks(X, P, n_blocks) as (source, blocks):
            B = blocks.slots
            G = np.zeros((B, M, K, K))
            c = np.zeros((B, M, K))
            cnt = np.zeros((B, M), dtype=np.int64)
            blocks.register(G, c, cnt)

            def add(part, starts, ks):
                # windows of STREAM_BALL_ROWS rows bound the basis arrays (n·d·K) of one probe
                for lo in range(0, part.shape[0], STREAM_BALL_ROWS):
                    window = part[lo : lo + STREAM_BALL_ROWS]

                    def block_of(inside, lo=lo):
                        return ks[np.searchsorted(starts, lo + inside, side="right") - 1]

                    for m in range(M):
                        self._chunk_sums(
                            window, P[m], float(radius[m]), E, block_of, G[:, m], c[:, m], cnt[:, m]
                        )

            (G, c, cnt), _, total = blocks.run(source, add, chunk_rows, bar)
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
        X, P, streamed = data_and_probes(X, probes)
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
            edges = block_edges_or_one(X.shape[0], n_blocks)
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
                raise DataError(
                    f"score matching: the ball of radius {r:g} around probe {m} "
                    f"(x = {np.array2string(P[m], precision=4)}) holds {n_in} data point(s); "
                    f"the degree-{self.degree} basis ({K} terms) needs at least {need}"
                )
            Gt, ct = G.sum(0), c.sum(0)
            if np.linalg.cond(Gt) > 1e12:
                hint = None if streamed else _too_wide(X, P[m], r)
                raise DataError(
                    f"score matching: the data in the ball around probe {m} do not determine "
                    f"the degree-{self.degree} local log-density (singular system); "
                    + (hint or "use a larger radius, more data or a lower degree")
                )
            S[m], J[m] = score_jac(self._solve(Gt, ct), r)
            if B >= 2:
                Sb[:, m], Jb[:, m] = score_jac(self._solve(Gt[None] - G, ct[None] - c), r)
        return ScoreEstimate(S, J, counts, Sb, Jb, self.method, total)


def _too_wide(X, centre, r):
    """The hint for a singular ball far wider than the data in it: the basis, in units of the
    radius, hardly varies over them (radius 1e8 for data of unit spread said "use a larger
    radius").  None when the radius is of the data's scale."""
    dist = np.sqrt(((X - centre) ** 2).sum(axis=1))
    inside = dist[dist <= r]
    reach = float(inside.max()) if inside.size else 0.0
    if not 0.0 < reach < 0.01 * r:
        return None
    return (
        f"its radius {r:g} is {r / reach:.3g} times the distance of the farthest data point in "
        f"it ({reach:.3g}): in units of the radius the data hardly spread; use a radius of the "
        "data's scale around the probe"
    )


def score_matching(X, probes, radius, degree=2, weight_power=2.0):
    """Local score-matching scores (M, d) and Jacobians (M, d, d) (see :class:`ScoreMatching`)."""
    return ScoreMatching(radius, degree, weight_power)(X, probes)
