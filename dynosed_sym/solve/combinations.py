"""Parameter combinations written with the parameters' names: ``0.71·M12 − 0.71·M21``.

* :func:`format_combination` — a numerical direction (unit vector, largest entry positive);
* :func:`exact_combination` — an exact (rational / algebraic) direction, largest coefficient 1;
* :func:`short_combination` — only the largest entries of a long direction, with a count of the
  rest;
* :func:`estimable_combination` — row j of a resolution matrix as ``θ_j + Σ c_k·θ_k``
  (coefficient 1 on θ_j).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

__all__ = ["format_combination", "exact_combination", "short_combination", "estimable_combination"]


def format_combination(vec, names, tol=1e-3):
    """``0.71·a − 0.71·b``: a null-space vector as a named combination (largest entry positive)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.abs(vec).max()
    if vec[np.argmax(np.abs(vec))] < 0:
        vec = -vec
    vec = vec / np.linalg.norm(vec)
    keep = np.flatnonzero(~(np.abs(vec) < tol))  # the entries shown, largest first (stable)
    terms = []
    for k in keep[np.argsort(-np.abs(vec[keep]), kind="stable")]:
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
    k0 = int(np.argmax(mags))
    lead = vals[k0]
    vals = [sp.nsimplify(v / lead) if not isinstance(v, sp.Float) else v / lead for v in vals]
    terms = []
    for v, name in zip(vals, names):
        if v == 0:
            continue
        neg = float(v) < 0
        body = (
            name
            if abs(float(v)) == 1 and (v.is_Rational or abs(float(v) - round(float(v))) == 0)
            else f"{_fmt_coef(v)}·{name}"
        )
        terms.append(("− " if neg else "+ ") + body)
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def short_combination(vec, names, tol=0.05, max_terms=6):
    """A null vector as a combination of its largest entries (``… + 0.23·W[1,6] + …``)."""
    vec = np.asarray(vec, dtype=float)
    vec = vec / np.linalg.norm(vec)
    if vec[np.argmax(np.abs(vec))] < 0:
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
