"""Dynamics → density: train the flow-mixture density on the stationary Fokker–Planck residual.

No data are used.  The objective is the residual's mean square under the model's own density,

    J(ψ) = ∫ q_ψ(x) R_ψ(x)² dx,

with R the local residual of docs/design.md §2, evaluated with the model's own score and Jacobian.
J ≥ 0 and J = 0 exactly at the stationary law.  Each step draws fresh collocation points from
q_ψ (exact samples: latent mixture through the inverted flow) and takes one Adam step along a
Monte-Carlo estimate of ∇J, formed from the exact derivatives of one recorded computation
(:mod:`._tape`):

    ∇J ≈ mean_i [ ∇_ψ R_i² + ∇_ψ log q_ψ(x_i) · (R_i² − b) ],   b = mean_i R_i².

The second (score-function) term is the part of the gradient that comes from the measure q_ψ
itself.  Why it matters: if the points are merely re-drawn from q_ψ but treated as fixed, the
optimiser never sees that moving mass into a region exposes the residual there; the density then
drifts to wherever its own samples happen to give a small residual (on the test oscillators it
leaves the stationary law entirely).  b is the usual baseline: E_q[∇log q] = 0, so subtracting
it lowers the variance; taking it from the same batch biases the estimate by O(1/N) only.

There is deliberately no "broadening" (extra points from a widened copy of q with the measure
held fixed): in every run we tried it, those fixed-measure points again let the density escape.
"""

from __future__ import annotations

import time

import numpy as np

from .. import arguments
from ..errors import DataError, ModelError, TrainingDivergedError
from ..model import SDEModel
from ..progress import progress_bar, progress_enabled
from . import _tape as tp
from . import flow_mixture as fm
from .dynamics import DynamicsTerms

__all__ = ["density_from_dynamics", "LearnedDensity", "residual_loss"]


def residual_loss(spec, params, X, terms):
    """Surrogate whose value estimates J = ∫ q R² and whose gradient is the estimate of ∇J.

    Parameters
    ----------
    spec : FlowMixtureSpec
    params : dict of name → array or tape node
    X : numpy.ndarray (N, d)
        Collocation points: draws from the current density q.
    terms : tuple (c (N, d), e (N,), D (N, d, d))
        From :class:`DynamicsTerms`.

    Returns
    -------
    surrogate : scalar (tape node when ``params`` holds nodes)
        (1/N) Σ_i [R_i² + (log q(x_i) − log q(x_i)|fixed) (R_i² − b)], b = mean R².  Its value is
        the mean R²; the second term is zero in value and supplies the score-function part of
        the gradient.
    R : (N,) numpy.ndarray
        Residual at the points.
    """
    c, e, D = terms
    N = X.shape[0]
    logq, s, H = fm.jets(spec, params, X, order=2)
    Ds = tp.einsum("nij,nj->ni", D, s)
    R = tp.einsum("ni,ni->n", s, c - Ds) - tp.einsum("nij,nij->n", D, H) + e
    R2 = R * R
    R2v = np.asarray(tp.value_of(R2))
    weight = R2v - R2v.mean()
    measure_term = tp.total((logq - tp.value_of(logq)) * weight)
    return (tp.total(R2) + measure_term) * (1.0 / N), np.asarray(tp.value_of(R))


def _as_points(P, d, state_names, name="P"):
    """Evaluation points as a float (M, d) array; a DataFrame is read by its state columns.

    A 1-D array is one point of d values, except for d = 1, where it is M points (a column)."""
    if hasattr(P, "columns"):
        missing = [s for s in state_names if s not in P.columns]
        if missing:
            raise DataError(f"{name}: DataFrame has no column {missing[0]!r} (state: {', '.join(state_names)})")
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
        raise DataError(f"{name}: contains NaN or inf (row {int(np.flatnonzero(~np.isfinite(arr).all(1))[0])})")
    return np.ascontiguousarray(arr)


def _as_center(center, d):
    """init_center as d finite floats (a length-d sequence, or a (1, d) array)."""
    try:
        arr = np.asarray(center, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"init_center: cannot convert to a float array ({exc})") from None
    if arr.size != d or arr.ndim > 2 or (arr.ndim == 2 and arr.shape[0] != 1):
        raise DataError(f"init_center: expected {d} value{'s' if d != 1 else ''}, got shape {arr.shape}")
    arr = arr.reshape(d)
    if not np.isfinite(arr).all():
        raise DataError(f"init_center: contains NaN or inf ({arr.tolist()})")
    return arr


def _diverged(step, what):
    return TrainingDivergedError(
        f"density_from_dynamics: training diverged at step {step} ({what}); "
        "lower learning_rate or change init_scale/init_center")


def _collocation_points(spec, params, n, rng, step):
    """Fresh exact draws from the current density; TrainingDivergedError when they overflow."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            X = fm.inverse_flow(spec, params, fm.sample_latent(spec, params, n, rng))
    except np.linalg.LinAlgError:
        raise _diverged(step, "the mixture covariance became singular") from None
    if not np.isfinite(X).all():
        raise _diverged(step, "the inverted flow overflowed: collocation points are not finite")
    return X


class LearnedDensity:
    """A normalised stationary density learned from a model's drift and diffusion.

    Attributes
    ----------
    model : SDEModel
    theta : numpy.ndarray (n,)
    spec : FlowMixtureSpec
    params : dict of name → numpy.ndarray
        Trained centroids, log-weights, precision Cholesky factor and coupling weights.
    loss_history : numpy.ndarray (n_steps,)
        Estimate of the objective ∫ q R² (mean R² over the step's collocation points) at each
        step, before that step's update.
    train_seconds : float
        Wall-clock time of the training loop (including the kernels' first compile).
    settings : dict
        The training arguments.
    """

    def __init__(self, model, theta, spec, params, loss_history, train_seconds, settings):
        self.model = model
        self.theta = theta
        self.spec = spec
        self.params = {k: np.array(v, dtype=float) for k, v in params.items()}
        self.loss_history = np.asarray(loss_history, dtype=float)
        self.train_seconds = float(train_seconds)
        self.settings = dict(settings)

    @property
    def d(self):
        return self.spec.d

    def _points(self, P):
        return _as_points(P, self.d, self.model.state_names)

    def log_prob(self, P) -> np.ndarray:
        """Normalised log density at the rows of P (M, d) → (M,)."""
        return fm.jets(self.spec, self.params, self._points(P), order=0)[0]

    def prob(self, P) -> np.ndarray:
        """Density at the rows of P (M, d) → (M,)."""
        return np.exp(self.log_prob(P))

    def score(self, P) -> np.ndarray:
        """Score ∇log p at the rows of P (M, d) → (M, d)."""
        return fm.jets(self.spec, self.params, self._points(P), order=1)[1]

    def score_jacobian(self, P) -> np.ndarray:
        """Jacobian of the score (the Hessian of log p) at the rows of P → (M, d, d)."""
        return fm.jets(self.spec, self.params, self._points(P), order=2)[2]

    def score_divergence(self, P) -> np.ndarray:
        """∇·s = Δ log p at the rows of P → (M,)."""
        return np.trace(self.score_jacobian(P), axis1=1, axis2=2)

    def residual(self, P) -> np.ndarray:
        """Stationary Fokker–Planck residual R of the learned density at the rows of P → (M,)."""
        X = self._points(P)
        terms = DynamicsTerms(self.model, self.theta, self.settings.get("out_dir"))(X)
        return np.asarray(residual_loss(self.spec, self.params, X, terms)[1])

    def sample(self, n, seed=0) -> np.ndarray:
        """Exact draws from the learned density (latent mixture, inverted flow) → (n, d)."""
        n = arguments.integer(n, "n", minimum=1)
        rng = np.random.default_rng(arguments.seed(seed))
        xi = fm.sample_latent(self.spec, self.params, n, rng)
        return fm.inverse_flow(self.spec, self.params, xi)

    def __repr__(self):
        final = self.loss_history[-1] if self.loss_history.size else float("nan")
        return (f"LearnedDensity(model={self.model.name!r}, d={self.d}, "
                f"components={self.spec.n_components}, flow_layers={self.spec.n_layers}, "
                f"steps={self.loss_history.size}, final_loss={final:.4g}, "
                f"train_seconds={self.train_seconds:.1f})")


def density_from_dynamics(model, theta=None, *, n_components=16, n_layers=2, n_hidden=8,
                          n_steps=1500, n_points=512, learning_rate=0.02, final_learning_rate=5e-4,
                          average_from=0.5, init_center=None, init_scale=1.0, seed=0,
                          progress=None, out_dir=None) -> LearnedDensity:
    """Learn the stationary density of a known SDE from its drift and diffusion alone (no data).

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict, optional
        Parameter values (dict keyed by symbol or name); default ``model.nominal``.
    n_components : int
        Latent mixture components K.
    n_layers, n_hidden : int
        Affine-coupling layers of the near-identity flow and hidden tanh units per coupling
        (``n_layers=0``: the plain mixture).
    n_steps : int
        Adam steps.
    n_points : int
        Collocation points per step (fresh draws each step).
    learning_rate, final_learning_rate : float
        Adam step size, decayed on a cosine schedule from the first to the second.
    average_from : float in [0, 1]
        The returned parameters are an exponential moving average (decay 0.99) of the iterates
        from this fraction of the steps on (1: the last iterate), which removes most of the
        step-to-step noise of the stochastic gradient.
    init_center : array (d,), optional
        Centre of the initial centroids (default: the origin).
    init_scale : float
        Spread of the initial centroids; the initial covariance is (init_scale / 2)² I.  The
        learned density must be reachable from this starting blob: give the scale of the region
        where the stationary mass lies.
    seed : int
        Seeds initialisation and collocation draws; same seed ⇒ bitwise the same loss history.
    progress : bool, optional
        Progress bar (tqdm, when installed); default: only when standard error is a terminal.
    out_dir : str, optional
        Folder of the model's generated kernels (see :func:`dynosed_sym.compile_model`).

    Returns
    -------
    LearnedDensity
        ``.log_prob(P)``, ``.score(P)``, ``.sample(n, seed=)``, ``.loss_history``.

    Raises
    ------
    ModelError
        For a bad ``theta`` (names the parameter).
    DataError
        For bad settings (names the argument) or a drift that is not finite at a collocation point.
    TrainingDivergedError
        When the loss, a parameter or the drawn collocation points become non-finite (names the
        step; lower ``learning_rate``).
    """
    if not isinstance(model, SDEModel):
        raise ModelError(f"model: expected an SDEModel, got {type(model).__name__}")
    if theta is None:
        if model.nominal is None:
            raise ModelError(f"theta: model {model.name!r} has no nominal values; pass theta")
        theta = model.nominal
    theta = model.theta_vector(theta)
    n_components = arguments.integer(n_components, "n_components", minimum=1)
    n_layers = arguments.integer(n_layers, "n_layers", minimum=0)
    n_hidden = arguments.integer(n_hidden, "n_hidden", minimum=1)
    n_steps = arguments.integer(n_steps, "n_steps", minimum=1)
    n_points = arguments.integer(n_points, "n_points", minimum=2)
    learning_rate = arguments.number(learning_rate, "learning_rate", positive=True)
    final_learning_rate = arguments.number(final_learning_rate, "final_learning_rate", positive=True)
    average_from = arguments.number(average_from, "average_from", nonnegative=True)
    if average_from > 1:
        raise DataError(f"average_from must be in [0, 1], got {average_from}")
    init_scale = arguments.number(init_scale, "init_scale", positive=True)
    seed = arguments.seed(seed)
    if init_center is None:
        center = np.zeros(model.d)
    else:
        center = _as_center(init_center, model.d)
    settings = dict(n_components=n_components, n_layers=n_layers, n_hidden=n_hidden, n_steps=n_steps,
                    n_points=n_points, learning_rate=learning_rate,
                    final_learning_rate=final_learning_rate, average_from=average_from,
                    init_center=center.tolist(), init_scale=init_scale,
                    seed=seed, out_dir=out_dir)

    terms_of = DynamicsTerms(model, theta, out_dir)
    spec = fm.FlowMixtureSpec(model.d, n_components, n_layers, n_hidden)
    root = np.random.SeedSequence(seed)
    init_rng, colloc_rng = (np.random.default_rng(s) for s in root.spawn(2))
    params = fm.init_params(spec, center, init_scale, init_rng)
    names = list(params)
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    history = np.empty(n_steps)
    first_averaged = min(int(average_from * n_steps), n_steps - 1)
    averaged = None

    t0 = time.perf_counter()
    bar = progress_bar(progress_enabled(progress, streamed=True), total=n_steps,
                       desc=f"density {model.name}", unit="steps")
    try:
        for step in range(n_steps):
            # fresh exact draws from the current density: the measure of J
            X = _collocation_points(spec, params, n_points, colloc_rng, step)
            terms = terms_of(X)
            nodes = {k: tp.var(v) for k, v in params.items()}
            loss, _ = residual_loss(spec, nodes, X, terms)
            value = float(loss.value)
            if not np.isfinite(value):
                raise _diverged(step, "the residual loss is not finite")
            history[step] = value
            grads = tp.backward(loss, [nodes[k] for k in names])
            # cosine decay of the step size from learning_rate to final_learning_rate
            frac = step / max(n_steps - 1, 1)
            lr = final_learning_rate + 0.5 * (learning_rate - final_learning_rate) * (1 + np.cos(np.pi * frac))
            for k, g in zip(names, grads):
                m1[k] = beta1 * m1[k] + (1 - beta1) * g
                m2[k] = beta2 * m2[k] + (1 - beta2) * g * g
                mhat = m1[k] / (1 - beta1 ** (step + 1))
                vhat = m2[k] / (1 - beta2 ** (step + 1))
                params[k] = params[k] - lr * mhat / (np.sqrt(vhat) + eps)
                if not np.isfinite(params[k]).all():
                    raise _diverged(step, f"the update made parameter {k!r} non-finite")
            if step == first_averaged:
                averaged = {k: v.copy() for k, v in params.items()}
            elif step > first_averaged:
                averaged = {k: 0.99 * averaged[k] + 0.01 * params[k] for k in names}
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix_str(f"loss={value:.4g}")
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    return LearnedDensity(model, theta, spec, averaged, history, seconds, settings)
