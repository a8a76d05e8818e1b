"""Grouped noise of designs in the solve layer: degrees of freedom Σ(B_g − 1), the stratified
bootstrap, and the report's use of them."""

from __future__ import annotations

import numpy as np

from dynosed_sym.assembly.designs import grouped_blocks
from dynosed_sym.solve.linear import solve_tikhonov
from dynosed_sym.solve.report import analyse
from dynosed_sym.solve.uncertainty import Grouping, block_bootstrap, t_quantile


def _two_groups(rng, m=8, n=3):
    """Stacked rows [√w₁ L₁(Y₁); √w₂ L₂(Y₂)] of two independent groups of block means."""
    sizes = (5, 9)
    groups = []
    for B in sizes:
        Yb = rng.normal(size=(B, m, n)) * 0.1 + rng.normal(size=(1, m, n))
        yb = rng.normal(size=(B, m)) * 0.1 + rng.normal(size=(1, m))
        c = rng.integers(3, 9, size=B).astype(float)
        groups.append((Yb, yb, c))
    w = (0.3, 0.7)

    def stack(means):
        return (
            np.concatenate([np.sqrt(wi) * M for wi, (M, _) in zip(w, means)]),
            np.concatenate([np.sqrt(wi) * v for wi, (_, v) in zip(w, means)]),
        )

    means = [(np.tensordot(c / c.sum(), Yb, 1), (c / c.sum()) @ yb) for Yb, yb, c in groups]
    A, b = stack(means)
    devs = []
    for g, (Yb, yb, c) in enumerate(groups):
        dA, db = [], []
        for j in range(Yb.shape[0]):
            moved = [
                (
                    (Yb[j] - means[g][0]) if h == g else 0 * means[h][0],
                    (yb[j] - means[g][1]) if h == g else 0 * means[h][1],
                )
                for h in range(2)
            ]
            a, v = stack(moved)
            dA.append(a)
            db.append(v)
        devs.append((np.array(dA), np.array(db), c))
    return A, b, groups, means, stack, devs


def test_grouping_degrees_of_freedom_and_report(rng):
    A, b, groups, means, stack, devs = _two_groups(rng)
    A_blocks, b_blocks, weights, ids, kappa = grouped_blocks(A, b, devs)
    grouping = Grouping(ids, kappa)
    assert grouping.n_groups == 2 and grouping.dof == (5 - 1) + (9 - 1)
    theta = solve_tikhonov(A, b, 1e-6)
    rep = analyse(
        A, b, theta, 1e-6, ["a", "b", "c"], A_blocks, b_blocks, weights, grouping=grouping
    )
    assert rep.dof == 12 and rep.n_groups == 2 and rep.n_blocks == 14
    half = (rep.ci[:, 1] - rep.ci[:, 0]) / 2
    # these random groups fit no θ (residual ≈ 22 × its noise): the Birge ratio widens them
    S = np.sqrt(rep.misspec_stat)
    assert S > 1 and rep.interval_scale == S
    np.testing.assert_allclose(half, t_quantile(0.95, 12) * S * rep.std_errors, rtol=1e-12)


def test_grouped_bootstrap_resamples_within_groups(rng):
    """The pseudo-block bootstrap equals resampling each group's blocks and stacking directly."""
    A, b, groups, means, stack, devs = _two_groups(rng)
    A_blocks, b_blocks, weights, ids, kappa = grouped_blocks(A, b, devs)
    res = block_bootstrap(
        A_blocks, b_blocks, weights, 1e-6, n_boot=25, seed=3, grouping=Grouping(ids, kappa)
    )
    draw = np.random.default_rng(3)
    for k in range(25):
        moved = []
        for Yb, yb, c in groups:
            idx = draw.integers(0, Yb.shape[0], Yb.shape[0])
            mult = np.bincount(idx, minlength=Yb.shape[0]) * c
            w = mult / mult.sum()
            moved.append((np.tensordot(w, Yb, 1), w @ yb))
        A_s, b_s = stack(moved)
        np.testing.assert_allclose(
            res.thetas[k], solve_tikhonov(A_s, b_s, 1e-6), rtol=1e-8, atol=1e-10
        )


def test_plain_bootstrap_unchanged_without_grouping(rng):
    A_blocks = rng.normal(size=(6, 5, 2))
    b_blocks = rng.normal(size=(6, 5))
    counts = np.arange(1, 7, dtype=float)
    r1 = block_bootstrap(A_blocks, b_blocks, counts, 1e-6, n_boot=10, seed=1)
    draws = np.random.default_rng(1).integers(0, 6, size=(10, 6))
    for k, idx in enumerate(draws):
        mult = np.bincount(idx, minlength=6) * counts
        w = mult / mult.sum()
        ref = solve_tikhonov(np.tensordot(w, A_blocks, 1), w @ b_blocks, 1e-6)
        np.testing.assert_array_equal(r1.thetas[k], ref)
