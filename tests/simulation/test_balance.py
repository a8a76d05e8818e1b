"""The variance balance along a direction of θ (``simulation/balance.py``).

Oracles: exact stationary samples of Ornstein–Uhlenbeck processes (Gaussian laws with the
Lyapunov covariance), whose balance holds at the true parameters; a brute-force scan of the
defining inequality over a grid of components, from per-row moments computed here in NumPy;
a rotation, which leaves an isotropic Gaussian law unchanged and so cannot be seen.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import dynosed_sym as ds
from dynosed_sym.simulation.balance import BALANCE_LEVEL, balance_sets, outside

x, y = sp.symbols("x y")
k, g, w = sp.symbols("k g w")


@pytest.fixture(scope="module")
def ou1():
    return ds.SDEModel(state=[x], drift=[-k * x], params=[k], diffusion=[[0.5]], name="bal_ou1")


@pytest.fixture(scope="module")
def rot():
    drift = [-g * x + w * y, -g * y - w * x]
    return ds.SDEModel(
        state=[x, y], drift=drift, params=[g, w], diffusion=[[0.5, 0], [0, 0.5]], name="bal_rot"
    )


def _groups(n, blocks=32):
    return np.arange(n) * blocks // n


def test_set_matches_a_scan_of_its_inequality(ou1):
    """The set's ends are where (ā + c b̄)² = z²·Var(ā + c b̄), with the moments and their
    variances from the group means computed here."""
    rng = np.random.default_rng(3)
    X = rng.normal(0.0, 0.4, (3200, 1))
    G = _groups(3200)  # equal groups
    theta0 = 0.7
    (s,) = balance_sets(ou1, [theta0], X, G, np.ones((1, 1)))
    xc = X[:, 0] - X[:, 0].mean()
    a = 2 * (-theta0 * X[:, 0]) * xc + 2 * 0.5
    b = 2 * (-X[:, 0]) * xc
    am = np.array([a[G == j].mean() for j in range(32)])
    bm = np.array([b[G == j].mean() for j in range(32)])
    C = np.cov(np.vstack([am, bm])) / 32  # equal groups: the covariance of the two means
    z = norm.ppf(1 - (1 - BALANCE_LEVEL) / 2)
    grid = np.linspace(-3, 3, 600001)
    inside = (a.mean() + grid * b.mean()) ** 2 <= z**2 * (
        C[0, 0] + 2 * grid * C[0, 1] + grid**2 * C[1, 1]
    )
    assert len(s) == 1
    lo, hi = s[0]
    assert grid[inside].min() == pytest.approx(lo, abs=2e-5)
    assert grid[inside].max() == pytest.approx(hi, abs=2e-5)


@settings(max_examples=25, deadline=None)
@given(rate=st.floats(0.2, 5.0), start=st.floats(-2.0, 2.0), seed=st.integers(0, 2**31 - 1))
def test_the_set_of_total_components_does_not_depend_on_where_it_is_taken(ou1, rate, start, seed):
    """The drift is affine in θ: the set of θ + c (the total component) taken at any θ is the
    one taken at 0, and it is bounded (the balance sees the rate)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, np.sqrt(0.5 / rate), (2000, 1))
    (s0,) = balance_sets(ou1, [0.0], X, _groups(2000), np.ones((1, 1)))
    (s1,) = balance_sets(ou1, [start], X, _groups(2000), np.ones((1, 1)))
    assert len(s0) == len(s1) == 1
    np.testing.assert_allclose(np.array(s1[0]) + start, s0[0], rtol=1e-9, atol=1e-9)
    assert np.isfinite(s0[0]).all()


def test_coverage_of_the_true_component_over_many_data_sets(ou1):
    """Pooled over 300 exact data sets the 99 % sets cover the true component at least 97 % of the
    time (binomial sd 0.6 %)."""
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(300):
        X = rng.normal(0.0, np.sqrt(0.5 / 1.5), (2000, 1))
        (s,) = balance_sets(ou1, [0.0], X, _groups(2000), np.ones((1, 1)))
        hits += not outside(s, 1.5, 1.5)
    assert hits >= 291


def test_a_rotation_is_not_seen(rot):
    """An isotropic Gaussian law is the stationary law at any rotation w: the balance gives the
    whole line along w, a bounded set along the decay g (holding its truth 1)."""
    rng = np.random.default_rng(5)
    X = rng.normal(0.0, np.sqrt(0.5), (5000, 2))
    s_g, s_w = balance_sets(rot, [0.0, 0.0], X, _groups(5000), np.eye(2))
    assert s_w == [(-np.inf, np.inf)]
    assert not outside(s_g, 1.0, 1.0) and np.isfinite(s_g[0]).all()


def test_nuisance_and_test_mask(rot):
    """An unbounded nuisance along a direction the balance sees removes every coordinate it
    moves: the tested direction's set is then the whole line; untested directions get None."""
    rng = np.random.default_rng(6)
    X = rng.normal(0.0, np.sqrt(0.5), (5000, 2))
    both = np.array([[1.0, 1.0], [0.0, 1.0]]) / np.array([1.0, np.sqrt(2)])
    sets = balance_sets(rot, [0.0, 0.0], X, _groups(5000), both, nuisance=[np.inf, 0.1])
    assert sets[1] == [(-np.inf, np.inf)]  # g enters both coordinates through direction 0
    masked = balance_sets(rot, [0.0, 0.0], X, _groups(5000), both, test=[False, True])
    assert masked[0] is None and masked[1] is not None
    # a nuisance the balance does not see moves nothing: the set along g is unchanged
    alone = balance_sets(rot, [0.0, 0.0], X, _groups(5000), np.eye(2))
    with_w = balance_sets(rot, [0.0, 0.0], X, _groups(5000), np.eye(2), nuisance=[0.1, np.inf])
    assert with_w[0] == alone[0]


def test_outside():
    assert outside([], 0.0, 1.0)
    assert outside([(2.0, 3.0)], -1.0, 1.0)
    assert not outside([(0.5, 3.0)], -1.0, 1.0)
    assert not outside([(-np.inf, np.inf)], 5.0, 6.0)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(-250, 250))
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_sets_scale_exactly_with_the_data(ou1, m):
    """x ↦ s·x (s = 2^m) with θ ↦ θ/s² leaves ā unchanged and scales b̄ by s²: the set of c
    scales by 1/s², bit for bit, without NumPy's overflow warnings (b̄² at data × 1e80 is beyond
    double range unless the moments are taken in units of powers of two)."""
    rng = np.random.default_rng(2)
    X = rng.normal(0.0, 0.5, (2000, 1))
    s = 2.0**m
    (ref,) = balance_sets(ou1, [0.3], X, _groups(2000), np.ones((1, 1)), cov=[[1e-4]])
    (got,) = balance_sets(
        ou1, [0.3 / s**2], X * s, _groups(2000), np.ones((1, 1)), cov=[[1e-4 / s**4]]
    )
    np.testing.assert_array_equal(np.array(got), np.array(ref) / s**2)
