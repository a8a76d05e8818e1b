"""Streaming input to the local route: the score estimators and ``fit_local`` read a ``.npy``
path, a memory map, Zarr, HDF5, a dask array or an iterator of chunks in one pass.

What must hold:
* every input kind gives the in-memory scores, Jacobians and ``fit_local`` θ̂, A, b to 1e-12
  relative (kernel, local Gaussian and score matching), whatever the chunking (chunks that
  split noise blocks included); when N is known the delete-one-block replicates are those of
  the array in memory, for an iterator they are the delete-one-block estimates of the stream's
  own partition (equal blocks, as in ``fit_global``) and do not depend on the chunking;
* the kernel estimator's running nearest-point shift is exact when the nearest points come last
  (every chunk rescales the sums);
* memory stays flat in N (tracemalloc over a 2·10⁶-row generator);
* a progress bar when asked; bad input (k-means probes or a callable score on a stream, bad
  chunks, an exhausted iterator, bad ``chunk_rows``) raises DataError.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_memory_flat, traced_peak

import dynosed_sym as ds
from dynosed_sym.data.blocks import NoiseBlocks
from dynosed_sym.data.sources import is_streamed
from dynosed_sym.options import MIN_BLOCK_ROWS
from dynosed_sym.routes.scores import KernelScore, ScoreMatching

PROBES = np.array([[0.0, 0.0], [0.8, -0.4], [-0.6, 0.7], [0.3, 1.0]])
RADIUS = 0.9
ESTIMATORS = {
    "kernel": lambda: KernelScore(16.0),
    "local_gaussian": lambda: KernelScore(8.0, deconvolve=True),
    "score_matching": lambda: ScoreMatching(RADIUS),
    "score_matching_3": lambda: ScoreMatching(RADIUS, degree=3),
}


@pytest.fixture(scope="module")
def model(models):
    return models["ou2d_m12"]


@pytest.fixture(scope="module")
def X(ou_samples):
    return ou_samples(np.array([[-1.0, 0.5], [-0.5, -1.0]]), 1.0, 24_001, seed=7)


@pytest.fixture(scope="module")
def files(X, tmp_path_factory):
    """{kind: path} of X written as .npy, .zarr and .h5 (where the packages are installed)."""
    root = tmp_path_factory.mktemp("local_stream")
    out = {"npy": str(root / "X.npy")}
    np.save(out["npy"], X)
    try:
        import zarr

        out["zarr"] = str(root / "X.zarr")
        z = zarr.open(out["zarr"], mode="w", shape=X.shape, chunks=(5000, 2), dtype="f8")
        z[:] = X
    except ImportError:
        pass
    try:
        import h5py

        out["hdf5"] = str(root / "X.h5")
        with h5py.File(out["hdf5"], "w") as fh:
            fh.create_dataset("X", data=X, chunks=(3000, 2))
    except ImportError:
        pass
    return out


def chunked(X, rows):
    for lo in range(0, X.shape[0], rows):
        yield X[lo : lo + rows]


def ragged(X, seed=0):
    """Chunks of random sizes 1 … 3000 rows (they split noise blocks anywhere)."""
    rng = np.random.default_rng(seed)
    lo = 0
    while lo < X.shape[0]:
        n = int(rng.integers(1, 3000))
        yield X[lo : lo + n]
        lo += n


def source(kind, X, files):
    """(X input, chunk_rows, N known?) for one input kind."""
    if kind in ("npy", "zarr", "hdf5"):
        if kind not in files:
            pytest.skip(f"{kind} not installed")
        return files[kind], None, True
    if kind == "npy_small_reads":
        return files["npy"], 1234, True
    if kind == "memmap":
        return np.load(files["npy"], mmap_mode="r"), 5000, True
    if kind == "dask":
        da = pytest.importorskip("dask.array")
        return da.from_array(X, chunks=(7000, 2)), 4096, True
    if kind == "iter_1000":
        return chunked(X, 1000), None, False
    if kind == "iter_ragged":
        return ragged(X), 2000, False
    if kind == "iter_one_chunk":
        return iter([X]), None, False
    if kind == "list_of_frames":
        pd = pytest.importorskip("pandas")
        return [pd.DataFrame(c[:, ::-1], columns=["y", "x"]) for c in chunked(X, 5000)], None, False
    raise AssertionError(kind)


KINDS = [
    "npy",
    "npy_small_reads",
    "memmap",
    "zarr",
    "hdf5",
    "dask",
    "iter_1000",
    "iter_ragged",
    "iter_one_chunk",
]


def assert_rel(a, b, rtol=1e-12):
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= rtol * np.abs(b).max(), np.abs(a - b).max() / np.abs(b).max()


@pytest.fixture(scope="module")
def in_memory(X):
    P = PROBES
    return {name: make().estimate(X, P, n_blocks=32) for name, make in ESTIMATORS.items()}


def stream_partition(N, n_blocks, chunk=1000):
    """Row edges of the noise blocks of a stream of N rows (NoiseBlocks, short tail joined)."""
    nb = NoiseBlocks(None, n_blocks)
    counts = {}
    for lo in range(0, N, chunk):
        for k, piece in nb.split(np.empty((min(chunk, N - lo), 1))):
            nb.add(k, np.zeros(1), np.zeros(1), piece.shape[0])
    counts = list(nb.counts)
    if len(counts) > 1 and 2 * counts[-1] < nb.size:
        counts[-2] += counts.pop()
    return np.concatenate([[0], np.cumsum(counts)])


# --------------------------------------------------------------------------- estimators
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimator_streams_like_memory(name, kind, X, files, in_memory):
    data, rows, known = source(kind, X, files)
    assert is_streamed(data)
    est = ESTIMATORS[name]().estimate(data, PROBES, n_blocks=32, chunk_rows=rows)
    ref = in_memory[name]
    assert est.n_samples == X.shape[0]
    assert_rel(est.score, ref.score)
    assert_rel(est.jacobian, ref.jacobian)
    np.testing.assert_allclose(est.n_effective, ref.n_effective, rtol=1e-12)
    if known:  # the noise blocks of the array in memory
        assert est.n_blocks == 32
        assert_rel(est.score_blocks, ref.score_blocks)
        assert_rel(est.jacobian_blocks, ref.jacobian_blocks)
    else:  # equal blocks of the stream: between n_blocks and 2·n_blocks
        assert 32 <= est.n_blocks < 64


@pytest.mark.parametrize("name", ["kernel", "score_matching"])
def test_iterator_jackknife_is_delete_one_block(name, X):
    """The replicates of a stream are the estimates without each block of its own partition,
    and do not depend on how the stream is chunked."""
    est = ESTIMATORS[name]().estimate(chunked(X, 1000), PROBES, n_blocks=8)
    other = ESTIMATORS[name]().estimate(ragged(X, seed=3), PROBES, n_blocks=8)
    assert_rel(other.score_blocks, est.score_blocks)
    assert_rel(other.jacobian_blocks, est.jacobian_blocks)
    edges = stream_partition(X.shape[0], 8)
    assert est.n_blocks == edges.size - 1 >= 8
    assert edges[1] % MIN_BLOCK_ROWS == 0
    for b in (0, est.n_blocks // 2, est.n_blocks - 1):
        keep = np.concatenate([X[: edges[b]], X[edges[b + 1] :]])
        S, J = ESTIMATORS[name]()(keep, PROBES)
        assert_rel(est.score_blocks[b], S, 1e-11)
        assert_rel(est.jacobian_blocks[b], J, 1e-11)


@pytest.mark.parametrize("deconvolve", [False, True])
def test_kernel_shift_when_nearest_points_come_last(X, deconvolve):
    """Rows sorted from far to near: each chunk brings a nearer point and rescales the sums
    (the first, far ones to exactly zero)."""
    p = PROBES[:1]
    Xs = X[np.argsort(-np.sum((X - p) ** 2, axis=1))]
    ref = KernelScore(16.0, deconvolve).estimate(Xs, p, n_blocks=4)
    est = KernelScore(16.0, deconvolve).estimate(chunked(Xs, 500), p, n_blocks=0, chunk_rows=500)
    assert est.n_blocks == 0
    assert_rel(est.score, ref.score)
    assert_rel(est.jacobian, ref.jacobian)
    est = KernelScore(16.0, deconvolve).estimate(chunked(Xs, 500), p, n_blocks=2, chunk_rows=500)
    assert_rel(est.score, ref.score)


# --------------------------------------------------------------------------- fit_local
@pytest.mark.parametrize("kind", KINDS + ["list_of_frames"])
@pytest.mark.parametrize("score", ["kernel", "score_matching"])
def test_fit_local_streams_like_memory(model, X, files, kind, score):
    balls = ds.Balls(PROBES, RADIUS)
    scores = ds.Scores(temperature=16.0) if score == "kernel" else ds.Scores(score="score_matching")
    data, rows, known = source(kind, X, files)
    # other jackknife blocks: compare the V-statistic fit, which does not use them
    kw = {"scores": scores, "solver": ds.Solver(statistic=None if known else "v")}
    ref = ds.fit_local(model, X, balls, **kw)
    execution = ds.Execution(chunk_rows=rows or 65536, progress=False)
    fit = ds.fit_local(model, data, balls, execution=execution, **kw)
    assert fit.n_samples == ref.n_samples == X.shape[0]
    expected = {"npy_small_reads": "npy", "dask": "dask"}.get(kind, kind)
    assert fit.info["input"] == ("iterator" if kind.startswith(("iter", "list")) else expected)
    np.testing.assert_allclose(fit.theta, ref.theta, rtol=1e-12, atol=0)
    assert_rel(fit.A, ref.A)
    assert_rel(fit.b, ref.b)
    if known:
        assert fit.info["blocks"] == ref.info["blocks"] == 32
        assert np.allclose(fit.report.std_errors, ref.report.std_errors, rtol=1e-9, atol=0)
    else:
        assert fit.info["blocks"] >= 32 and fit.report.std_errors[0] > 0


def test_fit_local_given_scores_leave_the_stream_unread(model, X, files):
    S = np.zeros((len(PROBES), 2))
    J = np.broadcast_to(-np.eye(2), (len(PROBES), 2, 2))
    gen = chunked(X, 1000)
    fit = ds.fit_local(model, gen, PROBES, scores=ds.Scores(score=(S, J)))
    assert fit.info["input"] == "iterator" and next(gen).shape == (1000, 2)
    assert (
        ds.fit_local(model, files["npy"], PROBES, scores=ds.Scores(score=(S, J))).n_samples
        == X.shape[0]
    )


def test_progress_bar(model, X, files, capsys):
    pytest.importorskip("tqdm")
    ds.fit_local(
        model,
        chunked(X, 4000),
        PROBES,
        scores=ds.Scores(temperature=16.0),
        execution=ds.Execution(progress=False),
    )
    assert "fit_local" not in capsys.readouterr().err
    # stderr is not a terminal here
    ds.fit_local(model, files["npy"], PROBES, scores=ds.Scores(temperature=16.0))
    assert "fit_local" not in capsys.readouterr().err
    ds.fit_local(
        model,
        chunked(X, 4000),
        PROBES,
        scores=ds.Scores(temperature=16.0),
        execution=ds.Execution(progress=True),
    )
    assert "fit_local ou2d_m12" in capsys.readouterr().err


# --------------------------------------------------------------------------- memory
def generated_rows(n, rows=100_000, seed=0):
    rng = np.random.default_rng(seed)
    for lo in range(0, n, rows):
        yield rng.standard_normal((min(rows, n - lo), 2)) * 0.8


@pytest.mark.parametrize("score", ["kernel", "score_matching"])
def test_memory_flat_in_n(model, score):
    kw = {
        "scores": ds.Scores(temperature=16.0)
        if score == "kernel"
        else ds.Scores(score="score_matching", radius=RADIUS)
    }
    ds.fit_local(model, generated_rows(150_000), PROBES, **kw)  # warm caches outside the trace
    small = traced_peak(lambda: ds.fit_local(model, generated_rows(250_000), PROBES, **kw))
    n = 2_000_000
    fits = []
    large = traced_peak(lambda: fits.append(ds.fit_local(model, generated_rows(n), PROBES, **kw)))
    data_bytes = n * 2 * 8
    print(
        f"\n{score}: peak traced memory {small / 1e6:.1f} MB at N = 2.5e5, {large / 1e6:.1f} MB at "
        f"N = 2e6 (data {data_bytes / 1e6:.0f} MB)"
    )
    assert fits[0].n_samples == n
    assert_memory_flat(small, large, data_bytes)


# --------------------------------------------------------------------------- bad input
def test_kmeans_probes_need_memory(model, X, files):
    with pytest.raises(ds.DataError, match="explicit probes"):
        ds.fit_local(model, chunked(X, 1000), 5)
    with pytest.raises(ds.DataError, match="explicit probes"):
        ds.fit_local(model, files["npy"], 5)
    fit = ds.fit_local(model, X, 3, scores=ds.Scores(temperature=16.0))
    assert fit.probes.shape == (3, 2)  # in memory: fine


def test_callable_score_needs_memory(model, X, files):
    def exact(X, P):
        return -P, np.broadcast_to(-np.eye(2), (P.shape[0], 2, 2))

    with pytest.raises(ds.DataError, match="needs X in memory"):
        ds.fit_local(model, files["npy"], PROBES, scores=ds.Scores(score=exact))
    with pytest.raises(ds.DataError, match="needs X in memory"):
        ds.routes.scores.CallableScore(exact).estimate(chunked(X, 100), PROBES)


def test_bad_streams(model, X, tmp_path):
    bad = X.copy()
    bad[1234, 1] = np.nan
    with pytest.raises(ds.DataError, match="rows 1234"):
        ds.fit_local(model, chunked(bad, 1000), PROBES, scores=ds.Scores(temperature=16.0))
    with pytest.raises(ds.DataError, match="expected"):
        ds.fit_local(
            model, iter([X[:100], X[:100, :1]]), PROBES, scores=ds.Scores(temperature=16.0)
        )
    wrong = tmp_path / "three.npy"
    np.save(wrong, np.zeros((10, 3)))
    with pytest.raises(ds.DataError, match="shape"):
        ds.fit_local(model, str(wrong), PROBES)
    with pytest.raises(ds.DataError, match="cannot stream"):
        ds.fit_local(model, str(tmp_path / "X.csv"), PROBES)
    with pytest.raises(ds.DataError, match="no data"):
        ds.fit_local(model, iter([]), PROBES)
    gen = chunked(X, 1000)
    ds.fit_local(model, gen, PROBES, scores=ds.Scores(temperature=16.0))
    with pytest.raises(ds.DataError, match="no data"):  # a generator is read once
        ds.fit_local(model, gen, PROBES, scores=ds.Scores(temperature=16.0))
    for rows in (0, -5, 2.5, True):
        with pytest.raises(ds.DataError, match="chunk_rows"):
            ds.fit_local(model, chunked(X, 1000), PROBES, execution=ds.Execution(chunk_rows=rows))
    with pytest.raises(ds.DataError, match="same number of columns"):
        KernelScore(4.0).estimate(ds.data.open_source(X, model), np.zeros((2, 3)))
