"""The solve's block deviations (dynosed_sym.solve.deviations): the intervals' block contractions
taken from ``(A_b − A)V`` on the resolved directions equal the direct products of the formulas in
dynosed_sym.solve.weak, computed here by explicit loops over blocks and parameters in NumPy; and
the streamed solve (dynosed_sym.solve.blockops) — block means that are not a NumPy array, or
deviations too large to hold — gives the same products, estimate and report as the dense one
without making the block means dense.
"""

from __future__ import annotations

import numpy as np
import pytest

from dynosed_sym.solve import blockops
from dynosed_sym.solve.linear import solve_tikhonov
from dynosed_sym.solve.misspecification import misspecification_test
from dynosed_sym.solve.report import analyse
from dynosed_sym.solve.ustat import second_order_bias, solve_system
from dynosed_sym.solve.weak import weak_intervals


def _system(seed, B, m, n, size=37.0):
    """Block means with strong, weak and absent columns (some directions resolved, some not),
    entries of size ``size`` (the solve's unit scale a ≠ 1)."""
    rng = np.random.default_rng(seed)
    scales = np.geomspace(1.0, 1e-4, n)
    A0 = rng.standard_normal((m, n)) * scales
    A_blocks = size * (A0[None] + 0.2 * rng.standard_normal((B, m, n)))
    b_blocks = A_blocks @ rng.standard_normal(n) + rng.standard_normal((B, m))
    counts = rng.integers(50, 150, B).astype(float)
    w = counts / counts.sum()
    return np.einsum("b,bmn->mn", w, A_blocks), w @ b_blocks, A_blocks, b_blocks, counts


CASES = [(0, 12, 20, 6), (1, 9, 14, 5), (2, 16, 5, 8)]  # the last: m < n


@pytest.mark.parametrize("case", CASES)
def test_block_contractions_equal_the_direct_products(case):
    """``(A p_j)ᵀ ΔA_b p_j`` and ``Σ_b w_b Σ_i (H⁺M_b)_ji² τ_i²/(B − 1)`` by loops."""
    A, b, Ab, bb, counts = _system(*case)
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    dev, Hp = est.deviations, est.bread
    assert dev is not None and 0 < dev.resolved.sum() < A.shape[1]  # both kinds present
    B, m, n = Ab.shape
    w = counts / counts.sum()
    want = np.array(
        [[(A @ Hp[:, j]) @ ((Ab[k] - A) @ Hp[:, j]) for j in range(n)] for k in range(B)]
    )
    got = dev.curvature_noise(A, Hp)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())

    VU = dev.V[:, ~dev.resolved]
    tau2 = np.random.default_rng(7).uniform(0.5, 2.0, VU.shape[1])
    want = np.zeros(n)
    for k in range(B):
        M = (Ab[k] - A).T @ (A @ VU) + A.T @ ((Ab[k] - A) @ VU)
        G = Hp @ M
        for j in range(n):
            want[j] += w[k] * np.sum(G[j] ** 2 * tau2) / (B - 1)
    got = dev.unresolved_noise(A, Hp, tau2, w)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
    assert np.all(got >= 0.0)  # a variance: never negative by rounding (its root is bias.sd)


@pytest.mark.parametrize("case", CASES)
def test_intervals_are_the_same_with_and_without_the_deviations(case):
    """weak_intervals from the solve's deviations and from the blocks themselves."""
    A, b, Ab, bb, counts = _system(*case)
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    n = A.shape[1]
    args = (A, b, est.theta_resolved, est.theta, (Ab, bb, counts), est.bread, est.fill)
    free = np.zeros(n, bool)
    fast = weak_intervals(*args, 0.3, 2.1, free, deviations=est.deviations)
    slow = weak_intervals(*args, 0.3, 2.1, free)
    for name in ("ci", "se", "bias_sd", "noise", "c", "gamma"):
        np.testing.assert_allclose(getattr(fast, name), getattr(slow, name), rtol=1e-9, atol=0)
    np.testing.assert_array_equal(fast.bounded, slow.bounded)


def test_deviations_of_other_blocks_are_not_used():
    """Deviations are read only for the blocks they were taken from."""
    A, b, Ab, bb, counts = _system(3, 10, 12, 5)
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    VU = est.fill.VU
    assert est.deviations.matches(Ab, VU)
    assert not est.deviations.matches(Ab.copy(), VU)
    assert not est.deviations.matches(Ab, VU[:, :-1])


def test_the_report_reads_and_releases_the_deviations():
    """analyse gives the same report whether the estimate still holds its deviations or not, and
    drops them (B·m·n floats) once read."""
    A, b, Ab, bb, counts = _system(4, 12, 20, 6)
    names = [f"p{i}" for i in range(6)]
    est = solve_system(A, b, Ab, bb, counts, 1e-6)
    fast = analyse(A, b, est.theta, 1e-6, names, Ab, bb, counts, estimate=est)
    assert est.deviations is None
    slow = analyse(A, b, est.theta, 1e-6, names, Ab, bb, counts, estimate=est)
    np.testing.assert_allclose(fast.ci, slow.ci, rtol=1e-9)
    np.testing.assert_allclose(fast.bias_sd, slow.bias_sd, rtol=1e-9)
    assert fast.status == slow.status


def test_misspecification_test_with_the_solve_s_left_vectors():
    """The left singular vectors of the solve's SVD (of A/a) give the test on A bit for bit."""
    A, b, Ab, bb, counts = _system(5, 12, 20, 6)
    est = solve_system(A, b, Ab, bb, counts, 1e-6)
    assert est.left_vectors is not None
    rank = int(est.directions.resolved.sum())
    args = (A, b, est.theta_tikhonov, 1e-6, Ab, bb, counts, rank)
    stat, p, h = misspecification_test(*args, U=est.left_vectors)
    stat0, p0, h0 = misspecification_test(*args)
    assert (stat, p.value, h) == (stat0, p0.value, h0)


def test_second_order_bias_by_a_loop_over_blocks():
    """b̂₂ = H⁺ Σ_b w_b (AᵀΔ_b + Δ_bᵀA) H⁺Aᵀψ̄_b / (B − 1) with Δ_b = A_b − A formed per block."""
    A, b, Ab, bb, counts = _system(6, 10, 16, 5)
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    Hp, theta = est.bread, est.theta
    B = counts.size
    w = counts / counts.sum()
    r = A @ theta - b
    acc = np.zeros(A.shape[1])
    for k in range(B):
        D = Ab[k] - A
        psi = (Ab[k] @ theta - bb[k]) - r
        acc += w[k] * (A.T @ D + D.T @ A) @ (Hp @ (A.T @ psi))
    want = Hp @ acc / (B - 1)
    got = second_order_bias(A, b, theta, Ab, bb, counts, Hp)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("size", [37.0, 1e-3])  # unit scale a > 1 (a copy) and a < 1 (in place)
def test_unit_scaling_in_place_restores_the_blocks_bit_for_bit(size):
    """The solve scales the blocks to unit size in place where that is exact: the caller's array
    is unchanged afterwards and the estimate equals that from a read-only copy (scaled copy)."""
    A, b, Ab, bb, counts = _system(8, 12, 20, 6, size=size)
    before = Ab.copy()
    frozen = Ab.copy()
    frozen.flags.writeable = False
    est = solve_system(A, b, Ab, bb, counts, 1e-6)
    ref = solve_system(A, b, frozen, bb, counts, 1e-6)
    np.testing.assert_array_equal(Ab, before)
    for name in ("theta", "bread", "theta_tikhonov", "theta_resolved", "second_order"):
        np.testing.assert_array_equal(getattr(est, name), getattr(ref, name))


# ---- the streamed path (dynosed_sym.solve.blockops)


class LazyBlocks:
    """Block means read block by block, as BlockMeans: no ``__array__`` (making it dense fails)."""

    def __init__(self, dense, factor=1.0):
        self._dense, self._factor = dense, factor
        self.shape = dense.shape
        self.ndim = 3

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        return self._dense[idx] / self._factor

    def __truediv__(self, a):
        return LazyBlocks(self._dense, self._factor * a)

    def __matmul__(self, v):
        return np.array([self[k] @ v for k in range(len(self))])

    def __array__(self, dtype=None, copy=None):
        raise AssertionError("the solve made the lazy block means dense")


@pytest.fixture
def small_chunks(monkeypatch):
    """Stream everything, in chunks of two blocks (the last chunk shorter for odd B)."""
    monkeypatch.setattr(blockops, "STREAM_BYTES", 0)

    def chunk(A_blocks, k):
        return 2

    monkeypatch.setattr(blockops, "_chunk", chunk)


def _direct(A, Ab, Hp, VU, tau2, w):
    B, n = Ab.shape[0], A.shape[1]
    curv = np.array(
        [[(A @ Hp[:, j]) @ ((Ab[k] - A) @ Hp[:, j]) for j in range(n)] for k in range(B)]
    )
    noise = np.zeros(n)
    for k in range(B):
        G = Hp @ ((Ab[k] - A).T @ (A @ VU) + A.T @ ((Ab[k] - A) @ VU))
        noise += w[k] * (G**2 @ tau2) / (B - 1)
    return curv, noise


@pytest.mark.parametrize("case", CASES + [(3, 9, 14, 5)])
@pytest.mark.parametrize("lazy", [False, True])
def test_streamed_contractions_equal_the_direct_products(case, lazy, small_chunks):
    A, b, Ab, bb, counts = _system(*case)
    blocks = LazyBlocks(Ab) if lazy else Ab
    est = solve_system(A, b, blocks, bb, counts, 0.0)
    dev, Hp = est.deviations, est.bread
    assert dev.streamed and 0 < dev.resolved.sum() < A.shape[1]
    w = counts / counts.sum()
    VU = dev.V[:, ~dev.resolved]
    tau2 = np.random.default_rng(7).uniform(0.5, 2.0, VU.shape[1])
    curv, noise = _direct(A, Ab, Hp, VU, tau2, w)
    got = dev.curvature_noise(A, Hp)
    np.testing.assert_allclose(got, curv, rtol=1e-9, atol=1e-12 * np.abs(curv).max())
    got = dev.unresolved_noise(A, Hp, tau2, w)
    np.testing.assert_allclose(got, noise, rtol=1e-9, atol=1e-12 * np.abs(noise).max())


@pytest.mark.parametrize("case", CASES + [(3, 9, 14, 5)])
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("pick", ["some", "none", "all"])
def test_streamed_contractions_for_some_parameters_equal_the_direct_products(
    case, lazy, pick, small_chunks
):
    """The passes restricted to the parameters not on the whole line (the block means times
    columns / rows of H⁺, no V): the direct products in those columns, 0 elsewhere."""
    A, b, Ab, bb, counts = _system(*case)
    blocks = LazyBlocks(Ab) if lazy else Ab
    est = solve_system(A, b, blocks, bb, counts, 0.0)
    dev, Hp = est.deviations, est.bread
    n = A.shape[1]
    cols = {"some": np.array([0, n - 1, n // 2]), "none": np.array([], int)}.get(pick, np.arange(n))
    w = counts / counts.sum()
    VU = dev.V[:, ~dev.resolved]
    tau2 = np.random.default_rng(8).uniform(0.5, 2.0, VU.shape[1])
    curv, noise = _direct(A, Ab, Hp, VU, tau2, w)
    others = np.setdiff1d(np.arange(n), cols)
    got = dev.curvature_noise(A, Hp, cols)
    assert got.shape == curv.shape and np.all(got[:, others] == 0.0)
    np.testing.assert_allclose(
        got[:, cols], curv[:, cols], rtol=1e-9, atol=1e-12 * np.abs(curv).max()
    )
    got = dev.unresolved_noise(A, Hp, tau2, w, cols)
    assert got.shape == noise.shape and np.all(got[others] == 0.0)
    np.testing.assert_allclose(got[cols], noise[cols], rtol=1e-9, atol=1e-12 * np.abs(noise).max())


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("lazy", [False, True])
def test_streamed_fit_and_report_equal_the_dense_ones(case, lazy, monkeypatch):
    A, b, Ab, bb, counts = _system(*case)
    names = [f"p{i}" for i in range(A.shape[1])]
    ref = solve_system(A, b, Ab.copy(), bb, counts, 1e-6)
    ref_rep = analyse(A, b, ref.theta, 1e-6, names, Ab, bb, counts, estimate=ref)
    monkeypatch.setattr(blockops, "STREAM_BYTES", 0)
    monkeypatch.setattr(blockops, "_chunk", lambda A_blocks, k: 3)
    blocks = LazyBlocks(Ab) if lazy else Ab
    est = solve_system(A, b, blocks, bb, counts, 1e-6)
    assert est.deviations.streamed
    rep = analyse(A, b, est.theta, 1e-6, names, blocks, bb, counts, estimate=est)
    for name in ("theta", "theta_resolved", "bread", "second_order"):
        want = getattr(ref, name)
        np.testing.assert_allclose(getattr(est, name), want, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(est.directions.resolved, ref.directions.resolved)
    for name in ("ci", "std_errors"):
        want = getattr(ref_rep, name)
        fin = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(getattr(rep, name)), fin)
        np.testing.assert_allclose(getattr(rep, name)[fin], want[fin], rtol=1e-9)
    # bias.sd: the same where the interval can be finite; on the whole line (loading ≥ 0.5) the
    # streamed report leaves the noise of the unresolved columns out: the loading part, a bound
    free = np.linalg.norm(est.directions.V[:, ~est.directions.resolved], axis=1) >= 0.5
    np.testing.assert_allclose(rep.bias_sd[~free], ref_rep.bias_sd[~free], rtol=1e-9)
    assert np.all(rep.bias_sd[free] <= ref_rep.bias_sd[free] * (1 + 1e-9))
    assert rep.status == ref_rep.status
    assert rep.p_value == pytest.approx(ref_rep.p_value, rel=1e-9)
    if lazy:
        assert rep._blocks is None or rep._blocks[0] is blocks


def test_streaming_threshold():
    """Deviations are held up to STREAM_BYTES, regenerated beyond it and for lazy block means."""
    dense = np.zeros((4, 8, 3))
    assert not blockops.streamed(dense)
    assert blockops.streamed(LazyBlocks(dense))
    assert blockops.streamed(np.lib.stride_tricks.as_strided(dense, (40_000, 2048, 2), (0, 0, 0)))


def test_one_svd_for_tikhonov_directions_and_test_when_m_is_below_n():
    """m < n: the solve's complete SVD gives the Tikhonov solution, the directions and the
    misspecification test's left vectors as their own SVDs do (one decomposition, not three)."""
    A, b, Ab, bb, counts = _system(2, 16, 5, 8)
    assert A.shape[0] < A.shape[1]
    est = solve_system(A, b, Ab, bb, counts, 1e-6)
    assert est.left_vectors is not None and est.left_vectors.shape == (5, 5)
    want = solve_tikhonov(A, b, 1e-6)
    np.testing.assert_allclose(
        est.theta_tikhonov, want, rtol=1e-10, atol=1e-13 * np.abs(want).max()
    )
    rank = int(est.directions.resolved.sum())
    args = (A, b, est.theta_tikhonov, 1e-6, Ab, bb, counts, rank)
    stat, p, h = misspecification_test(*args, U=est.left_vectors)
    stat0, p0, h0 = misspecification_test(*args)
    assert stat == pytest.approx(stat0, rel=1e-10) and p.value == pytest.approx(p0.value, rel=1e-8)


@pytest.mark.parametrize("lazy", [False, True])
def test_streamed_directions_share_the_null_space_noise_when_m_is_below_n(lazy, small_chunks):
    """m < n, streamed: the first m directions' noise and curvature statistics equal the dense
    path's; each of the n − m exact-null directions gets the null space's mean noise, whose sum
    is basis-free (the trace of S there: the dense path's sum over its own basis), and
    t = −√(dof/2) there, as the dense path gives to rounding."""
    from dynosed_sym.solve.directions import directions_and_deviations

    A, b, Ab, bb, counts = _system(2, 16, 5, 8)
    m, n = A.shape
    blocks = LazyBlocks(Ab) if lazy else Ab
    got, dev = directions_and_deviations(A, blocks, counts)
    assert isinstance(dev, blockops.DeviationStream)
    blockops.STREAM_BYTES = 1 << 30  # (restored by the fixture) the dense reference
    want, _ = directions_and_deviations(A, Ab, counts)
    np.testing.assert_array_equal(got.V, want.V)
    np.testing.assert_allclose(got.noise[:m], want.noise[:m], rtol=1e-10)
    np.testing.assert_allclose(got.t[:m], want.t[:m], rtol=1e-9)
    null = want.noise[m:] ** 2
    np.testing.assert_allclose(got.noise[m:] ** 2, null.mean(), rtol=1e-9)
    np.testing.assert_allclose(got.t[m:], -np.sqrt(got.dof / 2.0), rtol=1e-12)
    np.testing.assert_allclose(want.t[m:], -np.sqrt(want.dof / 2.0), rtol=1e-6)
    assert not got.resolved[m:].any()
