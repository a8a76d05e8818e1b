"""Block means in face-splitting form (a matrix model W·φ(x)): the solve's noise statistics from
the two factors (dynosed_sym.solve.facesplit) against explicit NumPy products of the dense block
deviations, the solve and intervals equal to the dense Grams' path to rounding, the same bit for
bit on any number of threads, and the factors' bookkeeping (a derived array is plain; the solve's
in-place scaling restores them exactly).  The assembled factors of a compiled network model are
checked in tests/assembly/test_block_means.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close_to_scale
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix

from dynosed_sym.assembly.facesplit import (
    FaceSplit,
    FaceSplitArray,
    face_split_of,
    with_face_split,
)
from dynosed_sym.solve import directions as directions_module
from dynosed_sym.solve import facesplit as facesplit_module
from dynosed_sym.solve import grams as grams_module
from dynosed_sym.solve.directions import directions_and_deviations
from dynosed_sym.solve.facesplit import FaceSplitGrams, feature_parts
from dynosed_sym.solve.grams import BlockGrams
from dynosed_sym.solve.ustat import solve_system
from dynosed_sym.solve.weak import weak_intervals


def _embedding(rng, R, K, n):
    """A random sparse (R·K, n) map: each column one or two product columns with coefficients
    (a parameter in one term, or in two rows or features)."""
    src, dst = [], []
    for c, first in enumerate(rng.permutation(R * K)[:n]):
        src.append(first)
        dst.append(c)
        if rng.random() < 0.4:
            src.append(int(rng.integers(0, R * K)))
            dst.append(c)
    coef = rng.uniform(0.5, 2.0, len(src)) * rng.choice([-1.0, 1.0], len(src))
    return csr_matrix((coef, (src, dst)), shape=(R * K, n))


def _system(seed, B, m, R, K, size=37.0, noise=0.2, n=None):
    """A face-split system: A_b[k, r·K + f] = a[k, r]·P_b[f, k] — or, with ``n`` columns, its
    columns mapped by a random sparse embedding E (A_b = Ã_b E) —, b_b from a θ plus noise."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, R)) * size
    P0 = rng.standard_normal((K, m))
    P = P0[None] + noise * rng.standard_normal((B, K, m))
    fs = FaceSplit(a, P, None if n is None else _embedding(rng, R, K, n))
    dense = np.stack([fs.block(k) for k in range(B)])
    counts = rng.integers(50, 150, B).astype(float)
    w = counts / counts.sum()
    A = np.einsum("b,bmn->mn", w, dense)
    b_blocks = dense @ rng.standard_normal(dense.shape[2]) + rng.standard_normal((B, m))
    return A, w @ b_blocks, with_face_split(dense, fs), b_blocks, counts


def _close(got, want, rtol=1e-9):
    assert_close_to_scale(got, want, rtol, atol_scale=1e-11)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(2, 7),
    R=st.integers(1, 3),
    K=st.integers(1, 4),
    extra=st.integers(0, 8),
    embed=st.booleans(),
)
def test_statistics_equal_the_direct_products(seed, B, R, K, extra, embed):
    """S, vSv, the direction forms, the curvature and unresolved noise of random face-split block
    means (m ≥ n) against loops over the dense deviations ΔA_b = A_b − A; with ``embed`` the
    block means are a sparse map of the product's columns (A_b = Ã_b E, n ≤ R·K)."""
    n = max(1, (R * K * 2) // 3) if embed else R * K
    A, _, Ab, _, counts = _system(seed, B, n + extra, R, K, n=n if embed else None)
    w = counts / counts.sum()
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    V = Vt.T
    g = FaceSplitGrams.compute(A, face_split_of(Ab), U, s, V, w)
    dA = [np.asarray(Ab[k]) - A for k in range(B)]
    _close(g.S, sum(w[k] * dA[k].T @ dA[k] for k in range(B)))
    assert np.array_equal(g.S, g.S.T)  # spread from the symmetric pairs: exactly symmetric
    _close(
        g.vSv(), [sum(w[k] * np.sum((dA[k] @ V[:, i]) ** 2) for k in range(B)) for i in range(n)]
    )
    _close(g.proj(), [[(A @ V[:, i]) @ (dA[k] @ V[:, i]) for i in range(n)] for k in range(B)])
    rng = np.random.default_rng(seed + 1)
    Hp = rng.standard_normal((n, n))
    Hp = Hp @ Hp.T
    cols = np.flatnonzero(rng.random(n) < 0.7)
    scale = 2.0 ** rng.integers(-3, 4)
    curv = g.curvature_noise(A, Hp, cols, scale)
    want = np.zeros((B, n))
    for j in cols:
        want[:, j] = [scale * (A @ Hp[:, j]) @ (dA[k] @ Hp[:, j]) for k in range(B)]
    _close(curv, want)
    k_u = int(rng.integers(0, n + 1))
    VU = V[:, n - k_u :]
    tau2 = rng.uniform(0.5, 2.0, k_u)
    got = g.unresolved_noise(A, Hp, VU, tau2, w, cols, scale)
    want = np.zeros(n)
    for j in cols:
        p = Hp[:, j]
        X = [scale * ((dA[k] @ p) @ (A @ VU) + (A @ p) @ (dA[k] @ VU)) for k in range(B)]
        want[j] = sum(w[k] * np.sum(X[k] ** 2 * tau2) for k in range(B)) / (B - 1)
    _close(got, want)


@pytest.fixture
def dense_grams(monkeypatch):
    """The dense Grams' path (the factors ignored)."""

    def switch():
        monkeypatch.setattr(directions_module, "face_split_of", lambda blocks: None)

    return switch


CASES = [(0, 12, 24, 3, 5), (1, 32, 40, 4, 4), (2, 6, 18, 2, 6), (3, 20, 20, 4, 5)]
#: ... with n columns embedded from the product's (the last two entries of each: R·K and n)
EMBEDDED = [(4, 12, 30, 4, 5, 14), (5, 20, 40, 5, 6, 21)]


@pytest.mark.parametrize("case", CASES + EMBEDDED)
@pytest.mark.parametrize("estimator", ["resolved", "ridge"])
def test_solve_equals_the_dense_grams_path(case, estimator, dense_grams):
    """Directions, estimate, bread, jackknife and the intervals (free parameters aside: their
    noise is not computed, as with streamed deviations) equal the BlockGrams path's — also for
    block means that are a sparse map of the product's columns."""
    A, b, Ab, bb, counts = _system(*case[:5], n=case[5] if len(case) > 5 else None)
    fast = solve_system(A, b, Ab, bb, counts, 1e-3, estimator=estimator)
    dense_grams()
    slow = solve_system(A, b, Ab, bb, counts, 1e-3, estimator=estimator)
    np.testing.assert_array_equal(fast.directions.resolved, slow.directions.resolved)
    for name in ("singular_values", "noise", "kappa", "kappa_sd", "t"):
        _close(getattr(fast.directions, name), getattr(slow.directions, name))
    for name in ("theta", "bread", "theta_resolved", "second_order"):
        _close(getattr(fast, name), getattr(slow, name), rtol=1e-8)
    if slow.jackknife is not None:
        _close(fast.jackknife.bias, slow.jackknife.bias, rtol=1e-7)
    if estimator == "resolved":
        assert isinstance(fast.deviations.dAV, FaceSplitGrams)
        assert type(slow.deviations.dAV) is BlockGrams
        args = (A, b, fast.theta_resolved, fast.theta, (Ab, bb, counts), fast.bread, fast.fill)
        free = np.zeros(A.shape[1], bool)
        free[::3] = True
        got = weak_intervals(*args, 0.3, 2.1, free, deviations=fast.deviations)
        args = (A, b, slow.theta_resolved, slow.theta, (Ab, bb, counts), slow.bread, slow.fill)
        want = weak_intervals(*args, 0.3, 2.1, free, deviations=slow.deviations)
        kept = ~free
        np.testing.assert_array_equal(np.isfinite(got.ci), np.isfinite(want.ci))
        finite = np.isfinite(want.ci)
        _close(got.ci[finite], want.ci[finite], rtol=1e-8)
        for name in ("se", "c", "gamma", "noise", "bias_sd"):  # the free ones' are not computed
            _close(getattr(got, name)[kept], getattr(want, name)[kept], rtol=1e-8)
        assert np.all(got.noise[free] == 0.0)


@pytest.mark.parametrize("budget", [facesplit_module.PART_BYTES, 8 * 20 * 9])
def test_the_same_on_any_number_of_threads(budget, monkeypatch):
    """Bit for bit: the feature parts are fixed by the shapes and summed in part order; a small
    budget forces many parts."""
    A, _, Ab, _, counts = _system(11, 9, 60, 3, 3)
    w = counts / counts.sum()
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    monkeypatch.setattr(facesplit_module, "PART_BYTES", budget)
    monkeypatch.setattr(grams_module, "THREADED_OPS", 0)
    Hp = np.eye(9) + 0.1
    cols, VU, tau2 = np.arange(9), Vt.T[:, 6:], np.ones(3)
    results = []
    for workers in (1, 2, 3):
        monkeypatch.setattr(grams_module, "_workers", lambda w_, n_parts, k=workers: k)
        g = FaceSplitGrams.compute(A, face_split_of(Ab), U, s, Vt.T, w)
        results.append(
            (
                g.S,
                g.proj(),
                g.curvature_noise(A, Hp, cols, 1.0),
                g.unresolved_noise(A, Hp, VU, tau2, w, cols, 1.0),
            )
        )
    for other in results[1:]:
        for x, y in zip(other, results[0]):
            np.testing.assert_array_equal(x, y)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 5000), row_bytes=st.integers(1, 10**7))
def test_feature_parts_cover_the_features(m, row_bytes):
    parts = feature_parts(m, row_bytes)
    assert parts[0][0] == 0 and parts[-1][1] == m
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    step = parts[0][1] - parts[0][0]
    assert step == min(m, 8) or step * row_bytes <= facesplit_module.PART_BYTES
    # at least MIN_PARTS parts where the features allow parts of 8
    assert len(parts) >= min(facesplit_module.MIN_PARTS, -(-m // 8))


def test_derived_arrays_do_not_keep_the_factors():
    """Only the array the factors describe carries them: a slice, a product, a copy are plain."""
    _, _, Ab, _, _ = _system(4, 5, 12, 2, 3)
    assert isinstance(Ab, FaceSplitArray) and face_split_of(Ab) is not None
    for derived in (Ab[1:3], Ab * 2.0, Ab.copy(), Ab @ np.ones(6), Ab - Ab.mean(axis=0)):
        assert face_split_of(derived) is None
    assert type(Ab * 2.0) is np.ndarray and type(Ab.sum()) is not FaceSplitArray
    with pytest.raises(ValueError, match="face-split factors of shape"):
        with_face_split(np.zeros((5, 12, 5)), face_split_of(Ab))


@pytest.mark.parametrize("size", [1e5, 1e-5])
def test_solve_restores_the_block_means_and_factors(size):
    """The solve scales the block means (in place for a ≤ 1, a copy otherwise) and their factors
    to unit size: afterwards both are the caller's, bit for bit."""
    A, b, Ab, bb, counts = _system(6, 10, 20, 2, 3, size=size)
    before, fs = np.asarray(Ab).copy(), face_split_of(Ab)
    P_before = fs.P.copy()
    est = solve_system(A, b, Ab, bb, counts, 0.0)
    assert isinstance(est.deviations.dAV, FaceSplitGrams)
    np.testing.assert_array_equal(np.asarray(Ab), before)
    assert face_split_of(Ab) is fs
    np.testing.assert_array_equal(fs.P, P_before)
    assert not Ab.flags.writeable  # locked again after the solve's in-place scaling


def test_the_described_array_cannot_be_written():
    """A write into the array or a view of it would leave the factors describing other numbers
    (the review found ``Ab[0] *= 2`` made ``Ab @ θ`` wrong by half its size): refused."""
    _, _, Ab, _, _ = _system(8, 4, 10, 2, 3)
    for write in (
        lambda: Ab.__setitem__((0, 0, 0), 1.0),
        lambda: Ab[0].__imul__(2.0),
        lambda: Ab.__iadd__(1.0),
        lambda: np.multiply(Ab, 2.0, out=Ab),
    ):
        with pytest.raises(ValueError, match="read-only"):
            write()
    np.testing.assert_allclose(Ab @ np.ones(6), np.asarray(Ab) @ np.ones(6), rtol=1e-13)


def test_directions_use_the_factors_only_when_dense_and_tall():
    """m < n (more parameters than features) keeps the block-deviation path."""
    A, _, Ab, _, counts = _system(7, 6, 5, 2, 4)
    _, dAV = directions_and_deviations(A, Ab, counts)
    assert isinstance(dAV, np.ndarray)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    B=st.integers(1, 6),
    R=st.integers(1, 4),
    K=st.integers(1, 4),
    m=st.integers(1, 12),
    k=st.integers(1, 5),
    embed=st.booleans(),
)
def test_block_products_from_the_factors_equal_the_dense_ones(seed, B, R, K, m, k, embed):
    """``A_blocks @ θ``, ``A_blocks @ V`` and blockops' per-block products read from the factors
    equal NumPy's products of the dense array (to rounding), as plain arrays; with ``embed`` for
    block means that are a sparse map of the product's columns."""
    from dynosed_sym.solve import blockops

    rng = np.random.default_rng(seed)
    n = max(1, R * K - int(rng.integers(0, R * K))) if embed else R * K
    E = _embedding(rng, R, K, n) if embed else None
    fs = FaceSplit(rng.standard_normal((m, R)), rng.standard_normal((B, K, m)), E)
    Ab = with_face_split(np.stack([fs.block(b) for b in range(B)]), fs)
    dense = np.asarray(Ab).view(np.ndarray)
    if embed:  # the dense blocks themselves against Ã_b E formed here
        full = FaceSplit(fs.a, fs.P)
        _close(dense, np.stack([full.block(b) @ E.toarray() for b in range(B)]), rtol=1e-12)
    theta, V = rng.standard_normal(n), rng.standard_normal((n, k))
    Y, Yn, y = rng.standard_normal((B, m)), rng.standard_normal((B, n)), rng.standard_normal(m)
    pairs = [
        (Ab @ theta, dense @ theta),
        (Ab @ V, dense @ V),
        (blockops.blocks_times(Ab, V), dense @ V),
        (blockops.each_times(Ab, Yn), np.einsum("bmn,bn->bm", dense, Yn)),
        (blockops.each_rtimes(Ab, Y), np.einsum("bmn,bm->bn", dense, Y)),
        (blockops.all_rtimes(Ab, y), np.einsum("bmn,m->bn", dense, y)),
    ]
    for got, want in pairs:
        assert type(got) is np.ndarray and got.shape == want.shape
        _close(got, want, rtol=1e-10)
    assert type(Ab @ np.ones((1, n, 2))) is np.ndarray  # a stack: NumPy's own product
