"""Simulation: steady-state snapshots from the generated, compiled integrator.

Scheme (reference paper, supplement): RK4 for the drift plus an Euler–Maruyama
noise increment ``√dt · G η`` when the noise is constant; plain Euler–Maruyama
when G depends on the state.  With a constant G the stationary records are taken half-way
through their step's noise increment (:func:`~dynosed_sym.kernels.lanes.half_kick_records`):
the states of the symmetric splitting half noise · drift · half noise, whose stationary law is
second-order accurate in dt (first-order at the end of the step); docs/models.md.

The generated kernel ``simulate_chains`` integrates the chains in blocks of up
to ``LANES`` (64) lanes stored as structure of arrays, so the drift (printed
once more as ``drift_lanes``), the normals and the update are vectorised across
chains.  Each chain owns a counter-based random stream: uniform number k of
chain c is the SplitMix64 hash of ``keys[c] + k·φ`` (φ the 64-bit golden
ratio, keys from ``numpy.random.SeedSequence(seed)``), turned into normals by
Box–Muller with polynomial log, sqrt and sin/cos (no libm calls; |η| ≤ 8.49).
A chain's output depends only on its key, its start and the parameters, so
results are bitwise identical for any number of threads and do not change when
other chains are added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import arguments
from ..assembly.memory import check_simulation_memory
from ..codegen.loading import compile_model
from ..data.arrays import as_samples, is_frame
from ..data.checks import diffusion_psd, state_signs
from ..data.designs import TimeCourse
from ..errors import DataError, ModelError, StationarityError
from ..kernels.lanes import half_kick_records
from ..model.declaration import require_model
from ..model.validation import declared_signs, values_by_name
from ..options import Execution, moved_to, resolve_options
from ..progress import progress_bar, progress_enabled
from .functions import model_functions
from .starts import domain_failure, positive_starts, start_states
from .stationarity import check_stationarity, enforce_stationary
from .stepsize import check_step_size, warn_step_size

__all__ = [
    "simulate",
    "simulate_time_course",
    "snapshot_at",
    "snapshot_steps",
    "with_inputs",
    "chain_keys",
    "initial_states",
    "plan_simulation",
    "SimulationPlan",
]

SIM_BATCH_CHAINS = 256  # chains per kernel call when a progress bar is shown (4 lane blocks of 64)


def chain_keys(seed, n_chains) -> np.ndarray:
    """Per-chain 64-bit stream keys derived from ``seed`` (NumPy SeedSequence)."""
    return np.random.SeedSequence(seed).generate_state(n_chains, dtype=np.uint64)


def initial_states(model, n_chains, seed, x0=None, *, theta=None, dt=0.01) -> np.ndarray:
    """Start states (C, d): ``x0`` broadcast, or standard normal draws seeded by ``seed`` (the
    paper's choice) where they lie inside the model's domain, and otherwise a start inside it
    (:mod:`dynosed_sym.simulation.starts`; ``theta`` and ``dt`` are used there)."""
    if x0 is None:
        return start_states(model, n_chains, seed, theta=theta, dt=dt)
    x0 = _start_by_name(model, x0)
    x0 = arguments.float_array(x0, "x0")  # refuses complex, boolean, text, dates (never cast)
    if not np.isfinite(x0).all():
        raise DataError("x0: contains NaN or inf")
    if x0.shape == (model.d,):
        return np.tile(x0, (n_chains, 1))
    if x0.shape == (n_chains, model.d):
        return x0.copy()
    raise DataError(f"x0: expected shape ({model.d},) or ({n_chains}, {model.d}), got {x0.shape}")


def _start_by_name(model, x0):
    """``x0`` with labels read by name: a DataFrame by its columns (one row per chain, or one
    row for all), a pandas Series or a dict by the state names (they were read by position: a
    DataFrame with columns y, x started the chains at (y, x))."""
    if is_frame(x0):
        X = as_samples(x0, model, "x0", min_samples=1)
        return X[0] if X.shape[0] == 1 else X  # (one row: the start of every chain)
    x0 = arguments.labelled_values(x0)
    if not isinstance(x0, dict):
        return x0
    keyed = {str(key): val for key, val in x0.items()}
    kind = ("a state variable", "")
    return values_by_name(keyed, model.state_names, "x0", kind, model.name, DataError)


#: The flat keywords of earlier versions, now fields of ``execution=`` (FutureWarning).
MOVED = moved_to("execution", Execution, "progress", "out_dir", "backend", "client", "n_groups")


def simulate(
    model,
    theta,
    n_samples,
    *,
    dt=0.01,
    burn_in=5000,
    thin=10,
    n_chains=None,
    seed=0,
    x0=None,
    inputs=None,
    execution=None,
    **moved,
) -> np.ndarray:
    """Draw approximately stationary samples by running independent chains.

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict
        Parameter values (dict keyed by symbol or name).
    n_samples : int
        Number of samples returned.
    dt : float
        Time step.
    burn_in : int
        Steps discarded at the start of every chain.
    thin : int
        Steps between recorded states.
    n_chains : int, optional
        Independent chains (default ``min(n_samples, 2048)``); each records
        ``ceil(n_samples / n_chains)`` states.
    seed : int
    x0 : array (d,) or (n_chains, d), optional
        Start states: one state for every chain, or one per chain (a DataFrame, a labelled
        Series or a dict is read by the state names).  Default: chain c starts at
        its own standard normal draw (seeded by ``seed``) when that lies inside the model's
        domain (f finite, D(x) positive semi-definite, the noise finite); a draw outside it
        (e.g. x < 0 for noise ∝ √x) is replaced by its absolute value relaxed for one time unit
        along the drift (:mod:`dynosed_sym.simulation.starts`), and a DataError asks for
        ``x0=`` when that is outside too.  When chains from these starts leave the finite range
        (a population model started at negative sizes), they are run once more from the
        positive orthant (every draw with a negative coordinate replaced the same way).
    inputs : dict or array, optional
        Values of the model's known inputs (``SDEModel(..., inputs=[...])``): the chains run
        ``model.with_inputs(inputs)``: the model's kernels with the values as their argument (one
        module and one compilation whatever the values).
    execution : Execution, optional
        Progress bar, folder of generated kernels, Dask backend, client and the number of Dask
        tasks the chains are split into (:class:`~dynosed_sym.options.Execution`; None: the
        defaults; its ``n_blocks`` and ``chunk_rows`` are the fits' and not used here).
    **moved
        The flat keywords of earlier versions (``progress=``, ``out_dir=``, ``backend=``,
        ``client=``, ``n_groups=``): each still works and builds ``execution=``, with a
        FutureWarning naming the new spelling.

    Returns
    -------
    X : (n_samples, d) array
        Rows ordered by chain, then recording time, so that contiguous blocks of
        rows hold whole chains (independent blocks for the noise estimates).
        Record k (k = 0, 1, …) of a chain is its state after ``burn_in + (k + 1) * thin`` steps.

    Raises
    ------
    DataError
        For invalid arguments, and when a chain leaves the finite range (the
        message names the chain and the step); no NaN is ever returned.
    StationarityError
        (a DataError) When the recorded states are not a stationary law: their variance still
        grows (along a direction the drift does not confine: "diverging"), the drift expands
        volume where they are, or it contracts less than any stationary law of their spread
        needs (:mod:`dynosed_sym.simulation.stationarity`; judged with ≥ 16 chains).  The
        message says what diverged and what to change.  A borderline imbalance gives a
        :class:`~dynosed_sym.errors.StationarityWarning` instead.

    Notes
    -----
    Same ``seed`` ⇒ bitwise identical ``X`` whatever the number of Numba threads, whether the
    chains run in batches (with a progress bar) or on Dask workers; chain c's records are the
    same whatever ``n_chains`` (≥ c + 1) is.
    Cost: ``n_chains * (burn_in + thin * ceil(n_samples / n_chains))`` steps.

    Examples
    --------
    An Ornstein–Uhlenbeck process dx = −k x dt + √2 dW has the stationary law N(0, 1/k):

    >>> import sympy as sp
    >>> from dynosed_sym import Execution, SDEModel, simulate
    >>> x, k = sp.symbols("x k", real=True)
    >>> model = SDEModel([x], [k], [-k * x], diffusion=1.0, name="ou_doc")
    >>> quiet = Execution(progress=False)
    >>> X = simulate(model, [4.0], 4000, burn_in=500, seed=1, execution=quiet)
    >>> X.shape
    (4000, 1)
    >>> bool(abs(X.var() - 0.25) < 0.03)
    True
    """
    given = dict(execution=(execution, Execution))
    ex = resolve_options("simulate", moved, given, MOVED)["execution"]
    model = with_inputs(model, inputs, "simulate")
    plan = plan_simulation(
        model, theta, n_samples, dt, burn_in, thin, n_chains, seed, x0, ex.out_dir
    )
    if ex.dask_requested:
        from ..backends.dask import run_chains_dask

        with progress_bar(
            progress_enabled(ex.progress, True),
            total=plan.n_chains,
            desc=f"simulate {model.name}",
            unit="chains",
        ) as bar:
            out, status = run_chains_dask(
                plan.cm,
                plan.x0,
                plan.theta,
                plan.G,
                plan.dt,
                plan.burn_in,
                plan.thin,
                plan.n_keep,
                plan.keys,
                n_groups=ex.n_groups,
                client=ex.client,
                bar=bar,
            )
        return _checked(plan, plan.samples(out, status))
    if progress_enabled(ex.progress) and plan.n_chains >= 2 * SIM_BATCH_CHAINS:
        # a chain's output depends only on its key and start, so batches of chains give the
        # same samples as one call; the bar advances per batch
        out, status = plan.empty_output()
        with progress_bar(
            True, total=plan.n_chains, desc=f"simulate {model.name}", unit="chains"
        ) as bar:
            for lo in range(0, plan.n_chains, SIM_BATCH_CHAINS):
                hi = min(plan.n_chains, lo + SIM_BATCH_CHAINS)
                out[:, lo:hi], status[lo:hi] = plan.run(lo, hi)
                bar.update(hi - lo)
        return _checked(plan, plan.samples(out, status))
    return _checked(plan, plan.samples(*plan.run()))


def _checked(plan, X):
    """X when it passes the stationarity checks (raise when diverging, warn when not settled)."""
    groups = np.arange(X.shape[0]) // plan.n_keep  # rows are ordered chain by chain
    # the chains integrated SymPy's simplification outside a declared sign (Abs(x) -> x)
    fix = f"or start inside that range and reduce dt ({plan.dt:g}) if Euler steps leave it"
    state_signs(plan.model, X, "simulate: the samples", "sample", fix=fix)
    check = check_stationarity(plan.model, plan.theta, X, groups)
    what = f"simulate: the chains of model {plan.model.name!r} at these parameters"
    scheme = "splitting" if plan.cm.noise_matrix is not None else "euler"
    step = check_step_size(
        model_functions(plan.model), plan.theta, X, plan.dt, scheme, plan.model.state_names
    )
    warn_step_size(step, what, 4)
    burn = f"burn_in (now {plan.burn_in} steps = {plan.burn_in * plan.dt:g} time units)"
    unsettled = (
        f"The chains have not settled on a stationary law: increase {burn}, reduce dt "
        f"({plan.dt:g}) or start nearer to it with x0="
    )
    if step.too_large:  # the scheme's own law is off, which unbalances the moments by itself
        unsettled = (
            f"dt={plan.dt:g} alone puts the scheme's stationary law ≈ {step.bias:.0%} off the "
            f"SDE's (the StepSizeWarning), which unbalances these moments as well: reduce dt to "
            f"{step.suggested_dt:.3g} first"
        )
    enforce_stationary(
        check,
        what,
        (
            "There is no stationary law to sample at these parameters: choose parameters whose "
            "drift confines the state (if a longer burn-in should settle it, increase "
            f"{burn})",
            unsettled,
        ),
    )
    return X


@dataclass
class SimulationPlan:
    """Validated arguments, start states and per-chain keys of one simulation.

    The Dask backend (:func:`dynosed_sym.backends.dask.run_chains_dask`) splits the chains (rows
    of ``x0`` and ``keys``) over workers.
    """

    model: object
    cm: object
    theta: np.ndarray
    n_samples: int
    n_chains: int
    n_keep: int
    dt: float
    burn_in: int
    thin: int
    G: np.ndarray
    x0: np.ndarray
    keys: np.ndarray
    seed: int | None = None  # the seed of default start states (None: x0 was given)
    #: records moved to the middle of their step's noise increment (:func:`half_kick_records`;
    #: constant G): the stationary snapshots.  Transient snapshots keep the end of the step.
    midpoint: bool = True

    def run(self, lo=0, hi=None, starts=None):
        """Chains lo … hi − 1 (default: all) by the generated integrator, from their rows of
        ``starts`` (default ``x0``): (out (n_keep, hi − lo, d), status)."""
        hi = self.n_chains if hi is None else hi
        return self.cm.run_chains(
            (self.x0 if starts is None else starts)[lo:hi],
            self.theta,
            self.G,
            self.dt,
            self.burn_in,
            self.thin,
            self.n_keep,
            self.keys[lo:hi],
        )

    def left_domain(self, c, step, starts):
        """Raise the DataError of chain ``c`` (from its row of ``starts``), not finite at
        ``step``, when its last finite state lies outside the model's domain (an Euler step of a
        CIR-type D ∝ x below 0): it was reported as "simulation diverged"."""
        if step <= 1:
            last = starts[c]
        else:  # the chain alone, recorded at step - 1: the same stream, the same states
            one = self.cm.run_chains(
                starts[c : c + 1], self.theta, self.G, self.dt, step - 2, 1, 1, self.keys[c : c + 1]
            )[0]
            last = one[0, 0]
        why = domain_failure(self.model, self.theta, last) if np.isfinite(last).all() else None
        if why is None:
            return
        shown = np.array2string(last, precision=4)
        if step <= 1:
            raise DataError(
                f"simulate: chain {c} starts at x = {shown}, outside the domain of model "
                f"{self.model.name!r}: {why}; pass x0= with a state inside it"
            )
        raise DataError(
            f"simulate: chain {c} of model {self.model.name!r} left the domain of its drift and "
            f"D at step {step - 1} (t = {(step - 1) * self.dt:.4g}, dt={self.dt:g}): an Euler "
            f"step took it to x = {shown}, where {why}. It did not diverge: the time step is "
            f"too coarse near the domain's edge; reduce dt (e.g. to {self.dt / 10:g}), or write "
            "the model so that it is defined for every state the noise can reach (e.g. "
            "Abs(x) or Max(x, 0) in place of x in D)"
        )

    def empty_output(self):
        """Buffers ``out`` (n_keep, C, d) and ``status`` (C,) for ``simulate_chains``."""
        return (
            np.empty((self.n_keep, self.n_chains, self.model.d)),
            np.zeros(self.n_chains, dtype=np.int64),
        )

    def samples(self, out, status):
        """Raise if a chain diverged, else the (n_samples, d) samples ordered by chain.  Chains
        from the default starts that diverge are run once more from positive starts
        (:func:`~dynosed_sym.simulation.starts.positive_starts`) before giving up."""
        first = self.x0
        if status.any() and self.seed is not None:
            starts = positive_starts(self.model, self.n_chains, self.seed, self.theta, self.dt)
            if starts is not None:
                again, status2 = self.run(starts=starts)
                if not status2.any():
                    out, status = again, status2
        if status.any():
            c = int(np.flatnonzero(status)[0])
            self.left_domain(c, int(status[c]), first)
            hint = (
                ""
                if self.cm.noise_matrix is not None
                else ", or D(x) is negative where the chain went (a state-dependent D must be "
                "positive semi-definite wherever the state can go)"
            )
            raise StationarityError(
                f"simulation diverged: chain {c} left the finite range at step {status[c]} "
                f"(t = {status[c] * self.dt:.4g}, dt={self.dt}): the drift does not confine the "
                f"state at these parameters (no stationary law), or dt is too large for it, or "
                f"the chain started outside the model's domain; reduce dt, check the parameters "
                f"or pass x0={hint}"
            )
        if self.midpoint and self.cm.noise_matrix is not None:  # constant G (class doc)
            half_kick_records(out, self.keys, self.G, self.dt, self.burn_in, self.thin)
        return np.ascontiguousarray(
            out.transpose(1, 0, 2).reshape(-1, self.model.d)[: self.n_samples]
        )


#: Steps a chain can count: the kernel's step counter is an int64 (2**63 - 1 at most).
MAX_CHAIN_STEPS = 2**62


def chain_steps(burn_in, thin, n_keep, dt):
    """The steps of one chain, ``burn_in + thin · n_keep``, or a DataError when the kernel's int64
    step counter cannot hold them (burn_in=2**64 gave a Numba TypingError; thin=2**63 wrapped
    around and returned the uninitialised record buffer as samples)."""
    steps = int(burn_in) + int(thin) * int(n_keep)
    if steps > MAX_CHAIN_STEPS:
        raise DataError(
            f"simulate: burn_in + thin × records per chain = {burn_in} + {thin} × {n_keep} = "
            f"{steps:.3g} steps of dt={dt:g} per chain (t = {steps * dt:.3g}), beyond the "
            f"{MAX_CHAIN_STEPS:.3g} steps a chain can count; give burn_in and thin as steps of "
            "dt (e.g. burn_in=5000, thin=10), not as times or sample counts"
        )
    return steps


def plan_simulation(model, theta, n_samples, dt, burn_in, thin, n_chains, seed, x0, out_dir):
    """Validate the arguments of :func:`simulate` and prepare the kernel's inputs."""
    theta = model.theta_vector(theta)
    declared_signs(model.params, theta, "theta", "parameter", model.name)
    n_samples = arguments.integer(n_samples, "n_samples", minimum=1)
    dt = arguments.number(dt, "dt", positive=True)
    burn_in = arguments.integer(burn_in, "burn_in", minimum=0)
    thin = arguments.integer(thin, "thin", minimum=1)
    n_chains = (
        min(n_samples, 2048)
        if n_chains is None
        else arguments.integer(n_chains, "n_chains", minimum=1)
    )
    seed = arguments.seed(seed)
    chain_steps(burn_in, thin, -(-n_samples // n_chains), dt)
    check_simulation_memory(model, n_samples, n_chains)  # before anything is allocated
    start = np.ascontiguousarray(initial_states(model, n_chains, seed, x0, theta=theta, dt=dt))
    diffusion_psd(model, start, "x0", "start state")
    cm = compile_model(model, out_dir)
    G = cm.noise_matrix if cm.noise_matrix is not None else np.zeros((model.d, cm.noise_dim))
    return SimulationPlan(
        model=model,
        cm=cm,
        theta=theta,
        n_samples=n_samples,
        n_chains=n_chains,
        n_keep=-(-n_samples // n_chains),
        dt=dt,
        burn_in=burn_in,
        thin=thin,
        G=np.ascontiguousarray(G, dtype=float),
        x0=start,
        keys=chain_keys(seed, n_chains),
        seed=seed if x0 is None else None,
    )


def with_inputs(model, inputs, what="simulate"):
    """``model.with_inputs(inputs)`` for a model with inputs; the model itself otherwise
    (``what``: the function the model was given to, named when it is no SDEModel)."""
    require_model(model, what)
    if model.inputs:
        if inputs is None:
            raise ModelError(
                f"model {model.name!r} has inputs ({', '.join(model.input_names)}): pass their "
                "values with inputs="
            )
        return model.with_inputs(inputs)
    if inputs:
        raise ModelError(f"inputs: model {model.name!r} declares no inputs")
    return model


def initial_draws(initial, n, d, rng, name="initial", model=None):
    """n start states (n, d) from an initial law: a Gaussian ``(mean, cov)`` or samples (resampled
    with replacement).  Samples in a DataFrame are read by their column names, which needs the
    ``model``; without it a DataFrame is refused (it was read by position: columns y, x were
    taken as x, y)."""
    if is_frame(initial):
        if model is None:
            raise DataError(
                f"{name}: a DataFrame of samples (columns {', '.join(map(str, initial.columns))}) "
                "is not read by name here; pass an array (N, d) with its columns in the model's "
                "state order (frame[[state names]].to_numpy())"
            )
        X = as_samples(initial, model, name, min_samples=1)
        return X[rng.integers(0, X.shape[0], int(n))]
    if isinstance(initial, (tuple, list)) and len(initial) == 2:
        mean = arguments.float_array(initial[0], f"{name}: mean").reshape(-1)
        cov = arguments.float_array(initial[1], f"{name}: covariance")
        if cov.ndim == 0:
            cov = float(cov) * np.eye(d)
        if mean.shape != (d,) or cov.shape != (d, d):
            raise DataError(
                f"{name}: expected (mean ({d},), covariance ({d}, {d})), one entry per state "
                f"variable, got shapes {mean.shape} and {cov.shape}"
            )
        if not (np.isfinite(mean).all() and np.isfinite(cov).all()):
            raise DataError(f"{name}: mean or covariance not finite")
        w, V = np.linalg.eigh(0.5 * (cov + cov.T))
        if w.min() < -1e-12 * max(1.0, abs(w).max()):
            raise DataError(f"{name}: the covariance is not positive semi-definite")
        L = V * np.sqrt(np.clip(w, 0.0, None))
        z = rng.standard_normal((int(n), d))
        return mean + z @ L.T
    try:
        X = np.asarray(initial, dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"{name}: expected (mean, covariance) or samples (N, {d})") from None
    if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1:
        raise DataError(f"{name}: expected (mean, covariance) or samples (N, {d}), got {X.shape}")
    if not np.isfinite(X).all():
        raise DataError(f"{name}: samples contain NaN or inf")
    return X[rng.integers(0, X.shape[0], int(n))]


def simulate_time_course(
    model,
    theta,
    times,
    n_samples,
    *,
    initial,
    inputs=None,
    dt=0.01,
    seed=0,
    out_dir=None,
) -> TimeCourse:
    """Unpaired snapshots at known times after a change: a :class:`TimeCourse`.

    Every snapshot is an independent set of ``n_samples`` chains started from fresh draws of the
    initial law at t = 0 and run for t (different cells at different times).

    Parameters
    ----------
    model : SDEModel
    theta : array (n,) or dict
    times : sequence of float ≥ 0
        Snapshot times (t = 0 is the initial law itself).
    n_samples : int or sequence of int
        Samples per snapshot.
    initial : (mean, covariance) or (N0, d) array
        The law at t = 0: a Gaussian, or samples (resampled with replacement).
    inputs : dict, optional
        Values of the model's inputs.
    dt : float
        Largest time step; each snapshot uses t / ceil(t / dt).
    seed : int

    Returns
    -------
    TimeCourse
    """
    model = with_inputs(model, inputs, "simulate_time_course")
    times = arguments.snapshot_times(times, "times", minimum=2)  # (a time course: ≥ 2)
    try:
        shape = np.shape(n_samples)
    except ValueError:  # ragged nested counts
        shape = None
    if shape is None or len(shape) > 1 or (shape and shape[0] != times.size):
        got = (
            "rows of different lengths"
            if shape is None
            else f"an array of shape {shape}"
            if len(shape) > 1
            else f"{shape[0]}"
        )
        raise DataError(
            f"n_samples: one count, or a flat list of one per time ({times.size}), got {got}"
        )
    sizes = np.broadcast_to(np.asarray(n_samples, dtype=object), times.shape)
    dt = arguments.number(dt, "dt", positive=True)
    seed = arguments.seed(seed)
    out, steps = {}, []
    for k, (t, n) in enumerate(zip(times.tolist(), sizes.tolist())):
        out[t], step = _snapshot_at(model, theta, t, n, initial, dt, seed, k, out_dir)
        steps += [] if step is None else [(step.bias, t, step)]
    if steps:  # the worst snapshot's, once
        _, t, step = max(steps, key=lambda item: item[0])
        warn_step_size(step, f"simulate_time_course: the snapshot at t = {t:g}", 3, False)
    return TimeCourse(out)


def snapshot_at(model, theta, t, n_samples, *, initial, inputs=None, dt=0.01, seed=0, out_dir=None):
    """One snapshot of :func:`simulate_time_course`: ``n_samples`` chains from the initial law
    run for time ``t`` → (n, d), the same draws as that function's first snapshot (a
    :class:`TimeCourse` needs two times; a design's sampler asks for one at a time)."""
    model = with_inputs(model, inputs, "snapshot_at")
    t = arguments.number(t, "t", nonnegative=True)
    dt = arguments.number(dt, "dt", positive=True)
    X, step = _snapshot_at(
        model,
        theta,
        t,
        n_samples,
        initial,
        dt,
        arguments.seed(seed),
        0,
        out_dir,
        name="snapshot_at",
    )
    if step is not None:
        warn_step_size(step, f"snapshot_at: the snapshot at t = {t:g}", 3, False)
    return X


def snapshot_steps(
    t, dt, name="times", cure="check the time unit of the snapshot times, or enlarge dt"
):
    """The steps of dt (at most) that reach the snapshot time ``t > 0``, or a DataError naming
    ``name`` (and saying ``cure``) when a chain's step counter cannot hold them (int() of
    1e300 / 0.01 was an OverflowError)."""
    ratio = t / dt - 1e-9
    if not ratio <= MAX_CHAIN_STEPS:
        raise DataError(
            f"{name}: t = {t:.6g} with dt={dt:g} needs {ratio:.3g} steps per chain, beyond the "
            f"{MAX_CHAIN_STEPS:.3g} steps a chain can count; {cure}"
        )
    return max(1, int(np.ceil(ratio)))


def _snapshot_at(model, theta, t, n, initial, dt, seed, k, out_dir, name="times"):
    """The snapshot at time t (the k-th of a time course seeded by ``seed``) and the check of its
    step (:mod:`.stepsize`; None at t = 0); ``name``: the argument that gave t."""
    n = arguments.integer(n, "n_samples", minimum=1)
    rng = np.random.default_rng(np.random.SeedSequence([seed, k]))
    x0 = initial_draws(initial, n, model.d, rng, model=model)
    if t == 0.0:
        return x0, None
    steps = snapshot_steps(t, dt, name)
    # a transient snapshot: no stationarity check (the chains are meant to be on their way)
    plan = plan_simulation(
        model,
        theta,
        n,
        t / steps,
        steps - 1,  # record 0 is the state after burn_in + thin steps
        1,
        n,
        int(np.random.SeedSequence([seed, k]).generate_state(1)[0]),
        x0,
        out_dir,
    )
    plan.midpoint = False  # the state at time t itself
    X = plan.samples(*plan.run())
    scheme = "end" if plan.cm.noise_matrix is not None else "euler"
    step = check_step_size(model_functions(model), plan.theta, X, plan.dt, scheme, None, False)
    return X, step
