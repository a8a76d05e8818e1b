"""The global route's fill: against a direct NumPy sum, and the same bit for bit on any number of
threads (the feature blocks are split into contiguous parts run on Python threads)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynosed_sym.kernels.stein_fill import FEATURE_BLOCK, SERIAL_PAIRS, accumulate_stein


def _problem(seed, N, d, n_blocks, k_sin, k_cos, n_groups):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, d))
    phi_s = rng.normal(size=(N, k_sin))
    phi_c = rng.normal(size=(N, k_cos))
    inner = np.sort(rng.integers(0, N + 1, size=n_groups - 1))
    edges = np.concatenate([[0], inner, [N]]).astype(np.int64)
    Wt = rng.normal(size=(n_blocks, d, FEATURE_BLOCK))
    ct = rng.uniform(size=(n_blocks, FEATURE_BLOCK))
    return X, phi_s, phi_c, edges, Wt, ct


def _fill(problem, threads):
    X, phi_s, phi_c, edges, Wt, ct = problem
    G, B = edges.size - 1, Wt.shape[0]
    P_s = np.zeros((G, B, phi_s.shape[1], FEATURE_BLOCK))
    P_c = np.zeros((G, B, phi_c.shape[1], FEATURE_BLOCK))
    accumulate_stein(X, phi_s, phi_c, edges, Wt, ct, P_s, P_c, threads=threads)
    return P_s, P_c


def _numpy_fill(problem):
    """Σ_{i in block g} sin/cos(2π(Wt[blk]ᵀx_i + ct[blk])) · phi[i, e], directly."""
    X, phi_s, phi_c, edges, Wt, ct = problem
    phase = 2 * np.pi * (np.einsum("nj,bjq->nbq", X, Wt) + ct[None])  # (N, B, FB)
    sums = []
    for trig, phi in ((np.sin, phi_s), (np.cos, phi_c)):
        t = trig(phase)
        sums.append(
            np.stack(
                [np.einsum("nbq,ne->beq", t[lo:hi], phi[lo:hi]) for lo, hi in zip(edges, edges[1:])]
            )
        )
    return sums


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    N=st.integers(1, 60),
    d=st.integers(1, 4),
    n_blocks=st.integers(1, 5),
    k=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    n_groups=st.integers(1, 4),
)
def test_fill_equals_numpy_and_is_the_same_on_any_number_of_threads(
    seed, N, d, n_blocks, k, n_groups
):
    problem = _problem(seed, N, d, n_blocks, k[0], k[1], n_groups)
    one = _fill(problem, 1)
    want = _numpy_fill(problem)
    for got, ref in zip(one, want):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1, N))
    for threads in (2, 3, n_blocks + 2):  # uneven parts, and more threads than blocks
        for a, b in zip(one, _fill(problem, threads)):
            assert np.array_equal(a, b), f"the fill depends on the split ({threads} threads)"


def test_default_threads_above_the_serial_size():
    """Large enough to run on threads by default (SERIAL_PAIRS): still the one-thread sums."""
    N = SERIAL_PAIRS // (3 * FEATURE_BLOCK) + 7
    problem = _problem(5, N, 3, 3, 2, 1, 3)
    for a, b in zip(_fill(problem, 1), _fill(problem, None)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2"])
def test_threads_must_be_a_positive_integer(threads):
    problem = _problem(0, 10, 2, 2, 1, 1, 1)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        _fill(problem, threads)
