"""Simulation check (:func:`check_identifiability`): the structural check plus a simulated study.

Simulates the model at the nominal parameters with the compiled simulator, assembles A with
per-block partial sums, and reports rank, free combinations, freeness, predicted standard errors
as a function of N and the N needed for a requested relative error per parameter.  Directions are
followed across nested subsets of the data blocks: a structurally unconstrained direction has
``‖A_N v‖`` shrinking like N^(-1/2) (pure noise), a real one tends to a constant.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .. import arguments
from ..errors import DataError, DynosedError, ModelError
from ..model.declaration import require_parameters
from ..options import Execution, resolve_options
from ..routes.global_route import fit_global
from ..routes.local_route import fit_local
from ..routes.options import Features, Scores, Solver, moved_to
from ..solve.flat import lone_rule
from ..solve.report import FREE_PROJECTION, col_se
from ..solve.uncertainty import t_quantile
from .designs import DesignCheck, RankVerdict, check_design, resolution_text, short_count
from .options import Experiment, Study
from .simulated_sampling import draw_samples
from .structural import StructuralReport, nominal_vector, structural_check

__all__ = ["IdentifiabilityCheck", "check_identifiability", "follow_directions"]


SHRINK_EXPONENT = -0.25  # log-log slope below which an unresolved direction is "unconstrained"


@dataclass
class IdentifiabilityCheck(RankVerdict):
    """Result of :func:`check_identifiability`: structural verdict plus a simulated study.

    Attributes
    ----------
    model_name : str
    route : str
    param_names : list of str
    nominal : (n,) array
    structural : StructuralReport
    report : IdentifiabilityReport or None
        Report of the system assembled from ``n_samples`` simulated samples (None when
        ``simulate=False``).
    rank, unique, null_space, free_params, freeness, freeness_normalised
        From ``report`` (the structural verdict when not simulated).
    n_samples : int
    sampling : str
        Where the samples came from, as the report states it: ``"20,000 independent simulated
        snapshots (…)"``, ``"… samples from 2,048 chains (…)"``, ``"… given samples"`` or
        ``"… samples from sampler="``.
    levels : (L,) array
        Sample sizes of the nested subsets of data blocks used to follow each direction.
    direction_sv : (L, n) array
        ``‖A_N v_i‖`` for each right singular vector v_i (of the full-N system) and level.
    direction_noise : (L, n) array
        Its standard error estimated from the blocks of that level.
    direction_exponent : (n,) array
        Log-log slope of ``‖A_N v_i‖`` against N: ≈ −½ for a direction the data cannot see
        (pure noise), ≈ 0 for a real one.
    direction_verdict : list of str
        ``"resolved"``, ``"unconstrained"`` (unresolved and shrinking like N^-½ — or, when the
        structural rank is exact, lying in the exact null space) or ``"weak"`` (unresolved but
        real: more data will resolve it).
    direction_n_resolve : (n,) array
        N at which the direction crosses the resolution threshold (t = κ̂/sd(κ̂) ∝ N^½ reaches the
        Student-t quantile, :mod:`dynosed_sym.solve.directions`);
        inf for unconstrained directions.
    std_errors : (n,) array
        Sandwich standard errors at ``n_samples`` (inf when not identifiable).
    bias_sd : (n,) array or None
        Standard deviation of the resolution bias at ``n_samples`` (τ·loading on the unresolved
        directions, :mod:`dynosed_sym.solve.intervals`); :meth:`se_at` and ``n_required`` use the
        honest width √(se² + bias_sd²), following each weak direction as it gets resolved.
    prior_scale : float, array or None
        τ of the report.
    directions : (n, n) array or None
        The followed right singular directions (columns).
    rel_error, level : float
        The requested relative error and confidence level.
    n_required : (n,) array
        Samples needed for the half-width of the ``level`` interval (honest width) to reach
        ``rel_error·|θ_k|`` (for a zero nominal value: ``rel_error`` times the RMS of the nonzero
        nominal values); inf when the bias of directions that stay unresolved is too large —
        printed "∞" for a structurally free parameter, else "> n_samples" (an unresolved direction
        without a structural reason may be resolved by more samples than were simulated).
    timings : dict
    notes : list of str
    """

    model_name: str
    route: str
    param_names: list
    nominal: np.ndarray
    structural: StructuralReport
    report: object = None
    n_samples: int = 0
    sampling: str = ""
    levels: np.ndarray | None = None
    direction_sv: np.ndarray | None = None
    direction_noise: np.ndarray | None = None
    direction_exponent: np.ndarray | None = None
    direction_verdict: list | None = None
    direction_n_resolve: np.ndarray | None = None
    std_errors: np.ndarray | None = None
    bias_sd: np.ndarray | None = None
    prior_scale: object = None
    directions: np.ndarray | None = None
    rel_error: float = 0.1
    level: float = 0.95
    n_required: np.ndarray | None = None
    timings: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    # ------------------------------------------------------------------ summaries (rank,
    # n_params, unique, null_space: RankVerdict)
    @property
    def free_params(self):
        if self.report is None:
            return list(self.structural.free_params)
        return sorted(
            set(self.report.free_params) | set(self.structural.free_params),
            key=self.param_names.index,
        )

    @property
    def freeness(self):
        return None if self.report is None else self.report.freeness

    @property
    def freeness_normalised(self):
        return None if self.report is None else self.report.freeness_normalised

    def _schedule(self):
        """Directions with a finite resolution point, by that point: (indices, N_i, f_i) with
        f_i = noise_i²/signal_i² the variance a resolved direction adds per unit loading² (at
        ``n_samples``)."""
        if self.directions is None or self.direction_verdict is None:
            return np.zeros(0, int), np.zeros(0), np.zeros(0)
        n_res = self.direction_n_resolve
        idx = np.array(sorted(np.flatnonzero(np.isfinite(n_res)), key=lambda i: n_res[i]), int)
        noise, sv = self.direction_noise[-1, idx], self.direction_sv[-1, idx]
        sig2 = np.maximum(sv**2 - noise**2, np.finfo(float).tiny)
        return idx, n_res[idx], noise**2 / sig2

    def _coefficients(self, n_res_max):
        """(a, c, free) (n,): honest variance a/N + c when exactly the directions with
        resolution point ≤ ``n_res_max`` are resolved (a: the sandwich, minus directions resolved
        now but not then, plus directions resolved then but not now; c: the bias of the
        unresolved ones; free: loading ≥ 0.5 then)."""
        a = self.std_errors**2 * self.n_samples
        n = a.size
        if self.prior_scale is None or self.directions is None:
            return a, np.zeros(n), ~np.isfinite(a)
        V = self.directions
        idx, n_res, f = self._schedule()
        now = np.array([v == "resolved" for v in self.direction_verdict])
        then = np.zeros(n, dtype=bool)
        then[idx[n_res <= n_res_max]] = True
        fi = np.zeros(n)
        fi[idx] = f
        gain, lost = then & ~now, now & ~then
        a = np.maximum(
            a + self.n_samples * ((V[:, gain] ** 2) @ fi[gain] - (V[:, lost] ** 2) @ fi[lost]), 0.0
        )
        VU = V[:, ~then]
        tau = np.broadcast_to(self.prior_scale, (n,))
        c = np.sum((VU @ VU.T * tau[None, :]) ** 2, axis=1)
        free = np.linalg.norm(VU, axis=1) >= FREE_PROJECTION
        n_res = self.direction_n_resolve
        never = ~then if n_res is None else ~then & ~np.isfinite(n_res)
        lone, widen = self._lone(V[:, never], tau)
        return np.where(free | lone, np.inf, a), c + widen**2, free | lone

    def _lone(self, V_never, tau):
        """(lone, widen) (n,): the fit's lone-direction rule (:mod:`dynosed_sym.solve.flat`) on
        the directions no N resolves (``V_never``): the parameters loading ≥ LONE_LOADING on one
        that rests on one or two parameters get the whole line, the others the bias of ten
        times τ — as the fit at any N gives them, when its τ is estimated (not given)."""
        n = V_never.shape[0]
        if getattr(self.report, "prior_scale_method", None) != "ml" or V_never.shape[1] == 0:
            return np.zeros(n, dtype=bool), np.zeros(n)
        return lone_rule(V_never, None, tau)[:2]

    def se_at(self, N):
        """Predicted honest standard deviation (n,) — or (len(N), n) — of the error at sample
        size(s) N: the sandwich (∝ N^-½) over the directions resolved at N (each direction is
        resolved from its ``direction_n_resolve``) and the bias τ·loading from the others
        (``bias_sd`` at ``n_samples``); inf when not identifiable at N."""
        if self.std_errors is None:
            raise DynosedError("no simulation was run (simulate=False)")
        Ns = arguments.float_array(N, "se_at: N").reshape(-1)
        bad = Ns[~(np.isfinite(Ns) & (Ns > 0))]
        if bad.size:  # (N = -1 gave NaN standard errors, N = 0 infinite ones)
            raise DataError(f"se_at: N must be positive sample sizes, got {float(bad[0])!r}")
        out = np.empty((Ns.size, self.n_params))
        for k, Nk in enumerate(Ns):
            a, c, _ = self._coefficients(Nk)
            with np.errstate(invalid="ignore"):
                out[k] = np.sqrt(a / Nk + c)
        return out if np.ndim(N) else out[0]

    def samples_for(self, rel_error=None, level=None):
        """Samples per parameter for a ``level`` interval of half-width ``rel_error·|θ_k|``."""
        if self.std_errors is None:
            raise DynosedError("no simulation was run (simulate=False)")
        if rel_error is not None:
            rel_error = arguments.relative_error(rel_error)
        rel_error = self.rel_error if rel_error is None else rel_error
        level = self.level if level is None else arguments.level(level)
        q = t_quantile(level, np.inf)
        scale = np.abs(self.nominal)
        nz = scale[scale > 0]
        typical = float(np.sqrt(np.mean(nz**2))) if nz.size else 1.0
        target = (rel_error * np.where(scale > 0, scale, typical) / q) ** 2  # variance allowed
        _, n_res, _ = self._schedule()
        edges = np.concatenate([[0.0], n_res, [np.inf]])
        need = np.full(self.n_params, np.inf)
        # the honest variance is a/N + c between consecutive resolution points of the directions
        for k in range(edges.size - 1):
            a, c, _ = self._coefficients(edges[k])
            with np.errstate(divide="ignore", invalid="ignore"):
                N = np.maximum(edges[k], a / (target - c))
            ok = np.isinf(need) & (target > c) & (N < edges[k + 1]) & np.isfinite(a)
            need[ok] = N[ok]
        return np.where(np.isfinite(need), np.ceil(need), np.inf)

    def _structural_direction(self, i):
        """Whether followed direction i lies in the structural check's null space (then no N
        resolves it; otherwise "unconstrained" only says the simulated N shows no curvature)."""
        Q = getattr(self.structural, "null_vectors", None)
        if Q is None or np.asarray(Q).size == 0 or self.directions is None:
            return False
        Q = np.linalg.qr(np.asarray(Q, dtype=float))[0]
        return bool(np.linalg.norm(Q.T @ self.directions[:, i]) > 0.9)

    def _need_text(self, need, name):
        """The "N for ±x%" cell: a count, "∞" for a structurally free parameter, and
        "> n_samples" where the simulated N cannot tell (an unresolved direction without a
        structural reason)."""
        if np.isfinite(need):
            return short_count(need)
        return "∞" if name in self.structural.free_params else f"> {short_count(self.n_samples)}"

    def _se_text(self, se, N, name):
        """A "se@N" cell: "?" for an infinite one beyond the simulated N that no structural
        reason makes infinite (the directions unresolved there may be resolved by then)."""
        if np.isinf(se) and N > self.n_samples and name not in self.structural.free_params:
            return "?"
        return f"{se:.3g}"

    def __str__(self):
        lines = [
            f"identifiability of {self.model_name!r} ({self.route} route) at the nominal "
            "parameters",
            "",
        ]
        lines.append(str(self.structural))
        rep = self.report
        if rep is None:
            lines.extend(self.notes)
            return "\n".join(lines)
        lines.append("")
        names = self.param_names
        t_sim = self.timings.get("simulate", float("nan"))
        lines.append(
            f"simulation check on {self.sampling or f'{self.n_samples:,} samples'} "
            f"({t_sim:.1f} s sampling, {self.timings.get('assemble', float('nan')):.1f} s "
            f"assembly): rank {rep.rank} of {rep.n_params} ({self.rank_words()})"
        )
        for combo in rep.null_space:
            lines.append(f"  unresolved combination: {combo.short()}")
        lines.append(
            "  singular directions followed over N = "
            + ", ".join(f"{int(n):,}" for n in self.levels)
            + ":"
        )
        for i in range(rep.n_params):
            sv = self.direction_sv[-1, i]
            verdict = self.direction_verdict[i]
            extra = ""
            if verdict == "weak":
                t, q = rep.direction_t[i], rep.resolve_threshold
                extra = resolution_text(self.direction_n_resolve[i], self.n_samples, t, q)
            elif verdict == "unconstrained" and not self._structural_direction(i):
                extra = " at this N (no structural reason found: a larger Study(n_samples=…) tells"
                extra += " whether more samples resolve it)"
            lines.append(
                f"    σ{i + 1} = {sv:9.3g}  noise {self.direction_noise[-1, i]:9.3g}  "
                f"N-exponent {self.direction_exponent[i]:+5.2f}  {verdict}{extra}"
            )
        names = self.param_names
        w = max(9, max(len(nm) for nm in names))
        Ns = [10**3, 10**4, 10**5, 10**6]
        need = self.samples_for()
        head = (
            f"{'parameter':<{w}}  {'nominal':>9}  "
            + "  ".join(f"{'se@' + short_count(N):>9}" for N in Ns)
            + f"  {'N for ±' + format(100 * self.rel_error, 'g') + '%':>12}  {'bias.sd':>9}"
            f"  {'normalised':>10}  identifiable"
        )
        lines += ["", head, "-" * len(head)]
        free = set(self.free_params)
        se = self.se_at(np.array(Ns, dtype=float))
        for k, nm in enumerate(names):
            row = f"{nm:<{w}}  {self.nominal[k]:>9.4g}  " + "  ".join(
                f"{self._se_text(se[j, k], Ns[j], nm):>9}" for j in range(len(Ns))
            )
            bias = 0.0 if self.bias_sd is None else self.bias_sd[k]
            row += (
                f"  {self._need_text(need[k], nm):>12}  {bias:>9.3g}  "
                f"{rep.freeness_normalised[k]:>10.3g}  "
            )
            if rep.status is not None and nm not in free:
                row += {"identified": "yes"}.get(rep.status[k], rep.status[k])
            else:
                row += "no" if nm in free else "yes"
            lines.append(row)
        lines.append(
            "se@N: predicted standard deviation of the error at N samples: the sandwich standard "
            "error (∝ N^-½) and, "
            + (
                f"with τ = {self.prior_scale:.3g}, "
                if self.prior_scale is not None and np.ndim(self.prior_scale) == 0
                else ""
            )
            + "the bias from directions still unresolved at N (bias.sd: at the simulated N; a "
            "direction that shows no curvature there counts as unresolved at every N, ? where "
            "that makes the width infinite; inf for a parameter loading ≥ 0.1 on such a "
            "direction resting on one or two parameters, as in a fit with τ estimated); "
            f"N for ±x%: samples for a {100 * self.level:g}% interval of half-width x% of "
            "|nominal| (extrapolated: below a few hundred samples the asymptotics are optimistic; "
            f"> {short_count(self.n_samples)}: not within the simulated N, whose unresolved "
            "directions show no curvature — a larger Study tells; ∞: structurally not "
            "identifiable)"
        )
        lines.extend(rep.combination_lines())
        lines.extend(self.notes)
        return "\n".join(lines)


def _col_norms_se(blocks_V, mean_V, counts):
    return np.linalg.norm(col_se(blocks_V, mean_V, counts), axis=0)


def follow_directions(A_blocks, counts, V, rank_threshold=None):
    """Follow right singular directions over nested block prefixes.

    Parameters
    ----------
    A_blocks : (B, m, n), counts : (B,)
    V : (n, n) right singular vectors of the full system

    Returns
    -------
    levels (L,), sv (L, n), noise (L, n), exponent (n,)
    """
    B = len(counts)
    ks = sorted({k for k in (B // 8, B // 4, B // 2, B) if k >= 2}) or [B]
    counts = np.asarray(counts, dtype=float)
    levels, svs, noises = [], [], []
    for k in ks:
        w = counts[:k] / counts[:k].sum()
        Ak = np.tensordot(w, A_blocks[:k], axes=1)
        AkV = Ak @ V
        svs.append(np.linalg.norm(AkV, axis=0))
        noises.append(_col_norms_se(A_blocks[:k] @ V, AkV, counts[:k]))
        levels.append(counts[:k].sum())
    levels, svs, noises = np.array(levels), np.array(svs), np.array(noises)
    if len(levels) >= 2:
        lx = np.log(levels)
        ly = np.log(np.maximum(svs, 1e-300))
        lx0 = lx - lx.mean()
        expo = (lx0 @ (ly - ly.mean(axis=0))) / (lx0 @ lx0)
    else:
        expo = np.full(V.shape[1], np.nan)
    return levels, svs, noises, expo


#: The flat keywords of earlier versions, now fields of the option objects (FutureWarning).
MOVED = {
    **moved_to("study", Study, "n_samples", "seed", "rel_error", "level", "simulation"),
    **moved_to("study", Study, "samples", "sampler"),
    **moved_to("experiment", Experiment, "inputs", "times", "initial", "order", "advise"),
    **moved_to("experiment", Experiment, "candidates", "candidate_times"),
    **moved_to("features", Features, "n_features", "bandwidth"),
    **moved_to("scores", Scores, "temperature", "score"),
    **moved_to("solver", Solver, "lam", "prior_scale"),
    **moved_to("execution", Execution, "n_blocks", "progress", "out_dir"),
}


def check_identifiability(
    model,
    nominal=None,
    *,
    route="global",
    probes=None,
    simulate=True,
    study=None,
    experiment=None,
    features=None,
    scores=None,
    solver=None,
    execution=None,
    **moved,
) -> IdentifiabilityCheck | DesignCheck:
    """Can snapshots identify θ, which combinations can they not, and how many samples are needed?

    1. :func:`structural_check` (exact, from the symbols; milliseconds).
    2. Unless ``simulate=False``: ``Study.n_samples`` stationary samples at the nominal θ from the
       compiled simulator (:func:`dynosed_sym.simulate`), the system of the chosen route assembled
       with per-block partial sums, and its :class:`~dynosed_sym.solve.report.IdentifiabilityReport`
       (rank against sampling noise, named free combinations, freeness, sandwich standard errors).
       Each right singular direction is followed over nested subsets of the blocks (N/8 … N): a
       direction the route cannot see shrinks like N^-½, a real one does not (when the structural
       rank is exact, its null space decides instead).  Standard errors are extrapolated as N^-½
       and inverted into the N each parameter needs.  The simulation study needs a drift affine
       in θ (a non-affine model gets the linearised structural check only: ``simulate=False``).

    Parameters
    ----------
    model : SDEModel
    nominal : array or dict, optional
        Parameters to simulate at (default ``model.nominal``).
    route : {"global", "local"}
    probes : array or Balls, optional
        Local route only: probe points (or regions), as :func:`dynosed_sym.fit_local`.
    simulate : bool
        False: the structural check only.
    study : Study, optional
        Samples of the study, seed, where they come from (simulation settings, given samples, a
        sampler) and the target relative error of the predicted N
        (:class:`~dynosed_sym.identifiability.options.Study`; None: the defaults).
    experiment : Experiment, optional
        Several environments or snapshot times (docs/designs.md): returns a
        :class:`~dynosed_sym.identifiability.designs.DesignCheck` — the structural verdict of the
        experiment (exact for linear drifts with constant D), a simulated check of it, and advice
        on what to add (:class:`~dynosed_sym.identifiability.options.Experiment`).  A model with
        inputs or environment parameters is always checked this way.
    features : Features, optional
        The global route's kernel (number of features, bandwidth), as
        :func:`dynosed_sym.fit_global`; its seed is ``Study.seed``.
    scores : Scores, optional
        Local route only: the score estimator, as :func:`dynosed_sym.fit_local`.
    solver : Solver, optional
        λ and the prior scale τ of the honest intervals, as :func:`dynosed_sym.fit_global`: the
        predicted widths include the bias τ·loading of directions still unresolved at each N.
    execution : Execution, optional
        Noise blocks, progress bar, folder of generated kernels
        (:class:`~dynosed_sym.options.Execution`; no Dask backend).
    **moved
        The flat keywords of earlier versions (``n_samples=``, ``seed=``, ``inputs=``, ``lam=``,
        …): each still works and builds its option object, with a FutureWarning naming the new
        spelling.

    Returns
    -------
    IdentifiabilityCheck, or DesignCheck for an experiment

    Examples
    --------
    The structural check alone (no simulation) of an OU model at a nominal drift matrix: its
    stationary law N(0, Σ) fixes only the three entries of Σ, so one combination of the four
    entries stays free.

    >>> import sympy as sp
    >>> from dynosed_sym import SDEModel, check_identifiability
    >>> x, y = sp.symbols("x y", real=True)
    >>> m = sp.symbols("m11 m12 m21 m22", real=True)
    >>> model = SDEModel([x, y], list(m), [m[0] * x + m[1] * y, m[2] * x + m[3] * y],
    ...                  diffusion=1.0, name="ou_doc2")
    >>> check = check_identifiability(model, [-1.0, 0.5, -0.5, -1.0], simulate=False)
    >>> check.structural.rank, len(model.param_names)
    (3, 4)
    """
    given = dict(study=(study, Study), experiment=(experiment, Experiment))
    given.update(features=(features, Features), scores=(scores, Scores), solver=(solver, Solver))
    given["execution"] = (execution, Execution)
    study, e, features, scores, solver, ex = _options(
        resolve_options("check_identifiability", moved, given, MOVED)
    )
    require_parameters(model)
    simulate = arguments.flag(simulate, "simulate")  # "yes" or 0 was read as a truth value
    if route not in ("global", "local"):
        raise DataError(f"route must be 'global' or 'local', got {route!r}")
    local_only = given["scores"][0] is not None or {"temperature", "score"} & set(moved)
    if route == "global" and (probes is not None or local_only):
        raise DataError(  # (they were ignored without a word)
            f"check_identifiability: {'probes' if probes is not None else 'scores'}= belong to the "
            "local route: pass route='local' as well"
        )
    if e.inputs is not None or e.times is not None or model.inputs or model.env_params:
        if route != "global" or study.samples is not None or probes is not None:
            raise DataError(
                "the design check (inputs=, times=, env parameters) uses the global route; "
                "pass a sampler= instead of samples="
            )
        ex = ex.at_least(1, "check_identifiability")
        return check_design(model, nominal, e, study, features, solver, ex, simulate)
    if e.initial is not None:
        raise DataError("initial= is the law at t = 0 of a time course: pass times= as well")
    theta = nominal_vector(model, nominal)
    if theta is None and simulate:
        raise ModelError(
            f"model {model.name!r} has no nominal parameters: pass nominal= (or "
            "simulate=False for the structural check alone)"
        )
    t0 = time.perf_counter()
    structural = structural_check(
        model,
        theta,
        route,
        probes=None if probes is None or route != "local" else probes,  # (Balls: as fit_local)
        use_nominal=theta is not None,
        seed=study.seed,
    )
    timings = {"structural": time.perf_counter() - t0}
    check = IdentifiabilityCheck(
        model_name=model.name,
        route=route,
        param_names=list(model.param_names),
        nominal=theta,
        structural=structural,
        rel_error=study.rel_error,
        level=study.level,
        timings=timings,
    )
    if not simulate:
        return check
    t1 = time.perf_counter()
    s = study
    X, check.sampling = draw_samples(
        model, theta, s.n_samples, s.seed, s.simulation, s.samples, s.sampler, ex
    )
    timings["simulate"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    if route == "global":
        rep, A_blocks, counts, n_used = _global_design(model, X, features, solver, ex)
    else:
        rep, A_blocks, counts, n_used = _local_design(model, X, probes, scores, solver, ex, s.seed)
        check.notes.append(
            f"local route: {n_used:,} of {X.shape[0]:,} simulated samples fall in the probe "
            "regions; standard errors are the jackknife's and do not include the bias of "
            "the score estimator, so N predictions are optimistic"
        )
    timings["assemble"] = time.perf_counter() - t2
    check.report = rep
    check.n_samples = int(n_used)
    V = None
    if A_blocks is not None and len(counts) >= 2:
        V = _follow_directions(check, A_blocks, counts, structural, rep)
    check.std_errors = rep.std_errors
    if rep.bias_sd is not None and rep.estimator == "resolved" and check.levels is not None:
        check.bias_sd, check.prior_scale, check.directions = rep.bias_sd, rep.prior_scale, V
    if rep.std_errors is not None:
        check.n_required = check.samples_for()
    _compare(check)
    timings["total"] = time.perf_counter() - t0
    return check


def _options(objects):
    """The option objects of check_identifiability → (study, experiment, features, scores,
    solver, execution); the features take the study's seed."""
    study, features = objects["study"], objects["features"]
    if features.seed != 0:
        raise DataError(
            "check_identifiability: the features are seeded by the study: pass "
            f"study=Study(seed={features.seed}) and leave Features.seed at 0"
        )
    return (
        study,
        objects["experiment"],
        replace(features, seed=study.seed),
        objects["scores"],
        objects["solver"],
        objects["execution"].in_process("check_identifiability"),
    )


def _follow_directions(check, A_blocks, counts, structural, rep):
    """Follow each right singular direction over nested subsets of the blocks; their verdicts
    and the N that resolves each into ``check`` → the directions V (columns)."""
    A = np.tensordot(np.asarray(counts, float) / np.sum(counts), A_blocks, axes=1)
    m, n = A.shape
    _, _, Vt = (
        np.linalg.svd(A, full_matrices=True) if m < n else np.linalg.svd(A, full_matrices=False)
    )
    V = Vt.T
    levels, svs, noises, expo = follow_directions(A_blocks, counts, V)
    levels = levels * check.n_samples / float(np.sum(counts))  # local route: blocks → samples
    # the report's verdicts refer to its own SVD: same V (same A) up to signs; a direction's
    # t = κ̂/sd(κ̂) grows like √N, so it crosses the threshold q at N·(q/t)²
    t, q = np.asarray(rep.direction_t, dtype=float), float(rep.resolve_threshold)
    resolved = t > q
    with np.errstate(divide="ignore", invalid="ignore"):
        n_cross = np.where(t > 0, check.n_samples * (q / np.where(t > 0, t, 1.0)) ** 2, np.inf)
    verdict, n_res = [], np.full(n, np.inf)
    Qs = structural.null_vectors if structural.rank_is_exact else None
    for i in range(n):
        if Qs is not None and not resolved[i]:
            # the exact analysis knows which directions are structurally free
            free_dir = Qs.shape[1] > 0 and np.linalg.norm(Qs.T @ V[:, i]) > 0.9
        else:
            free_dir = expo[i] < SHRINK_EXPONENT
        if resolved[i]:
            verdict.append("resolved")
            n_res[i] = n_cross[i]
        elif free_dir:
            verdict.append("unconstrained")
        else:
            verdict.append("weak")
            n_res[i] = n_cross[i]
    check.levels, check.direction_sv, check.direction_noise = levels, svs, noises
    check.direction_exponent, check.direction_verdict, check.direction_n_resolve = (
        expo,
        verdict,
        n_res,
    )
    return V


def _global_design(model, X, features, solver, ex):
    """The global system through :func:`dynosed_sym.fit_global` itself (same bandwidth, features,
    blocks and report); the per-block means come from the report (``report._blocks``)."""
    execution = Execution(n_blocks=ex.n_blocks, out_dir=ex.out_dir)
    fit = fit_global(model, X, features=features, solver=solver, execution=execution)
    rep = fit.report
    if rep._blocks is None:
        return rep, None, None, X.shape[0]
    return rep, rep._blocks[0], rep._blocks[2], X.shape[0]


def _local_design(model, X, probes, scores, solver, ex, seed):
    """The local route's system via :func:`dynosed_sym.fit_local` (noise from its jackknife)."""
    if probes is None:
        raise DataError(
            "route='local' needs probes= (probe points, or Balls: the regions where "
            "data will be collected)"
        )
    if hasattr(probes, "restrict") and hasattr(probes, "centres"):
        X = probes.restrict(X, seed=seed)  # region-restricted sampling: only data inside the balls
    execution = Execution(n_blocks=ex.n_blocks, out_dir=ex.out_dir)
    fit = fit_local(model, X, probes, scores=scores, solver=solver, execution=execution)
    rep = fit.report
    blocks = rep._blocks
    if blocks is None:
        return rep, None, None, X.shape[0]
    return rep, blocks[0], blocks[2], X.shape[0]


def _compare(check):
    """Notes where the simulation and the structural check disagree."""
    s, rep = check.structural, check.report
    if rep is None:
        return
    if s.rank_is_exact and rep.rank != s.rank:
        check.notes.append(
            f"note: the simulation resolves {rep.rank} directions where the exact analysis "
            f"gives {s.rank}: "
            + (
                "too few samples for the weakest direction"
                if rep.rank < s.rank
                else "a structurally free direction looks resolved "
                "(discretisation bias of the simulator?)"
            )
        )
    if s.null_vectors.shape[1] and rep.null_vectors.shape[1]:
        # principal angles between the structural null space and the unresolved subspace
        Q1, Q2 = s.null_vectors, np.linalg.qr(rep.null_vectors)[0]
        cos = np.linalg.svd(Q1.T @ Q2, compute_uv=False)
        if cos.size and cos.min() > 0.9:
            check.notes.append(
                f"the simulated unresolved directions contain the structural ones "
                f"(smallest cosine {cos.min():.3f})"
            )
