"""The option-object pattern shared by the entry points: frozen dataclasses checked field by
field (``arguments.check_field``), resolved from a keyword (``options.option``), and the flat
keywords they replaced folded into them (``options.moved_keywords``).  A toy option class is
the subject, so the pattern is tested apart from any entry point."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dynosed_sym import arguments
from dynosed_sym.errors import DataError
from dynosed_sym.options import moved_keywords, option, option_objects


@dataclasses.dataclass(frozen=True)
class Toy:
    steps: int = 10
    rate: float = 0.5
    verbose: bool = False

    def __post_init__(self):
        arguments.check_field(self, "steps", arguments.integer, minimum=1)
        arguments.check_field(self, "rate", arguments.number, positive=True)
        arguments.check_field(self, "verbose", arguments.flag)


MOVED = {"steps": ("toy", Toy, "steps"), "learning_rate": ("toy", Toy, "rate")}


@given(st.integers(1, 10**9), st.floats(1e-30, 1e30), st.booleans())
def test_fields_are_stored_in_their_checked_form(steps, rate, verbose):
    """Integral floats become ints, NumPy scalars Python numbers and bools — the value kept."""
    toy = Toy(steps=float(steps), rate=np.float32(rate), verbose=np.bool_(verbose))
    assert type(toy.steps) is int and toy.steps == steps
    assert type(toy.rate) is float and toy.rate == float(np.float32(rate))
    assert toy.verbose is verbose


@pytest.mark.parametrize(
    "fields, match",
    [
        (dict(steps=0), r"^Toy\.steps must be at least 1, got 0$"),
        (dict(steps=2.5), r"^Toy\.steps must be an integer, got 2\.5$"),
        (dict(steps=True), r"^Toy\.steps must be an integer, got True$"),
        (dict(rate=float("nan")), r"^Toy\.rate must be finite"),
        (dict(rate=-1), r"^Toy\.rate must be positive"),
        (dict(verbose=1), r"^Toy\.verbose must be True or False, got 1$"),
    ],
)
def test_a_bad_field_is_refused_naming_class_and_field(fields, match):
    with pytest.raises(DataError, match=match):
        Toy(**fields)
    with pytest.raises(DataError, match=match):  # a variant is checked again
        dataclasses.replace(Toy(), **fields)


def test_option_resolves_none_and_refuses_anything_but_an_instance():
    assert option(None, Toy, "toy") == Toy()
    mine = Toy(steps=3)
    assert option(mine, Toy, "toy") is mine
    with pytest.raises(
        DataError, match=r"toy must be a .*Toy or None, got dict .*toy=Toy\(steps=3\)"
    ):
        option({"steps": 3}, Toy, "toy")
    with pytest.raises(DataError, match=r"toy must be a .*Toy or None, got int 3"):
        option(3, Toy, "toy")


def test_moved_keywords_build_the_object_with_a_future_warning():
    assert moved_keywords("f", {}, {"toy": None}, MOVED) == {"toy": None}
    with pytest.warns(FutureWarning, match=r"f: the keywords learning_rate, steps .* toy=Toy\("):
        out = moved_keywords("f", {"steps": 4, "learning_rate": 0.1}, {"toy": None}, MOVED)
    assert out == {"toy": Toy(steps=4, rate=0.1)}
    with pytest.raises(DataError, match="f: steps given both as keywords and through toy="):
        moved_keywords("f", {"steps": 4}, {"toy": Toy()}, MOVED)
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'stepz'"):
        moved_keywords("f", {"stepz": 4}, {"toy": None}, MOVED)
    with pytest.raises(DataError, match="Toy.steps must be at least 1"):
        moved_keywords("f", {"steps": 0}, {"toy": None}, MOVED)


def test_option_objects_build_what_the_moved_keywords_build_without_a_warning():
    flat = {"steps": 4, "learning_rate": 0.1}
    with pytest.warns(FutureWarning):
        expected = moved_keywords("f", flat, {"toy": None}, MOVED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert option_objects("f", flat, MOVED) == expected == {"toy": Toy(steps=4, rate=0.1)}
    assert option_objects("f", {}, MOVED) == {}
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'stepz'"):
        option_objects("f", {"stepz": 4}, MOVED)
    with pytest.raises(DataError, match="Toy.rate must be positive"):
        option_objects("f", {"learning_rate": -1.0}, MOVED)
