"""Identifiability of a *design* before data: several environments with known inputs, time
courses, env parameters (docs/designs.md).

Structural check.  A global direction c (env parameters one column per environment) is invisible
to the design iff it is invisible in every environment: ``∇·(p_e U_e P_e c) ≡ 0`` for the law p_e
of each environment (and, for a time course, of each snapshot time: for Gaussian laws the
functions p_j·a_jᵀc with distinct (μ_j, Σ_j) are linearly independent, so no cancellation across
times is possible).  With the functions ``a_k^(e) = U_k(x; u_e)ᵀ s_e(x) + ∇·U_k(x; u_e)``:

* every environment stationary with a linear drift and constant D at the nominal θ: the Gaussian
  laws from the exact Lyapunov solve, the columns concatenated over environments, and the exact
  null space of :func:`~dynosed_sym.identifiability.exact.function_null_space` (``exact``);
* Gaussian laws at snapshot times (a linear drift from a Gaussian initial law: mean e^{Mt}μ₀,
  covariance by Van Loan's exponential): the same functions evaluated at random points of every
  law, rank by SVD (``numerical``);
* otherwise the intersection of the environments' own structural null spaces
  (:func:`~dynosed_sym.identifiability.structural.structural_check`; an upper bound on the rank,
  ``upper bound``).

The simulated check fits the design to samples drawn at the nominal θ (the compiled simulator,
or ``sampler=``) with :func:`dynosed_sym.routes.designs.fit_global_design`.  Advice on what to add
is in :mod:`.advice`.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from .. import arguments
from ..assembly.designs import param_layout
from ..data.designs import Design, Environment, TimeCourse, as_design
from ..errors import DataError
from ..options import Execution
from ..routes.designs import fit_global_design
from ..routes.options import Features, Solver
from ..simulation.simulate import initial_draws, snapshot_steps
from ..solve.intervals import direction_factor_ranges
from .designs_structural import DesignStructural, design_structural, env_thetas
from .options import Experiment, Study, check_sampler_signature, check_times
from .simulated_sampling import design_sampler, resolve_simulation

__all__ = ["DesignCheck", "check_design", "design_spec", "draw_design"]


class RankVerdict:
    """The rank summaries shared by the checks: the simulation check's report when it was run, else
    the structural one's (``structural``, ``report``, ``param_names`` are the class's fields)."""

    @property
    def rank(self):
        return self.structural.rank if self.report is None else self.report.rank

    @property
    def n_params(self):
        return len(self.param_names)

    @property
    def unique(self):
        return self.rank == self.n_params

    @property
    def null_space(self):
        """The unresolved directions as ``Combination`` objects (the design-time report's, else
        the structural report's); ``str`` gives the text."""
        return self.structural.null_space if self.report is None else self.report.null_space

    def rank_words(self):
        """The verdict of the simulation check's report in words: ``identifiable``, ``NOT
        identifiable``, or — when the exact structural rank is full and every unresolved
        direction is weak (real: it does not shrink with N like noise) — "not yet resolved at
        this N" (so a full structural rank beside a smaller rank of the simulated fit does not
        read as a contradiction)."""
        rep = self.report
        if rep.unique:
            return "identifiable"
        verdicts = getattr(self, "direction_verdict", None) or []
        open_ = [v for v in verdicts if v != "resolved"]
        st = self.structural
        if (
            st.rank_is_exact
            and st.rank == self.n_params
            and open_
            and all(v == "weak" for v in open_)
        ):
            k = len(open_)
            return (
                f"not yet resolved at this N: the structural rank is {st.rank} (identifiable); "
                f"{k} weak direction{'s' if k > 1 else ''} need{'' if k > 1 else 's'} more "
                "samples, see below"
            )
        return "NOT identifiable"


@dataclass
class DesignCheck(RankVerdict):
    """Result of :func:`dynosed_sym.check_identifiability` for a design.

    Attributes
    ----------
    model_name : str
    param_names : list of str
        Global parameters (env parameters as ``k[A]``).
    nominal : (n,) array
    environments : list of dict
        ``name``, ``inputs``, ``times`` (time courses), ``n_samples`` per snapshot.
    structural : DesignStructural
    report : IdentifiabilityReport or None
        The simulated design's report (None with ``simulate=False``).
    fit : FitResult or None
    direction_sv, direction_noise : (n,) arrays
        σ of each right singular direction of the simulated system and its noise.
    direction_verdict : list of str
        ``resolved``, ``unconstrained`` (in the structural null space) or ``weak``.
    direction_n_resolve : (n,) array
        Samples per snapshot at which the direction reaches 3 × its noise (inf when
        unconstrained).
    advice : list of Advice
        What to add (:mod:`dynosed_sym.identifiability.advice`), best first.
    """

    model_name: str
    param_names: list
    nominal: np.ndarray
    environments: list
    structural: DesignStructural
    report: object = None
    fit: object = None
    n_samples: int = 0
    direction_sv: np.ndarray | None = None
    direction_noise: np.ndarray | None = None
    direction_verdict: list | None = None
    direction_n_resolve: np.ndarray | None = None
    advice: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def free_params(self):
        return [] if self.report is None else list(self.report.free_params)

    @property
    def std_errors(self):
        return None if self.report is None else self.report.std_errors

    def to_dict(self):
        """Plain record (JSON-ready once non-finite numbers are replaced)."""
        rep = self.report
        return {
            "model": self.model_name,
            "param_names": list(self.param_names),
            "nominal": [float(v) for v in self.nominal],
            "environments": self.environments,
            "structural": {
                "rank": self.structural.rank,
                "n_params": self.structural.n_params,
                "certificate": self.structural.certificate,
                "combinations": [str(c) for c in self.structural.combinations],
                "per_env_rank": dict(self.structural.per_env_rank),
            },
            "rank": self.rank,
            "n_params": self.n_params,
            "unique": self.unique,
            "null_space": [str(c) for c in self.null_space],
            "null_space_coefficients": [list(c.coefficients) for c in self.null_space],
            "n_samples": self.n_samples,
            "std_errors": None
            if rep is None or rep.std_errors is None
            else [float(v) for v in rep.std_errors],
            "direction_verdict": self.direction_verdict,
            "advice": [
                {
                    k: (float(v) if isinstance(v, (float, np.floating)) else v)
                    for k, v in vars(a).items()
                    if k != "extra"
                }
                for a in self.advice
            ],
            "notes": list(self.notes),
        }

    def __str__(self):
        lines = [f"identifiability of the design for {self.model_name!r} at the nominal θ"]
        for env in self.environments:
            inp = ", ".join(f"{k} = {v:g}" for k, v in env["inputs"].items())
            what = (
                f"time course t = {', '.join(f'{t:g}' for t in env['times'])}"
                if env.get("times") is not None
                else "stationary"
            )
            lines.append(f"  {env['name']}: {what}" + (f"; {inp}" if inp else ""))
        lines += ["", str(self.structural)]
        rep = self.report
        if rep is not None:
            lines.append("")
            lines.append(
                f"simulation check: {self.n_samples:,} simulated samples per snapshot: rank "
                f"{rep.rank} of {rep.n_params} ({self.rank_words()})"
            )
            for combo in rep.null_space:
                lines.append(f"  unresolved combination: {combo}")
            for i in range(rep.n_params):
                v = self.direction_verdict[i]
                nr = self.direction_n_resolve[i]
                extra = ""
                if v == "weak":
                    t, q = rep.direction_t[i], rep.resolve_threshold
                    extra = resolution_text(nr, self.n_samples, t, q, per=" per snapshot")
                lines.append(
                    f"    σ{i + 1} = {self.direction_sv[i]:9.3g}  noise "
                    f"{self.direction_noise[i]:9.3g}  {v}{extra}"
                )
            if rep.std_errors is not None:
                se = ", ".join(f"{nm} {s:.3g}" for nm, s in zip(self.param_names, rep.std_errors))
                lines.append(f"  predicted standard errors at this N: {se}")
        if self.advice:
            from .advice import advice_lines

            lines += [""] + advice_lines(self.advice)
        lines.extend(self.notes)
        return "\n".join(lines)


def resolution_text(N, n_samples, t, q, per=""):
    """``", resolved from N ≈ 1.5M (≥ 42k within the noise of its t)"`` for a weak direction
    crossing the threshold q at ``N = n_samples·(q/t)²``: the point and the range of N that
    ``t ± 1.645`` allows (:func:`~dynosed_sym.solve.intervals.data_factor_ranges`; no upper end
    while t ≤ 1.645); ``", not yet above its noise"`` when N is infinite."""
    if not np.isfinite(N):
        return ", not yet above its noise"
    lo, hi = n_samples * direction_factor_ranges(np.array([float(t)]), q)[0]
    span = f"≥ {short_count(lo)}" if not np.isfinite(hi) else f"{short_count(lo)}–{short_count(hi)}"
    return f", resolved from N ≈ {short_count(N)}{per} ({span} within the noise of its t)"


def short_count(N):
    """A sample size in three digits with a k, M or G suffix (``"∞"`` when infinite)."""
    N = float(N)
    if not np.isfinite(N):
        return "∞"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if N >= div:
            return f"{N / div:.3g}{unit}"
    return f"{N:.0f}"


def draw_design(design, thetas, sampler, n_samples, initial, seed, model):
    """Samples of every snapshot of the design: {env: array or TimeCourse}.

    ``sampler(inputs, theta, n, seed, time=None, initial=None)``; a snapshot at t = 0 is drawn
    from the initial law itself.  A DataError of a draw (e.g. the StationarityError of chains
    that diverge at one environment's inputs) says which environment, inputs and time it was.
    """
    data, d = {}, model.d
    for i, env in enumerate(design.envs):
        u = env.input_dict
        if env.kind == "stationary":
            with _drawing(design, env):
                X = sampler(u, thetas[env.name], n_samples, seed + 7919 * i)
            data[env.name] = _checked(X, env.name, d, n_samples)
            continue
        snaps = {}
        for k, t in enumerate(env.data.times.tolist()):
            if t == 0:
                rng = np.random.default_rng(np.random.SeedSequence([seed, i, k]))
                snaps[t] = initial_draws(
                    initial[env.name], n_samples, d, rng, name=f"initial[{env.name!r}]", model=model
                )
            else:
                with _drawing(design, env, t):
                    X = sampler(
                        u,
                        thetas[env.name],
                        n_samples,
                        seed + 7919 * i + 31 * k,
                        t,
                        initial[env.name],
                    )
                snaps[t] = _checked(X, env.name, d, n_samples)
        data[env.name] = TimeCourse(snaps)
    return data


@contextmanager
def _drawing(design, env, t=None):
    """A DataError raised while drawing a snapshot of ``env``, prefixed with the environment (of
    a design of several), its input values and the snapshot time: the model of an environment
    is the user's model at those inputs, and its own messages cannot say which they were."""
    where = [] if design.single else [f"environment {env.name!r}"]
    if env.input_dict:
        where.append("inputs " + ", ".join(f"{k} = {v:g}" for k, v in env.input_dict.items()))
    if t is not None:
        where.append(f"t = {t:g}")
    try:
        yield
    except DataError as exc:
        if not where:
            raise
        raise type(exc)(f"{', '.join(where)}: {exc}") from exc


def _checked(X, env, d, n):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != d or X.shape[0] != n:
        raise DataError(
            f"sampler: returned an array of shape {X.shape} for environment {env!r}, "
            f"expected (n, {d}) with the n = {n:,} rows asked for"
        )
    return X


def check_design(model, nominal, experiment, study, features, solver, execution, simulate):
    """Structural and simulated identifiability of a design, and advice (see
    :func:`dynosed_sym.check_identifiability`, which calls this for designs): the environments
    and times of ``experiment``, the sample size, seed and sampler of ``study`` (its
    ``study.sampler``, else the compiled simulator with ``study.simulation``:
    :func:`~dynosed_sym.identifiability.simulated_sampling.design_sampler`); an option object that
    is None takes its defaults."""
    from ..routes.designs import environment_models
    from .advice import SimulatedDesign, advise_design

    e, study = experiment or Experiment(), study or Study()
    features, solver = features or Features(), solver or Solver()
    if features.bandwidth == "auto":  # (a design's fits are assembled here: no length scale search)
        features = replace(features, bandwidth="median")
    ex = execution or Execution()
    n_samples, seed, out_dir = study.n_samples, study.seed, ex.out_dir
    inputs, times, initial, order = e.inputs, e.times, e.initial, e.order

    t0 = time.perf_counter()
    design = design_spec(model, inputs, times)
    if simulate and study.sampler is not None and design.has_time_course:  # (before any work)
        check_sampler_signature(study.sampler, time_course=True)
    if simulate and study.sampler is None and design.has_time_course:
        _reachable_times(e, resolve_simulation(study.simulation).dt)
    thetas = env_thetas(model, nominal, design.names)
    initial = _per_env(initial, design)
    for env in design.envs:
        if env.kind != "timecourse":
            continue
        if initial.get(env.name) is None:
            raise DataError(
                f"environment {env.name!r}: a time-course design needs initial= (the law at "
                "t = 0: (mean, covariance) or samples)"
            )
        # checked before the structural check computes the law at each time from it (a mean of
        # the wrong length was NumPy's matmul error there, a NaN covariance an SVD failure)
        where = "initial" if design.single else f"initial[{env.name!r}]"
        initial_draws(
            initial[env.name], 0, model.d, np.random.default_rng(0), name=where, model=model
        )
    models = {e: me for e, (me, _) in environment_models(model, design, out_dir).items()}
    structural = design_structural(model, design, thetas, models, initial, seed)
    check = _structural_design_check(model, design, thetas, structural)
    check.timings["structural"] = time.perf_counter() - t0
    if not simulate:
        return check
    sampler = study.sampler or design_sampler(model, study.simulation, out_dir)
    t1 = time.perf_counter()
    data = draw_design(design, thetas, sampler, int(n_samples), initial, seed, model)
    sim = as_design(data, model, {e.name: e.input_dict for e in design.envs})
    fit = fit_global_design(
        model,
        sim,
        replace(features, seed=seed),
        solver,
        Execution(n_blocks=ex.n_blocks, out_dir=out_dir),
        order=order,
    )
    check.timings["simulate+fit"] = time.perf_counter() - t1
    check.fit, check.report, check.n_samples = fit, fit.report, int(n_samples)
    _directions(check, fit, structural)
    if e.advise and (fit.report.rank < len(check.param_names) or design.has_time_course):
        t2 = time.perf_counter()
        simulated = SimulatedDesign(
            model,
            design,
            thetas,
            fit,
            data,
            sampler,
            initial,
            int(n_samples),
            seed,
            order,
            out_dir,
            _structural_with(model, design, thetas, models, initial, seed, structural),
        )
        check.advice = advise_design(simulated, e.candidates, e.candidate_times, check.notes)
        check.timings["advice"] = time.perf_counter() - t2
    if structural.rank_is_exact and fit.report.rank != structural.rank:
        check.notes.append(
            f"note: the simulation resolves {fit.report.rank} directions where the structural "
            f"check gives {structural.rank}"
            + (": too few samples for the weakest" if fit.report.rank < structural.rank else "")
        )
    check.notes.append(
        "samples per snapshot: "
        + (
            "from sampler="
            if study.sampler is not None
            else sampler.description(n_samples) + " (time courses: chains from the initial law)"
        )
    )
    return check


def _reachable_times(experiment, dt):
    """DataError naming ``Experiment.times`` or ``Experiment.candidate_times`` (those of the
    advice) when the check's simulator cannot reach one of them with steps of ``dt``, before the
    structural check and the simulation (the advice draws its snapshots last, and the message
    said "times: t = 1e+300 …", an argument the user had not given).  A ``sampler=`` draws any
    time it can: not checked then."""
    fields = ["times"] + ["candidate_times"] * bool(experiment.advise)
    for field_ in fields:
        value = getattr(experiment, field_)
        if value is None:
            continue
        for env, ts in (value if isinstance(value, dict) else {None: value}).items():
            name = f"Experiment.{field_}" + ("" if env is None else f"[{env!r}]")
            for k, t in enumerate(arguments.snapshot_times(ts, name).tolist()):
                if t > 0:
                    snapshot_steps(
                        t,
                        dt,
                        f"{name}: entry {k} cannot be simulated",
                        f"check the time unit of the {field_.replace('_', ' ')}, give the "
                        "simulation a larger step (study=Study(simulation=ds.Simulation(dt=...))), "
                        "or a sampler= that draws the law at that time",
                    )


def _structural_design_check(model, design, thetas, structural):
    """The DesignCheck of the structural verdict (nominal values in the stacked layout)."""
    names = structural.param_names
    glob = np.zeros(len(names))
    _, columns = param_layout(
        model.param_names, [str(p) for p in model.env_params], design.names, design.single
    )
    for e, th in thetas.items():
        glob[columns[e]] = th
    return DesignCheck(
        model_name=model.name,
        param_names=names,
        nominal=glob,
        environments=[
            {
                "name": env.name,
                "inputs": env.input_dict,
                "times": None if env.kind == "stationary" else env.data.times.tolist(),
            }
            for env in design.envs
        ],
        structural=structural,
        timings={},
    )


def _structural_with(model, design, thetas, models, initial, seed, structural):
    """``fn(u) -> (rank, n)`` of the design with one more stationary environment at inputs u
    (None where the structural verdict is not exact)."""

    def structural_with(u):
        if structural.certificate != "exact":
            return None
        new = Environment("new", design.envs[0].data, u, tuple(model.input_names))
        aug = Design(list(design.envs) + [new])
        m_new = model.with_inputs(u) if model.inputs else model
        th = dict(thetas, new=thetas[design.envs[0].name])
        rep = design_structural(model, aug, th, dict(models, new=m_new), initial, seed)
        return rep.rank, rep.n_params

    return structural_with


def _directions(check, fit, structural):
    A = fit.A
    _, s, Vt = np.linalg.svd(A, full_matrices=False)
    rep = fit.report
    noise = rep.singular_noise
    n = A.shape[1]
    verdict, n_res = [], np.full(n, np.inf)
    Q = structural.null_vectors
    # t = κ̂/sd(κ̂) of each direction (:mod:`dynosed_sym.solve.directions`) grows like √N: it
    # crosses the threshold q at N·(q/t)²
    t, q = np.asarray(rep.direction_t, dtype=float), float(rep.resolve_threshold)
    for i in range(n):
        if t[i] > 0:
            n_res[i] = check.n_samples * (q / t[i]) ** 2
        if t[i] > q:
            verdict.append("resolved")
        elif Q.shape[1] and structural.rank_is_exact and np.linalg.norm(Q.T @ Vt[i]) > 0.9:
            verdict.append("unconstrained")
            n_res[i] = np.inf
        else:
            verdict.append("weak")
    check.direction_sv, check.direction_noise = s, noise
    check.direction_verdict, check.direction_n_resolve = verdict, n_res


def _per_env(value, design):
    """{env: value}: a dict keyed by environment names, or one value for every environment."""
    if isinstance(value, dict) and set(map(str, value)) <= set(design.names) and value:
        return {str(k): v for k, v in value.items()}
    return {e: value for e in design.names}


def design_spec(model, inputs, times):
    """A :class:`~dynosed_sym.data.designs.Design` without data: environments from ``inputs``
    ({env: {...}} or one env's {...}), time courses from ``times`` (a list for every
    environment, or {env: list})."""
    if (
        inputs is not None
        and isinstance(inputs, dict)
        and inputs
        and all(isinstance(v, dict) for v in inputs.values())
    ):
        names = [str(k) for k in inputs]
    else:
        names = ["data"]
    per_times = {}
    if times is not None:
        if isinstance(times, dict):
            per_times = {str(k): v for k, v in times.items()}
            unknown = [k for k in per_times if k not in names]
            if unknown:
                raise DataError(f"times: environment {unknown[0]!r} is not in inputs=")
        else:
            per_times = {e: times for e in names}
    placeholder = np.zeros((2, model.d))
    data = {}
    for e in names:
        if e in per_times:
            ts = check_times(per_times[e], f"times[{e!r}]")
            data[e] = TimeCourse({float(t): placeholder for t in ts})
        else:
            data[e] = placeholder
    design = as_design(data if len(names) > 1 or names != ["data"] else data["data"], model, inputs)
    if design is None:  # one stationary environment of a model without inputs/env params
        design = Design([Environment("data", placeholder, np.zeros(0), ())], single=True)
    return design
