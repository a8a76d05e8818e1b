"""Probe points and regions for the local route.

The local route evaluates the Fokker–Planck residual at probe points where the data are dense.
This module chooses probes and restricts data to balls around centres, so that region-restricted
sampling (data only where an experiment can reach) can be mimicked and studied:

* :func:`choose_probes` — ``"kmeans"`` (k-means++ then Lloyd iterations: centres of mass of the
  data), ``"dense"`` (greedy densest points, separated by at least ``2·radius`` so balls do not
  overlap) or ``"random"`` (data points drawn at random, optionally separated);
* :class:`Balls` — centres (k, d) and a radius (scalar or per ball); ``balls.restrict(X)`` keeps the
  rows inside any ball, ``balls.counts(X)`` counts them.  Passed as ``probes=`` to
  :func:`dynosed_sym.fit_local`, the centres are the probes and the radius is the default radius
  of local score matching;
* :func:`restrict_to_balls` — the same as a function, with ``max_per_ball`` to subsample each
  ball (sparse balls).

Memory is O(N) per centre (distances are computed centre by centre, in chunks of rows).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from .. import arguments
from ..data.arrays import is_frame, missing_column, refuse_ragged_rows
from ..errors import ConvergenceWarning, DataError
from ..kernels.balls import ball_labels
from ..options import CHUNK_ROWS

__all__ = [
    "refuse_far_probes",
    "FAR_SPREADS",
    "Balls",
    "choose_probes",
    "kmeans_centres",
    "dense_centres",
    "random_centres",
    "restrict_to_balls",
    "as_probes",
    "KMEANS_ITERATIONS",
]

#: Most Lloyd iterations of :func:`kmeans_centres`.
KMEANS_ITERATIONS = 300


def _zero(value):
    """Whether an optional number is left at 0 (a non-number is not: the method checks it)."""
    try:
        return float(value) == 0.0
    except (TypeError, ValueError):
        return False


def _column_order(labels, wanted, name):
    """Positions of the names ``wanted`` among the column ``labels`` (compared as text), or a
    DataError naming the first one absent (:func:`missing_column`) or repeated."""
    cols = [str(c) for c in labels]
    missing = [c for c in wanted if c not in cols]
    if missing:
        raise missing_column(name, missing[0], cols, states=list(wanted))
    repeated = [c for c in wanted if cols.count(c) > 1]
    if repeated:
        raise DataError(
            f"{name}: has {cols.count(repeated[0])} columns named {repeated[0]!r}; keep the one "
            f"that holds state variable {repeated[0]!r}"
        )
    return [cols.index(c) for c in wanted]


def _as_data(X, name="X"):
    X = arguments.float_array(X, name)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise DataError(f"{name}: expected a 2-D array (N, d), got {X.ndim} dimensions")
    if not np.isfinite(X).all():
        raise DataError(f"{name}: contains NaN or inf")
    return np.ascontiguousarray(X)


def _check_k(k, N):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise DataError(f"the number of probes must be a positive integer, got {k!r}")
    if k > N:
        raise DataError(f"cannot choose {k} probes from {N} data point(s)")
    return int(k)


def _sq_dist_to(X, c):
    diff = X - c
    return np.einsum("ij,ij->i", diff, diff)


#: A probe is outside the data when its nearest data point is farther than this many times √d
#: standard deviations (each column in its own, d the columns with spread).  Two independent
#: points of a law lie √(2d) standard deviations apart on average (the squared distance sums d
#: columns of variance 2 each), and a probe inside the data has data nearer than that; so a probe
#: beyond 3√d — over twice the typical distance between two data points, 3 standard deviations
#: in one dimension — extrapolates the data.  A fixed 3, not growing with d, refused probes
#: drawn from the data's own law at d ≥ 15 (nearest-neighbour distances grow like √d).
FAR_SPREADS = 3.0


def _column_spread(X, unit):
    """(mean, sd) of the columns of X / unit, two passes over row chunks (no copy of X)."""
    N = X.shape[0]
    total = np.zeros(X.shape[1])
    for lo in range(0, N, CHUNK_ROWS):
        total += (X[lo : lo + CHUNK_ROWS] / unit).sum(axis=0)
    mean = total / N
    ss = np.zeros(X.shape[1])
    for lo in range(0, N, CHUNK_ROWS):
        ss += ((X[lo : lo + CHUNK_ROWS] / unit - mean) ** 2).sum(axis=0)
    return mean, np.sqrt(ss / N)


def _nearest_standardised(X, P, unit, mean, sd, cols):
    """(M,) distance from each probe to its nearest row of X in units of the columns' standard
    deviations (columns ``cols``), over row chunks of a few MB."""
    Q = (np.asarray(P, dtype=float)[:, cols] / unit - mean[cols]) / sd[cols]
    qq = np.einsum("ij,ij->i", Q, Q)
    best = np.full(Q.shape[0], np.inf)
    step = max(1, min(CHUNK_ROWS, 2**20 // max(1, Q.shape[0])))
    for lo in range(0, X.shape[0], step):
        Z = (X[lo : lo + step][:, cols] / unit - mean[cols]) / sd[cols]
        d2 = np.einsum("ij,ij->i", Z, Z)[:, None] + qq[None, :] - 2.0 * (Z @ Q.T)
        best = np.minimum(best, d2.min(axis=0))
    return np.sqrt(np.maximum(best, 0.0))


def refuse_far_probes(X, P, names, method, auto=True):
    """DataError naming the probes (M, d) farther than ``FAR_SPREADS·√d`` standard deviations
    (:data:`FAR_SPREADS`) from every row of X (N, d), and how far (columns without spread are
    left out; computed on data scaled by a power of two, so any scale gives the same distances,
    and over row chunks, without a copy of X).  ``auto``: the temperature is "auto" (the message
    says it would widen every kernel)."""
    if X.shape[0] < 2 or not X.size:
        return
    top = max(float(np.max(X)), -float(np.min(X)))
    if not np.isfinite(top) or top == 0.0:
        return
    unit = 2.0 ** np.round(np.log2(top))
    mean, sd = _column_spread(X, unit)
    cols = np.isfinite(sd) & (sd > 0)
    if not cols.any():
        return
    limit = FAR_SPREADS * np.sqrt(np.count_nonzero(cols))
    with np.errstate(over="ignore", invalid="ignore"):
        far = _nearest_standardised(X, P, unit, mean, sd, cols)
    bad = np.flatnonzero(~(far <= limit))
    if not bad.size:
        return
    where = np.asarray(P, float)
    shown = [
        f"probe {i}"
        + (f" (x = {np.array2string(where[i], precision=4)})" if X.shape[1] <= 6 else "")
        for i in bad
    ]
    shown = f"{shown[0]} is {far[bad[0]]:.3g}" + "".join(
        f", {text} {far[i]:.3g}" for text, i in zip(shown[1:5], bad[1:5])
    )
    more = f" and {bad.size - 5} more" if bad.size > 5 else ""
    spreads = ", ".join(f"{n} {v * unit:.3g}" for n, v, c in zip(names, sd, cols) if c)
    widen = (
        ", and temperature='auto' would widen every probe's kernel to reach them" if auto else ""
    )
    raise DataError(
        f"{method} score: {bad.size} of {len(P)} probe(s) lie outside the data: {shown}{more} "
        f"standard deviations from the nearest data point (more than {FAR_SPREADS:g}·√"
        f"{np.count_nonzero(cols)} = {limit:.3g}; each column in its own standard deviation: "
        f"{spreads}); the score there would extrapolate the nearest data{widen}: move or drop "
        "those probes (choose_probes places probes in the data)"
    )


def _nearest(X, C):
    """Index (N,) of the nearest centre and squared distance (N,), chunked over rows."""
    N = X.shape[0]
    idx = np.empty(N, dtype=np.int64)
    dist = np.empty(N)
    cc = np.einsum("ij,ij->i", C, C)
    for lo in range(0, N, CHUNK_ROWS):
        Xc = X[lo : lo + CHUNK_ROWS]
        d2 = np.einsum("ij,ij->i", Xc, Xc)[:, None] - 2.0 * Xc @ C.T + cc[None, :]
        idx[lo : lo + CHUNK_ROWS] = np.argmin(d2, axis=1)
        dist[lo : lo + CHUNK_ROWS] = np.maximum(
            d2[np.arange(Xc.shape[0]), idx[lo : lo + CHUNK_ROWS]], 0.0
        )
    return idx, dist


def kmeans_centres(X, k, seed=0, n_iter=None, tol=1e-10, return_info=False):
    """k-means centres (k, d): k-means++ seeding from ``seed`` then Lloyd iterations.

    Parameters
    ----------
    X : (N, d) array
    k : int
    seed : int
    n_iter : int, optional
        Most Lloyd iterations (default ``KMEANS_ITERATIONS``, 300).
    tol : float
        Converged when no centre moves by more than ``tol · max(1, max|C|)``.
    return_info : bool
        Also return ``{"converged": bool, "iterations": int}``.

    Returns
    -------
    C : (k, d) array
    info : dict, when ``return_info``

    Stopping after ``n_iter`` iterations without meeting ``tol`` issues a
    :class:`~dynosed_sym.errors.ConvergenceWarning` (the centres are then valid probes, but not a
    fixed point of Lloyd's iteration).
    """
    n_iter = KMEANS_ITERATIONS if n_iter is None else arguments.integer(n_iter, "n_iter", 1)
    X = _as_data(X)
    N = X.shape[0]
    k = _check_k(k, N)
    rng = np.random.default_rng(arguments.seed(seed))
    # work with the data scaled by a power of two to a largest |entry| in [½, 1): exact, and
    # squared distances neither overflow (data ×1e300 gave NaN probabilities) nor underflow;
    # the stopping rule keeps its meaning in the data's units (``unit``: 1 there)
    e = int(np.frexp(np.abs(X).max(initial=0.0))[1])
    X = np.ldexp(X, -e)
    with np.errstate(over="ignore"):
        unit = float(np.ldexp(1.0, -e))
    C = np.empty((k, X.shape[1]))
    C[0] = X[rng.integers(N)]
    d2 = _sq_dist_to(X, C[0])
    for i in range(1, k):
        tot = d2.sum()
        if not tot > 0:  # every row is one of the centres so far: a k-th would repeat one
            raise DataError(
                f"k-means: X has only {i} distinct point(s), fewer than the k = {k} probes "
                f"asked for (a repeated probe would count its data twice): ask for at most {i}"
            )
        C[i] = X[rng.choice(N, p=d2 / tot)]
        d2 = np.minimum(d2, _sq_dist_to(X, C[i]))
    converged, it = False, 0
    while it < n_iter:
        idx, _ = _nearest(X, C)
        newC = C.copy()
        for i in range(k):
            sel = idx == i
            if sel.any():
                newC[i] = X[sel].mean(axis=0)
        shift = np.abs(newC - C).max()
        C = newC
        it += 1
        if shift <= tol * max(unit, np.abs(C).max()):
            converged = True
            break
    C = np.ldexp(C, e)
    shift = float(np.ldexp(shift, e))
    if not converged:
        warnings.warn(
            f"k-means stopped after {it} Lloyd iterations without converging (last centre "
            f"shift {shift:.3g}): the centres are valid probes but not k-means centres",
            ConvergenceWarning,
            stacklevel=2,
        )
    return (C, {"converged": converged, "iterations": it}) if return_info else C


def random_centres(X, k, seed=0, min_separation=0.0, max_tries=100_000):
    """k data points (k, d) drawn at random, pairwise at least ``min_separation`` apart."""
    X = _as_data(X)
    N = X.shape[0]
    k = _check_k(k, N)
    rng = np.random.default_rng(arguments.seed(seed))
    min_separation = arguments.number(min_separation, "min_separation", nonnegative=True)
    if min_separation <= 0:
        P = X[np.sort(rng.choice(N, k, replace=False))].copy()
        if len(np.unique(P, axis=0)) == k:
            return P
        # rows repeated in X drew one point twice (it would count its data twice): draw among
        # the distinct rows (data without repeats keep the draw above)
        distinct = np.unique(X, axis=0)
        if len(distinct) < k:
            raise DataError(
                f"random probes: X has only {len(distinct)} distinct point(s), fewer than the "
                f"k = {k} probes asked for (a repeated probe would count its data twice): ask "
                f"for at most {len(distinct)}"
            )
        return distinct[np.sort(rng.choice(len(distinct), k, replace=False))].copy()
    chosen = []
    for _ in range(int(max_tries)):
        x = X[rng.integers(N)]
        if all(np.sum((x - c) ** 2) >= min_separation**2 for c in chosen):
            chosen.append(x.copy())
            if len(chosen) == k:
                return np.array(chosen)
    raise DataError(
        f"could not place {k} probes at least {min_separation:g} apart "
        f"(placed {len(chosen)}); lower min_separation or k"
    )


def dense_centres(X, k, radius, seed=0, max_points=20_000):
    """Greedy densest data points (k, d): most neighbours within ``radius``, ≥ 2·radius apart.

    Neighbour counts are taken on a seeded subsample of at most ``max_points`` rows.
    """
    from scipy.spatial import cKDTree

    X = _as_data(X)
    N = X.shape[0]
    k = _check_k(k, N)
    radius = arguments.number(radius, "radius", positive=True)
    rng = np.random.default_rng(arguments.seed(seed))
    sub = X if N <= max_points else X[np.sort(rng.choice(N, max_points, replace=False))]
    tree = cKDTree(sub)
    counts = tree.query_ball_point(sub, radius, return_length=True).astype(float)
    order = np.argsort(-counts, kind="stable")
    chosen = []
    for i in order:
        x = sub[i]
        if all(np.sum((x - c) ** 2) >= (2 * radius) ** 2 for c in chosen):
            chosen.append(x.copy())
            if len(chosen) == k:
                return np.array(chosen)
    raise DataError(
        f"found only {len(chosen)} separated dense regions of radius {radius:g}; "
        "lower k or the radius"
    )


def choose_probes(X, k, method="kmeans", *, radius=None, seed=0, min_separation=0.0):
    """Probe points (k, d) in the data ``X`` (N, d).

    Parameters
    ----------
    method : {"kmeans", "dense", "random"}
        ``"kmeans"``: k-means centres; ``"dense"``: greedy densest points within ``radius``
        (needs ``radius``); ``"random"``: random data points at least ``min_separation`` apart.

    Returns
    -------
    (k, d) array, or a DataFrame with X's column labels when X is one: :func:`fit_local` then
    reads the probes by those labels, as it reads X (an array of them would be read in the
    model's state order, whatever the order of X's columns).
    """
    unused = [
        f"{arg}= is only used by method={used!r}"
        for arg, given, used in (
            ("radius", radius is not None, "dense"),
            ("min_separation", not _zero(min_separation), "random"),
        )
        if given and method != used and method in ("kmeans", "dense", "random")
    ]
    if unused:  # an argument the chosen method ignores would be ignored without a word
        raise DataError(f"choose_probes(method={method!r}): {'; '.join(unused)}")
    if method == "kmeans":
        P = kmeans_centres(X, k, seed=seed)
    elif method == "dense":
        if radius is None:
            raise DataError("method='dense' needs radius=")
        P = dense_centres(X, k, radius, seed=seed)
    elif method == "random":
        P = random_centres(X, k, seed=seed, min_separation=min_separation)
    else:
        raise DataError(f"method must be 'kmeans', 'dense' or 'random', got {method!r}")
    if is_frame(X):  # labelled data: labelled probes
        import pandas as pd

        return pd.DataFrame(P, columns=X.columns)
    return P


@dataclass(frozen=True)
class Balls:
    """Balls with centres (k, d) and a radius (scalar or (k,)): regions of dense sampling.

    Give the centres as (k, d), one row per centre.  A flat array of k numbers is k centres in
    one dimension (a 1-state model's): a Balls does not know the model's dimension when it is
    built, and its ``k`` and ``centres`` must not change meaning later.  Used with a model (or
    data X) of d ≥ 2, such centres are a DataError asking for shape (k, d) — never read as one
    centre of d coordinates (as a flat ``probes=`` array of length d is by :func:`as_probes`,
    which knows d), nor as d centres: ``Balls(np.zeros(2), 1.0)`` meant for a 2-D model is
    ``Balls([[0.0, 0.0]], 1.0)`` (``np.atleast_2d``).

    Attributes
    ----------
    centres : (k, d) array
    radius : float or (k,) array
    columns : tuple of str or None
        The labels of the centres' columns when they were given as a DataFrame (e.g. from
        :func:`choose_probes` on a DataFrame): labelled data X is then read by these labels, and
        :func:`fit_local` reads the centres by the model's state names.
    """

    centres: np.ndarray
    radius: object
    columns: tuple | None = None

    def __post_init__(self):
        if is_frame(self.centres):
            object.__setattr__(self, "columns", tuple(str(c) for c in self.centres.columns))
        # (k 1-D centres: refused where the dimension shows itself d ≥ 2, :meth:`flat_error`)
        object.__setattr__(self, "_flat", not is_frame(self.centres) and np.ndim(self.centres) == 1)
        C = _as_data(self.centres, "centres")
        r = arguments.float_array(self.radius, "Balls: radius")
        if r.ndim > 1 or (r.ndim == 1 and r.shape[0] != C.shape[0]):
            raise DataError(
                f"Balls: radius must be a number or one per centre ({C.shape[0]}), "
                f"got shape {r.shape}"
            )
        if not (np.all(np.isfinite(r)) and np.all(r > 0)):
            raise DataError(f"Balls: radius must be positive, got {self.radius!r}")
        object.__setattr__(self, "centres", C)
        object.__setattr__(self, "radius", float(r) if r.ndim == 0 else r)

    def aligned(self, X):
        """X with its columns in the centres' order: a DataFrame reordered by the centres' labels
        (a DataError naming a missing one); anything else as it is."""
        if self.columns is None or not is_frame(X):
            return X
        return X.iloc[:, _column_order(X.columns, self.columns, "X")]

    @property
    def k(self) -> int:
        return int(self.centres.shape[0])

    @property
    def radii(self) -> np.ndarray:
        return np.broadcast_to(np.asarray(self.radius, dtype=float), (self.k,)).copy()

    def labels(self, X) -> np.ndarray:
        """Index (N,) of the first ball containing each row of X, −1 outside every ball (a
        DataFrame X read by the centres' column labels when they have them)."""
        return self._label_rows(_as_data(self.aligned(X)))

    def flat_error(self, d, what):
        """The DataError of centres given as a flat array (k centres in one dimension) used where
        the dimension is d ≥ 2 (``what``: "model 'ou2d' has d = 2 state variables (x, y)")."""
        c = self.centres[:, 0]
        one = (
            f"Balls({np.array2string(c[None, :], separator=', ')}, r) (np.atleast_2d(c)) for one "
            "centre"
            if c.size == d
            else f"c.reshape(-1, {d}) for centres stored one after the other"
        )
        return DataError(
            f"Balls: the centres were given as a flat array of {c.size} number(s) "
            f"({np.array2string(c, precision=4)}), which is {c.size} centre(s) in 1 dimension, "
            f"but {what}: pass the centres with shape (k, {d}), one row per centre, e.g. {one}"
        )

    def _check_columns(self, X):
        """DataError unless X (checked by ``_as_data``) has a column per dimension of the balls."""
        if X.shape[1] != self.centres.shape[1] and getattr(self, "_flat", False):
            raise self.flat_error(X.shape[1], f"X has {X.shape[1]} columns")
        if X.shape[1] != self.centres.shape[1]:
            raise DataError(
                f"X has {X.shape[1]} columns, the balls live in {self.centres.shape[1]} dimensions"
            )

    def _label_rows(self, X):
        """:meth:`labels` of rows already checked by ``_as_data`` and aligned."""
        self._check_columns(X)
        lab = np.empty(X.shape[0], dtype=np.int64)
        ball_labels(X, self.centres, self.radii**2, lab)
        return lab

    def counts(self, X) -> np.ndarray:
        """Rows of X inside each ball (k,); a row inside several (overlapping) balls is counted
        in each of them."""
        X = _as_data(self.aligned(X))
        self._check_columns(X)
        return np.array([np.count_nonzero(self._members(X, i)) for i in range(self.k)])

    def _members(self, X, i):
        """(N,) bool: the rows of checked, aligned X inside ball i, by the arithmetic of
        :meth:`labels` (a row on the edge is in or out of both alike)."""
        out = np.empty(X.shape[0], dtype=np.int64)
        ball_labels(X, self.centres[i : i + 1], self.radii[i : i + 1] ** 2, out)
        return out == 0

    def restrict(self, X, max_per_ball=None, seed=0, return_labels=False, allow_empty=False):
        """Rows of X inside the balls, in their original order (see :func:`restrict_to_balls`)."""
        return restrict_to_balls(
            X,
            self,
            max_per_ball=max_per_ball,
            seed=seed,
            return_labels=return_labels,
            allow_empty=allow_empty,
        )


def restrict_to_balls(
    X, balls, radius=None, *, max_per_ball=None, seed=0, return_labels=False, allow_empty=False
):
    """Keep the rows of X that fall inside balls (region-restricted sampling).

    Parameters
    ----------
    X : (N, d) array
    balls : Balls, or centres (k, d) with ``radius``
    max_per_ball : int, optional
        Draw at most this many rows of each ball at random with ``seed`` (sparse balls) and keep
        the union of the draws: each ball keeps min(its rows, max_per_ball) rows of its own
        draw, and overlapping balls also hold the rows drawn for their neighbours.
    return_labels : bool
        Also return the ball index (n,) of every kept row (the first ball containing it).
    allow_empty : bool
        Without it, a ball without any row of X inside it raises a DataError naming the ball
        (a row inside overlapping balls is inside each of them).

    Returns
    -------
    X_in : (n, d) array
        The kept rows, in their original order (contiguous blocks of rows stay contiguous).
    labels : (n,) int array, when ``return_labels``
    """
    if not isinstance(balls, Balls):
        if radius is None:
            raise DataError("restrict_to_balls: pass Balls, or centres together with radius=")
        balls = Balls(balls, radius)
    frame = X if is_frame(X) else None  # labelled rows are returned labelled
    X = _as_data(balls.aligned(X))
    lab = balls._label_rows(X)  # (X checked once)
    if max_per_ball is not None and (
        isinstance(max_per_ball, bool)
        or not isinstance(max_per_ball, (int, np.integer))
        or max_per_ball < 1
    ):
        raise DataError(f"max_per_ball must be a positive integer, got {max_per_ball!r}")
    # membership, not the first ball: a row inside overlapping balls is in each of them (by the
    # first ball alone, a ball covered by earlier ones was "empty" and drew no rows)
    members = [balls._members(X, i) for i in range(balls.k)]
    empty = [i for i, m in enumerate(members) if not m.any()]
    if empty and not allow_empty:
        i = empty[0]
        raise DataError(
            f"ball {i} (centre {np.array2string(balls.centres[i], precision=4)}, radius "
            f"{balls.radii[i]:g}) contains no data"
        )
    keep = lab >= 0
    if max_per_ball is not None:
        rng = np.random.default_rng(arguments.seed(seed))
        keep = np.zeros(X.shape[0], dtype=bool)
        for i in range(balls.k):  # draws per ball among its rows; the union is kept
            rows = np.flatnonzero(members[i])
            if rows.size > max_per_ball:
                rows = rng.choice(rows, int(max_per_ball), replace=False)
            keep[rows] = True
    idx = np.flatnonzero(keep)
    rows = X[idx] if frame is None else frame.iloc[idx]
    return (rows, lab[idx]) if return_labels else rows


def as_probes(probes, model=None, X=None, seed=0, info=None, distinct=False):
    """Normalise ``probes`` → (P (M, d), radius or None).

    Accepts an (M, d) array, a DataFrame with the state names as columns, a :class:`Balls`
    (centres and radius) or an int k (k-means centres of X; their ``converged`` and
    ``iterations`` are written into the dict ``info`` when given).  ``distinct``: refuse a point
    given twice (where the scores are estimated from data, which it would count twice).
    """
    radius = None
    if isinstance(probes, np.ndarray) and probes.ndim == 0:  # a 0-d array: its number
        probes = probes.item()
    if isinstance(probes, Balls):
        P, radius = probes.centres, probes.radius
        if model is not None and model.d != 1 and getattr(probes, "_flat", False):
            raise probes.flat_error(
                model.d,
                f"model {model.name!r} has d = {model.d} state variables "
                f"({', '.join(model.state_names)})",
            )
        if probes.columns is not None and model is not None:  # labelled centres: by name
            P = P[:, _column_order(probes.columns, model.state_names, "probes")]
    elif isinstance(probes, (int, np.integer)) and not isinstance(probes, bool):
        if X is None:
            raise DataError("probes given as a number need data X to choose them from")
        P, kinfo = kmeans_centres(X, int(probes), seed=seed, return_info=True)
        if info is not None:
            info.update(kinfo)
    elif isinstance(probes, numbers.Real) and not isinstance(probes, (bool, np.bool_)):
        raise DataError(
            f"probes={float(probes):g} is one number: a count of probes is an integer "
            f"(probes={int(probes) if float(probes).is_integer() else 'k'}), probe points an "
            "(M, d) array (one row per point)"
            + (
                f": one probe at {float(probes)!r} is probes=[[{float(probes)!r}]]"
                if model is not None and model.d == 1 and math.isfinite(float(probes))
                else ""
            )
        )
    elif is_frame(probes) and model is not None:
        order = _column_order(probes.columns, model.state_names, "probes")
        P = arguments.float_array(
            probes.iloc[:, order].to_numpy(), "probes", columns=model.state_names
        )
    else:
        names = None if model is None else model.state_names
        if model is not None:
            refuse_ragged_rows(probes, model, "probes")
        P = arguments.float_array(probes, "probes", columns=names)
    d = model.d if model is not None else (P.shape[1] if P.ndim == 2 else 1)
    if P.ndim == 1 and d == 1:
        P = P[:, None]
    if P.ndim == 1 and P.shape[0] == d:
        P = P[None, :]
    if P.ndim != 2 or P.shape[1] != d:
        state = (
            f", one column per state variable ({', '.join(model.state_names)}) of model "
            f"{model.name!r}"
            if model is not None
            else ""
        )
        raise DataError(f"probes: expected an array of shape (M, {d}){state}, got shape {P.shape}")
    if P.shape[0] == 0:
        raise DataError("probes: no probe points")
    if not np.isfinite(P).all():
        raise DataError("probes: contain NaN or inf")
    if distinct:
        _refuse_repeated(P)
    return np.ascontiguousarray(P), radius


def _refuse_repeated(P):
    """DataError naming the first two probes at one point: a repeated probe counts the data
    around it twice (k-means refuses repeats for that reason; given ones were fitted so)."""
    _, inverse, counts = np.unique(P, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if counts.max() < 2:
        return
    i, j = np.flatnonzero(inverse == inverse[np.flatnonzero(counts[inverse] > 1)[0]])[:2]
    raise DataError(
        f"probes: rows {i} and {j} are the same point (x = {P[i]}), {int((counts - 1).sum())} "
        "repeat(s) in all: a repeated probe counts the data around it twice; drop the repeats "
        "(e.g. np.unique(probes, axis=0))"
    )
