"""The Dask backend against a real ``distributed.LocalCluster`` (2 worker processes).

What must hold: the same θ̂ (and A, b) as in-process to 1e-12 relative for a dask array, a
``.npy`` path, Zarr/HDF5 files and a scattered in-memory array; the same bits on every run
(partial sums are reduced in row order whatever order the tasks finish in); errors raised on
a worker reach the caller; simulator chains spread over workers give exactly the in-process
samples.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import dynosed_sym as ds

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from conftest import assert_same_system  # noqa: E402

from dynosed_sym.backends import dask as dd  # noqa: E402

M = 256


@pytest.fixture(scope="module")
def lorenz(models):
    return models["lorenz"]


@pytest.fixture(scope="module")
def X(lorenz):
    return ds.simulate(lorenz, lorenz.nominal, 6000, n_chains=300, burn_in=2000, thin=5, seed=7)


@pytest.fixture(scope="module")
def fit_mem(lorenz, X):
    return ds.fit_global(lorenz, X, features=ds.Features(n_features=M, seed=2))


def assert_same_fit(fit, ref, rtol=1e-12):
    assert_same_system(fit, ref, rtol)
    np.testing.assert_allclose(fit.report.singular_noise, ref.report.singular_noise, rtol=1e-10)
    assert fit.report.rank == ref.report.rank


def test_local_scheduler_without_client(lorenz, X, fit_mem):
    """No distributed client: the tasks run on Dask's local threaded scheduler."""
    if dd.get_client() is not None:  # pragma: no cover - only when run after the cluster tests
        pytest.skip("a distributed client is already the default")
    fit = ds.fit_global(
        lorenz, da.from_array(X, chunks=(900, 3)), features=ds.Features(n_features=M, seed=2)
    )
    assert fit.info["input"] == "dask"
    assert_same_fit(fit, fit_mem)
    Xd = da.from_array(X, chunks=(700, 2))  # split columns are joined; unknown chunk sizes computed
    assert_same_fit(
        ds.fit_global(lorenz, Xd[Xd[:, 0] > -1e300], features=ds.Features(n_features=M, seed=2)),
        fit_mem,
    )
    local = ds.fit_global(
        lorenz,
        Xd,
        features=ds.Features(n_features=M, seed=2),
        execution=ds.Execution(backend="local", chunk_rows=1000),
    )
    assert local.info["input"] == "dask"
    assert_same_fit(local, fit_mem)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_dask_array_on_cluster(lorenz, X, fit_mem, client):
    Xd = da.from_array(X, chunks=(500, 3))
    fit = ds.fit_global(lorenz, Xd, features=ds.Features(n_features=M, seed=2))
    assert_same_fit(fit, fit_mem)
    again = ds.fit_global(
        lorenz,
        Xd.rechunk((1700, 3)),
        features=ds.Features(n_features=M, seed=2),
        execution=ds.Execution(client=client),
    )
    assert_same_fit(again, fit_mem)
    # deterministic: same chunks ⇒ same bits, whichever worker finishes first
    np.testing.assert_array_equal(
        ds.fit_global(lorenz, Xd, features=ds.Features(n_features=M, seed=2)).A, fit.A
    )
    # the kernels were loaded in the worker processes, from the client's generated file
    loaded = client.run(lambda: [cm.path for cm in dd._WORKER_MODELS.values()])
    paths = [p for ps in loaded.values() for p in ps]
    assert paths and set(paths) == {ds.compile_model(lorenz).path}


def test_files_and_arrays_on_cluster(lorenz, X, fit_mem, client, tmp_path, capsys):
    path = tmp_path / "x.npy"
    np.save(path, X)
    assert_same_fit(
        ds.fit_global(
            lorenz,
            path,
            features=ds.Features(n_features=M, seed=2),
            execution=ds.Execution(backend="dask", chunk_rows=800),
        ),
        fit_mem,
    )
    pytest.importorskip("tqdm")
    ds.fit_global(
        lorenz,
        path,
        features=ds.Features(n_features=M, seed=2),
        execution=ds.Execution(backend="dask", progress=True),
    )
    assert "fit_global lorenz" in capsys.readouterr().err
    fit = ds.fit_global(
        lorenz,
        X,
        features=ds.Features(n_features=M, seed=2),
        execution=ds.Execution(backend="dask", chunk_rows=1000),
    )
    assert fit.info["input"] == "array on dask"
    assert_same_fit(fit, fit_mem)
    zarr = pytest.importorskip("zarr")
    z = zarr.open(str(tmp_path / "x.zarr"), mode="w", shape=X.shape, chunks=(700, 3), dtype="f8")
    z[:] = X
    assert_same_fit(
        ds.fit_global(
            lorenz,
            str(tmp_path / "x.zarr"),
            features=ds.Features(n_features=M, seed=2),
            execution=ds.Execution(backend="dask", chunk_rows=1400),
        ),
        fit_mem,
    )
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "x.h5", "w") as fh:
        fh["X"] = X
    with h5py.File(tmp_path / "x.h5", "r") as fh:
        assert_same_fit(
            ds.fit_global(
                lorenz,
                fh["X"],
                features=ds.Features(n_features=M, seed=2),
                execution=ds.Execution(backend="dask", chunk_rows=1000),
            ),
            fit_mem,
        )


def test_dask_dataframe(lorenz, X, fit_mem, client):
    pd = pytest.importorskip("pandas")
    ddf = pytest.importorskip("dask.dataframe")
    frame = ddf.from_pandas(pd.DataFrame(X[:, ::-1], columns=["z", "y", "x"]), npartitions=4)
    assert_same_fit(
        ds.fit_global(lorenz, frame, features=ds.Features(n_features=M, seed=2)), fit_mem
    )


def test_worker_errors_reach_the_caller(lorenz, X, client):
    bad = X.copy()
    bad[4321, 0] = np.inf
    with pytest.raises(ds.DataError, match="4321"):
        ds.fit_global(
            lorenz, da.from_array(bad, chunks=(1000, 3)), features=ds.Features(n_features=M)
        )
    with pytest.raises(ds.DataError, match="iterator"):
        ds.fit_global(
            lorenz,
            iter([X]),
            features=ds.Features(n_features=M),
            execution=ds.Execution(backend="dask"),
        )


# bitwise identity across backends, not stationarity: the short burn-in (2 time units from the
# default starts) keeps it fast; the StationarityWarning it gives ("increase burn_in") is expected
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
@pytest.mark.parametrize("name, groups", [("lorenz", 7), ("grn_bcell", 2)])
def test_simulation_spread_over_workers_is_identical(models, client, name, groups):
    """Groups of chains of other sizes than in-process (so other SIMD lane widths) on 2 workers."""
    model = models[name]
    kw = dict(dt=0.01, burn_in=200, thin=3, n_chains=300, seed=11)
    ref = ds.simulate(model, model.nominal, 2999, **kw)
    got = ds.simulate(
        model, model.nominal, 2999, **kw, execution=ds.Execution(n_groups=groups, backend="dask")
    )
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)
    x0 = np.random.default_rng(0).standard_normal((300, model.d)) * 0.1
    np.testing.assert_array_equal(
        ds.simulate(model, model.nominal, 600, x0=x0, **kw, execution=ds.Execution(backend="dask")),
        ds.simulate(model, model.nominal, 600, x0=x0, **kw),
    )


# bitwise identity across backends: burn_in=100 (1 time unit) is short on purpose; its
# StationarityWarning ("increase burn_in") is expected
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_public_simulate_dispatches_to_dask(models, client):
    """ds.simulate(..., backend="dask") is the distributed simulator, bit for bit."""
    model = models["lorenz"]
    kw = dict(dt=0.01, burn_in=100, thin=2, n_chains=50, seed=3)
    np.testing.assert_array_equal(
        ds.simulate(model, model.nominal, 500, **kw, execution=ds.Execution(backend="dask")),
        ds.simulate(model, model.nominal, 500, **kw),
    )
    np.testing.assert_array_equal(
        ds.simulate(model, model.nominal, 500, **kw, execution=ds.Execution(client=client)),
        ds.simulate(model, model.nominal, 500, **kw, execution=ds.Execution(backend="local")),
    )
    with pytest.raises(ds.DataError, match="backend"):
        ds.simulate(model, model.nominal, 10, execution=ds.Execution(backend="spark"))


def test_worker_without_shared_files(lorenz, tmp_path, monkeypatch):
    """A worker that cannot read the client's generated file writes the shipped text locally."""
    cm = ds.compile_model(lorenz)
    payload = dd.KernelPayload(cm)
    # the client's path, which does not exist on this (pretend remote) worker
    payload.path = str(tmp_path / "elsewhere" / os.path.basename(cm.path))
    payload.digest = "test-" + payload.digest  # bypass this process's cache
    monkeypatch.setenv("DYNOSED_GENERATED_DIR", str(tmp_path / "worker_cache"))
    try:
        local = payload.load()
        assert local.path.startswith(str(tmp_path / "worker_cache"))
        with open(local.path, encoding="utf-8") as fh:
            assert fh.read() == payload.text
        assert local.module.SPEC_HASH == cm.module.SPEC_HASH
    finally:
        dd._WORKER_MODELS.pop(payload.digest, None)
