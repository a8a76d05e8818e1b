"""The optimisation of :func:`.train.density_from_dynamics`: the residual loss and Adam loop.

The objective is the residual's mean square under the model's own density,

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

The cell anchor, stopping rule and best-iterate bookkeeping are described in :mod:`.train`.
"""

from __future__ import annotations

import numpy as np

from ..errors import TrainingDivergedError
from . import _tape as tp
from . import flow_mixture as fm
from .diagnostics import residual_parts, residual_ratio

__all__ = ["residual_loss"]


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
        the estimate of ∇E_q[g] for a g with mean zero over the points (the cell anchor of
        :func:`density_from_dynamics`).  The value is unchanged.

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
        "lower learning_rate or change init_scale/init_center"
    )


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


class _CellAnchor:
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


_CHECK_EVERY = 50  # steps between scorings of the averaged iterate
_N_EVAL = 4096  # fixed (common-random-number) points of that scoring
_WARMUP = 50  # steps of linear learning-rate warm-up
_EMA = 0.98  # decay of the exponential average of the iterates
_LR_DROP = 4.0  # step-size factor at a plateau
_SPIKE = 3.0  # a scoring this many times above the best counts as a plateau at once
_N_CHECK = 8192  # fresh points of the final residual check
_TRACE_HOOK = None  # experiments: called as hook(step, averaged_params, rho) at every scoring


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


def _train_run(
    spec,
    params,
    terms_of,
    *,
    n_steps,
    n_points,
    learning_rate,
    final_learning_rate,
    anchor,
    tol,
    rtol,
    window,
    rng,
    eval_rng,
    bar,
):
    """One Adam run with the plateau schedule → (best params, history, stop reason, steps, trace).

    The model's drift kernel runs on one Numba thread here: a step evaluates it at a few hundred
    points, where thread start-up (and, on a busy machine, threads fighting for cores) costs more
    than it saves.  Results do not depend on the thread count.
    """
    import numba

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return _train_loop(
            spec,
            params,
            terms_of,
            n_steps=n_steps,
            n_points=n_points,
            learning_rate=learning_rate,
            final_learning_rate=final_learning_rate,
            anchor=anchor,
            tol=tol,
            rtol=rtol,
            window=window,
            rng=rng,
            eval_rng=eval_rng,
            bar=bar,
        )
    finally:
        numba.set_num_threads(threads)


def _train_loop(
    spec,
    params,
    terms_of,
    *,
    n_steps,
    n_points,
    learning_rate,
    final_learning_rate,
    anchor,
    tol,
    rtol,
    window,
    rng,
    eval_rng,
    bar,
):
    names = list(params)
    params = {k: v.copy() for k, v in params.items()}
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    u_eval = eval_rng.random(_N_EVAL)
    e_eval = eval_rng.standard_normal((_N_EVAL, spec.d))
    history = []
    averaged = {k: v.copy() for k, v in params.items()}
    lr_level = learning_rate
    best = (np.inf, averaged, 0)
    ref, ref_step = np.inf, 0
    stop = "n_steps"
    scale = None
    trace = []
    for step in range(n_steps):
        X = _collocation_points(spec, params, n_points, rng, step)
        terms = terms_of(X)
        extra = None
        if anchor is not None:
            if scale is None:  # S₀: mean square of the residual's terms at the start (fixed)
                scale = float(np.mean(residual_parts(spec, params, X, terms)[1]))
            extra = anchor.point_weights(X, scale)
        nodes = {k: tp.var(v) for k, v in params.items()}
        loss, R = residual_loss(spec, nodes, X, terms, extra)
        value = float(loss.value)
        if not np.isfinite(value):
            raise _diverged(step, "the residual loss is not finite")
        history.append(value)
        grads = tp.backward(loss, [nodes[k] for k in names])
        lr = lr_level * min(1.0, (step + 1) / _WARMUP)
        for k, g in zip(names, grads):
            m1[k] = beta1 * m1[k] + (1 - beta1) * g
            m2[k] = beta2 * m2[k] + (1 - beta2) * g * g
            mhat = m1[k] / (1 - beta1 ** (step + 1))
            vhat = m2[k] / (1 - beta2 ** (step + 1))
            params[k] = params[k] - lr * mhat / (np.sqrt(vhat) + eps)
            if not np.isfinite(params[k]).all():
                raise _diverged(step, f"the update made parameter {k!r} non-finite")
        averaged = {k: _EMA * averaged[k] + (1 - _EMA) * params[k] for k in names}
        bar.update(1)
        if (step + 1) % _CHECK_EVERY == 0:
            with np.errstate(over="ignore", invalid="ignore"):
                Xe = _eval_points(spec, averaged, u_eval, e_eval)
                rho = (
                    residual_ratio(spec, averaged, terms_of, Xe)[0]
                    if np.isfinite(Xe).all()
                    else np.inf
                )
            if not np.isfinite(rho):
                rho = np.inf
            trace.append((step + 1, rho, lr_level))
            if _TRACE_HOOK is not None:
                _TRACE_HOOK(step + 1, averaged, rho)
            if rho < best[0]:
                best = (rho, {k: v.copy() for k, v in averaged.items()}, step + 1)
            if rho <= tol and len(trace) > 1 and trace[-2][1] <= tol:  # twice in a row
                stop = "tol"
                break
            if rho < (1.0 - rtol) * ref:
                ref, ref_step = rho, step + 1
            elif step + 1 - ref_step >= window or rho > _SPIKE * best[0]:
                # a plateau (or a jump away from the best): back to the best average, smaller steps
                if lr_level <= final_learning_rate * (1 + 1e-12):
                    stop = "plateau"
                    break
                lr_level = max(final_learning_rate, lr_level / _LR_DROP)
                params = {k: v.copy() for k, v in best[1].items()}
                averaged = {k: v.copy() for k, v in best[1].items()}
                ref, ref_step = best[0], step + 1
            bar.set_postfix_str(f"rho={rho:.3g} lr={lr_level:.2g}")
    if best[0] == np.inf:  # fewer steps than one scoring: the last average
        best = (np.inf, averaged, len(history))
    return best[1], np.array(history), stop, len(history), trace
