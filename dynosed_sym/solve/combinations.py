"""Parameter combinations written with the parameters' names: ``0.71·M12 − 0.71·M21``.

* :func:`format_combination` — a numerical direction (unit vector, largest entry positive);
* :func:`exact_combination` — an exact (rational / algebraic) direction, largest coefficient 1;
* :func:`short_combination` — only the largest entries of a long direction, with a count of the
  rest;
* :func:`estimable_combination` — row j of a resolution matrix as ``θ_j + Σ c_k·θ_k``
  (coefficient 1 on θ_j);
* :class:`Combination` — the object the reports hold: the coefficient vector over the
  parameters, their names and, for an estimable combination, its value and interval; its
  ``str`` is the text of the function above that matches its ``style``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from ..errors import DataError

__all__ = [
    "Combination",
    "Combinations",
    "format_combination",
    "exact_combination",
    "short_combination",
    "estimable_combination",
]


def _lead(mags, rtol=1e-9):
    """Index of the largest magnitude, the first of those within ``rtol`` of it: a tie such as
    (−0.7071…, 0.7071…) is broken by position, not by the last bits of a decomposition (which
    differ between machines and BLAS builds)."""
    mags = np.asarray(mags, dtype=float)
    return int(np.flatnonzero(mags >= mags.max() * (1.0 - rtol))[0])


def format_combination(vec, names, tol=1e-3):
    """``0.71·a − 0.71·b``: a null-space vector as a named combination (largest entry positive)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.abs(vec).max()
    if vec[_lead(np.abs(vec))] < 0:
        vec = -vec
    vec = vec / np.linalg.norm(vec)
    keep = np.flatnonzero(~(np.abs(vec) < tol))  # the entries shown, largest first (stable)
    terms = []
    for k in keep[np.argsort(-np.round(np.abs(vec[keep]), 9), kind="stable")]:  # ties: position
        c = float(vec[k])
        sign = "−" if c < 0 else "+"
        terms.append(f"{sign} {abs(c):.3g}·{names[k]}")
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def _fmt_coef(c):
    if c.is_Rational:
        return str(abs(c))
    if c.is_Float:
        return f"{abs(float(c)):.4g}"
    m = sp.simplify(abs(c))
    return f"({sp.sstr(m)})" if m.is_Add else sp.sstr(m)


def exact_combination(vec, names):
    """``M12 − M21``, ``a − 2·b``: an exact combination, largest coefficient scaled to 1."""
    vals = [sp.nsimplify(v) if not isinstance(v, sp.Float) else v for v in vec]
    mags = [abs(float(v)) for v in vals]
    k0 = _lead(mags)
    lead = vals[k0]
    vals = [sp.nsimplify(v / lead) if not isinstance(v, sp.Float) else v / lead for v in vals]
    terms = []
    for v, name in zip(vals, names):
        if v == 0:
            continue
        neg = float(v) < 0
        unit = v.is_Rational and abs(v) == 1 or abs(abs(float(v)) - 1.0) <= 1e-12
        body = name if unit else f"{_fmt_coef(v)}·{name}"
        terms.append(("− " if neg else "+ ") + body)
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def short_combination(vec, names, tol=0.05, max_terms=6):
    """A null vector as a combination of its largest entries (``… + 0.23·W[1,6] + …``)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.linalg.norm(vec)
    if vec[_lead(np.abs(vec))] < 0:
        vec = -vec
    keep = [k for k in np.argsort(-np.abs(vec))[:max_terms] if abs(vec[k]) >= tol]
    text = " ".join(f"{'−' if vec[k] < 0 else '+'} {abs(vec[k]):.3g}·{names[k]}" for k in keep)
    text = text[2:] if text.startswith("+ ") else text
    hidden = int(np.sum(np.abs(vec) >= 1e-3)) - len(keep)
    return text + (f" + … ({hidden} smaller terms)" if hidden > 0 else "")


def estimable_combination(row, names, j, tol=1e-3, max_terms=6):
    """``W[1,5] − 0.0142·W[1,4] + 0.0048·W[1,6]``: row j of a resolution matrix normalised to
    coefficient 1 on parameter j, its other terms by decreasing size (at most ``max_terms``, none
    below ``tol``; the number left out is appended)."""
    c = np.asarray(row, dtype=float) / float(row[j])
    order = [k for k in np.argsort(-np.abs(c), kind="stable") if k != j and abs(c[k]) >= tol]
    shown = order[:max_terms]
    text = names[j] + "".join(
        f" {'−' if c[k] < 0 else '+'} {abs(c[k]):.3g}·{names[k]}" for k in shown
    )
    hidden = int(np.sum((np.abs(c) >= 1e-8) & (np.arange(c.size) != j))) - len(shown)
    return text + (f" + … ({hidden} smaller terms)" if hidden > 0 else "")


#: How a :class:`Combination` is written: ``"direction"`` (:func:`format_combination`, a unit
#: vector), ``"exact"`` (:func:`exact_combination`), ``"estimable"`` (:func:`estimable_combination`,
#: coefficient 1 on ``pivot``).
STYLES = ("direction", "exact", "estimable")


@dataclass(frozen=True)
class Combination:
    """A linear combination ``Σ_k c_k θ_k`` of the parameters, with its value when estimated.

    Held by the reports: ``IdentifiabilityReport.null_space`` (unresolved directions),
    ``IdentifiabilityReport.combinations`` (estimable combinations, with ``value`` and
    ``interval``), ``StructuralReport.null_space``.  ``str(c)`` is the text the summaries print.

    Attributes
    ----------
    coefficients : tuple of float
        c over the parameters (:attr:`vector` as an array); as stored, not rescaled.
    names : tuple of str
        The parameters' names.
    style : str
        ``"direction"``, ``"exact"`` or ``"estimable"`` (module docstring).
    pivot : int or None
        For ``"estimable"``: the parameter j the combination is normalised on (coefficient 1).
    exact : tuple or None
        For ``"exact"``: the SymPy coefficients the text is written from.
    value : float or None
        The combination's estimate (estimable combinations), in the normalisation of the text.
    interval : (float, float) or None
        Its interval at ``level``.
    level : float or None
    """

    coefficients: tuple
    names: tuple
    style: str = "direction"
    pivot: int | None = None
    exact: tuple | None = None
    value: float | None = None
    interval: tuple | None = None
    level: float | None = None

    def __post_init__(self):
        # tolist: the same Python floats as float(c) each, without a Python loop (a report of
        # n = 10⁴ parameters holds thousands of these)
        coef = tuple(np.asarray(self.coefficients, dtype=float).ravel().tolist())
        object.__setattr__(self, "coefficients", coef)
        names = self.names
        if not (isinstance(names, tuple) and all(type(nm) is str for nm in names)):
            names = tuple(str(nm) for nm in names)
        object.__setattr__(self, "names", names)  # a tuple of str given is shared, not copied
        if len(coef) != len(self.names):
            raise DataError(
                f"Combination: {len(coef)} coefficients for {len(self.names)} names; give one "
                "coefficient per parameter"
            )
        if not all(np.isfinite(coef)) or not any(coef):
            raise DataError(f"Combination: coefficients must be finite, not all 0, got {coef}")
        if self.style not in STYLES:
            raise ValueError(f"Combination: style {self.style!r} is not one of {STYLES}")
        if self.style == "estimable" and self.pivot is None:
            raise ValueError("Combination: an 'estimable' combination needs its pivot index")
        if self.value is not None:
            object.__setattr__(self, "value", float(self.value))
        if self.interval is not None:
            object.__setattr__(self, "interval", tuple(float(v) for v in self.interval))

    @classmethod
    def from_exact(cls, vec, names):
        """An exact (SymPy / rational) direction; coefficients are its float values."""
        exact = tuple(vec)
        return cls([float(v) for v in exact], names, style="exact", exact=exact)

    @property
    def vector(self):
        """The coefficients as an (n,) float array (a copy)."""
        return np.array(self.coefficients, dtype=float)

    @property
    def normalised(self):
        """The coefficients as written by ``str``: unit norm with the largest entry positive
        (``"direction"``), largest entry 1 (``"exact"``), 1 on the pivot (``"estimable"``)."""
        v = self.vector
        if self.style == "estimable":
            return v / v[self.pivot]
        if self.style == "exact":
            return v / v[np.argmax(np.abs(v))]
        v = v / np.linalg.norm(v)
        return -v if v[np.argmax(np.abs(v))] < 0 else v

    def __str__(self):
        if self.style == "estimable":
            return estimable_combination(self.vector, list(self.names), self.pivot)
        if self.style == "exact":
            return exact_combination(list(self.exact), list(self.names))
        return format_combination(self.vector, list(self.names))

    def terms(self, k=None, tol=1e-3):
        """The (name, coefficient) pairs of :attr:`normalised` at least ``tol`` in size, largest
        first (the pivot of an estimable combination first); at most ``k`` when given."""
        c = self.normalised
        order = np.argsort(-np.abs(c), kind="stable")
        if self.style == "estimable":
            order = [self.pivot] + [i for i in order if i != self.pivot]
        out = [(self.names[i], float(c[i])) for i in order if abs(c[i]) >= tol]
        return out if k is None else out[:k]

    def short(self, max_terms=6, tol=0.05):
        """Only the largest entries, with the number of the rest: ``a + 0.5·b + … (16 smaller
        terms)`` (:func:`short_combination`)."""
        return short_combination(self.vector, list(self.names), tol=tol, max_terms=max_terms)

    def to_dict(self):
        """Plain Python types (JSON-ready): ``text`` (``str(self)``), ``names``,
        ``coefficients``, ``style``, ``pivot``, ``value``, ``interval``, ``level``."""
        return {
            "text": str(self),
            "names": list(self.names),
            "coefficients": list(self.coefficients),
            "style": self.style,
            "pivot": self.pivot,
            "value": self.value,
            "interval": None if self.interval is None else list(self.interval),
            "level": self.level,
        }


class Combinations(Sequence):
    """The columns of a matrix (n, k) as k :class:`Combination` objects of the direction style,
    each made when it is read.

    A report's null space holds one combination per unresolved direction; at network size that is
    thousands of columns of 10⁴ coefficients, which as tuples of Python floats took gigabytes and
    half a minute to build although the summary names none of them there.  Reading one
    (``null_space[i]``, iteration, ``str``) gives the same Combination as building it eagerly;
    the sequence compares equal to a list of the same combinations.
    """

    def __init__(self, columns, names):
        self._columns = np.array(columns, dtype=float)  # a copy: null_vectors may be changed
        if self._columns.ndim != 2:
            raise ValueError(f"Combinations: columns must be a 2-D array, got {self._columns.ndim}")
        self._names = tuple(str(nm) for nm in names)  # shared by every combination

    def __len__(self):
        return int(self._columns.shape[1])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = operator.index(i)
        k = len(self)
        if not -k <= i < k:
            raise IndexError(f"combination index {i} out of range for {k} combinations")
        return Combination(self._columns[:, i % k], self._names)

    def __eq__(self, other):
        if isinstance(other, (Combinations, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return "[" + ", ".join(repr(c) for c in self) + "]"
