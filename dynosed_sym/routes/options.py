"""What the fits compute: small frozen option objects (the pattern of :mod:`dynosed_sym.options`).

* :class:`Features` — the kernel of the global route: random Fourier features, their length
  scale and the seed;
* :class:`Solver` — how θ is solved for: linear or gradient method, regularisation λ, the
  statistic and estimator, the prior scale of the honest intervals, the gradient search's start
  and budget.

:func:`dynosed_sym.fit_global` takes ``features=``, ``solver=`` and ``execution=``
(:class:`dynosed_sym.options.Execution`); :func:`dynosed_sym.fit_local` takes ``scores=``
(:class:`Scores`: how the scores at the probes are estimated), ``solver=`` and ``execution=``.
Each object is checked when it is built (a :class:`~dynosed_sym.errors.DataError` names the
class and the field); what needs the model (``theta0``, a per-parameter ``prior_scale``) is
checked by the fit.  Variants come from :func:`dataclasses.replace`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import arguments
from ..assembly.features import check_lengthscale
from ..errors import ModelError
from ..options import Execution, moved_to

__all__ = [
    "Features",
    "Solver",
    "Scores",
    "SOLVER_METHODS",
    "STATISTICS",
    "ESTIMATORS",
    "moved_to",
    "START_LIMIT",
    "check_start",
]

SOLVER_METHODS = (None, "linear", "gradient")
STATISTICS = (None, "u", "v")
ESTIMATORS = (None, "resolved", "ridge")

#: The gradient search squares θ (its norm, the trust region's steps): a start beyond
#: √(largest double) ≈ 1.34e154 overflows there (SciPy's RuntimeWarnings, then a search from inf).
START_LIMIT = math.sqrt(np.finfo(float).max)


def check_start(start, model, theta0):
    """``start`` (the gradient search's start, or None), or a ModelError naming ``theta0`` (or
    ``nominal``, the start when no theta0 is given) and the parameter whose value is beyond
    :data:`START_LIMIT`."""
    if start is None or not (np.abs(start) > START_LIMIT).any():
        return start
    k = int(np.flatnonzero(np.abs(start) > START_LIMIT)[0])
    what = "theta0" if theta0 is not None else "nominal (the start: no theta0 is given)"
    raise ModelError(
        f"{what}: value of {model.param_names[k]!r} is {start[k]:.3g}, beyond {START_LIMIT:.3g} "
        "(the square root of the largest double): the gradient solver squares θ (its norm, the "
        "trust region's steps), which would overflow; start from a theta0 of moderate size"
    )


@dataclass(frozen=True)
class Features:
    """The Gaussian kernel of the global route, approximated by random Fourier features.

    Parameters
    ----------
    n_features : int
        Number m of random Fourier features (default 2048).
    bandwidth : "auto", "median" or float
        Length scale ℓ of the Gaussian kernel.  "median" uses the median pairwise distance of a
        seeded subsample (≤ 1000 rows) of the first ``options.BANDWIDTH_ROWS`` (65,536) rows —
        the same rows for every kind of input.  "auto" (default) is the median's fit when it
        resolves every direction, else the fit at 0.5, 2 or 0.25 × the median that resolves
        the most (:mod:`dynosed_sym.routes.bandwidth`; up to three more fits, models with at
        most 64 parameters; ``fit.info["bandwidth_search"]`` and a summary note say what was
        tried).  A given ℓ below 1e-150 is refused (the squared kernel frequencies ω² ~ 1/ℓ²
        would overflow).
    seed : int
        Seeds the bandwidth subsample, the random features and the perturbed starts of the
        gradient method (default 0).

    Examples
    --------
    >>> Features(n_features=512, seed=3)
    Features(n_features=512, bandwidth='auto', seed=3)
    >>> Features(bandwidth="mean")
    Traceback (most recent call last):
    ...
    dynosed_sym.errors.DataError: Features.bandwidth must be 'auto', 'median' or a positive...
    """

    n_features: int = 2048
    bandwidth: str | float = "auto"
    seed: int = 0

    def __post_init__(self):
        arguments.check_field(self, "n_features", arguments.integer, minimum=1)
        arguments.check_field(self, "bandwidth", _bandwidth)
        arguments.check_field(self, "seed", arguments.seed)


def _bandwidth(value, name):
    if isinstance(value, str):
        if value not in ("auto", "median"):
            raise arguments.DataError(
                f"{name} must be 'auto', 'median' or a positive number, got {value!r}"
            )
        return value
    # (below 1e-150 the squared kernel frequencies ω² ~ 1/ℓ² overflow: named here, when built)
    return check_lengthscale(arguments.number(value, name, positive=True), name)


@dataclass(frozen=True)
class Solver:
    """How θ is solved for, on either route.

    Parameters
    ----------
    method : {None, "linear", "gradient"}
        None (default): linear for a model affine in θ, gradient otherwise.  "gradient" also fits
        an affine model by trust-region least squares (the optimum is the linear solve's).
    lam : float
        Tikhonov regularisation λ ≥ 0 (default 10⁻⁶).  With the resolved estimator it acts only
        on the directions the data do not resolve, whose components are the ridge's
        ``σ²/(σ² + λ)`` share of the least-squares ones (docs/design-statistics.md §8).
    statistic : {None, "u", "v"}
        "u": the unbiased U-statistic of the kernel Stein discrepancy (global route default);
        "v": the V-statistic ‖Aθ − b‖² (local route default).  None: the route's default.
    estimator : {None, "resolved", "ridge"}
        "resolved": no regularisation on the directions the data resolve above their noise,
        honest intervals including the bias from what they cannot separate; "ridge": Tikhonov λ on
        every direction, sandwich intervals.  None: "resolved", except "ridge" with the
        V-statistic on the global route.
    prior_scale : "ml", float, array, dict or None
        Scale τ of the parameters behind the honest intervals of the resolved estimator:
        "ml" (default) the maximum-likelihood scale of the identified estimates; a number, or one
        per parameter; None: no widening (variance-only intervals).
    theta0 : array or dict, optional
        Start of the gradient method (default: ``model.nominal``; zeros for an affine model).
    projection : bool
        Gradient method: eliminate the separable parameters exactly (variable projection) and
        search only the others (default True).
    n_starts : int
        Gradient method: starts (``theta0`` plus seeded perturbations); the lowest loss wins.
    max_nfev : int, optional
        Gradient method: evaluations allowed per search (default: SciPy's, 100·n).  A search
        stopped by it is reported (``FitResult.converged`` False, a ConvergenceWarning).
    seed : int, optional
        Gradient method: seeds the perturbed starts.  None (default): ``Features.seed`` on the
        global route, 0 on the local one.
    profile : bool
        Gradient method: widen each linearised interval to the loss's profile where the loss is
        not quadratic over it (default True; a few constrained fits per parameter,
        :mod:`dynosed_sym.solve.profile`, docs/nonaffine.md).  False: the linearisation's.
    temper : bool
        A drift not affine in θ, resolved estimator: temper the fit towards the ridge's optimum
        the gradient search found, direction by direction, where its move from there (the
        U-statistic's correction, or the V-statistic's removal of λ) adds more noise than the
        bias it removes (default True; :mod:`dynosed_sym.solve.temper`, docs/nonaffine.md; the
        intervals count the move not taken).  False: the resolved fixed point itself.

    Examples
    --------
    >>> Solver(method="gradient", n_starts=4)
    Solver(method='gradient', lam=1e-06, statistic=None, estimator=None, prior_scale='ml',
           theta0=None, projection=True, n_starts=4, max_nfev=None, seed=None, profile=True,
           temper=True)
    >>> Solver(lam=-1)
    Traceback (most recent call last):
    ...
    dynosed_sym.errors.DataError: Solver.lam must be non-negative, got -1.0
    """

    method: str | None = None
    lam: float = 1e-6
    statistic: str | None = None
    estimator: str | None = None
    prior_scale: object = "ml"
    theta0: object = None
    projection: bool = True
    n_starts: int = 1
    max_nfev: int | None = None
    seed: int | None = None
    profile: bool = True
    temper: bool = True

    def __post_init__(self):
        arguments.check_field(self, "method", arguments.choice, allowed=SOLVER_METHODS)
        arguments.check_field(self, "lam", arguments.number, nonnegative=True)
        arguments.check_field(self, "statistic", arguments.choice, allowed=STATISTICS)
        arguments.check_field(self, "estimator", arguments.choice, allowed=ESTIMATORS)
        arguments.check_field(self, "projection", arguments.flag)
        arguments.check_field(self, "profile", arguments.flag)
        arguments.check_field(self, "temper", arguments.flag)
        arguments.check_field(self, "n_starts", arguments.integer, minimum=1)
        if self.max_nfev is not None:
            arguments.check_field(self, "max_nfev", arguments.integer, minimum=1)
        if self.seed is not None:
            arguments.check_field(self, "seed", arguments.seed)
        arguments.check_field(self, "prior_scale", _prior_scale)


def _prior_scale(value, name):
    """``value`` if it can be a prior scale: "ml", None, a number ≥ 0, numbers ≥ 0 (one per
    parameter) or ``{parameter: number ≥ 0}``; how many and which parameters the fit checks
    (:func:`dynosed_sym.solve.intervals.check_prior_scale`)."""
    if value is None or (isinstance(value, str) and value == "ml"):
        return value
    what = f"{name} must be 'ml', None, a number ≥ 0, one per parameter or {{parameter: number}}"
    values = list(value.values()) if isinstance(value, dict) else value
    try:
        flags = isinstance(value, str) or any(
            isinstance(v, (bool, np.bool_)) for v in np.ravel(np.asarray(values, dtype=object))
        )
        arr = None if flags else np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # (text, ragged lists)
        arr = None
    if arr is None:
        raise arguments.DataError(f"{what}, got {value!r}")
    if arr.ndim > 1:
        raise arguments.DataError(f"{what}, got an array of shape {arr.shape}")
    if not (np.isfinite(arr).all() and (arr >= 0).all()):
        raise arguments.DataError(f"{name} must be finite and ≥ 0, got {value!r}")
    return value


def _temperature(value, name):
    """ "auto" or a positive finite number (as a float)."""
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, (str, bool, np.bool_)):
        raise arguments.DataError(f"{name} must be 'auto' or a positive number, got {value!r}")
    return arguments.number(value, name, positive=True)


def _optional_positive(value, name):
    """None, or a positive finite number (as a float)."""
    return None if value is None else arguments.number(value, name, positive=True)


def _radius(value, name):
    """None, or one positive finite number or one per probe (how many the fit checks)."""
    if value is None:
        return None
    r = arguments.float_array(value, name)
    if r.ndim > 1 or r.size == 0 or not (np.isfinite(r).all() and (r > 0).all()):
        raise arguments.DataError(
            f"{name} must be a positive number or one per probe, got {value!r}"
        )
    return value


def _times(value, name):
    """None, or finite snapshot times (which of them are interior the fit checks)."""
    if value is None:
        return None
    t = arguments.float_array(value, name)
    if t.ndim > 1 or t.size == 0 or not np.isfinite(t).all():
        raise arguments.DataError(f"{name} must be finite snapshot times, got {value!r}")
    return value


@dataclass(frozen=True)
class Scores:
    """How the local route obtains the scores s = ∇log p and their Jacobians at the probes.

    Parameters
    ----------
    score : "kernel", "local_gaussian", "score_matching", (S, J) arrays, ScoreEstimator or callable
        The kernel estimator of docs/method.md §2 (default), its deconvolved local-Gaussian
        variant (no smoothing bias), local score matching (needs ``radius``), arrays S (M, d) and
        J (M, d, d) with ``J[i, j, l] = ∂s_j/∂x_l`` (exact or external scores), or any
        ``fn(X, probes) -> (S, J)``.  See :mod:`dynosed_sym.routes.scores`.
    temperature : float or "auto"
        Precision T of the Gaussian kernel (bandwidth 1/√T) of the kernel estimators; "auto"
        (default) balances the kernel's smoothing bias against its noise around the probes.
    radius : float or (M,) array, optional
        Ball radius of local score matching (default: the radius of probes given as Balls).
    degree : int
        Monomial degree of the local log-density in score matching (default 2: quadratic).
    dlogp_bandwidth : float, optional
        Time courses: bandwidth of the Gaussian kernel densities whose 3-point time difference
        estimates ∂ₜlog p at an interior snapshot (default 2/√T).
    use_times : sequence of float, optional
        Time courses: the interior snapshot times whose rows are used (default: all).

    Each field is checked when the object is built, as far as it can be without the data: the
    temperature "auto" or positive, the radius and the bandwidth positive, the degree an integer
    ≥ 2, the times finite.  What depends on ``score`` and the probes (one radius per probe, a
    radius or degree given with a score that does not use it, interior snapshot times) the fit
    checks when it builds the estimator, each error naming the field.

    Examples
    --------
    >>> Scores(score="score_matching", radius=0.5)
    Scores(score='score_matching', temperature='auto', radius=0.5, degree=2,
           dlogp_bandwidth=None, use_times=None)
    """

    score: object = "kernel"
    temperature: object = "auto"
    radius: object = None
    degree: int = 2
    dlogp_bandwidth: float | None = None
    use_times: object = None

    def __post_init__(self):
        arguments.check_field(self, "temperature", _temperature)
        arguments.check_field(self, "radius", _radius)
        arguments.check_field(self, "degree", arguments.integer, minimum=2)
        arguments.check_field(self, "dlogp_bandwidth", _optional_positive)
        arguments.check_field(self, "use_times", _times)


#: The execution keywords, as fields of ``execution=Execution(...)``.
EXECUTION_KEYWORDS = ("n_blocks", "chunk_rows", "progress", "out_dir", "backend", "client")
EXECUTION_MOVED = moved_to("execution", Execution, *EXECUTION_KEYWORDS)
