"""The linear algebra of designs (assembly/designs.py): quadrature weights, the per-snapshot
Z column, the stacking, the grouped pseudo-blocks — against NumPy oracles and exact laws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynosed_sym.apps.bench.designs import population_fit, population_snapshot, transient_law
from dynosed_sym.assembly.designs import (
    Snapshot,
    assemble_snapshot,
    design_map,
    param_layout,
    pseudo_blocks,
    quadrature_weights,
)
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import BlockSystem
from dynosed_sym.data.blocks import block_edges
from dynosed_sym.data.designs import TimeCourse, as_design
from dynosed_sym.reference import stein_system_reference
from dynosed_sym.solve.linear import hinv
from dynosed_sym.solve.uncertainty import sandwich_covariance


@settings(max_examples=30)
@given(
    gaps=st.lists(st.floats(0.05, 2.0), min_size=1, max_size=7),
    order=st.sampled_from([2, 3, 4]),
    coef=st.lists(st.floats(-3, 3), min_size=4, max_size=4),
)
def test_quadrature_is_exact_for_polynomials_of_its_degree(gaps, order, coef):
    """Order p integrates polynomials of degree p − 1 exactly, on any (uneven) grid."""
    t = np.concatenate([[0.3], 0.3 + np.cumsum(gaps)])
    p = min(order, t.size)
    poly = np.polynomial.Polynomial(coef[:p])
    integral = poly.integ()
    for k in range(t.size - 1):
        idx, q = quadrature_weights(t, k, order)
        assert idx.size == p and idx.min() >= 0 and idx.max() < t.size
        assert k in idx and k + 1 in idx
        exact = integral(t[k + 1]) - integral(t[k])
        assert abs(q @ poly(t[idx]) - exact) <= 1e-10 * max(1.0, abs(exact))


def test_order4_interior_weights_for_even_spacing():
    idx, q = quadrature_weights(np.arange(6) * 0.2, 2, 4)
    assert idx.tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(q, np.array([-1, 13, 13, -1]) * 0.2 / 24, rtol=1e-12)


def test_snapshot_system_and_Z_against_numpy(compiled, models):
    """assemble_snapshot: A, b of every block as the NumPy reference; Z = √(2/m)·mean cos."""
    cm, model = compiled["ou2d"], models["ou2d"]
    X = np.random.default_rng(3).normal(size=(1000, 2)) * [1.0, 0.7] + [0.5, -0.2]
    feats = draw_features(2, 70, 1.2, seed=4)
    edges = block_edges(X.shape[0], 4)
    snap = assemble_snapshot(cm, X, edges, feats)
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    np.testing.assert_allclose(snap.system.A, A_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(snap.system.b, b_ref, rtol=1e-9, atol=1e-12)
    cos = np.cos(X @ feats.omega.T + feats.phase)
    np.testing.assert_allclose(snap.Z, math.sqrt(2 / 70) * cos.mean(axis=0), rtol=1e-9)
    for g in range(4):
        sl = slice(edges[g], edges[g + 1])
        np.testing.assert_allclose(
            snap.Z_blocks[g], math.sqrt(2 / 70) * cos[sl].mean(axis=0), rtol=1e-9
        )


def test_population_snapshot_is_the_large_sample_limit(compiled):
    """The exact Gaussian moments (the bias study's oracle) against a large exact sample."""
    feats = draw_features(2, 64, 1.5, seed=0)
    mu, S = transient_law(0.3)
    X = np.random.default_rng(0).multivariate_normal(mu, S, 400_000)
    snap = assemble_snapshot(compiled["ou2d"], X, block_edges(X.shape[0], 8), feats)
    pop = population_snapshot(feats, mu, S)
    for got, want in (
        (snap.system.A, pop.system.A),
        (snap.system.b, pop.system.b),
        (snap.Z, pop.Z),
    ):
        assert np.abs(got - want).max() < 0.01 * np.abs(want).max()


def test_time_course_rows_vanish_at_the_truth_with_the_spacing():
    """Noise-free bias of the stacked time course: rate ≈ 2 (trapezoid), ≈ 4 (order 4)."""
    truth = np.array([-1.0, 0.5, -0.5, -1.0])
    bias = {
        (p, h): np.abs(population_fit(np.arange(0.0, 1.6 + 1e-9, h), p, 0) - truth).max()
        for p in (2, 4)
        for h in (0.2, 0.1)
    }
    r2 = bias[(2, 0.2)] / bias[(2, 0.1)]
    r4 = bias[(4, 0.2)] / bias[(4, 0.1)]
    assert 3.0 < r2 < 5.0 and r4 > 10.0
    assert bias[(4, 0.2)] < 0.2 * bias[(2, 0.2)]


def _random_snapshot(rng, m, n, B, with_Z):
    A_b = rng.normal(size=(B, m, n))
    b_b = rng.normal(size=(B, m))
    counts = rng.integers(5, 20, size=B).astype(float)
    w = counts / counts.sum()
    A, b = np.tensordot(w, A_b, 1), w @ b_b
    Z_b = rng.normal(size=(B, m)) if with_Z else None
    Z = None if Z_b is None else w @ Z_b
    return Snapshot(BlockSystem(A, b, A_b, b_b, counts), Z, Z_b)


def test_pseudo_blocks_equal_the_direct_grouped_sandwich(models):
    """Σ_p π_p IF_p IF_pᵀ/(B_tot − 1) over pseudo-blocks = Σ_g Σ_j w_gj IF IFᵀ/(B_g − 1)."""
    model = models["ou2d"]
    rng = np.random.default_rng(7)
    m, n = 6, 4
    data = {
        "S1": np.zeros((2, 2)),
        "T": TimeCourse({0.0: 0, 0.3: 0, 0.5: 0, 1.0: 0, 1.2: 0}),
        "S2": np.zeros((2, 2)),
    }
    design = as_design(data, model)
    names, columns = param_layout(model.param_names, [], design.names)
    sizes = [5, 3, 6, 4, 7, 5, 4]
    snaps = [_random_snapshot(rng, m, n, B, with_Z=1 <= g <= 5) for g, B in enumerate(sizes)]
    per_env = {"S1": [(0, 50)], "T": [(g, 30 + g) for g in range(1, 6)], "S2": [(6, 80)]}
    dmap = design_map(design, per_env, names, columns, order=4)
    A, b, A_blocks, b_blocks, weights, ids, kappa = pseudo_blocks(dmap, snaps)
    theta = np.linalg.lstsq(A, b, rcond=None)[0] + 0.1  # any θ (a misspecified point too)
    lam = 1e-3
    cov = sandwich_covariance(A, b, theta, lam, A_blocks, b_blocks, weights)
    H = hinv(A, lam)
    r = A @ theta - b
    direct = np.zeros((n, n))
    means = [s.mean() for s in snaps]
    for g, s in enumerate(snaps):
        w = s.system.counts / s.system.counts.sum()
        for j in range(s.n_blocks):
            moved = list(means)
            moved[g] = s.block(j)
            Aj, bj = dmap.stack(moved)
            dA, db = Aj - A, bj - b
            IF = -H @ (dA.T @ r + A.T @ (dA @ theta - db))
            direct += w[j] * np.outer(IF, IF) / (s.n_blocks - 1)
    np.testing.assert_allclose(cov, direct, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(weights.sum(), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.tensordot(weights, A_blocks, 1), A, atol=1e-12)
    assert ids.tolist() == sum(([g] * B for g, B in enumerate(sizes)), [])


def test_stack_is_linear_and_places_env_columns(models):
    model = models["ou2d"]
    rng = np.random.default_rng(1)
    design = as_design({"A": np.zeros((2, 2)), "B": np.zeros((2, 2))}, model)
    names, columns = param_layout(model.param_names, ["M12"], design.names)
    assert names == ["M11", "M12[A]", "M12[B]", "M21", "M22"]
    assert columns["A"].tolist() == [0, 1, 3, 4] and columns["B"].tolist() == [0, 2, 3, 4]
    dmap = design_map(design, {"A": [(0, 30)], "B": [(1, 10)]}, names, columns)
    snaps = [(rng.normal(size=(3, 4)), rng.normal(size=3), None) for _ in range(2)]
    A, b = dmap.stack(snaps)
    assert A.shape == (6, 5)
    np.testing.assert_allclose(A[:3, [0, 1, 3, 4]], math.sqrt(0.75) * snaps[0][0])
    np.testing.assert_array_equal(A[:3, 2], 0.0)
    np.testing.assert_array_equal(A[3:, 1], 0.0)
    np.testing.assert_allclose(b[3:], math.sqrt(0.25) * snaps[1][1])
    other = [(rng.normal(size=(3, 4)), rng.normal(size=3), None) for _ in range(2)]
    A2, b2 = dmap.stack(other)
    Asum, bsum = dmap.stack(
        [(a + 2 * c, u + 2 * v, None) for (a, u, _), (c, v, _) in zip(snaps, other)]
    )
    np.testing.assert_allclose(Asum, A + 2 * A2, atol=1e-12)
    np.testing.assert_allclose(bsum, b + 2 * b2, atol=1e-12)


def test_too_few_blocks_is_a_clear_error(models):
    model = models["ou2d"]
    design = as_design({"A": np.zeros((2, 2)), "B": np.zeros((2, 2))}, model)
    names, columns = param_layout(model.param_names, [], design.names)
    dmap = design_map(design, {"A": [(0, 3)], "B": [(1, 3)]}, names, columns)
    rng = np.random.default_rng(0)
    snaps = [_random_snapshot(rng, 3, 4, 1, False), _random_snapshot(rng, 3, 4, 3, False)]
    with pytest.raises(Exception, match="noise block"):
        pseudo_blocks(dmap, snaps)
