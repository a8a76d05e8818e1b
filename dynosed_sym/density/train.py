"""Dynamics → density: train the flow-mixture density on the stationary Fokker–Planck residual.

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

What makes this converge on the textbook family (issue 14; numbers in ``docs/density.md``):

* **Tails.**  Cubic drifts have stationary laws with quartic tails, exp(−c r⁴).  A Gaussian
  mixture behind couplings that are affine far out has Gaussian tails — heavier — and there R
  grows like |f|·|δs| ~ r⁴ while q still has mass, so the tails dominated J and its minimiser over
  the old model class sat at total variation 0.1–0.2 from the law (an EM fit to exact samples,
  TV 0.04, had a *higher* J than the bad trained density).  The radial tail map of
  :mod:`.flow_mixture` (γ trained) gives q quartic tails; lighter-than-needed tails cost nothing
  in J (q puts no mass where R is large).
* **Start where the mass is** (:mod:`.init`): a short run of the compiled simulator (≈ 1 s) gives
  the region, the whitening of the tail map, γ, and an EM mixture to start from.
* **Slow modes are invisible to the residual.**  Moving mass between wells separated by a
  barrier ΔV changes R by ~ the spectral gap (∝ e^{−ΔV/D}); J changes by its square (≈ 10⁻⁶ for
  ΔV = 3D), far below the Monte-Carlo noise, so Adam's noise random-walks the share between wells
  (seen: 50 % → 47 % at ΔV = 1.25D, 50 % → 52.5 % at ΔV = 3D, 45 % from a blob start).  A weak
  anchor keeps q's mass m_k in the soft cells of the starting mixture (its components'
  responsibilities, fixed functions of x) near the simulation's m̂_k:
  J + a·S₀·Σ_k (m_k − m̂_k)²/m̂_k, with S₀ the mean square of the residual's terms at the start (so
  a is scale-free, default 3·10⁻²).  Along directions J sees, its curvature dwarfs the anchor's and
  the residual decides; along the slow ones the anchor holds the simulated share.  (Anchoring
  the mixture weights instead left the share free to move through the flow: 2-D double well,
  barrier 2 D, TV 0.013-0.022 against 0.003-0.004 with the cells at a = 10⁻².  At a = 10⁻² the
  1-D double well x − x³, D = 0.2, seed 2 still drifted to TV 0.026 (soft-cell TV 0.024);
  a = 3·10⁻² gave 0.006 there and 0.005-0.008 on the 2-D well, a = 10⁻¹ 0.002-0.004 on the 1-D
  wells but 0.009-0.010 on the 2-D one.)
* **Stopping rule and best iterate.**  Every 50 steps the exponential average of the iterates is
  scored by the residual ratio ρ (:mod:`.diagnostics`) on 4096 fixed draws (common random
  numbers); the best one is kept.  Training stops when ρ ≤ ``tol`` at two scorings in a row, or
  when ρ has not improved by a factor 1 − ``rtol`` for ``window`` steps at the final step size (a
  plateau at a larger step size — or a scoring 3 times above the best — returns to the best
  average and cuts the step size fourfold).  Then both checks of :mod:`.diagnostics` run; a
  failing run is restarted with twice the components (``restarts``), the better run is returned,
  and a :class:`ConvergenceWarning` names what failed.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .. import arguments
from ..errors import ConvergenceWarning, DataError, ModelError
from ..model import SDEModel
from ..progress import progress_bar, progress_enabled
from . import flow_mixture as fm
from .diagnostics import (
    RESIDUAL_RATIO_THRESHOLD,
    SIM_NOISE_FACTOR,
    SIM_TV_THRESHOLD,
    DensityDiagnostic,
    residual_ratio,
    sim_tv,
)
from .dynamics import DynamicsTerms
from .init import simulation_start, starting_mixture
from .optimize import (
    _CHECK_EVERY,
    _N_CHECK,
    _CellAnchor,
    _collocation_points,
    _train_run,
    residual_loss,
)

__all__ = ["density_from_dynamics", "LearnedDensity", "residual_loss"]


def _as_points(P, d, state_names, name="P"):
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


def _as_center(center, d):
    """init_center as d finite floats (a length-d sequence, or a (1, d) array)."""
    try:
        arr = np.asarray(center, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"init_center: cannot convert to a float array ({exc})") from None
    if arr.size != d or arr.ndim > 2 or (arr.ndim == 2 and arr.shape[0] != 1):
        raise DataError(
            f"init_center: expected {d} value{'s' if d != 1 else ''}, got shape {arr.shape}"
        )
    arr = arr.reshape(d)
    if not np.isfinite(arr).all():
        raise DataError(f"init_center: contains NaN or inf ({arr.tolist()})")
    return arr


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
        The training arguments.
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

    def residual_ratio(self, n=8192, seed=0) -> float:
        """ρ = E_q[R²] / E_q[Σ terms²] on ``n`` fresh draws (``diagnostic``'s residual check)."""
        X = self.sample(n, seed=seed)
        terms_of = DynamicsTerms(self.model, self.theta, self.settings.get("out_dir"))
        return residual_ratio(self.spec, self.params, terms_of, X)[0]

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


def _verdict(rho, stv, snoise):
    """(residual check passes, simulation check passes, the simulation check's limit)."""
    limit = max(SIM_TV_THRESHOLD, SIM_NOISE_FACTOR * snoise)
    return bool(rho <= RESIDUAL_RATIO_THRESHOLD), bool(stv <= limit), limit


def _validate_init(init, model, n_components):
    d = model.d
    if isinstance(init, str):
        if init not in ("simulation", "blob"):
            raise DataError(
                f"init must be 'simulation', 'blob' or an (N, {d}) array of samples, got {init!r}"
            )
        return init, None
    X = _as_points(init, d, model.state_names, name="init")
    if X.shape[0] < max(4 * n_components, 20):
        raise DataError(
            f"init: need at least {max(4 * n_components, 20)} samples for "
            f"{n_components} components, got {X.shape[0]}"
        )
    return "samples", X


def density_from_dynamics(
    model,
    theta=None,
    *,
    n_components=16,
    n_layers=2,
    n_hidden=8,
    n_steps=3000,
    n_points=512,
    learning_rate=0.02,
    final_learning_rate=1.25e-3,
    init="simulation",
    tail=True,
    anchor=3e-2,
    tol=1e-4,
    rtol=0.3,
    window=200,
    restarts=1,
    init_center=None,
    init_scale=1.0,
    n_chains=20000,
    seed=0,
    progress=None,
    out_dir=None,
    warn=True,
) -> LearnedDensity:
    """Learn the stationary density of a known SDE from its drift and diffusion alone (no data).

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict, optional
        Parameter values (dict keyed by symbol or name); default ``model.nominal``.  A model
        without parameters (``params=[]``) takes None, ``[]`` or ``{}``.
    n_components : int
        Latent mixture components K (a restart doubles them).
    n_layers, n_hidden : int
        Affine-coupling layers of the near-identity flow and hidden tanh units per coupling
        (``n_layers=0``: no couplings; d = 1 never has any).
    n_steps : int
        Most Adam steps per run (the cap); training stops earlier when converged.
    n_points : int
        Collocation points per step (fresh draws each step).
    learning_rate, final_learning_rate : float
        Adam step size at the start (after a 50-step warm-up) and at the end; it drops fourfold
        at each plateau of the residual ratio.
    init : {"simulation", "blob"} or array (N, d)
        Starting density: fitted to a short run of the compiled simulator (default), to given
        samples, or the broad blob of ``init_center``/``init_scale`` (no simulation; then there
        is no cell anchor).
    tail : bool
        Radial tail map (quartic tails possible; γ trained).  False: Gaussian-mixture tails.
    anchor : float
        Scale-free strength of the pull of q's mass in the soft cells of the starting mixture
        towards the simulation's (keeps the share of mass between metastable states, which the
        residual cannot see); 0 switches it off.
    tol, rtol, window : float, float, int
        Stopping rule on the residual ratio ρ of the averaged iterate (scored every 50 steps):
        training stops when ρ ≤ ``tol``, or when ρ has not improved by a factor ``1 − rtol`` for
        ``window`` steps at the final step size (a plateau at a larger one drops the step size).
    restarts : int
        Runs after the first when training stalled (the stopping rule fired) with a failing check,
        each with twice the components; the better run is returned.
    init_center : array (d,), optional
        Centre of the simulation's start states or of the blob (default: the origin).
    init_scale : float
        Spread of those start states / of the blob.
    n_chains : int
        Chains of the starting simulation: the share of mass between wells that the chains do not
        cross during the run is known to about ±0.5/√n_chains.
    seed : int
        Seeds simulation, initialisation and collocation draws; same seed ⇒ bitwise the same result.
    progress : bool, optional
        Progress bar (tqdm, when installed); default: only when standard error is a terminal.
    out_dir : str, optional
        Folder of the model's generated kernels (see :func:`dynosed_sym.compile_model`).
    warn : bool
        Issue a :class:`ConvergenceWarning` when the result is not converged.

    Returns
    -------
    LearnedDensity
        ``.log_prob(P)``, ``.score(P)``, ``.sample(n, seed=)``, ``.loss_history``,
        ``.converged`` and ``.diagnostic`` (see :class:`DensityDiagnostic`).

    Raises
    ------
    ModelError
        For a bad ``theta`` (names the parameter).
    DataError
        For bad settings (names the argument), a drift that is not finite at a collocation
        point, or a starting simulation that diverges.
    TrainingDivergedError
        When the loss, a parameter or the drawn collocation points become non-finite (names the
        step; lower ``learning_rate``).

    Warns
    -----
    ConvergenceWarning
        When the stopping rule did not fire within ``n_steps`` or a check failed (the message
        says which and what to try); ``.converged`` is then False.
    """
    if not isinstance(model, SDEModel):
        raise ModelError(f"model: expected an SDEModel, got {type(model).__name__}")
    if theta is None and model.n > 0:
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
    final_learning_rate = arguments.number(
        final_learning_rate, "final_learning_rate", positive=True
    )
    if final_learning_rate > learning_rate:
        raise DataError(
            f"final_learning_rate ({final_learning_rate}) must not exceed "
            f"learning_rate ({learning_rate})"
        )
    anchor = arguments.number(anchor, "anchor", nonnegative=True)
    tol = arguments.number(tol, "tol", nonnegative=True)
    rtol = arguments.number(rtol, "rtol", positive=True)
    if rtol >= 1:
        raise DataError(f"rtol must be in (0, 1), got {rtol}")
    window = arguments.integer(window, "window", minimum=_CHECK_EVERY)
    restarts = arguments.integer(restarts, "restarts", minimum=0)
    if not isinstance(tail, (bool, np.bool_)):
        raise DataError(f"tail must be True or False, got {tail!r}")
    init_scale = arguments.number(init_scale, "init_scale", positive=True)
    n_chains = arguments.integer(n_chains, "n_chains", minimum=100)
    seed = arguments.seed(seed)
    center = np.zeros(model.d) if init_center is None else _as_center(init_center, model.d)
    init_kind, init_samples = _validate_init(init, model, n_components)
    settings = dict(
        n_components=n_components,
        n_layers=n_layers,
        n_hidden=n_hidden,
        n_steps=n_steps,
        n_points=n_points,
        learning_rate=learning_rate,
        final_learning_rate=final_learning_rate,
        init=init_kind,
        tail=bool(tail),
        anchor=anchor,
        tol=tol,
        rtol=rtol,
        window=window,
        restarts=restarts,
        init_center=center.tolist(),
        init_scale=init_scale,
        n_chains=n_chains,
        seed=seed,
        out_dir=out_dir,
    )

    t0 = time.perf_counter()
    terms_of = DynamicsTerms(model, theta, out_dir)
    root = np.random.SeedSequence(seed)
    run_seeds = root.spawn(restarts + 1)
    sim_seed = int(root.spawn(1)[0].generate_state(1)[0])

    start = None
    if (
        init_samples is None
    ):  # the simulation is the start ("simulation") or only the check ("blob")
        start = simulation_start(
            model,
            theta,
            center=center,
            scale=init_scale,
            seed=sim_seed,
            out_dir=out_dir,
            n_chains=n_chains,
        )
    reference = init_samples if init_samples is not None else start.samples
    ref_chains = start.n_chains if start is not None else 2  # user samples: two halves by rows

    runs, results = [], []
    K = n_components
    for r in range(restarts + 1):
        init_rng, colloc_rng, eval_rng, diag_rng = (
            np.random.default_rng(s) for s in run_seeds[r].spawn(4)
        )
        spec_args = dict(n_components=K, n_layers=n_layers, n_hidden=n_hidden)
        spec, params, info = starting_mixture(
            reference, spec_args, init_rng, tail=bool(tail), terms_of=terms_of
        )
        check_spec, check_params = spec, {k: v.copy() for k, v in params.items()}
        cells = _CellAnchor(spec, params, reference, anchor) if anchor > 0 else None
        if init_kind == "blob":  # the fitted mixture only defines the check's cells
            cells = None
            if tail:
                spec = fm.FlowMixtureSpec(
                    model.d,
                    K,
                    n_layers,
                    n_hidden,
                    tail=True,
                    center=center,
                    whiten=np.eye(model.d) / init_scale,
                )
                params = fm.init_params(spec, np.zeros(model.d), 1.0, init_rng)
            else:
                spec = fm.FlowMixtureSpec(model.d, K, n_layers, n_hidden)
                params = fm.init_params(spec, center, init_scale, init_rng)
        bar = progress_bar(
            progress_enabled(progress, streamed=True),
            total=n_steps,
            desc=f"density {model.name}" + (f" (restart {r}, K={K})" if r else ""),
            unit="steps",
        )
        try:
            best, history, stop, steps, trace = _train_run(
                spec,
                params,
                terms_of,
                n_steps=n_steps,
                n_points=n_points,
                learning_rate=learning_rate,
                final_learning_rate=final_learning_rate,
                anchor=cells,
                tol=tol,
                rtol=rtol,
                window=window,
                rng=colloc_rng,
                eval_rng=eval_rng,
                bar=bar,
            )
        finally:
            bar.close()
        # the checks on the returned iterate: fresh points, then the simulation
        Xc = _collocation_points(spec, best, _N_CHECK, diag_rng, steps)
        rho = residual_ratio(spec, best, terms_of, Xc)[0]
        stv, snoise = sim_tv(spec, best, check_spec, check_params, reference, ref_chains, diag_rng)
        runs.append(
            dict(
                components=K,
                steps=steps,
                stop_reason=stop,
                residual_ratio=rho,
                sim_tv=stv,
                trace=trace,
            )
        )
        results.append((spec, best, history, stop, steps, rho, stv, snoise))
        ok_res, ok_sim, _ = _verdict(rho, stv, snoise)
        if stop == "n_steps" or (ok_res and ok_sim):
            break  # converged, or not finished (reported as such; restarting would not finish it)
        K *= 2  # stalled with a failing check: grow the mixture and start again

    def rank(res):
        ok_res_, ok_sim_, _ = _verdict(*res[5:])
        return (-(ok_res_ + ok_sim_), -(res[3] != "n_steps"), res[5])

    chosen = min(range(len(results)), key=lambda i: rank(results[i]))
    spec, best, history, stop, steps, rho, stv, snoise = results[chosen]
    ok_res, ok_sim, limit = _verdict(rho, stv, snoise)
    reasons = []
    if stop == "n_steps":
        reasons.append(
            f"the stopping rule did not fire within n_steps={n_steps} (the residual ratio was "
            f"still improving): raise n_steps"
        )
    if not ok_res:
        reasons.append(
            f"residual ratio {rho:.3g} > {RESIDUAL_RATIO_THRESHOLD:g}: the learned density does "
            "not satisfy the stationary Fokker–Planck equation to the size of its terms; try more "
            "n_steps, n_components, n_layers/n_hidden, or init='simulation' if you used a blob"
        )
    if not ok_sim:
        reasons.append(
            f"the mass in the starting mixture's cells differs from the simulation by TV "
            f"{stv:.3f} (> {limit:.3f}): compare with a longer simulation (ds.simulate), "
            "raise n_steps/n_components"
        )
    if start is not None and not start.equilibrated:
        reasons.append(
            "the starting simulation's mass was still drifting when its budget ran out "
            "(a high barrier?): the share of mass between wells may be off; pass samples of a "
            "longer simulation as init="
        )
    diagnostic = DensityDiagnostic(
        converged=not reasons,
        stop_reason=stop,
        steps=steps,
        total_steps=int(sum(r_["steps"] for r_ in runs)),
        residual_ratio=float(rho),
        residual_threshold=RESIDUAL_RATIO_THRESHOLD,
        sim_tv=stv,
        sim_noise=snoise,
        sim_threshold=SIM_TV_THRESHOLD,
        simulation=None if start is None else start.summary(),
        runs=runs,
        reasons=reasons,
    )
    seconds = time.perf_counter() - t0
    dens = LearnedDensity(model, theta, spec, best, history, seconds, settings, diagnostic)
    if reasons and warn:
        warnings.warn(
            ConvergenceWarning(
                f"density_from_dynamics({model.name!r}) did not converge: " + "; ".join(reasons)
            ),
            stacklevel=2,
        )
    return dens
