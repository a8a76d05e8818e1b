"""Dynamics → density: :func:`density_from_dynamics`, from the checked call to the result.

The call reads as its five stages:

1. **Validate** the model, θ, ``init`` and the option objects (:mod:`.options`).
2. **Start where the mass is** (:mod:`.init`): a short run of the compiled simulator (≈ 1 s)
   gives the region, the whitening of the tail maps, their starting strengths and an EM mixture
   to start from — or the caller's samples do (``init=X``).  The residual is local: training
   cannot find a region it does not start in, nor move mass between metastable states.
3. **Train** (:mod:`.optimize`): Adam on ∫ q R², with the cell anchor and the stopping rule.
4. **Diagnose** (:mod:`.diagnostics`): the residual ratio on fresh draws and the soft-cell
   comparison with the simulation.  A run whose stopping rule fired but whose check failed is
   restarted with twice the components (``Training.restarts``); the better run is kept.
5. **Result**: a :class:`LearnedDensity` carrying the verdict; a :class:`ConvergenceWarning`
   names what failed.

Why the density class has a tail map: cubic drifts have stationary laws with quartic tails,
exp(−c r⁴).  A Gaussian mixture behind couplings that are affine far out has Gaussian tails —
heavier — and there R grows like |f|·|δs| ~ r⁴ while q still has mass, so the tails dominate J
and its minimiser over that class sits at total variation 0.1–0.2 from the law (an EM fit to
exact samples, TV 0.04, has a *higher* J than such a trained density).  The radial tail map of
:mod:`.flow_mixture` (γ trained) gives q quartic tails; tails lighter than needed cost nothing in
J, since q puts no mass where R is large.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .. import arguments
from ..errors import ConvergenceWarning, DataError, ModelError
from ..model import SDEModel
from ..options import Execution, execution_doc, moved_keywords, option
from ..progress import progress_bar, progress_enabled
from . import flow_mixture as fm
from .diagnostics import (
    RESIDUAL_RATIO_THRESHOLD,
    SIM_TV_THRESHOLD,
    DensityDiagnostic,
    residual_ratio,
    sim_limit,
    sim_tv,
)
from .dynamics import DynamicsTerms
from .init import SimulationStart, simulation_start, starting_mixture
from .optimize import CellAnchor, collocation_points, residual_loss, train_run
from .options import MOVED_KEYWORDS, Architecture, Start, Training
from .result import LearnedDensity, as_points

__all__ = ["density_from_dynamics", "LearnedDensity", "residual_loss"]

_N_CHECK = 8192  # fresh points of the final residual check


@execution_doc("progress", "out_dir")
def density_from_dynamics(
    model,
    theta=None,
    *,
    init="simulation",
    architecture=None,
    training=None,
    start=None,
    seed=0,
    progress=None,
    out_dir=None,
    warn=True,
    **moved,
) -> LearnedDensity:
    """Learn the stationary density of a known SDE from its drift and diffusion alone (no data).

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict, optional
        Parameter values (dict keyed by symbol or name); default ``model.nominal``.  A model
        without parameters takes None, ``[]`` or ``{}``.
    init : {"simulation", "blob"} or array (N, d)
        Start from a density fitted to a short run of the compiled simulator (default), or to
        given samples (the result is then checked against them), or from the broad blob of
        ``start`` (the simulation still runs, for the check).
    architecture : Architecture, optional
        The class of densities: components, couplings, tail map (None: the defaults).
    training : Training, optional
        The optimiser, its stopping rule and restarts (None: the defaults).
    start : Start, optional
        Centre, spread and number of the starting simulation's chains (None: the defaults).
    seed : int
        Seeds every random draw: the same seed gives bitwise the same result.
    <execution options>
    warn : bool
        Issue a :class:`ConvergenceWarning` when the result is not converged.
    **moved
        The flat keywords now held by the option objects (``n_steps=``, ``init_center=``, …)
        still work, with a :class:`FutureWarning` naming the object to pass instead.

    Returns
    -------
    LearnedDensity
        ``.log_prob(P)``, ``.score(P)``, ``.sample(n, seed=)``, ``.converged``, ``.diagnostic``.

    Raises
    ------
    DataError, ModelError
        For a bad setting or θ (names the argument, or the option object and field), a drift
        that is not finite where it is evaluated, or a starting simulation that diverges.
    TrainingDivergedError
        When training becomes non-finite (names the step; lower ``Training.learning_rate``).

    Warns
    -----
    ConvergenceWarning
        When the stopping rule did not fire within ``Training.n_steps`` or a check failed (the
        message says which and what to try); ``.converged`` is then False.

    Examples
    --------
    .. slow: trains two densities (about 15 s)

    >>> import sympy as sp
    >>> import dynosed_sym as ds
    >>> from dynosed_sym.density import Training
    >>> x, a = sp.symbols("x a", real=True)
    >>> model = ds.SDEModel([x], [a], [a * x - x**3], diffusion=0.2, name="double_well")
    >>> dens = ds.density_from_dynamics(model, {"a": 1.0})
    >>> dens.converged, dens.log_prob([[-1.0], [0.0], [1.0]]).shape
    (True, (3,))
    >>> starved = Training(n_steps=60)  # too few steps: flagged, not silently returned
    >>> short = ds.density_from_dynamics(model, {"a": 1.0}, training=starved, warn=False)
    >>> short.converged, short.diagnostic.stop_reason
    (False, 'n_steps')
    """
    options = dict(architecture=architecture, training=training, start=start)
    execution = Execution.resolve(progress=progress, out_dir=out_dir)
    warn = arguments.flag(warn, "warn")  # (checked before the training: "no" read as True)
    call = _Call.checked(model, theta, init, options, seed, execution, moved)
    t0 = time.perf_counter()
    terms_of = DynamicsTerms(call.model, call.theta, call.execution.out_dir)
    run_seeds, sim_seed = _seeds(call.seed, call.training.restarts)
    reference = _reference(call, sim_seed)
    runs = _train(call, reference, terms_of, run_seeds)
    chosen = min(runs, key=_Run.rank)
    diagnostic = _diagnose(call, runs, chosen, reference.simulation)
    seconds = time.perf_counter() - t0
    if diagnostic.reasons and warn:
        _warn(call.model, diagnostic)
    return chosen.density(call, seconds, diagnostic)


def _warn(model, diagnostic):
    message = f"density_from_dynamics({model.name!r}) did not converge: "
    warnings.warn(ConvergenceWarning(message + "; ".join(diagnostic.reasons)), stacklevel=3)


# ------------------------------------------------------------------------------------ validate
@dataclass(frozen=True)
class _Call:
    """A checked call: the model, θ, what to start from, the option objects and the seed."""

    model: SDEModel
    theta: np.ndarray
    init: str  # "simulation", "blob" or "samples"
    samples: np.ndarray | None  # the caller's samples (init="samples")
    architecture: Architecture
    training: Training
    start: Start
    seed: int
    execution: Execution

    @classmethod
    def checked(cls, model, theta, init, options, seed, execution, moved):
        """Validate everything before any work (errors name the argument or field)."""
        if not isinstance(model, SDEModel):
            raise ModelError(f"model: expected an SDEModel, got {type(model).__name__}")
        if theta is None and model.n > 0:
            if model.nominal is None:
                raise ModelError(f"theta: model {model.name!r} has no nominal values; pass theta")
            theta = model.nominal
        theta = model.theta_vector(theta)
        options = moved_keywords("density_from_dynamics", moved, options, MOVED_KEYWORDS)
        architecture = option(options["architecture"], Architecture, "architecture")
        training = option(options["training"], Training, "training")
        start = option(options["start"], Start, "start")
        start.center_of(model.d)  # checks the centre's length
        kind, samples = _checked_init(init, model, architecture.n_components)
        seed = arguments.seed(seed)
        return cls(model, theta, kind, samples, architecture, training, start, seed, execution)

    def settings(self):
        """The options as stored in :attr:`LearnedDensity.settings`."""
        return dict(
            init=self.init,
            architecture=self.architecture,
            training=self.training,
            start=self.start,
            seed=self.seed,
            out_dir=self.execution.out_dir,
        )


def _checked_init(init, model, n_components):
    """("simulation" | "blob", None) or ("samples", the samples as an (N, d) array)."""
    d = model.d
    if isinstance(init, str):
        if init not in ("simulation", "blob"):
            raise DataError(
                f"init must be 'simulation', 'blob' or an (N, {d}) array of samples, got {init!r}"
            )
        return init, None
    X = as_points(init, d, model.state_names, name="init")
    if X.shape[0] < max(4 * n_components, 20):
        raise DataError(
            f"init: need at least {max(4 * n_components, 20)} samples for "
            f"{n_components} components (Architecture.n_components), got {X.shape[0]}"
        )
    return "samples", X


# ------------------------------------------------------------------------------------ start
def _seeds(seed, restarts):
    """One SeedSequence per run and the starting simulation's seed, all from ``seed``."""
    root = np.random.SeedSequence(seed)
    run_seeds = root.spawn(restarts + 1)
    return run_seeds, int(root.spawn(1)[0].generate_state(1)[0])


@dataclass(frozen=True)
class _Reference:
    """The samples training starts from and is checked against."""

    samples: np.ndarray
    n_chains: int  # chains behind the samples (the caller's samples: two halves by rows)
    simulation: SimulationStart | None


def _reference(call, sim_seed):
    """The caller's samples, or a short simulation (the start for "simulation", the check for
    "blob")."""
    if call.samples is not None:
        return _Reference(call.samples, 2, None)
    sim = simulation_start(
        call.model, call.theta, call.start, seed=sim_seed, out_dir=call.execution.out_dir
    )
    return _Reference(sim.samples, sim.n_chains, sim)


# ------------------------------------------------------------------------------------ train
@dataclass(frozen=True)
class _Run:
    """One training run and its checks."""

    spec: fm.FlowMixtureSpec
    params: dict  # the best averaged iterate
    history: np.ndarray
    stop: str
    steps: int
    trace: list
    residual_ratio: float
    sim_tv: float
    sim_noise: float

    @property
    def residual_ok(self):
        return bool(self.residual_ratio <= RESIDUAL_RATIO_THRESHOLD)

    @property
    def sim_ok(self):
        return bool(self.sim_tv <= sim_limit(self.sim_noise))

    def rank(self):
        """Sort key of the runs: checks passed, stopping rule fired, then ρ."""
        return (-(self.residual_ok + self.sim_ok), -(self.stop != "n_steps"), self.residual_ratio)

    def density(self, call, seconds, diagnostic):
        """The run's best iterate as the call's result."""
        return LearnedDensity(
            call.model,
            call.theta,
            self.spec,
            self.params,
            self.history,
            seconds,
            call.settings(),
            diagnostic,
        )

    def summary(self):
        return dict(
            components=self.spec.n_components,
            steps=self.steps,
            stop_reason=self.stop,
            residual_ratio=self.residual_ratio,
            sim_tv=self.sim_tv,
            trace=self.trace,
        )


def _train(call, reference, terms_of, run_seeds):
    """The first run, then restarts with doubled components while the stopping rule fired but
    a check failed (an unfinished run would not finish by restarting)."""
    runs = []
    architecture = call.architecture
    for r, run_seed in enumerate(run_seeds):
        run = _one_run(call, architecture, reference, terms_of, run_seed, r)
        runs.append(run)
        if run.stop == "n_steps" or (run.residual_ok and run.sim_ok):
            break
        architecture = dataclasses.replace(architecture, n_components=2 * architecture.n_components)
    return runs


def _one_run(call, architecture, reference, terms_of, run_seed, r):
    init_rng, colloc_rng, eval_rng, diag_rng = (np.random.default_rng(s) for s in run_seed.spawn(4))
    spec, params, _ = starting_mixture(reference.samples, architecture, init_rng, terms_of)
    cells = (spec, {k: v.copy() for k, v in params.items()})  # the check's soft cells
    anchor = None
    if call.init == "blob":  # the fitted mixture only defines the check's cells
        spec, params = _blob(call, architecture, init_rng)
    elif call.training.anchor > 0:
        anchor = CellAnchor(spec, params, reference.samples, call.training.anchor)
    bar = progress_bar(
        progress_enabled(call.execution.progress, streamed=True),
        total=call.training.n_steps,
        desc=f"density {call.model.name}"
        + (f" (restart {r}, K={architecture.n_components})" if r else ""),
        unit="steps",
    )
    try:
        best, history, stop, steps, trace = train_run(
            spec, params, terms_of, call.training, anchor, (colloc_rng, eval_rng), bar
        )
    finally:
        bar.close()
    # the checks on the returned iterate: fresh points, then the simulation
    Xc = collocation_points(spec, best, _N_CHECK, diag_rng, steps)
    rho = residual_ratio(spec, best, terms_of, Xc)[0]
    stv, noise = sim_tv(spec, best, *cells, reference.samples, reference.n_chains, diag_rng)
    return _Run(spec, best, history, stop, steps, trace, rho, stv, noise)


def _blob(call, architecture, rng):
    """The broad starting density of ``init="blob"``: at ``start.center``, of size
    ``start.scale`` (behind the tail maps when the architecture has them)."""
    d, start = call.model.d, call.start
    center = start.center_of(d)
    if architecture.tail:
        spec = architecture.spec(d, center=center, whiten=np.eye(d) / start.scale)
        return spec, fm.init_params(spec, np.zeros(d), 1.0, rng)
    spec = architecture.spec(d)
    return spec, fm.init_params(spec, center, start.scale, rng)


# ------------------------------------------------------------------------------------ diagnose
def _diagnose(call, runs, chosen, simulation):
    """The verdict on the chosen run (:class:`DensityDiagnostic`)."""
    reasons = _reasons(call.training, chosen, simulation)
    return DensityDiagnostic(
        converged=not reasons,
        stop_reason=chosen.stop,
        steps=chosen.steps,
        total_steps=int(sum(run.steps for run in runs)),
        residual_ratio=float(chosen.residual_ratio),
        residual_threshold=RESIDUAL_RATIO_THRESHOLD,
        sim_tv=chosen.sim_tv,
        sim_noise=chosen.sim_noise,
        sim_threshold=SIM_TV_THRESHOLD,
        simulation=None if simulation is None else simulation.summary(),
        runs=[run.summary() for run in runs],
        reasons=reasons,
    )


def _reasons(training, run, simulation):
    """Why ``run`` is not converged, each with what to try (empty when it is)."""
    reasons = []
    if run.stop == "n_steps":
        reasons.append(
            f"the stopping rule did not fire within n_steps={training.n_steps} (the residual "
            "ratio was still improving): raise Training.n_steps"
        )
    if not run.residual_ok:
        reasons.append(
            f"residual ratio {run.residual_ratio:.3g} > {RESIDUAL_RATIO_THRESHOLD:g}: the learned "
            "density does not satisfy the stationary Fokker–Planck equation to the size of its "
            "terms; try more Training.n_steps, more Architecture.n_components/n_layers/n_hidden, "
            "or init='simulation' if you used a blob"
        )
    if not run.sim_ok:
        reasons.append(
            f"the mass in the starting mixture's cells differs from the simulation by TV "
            f"{run.sim_tv:.3f} (> {sim_limit(run.sim_noise):.3f}): compare with a longer "
            "simulation (ds.simulate), raise Training.n_steps or Architecture.n_components"
        )
    if simulation is not None and not simulation.equilibrated:
        reasons.append(
            "the starting simulation's mass was still drifting when its budget ran out "
            "(a high barrier?): the share of mass between wells may be off; pass samples of a "
            "longer simulation as init="
        )
    return reasons
