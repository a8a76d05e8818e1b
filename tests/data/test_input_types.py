"""Input data of every type (issue 22): numbers of any width are used as their values; what is not
a real number is refused — naming the column and the first row — before a file's chunks are read;
a data file is never executed (an object-dtype Zarr store, whose chunks Zarr 2 would unpickle)."""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest

import dynosed_sym as ds
from dynosed_sym.arguments import float_array


@pytest.fixture(scope="module")
def ou(models):
    return models["ou2d"], np.random.default_rng(7).standard_normal((400, 2))


@pytest.mark.parametrize(
    "dtype, what",
    [
        ("complex128", r"holds complex numbers \(dtype complex128\)"),
        ("bool", r"holds boolean values \(dtype bool\)"),
        (str, r"holds text \(dtype .*\)"),
    ],
)
def test_zarr_store_of_the_wrong_type_is_refused_before_reading(ou, tmp_path, dtype, what):
    zarr = pytest.importorskip("zarr")
    model, X = ou
    path = str(tmp_path / "bad.zarr")
    z = zarr.open(path, mode="w", shape=X.shape, chunks=(100, 2), dtype=dtype)
    z[:] = X > 0 if dtype == "bool" else (X.astype(str) if dtype is str else X + 0j)
    for source in (path, zarr.open(path, mode="r")):
        with pytest.raises(ds.DataError, match=r"^X: .*: " + what + ", not real numbers"):
            ds.fit_global(model, source, features=ds.Features(n_features=16))


def test_integer_file_is_read_as_its_numbers(ou, tmp_path):
    """An int16 HDF5 dataset and a float32 .npy file fit as their values (bit for bit the fit
    of the same numbers as float64)."""
    h5py = pytest.importorskip("h5py")
    model, X = ou
    Xi = np.round(X * 100).astype(np.int16)
    with h5py.File(tmp_path / "x.h5", "w") as fh:
        fh["x"] = Xi
    ref = ds.fit_global(model, Xi.astype(float), features=ds.Features(n_features=32))
    np.testing.assert_array_equal(
        ds.fit_global(model, str(tmp_path / "x.h5"), features=ds.Features(n_features=32)).theta,
        ref.theta,
    )
    X32 = X.astype(np.float32)
    np.save(tmp_path / "x.npy", X32)
    ref = ds.fit_global(model, X32.astype(float), features=ds.Features(n_features=32))
    got = ds.fit_global(model, str(tmp_path / "x.npy"), features=ds.Features(n_features=32))
    np.testing.assert_array_equal(got.theta, ref.theta)


class _Planted:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_planted_object_zarr_store_is_never_unpickled(ou, tmp_path):
    """A Zarr store (format 2) whose float-looking data are an object array with the pickle
    codec: reading it with Zarr 2 would run the planted code.  It is refused without running
    anything (Zarr ≥ 3 does not open it; with any version, an object dtype is refused before
    a chunk is read)."""
    pytest.importorskip("zarr")
    model, _ = ou
    store = tmp_path / "planted.zarr"
    store.mkdir()
    marker = tmp_path / "planted_code_ran"
    meta = {
        "zarr_format": 2,
        "shape": [4, 2],
        "chunks": [4, 2],
        "dtype": "|O",
        "compressor": None,
        "fill_value": None,
        "filters": [{"id": "pickle", "protocol": 4}],
        "order": "C",
    }
    (store / ".zarray").write_text(json.dumps(meta), encoding="utf-8")
    cells = np.ones((4, 2), dtype=object)
    cells[0, 0] = _Planted(str(marker))
    (store / "0.0").write_bytes(pickle.dumps(cells, protocol=4))
    with pytest.raises(ds.DataError, match=r"^X: (cannot open Zarr store|.* holds Python objects)"):
        ds.fit_global(model, str(store), features=ds.Features(n_features=16))
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (bytes(range(256)) * 2, r"it does not start with the \.npy signature; save the data"),
        (
            pickle.dumps([[1.0, 2.0]]),
            r"it does not start with the \.npy signature \(it is a Python pick",
        ),
        ("object", r"it holds Python objects \(dtype object\), which would have to be unpickled"),
        ("truncated", r"is not a readable \.npy array \(mmap length is greater than file size\)"),
    ],
)
def test_npy_file_that_is_not_a_numeric_array_is_named(ou, tmp_path, content, message):
    """Random bytes or a pickle named .npy, an object array, a cut file: the file is named and
    called what it is not (it was NumPy's "This file contains pickled (object) data. If you trust
    the file you can load it unsafely using the `allow_pickle=` keyword argument")."""
    model, X = ou
    path = tmp_path / "x.npy"
    if content == "object":
        np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    elif content == "truncated":
        np.save(path, X)
        path.write_bytes(path.read_bytes()[:300])
    else:
        path.write_bytes(content)
    full = rf"^X: {re.escape(repr(str(path)))} (is not a numeric \.npy array: )?" + message
    with pytest.raises(ds.DataError, match=full):
        ds.fit_global(model, str(path), features=ds.Features(n_features=16))


def test_object_dtype_array_of_a_store_is_refused_by_its_dtype(ou):
    """(Whatever opened it: an object-dtype array-like handed over as a Zarr/HDF5 array.)"""
    from dynosed_sym.data.sources import SliceSource

    model, X = ou

    class FakeZarr:
        shape, dtype, chunks = X.shape, np.dtype(object), (100, 2)

        def __getitem__(self, key):  # pragma: no cover - must never be read
            raise AssertionError("read")

    with pytest.raises(ds.DataError, match=r"holds Python objects \(dtype object\).*pickle"):
        SliceSource("zarr", FakeZarr(), model, "X", location="fake.zarr")


@pytest.mark.parametrize(
    "values, message",
    [
        (np.array([[1.0, 2.0], [3.0, "x"]], dtype=object), r"holds text in column 'b', row 1: 'x'"),
        ([[1.0, "x"], [3.0, 4.0]], r"holds text in column 'b', row 0: 'x'"),
        ([["1", "2"], ["3", "4"]], r"holds numbers stored as text in column 'a', row 0: '1'"),
        (np.array([[1.0, 2.0]], dtype=np.longdouble) * np.longdouble("1e4000"), r"beyond"),
        (np.array([[1, 10**400]], dtype=object), r"column 'b', row 0 is beyond the double"),
        (np.array([[1.0, None]], dtype=object), None),
        (np.array([[1, 2]], dtype=np.uint64), None),
    ],
)
def test_float_array(values, message):
    if message is None:
        out = float_array(values, "X", columns=["a", "b"])
        assert out.dtype == np.float64
        np.testing.assert_array_equal(out, np.array(values, dtype=float))
        return
    with pytest.raises(ds.DataError, match=message):
        float_array(values, "X", columns=["a", "b"])
