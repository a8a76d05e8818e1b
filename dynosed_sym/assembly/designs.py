"""Designs as linear maps of per-snapshot systems: environments stacked with shared parameters,
time courses by the finite-time Stein identity, and the grouped noise model (docs/designs.md).

Building block.  Every snapshot g (a stationary environment, or one time of a time course) is
one pass of the fill with the features shared by the whole design.  It gives its system
``(A_g, b_g)`` (docs/method.md §2: ``E_p[𝒜 z_r] = (A θ − b)_r``), for time-course snapshots also
``Z_g[r] = √(2/m) E_N[cos(ω_rᵀx + c_r)] = E_N[z_r]`` (the fill's extra cos factor 1, see
:func:`dynosed_sym.assembly.stein.block_sums`), and per-block means of all three.

Rows.  A design is a list of *row blocks*; each is a linear combination of snapshot systems,
placed in the global parameter columns of its environment:

* stationary environment e:   ``√w_e · A_g P_e θ ≈ √w_e · b_g``;
* interval [t_k, t_{k+1}] of a time course (Δ_k = t_{k+1} − t_k), from
  ``E_{t_{k+1}}[z] − E_{t_k}[z] = ∫ E_t[𝒜 z] dt`` with the interpolatory weights q_kj of a
  Lagrange polynomial through a stencil of snapshot times:

      √w_e (√π_k/Δ_k) Σ_j q_kj A_j P_e θ ≈ √w_e (√π_k/Δ_k) [Σ_j q_kj b_j + Z_{k+1} − Z_k].

``w_e = N_e / N`` (a convex combination of per-environment losses: λ keeps its meaning, and
splitting an environment into two with the same inputs leaves the population loss unchanged);
``π_k ∝ Δ_k² / (1/N_k + 1/N_{k+1})`` (Σπ = 1; the Z difference dominates a row's noise).
``P_e`` places the model's parameters in the global columns: a shared parameter has one
column, a parameter in ``env_params`` one column per environment (``k[A]``, ``k[B]``).

Noise.  Snapshots are independent *groups*.  The stacked system is linear in the groups' block
means, so ``Cov(θ̂) = Σ_g Σ_j w_gj IF_gj IF_gjᵀ / (B_g − 1)``.  :func:`pseudo_blocks` writes it
in the one-sample form the report uses: pseudo-block (g, j) is the stacked system with group g
moved to ``Ȳ_g + κ_g (Y_gj − Ȳ_g)`` (all others at their means), weight ``w_gj / G``, with
``κ_g² = G (B_tot − 1)/(B_g − 1)``; their weighted mean is the stacked system, and
``Σ_p π_p δ_p δ_pᵀ/(B_tot − 1)`` is exactly the grouped sum.  The t and Wishart degrees of
freedom are ``Σ_g (B_g − 1)``; the bootstrap resamples within groups
(:class:`dynosed_sym.solve.uncertainty.Grouping`).

Per-block Gram corrections.  A per-snapshot U-statistic correction (C_g (n×n), c_g (n,), from
the same-sample terms of A_gᵀA_g and A_gᵀb_g, entering ``AᵀA − C`` and ``Aᵀb − c``) is carried
by the same coefficients.  For row block r = Σ_g α_rg A_g P_e the same-sample terms are the
diagonal ones, so ``C = Σ_r Σ_g α_rg² P_eᵀ C_g P_e`` and ``c = Σ_r Σ_g α_rg² P_eᵀ c_g +
α_rg β_rg P_eᵀ c^Z_g`` (c^Z_g: the same-sample term of A_gᵀZ_g, a new per-block vector of time
courses); products of two different groups are products of independent means and need none.
Per block they move with their group in :func:`pseudo_blocks` exactly like (A, b, Z).  The
places are marked "Gram correction" in :meth:`DesignMap.stack`, :func:`pseudo_blocks` and
:func:`dynosed_sym.routes.designs.fit_global_design`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError
from .features import RandomFeatures, median_lengthscale
from .stein import BlockSystem, block_sums, contract_blocks

__all__ = [
    "Snapshot",
    "assemble_snapshot",
    "param_layout",
    "quadrature_weights",
    "interval_weights",
    "RowBlock",
    "DesignMap",
    "design_map",
    "pseudo_blocks",
    "grouped_blocks",
    "pooled_lengthscale",
    "default_order",
]


@dataclass
class Snapshot:
    """One group of a design: a snapshot's system and its per-block means.

    Attributes
    ----------
    system : BlockSystem
        ``A`` (m, n), ``b`` (m,), ``A_blocks`` (B, m, n), ``b_blocks`` (B, m), ``counts`` (B,).
    Z, Z_blocks : (m,), (B, m) or None
        ``E_N[z_r]`` and its per-block means (time-course snapshots only).
    """

    system: BlockSystem
    Z: np.ndarray | None = None
    Z_blocks: np.ndarray | None = None

    @property
    def n_samples(self):
        return int(np.sum(self.system.counts))

    @property
    def n_blocks(self):
        return int(np.asarray(self.system.counts).size)

    def block(self, j):
        """(A, b, Z) of block j."""
        s = self.system
        return s.A_blocks[j], s.b_blocks[j], None if self.Z is None else self.Z_blocks[j]

    def mean(self):
        s = self.system
        return s.A, s.b, self.Z


def assemble_snapshot(cm, X, edges, feats: RandomFeatures) -> Snapshot:
    """System, ``Z = E_N[z]`` and their per-block means of one snapshot X (N, d) in memory.

    One launch of the fill with the extra cos factor 1 (``block_sums(..., dlogp_dt=1)``): the
    sums of that factor give Z; the others are contracted as for a stationary snapshot.
    """
    X = np.ascontiguousarray(X, dtype=float)
    P_s, P_c = block_sums(cm, X, feats, edges, np.ones(X.shape[0]))
    n_cos = P_c.shape[2] - 1
    counts = np.diff(np.asarray(edges, dtype=np.int64))
    system = contract_blocks(
        cm, feats, [(P_s[g], P_c[g][:, :n_cos], counts[g]) for g in range(counts.size)]
    )
    scale = math.sqrt(2.0 / feats.m)
    Z_blocks = np.array(
        [scale / counts[g] * feats.unblock(P_c[g][:, n_cos:])[0] for g in range(counts.size)]
    )
    total = P_c[0][:, n_cos:].copy()
    for g in range(1, counts.size):
        total += P_c[g][:, n_cos:]
    Z = scale / int(counts.sum()) * feats.unblock(total)[0]
    if not (np.isfinite(Z).all() and np.isfinite(Z_blocks).all()):  # pragma: no cover - cos ≤ 1
        raise DataError("a snapshot's feature means are not finite")
    return Snapshot(system, Z, Z_blocks)


def param_layout(param_names, env_params, env_names, single=False):
    """Global parameter names and, per environment, the global column of each model parameter.

    Parameters
    ----------
    param_names : list of str
        The model's parameters.
    env_params : sequence of str
        Parameters with one value per environment.
    env_names : list of str
    single : bool
        One environment: env parameters keep their plain name.

    Returns
    -------
    names : list of str
        Shared parameters in model order; an env parameter ``k`` becomes ``k[A]``, ``k[B]`` …
        at its place.
    columns : dict ``{env: (n,) int array}``
        Global column of model parameter k in environment e.
    """
    env_params = {str(p) for p in env_params}
    names = []
    columns = {e: np.zeros(len(param_names), dtype=np.int64) for e in env_names}
    for k, nm in enumerate(param_names):
        if nm in env_params and not single:
            for e in env_names:
                columns[e][k] = len(names)
                names.append(f"{nm}[{e}]")
        else:
            for e in env_names:
                columns[e][k] = len(names)
            names.append(nm)
    return names, columns


def default_order(n_snapshots):
    """Quadrature order of a time course: 4 with ≥ 4 snapshots, else the highest possible."""
    return int(min(4, n_snapshots))


def quadrature_weights(times, k, order):
    """Weights q with ``∫_{t_k}^{t_{k+1}} g dt ≈ Σ_j q_j g(t_j)`` (interpolatory, Lagrange).

    Order 2: the trapezoid (stencil k, k+1; local error −Δ³g''/12).  Order 3: the quadratic
    through k−1, k, k+1 (k, k+1, k+2 at the start).  Order 4: the cubic through k−1 … k+2,
    shifted inwards at both ends (interior weights (−1, 13, 13, −1)Δ/24 for even spacing; local
    error O(Δ⁵)).  Uneven spacing is fine.  An order above the number of snapshots falls back to
    the highest possible.

    Returns
    -------
    idx : (p,) int array, stencil snapshot indices
    q : (p,) weights
    """
    t = np.asarray(times, dtype=float)
    K = t.size - 1
    p = int(min(max(int(order), 2), K + 1))
    if p == 2:
        idx = np.array([k, k + 1])
    else:
        lo = k - 1
        lo = int(np.clip(lo, 0, K + 1 - p))
        idx = np.arange(lo, lo + p)
    tt = t[idx]
    # the Lagrange basis (degree ≤ 3) integrated exactly by 4-point Gauss–Legendre
    xg, wg = np.polynomial.legendre.leggauss(4)
    a, b = t[k], t[k + 1]
    tq = 0.5 * (b - a) * xg + 0.5 * (a + b)
    wq = 0.5 * (b - a) * wg
    q = np.empty(idx.size)
    for i in range(idx.size):
        basis = np.ones_like(tq)
        for j in range(idx.size):
            if j != i:
                basis *= (tq - tt[j]) / (tt[i] - tt[j])
        q[i] = wq @ basis
    return idx, q


def interval_weights(times, counts):
    """π_k ∝ Δ_k² / (1/N_k + 1/N_{k+1}), normalised to Σ π_k = 1 (K intervals)."""
    t = np.asarray(times, dtype=float)
    N = np.asarray(counts, dtype=float)
    h = np.diff(t) ** 2 / (1.0 / N[:-1] + 1.0 / N[1:])
    return h / h.sum()


@dataclass
class RowBlock:
    """One block of rows: ``Σ_g α_g A_g P_e θ ≈ Σ_g (α_g b_g + β_g Z_g)``.

    Attributes
    ----------
    env : str
    label : str
        ``"A"`` for a stationary environment, ``"A: t 0.2→0.4"`` for an interval.
    terms : list of (g, α, β)
        Snapshot index, coefficient of its (A, b), coefficient of its Z.
    """

    env: str
    label: str
    terms: list


@dataclass
class DesignMap:
    """The linear map from per-snapshot systems to the stacked system A θ ≈ b.

    Attributes
    ----------
    names : list of str
        Global parameter names.
    columns : dict ``{env: (n,) int array}``
        Global column of each model parameter in each environment.
    rows : list of RowBlock
    group_env : list of str
        Environment of each snapshot (group).
    env_rows : dict ``{env: (first row block, end)}``
    weights : dict ``{env: w_e}``
    orders : dict ``{env: quadrature order}`` (time courses)
    """

    names: list
    columns: dict
    rows: list
    group_env: list
    env_rows: dict
    weights: dict
    orders: dict = field(default_factory=dict)

    def stack(self, snaps, only=None):
        """The stacked (A (R, n_glob), b (R,)) from ``snaps[g] = (A_g, b_g, Z_g)``.

        ``only``: a group index — the contribution of that group alone (the others as zeros),
        i.e. the derivative of the stacked system in that group's direction.  Row blocks without
        a term of the group are zero then.

        Gram correction: the stacked C, c would be summed here over the same terms,
        ``Σ_r Σ_g α_rg² P_eᵀ C_g P_e`` and ``Σ_r Σ_g (α_rg² P_eᵀ c_g + α_rg β_rg P_eᵀ c^Z_g)``
        (module docstring), with ``P_eᵀ C P_e`` = C placed at ``self.columns[e]``.
        """
        m = next(s[0].shape[0] for s in snaps if s is not None)
        A_parts, b_parts = [], []
        n_glob = len(self.names)
        for rb in self.rows:
            cols = self.columns[rb.env]
            Al = bl = None
            for g, alpha, beta in rb.terms:
                if only is not None and g != only:
                    continue
                Ag, bg, Zg = snaps[g]
                if Al is None:
                    Al = Ag * alpha if alpha != 1.0 else Ag.copy()
                    bl = bg * alpha if alpha != 1.0 else bg.copy()
                else:
                    Al += alpha * Ag
                    bl += alpha * bg
                if beta:
                    bl += beta * Zg
            Ag_full = np.zeros((m, n_glob))
            if Al is None:
                bl = np.zeros(m)
            else:
                Ag_full[:, cols] = Al
            A_parts.append(Ag_full)
            b_parts.append(bl)
        return np.concatenate(A_parts), np.concatenate(b_parts)

    def row_slices(self, m):
        """{env: slice of the stacked rows}, for ``m`` rows per block."""
        return {e: slice(lo * m, hi * m) for e, (lo, hi) in self.env_rows.items()}


def design_map(design, snapshots_per_env, names, columns, order=None):
    """Build the :class:`DesignMap` of a design.

    Parameters
    ----------
    design : dynosed_sym.data.designs.Design
    snapshots_per_env : dict ``{env: list of (group index, n_samples)}`` in time order
    names, columns : from :func:`param_layout`
    order : int, optional
        Quadrature order of every time course (default :func:`default_order`).
    """
    N_env = {e: float(sum(n for _, n in snapshots_per_env[e])) for e in design.names}
    N_tot = sum(N_env.values())
    weights = {e: N_env[e] / N_tot for e in design.names}
    rows, group_env, env_rows, orders = [], [], {}, {}
    for env in design.envs:
        e = env.name
        groups = snapshots_per_env[e]
        sw = math.sqrt(weights[e])
        lo = len(rows)
        if env.kind == "stationary":
            ((g, _),) = groups
            rows.append(RowBlock(e, e, [(g, sw, 0.0)]))
        else:
            times = env.data.times
            p = default_order(times.size) if order is None else int(order)
            p = int(min(max(p, 2), times.size))
            orders[e] = p
            pi = interval_weights(times, [n for _, n in groups])
            for k in range(times.size - 1):
                idx, q = quadrature_weights(times, k, p)
                c = sw * math.sqrt(pi[k]) / (times[k + 1] - times[k])
                terms = {}
                for j, qj in zip(idx, q):
                    g = groups[j][0]
                    terms[g] = [c * qj, 0.0]
                terms.setdefault(groups[k][0], [0.0, 0.0])[1] -= c
                terms.setdefault(groups[k + 1][0], [0.0, 0.0])[1] += c
                rows.append(
                    RowBlock(
                        e,
                        f"{e}: t {times[k]:g}→{times[k + 1]:g}",
                        [(g, a, b) for g, (a, b) in sorted(terms.items())],
                    )
                )
        env_rows[e] = (lo, len(rows))
        group_env += [e] * len(groups)
    return DesignMap(names, columns, rows, group_env, env_rows, weights, orders)


def pseudo_blocks(dmap, snapshots):
    """Stacked mean system and the pseudo-blocks of the grouped noise model (module docstring).

    Parameters
    ----------
    dmap : DesignMap
    snapshots : list of Snapshot, indexed by group

    Returns
    -------
    A (R, n), b (R,), A_blocks (P, R, n), b_blocks (P, R), weights (P,), group_ids (P,),
    kappa (G,)
        See :func:`grouped_blocks`.  With one group the pseudo-blocks are its own blocks mapped
        through the design (κ = 1, weights = its block counts: the plain fit's report bit for
        bit).

    Gram correction: per-block C_gj, c_gj would move with their group exactly like (A, b, Z)
    here (pseudo value ``C̄_g + κ_g (C_gj − C̄_g)``, weight ``w_gj/G``).
    """
    means = [s.mean() for s in snapshots]
    A, b = dmap.stack(means)
    if len(snapshots) == 1:
        snap = snapshots[0]
        if snap.n_blocks < 2:
            raise DataError(_too_few_blocks(dmap.group_env[0], snap.n_blocks))
        blocks = [dmap.stack([snap.block(j)]) for j in range(snap.n_blocks)]
        counts = np.asarray(snap.system.counts, dtype=float)
        return (
            A,
            b,
            np.array([a for a, _ in blocks]),
            np.array([v for _, v in blocks]),
            counts,
            np.zeros(counts.size, dtype=np.int64),
            np.ones(1),
        )
    devs = []
    for g, snap in enumerate(snapshots):
        if snap.n_blocks < 2:
            raise DataError(_too_few_blocks(dmap.group_env[g], snap.n_blocks))
        mA, mb, mZ = means[g]
        dA, db = [], []
        for j in range(snap.n_blocks):
            Aj, bj, Zj = snap.block(j)
            snaps = [None] * len(snapshots)
            snaps[g] = (Aj - mA, bj - mb, None if mZ is None else Zj - mZ)
            a, v = dmap.stack(snaps, only=g)
            dA.append(a)
            db.append(v)
        devs.append((np.array(dA), np.array(db), np.asarray(snap.system.counts, dtype=float)))
    return (A, b) + grouped_blocks(A, b, devs)


def _too_few_blocks(env, B):
    return (
        f"a snapshot of environment {env!r} has {B} noise block(s); at least 2 are needed "
        "(more samples, or n_blocks ≥ 2)"
    )


def grouped_blocks(A, b, deviations):
    """Pseudo-blocks of independent groups from each group's block deviations.

    Parameters
    ----------
    A (R, n), b (R,) : the stacked system (means)
    deviations : list over groups of (dA (B_g, R, n), db (B_g, R), block weights (B_g,))
        The change of the stacked system when that group alone moves from its mean to block j.

    Returns
    -------
    A_blocks (P, R, n), b_blocks (P, R), weights (P,), group_ids (P,), kappa (G,)
        Pseudo-block (g, j) = ``(A, b) + κ_g · deviation_gj``, weight ``w_gj / G``,
        ``κ_g² = G (B_tot − 1)/(B_g − 1)``: the one-sample noise formula over the pseudo-blocks
        equals ``Σ_g Σ_j w_gj δ δᵀ/(B_g − 1)`` (module docstring).
    """
    G = len(deviations)
    B = np.array([d[0].shape[0] for d in deviations])
    B_tot = int(B.sum())
    kappa = np.sqrt(G * (B_tot - 1) / (B - 1.0))
    A_blocks = np.empty((B_tot,) + A.shape)
    b_blocks = np.empty((B_tot,) + b.shape)
    weights, ids = [], []
    p = 0
    for g, (dA, db, w) in enumerate(deviations):
        A_blocks[p : p + B[g]] = A[None] + kappa[g] * dA
        b_blocks[p : p + B[g]] = b[None] + kappa[g] * db
        weights.append(np.asarray(w, dtype=float) / np.sum(w) / G)
        ids.append(np.full(B[g], g, dtype=np.int64))
        p += B[g]
    return A_blocks, b_blocks, np.concatenate(weights), np.concatenate(ids), kappa


def pooled_lengthscale(arrays, seed=0, max_points=1000):
    """Median pairwise distance of a seeded subsample pooled over several snapshots.

    Each array contributes in proportion to its size (at least 2 rows).  One array: exactly
    :func:`~dynosed_sym.assembly.features.median_lengthscale`.
    """
    if len(arrays) == 1:
        return median_lengthscale(arrays[0], seed=seed, max_points=max_points)
    rng = np.random.default_rng(seed)
    total = sum(a.shape[0] for a in arrays)
    picks = []
    for a in arrays:
        k = min(a.shape[0], max(2, int(round(max_points * a.shape[0] / total))))
        picks.append(a[np.sort(rng.choice(a.shape[0], k, replace=False))])
    return median_lengthscale(np.concatenate(picks), seed=seed, max_points=10 * max_points)
