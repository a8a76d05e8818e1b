"""The result of :func:`density_from_dynamics`: a normalised density with exact derivatives."""

from __future__ import annotations

import numpy as np

from .. import arguments
from ..errors import DataError
from . import flow_mixture as fm
from .diagnostics import residual_ratio
from .dynamics import DynamicsTerms
from .optimize import residual_loss

__all__ = ["LearnedDensity", "as_points"]


def as_points(P, d, state_names, name="P"):
    """Evaluation points as a float (M, d) array; a DataFrame is read by its state columns.

    A 1-D array is one point of d values, except for d = 1, where it is M points (a column)."""
    if hasattr(P, "columns"):
        missing = [s for s in state_names if s not in P.columns]
        if missing:
            raise DataError(
                f"{name}: DataFrame has no column {missing[0]!r} (state: {', '.join(state_names)})"
            )
        P = P[state_names].to_numpy()
    try:
        arr = np.asarray(P, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: cannot convert to a float array ({exc})") from None
    if arr.ndim == 1:
        # one point of d values; in one dimension a 1-D array is M points (a column)
        arr = arr[:, None] if d == 1 else (arr[None, :] if arr.shape[0] == d else arr)
    if arr.ndim != 2 or arr.shape[1] != d:
        raise DataError(f"{name}: expected shape (M, {d}), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise DataError(
            f"{name}: contains NaN or inf (row {int(np.flatnonzero(~np.isfinite(arr).all(1))[0])})"
        )
    return np.ascontiguousarray(arr)


def _finite_at(values, X, what, state_names):
    """``values`` (M, …) at the points X (M, d), or a DataError naming the first point where they
    are not finite (far out, the learned tails overflow: log p at x = 1e100 was NaN without a
    word); a log density of −∞ is kept (the density underflows to 0 there)."""
    flat = values.reshape(values.shape[0], -1)
    bad = ~np.isfinite(flat) & ~((flat == -np.inf) & (what == "log density"))
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size:
        i = int(rows[0])
        point = ", ".join(f"{n} = {v:.3g}" for n, v in zip(state_names, X[i]))
        raise DataError(
            f"P: the learned density's {what} is not finite at row {i} ({point}; {rows.size} "
            "row(s) in all): the point lies so far beyond the density's support that its tails "
            "overflow double precision; evaluate it at points nearer its samples (.sample(n))"
        )
    return values


class LearnedDensity:
    """A normalised stationary density learned from a model's drift and diffusion.

    Attributes
    ----------
    model : SDEModel
    theta : numpy.ndarray (n,)
    spec : FlowMixtureSpec
    params : dict of name → numpy.ndarray
        Trained centroids, log-weights, precision Cholesky factor, tail strength and coupling
        weights.
    loss_history : numpy.ndarray (steps,)
        Estimate of the objective ∫ q R² (mean R² over the step's collocation points) at each
        step of the returned run, before that step's update.
    train_seconds : float
        Wall-clock time of the whole call (starting simulation, all runs, checks; including the
        kernels' first compile).
    settings : dict
        The call's options: ``init`` ("simulation", "blob" or "samples"), ``architecture``,
        ``training`` and ``start`` (the option objects), ``seed`` and ``out_dir``.
    diagnostic : DensityDiagnostic or None
        Convergence verdict and checks (None for a density built by hand).
    """

    def __init__(
        self, model, theta, spec, params, loss_history, train_seconds, settings, diagnostic=None
    ):
        self.model = model
        self.theta = theta
        self.spec = spec
        self.params = {k: np.array(v, dtype=float) for k, v in params.items()}
        self.loss_history = np.asarray(loss_history, dtype=float)
        self.train_seconds = float(train_seconds)
        self.settings = dict(settings)
        self.diagnostic = diagnostic

    @property
    def d(self):
        return self.spec.d

    @property
    def converged(self):
        """True when training converged and passed its checks (``diagnostic``); None if unknown."""
        return None if self.diagnostic is None else bool(self.diagnostic.converged)

    def _terms(self):
        return DynamicsTerms(self.model, self.theta, self.settings.get("out_dir"))

    def _points(self, P):
        return as_points(P, self.d, self.model.state_names)

    def _jet(self, P, order, what):
        """The ``order``-th jet of log p at the rows of P, or a DataError naming the first row
        where it is not finite (−∞ allowed for log p: a density that underflows to 0)."""
        X = self._points(P)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            values = fm.jets(self.spec, self.params, X, order=order)[order]
        return _finite_at(values, X, what, self.model.state_names)

    def log_prob(self, P) -> np.ndarray:
        """Normalised log density at the rows of P (M, d) → (M,)."""
        return self._jet(P, 0, "log density")

    def prob(self, P) -> np.ndarray:
        """Density at the rows of P (M, d) → (M,)."""
        return np.exp(self.log_prob(P))

    def score(self, P) -> np.ndarray:
        """Score ∇log p at the rows of P (M, d) → (M, d)."""
        return self._jet(P, 1, "score")

    def score_jacobian(self, P) -> np.ndarray:
        """Jacobian of the score (the Hessian of log p) at the rows of P → (M, d, d)."""
        return self._jet(P, 2, "score Jacobian")

    def score_divergence(self, P) -> np.ndarray:
        """∇·s = Δ log p at the rows of P → (M,)."""
        return np.trace(self.score_jacobian(P), axis1=1, axis2=2)

    def residual(self, P) -> np.ndarray:
        """Stationary Fokker–Planck residual R of the learned density at the rows of P → (M,)."""
        X = self._points(P)
        return np.asarray(residual_loss(self.spec, self.params, X, self._terms()(X))[1])

    def residual_ratio(self, n=8192, seed=0) -> float:
        """ρ = E_q[R²] / E_q[Σ terms²] on ``n`` fresh draws (``diagnostic``'s residual check)."""
        X = self.sample(n, seed=seed)
        return residual_ratio(self.spec, self.params, self._terms(), X)[0]

    def sample(self, n, seed=0) -> np.ndarray:
        """Exact draws from the learned density (latent mixture, inverted flow) → (n, d)."""
        n = arguments.integer(n, "n", minimum=1)
        rng = np.random.default_rng(arguments.seed(seed))
        xi = fm.sample_latent(self.spec, self.params, n, rng)
        return fm.inverse_flow(self.spec, self.params, xi)

    def __repr__(self):
        final = self.loss_history[-1] if self.loss_history.size else float("nan")
        check = "" if self.diagnostic is None else f"{self.diagnostic.short()}, "
        return (
            f"LearnedDensity(model={self.model.name!r}, d={self.d}, "
            f"components={self.spec.n_components}, flow_layers={self.spec.n_layers}, "
            f"steps={self.loss_history.size}, final_loss={final:.4g}, {check}"
            f"train_seconds={self.train_seconds:.1f})"
        )
