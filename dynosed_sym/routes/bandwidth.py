"""``Features(bandwidth="auto")``: the kernel length scale at which the data resolve the most.

The global route's Gaussian kernel has one length scale ℓ.  The median pairwise distance (the
usual heuristic) sets it to the data's overall spread, and for some drifts that kernel is too
smooth to see them: on FitzHugh–Nagumo at N = 2000 the drift's overall scale — the largest
component of the truth — is not resolved at the median ℓ in any of 12 data sets (no finite
interval), while at ℓ/4 it is in all of them, with 58 of 60 intervals covering and 0.17 × the
RMSE (docs/design-statistics.md §8, "The kernel's length scale").  No fixed multiple is right for
every model: the bistable switch and the Stuart–Landau oscillator lose accuracy at small ℓ.

**The rule.**  Fit at the median ℓ.  If every direction is resolved (rank n judged against the
sampling noise), that is the fit — the same as ``bandwidth="median"``.  Otherwise fit at
ℓ × 0.5, 2 and 0.25 (:data:`FACTORS`, in this order), and keep the fit that resolves the most
directions, the earliest in the order (median first) among equals; a fit resolving all n ends
the search.  The criterion is the rank — the curvature of each direction against its noise, a
statistic of A alone, like the first-stage strength of an instrument — not the estimate or its
intervals, so the choice does not seek the narrowest intervals; the chosen fit's intervals are
its own.  A candidate's directions count at the family-wise level over all K = 4 scales
(:func:`strict_rank`: the t quantile at 0.05/(n·K) instead of 0.05/n, and σ above the
floating-point floor as in the report), so that trying four
kernels does not quadruple the chance of calling a direction without curvature resolved (a
structurally free direction, like the rotation of an isotropic limit cycle).  The candidates
share the random directions (ω = z/ℓ, the same seed).

**When it does not search.**  Models with more than :data:`MAX_PARAMS` parameters (each
candidate is a whole fit; at network size give a bandwidth), data read once (an iterator of
chunks), fits whose noise is not estimated (too few blocks: the rank is not judged), and a
given number or ``"median"``.

**What it reports.**  ``fit.info["bandwidth_search"]``: the median ℓ, the factor kept and each
tried factor's rank; a note in the summary when it searched;
``Features(bandwidth=fit.lengthscale)`` reproduces the fit.  Warnings of the candidates not kept
are dropped (they are about fits not reported); those of the kept fit are issued again.  A
candidate that fails (a scale at which the features lose precision, say) is skipped, its error
recorded in ``info["bandwidth_search"]["errors"]``: the search never fails a fit the median's
would give.  Memory: the best fit so far is held while the next is fitted.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..solve.directions import resolve_quantile

__all__ = ["FACTORS", "MAX_PARAMS", "fit_auto", "replayable", "strict_rank"]

#: Multiples of the median length scale tried, in order of preference after the median itself.
FACTORS = (0.5, 2.0, 0.25)
#: Above this many parameters the median is kept (a search costs up to three more fits).
MAX_PARAMS = 64


def replayable(X):
    """Whether the input can be read again (not a one-shot iterator or generator of chunks)."""
    if isinstance(X, dict):
        return all(replayable(v) for v in X.values())
    return not hasattr(X, "__next__")


def fit_auto(fit_at, features, readable=True):
    """The fit at the length scale :mod:`this module's <dynosed_sym.routes.bandwidth>` rule
    chooses; ``fit_at(features, profile)`` fits with the given
    :class:`~dynosed_sym.routes.options.Features` (a number or ``"median"`` as bandwidth), with
    the solver's profile intervals when ``profile`` (else without: a candidate's rank does not
    depend on them, and they cost several fits; the kept candidate is fitted again with them)."""
    first, caught = _recorded(fit_at, replace(features, bandwidth="median"), True)
    n_params = len(first.param_names)
    why = _no_search(first, n_params, readable)
    if why is not None:
        _reissue(caught)
        first.info["bandwidth_search"] = {"median": first.lengthscale, "factor": 1.0, "why": why}
        return first
    ell = first.lengthscale
    ranks = {1.0: int(first.report.rank)}
    profiled = first.report.profile is not None  # (a non-affine fit's profile intervals)
    best, (fit, caught) = 1.0, (first, caught)  # (only the best fit so far is held)
    del first
    errors = {}
    for factor in FACTORS:
        try:
            candidate = _recorded(fit_at, replace(features, bandwidth=factor * ell), False)
        except Exception as exc:  # noqa: BLE001 — a candidate never fails the median's fit
            ranks[factor], errors[factor] = None, f"{type(exc).__name__}: {exc}"
            continue
        ranks[factor] = strict_rank(candidate[0].report, n_params, np.shape(candidate[0].A)[0])
        if ranks[factor] > ranks[best]:
            best, (fit, caught) = factor, candidate
        del candidate
        if ranks[best] == n_params:
            break
    if profiled and best != 1.0:  # the kept candidate with the profile its fit would have had
        del fit
        fit, caught = _recorded(fit_at, replace(features, bandwidth=best * ell), True)
    _reissue(caught)
    fit.info["bandwidth_search"] = {"median": ell, "factor": best, "ranks": ranks}
    if errors:  # (a scale the data cannot take — features out of precision —, or a failure)
        fit.info["bandwidth_search"]["errors"] = errors
    fit.report.notes.append(_note(ell, best, ranks, n_params, fit.lengthscale))
    return fit


def strict_rank(report, n_params, m):
    """The directions a candidate resolves at the family-wise level over every length scale
    the search may try: ``t_i`` above the Student-t quantile at ``1 − 0.05/(n·K)``, K = 1 +
    len(FACTORS) — so that trying K scales does not multiply the chance of calling a direction
    without curvature resolved (its own report keeps the usual level) — and, as there, σ_i
    above the floating-point floor ``eps·max(m, n)·σ_1`` (an exactly null direction, two
    identical columns, has a rounding-level κ̂ whose t can be anything)."""
    t = report.direction_t
    if t is None:
        return int(report.rank)
    q = resolve_quantile(report.dof, None, n_params * (1 + len(FACTORS)))
    q = max(q, float(report.resolve_threshold))
    s = np.asarray(report.singular_values, dtype=float)
    above = s > np.finfo(float).eps * max(m, s.size) * (s[0] if s.size else 0.0)
    return int(np.count_nonzero((np.asarray(t, dtype=float) > q) & above))


def _no_search(fit, n_params, readable):
    """Why the median's fit is kept without trying others (None: search)."""
    if fit.report.rank >= n_params:
        return "every direction resolved at the median"
    if n_params > MAX_PARAMS:
        return f"more than {MAX_PARAMS} parameters"
    if not readable:
        return "the data are read once (an iterator)"
    if fit.report.singular_noise is None:
        return "no sampling-noise estimate (rank not judged)"
    return None


def _recorded(fit_at, features, profile):
    """``(fit, warnings)``: the fit, with the warnings it issued held back."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_at(features, profile)
    return fit, caught


def _reissue(caught):
    """Issue the held-back warnings again, at the line that called ``fit_global``."""
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=4)


def _note(ell, best, ranks, n, used):
    tried = ", ".join(
        f"× {f:g}: {'failed' if r is None else r}" for f, r in ranks.items() if f != 1.0
    )
    head = (
        f"bandwidth 'auto': the median length scale {ell:.4g} resolves {ranks[1.0]} of {n} "
        f"directions"
    )
    if best == 1.0:
        return f"{head}; no multiple of it resolves more ({tried}): the median is kept"
    return (
        f"{head}; {best:g} × it ({used:.4g}) resolves {ranks[best]}: this fit (tried {tried}; "
        f"Features(bandwidth={used!r}) reproduces it)"
    )
