"""Combination objects (dynosed_sym.solve.combinations.Combination, issue 21).

Oracles: a frozen copy of the text functions as they stood before the objects existed (the printed
summaries must stay byte-identical), and a parser that reads the printed text back into
coefficients (the text must say what the coefficient vector says).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.solve.combinations import (
    Combination,
    Combinations,
    exact_combination,
    format_combination,
)


# ----------------------------------------------------------------- oracle: the old text functions
def _old_format(vec, names, tol=1e-3):
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.abs(vec).max()
    if vec[np.argmax(np.abs(vec))] < 0:
        vec = -vec
    vec = vec / np.linalg.norm(vec)
    keep = np.flatnonzero(~(np.abs(vec) < tol))
    terms = []
    for k in keep[np.argsort(-np.abs(vec[keep]), kind="stable")]:
        c = float(vec[k])
        terms.append(f"{'−' if c < 0 else '+'} {abs(c):.3g}·{names[k]}")
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def _old_estimable(row, names, j, tol=1e-3, max_terms=6):
    c = np.asarray(row, dtype=float) / float(row[j])
    order = [k for k in np.argsort(-np.abs(c), kind="stable") if k != j and abs(c[k]) >= tol]
    shown = order[:max_terms]
    text = names[j] + "".join(
        f" {'−' if c[k] < 0 else '+'} {abs(c[k]):.3g}·{names[k]}" for k in shown
    )
    hidden = int(np.sum((np.abs(c) >= 1e-8) & (np.arange(c.size) != j))) - len(shown)
    return text + (f" + … ({hidden} smaller terms)" if hidden > 0 else "")


def _old_short(vec, names, tol=0.05, max_terms=6):
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.linalg.norm(vec)
    if vec[np.argmax(np.abs(vec))] < 0:
        vec = -vec
    keep = [k for k in np.argsort(-np.abs(vec))[:max_terms] if abs(vec[k]) >= tol]
    text = " ".join(f"{'−' if vec[k] < 0 else '+'} {abs(vec[k]):.3g}·{names[k]}" for k in keep)
    text = text[2:] if text.startswith("+ ") else text
    hidden = int(np.sum(np.abs(vec) >= 1e-3)) - len(keep)
    return text + (f" + … ({hidden} smaller terms)" if hidden > 0 else "")


def _near_tie(v, gap=1e-8):
    """Two nonzero magnitudes within ``gap`` of each other (relative to the largest): there the
    text functions now break the tie by position (a decomposition's last bits differ between
    machines, test_a_tie_in_magnitude_is_broken_by_position_not_by_rounding), where the old
    ones followed the rounding."""
    a = np.sort(np.abs(np.asarray(v, dtype=float)))
    a = a[a > 0] / a.max() if a.size and a.max() > 0 else a
    return bool(a.size > 1 and np.any(np.diff(a) <= gap))


# ----------------------------------------------------------------- oracle: reading the text back
_TERM = re.compile(r"^([+−])\s*(?:([0-9.e+\-]+)·)?(\S+)$")


def parse(text):
    """``0.707·a − 0.707·b`` → {"a": 0.707, "b": -0.707} (a bare name has coefficient 1)."""
    text = text.split(" + … (")[0]
    if not text.startswith("−"):
        text = "+ " + text
    parts = re.findall(r"[+−] \S+|−\S+", text)
    out = {}
    for part in parts:
        m = _TERM.match(part)
        assert m, (part, text)
        sign = -1.0 if m.group(1) == "−" else 1.0
        out[m.group(3)] = sign * (1.0 if m.group(2) is None else float(m.group(2)))
    return out


def _close3(a, b):
    """Equal to the 3 significant digits of ``:.3g``."""
    return abs(a - b) <= 5e-3 * max(abs(a), abs(b)) + 1e-12


vectors = st.integers(1, 9).flatmap(
    lambda n: st.lists(
        st.one_of(st.just(0.0), st.floats(-10, 10, allow_nan=False, allow_subnormal=False)),
        min_size=n,
        max_size=n,
    )
)


def _names(n):
    return [f"p{k}" for k in range(n)]


@settings(max_examples=300, deadline=None)
@given(vectors)
def test_direction_text_is_the_old_text_and_reads_back_as_the_coefficients(vec):
    v = np.asarray(vec)
    assume(np.abs(v).max() > 1e-6 and not _near_tie(v))
    c = Combination(v, _names(v.size))
    text = str(c)
    assert text == _old_format(v, _names(v.size))
    u = c.normalised
    np.testing.assert_allclose(np.linalg.norm(u), 1.0)
    assert u[np.argmax(np.abs(u))] > 0
    read = parse(text)
    for k, nm in enumerate(c.names):
        if nm in read:
            assert _close3(read[nm], u[k]), (text, u)
        else:
            assert abs(u[k]) < 1e-3, (text, u)
    assert [nm for nm, _ in c.terms()] == list(read)


@settings(max_examples=300, deadline=None)
@given(vectors, st.data())
def test_estimable_text_is_the_old_text_and_reads_back_as_the_coefficients(vec, data):
    v = np.asarray(vec)
    j = data.draw(st.integers(0, v.size - 1))
    assume(abs(v[j]) > 1e-3 * np.abs(v).max() and abs(v[j]) > 1e-6)
    names = _names(v.size)
    c = Combination(v, names, "estimable", pivot=j, value=1.5, interval=(1.0, 2.0))
    text = str(c)
    assert text == _old_estimable(v, names, j)
    u = c.normalised
    assert u[j] == 1.0
    read = parse(text)
    assert read[names[j]] == 1.0
    for k, nm in enumerate(names):
        if nm in read:
            assert _close3(read[nm], u[k]), (text, u)
    shown = c.terms(7)
    assert [nm for nm, _ in shown] == list(read)
    if " smaller terms)" not in text:  # every term at least 1e-3 is printed
        assert {nm for nm, _ in c.terms()} == set(read)


@settings(max_examples=200, deadline=None)
@given(vectors)
def test_short_is_the_old_short_text(vec):
    v = np.asarray(vec)
    assume(np.abs(v).max() > 1e-6 and not _near_tie(v))
    names = _names(v.size)
    assert Combination(v, names).short() == _old_short(v, names)
    assert Combination(v, names).short(max_terms=2, tol=0.1) == _old_short(v, names, 0.1, 2)


def test_short_counts_the_terms_it_leaves_out():
    v = np.r_[np.ones(2), 0.01 * np.ones(16)]
    text = Combination(v, _names(18)).short(max_terms=2)
    assert text.endswith(" + … (16 smaller terms)")
    assert set(parse(text)) == {"p0", "p1"}


@settings(max_examples=100, deadline=None)
@given(vectors, st.booleans())
def test_coefficients_and_dict_round_trip(vec, estimable):
    v = np.asarray(vec)
    assume(np.abs(v).max() > 1e-6)
    j = int(np.argmax(np.abs(v)))
    kw = (
        {"style": "estimable", "pivot": j, "value": 0.25, "interval": (0.0, 0.5), "level": 0.9}
        if estimable
        else {}
    )
    c = Combination(v, _names(v.size), **kw)
    np.testing.assert_array_equal(c.vector, v)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["text"] == str(c)
    back = Combination(
        d["coefficients"],
        d["names"],
        d["style"],
        pivot=d["pivot"],
        value=d["value"],
        interval=d["interval"],
        level=d["level"],
    )
    assert back == c and str(back) == str(c)


def test_exact_combination_keeps_its_exact_text():
    c = Combination.from_exact([1, -1, 0], ["M12", "M21", "M11"])
    assert str(c) == "M12 − M21"
    np.testing.assert_array_equal(c.vector, [1.0, -1.0, 0.0])
    assert c.to_dict()["text"] == "M12 − M21"


def test_bad_combinations_are_refused():
    with pytest.raises(ValueError, match="one coefficient per parameter"):
        Combination([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="pivot"):
        Combination([1.0, 2.0], ["a", "b"], "estimable")
    with pytest.raises(ValueError, match="style"):
        Combination([1.0, 2.0], ["a", "b"], "nice")
    # a zero or non-finite combination: an IndexError when printed, NaN text (before)
    for coef in ([0.0, 0.0], [np.nan, 1.0], [1.0, np.inf]):
        with pytest.raises(ds.DataError, match="coefficients must be finite, not all 0"):
            Combination(coef, ["a", "b"])
    with pytest.raises(ds.DataError, match="2 coefficients for 1 names"):
        Combination([1.0, 2.0], ["a"])


def test_combination_is_exported():
    assert ds.Combination is Combination and "Combination" in ds.__all__


@settings(max_examples=100, deadline=None)
@given(
    st.floats(min_value=1e-6, max_value=1e6),
    st.floats(min_value=-1e-12, max_value=1e-12),
    st.booleans(),
)
def test_a_tie_in_magnitude_is_broken_by_position_not_by_rounding(x, eps, flip):
    """(−x(1 + ε), x) and (x(1 + ε), −x) are the combination a − b whatever the last bits (a
    decomposition's rounding differs between machines: once "−1·a + b" on one, "a − b" on
    another)."""
    vec = [-x * (1 + eps), x]
    if flip:
        vec = [-v for v in vec]
    assert exact_combination(vec, ["a", "b"]) == "a − b"
    assert format_combination(vec, ["a", "b"]) == "0.707·a − 0.707·b"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), k=st.integers(0, 5), seed=st.integers(0, 1000))
def test_lazy_combinations_are_the_eager_list(n, k, seed):
    """Combinations (a report's null space, made when read) against the list of Combination
    objects built at once: equal, the same texts, indexing from either end, slices, len, and an
    IndexError past the end."""
    cols = np.random.default_rng(seed).standard_normal((n, k))
    names = [f"t{j}" for j in range(n)]
    eager = [Combination(cols[:, i], tuple(names)) for i in range(k)]
    lazy = Combinations(cols, names)
    assert len(lazy) == k and lazy == eager and eager == lazy and bool(lazy) == (k > 0)
    assert [str(c) for c in lazy] == [str(c) for c in eager]
    assert repr(lazy) == repr(eager)
    if k:
        assert lazy[-1] == eager[-1] and lazy[0] == eager[0]
    assert lazy[1:] == eager[1:] and lazy[::-1] == eager[::-1]
    with pytest.raises(IndexError):
        lazy[k]
    with pytest.raises(IndexError):
        lazy[-k - 1]
    assert lazy != eager + [Combination(np.ones(n), tuple(names))]
