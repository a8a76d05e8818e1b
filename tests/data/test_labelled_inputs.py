"""Labelled and masked inputs are read by what they say, or refused (reliability round two).

Found by a reviewer probing the API as a user would: a pandas Series of parameter values was read
by position (its labels ignored), probes chosen on a DataFrame whose columns were in another
order than the model's state were read in the model's order (on Lorenz a fit far from the truth,
called identifiable), a masked array's mask was dropped (its hidden values read as data),
AnnData with a repeated variable name used the last copy, and ``Solver(theta0=…)`` was not
checked at all for an affine drift.  Each is compared against the unlabelled input in the model's
order (the oracle)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.arguments import labelled_values


@pytest.fixture(scope="module")
def ou(models):
    m = models["ou2d"]
    return m, ds.simulate(m, m.nominal, 1500, seed=3)


def test_series_of_parameters_is_read_by_its_labels(ou):
    m, _ = ou
    values = dict(zip(m.param_names, m.nominal))
    reverse = pd.Series(values)[::-1]  # labels in another order than the model's
    np.testing.assert_array_equal(m.theta_vector(reverse), m.nominal)
    np.testing.assert_array_equal(
        m.theta_vector(pd.DataFrame([values])[m.param_names[::-1]]), m.nominal
    )
    # the same draws as the dict (oracle: the keyed form, which was always read by name)
    a = ds.simulate(m, reverse, 50, seed=1)
    np.testing.assert_array_equal(a, ds.simulate(m, values, 50, seed=1))
    # positional labels 0, 1, … stay positional; an unknown label is refused by name
    np.testing.assert_array_equal(m.theta_vector(pd.Series(m.nominal)), m.nominal)
    bad = pd.Series({"foo": 1.0, **dict(list(values.items())[1:])})
    with pytest.raises(ds.ModelError, match="'foo' is not a parameter"):
        m.theta_vector(bad)
    assert labelled_values([1.0, 2.0]) == [1.0, 2.0]


def test_probes_chosen_on_a_reordered_dataframe_are_read_by_name(ou):
    m, X = ou
    frame = pd.DataFrame(X, columns=m.state_names)[m.state_names[::-1]]
    P = ds.choose_probes(frame, 6, seed=2)
    assert list(P.columns) == m.state_names[::-1]
    oracle = ds.fit_local(m, X, ds.choose_probes(X, 6, seed=2))
    np.testing.assert_array_equal(ds.fit_local(m, frame, P).theta, oracle.theta)
    # as balls: restricted rows stay labelled, centres are read by name
    balls = ds.Balls(P, 1.5)
    assert balls.columns == tuple(m.state_names[::-1])
    inside = balls.restrict(frame)
    assert isinstance(inside, pd.DataFrame)
    arr_balls = ds.Balls(ds.choose_probes(X, 6, seed=2), 1.5)
    np.testing.assert_array_equal(inside[m.state_names].to_numpy(), arr_balls.restrict(X))
    np.testing.assert_array_equal(
        ds.fit_local(m, inside, balls).theta,
        ds.fit_local(m, arr_balls.restrict(X), arr_balls).theta,
    )


def test_masked_array_is_refused_not_unmasked(ou):
    m, X = ou
    mask = np.zeros(X.shape, dtype=bool)
    mask[3] = True
    with pytest.raises(ds.DataError, match=r"^X: a masked array with 2 masked entries .*row 3"):
        ds.fit_global(m, np.ma.masked_array(X, mask))
    # nothing masked: the values themselves
    plain = ds.fit_global(m, X).theta
    np.testing.assert_array_equal(ds.fit_global(m, np.ma.masked_array(X)).theta, plain)


def test_anndata_with_a_repeated_variable_name_is_refused(ou):
    anndata = pytest.importorskip("anndata")
    m, X = ou
    ad = anndata.AnnData(np.c_[X, X[:, :1] + 5.0])
    ad.var_names = ["x", "y", "x"]
    with pytest.raises(ds.DataError, match="AnnData has 2 variables named 'x'"):
        ds.fit_global(m, ad)


def test_theta0_is_checked_for_an_affine_drift_too(models):
    m = models["ou2d_m12"]
    X = ds.simulate(m, m.nominal, 500, seed=4)
    for bad, message in (
        ([np.inf], "value of 'M12' is not finite"),
        ({"foo": 1.0}, "'foo' is not a parameter"),
        ([1.0, 2.0], "expected 1 values"),
    ):
        with pytest.raises(ds.ModelError, match=f"theta0: .*{message}"):
            ds.fit_global(m, X, solver=ds.Solver(theta0=bad))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds.fit_global(m, X, solver=ds.Solver(theta0=[0.3]))
    unused = [w for w in caught if "Solver.theta0 is not used" in str(w.message)]
    assert len(unused) == 1 and unused[0].filename == __file__


def test_sparse_matrix_and_unicode_forms_are_named(ou):
    """A scipy.sparse matrix as X (was "holds a value that is not a number: <Compressed Sparse Row
    …>") and a column name in another Unicode form than the state's (was only "no column")."""
    import unicodedata

    import scipy.sparse as sps
    import sympy as sp

    m, X = ou
    with pytest.raises(ds.DataError, match=r"a scipy\.sparse csr_matrix; pass a dense array"):
        ds.fit_global(m, sps.csr_matrix(X))
    c, y, a = sp.symbols("café y a", real=True)
    accented = ds.SDEModel([c, y], [a], [-a * c, -y], diffusion=1, name="accented")
    frame = pd.DataFrame(X, columns=[unicodedata.normalize("NFD", "café"), "y"])
    with pytest.raises(ds.DataError, match="the same text in another Unicode form"):
        ds.fit_global(accented, frame)


def test_scores_radius_that_would_be_ignored_or_misread(ou):
    """Scores.radius with the kernel score (unused) or with the wrong number of entries (two
    radii for six probes passed)."""
    m, X = ou
    P = ds.choose_probes(X, 6, seed=2)
    with pytest.raises(ds.DataError, match="score='kernel' does not use it"):
        ds.fit_local(m, X, P, scores=ds.Scores(radius=1.0))
    with pytest.raises(ds.DataError, match=r"one per probe \(6\), got 2"):
        ds.fit_local(m, X, P, scores=ds.Scores(score="score_matching", radius=[1.0, 2.0]))


def test_probes_with_a_repeated_state_column_are_refused(ou):
    """A probes DataFrame naming a state column twice is refused by name, not read from either
    copy."""
    m, X = ou
    P = pd.DataFrame(X[:5][:, [0, 1, 0]], columns=["x", "y", "x"])
    with pytest.raises(ds.DataError, match="probes: has 2 columns named 'x'"):
        ds.fit_local(m, X, P)


def test_a_named_series_is_read_by_its_name(ou):
    """A pandas Series named 'q' was taken as the data of a model whose single state is 'x' (a
    DataFrame is matched by its column names; the Series' name was ignored)."""
    import sympy as sp

    from dynosed_sym.data import as_samples

    m2, X2 = ou
    x, a = sp.symbols("x a", real=True)
    m = ds.SDEModel([x], [a], [-a * x], diffusion=1, name="series_1d")
    values = X2[:200, 0]
    for fit in (ds.fit_global, lambda m, X: ds.fit_local(m, X, [[0.0]])):
        with pytest.raises(
            ds.DataError,
            match=r"^X: a pandas Series named 'q', but the state variable of model 'series_1d' "
            r"is 'x': a named Series is read by its name, as a DataFrame's columns are; rename "
            r"it \(\.rename\('x'\)\)",
        ):
            fit(m, pd.Series(values, name="q"))
    with pytest.raises(ds.DataError, match=r"a pandas Series named 0 \(int\), but the state"):
        as_samples(pd.DataFrame(values)[0], m)  # (a DataFrame with these columns is refused too)
    with pytest.raises(ds.DataError, match="no column 'x' for state variable 'x'"):
        as_samples(pd.DataFrame(values), m)
    # its own name, or none (a 1-D array), is read as before (oracle: the array itself)
    for series in (pd.Series(values, name="x"), pd.Series(values)):
        np.testing.assert_array_equal(as_samples(series, m), values[:, None])
    with pytest.raises(
        ds.DataError,
        match=r"^X: a pandas Series named 'x' holds one column, but model 'ou2d' has 2 state "
        r"variables \(x, y\): pass a DataFrame",
    ):
        ds.fit_global(m2, pd.Series(values, name="x"))
    # streamed chunks given as named Series are read by their names too (they skipped the check)
    chunks = [pd.Series(values[:100], name="q"), pd.Series(values[100:], name="q")]
    with pytest.raises(ds.DataError, match=r"chunk starting at row 0\): a pandas Series named 'q'"):
        ds.fit_global(m, iter(chunks))


def test_numeric_environment_labels_match_inputs_by_value():
    """An environment column read as floats labels its environments "0.0", "1.0"; ``inputs={0: …,
    1: …}`` named no environment ("inputs: environment '0' has no data (environments: 0.0,
    1.0)").  A key now names the environment whose label is the same number: the fit equals the
    one with the labels written out (the oracle); a number matching no label, or two keys for one
    environment, are still refused by name."""
    x = sp.Symbol("x", real=True)
    k, u = sp.Symbol("k", real=True), sp.Symbol("u", real=True)
    model = ds.SDEModel([x], [k], [-k * x + u], diffusion=1, inputs=[u], name="env_labels")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "x": np.r_[rng.normal(0, 1, 400), rng.normal(2, 1, 400)],
            "env": np.repeat([0.0, 1.0], 400),
        }
    )
    features = ds.Features(n_features=32)
    by_number = ds.fit_global(
        model, frame, inputs={0: {"u": 0.0}, 1: {"u": 2.0}}, env_column="env", features=features
    )
    by_label = ds.fit_global(
        model,
        frame,
        inputs={"0.0": {"u": 0.0}, "1.0": {"u": 2.0}},
        env_column="env",
        features=features,
    )
    np.testing.assert_array_equal(by_number.theta, by_label.theta)
    with pytest.raises(ds.ModelError, match=r"^inputs: environment '2' has no data"):
        ds.fit_global(model, frame, inputs={0: {"u": 0.0}, 2: {"u": 2.0}}, env_column="env")
    with pytest.raises(ds.ModelError, match=r"^inputs: environment '0\.0' is given twice"):
        ds.fit_global(
            model,
            frame,
            inputs={"0": {"u": 0.0}, 0.0: {"u": 0.0}, 1: {"u": 2.0}},
            env_column="env",
        )
