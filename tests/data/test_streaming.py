"""Streaming input to ``fit_global``: files, memory maps, Zarr/HDF5, iterators of chunks.

What must hold:
* a ``.npy`` path, an iterator of chunks (any chunking) and the in-memory array give the same
  A and b (to 1e-12 relative; bit for bit for the .npy file, whose noise blocks are those
  of the array) and the same θ̂ — for an iterator of unknown length, whose noise blocks differ
  from the array's, the block-free V-statistic θ̂, while the default U-statistic θ̂, whose
  correction is estimated from the blocks, agrees within a small fraction of its standard error;
* the noise blocks of a stream do not depend on how it is chunked; a huge chunk is split into
  several blocks and a single small chunk still gives a report;
* memory stays flat in N (tracemalloc over a 2·10⁶-row generator);
* progress bars appear only when asked (or on a terminal), and bad chunks are named.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import assert_memory_flat, assert_same_system, traced_peak

import dynosed_sym as ds
from dynosed_sym.data.blocks import NoiseBlocks
from dynosed_sym.data.sources import open_source
from dynosed_sym.options import MIN_BLOCK_ROWS
from dynosed_sym.progress import progress_enabled

M = 256  # features: enough for a well-posed Lorenz fit, cheap to assemble


@pytest.fixture(scope="module")
def lorenz(models):
    return models["lorenz"]


@pytest.fixture(scope="module")
def X(lorenz):
    return ds.simulate(lorenz, lorenz.nominal, 4000, n_chains=200, burn_in=2000, thin=5, seed=3)


@pytest.fixture(scope="module")
def fit_mem(lorenz, X):
    return ds.fit_global(lorenz, X, features=ds.Features(n_features=M, seed=1))


@pytest.fixture(scope="module")
def fit_mem_v(lorenz, X):
    """The V-statistic fit: θ̂ does not depend on the noise blocks."""
    return ds.fit_global(
        lorenz, X, features=ds.Features(n_features=M, seed=1), solver=ds.Solver(statistic="v")
    )


@pytest.fixture(scope="module")
def npy_path(X, tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "samples.npy"
    np.save(path, X)
    return path


def chunked(X, rows):
    for lo in range(0, X.shape[0], rows):
        yield X[lo : lo + rows]


def assert_same_fit(fit, ref, rtol=1e-12):
    assert_same_system(fit, ref, rtol)
    assert fit.info["bandwidth"] == ref.info["bandwidth"]


# --------------------------------------------------------------------------- agreement
def test_npy_path_is_bitwise_the_in_memory_fit(lorenz, npy_path, fit_mem):
    fit = ds.fit_global(lorenz, npy_path, features=ds.Features(n_features=M, seed=1))
    assert fit.info["input"] == "npy"
    np.testing.assert_array_equal(fit.theta, fit_mem.theta)
    np.testing.assert_array_equal(fit.A, fit_mem.A)
    np.testing.assert_array_equal(fit.report.singular_noise, fit_mem.report.singular_noise)
    assert fit.report.rank == fit_mem.report.rank


def test_npy_small_reads_agree(lorenz, npy_path, fit_mem):
    """Reads smaller than a noise block (partial sums added within blocks) agree to rounding."""
    fit = ds.fit_global(
        lorenz,
        str(npy_path),
        features=ds.Features(n_features=M, seed=1),
        execution=ds.Execution(chunk_rows=37),
    )
    assert_same_fit(fit, fit_mem)
    np.testing.assert_allclose(fit.report.singular_noise, fit_mem.report.singular_noise, rtol=1e-10)
    np.testing.assert_allclose(fit.report.residual_ratio, fit_mem.report.residual_ratio, rtol=1e-10)


@pytest.mark.parametrize("rows", [1, 37, 700, 10**6])
def test_iterator_agrees_with_memory(lorenz, X, fit_mem, fit_mem_v, rows):
    fit = ds.fit_global(
        lorenz,
        chunked(X, rows),
        features=ds.Features(n_features=M, seed=1),
        solver=ds.Solver(statistic="v"),
    )
    assert fit.info["input"] == "iterator"
    assert_same_fit(fit, fit_mem_v)
    assert fit.report.singular_noise is not None
    assert fit.report.rank == fit_mem.report.rank
    if rows != 700:  # (one chunking suffices for the default fit below; one-row chunks are slow)
        return
    # the default fit: the U-statistic correction comes from other blocks (equal blocks of the
    # stream against block_edges of N), so θ̂ differs, but by far less than its standard error
    fit_u = ds.fit_global(lorenz, chunked(X, rows), features=ds.Features(n_features=M, seed=1))
    assert np.array_equal(fit_u.A, fit.A)
    assert np.all(np.abs(fit_u.theta - fit_mem.theta) < 0.25 * fit_mem.std_errors)


def test_stream_blocks_do_not_depend_on_chunking(lorenz, X):
    fits = [
        ds.fit_global(
            lorenz,
            chunked(X, rows),
            features=ds.Features(n_features=M, seed=1),
            execution=ds.Execution(chunk_rows=512),
        )
        for rows in (7, 1000, X.shape[0])
    ]
    for fit in fits[1:]:
        np.testing.assert_allclose(
            fit.report.singular_noise, fits[0].report.singular_noise, rtol=1e-10
        )
        np.testing.assert_allclose(
            fit.report.residual_noise, fits[0].report.residual_noise, rtol=1e-10
        )


def test_list_of_chunks_and_dataframes(lorenz, X, fit_mem_v):
    pd = pytest.importorskip("pandas")
    frames = [pd.DataFrame(c[:, ::-1], columns=["z", "y", "x"]) for c in chunked(X, 1500)]
    features = ds.Features(n_features=M, seed=1)
    v = ds.Solver(statistic="v")  # other noise blocks than the array's (see the module docstring)
    assert_same_fit(ds.fit_global(lorenz, frames, features=features, solver=v), fit_mem_v)
    chunks = list(chunked(X, 999))
    assert_same_fit(ds.fit_global(lorenz, chunks, features=features, solver=v), fit_mem_v)


def test_csv_reader_chunks(lorenz, X, fit_mem_v, tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "x.csv"
    pd.DataFrame(X, columns=["x", "y", "z"]).to_csv(path, index=False, float_format="%.17g")
    with pd.read_csv(path, chunksize=1234) as reader:
        fit = ds.fit_global(
            lorenz,
            reader,
            features=ds.Features(n_features=M, seed=1),
            solver=ds.Solver(statistic="v"),
        )
    assert_same_fit(fit, fit_mem_v)


def test_memmap(lorenz, X, fit_mem, tmp_path):
    path = tmp_path / "x.f8"
    mm = np.memmap(path, dtype=float, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    ro = np.memmap(path, dtype=float, mode="r", shape=X.shape)
    fit = ds.fit_global(
        lorenz,
        ro,
        features=ds.Features(n_features=M, seed=1),
        execution=ds.Execution(chunk_rows=1000),
    )
    assert fit.info["input"] == "memmap"
    assert_same_fit(fit, fit_mem)


def test_zarr(lorenz, X, fit_mem, tmp_path):
    zarr = pytest.importorskip("zarr")
    z = zarr.open(str(tmp_path / "x.zarr"), mode="w", shape=X.shape, chunks=(300, 3), dtype="f8")
    z[:] = X
    for src in (z, str(tmp_path / "x.zarr")):
        fit = ds.fit_global(
            lorenz,
            src,
            features=ds.Features(n_features=M, seed=1),
            execution=ds.Execution(chunk_rows=1000),
        )
        assert fit.info["input"] == "zarr"
        assert_same_fit(fit, fit_mem)


def test_hdf5(lorenz, X, fit_mem, tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as fh:
        fh.create_dataset("cells/X", data=X, chunks=(256, 3))
    with h5py.File(path, "r") as fh:
        fit = ds.fit_global(
            lorenz,
            fh["cells/X"],
            features=ds.Features(n_features=M, seed=1),
            execution=ds.Execution(chunk_rows=1000),
        )
    assert fit.info["input"] == "hdf5"
    assert_same_fit(fit, fit_mem)
    assert_same_fit(
        ds.fit_global(lorenz, str(path), features=ds.Features(n_features=M, seed=1)), fit_mem
    )
    with h5py.File(path, "a") as fh:
        fh["other"] = X[:10]
    with pytest.raises(ds.DataError, match="cells/X"):
        ds.fit_global(lorenz, str(path), features=ds.Features(n_features=M))


# --------------------------------------------------------------------------- noise blocks
def stream_counts(n, pieces, n_blocks):
    nb = NoiseBlocks(None, n_blocks)
    X = np.zeros((n, 1))
    lo = 0
    for size in pieces:
        for k, piece in nb.split(X[lo : lo + size]):
            nb.add(k, np.zeros(1), np.zeros(1), piece.shape[0])
        lo += size
    assert lo == n
    keys = sorted(nb.sums)
    if len(keys) > 1 and 2 * nb.sums[keys[-1]][2] < nb.size:  # the tail merge of finish()
        nb.add(keys[-2], *nb.sums.pop(keys[-1]))
    return nb.counts


@pytest.mark.parametrize("n", [3, 17, 64, 257, 1000, 12345])
def test_stream_partition(n):
    n_blocks = 8
    ref = stream_counts(n, [n], n_blocks)
    rng = np.random.default_rng(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, 9), replace=False)) if n > 1 else []
    pieces = np.diff(np.concatenate([[0], cuts, [n]])).astype(int).tolist()
    np.testing.assert_array_equal(stream_counts(n, pieces, n_blocks), ref)
    np.testing.assert_array_equal(stream_counts(n, [1] * n, n_blocks), ref)
    assert ref.sum() == n
    assert len(ref) <= 2 * n_blocks
    assert len(ref) >= min(n_blocks, n // (2 * MIN_BLOCK_ROWS))
    assert len(set(ref[:-1].tolist())) <= 1  # equal blocks but the last
    assert ref[-1] < 2 * max(ref[0], MIN_BLOCK_ROWS)


def test_huge_chunk_is_split_into_blocks(lorenz, X, fit_mem_v):
    fit = ds.fit_global(
        lorenz,
        iter([X]),
        features=ds.Features(n_features=M, seed=1),
        execution=ds.Execution(chunk_rows=500),
        solver=ds.Solver(statistic="v"),
    )
    assert_same_fit(fit, fit_mem_v)
    assert fit.report.singular_noise is not None and not fit.report.notes


def test_single_small_chunk_still_reports(lorenz, X):
    fit = ds.fit_global(lorenz, iter([X[:40]]), features=ds.Features(n_features=64, seed=1))
    assert fit.n_samples == 40
    assert fit.report.singular_noise is not None  # 40 rows → 10 blocks of 4
    tiny = ds.fit_global(lorenz, iter([X[:3]]), features=ds.Features(n_features=64, seed=1))
    assert tiny.n_samples == 3
    assert any("too few data blocks" in note for note in tiny.report.notes)
    assert "too few data blocks" in tiny.summary()
    with pytest.raises(ds.DataError, match="at least 2"):
        ds.fit_global(lorenz, iter([X[:1]]), features=ds.Features(n_features=64))


# --------------------------------------------------------------------------- memory
def generated_rows(n, rows=100_000, seed=0):
    rng = np.random.default_rng(seed)
    for lo in range(0, n, rows):
        yield rng.standard_normal((min(rows, n - lo), 3)) * [8.0, 9.0, 9.0] + [0.0, 0.0, 24.0]


def test_memory_flat_in_n(lorenz):
    # warm caches outside the trace
    ds.fit_global(lorenz, generated_rows(150_000), features=ds.Features(n_features=M))
    small = traced_peak(
        lambda: ds.fit_global(lorenz, generated_rows(250_000), features=ds.Features(n_features=M))
    )
    n = 2_000_000
    fits = []
    large = traced_peak(
        lambda: fits.append(
            ds.fit_global(lorenz, generated_rows(n), features=ds.Features(n_features=M))
        )
    )
    data_bytes = n * 3 * 8
    print(
        f"\npeak traced memory: {small / 1e6:.1f} MB at N = 2.5e5, {large / 1e6:.1f} MB at N = 2e6 "
        f"(data {data_bytes / 1e6:.0f} MB)"
    )
    assert fits[0].n_samples == n
    assert_memory_flat(small, large, data_bytes)


# --------------------------------------------------------------------------- progress
def test_progress_bar_only_when_asked(lorenz, X, capsys):
    pytest.importorskip("tqdm")
    ds.fit_global(
        lorenz,
        chunked(X, 1000),
        features=ds.Features(n_features=64),
        execution=ds.Execution(progress=False),
    )
    assert "fit_global" not in capsys.readouterr().err
    # stderr is not a terminal here
    ds.fit_global(lorenz, chunked(X, 1000), features=ds.Features(n_features=64))
    assert "fit_global" not in capsys.readouterr().err
    ds.fit_global(
        lorenz,
        chunked(X, 1000),
        features=ds.Features(n_features=64),
        execution=ds.Execution(progress=True),
    )
    assert "fit_global lorenz" in capsys.readouterr().err


def test_progress_default():
    assert progress_enabled(True, streamed=False)
    assert not progress_enabled(False, streamed=True)
    assert not progress_enabled(None, streamed=False)


def test_no_tqdm_no_bar(lorenz, X, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    fit = ds.fit_global(
        lorenz,
        chunked(X, 1000),
        features=ds.Features(n_features=64),
        execution=ds.Execution(progress=True),
    )
    assert fit.n_samples == X.shape[0]
    assert "fit_global" not in capsys.readouterr().err


# --------------------------------------------------------------------------- bad input
def test_bad_chunks_are_named(lorenz, X, tmp_path):
    bad = X.copy()
    bad[2345, 1] = np.nan
    with pytest.raises(ds.DataError, match="2345"):
        ds.fit_global(lorenz, chunked(bad, 1000), features=ds.Features(n_features=64))
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(ds.DataError, match="2345"):
        ds.fit_global(
            lorenz,
            tmp_path / "bad.npy",
            features=ds.Features(n_features=64),
            execution=ds.Execution(chunk_rows=500),
        )
    with pytest.raises(ds.DataError, match="expected \\(n, 3\\)"):
        ds.fit_global(lorenz, iter([X[:100], X[:100, :2]]), features=ds.Features(n_features=64))
    with pytest.raises(ds.DataError, match="no samples|0 sample"):
        ds.fit_global(lorenz, iter([]), features=ds.Features(n_features=64))
    np.save(tmp_path / "wide.npy", np.zeros((10, 4)))
    with pytest.raises(ds.DataError, match="expected \\(N, 3\\)"):
        ds.fit_global(lorenz, tmp_path / "wide.npy", features=ds.Features(n_features=64))
    with pytest.raises(ds.DataError, match=".csv"):
        ds.fit_global(lorenz, str(tmp_path / "x.csv"), features=ds.Features(n_features=64))
    with pytest.raises(ds.DataError, match="backend"):
        ds.fit_global(
            lorenz, X, features=ds.Features(n_features=64), execution=ds.Execution(backend="spark")
        )
    with pytest.raises(ds.DataError, match="chunk_rows"):
        ds.fit_global(
            lorenz, X, features=ds.Features(n_features=64), execution=ds.Execution(chunk_rows=0)
        )


def test_iterator_consumed_once(lorenz, X):
    src = open_source(chunked(X, 1000), lorenz)
    assert src.head(10).shape == (10, 3)
    assert sum(c.shape[0] for c in src.chunks(300)) == X.shape[0]
    with pytest.raises(ds.DataError, match="already been consumed"):
        next(src.chunks())


def test_dask_backend_without_dask(lorenz, X, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ds.DynosedError, match="dynosed_sym\\[dask\\]") as info:
        ds.fit_global(
            lorenz, X, features=ds.Features(n_features=64), execution=ds.Execution(backend="dask")
        )
    assert isinstance(info.value, ImportError)
