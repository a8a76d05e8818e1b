"""``Features(bandwidth="auto")``: the kernel length scale at which the data resolve the most.

The global route's Gaussian kernel has one length scale ℓ.  The median pairwise distance (the
usual heuristic) sets it to the data's overall spread, and for some drifts that kernel is too
smooth to see them: on FitzHugh–Nagumo at N = 2000 the drift's overall scale — the largest
component of the truth — is not resolved at the median ℓ (the calibration sweep: 4 finite
intervals of 100), while at ℓ/2–ℓ/4 it is (100 of 100, all covering, RMSE 0.21 against 0.49;
docs/design-statistics.md §8, "The kernel's length scale").  No fixed multiple is right for
every model: the bistable switch, Michaelis–Menten and the double wells lose accuracy at ℓ/4.

**The rule.**  Fit at the median ℓ.  If every direction is resolved (rank n judged against the
sampling noise), that is the fit — the same as ``bandwidth="median"``.  Otherwise fit at
ℓ × 0.5, 2 and 0.25 (:data:`FACTORS`, in this order).  A candidate replaces the fit kept so far
when the directions it resolves at the family-wise level over all K = 4 scales
(:func:`strict_rank`: the two-sided t quantile at 0.05/(n·K) instead of 0.05/n, and σ above the
floating-point floor as in the report) outnumber the median's rank (its report's, at the usual
level) or the kept candidate's count at that level; a candidate whose count is n ends the
search.  So a candidate must show more directions at a stricter level than the median shows at
its own, and trying four kernels does not quadruple the chance of calling a direction without
curvature resolved (a structurally free direction, like the rotation of an isotropic limit
cycle) — though the kept fit's report then judges its directions at the usual level, and the
choice and the fit read the same samples (a pretest, as choosing instruments by their
first-stage strength on the estimation sample is).  The criterion is the rank — each
direction's curvature against its noise, a statistic of A alone — not b, the estimate or the
intervals, so the choice does not seek the narrowest intervals; the kept fit's intervals are its
own.  The candidates share the random directions (ω = z/ℓ, the same seed).

**When it does not search.**  Models with more than :data:`MAX_PARAMS` parameters (each
candidate is a whole fit; at network size give a bandwidth; the summary says the median left
directions unresolved and was not searched), data read once (an iterator of chunks), fits whose
noise is not estimated (too few blocks or degrees of freedom: the rank is not judged), and a
given number or ``"median"``.  Design checks (``check_identifiability`` with an ``Experiment``
of several environments or time courses) take the median.

**What it reports.**  ``fit.info["bandwidth_search"]``: the median ℓ, the factor kept, each
tried factor's report rank (``ranks``) and its count at the search's level (``counted``); a
note in the summary when it searched; the same ``Features`` with ``bandwidth=fit.lengthscale``
reproduce the fit.  Warnings of the candidates not kept are dropped (they are about fits not
reported); those of the kept fit are issued again — the package's own at the line that called
the fit, others where they were issued (``warnings.catch_warnings`` is process-wide: fits run
at once on several threads may see each other's warnings).  A candidate that fails (a scale at
which the features lose precision, say) is skipped, its error recorded in
``info["bandwidth_search"]["errors"]``: the search never fails a fit the median's would give.
Non-affine fits: the candidates are fitted without the profile intervals (they cost several
fits and do not change the rank) and the kept one again with them.  Memory: the best fit so far
is held while the next is fitted — its system and up to ``KEEP_BLOCKS_BYTES`` (256 MiB) of
block means kept for the bootstrap, beyond one fit's peak.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace

import numpy as np

from ..errors import DynosedError
from ..solve.directions import numerical_floor, resolve_quantile

__all__ = ["FACTORS", "MAX_PARAMS", "fit_auto", "replayable", "strict_rank"]

#: Multiples of the median length scale tried, in order of preference after the median itself.
FACTORS = (0.5, 2.0, 0.25)
#: Above this many parameters the median is kept (a search costs up to three more fits).
MAX_PARAMS = 64
#: What a candidate's fit may raise and the search skip (recorded): the package's own errors (a
#: scale at which the features lose precision), a failed factorisation, floating-point trouble.
CANDIDATE_ERRORS = (DynosedError, np.linalg.LinAlgError, ArithmeticError, ValueError)


def replayable(X):
    """Whether the input can be read again (not a one-shot iterator or generator of chunks, nor
    a :class:`~dynosed_sym.data.sources.DataSource` opened on one)."""
    if isinstance(X, dict):
        return all(replayable(v) for v in X.values())
    return not hasattr(X, "__next__") and getattr(X, "kind", None) != "iterator"


def fit_auto(fit_at, features, readable=True, profiles=True):
    """The fit at the length scale :mod:`this module's <dynosed_sym.routes.bandwidth>` rule
    chooses; ``fit_at(features, profile)`` fits with the given
    :class:`~dynosed_sym.routes.options.Features` (a number or ``"median"`` as bandwidth), with
    the solver's profile intervals when ``profile`` (else without: a candidate's rank does not
    depend on them, and they cost several fits; the kept candidate of a gradient fit is fitted
    again with them when ``profiles``, the solver's setting)."""
    first, caught = _recorded(fit_at, replace(features, bandwidth="median"), True)
    n_params = len(first.param_names)
    why = _no_search(first, n_params, readable)
    if why is not None:
        _reissue(caught)
        first.info["bandwidth_search"] = {"median": first.lengthscale, "factor": 1.0, "why": why}
        if first.report.rank < n_params and why != NOT_JUDGED:  # (too many, or read once)
            first.report.notes.append(
                f"bandwidth 'auto': the median length scale leaves {n_params - first.report.rank}"
                f" direction(s) unresolved; other length scales were not tried ({why}) — pass "
                "Features(bandwidth=…) to try one"
            )
        return first
    ell = first.lengthscale
    ranks, counted = {1.0: int(first.report.rank)}, {}
    gradient = profiles and first.info.get("solver") == "gradient"
    best, (fit, caught) = 1.0, (first, caught)  # (only the best fit so far is held)
    del first
    errors = {}
    for factor in FACTORS:
        try:
            candidate = _recorded(fit_at, replace(features, bandwidth=factor * ell), False)
        except CANDIDATE_ERRORS as exc:  # a candidate never fails the median's fit
            ranks[factor], errors[factor] = None, f"{type(exc).__name__}: {exc}"
            continue
        ranks[factor] = int(candidate[0].report.rank)
        counted[factor] = strict_rank(candidate[0].report, n_params, np.shape(candidate[0].A)[0])
        if counted[factor] > (ranks[1.0] if best == 1.0 else counted[best]):
            best, (fit, caught) = factor, candidate
        del candidate
        if best != 1.0 and counted[best] == n_params:
            break
    if gradient and best != 1.0:  # the kept candidate with the profile its fit would have had
        try:
            fit, caught = _recorded(fit_at, replace(features, bandwidth=best * ell), True)
        except CANDIDATE_ERRORS as exc:
            fit.report.notes.append(
                f"note: the profile intervals of this fit failed ({type(exc).__name__}: {exc}); "
                "its intervals are the linearisation's"
            )
    _reissue(caught)
    record = {"median": ell, "factor": best, "ranks": ranks, "counted": counted}
    fit.info["bandwidth_search"] = record
    if errors:  # (a scale the data cannot take — features out of precision —, or a failure)
        record["errors"] = errors
    fit.report.notes.append(_note(ell, best, ranks, counted, n_params, fit.lengthscale))
    return fit


def strict_rank(report, n_params, m):
    """The directions a candidate resolves at the family-wise level over every length scale
    the search may try: ``t_i`` above the two-sided Student-t quantile at level 0.05/(n·K),
    K = 1 + len(FACTORS) — so that trying K scales does not multiply the chance of calling a
    direction without curvature resolved (its own report keeps the usual level) — and, as there, σ_i
    above the floating-point floor ``eps·max(m, n)·σ_1`` (an exactly null direction, two
    identical columns, has a rounding-level κ̂ whose t can be anything)."""
    t = report.direction_t
    if t is None:
        return int(report.rank)
    q = resolve_quantile(report.dof, None, n_params * (1 + len(FACTORS)))
    q = max(q, float(report.resolve_threshold))
    s = np.asarray(report.singular_values, dtype=float)
    above = s > numerical_floor(s, m, s.size)
    return int(np.count_nonzero((np.asarray(t, dtype=float) > q) & above))


#: Why no search: the median's rank is not judged against sampling noise.
NOT_JUDGED = "no sampling-noise estimate (rank not judged)"


def _no_search(fit, n_params, readable):
    """Why the median's fit is kept without trying others (None: search).  A rank not judged
    against the noise (too few blocks or degrees of freedom) is said first: "every direction
    resolved" would claim what that rank does not."""
    if fit.report.singular_noise is None or not np.isfinite(fit.report.resolve_threshold):
        return NOT_JUDGED
    if fit.report.rank >= n_params:
        return "every direction resolved at the median"
    if n_params > MAX_PARAMS:
        return f"more than {MAX_PARAMS} parameters"
    if not readable:
        return "the data are read once (an iterator)"
    return None


def _recorded(fit_at, features, profile):
    """``(fit, warnings)``: the fit, with the warnings it issued held back (issued at once when
    the fit raises: they may say why)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit, error = fit_at(features, profile), None
        except BaseException as exc:  # (re-raised below, after its warnings)
            fit, error = None, exc
    if error is not None:
        _reissue(caught)
        raise error
    return fit, caught


def _reissue(caught):
    """Issue the held-back warnings again: the package's own (which name the line that called
    the fit) at the line that called ``fit_global``, any other where it was issued."""
    for w in caught:
        if os.path.abspath(w.filename).startswith(_PACKAGE):
            warnings.warn(w.message, w.category, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _note(ell, best, ranks, counted, n, used):
    tried = ", ".join(
        f"× {f:g}: " + ("failed" if r is None else f"{r} ({counted[f]} at the search's level)")
        for f, r in ranks.items()
        if f != 1.0
    )
    head = (
        f"bandwidth 'auto': the median length scale {ell:.4g} resolves {ranks[1.0]} of {n} "
        f"directions"
    )
    if best == 1.0:
        return (
            f"{head}; no multiple of it resolves more at the search's family-wise level "
            f"({tried}): the median is kept"
        )
    return (
        f"{head}; {best:g} × it ({used:.4g}) resolves {ranks[best]}, {counted[best]} of them at "
        f"the search's family-wise level: this fit (tried {tried}; the same Features with "
        f"bandwidth={used!r} reproduce it)"
    )
