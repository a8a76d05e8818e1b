"""Data in (DataFrames by column name, AnnData) and results out (table, DataFrame, JSON, equations).

Oracle for the inputs: the fit of the matching NumPy array in ``model.state`` order — the same
numbers must reach the kernels, so the systems agree to the last bit (conftest's
``assert_same_system`` at its default 1e-12, which these equalities meet with zero difference).
"""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
from conftest import assert_same_system, ou_stationary_samples

import dynosed_sym as ds
from dynosed_sym.data import from_anndata

pd = pytest.importorskip("pandas")

M_OU = np.array([[-1.0, 0.5], [-0.5, -1.0]])


@pytest.fixture(scope="module")
def ou(models):
    return models["ou2d"]


@pytest.fixture(scope="module")
def X_ou():
    return ou_stationary_samples(M_OU, 1.0, 3000, seed=11)


def _shuffled_frame(X, rng):
    """DataFrame with the state columns in reverse order among unrelated extra columns."""
    n = X.shape[0]
    return pd.DataFrame(
        {
            "cell_id": np.arange(n),
            "y": X[:, 1],
            "batch": rng.integers(0, 3, n),
            "noise": rng.standard_normal(n),
            "x": X[:, 0],
        }
    )


def test_dataframe_with_shuffled_and_extra_columns_gives_the_array_fit(ou, X_ou, rng):
    df = _shuffled_frame(X_ou, rng)
    ref = ds.fit_global(ou, X_ou, features=ds.Features(n_features=256, seed=0))
    assert_same_system(ds.fit_global(ou, df, features=ds.Features(n_features=256, seed=0)), ref)
    np.testing.assert_array_equal(
        ds.fit_global(ou, df, features=ds.Features(n_features=256, seed=0)).theta, ref.theta
    )
    # the same frame streamed in chunks of rows (column selection per chunk); an iterator of
    # unknown length gets other noise blocks, which the U-statistic's correction depends on: the
    # block-free V-statistic fit is the one to compare
    chunks = [df.iloc[i : i + 700] for i in range(0, len(df), 700)]
    streamed = ds.fit_global(
        ou,
        iter(chunks),
        features=ds.Features(n_features=256, seed=0),
        solver=ds.Solver(statistic="v"),
    )
    ref_v = ds.fit_global(
        ou, X_ou, features=ds.Features(n_features=256, seed=0), solver=ds.Solver(statistic="v")
    )
    np.testing.assert_allclose(streamed.theta, ref_v.theta, rtol=1e-10)
    # local route, probes given as points
    probes = X_ou[:5]
    loc_ref = ds.fit_local(ou, X_ou, probes, scores=ds.Scores(temperature=4.0))
    loc = ds.fit_local(ou, df, probes, scores=ds.Scores(temperature=4.0))
    np.testing.assert_array_equal(loc.theta, loc_ref.theta)


def test_dataframe_missing_state_column_is_named(ou, X_ou):
    df = pd.DataFrame({"x": X_ou[:, 0], "Y": X_ou[:, 1]})
    with pytest.raises(
        ds.DataError,
        match=r"no column 'y'.*columns: 'x', 'Y'\); column 'Y' differs from 'y' in case",
    ):
        ds.fit_global(ou, df, features=ds.Features(n_features=16))


# --------------------------------------------------------------------------- AnnData
def test_anndata_state_columns_by_name_layer_and_mapping(ou, X_ou, rng):
    anndata = pytest.importorskip("anndata")
    import scipy.sparse as sps

    n = X_ou.shape[0]
    genes = np.column_stack([rng.standard_normal(n), X_ou[:, 1], X_ou[:, 0]])
    adata = anndata.AnnData(X=genes, var=pd.DataFrame(index=["Gapdh", "y", "x"]))
    adata.layers["counts"] = sps.csr_matrix(2.0 * genes)
    np.testing.assert_array_equal(from_anndata(adata, ou), X_ou)
    np.testing.assert_array_equal(from_anndata(adata, ou, layer="counts"), 2.0 * X_ou)
    np.testing.assert_array_equal(
        from_anndata(adata, ou, var_names={"y": "Gapdh"}),
        np.column_stack([X_ou[:, 0], genes[:, 0]]),
    )
    np.testing.assert_array_equal(from_anndata(adata, ou, var_names=["y", "x"]), X_ou[:, ::-1])
    ref = ds.fit_global(ou, X_ou, features=ds.Features(n_features=256, seed=0))
    # AnnData as X
    assert_same_system(ds.fit_global(ou, adata, features=ds.Features(n_features=256, seed=0)), ref)
    with pytest.raises(ds.DataError, match="no layer 'spliced'.*counts"):
        from_anndata(adata, ou, layer="spliced")
    with pytest.raises(ds.DataError, match="no variable 'Pax5' for state variable 'x'"):
        from_anndata(adata, ou, var_names={"x": "Pax5"})
    with pytest.raises(ds.DataError, match="'z' is not a state variable"):
        from_anndata(adata, ou, var_names={"z": "x"})


# --------------------------------------------------------------------------- results out
@pytest.fixture(scope="module")
def ou_fit(ou, X_ou):
    return ds.fit_global(ou, X_ou, features=ds.Features(n_features=256, seed=0))


def test_to_dataframe_matches_report(ou, ou_fit):
    df = ou_fit.to_dataframe(truth=ou.nominal)
    rep = ou_fit.report
    assert list(df.index) == ou.param_names
    np.testing.assert_array_equal(df["estimate"], ou_fit.theta)
    np.testing.assert_array_equal(df["truth"], ou.nominal)
    np.testing.assert_array_equal(df["std_error"], rep.std_errors)
    np.testing.assert_array_equal(df[["ci_low", "ci_high"]].to_numpy(), rep.ci)
    np.testing.assert_array_equal(df["freeness"], rep.freeness)
    np.testing.assert_array_equal(df["freeness_normalised"], rep.freeness_normalised)
    # the all-free OU: M12 and M21 are the unidentifiable pair (rank 3 of 4)
    assert rep.rank == 3
    assert df["identifiable"].tolist() == [nm not in rep.free_params for nm in ou.param_names]
    assert df["identifiable"].tolist() == [True, False, False, True]


def test_to_json_round_trip_is_strict_json(ou, ou_fit, tmp_path):
    path = tmp_path / "fit.json"
    text = ou_fit.to_json(path)
    assert path.read_text().strip() == text
    rec = json.loads(text)  # strict: would fail on NaN/Infinity tokens
    assert "Infinity" not in text and "NaN" not in text
    assert rec["model"] == "ou2d" and rec["route"] == "global" and rec["n_samples"] == 3000
    assert rec["report"]["rank"] == 3 and rec["report"]["free_params"] == ou_fit.report.free_params
    d = ou_fit.to_dict()
    for k, p in enumerate(rec["parameters"]):
        assert p["name"] == ou.param_names[k]
        assert p["estimate"] == ou_fit.theta[k]
        se = ou_fit.std_errors[k]
        assert (p["std_error"] is None) == (not math.isfinite(se))  # inf → null in JSON
        assert d["parameters"][k]["std_error"] == se  # to_dict keeps inf
    assert rec["settings"]["m"] == 256


def test_summary_table_has_the_columns(ou_fit):
    text = ou_fit.summary()
    head = text.splitlines()[1]
    for col in ("estimate", "std.err", "CI", "freeness", "identifiable"):
        assert col in head
    rows = {ln.split()[0]: ln for ln in text.splitlines()[3:7]}
    # the identifiable column: "no (flat)" / "no (≥k× N)" / "no (≈a–b× N)" or "yes ±p%"
    assert re.search(r"  no( \((flat|[≈≥]\S+× N)\))?$", rows["M12"].rstrip())
    assert re.search(r"  yes ±[0-9.e+]+%$", rows["M11"].rstrip())


def test_equations_are_readable(models):
    lor = models["lorenz"]
    text = lor.equations()
    lines = text.splitlines()
    assert lines[0] == "dx = sigma*(-x + y) dt + √(3/5) dW_x"
    assert lines[2] == "dz = (-beta*z + x*y) dt + √(3/5) dW_z"
    assert lines[3] == "D = 3/10 · I (3×3)"
    assert lines[4].startswith("parameters (3): sigma = 10, rho = 28, beta = 2.667")
    assert str(lor).splitlines()[1:] == lines
    assert (
        repr(lor) == "SDEModel(name='lorenz', state=[x, y, z], params=[sigma, rho, beta], d=3, n=3)"
    )
    import sympy as sp

    x, y, a = sp.symbols("x y a", real=True)
    g = ds.SDEModel([x, y], [a], [-a * x, -y], noise=[[1, x], [0, 1]], name="g")
    assert g.equations().splitlines()[:3] == [
        "dx = -a*x dt + 1·dW1 + x·dW2",
        "dy = -y dt + 1·dW2",
        "G: 2×2, D = ½GGᵀ",
    ]
    big = models["grn_bcell"]
    assert repr(big).endswith("W[1,0], ...], d=7, n=21)")


# --------------------------------------------------------------------------- progress and compile
# note
def test_simulate_progress_batches_give_the_same_samples(models):
    m = models["ou2d_m12"]
    a = ds.simulate(
        m, m.nominal, 1200, burn_in=50, n_chains=600, seed=5, execution=ds.Execution(progress=False)
    )
    b = ds.simulate(
        m, m.nominal, 1200, burn_in=50, n_chains=600, seed=5, execution=ds.Execution(progress=True)
    )
    np.testing.assert_array_equal(a, b)


def test_first_compile_note(models, tmp_path, capsys, monkeypatch):
    from dynosed_sym.progress import cold_kernels, note_first_compile

    monkeypatch.delenv("DYNOSED_QUIET", raising=False)
    m = models["ou2d_m12"]
    cm = ds.compile_model(m, str(tmp_path))  # a new folder: nothing cached
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "first use of model 'ou2d_m12'" in err and "Numba" in err
    cold, total = cold_kernels(cm.module)
    assert total > 0 and len(cold) == total
    cm.drift(np.zeros((3, 2)), m.nominal)  # compiles and caches one kernel
    cold, _ = cold_kernels(cm.module)
    assert "drift" not in cold
    buf = io.StringIO()
    assert note_first_compile(cm.module, m.name, stream=buf) is False and buf.getvalue() == ""
    monkeypatch.setenv("DYNOSED_QUIET", "1")
    fresh = ds.compile_model(m, str(tmp_path / "other"))
    assert capsys.readouterr().err == "" and fresh.module is not cm.module
