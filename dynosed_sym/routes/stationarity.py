"""After a fit: is there a stationary law of the *fitted* drift consistent with the data?

Both routes assume the data are a stationary snapshot.  A fit on data with no stationary law
(a diverging simulation, a population still growing) can still look consistent: a cloud of
10¹¹-sized Gaussian samples is exactly the stationary law of an OU process with a drift of
10⁻²³, and the fit finds that drift with a tight interval.  :func:`flag_stationarity` evaluates
the necessary conditions of :mod:`dynosed_sym.simulation.stationarity` at θ̂ on the data:

* the variance balance ``E[2(vᵀf_θ̂)(vᵀx̃) + 2vᵀDv] = 0`` along every coordinate (and every
  direction in which the averaged Jacobian does not contract),
* the contraction ``E_data[∇·f_θ̂ − ∇·∇·D] = −E[sᵀDs] < 0`` and, for a constant D, the
  Cramér–Rao form ``E_data[∇·f_θ̂] ≤ −tr(D Σ̂⁻¹)`` (Σ̂ the data's covariance),
* confinement: the relaxation time ``d / |E_data[∇·f_θ̂ − ∇·∇·D]|`` below 10⁶ time units,

each against the sampling noise of the data (the fit's contiguous noise blocks) plus how far the
moments move within θ̂'s uncertainty (Σ_k |∂/∂θ_k|·sd_k, sd_k = √(se_k² + bias.sd_k²), infinite
for a parameter the data do not determine): a check along a direction the fit leaves open
cannot fail.  A failed check
does not change θ̂: it adds a note to the report ("stationarity: …"), the entry
``info["stationarity"]`` (so the summary's first line shows it) and a
:class:`~dynosed_sym.errors.StationarityWarning`; ``fit.stationarity`` holds the
:class:`~dynosed_sym.simulation.stationarity.StationarityCheck` of every checked fit.

Checked: data in memory (arrays, DataFrames; at most 20,000 rows spread over the data) and files
(their first 20,000 rows).  Not checked: iterators (already consumed by the fit) and designs.
The local route's data may be restricted to regions, whose moments are not those of the law:
there the moments are checked only when the probes were chosen from X by k-means
(``probes=k``); otherwise — and for a transient snapshot fitted with ``dlogp_dt=`` — only θ̂
itself (a drift linear in x with a Jacobian eigenvalue of real part ≥ 0 has no stationary law
at all).
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ..data.arrays import as_samples
from ..data.blocks import block_edges
from ..data.sources import open_source
from ..errors import DynosedError, StationarityWarning
from ..options import DEFAULT_BLOCKS
from ..simulation.stationarity import (
    IMBALANCE_BORDERLINE,
    MAX_ROWS,
    Z_SIGNIFICANT,
    check_linear_drift,
    check_stationarity,
)
from ..solve.report import CONSISTENCY_P

__all__ = ["flag_stationarity"]


def _rows(X, model):
    """(rows (n, d), noise-block group of each row) or None when X cannot be read again."""
    if isinstance(X, (str, os.PathLike)):
        source = open_source(X, model, "X")
        try:
            Xs = np.asarray(source.head(MAX_ROWS), dtype=float)
        finally:
            source.close()
    elif isinstance(X, np.ndarray) or hasattr(X, "to_numpy"):
        Xs = as_samples(X, model, "X")
    else:
        return None
    n = Xs.shape[0]
    if n < 2:
        return None
    edges = block_edges(n, DEFAULT_BLOCKS)
    groups = np.repeat(np.arange(edges.size - 1), np.diff(edges))
    if n > MAX_ROWS:
        keep = np.linspace(0, n - 1, MAX_ROWS).astype(np.int64)
        Xs, groups = Xs[keep], groups[keep]
    return Xs, groups


def _theta_sd(report):
    """√(se² + bias_sd²) per parameter (inf where the data do not determine it), or None."""
    se = report.std_errors
    if se is None:
        return None
    se = np.asarray(se, dtype=float)
    bias = report.bias_sd
    if bias is not None and report.estimator == "resolved":
        se = np.sqrt(se**2 + np.asarray(bias, dtype=float) ** 2)
    # a NaN spread (none is known to arise) is an undetermined parameter, not a refused argument
    return np.where(np.isnan(se), np.inf, se)


def flag_stationarity(fit, X, *, stationary_data=True, points=None):
    """Check ``fit`` (a FitResult) for a stationary law of its drift consistent with the data X
    it was fitted on; flag it (note, ``info["stationarity"]``, warning) when there is none.
    Returns ``fit``.

    ``stationary_data=False``: the data's moments are not those of a stationary law (regions of
    it, as the local route may get, or a transient snapshot fitted with ``dlogp_dt=``); then only
    θ̂ itself is checked — a drift linear in x must have a Jacobian with eigenvalues of negative
    real part — at ``points`` (default: the first rows of X)."""
    fit.stationarity = None
    model = fit.model
    if model.inputs or getattr(fit, "design", None) is not None or model.n == 0:
        return fit
    try:
        got = None if X is None else _rows(X, model)
    except DynosedError:  # a source that cannot be read twice: the fit said what it is
        got = None
    if not stationary_data:
        if points is None and got is not None:
            points = got[0][:64]
        if points is None:
            return fit
        check = check_linear_drift(model, fit.theta, points)
    else:
        if got is None:
            return fit
        check = check_stationarity(model, fit.theta, *got, theta_sd=_theta_sd(fit.report))
        _settle_attenuated(fit, model, *got)
    fit.stationarity = check
    if check.verdict in ("stationary", "not checked"):
        return fit
    what = "the fitted drift" + (
        " has no stationary law consistent with the data"
        if check.failed
        else " is only borderline consistent with a stationary law of the data"
    )
    note = f"stationarity: {what}: " + "; ".join(check.reasons)
    note += (
        " — the data may not be a stationary snapshot (a diverging or unsettled process), or "
        "θ̂ is far from the truth; the intervals above assume a stationary law"
    )
    fit.report.notes.append(note)
    fit.info["stationarity"] = check.verdict
    warnings.warn(f"{model.name}: {note}", StationarityWarning, stacklevel=3)
    return fit


def _settle_attenuated(fit, model, rows, groups):
    """A rejection the test profiled along the unresolved directions answers but for its noise
    cap (``misspec_unresolved``: p ≥ the level, θ° inside every interval, more than
    :data:`~dynosed_sym.solve.verdicts.NOISE_INFLATION_MAX` times the noise) becomes
    "undetermined" when the estimate itself does not hold the data's spread.

    The cap keeps a misfit along a symmetry of the law INCONSISTENT: there θ̂ fits the data's
    second moments and only a rotation the law does not see is free.  An estimate attenuated as
    a whole fails them instead — by the variance balance ``E[2(vᵀf)(vᵀx̃)] + 2vᵀDv = 0``, which
    fixes the drift's size through D, its drift is too weak for the spread (the variance grows)
    — and the noise a drift of the data's size carries is then the truth's, not an inflation: a
    coupled FitzHugh–Nagumo pair at N = 2000, correct, needed 7050× (140× at the truth itself).
    The balance is taken at θ̂ alone (the fit's own check allows for θ's uncertainty, infinite
    along an open scale), flagged as the stationarity check flags it (beyond
    ``Z_SIGNIFICANT`` standard errors and ``IMBALANCE_BORDERLINE`` of its terms)."""
    rep = fit.report
    test = rep.misspec_unresolved
    if rep.consistent is not False or test is None or test.undetermined:
        return
    if test.p_value < CONSISTENCY_P or test.outside:
        return
    at = check_stationarity(model, fit.theta, rows, groups)
    rate, se, imbalance = at.variance_rate, at.variance_rate_se, at.imbalance
    if rate is None:
        return
    grows = (rate > Z_SIGNIFICANT * se) & (imbalance > IMBALANCE_BORDERLINE)
    if not grows.any():
        return
    k = int(np.argmax(np.where(grows, imbalance, -np.inf)))
    rep.consistent = None
    rep.misspec_attenuated = (
        f"the variance along {at.direction_names[k]} grows at {rate[k]:.3g} per time unit "
        f"(± {se[k]:.2g}), its drift and noise terms out of balance by {imbalance[k]:+.0%}"
    )
