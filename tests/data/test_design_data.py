"""Design data (data/designs.py): environments from a column, inputs per environment."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import ou_noise_model

from dynosed_sym.data.designs import TimeCourse, as_design, split_by
from dynosed_sym.errors import DataError, ModelError


def test_split_by_keeps_row_order_and_first_appearance():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": np.arange(6.0), "y": 0.0, "env": ["b", "a", "b", "a", "c", "b"]})
    parts = split_by(frame, "env")
    assert list(parts) == ["b", "a", "c"]
    assert parts["b"]["x"].tolist() == [0.0, 2.0, 5.0]
    with pytest.raises(DataError, match="missing values"):
        split_by(frame.assign(env=["a", None, "b", "a", "c", "b"]), "env")
    with pytest.raises(
        DataError, match=r"holds text in column .env., row 0: .b.; numbers are expected"
    ):
        split_by(frame, "env", numeric=True)
    with pytest.raises(DataError, match="needs a DataFrame or an AnnData"):
        split_by(np.zeros((3, 2)), "env")


def test_split_by_anndata_obs():
    pd = pytest.importorskip("pandas")
    anndata = pytest.importorskip("anndata")
    obs = pd.DataFrame({"cond": ["u", "v", "u"]}, index=["c0", "c1", "c2"])
    adata = anndata.AnnData(X=np.arange(6.0).reshape(3, 2), obs=obs)
    parts = split_by(adata, "cond")
    assert list(parts) == ["u", "v"] and parts["u"].n_obs == 2
    with pytest.raises(DataError, match="AnnData.obs has no column 'time'"):
        split_by(adata, "time")


def test_as_design_forms():
    model = ou_noise_model("aniso")
    X = np.zeros((4, 2))
    one = as_design(X, model, {"s": 2.0})
    assert one.single and one.names == ["data"] and one.envs[0].input_dict == {"s": 2.0}
    two = as_design({1: X, 2: X}, model, {1: {"s": 1}, 2: {"s": 3}})
    assert two.names == ["1", "2"] and not two.single
    assert [e.kind for e in two.envs] == ["stationary", "stationary"]
    tc = as_design({"A": {0.0: X, 1.0: X}}, model, {"A": {"s": 1}})
    assert isinstance(tc.envs[0].data, TimeCourse) and tc.has_time_course
    with pytest.raises(ModelError, match="no value for input 's'"):
        as_design({"A": X}, model, {"A": {}})


def test_plain_data_is_not_a_design(models):
    assert as_design(np.zeros((4, 2)), models["ou2d"]) is None
    with pytest.raises(DataError, match="empty dict"):
        as_design({}, models["ou2d"])


@pytest.mark.parametrize(
    "t0, t1",
    [(0.5, 0.5 + 1e-12), (1e9, 1e9 + 1e-2), (-3.0, -3.0 + 1e-11)],
)
def test_timecourse_refuses_times_equal_to_rounding(t0, t1):
    """Two times nearly equal (0.5 and 0.5 + 1e-12) gave θ ≈ −7.6e11 with ±190 % intervals: the
    fit divides the change between the snapshots by their difference, which has fewer than 6
    significant digits there. Times that keep 6 digits of their difference are accepted."""
    X = np.zeros((10, 2))
    message = (
        rf"^TimeCourse: times {re.escape(repr(t0))} and {re.escape(repr(t1))} differ by .*, less "
        r"than 2\.22e-10 of their size \(1e6 rounding units of a double\): their difference is "
        r"known to fewer than 6 significant digits"
    )
    with pytest.raises(DataError, match=message):
        TimeCourse({t1: X, t0: X, t1 + 1.0: X})
    apart = 1e6 * np.finfo(float).eps * abs(t0) * 1.01
    assert TimeCourse({t0: X, t0 + apart: X}).times.size == 2
    assert TimeCourse({1.7e9: X, 1.7e9 + 1: X}).times.size == 2  # Unix seconds, 1 s apart
