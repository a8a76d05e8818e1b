"""``ds.compile_model`` names an argument of the wrong type (a path instead of a model, a number
as out_dir) instead of failing with an AttributeError or a TypeError from os.path."""

from __future__ import annotations

import pathlib

import pytest
import sympy as sp

import dynosed_sym as ds

x, a = sp.symbols("x a", real=True)


@pytest.mark.parametrize(
    "model, shown",
    [
        ("models/ou2d_m12.py", "str 'models/ou2d_m12.py'"),
        (pathlib.Path("models/ou2d.py"), "PosixPath"),
        (None, "NoneType"),
    ],
)
def test_compile_model_of_something_that_is_no_model(model, shown):
    """(compile_model("models/ou2d_m12.py") and compile_model(None): AttributeError ... has no
    attribute '__dict__')"""
    with pytest.raises(ds.ModelError) as info:
        ds.compile_model(model)
    assert str(info.value).startswith(
        "compile_model: expected an SDEModel (ds.load_model(path) reads a model file), got " + shown
    )


@pytest.mark.parametrize("out_dir, shown", [(123, "int 123"), (b"gen", "bytes b'gen'")])
def test_compile_model_out_dir_that_is_no_folder_path(out_dir, shown):
    """(compile_model(m, out_dir=123): "TypeError: expected str, bytes or os.PathLike object")"""
    m = ds.SDEModel([x], [a], [-a * x], diffusion=1, name="out_dir_type")
    with pytest.raises(
        ds.DataError, match=rf"^compile_model: out_dir must be a folder path .*{shown}"
    ):
        ds.compile_model(m, out_dir=out_dir)


def test_compile_model_expands_a_tilde_in_out_dir(tmp_path, monkeypatch):
    """(out_dir="~/gen" made a folder named "~" in the working directory)"""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    m = ds.SDEModel([x], [a], [-a * x], diffusion=1, name="out_dir_tilde")
    cm = ds.compile_model(m, out_dir="~/gen")
    assert pathlib.Path(cm.path).parent == tmp_path / "gen"
    assert not (tmp_path / "~").exists()
