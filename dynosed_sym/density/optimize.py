"""One training run: Adam on the stationary Fokker–Planck residual, scored and stopped on ρ.

The objective is the residual's mean square under the model's own density,

    J(ψ) = ∫ q_ψ(x) R_ψ(x)² dx,

with R the local residual of docs/method.md §2, evaluated with the model's own score and Jacobian.
J ≥ 0 and J = 0 exactly at the stationary law.  Each step draws fresh collocation points from
q_ψ (exact samples: latent mixture through the inverted flow) and takes one Adam step along a
Monte-Carlo estimate of ∇J, formed from the exact derivatives of one recorded computation
(:mod:`._tape`):

    ∇J ≈ mean_i [ ∇_ψ R_i² + ∇_ψ log q_ψ(x_i) · (R_i² − b) ],   b = mean_i R_i².

The second (score-function) term is the part of the gradient that comes from the measure q_ψ
itself.  Without it the points are re-drawn from q_ψ but treated as fixed: the optimiser never
sees that moving mass into a region exposes the residual there, and the density drifts to
wherever its own samples happen to give a small residual (on oscillators it leaves the
stationary law entirely).  b is the usual baseline: E_q[∇log q] = 0, so subtracting it lowers the
variance; taking it from the same batch biases the estimate by O(1/N) only.

**Slow modes are invisible to the residual.**  Moving mass between wells separated by a barrier
ΔV changes R by ~ the spectral gap (∝ e^{−ΔV/D}); J changes by its square (≈ 10⁻⁶ for ΔV = 3D),
far below the Monte-Carlo noise, so Adam's noise random-walks the share between wells.  The
*cell anchor* (:class:`CellAnchor`) keeps q's mass m_k in the soft cells of the starting mixture
(its components' responsibilities, fixed functions of x) near the simulation's m̂_k:

    J + a·S₀·Σ_k (m_k − m̂_k)²/m̂_k,

with S₀ the mean square of the residual's terms at the start, so that a
(:attr:`Training.anchor <dynosed_sym.density.Training.anchor>`) is scale-free.  Along directions
J sees, its curvature dwarfs the anchor's and the residual decides; along the slow ones the
anchor holds the simulated share.  Cells, not mixture weights, are anchored: mass can move
between wells through the flow while the weights stay put (anchored weights gave TV 0.013–0.022
on a 2-D double well with a barrier of 2 D, anchored cells 0.003–0.004).  The default
a = 3·10⁻² is the compromise measured on the sweep's double wells: at 10⁻² the 1-D well
x − x³, D = 0.2, seed 2 drifted to TV 0.026; at 10⁻¹ the 2-D well gave 0.009–0.010 against
0.005–0.008 (docs/density.md).

**Stopping rule and best iterate.**  Every :data:`CHECK_EVERY` steps the exponential average of
the iterates is scored by the residual ratio ρ (:mod:`.diagnostics`) on 4096 fixed draws (common
random numbers); the best one is kept.  A run stops when ρ ≤ ``tol`` at two scorings in a row, or
when ρ has not improved by a factor 1 − ``rtol`` for ``window`` steps at the final step size; a
plateau at a larger step size — or a scoring 3 times above the best — returns to the best average
and cuts the step size fourfold.
"""

from __future__ import annotations

import numpy as np

from ..errors import TrainingDivergedError
from . import _tape as tp
from . import flow_mixture as fm
from .diagnostics import residual_parts, residual_ratio
from .options import CHECK_EVERY

__all__ = ["residual_loss", "train_run", "collocation_points", "CellAnchor"]

_N_EVAL = 4096  # fixed (common-random-number) points of the scoring
_WARMUP = 50  # steps of linear learning-rate warm-up
_EMA = 0.98  # decay of the exponential average of the iterates
_LR_DROP = 4.0  # step-size factor at a plateau
_SPIKE = 3.0  # a scoring this many times above the best counts as a plateau at once
_TRACE_HOOK = None  # experiments: called as hook(step, averaged_params, rho) at every scoring


def residual_loss(spec, params, X, terms, extra_weight=None):
    """Surrogate whose value estimates J = ∫ q R² and whose gradient is the estimate of ∇J.

    Parameters
    ----------
    spec : FlowMixtureSpec
    params : dict of name → array or tape node
    X : numpy.ndarray (N, d)
        Collocation points: draws from the current density q.
    terms : tuple (c (N, d), e (N,), D (N, d, d))
        From :class:`DynamicsTerms`.
    extra_weight : numpy.ndarray (N,), optional
        Added to the score-function weights: the gradient then also holds mean_i g_i ∇log q(x_i),
        the estimate of ∇E_q[g] for a g with mean zero over the points (the cell anchor).  The
        value is unchanged.

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
    if extra_weight is not None:
        weight = weight + extra_weight
    measure_term = tp.total((logq - tp.value_of(logq)) * weight)
    return (tp.total(R2) + measure_term) * (1.0 / N), np.asarray(tp.value_of(R))


def _diverged(step, what):
    return TrainingDivergedError(
        f"density_from_dynamics: training diverged at step {step} ({what}); "
        "lower Training.learning_rate or move the start (Start(center=..., scale=...))"
    )


def collocation_points(spec, params, n, rng, step):
    """Fresh exact draws from the current density; TrainingDivergedError when they overflow."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            X = fm.inverse_flow(spec, params, fm.sample_latent(spec, params, n, rng))
    except np.linalg.LinAlgError:
        raise _diverged(step, "the mixture covariance became singular") from None
    if not np.isfinite(X).all():
        raise _diverged(step, "the inverted flow overflowed: collocation points are not finite")
    return X


class CellAnchor:
    """Pulls q's mass in the soft cells of the starting mixture towards the simulation's.

    Penalty a·S₀·Σ_k (m_k − m̂_k)²/m̂_k, m_k = E_q[φ_k] with φ_k the responsibilities of the starting
    mixture's components (fixed functions of x) and m̂_k their mean over the simulated samples.  Its
    gradient is E_q[g ∇log q] with g = Σ_k c_k (φ_k − m_k), c_k = 2aS₀(m_k − m̂_k)/m̂_k, estimated on
    each step's collocation points; m_k in c_k is an exponential average over steps (less noise).
    """

    def __init__(self, spec, params, reference, strength):
        from .init import soft_bins

        self._bins = soft_bins
        self.spec, self.params = spec, {k: v.copy() for k, v in params.items()}
        self.target = np.maximum(soft_bins(spec, self.params, reference).mean(0), 1e-6)
        self.strength = strength
        self.mass = None

    def point_weights(self, X, scale):
        phi = self._bins(self.spec, self.params, X)
        m = phi.mean(0)
        self.mass = m if self.mass is None else 0.9 * self.mass + 0.1 * m
        c = 2.0 * self.strength * scale * (self.mass - self.target) / self.target
        return (phi - m) @ c


def _eval_points(spec, params, u, eps):
    """Draws from q for fixed uniforms u (component choice) and normals eps (common random
    numbers)."""
    lw = params["log_weights"]
    w = np.exp(lw - lw.max())
    cdf = np.cumsum(w / w.sum())
    k = np.minimum(np.searchsorted(cdf, u), spec.n_components - 1)
    q = params["precision_chol"]
    L = q * spec.strict_lower + np.exp(q) * spec.eye
    xi = params["centroids"][k] + np.linalg.solve(L.T, eps.T).T
    return fm.inverse_flow(spec, params, xi)


def _copy(params):
    return {k: v.copy() for k, v in params.items()}


class _Adam:
    """Adam's moment estimates (β₁ = 0.9, β₂ = 0.999, ε = 10⁻⁸) and its update."""

    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def __init__(self, params):
        self.m1 = {k: np.zeros_like(v) for k, v in params.items()}
        self.m2 = {k: np.zeros_like(v) for k, v in params.items()}

    def update(self, params, grads, lr, step):
        """Updates ``params`` in place (one step of size ``lr``); names a non-finite one."""
        b1, b2 = self.beta1, self.beta2
        for k, g in grads.items():
            self.m1[k] = b1 * self.m1[k] + (1 - b1) * g
            self.m2[k] = b2 * self.m2[k] + (1 - b2) * g * g
            mhat = self.m1[k] / (1 - b1 ** (step + 1))
            vhat = self.m2[k] / (1 - b2 ** (step + 1))
            params[k] = params[k] - lr * mhat / (np.sqrt(vhat) + self.eps)
            if not np.isfinite(params[k]).all():
                raise _diverged(step, f"the update made parameter {k!r} non-finite")


class _Schedule:
    """The plateau schedule of the step size, the best averaged iterate and the stopping rule."""

    def __init__(self, training, averaged):
        self.training = training
        self.lr_level = training.learning_rate
        self.best = (np.inf, averaged, 0)  # (ρ, averaged parameters, step)
        self.ref, self.ref_step = np.inf, 0  # the last ρ that counted as an improvement
        self.stop = "n_steps"
        self.trace = []  # (step, ρ, step size) at every scoring

    def scored(self, step, rho, averaged):
        """Record the scoring of step ``step`` → "stop", "back" (to the best average, at a
        smaller step size) or None (go on)."""
        t = self.training
        self.trace.append((step, rho, self.lr_level))
        if rho < self.best[0]:
            self.best = (rho, _copy(averaged), step)
        if rho <= t.tol and len(self.trace) > 1 and self.trace[-2][1] <= t.tol:  # twice in a row
            self.stop = "tol"
            return "stop"
        if rho < (1.0 - t.rtol) * self.ref:
            self.ref, self.ref_step = rho, step
        elif step - self.ref_step >= t.window or rho > _SPIKE * self.best[0]:
            if self.lr_level <= t.final_learning_rate * (1 + 1e-12):
                self.stop = "plateau"
                return "stop"
            self.lr_level = max(t.final_learning_rate, self.lr_level / _LR_DROP)
            self.ref, self.ref_step = self.best[0], step
            return "back"
        return None


def _score(spec, averaged, terms_of, u_eval, e_eval):
    """ρ of the averaged iterate on the fixed draws (∞ when they or ρ are not finite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        Xe = _eval_points(spec, averaged, u_eval, e_eval)
        rho = residual_ratio(spec, averaged, terms_of, Xe)[0] if np.isfinite(Xe).all() else np.inf
    return rho if np.isfinite(rho) else np.inf


def _gradient(spec, params, X, terms, extra, step):
    """(value of the loss, {name: gradient}) at ``params``."""
    nodes = {k: tp.var(v) for k, v in params.items()}
    loss, _ = residual_loss(spec, nodes, X, terms, extra)
    value = float(loss.value)
    if not np.isfinite(value):
        raise _diverged(step, "the residual loss is not finite")
    return value, dict(zip(nodes, tp.backward(loss, list(nodes.values()))))


def train_run(spec, params, terms_of, training, anchor, rngs, bar):
    """One Adam run with the plateau schedule → (best params, history, stop reason, steps, trace).

    ``training`` is a :class:`~dynosed_sym.density.Training`, ``anchor`` a :class:`CellAnchor` or
    None, ``rngs`` the generators of the collocation points and of the scoring's fixed draws.
    The model's drift kernel runs on one Numba thread here: a step evaluates it at a few hundred
    points, where thread start-up (and, on a busy machine, threads fighting for cores) costs more
    than it saves.  Results do not depend on the thread count.
    """
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return _train_loop(spec, params, terms_of, training, anchor, rngs, bar)
    finally:
        numba.set_num_threads(threads)


def _train_loop(spec, params, terms_of, training, anchor, rngs, bar):
    rng, eval_rng = rngs
    params = _copy(params)
    adam = _Adam(params)
    u_eval = eval_rng.random(_N_EVAL)
    e_eval = eval_rng.standard_normal((_N_EVAL, spec.d))
    history = []
    averaged = _copy(params)
    schedule = _Schedule(training, averaged)
    scale = None  # S₀ of the cell anchor: mean square of the residual's terms at the start
    for step in range(training.n_steps):
        X = collocation_points(spec, params, training.n_points, rng, step)
        terms = terms_of(X)
        extra = None
        if anchor is not None:
            if scale is None:
                scale = float(np.mean(residual_parts(spec, params, X, terms)[1]))
            extra = anchor.point_weights(X, scale)
        value, grads = _gradient(spec, params, X, terms, extra, step)
        history.append(value)
        adam.update(params, grads, schedule.lr_level * min(1.0, (step + 1) / _WARMUP), step)
        averaged = {k: _EMA * averaged[k] + (1 - _EMA) * params[k] for k in params}
        bar.update(1)
        if (step + 1) % CHECK_EVERY == 0:
            rho = _score(spec, averaged, terms_of, u_eval, e_eval)
            if _TRACE_HOOK is not None:
                _TRACE_HOOK(step + 1, averaged, rho)
            action = schedule.scored(step + 1, rho, averaged)
            if action == "stop":
                break
            if action == "back":
                params, averaged = _copy(schedule.best[1]), _copy(schedule.best[1])
            bar.set_postfix_str(f"rho={rho:.3g} lr={schedule.lr_level:.2g}")
    best = schedule.best[1] if schedule.best[0] < np.inf else averaged  # no scoring: the last
    return best, np.array(history), schedule.stop, len(history), schedule.trace
