"""The dense solve's Grams of the block deviations (dynosed_sym.solve.grams) against the products
of ``(A_b − A)V`` they replace: ``G_b = UᵀΔA_bV`` and ``S = Σ_b w_b ΔA_bᵀΔA_b`` by explicit loops
in NumPy, and the directions, the correction on R, the jackknife, the estimate and the intervals'
block contractions equal to those of the block-deviation path (forced by switching the Grams off)
to rounding."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close_to_scale
from hypothesis import given, settings
from hypothesis import strategies as st

from dynosed_sym.solve import directions as directions_module
from dynosed_sym.solve import grams as grams_module
from dynosed_sym.solve.directions import directions_and_deviations
from dynosed_sym.solve.grams import BlockGrams, block_parts
from dynosed_sym.solve.ustat import solve_system
from dynosed_sym.solve.weak import weak_intervals


def _system(seed, B, m, n, size=37.0, spread=(1.0, 1e-4)):
    rng = np.random.default_rng(seed)
    A0 = rng.standard_normal((m, n)) * np.geomspace(*spread, n)
    A_blocks = size * (A0[None] + 0.2 * rng.standard_normal((B, m, n)))
    b_blocks = A_blocks @ rng.standard_normal(n) + rng.standard_normal((B, m))
    counts = rng.integers(50, 150, B).astype(float)
    w = counts / counts.sum()
    return np.einsum("b,bmn->mn", w, A_blocks), w @ b_blocks, A_blocks, b_blocks, counts


def _close(got, want, rtol=1e-9):
    assert_close_to_scale(got, want, rtol)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(2, 9),
    n=st.integers(1, 7),
    extra=st.integers(0, 9),
)
def test_grams_equal_the_direct_products(seed, B, n, extra):
    """G_b and S of random block means (m ≥ n) against loops over blocks."""
    A, _, Ab, _, counts = _system(seed, B, n + extra, n)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    w = counts / counts.sum()
    g = BlockGrams.compute(A, Ab, U, s, Vt.T, w)
    V = Vt.T
    for k in range(B):
        _close(g.G[k], U.T @ (Ab[k] - A) @ V)
    _close(g.S, sum(w[k] * (Ab[k] - A).T @ (Ab[k] - A) for k in range(B)))
    dev = [(Ab[k] - A) @ V for k in range(B)]
    _close(g.vSv(), [sum(w[k] * np.sum(dev[k][:, i] ** 2) for k in range(B)) for i in range(n)])
    _close(g.proj(), [[(A @ V[:, i]) @ dev[k][:, i] for i in range(n)] for k in range(B)])


@pytest.fixture
def no_grams(monkeypatch):
    """The block-deviation path of the dense solve (the Grams switched off)."""

    def switch():
        monkeypatch.setattr(directions_module, "grams_apply", lambda *args: False)

    return switch


CASES = [(0, 12, 20, 6), (1, 9, 14, 5), (3, 32, 40, 12), (4, 6, 30, 30)]


@pytest.mark.parametrize("case", CASES)
def test_directions_equal_the_block_deviation_path(case, no_grams):
    A, _, Ab, _, counts = _system(*case)
    fast, grams = directions_and_deviations(A, Ab, counts)
    assert isinstance(grams, BlockGrams)
    no_grams()
    slow, dAV = directions_and_deviations(A, Ab, counts)
    assert isinstance(dAV, np.ndarray)
    for name in ("singular_values", "V", "noise", "kappa", "kappa_sd", "t"):
        _close(getattr(fast, name), getattr(slow, name))
    np.testing.assert_array_equal(fast.resolved, slow.resolved)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("estimator", ["resolved", "ridge"])
def test_solve_equals_the_block_deviation_path(case, estimator, no_grams):
    """The estimate, its bread, the jackknife (r ≤ 4B here) and the intervals' contractions."""
    A, b, Ab, bb, counts = _system(*case)
    fast = solve_system(A, b, Ab, bb, counts, 1e-3, estimator=estimator)
    no_grams()
    slow = solve_system(A, b, Ab, bb, counts, 1e-3, estimator=estimator)
    np.testing.assert_array_equal(fast.directions.resolved, slow.directions.resolved)
    for name in ("theta", "bread", "theta_resolved", "second_order"):
        _close(getattr(fast, name), getattr(slow, name), rtol=1e-8)
    assert fast.alpha == slow.alpha
    if slow.jackknife is not None:
        _close(fast.jackknife.bias, slow.jackknife.bias, rtol=1e-7)
        _close(fast.jackknife.sd, slow.jackknife.sd, rtol=1e-8)
    if estimator == "resolved":
        assert isinstance(fast.deviations.dAV, BlockGrams)
        Hp = fast.bread
        _close(fast.deviations.curvature_noise(A, Hp), slow.deviations.curvature_noise(A, Hp))
        tau2 = np.linspace(0.5, 2.0, int((~fast.directions.resolved).sum()))
        w = counts / counts.sum()
        _close(
            fast.deviations.unresolved_noise(A, Hp, tau2, w),
            slow.deviations.unresolved_noise(A, Hp, tau2, w),
        )


def test_intervals_from_grams_equal_the_direct_formulas():
    """weak_intervals from the Grams and from the blocks themselves (the formulas of .weak)."""
    A, b, Ab, bb, counts = _system(5, 16, 24, 8)
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    assert isinstance(est.deviations.dAV, BlockGrams)
    args = (A, b, est.theta_resolved, est.theta, (Ab, bb, counts), est.bread, est.fill)
    free = np.zeros(A.shape[1], bool)
    fast = weak_intervals(*args, 0.3, 2.1, free, deviations=est.deviations)
    slow = weak_intervals(*args, 0.3, 2.1, free)
    for name in ("ci", "se", "bias_sd", "noise", "c", "gamma"):
        _close(getattr(fast, name), getattr(slow, name))


def test_grams_leave_the_block_means_untouched():
    """The solve scales the block means in place to unit size and back: bit for bit."""
    A, b, Ab, bb, counts = _system(6, 10, 20, 6, size=1e5)
    before = Ab.copy()
    solve_system(A, b, Ab, bb, counts, 0.0)
    np.testing.assert_array_equal(Ab, before)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 200), m=st.integers(1, 5000), n=st.integers(1, 2000))
def test_block_parts_cover_the_blocks_within_the_budget(B, m, n):
    """Consecutive parts covering 0..B once, equal but for the last, at most MAX_PARTS of them
    unless one part would exceed its share of the chunk budget (then one block each at least)."""
    parts = block_parts(B, m, n)
    assert parts[0][0] == 0 and parts[-1][1] == B
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    sizes = [hi - lo for lo, hi in parts]
    assert min(sizes) >= 1 and len(set(sizes[:-1])) <= 1 and sizes[-1] <= sizes[0]
    per_part = grams_module.CHUNK_BYTES // grams_module.MAX_PARTS
    assert sizes[0] == 1 or sizes[0] * 8 * m * n <= per_part
    assert len(parts) <= grams_module.MAX_PARTS or sizes[0] * 8 * m * n * 2 > per_part


@pytest.mark.parametrize("B", [1, 5, 32])
def test_grams_are_the_same_on_any_number_of_threads(B, monkeypatch):
    """Bit for bit: the parts are fixed by the shape and their Grams added in part order; a small
    chunk budget forces more parts than threads."""
    A, _, Ab, _, counts = _system(11, B, 30, 9)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    w = counts / counts.sum()
    for budget in (grams_module.CHUNK_BYTES, 3 * 8 * 30 * 9 * grams_module.MAX_PARTS):
        monkeypatch.setattr(grams_module, "CHUNK_BYTES", budget)
        one = BlockGrams.compute(A, Ab, U, s, Vt.T, w, workers=1)
        for workers in (2, 3, 4):
            many = BlockGrams.compute(A, Ab, U, s, Vt.T, w, workers=workers)
            np.testing.assert_array_equal(many.G, one.G)
            np.testing.assert_array_equal(many.S, one.S)
        _close(one.S, sum(w[k] * (Ab[k] - A).T @ (Ab[k] - A) for k in range(B)))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(2, 6),
    n=st.integers(1, 8),
    scale_exp=st.integers(-3, 3),
)
def test_contractions_equal_the_products_they_are_read_from(seed, B, n, scale_exp):
    """E_b and N_b gathered from G for any resolved set (contiguous, gapped, empty, all) equal
    ``(AV_R)ᵀΔA_bV_R`` and ``(AV_R)ᵀΔA_bV_U + ((AV_U)ᵀΔA_bV_R)ᵀ`` with ``AV = U diag(s)``,
    formed by loops."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((B, n, n))
    s = np.sort(rng.uniform(0.1, 3.0, n))[::-1]
    R = rng.random(n) < rng.uniform(0.0, 1.0)
    a = 2.0**scale_exp
    grams = BlockGrams(G, np.eye(n), s, np.eye(n), np.full(B, 1 / B), (B, n, n))
    E, N = grams.contractions(R, a)
    iR, iU = np.flatnonzero(R), np.flatnonzero(~R)
    for k in range(B):
        P = a * a * s[:, None] * G[k]  # (AV)ᵀΔA_bV in the system a·A: rows scaled by s
        np.testing.assert_array_equal(E[k], P[np.ix_(iR, iR)])
        np.testing.assert_allclose(N[k], P[np.ix_(iR, iU)] + P[np.ix_(iU, iR)].T, rtol=1e-15)


def test_curvature_noise_is_the_same_on_threads(monkeypatch):
    """The intervals' curvature noise runs its blocks' products a part per thread above
    THREADED_OPS: bit for bit the result on one thread, and the direct products."""
    A, b, Ab, bb, counts = _system(5, 12, 40, 12)
    est = solve_system(A, b, Ab, bb, counts, 1e-3)
    assert isinstance(est.deviations.dAV, BlockGrams)
    Hp = est.bread
    monkeypatch.setattr(grams_module, "THREADED_OPS", 0)
    results = []
    for workers in (1, 2, 3):
        monkeypatch.setattr(grams_module, "_workers", lambda w, n_parts, k=workers: k)
        est.deviations._products.clear()
        results.append(est.deviations.curvature_noise(A, Hp))
    np.testing.assert_array_equal(results[1], results[0])
    np.testing.assert_array_equal(results[2], results[0])
    want = [[(A @ Hp[:, j]) @ ((Ab[k] - A) @ Hp[:, j]) for j in range(12)] for k in range(12)]
    _close(results[0], want, rtol=1e-8)


@given(
    n=st.integers(1, 12),
    B=st.integers(1, 4),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_block_gather_equals_fancy_indexing(n, B, data):
    """``_block`` (slices for ranges, per-block ``take`` otherwise) is NumPy's fancy index
    ``G[:, rows[:, None], cols[None, :]]`` bit for bit, for any sorted index sets (empty too)."""
    G = np.random.default_rng(n * 10 + B).standard_normal((B, n, n))
    idx = st.lists(st.integers(0, n - 1), unique=True).map(sorted)
    rows, cols = np.array(data.draw(idx), int), np.array(data.draw(idx), int)
    got = grams_module._block(G, rows, cols)
    want = G[:, rows[:, None], cols[None, :]]
    assert got.shape == want.shape
    assert np.array_equal(got, want)
