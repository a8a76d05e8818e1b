"""Fitting entry points and :class:`FitResult`."""

from __future__ import annotations

import itertools

import numpy as np

from .assembly import assemble_global, draw_features, median_lengthscale
from .compiled import compile_model
from .data import DEFAULT_BLOCKS, iter_blocks
from .errors import DataError
from .report import analyse, solve_tikhonov

__all__ = ["FitResult", "fit_global"]


class FitResult:
    """Estimate, linear system and identifiability report of one fit.

    Attributes
    ----------
    theta : (n,) array
        Estimated parameters in ``model.params`` order.
    params : dict
        ``{name: estimate}``.
    A : (m, n) array, b : (m,) array
        The assembled system A θ ≈ b.
    report : IdentifiabilityReport
    route : str
    n_samples : int
    info : dict
        Route settings (bandwidth, number of features, λ, seed ...).
    """

    def __init__(self, model, theta, A, b, report, route, n_samples, info):
        self.model = model
        self.theta = np.asarray(theta, dtype=float)
        self.A, self.b = A, b
        self.report = report
        self.route = route
        self.n_samples = int(n_samples)
        self.info = dict(info)

    @property
    def params(self) -> dict:
        return dict(zip(self.model.param_names, self.theta.tolist()))

    def summary(self, truth=None) -> str:
        """A readable table: estimate, freeness, identifiability, then rank and consistency.

        Parameters
        ----------
        truth : array or dict, optional
            True values, shown beside the estimates when given.
        """
        rep = self.report
        names = self.model.param_names
        tv = self.model.theta_vector(truth, "truth") if truth is not None else None
        free = set(rep.free_params)
        w = max(9, max(len(nm) for nm in names))
        head = f"{'parameter':<{w}}  {'estimate':>12}" + (f"  {'truth':>10}" if tv is not None else "")
        head += f"  {'freeness':>10}  {'normalised':>10}  identifiable"
        lines = [f"{self.model.name}: {self.route} route, N = {self.n_samples}, "
                 + ", ".join(f"{k} = {v}" for k, v in self.info.items()), head, "-" * len(head)]
        for k, nm in enumerate(names):
            row = f"{nm:<{w}}  {self.theta[k]:>12.5g}"
            if tv is not None:
                row += f"  {tv[k]:>10.4g}"
            row += f"  {rep.freeness[k]:>10.3g}  {rep.freeness_normalised[k]:>10.3g}  "
            row += "no" if nm in free else "yes"
            lines.append(row)
        lines.append("")
        lines.append(str(rep))
        return "\n".join(lines)

    def __repr__(self):
        vals = ", ".join(f"{k}={v:.4g}" for k, v in itertools.islice(self.params.items(), 6))
        more = ", ..." if self.model.n > 6 else ""
        return f"FitResult({self.route}, {vals}{more}, rank={self.report.rank}/{self.model.n})"


def _check_positive(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{what} must be a number, got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise DataError(f"{what} must be positive and finite, got {value!r}")
    return v


def fit_global(model, X, n_features=2048, bandwidth="median", lam=1e-6, seed=0,
               n_blocks=DEFAULT_BLOCKS, out_dir=None) -> FitResult:
    """Fit an affine model by the global kernel-Stein route (DESIGN §2).

    Parameters
    ----------
    model : SDEModel
        Must be affine in its parameters (NotAffineError otherwise).
    X : (N, d) array, DataFrame, ``.npy`` path or iterable of chunks
        Unordered stationary samples.
    n_features : int
        Number m of random Fourier features.
    bandwidth : "median" or float
        Length scale ℓ of the Gaussian kernel; "median" uses the median pairwise
        distance of a seeded subsample of (the first block of) the data.
    lam : float
        Tikhonov regularisation λ ≥ 0.
    seed : int
        Seeds the bandwidth subsample and the random features.
    n_blocks : int
        Contiguous data blocks used to estimate the sampling noise of A and b.

    Returns
    -------
    FitResult
    """
    model.derivation.require_affine()
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1:
        raise DataError(f"n_features must be a positive integer, got {n_features!r}")
    lam = float(lam)
    if not (np.isfinite(lam) and lam >= 0):
        raise DataError(f"lam must be a non-negative number, got {lam!r}")
    cm = compile_model(model, out_dir)
    blocks = iter_blocks(X, model, "X", n_blocks=n_blocks)
    first = next(blocks, None)
    if first is None:
        raise DataError("X: no samples")
    if isinstance(bandwidth, str):
        if bandwidth != "median":
            raise DataError(f"bandwidth must be 'median' or a positive number, got {bandwidth!r}")
        ell = median_lengthscale(first, seed=seed)
    else:
        ell = _check_positive(bandwidth, "bandwidth")
    feats = draw_features(model.d, int(n_features), ell, seed=seed)
    A, b, A_blocks, b_blocks, counts = assemble_global(cm, itertools.chain([first], blocks), feats)
    N = int(counts.sum())
    if N < 2:
        raise DataError(f"X: {N} sample(s); at least 2 are needed")
    theta = solve_tikhonov(A, b, lam)
    report = analyse(A, b, theta, lam, model.param_names, A_blocks, b_blocks, counts)
    info = {"m": int(n_features), "bandwidth": round(ell, 6), "lam": lam, "seed": seed}
    return FitResult(model, theta, A, b, report, "global", N, info)
