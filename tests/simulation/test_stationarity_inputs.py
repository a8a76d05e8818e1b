"""Bad arguments of ``ds.check_stationarity`` (and a model that is no model in ``ds.simulate``)
are named in a DataError or ModelError — not a NumPy error from inside the checks, and not a
verdict "not checked" for samples that are NaN."""

from __future__ import annotations

import numpy as np
import pytest

import dynosed_sym as ds


@pytest.fixture(scope="module")
def ou(models):
    return models["ou2d"]


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(400, 2))


@pytest.mark.parametrize(
    "samples, shown",
    [
        (np.zeros((0, 2)), r"^X: 0 sample\(s\)"),  # was: ValueError zero-size array
        (np.zeros((50, 3)), r"^X: has 3 columns but model 'ou2d' has 2 state variables"),
        (np.full((50, 2), np.nan), r"^X: 50 row\(s\) contain NaN or inf"),  # was: "not checked"
        (np.r_[np.zeros((5, 2)), [[np.nan, 0.0]]], r"^X: 1 row\(s\) contain NaN or inf \(rows 5"),
        (np.zeros(50), r"^X: expected a 2-D array \(N, 2\)"),
        ([["a", "b"]], r"^X: holds text"),
    ],
)
def test_check_stationarity_names_bad_samples(ou, samples, shown):
    """(empty X: "zero-size array to reduction operation"; 3 columns for d = 2: a matmul
    mismatch; all-NaN X: verdict "not checked", without a word about NaN)"""
    with pytest.raises(ds.DataError, match=shown):
        ds.check_stationarity(ou, ou.nominal, samples)


@pytest.mark.parametrize(
    "groups, shown",
    [
        ([0, 1], r"^groups: expected one group label per row of X \(400 rows\), got shape \(2,\)"),
        (np.zeros((400, 2)), r"^groups: expected one group label .* got shape \(400, 2\)"),
        (np.r_[np.zeros(399), np.nan], r"^groups: label of row 399 is not finite"),
    ],
)
def test_check_stationarity_names_bad_groups(ou, X, groups, shown):
    """(groups=[0, 1] for 400 rows: "array is not broadcastable to correct shape")"""
    with pytest.raises(ds.DataError, match=shown):
        ds.check_stationarity(ou, ou.nominal, X, groups=groups)


@pytest.mark.parametrize(
    "theta_sd, shown",
    [
        ([-1.0, 0.1, 0.1, 0.1], r"^theta_sd: value of 'M11' is -1; standard deviations are ≥ 0"),
        ([0.1, np.nan, 0.1, 0.1], r"^theta_sd: value of 'M12' is nan"),
        (-1.0, r"^theta_sd: expected 4 values \(one per parameter: M11, M12, M21, M22\), got 1"),
        ([1.0, 1.0], r"^theta_sd: expected 4 values .* got 2"),
        (["a", 1, 1, 1], r"^theta_sd: holds text"),
    ],
)
def test_check_stationarity_names_bad_theta_sd(ou, X, theta_sd, shown):
    """(a negative theta_sd was accepted and widened the error bars as if positive; a scalar
    gave an IndexError)"""
    with pytest.raises(ds.DataError, match=shown):
        ds.check_stationarity(ou, ou.nominal, X, theta_sd=theta_sd)


def test_check_stationarity_valid_arguments_still_work(ou, X):
    check = ds.check_stationarity(ou, ou.nominal, X, groups=np.arange(400) // 10)
    assert check.verdict != "not checked" and check.n_groups == 40
    sd = [np.inf, 0.0, 0.1, 0.1]  # inf: a parameter the data do not determine
    assert ds.check_stationarity(ou, ou.nominal, X, theta_sd=sd).variance_rate_se[0] == np.inf
    one = ds.check_stationarity(ou, ou.nominal, X[:1])  # one row: nothing to judge, no error
    assert one.verdict == "not checked"


@pytest.mark.parametrize("model, shown", [(None, "NoneType"), ("models/ou2d.py", "str")])
def test_check_stationarity_and_simulate_of_something_that_is_no_model(X, model, shown):
    """(check_stationarity(None, ...) and simulate(None, ...): AttributeError 'NoneType' object
    has no attribute 'theta_vector' / 'inputs')"""
    expected = r"expected an SDEModel \(ds.load_model\(path\) reads a model file\), got " + shown
    with pytest.raises(ds.ModelError, match=r"^check_stationarity: " + expected):
        ds.check_stationarity(model, [0.5], X)
    with pytest.raises(ds.ModelError, match=r"^simulate: " + expected):
        ds.simulate(model, [0.5], 10)
