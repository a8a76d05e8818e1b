"""Design advice: which additional environment (input values) or which extra snapshot time would
resolve what the design leaves free, and how many samples it needs (docs/designs.md).

Environment.  Let V₀ be the directions the simulated design does not resolve (global parameter
coordinates).  A candidate environment u_c adds rows A_c (its own env-parameter columns projected
out: they could absorb the signal), drawn at the nominal θ with ``n_sim`` samples.  It *can*
resolve the directions of V₀ along which its signal σ_c = ‖A_c V₀ w‖ is significant at n_sim
(σ_c/se_c > 3); a candidate without any does not resolve them — for example a scalar noise scale
D = s·D₀ never resolves the rotation of an OU process (Σ_e ∝ Σ₀: every environment has the same
invisible direction).

How many samples.  With environment weights N_e/N, the augmented design with N_c new samples has,
along any direction v, signal² (N‖A_cur v‖² + N_c‖A_c v‖²)/(N + N_c) and noise²
(a_cur(v) + a_c(v))/(N + N_c), where a = per-sample variance of the rows along v (from the blocks;
‖A v‖² debiased by the noise of the simulated estimate).  Every direction is at ≥ t × its noise
when

    K(N_c) = N G_cur + N_c G_c − t² (C_cur + C_c)   is positive semi-definite   (t = 3),

G the debiased Gram matrices (kept on their significant eigen-directions only: a zero signal
estimated with noise must not be multiplied by a large N_c), C the per-sample noise Gram
matrices — a matrix inequality linear in N_c, solved by bisection; it does not assume that the
directions resolved now stay resolved (the new environment's weight dilutes the current one).
With one free direction and a candidate orthogonal to the rest it reduces to
N_c = t² (a_c + a_cur)/σ_c².  This is a "3σ" estimate: at N_c the design is resolved in
about half to two thirds of the runs, at 2 N_c nearly always
(``python -m dynosed_sym.apps.bench.designs``) — the recommendation is 2 N_c (at least
``MIN_RECOMMENDED`` samples: below a few hundred the asymptotics are optimistic).

Time point.  For a time course the binding constraint is usually the quadrature bias, not the
rank.  Each candidate time t* is simulated and the augmented design fitted; the score is
``max_k √(bias_k² + SE_k²)`` with bias_k² = (θ̂_k − θ_k)² − SE_k² (debiased, ≥ 0) at the
nominal θ — lower is better.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..assembly.designs import Snapshot
from ..assembly.stein import assemble_source
from ..codegen.loading import compile_model
from ..data.designs import TimeCourse, as_design
from ..data.sources import open_source
from ..errors import DataError, DynosedError
from ..options import Execution
from ..routes.designs import fit_global_design
from ..routes.options import Features, Solver
from ..solve.directions import SIGNAL_THRESHOLD as RANK_THRESHOLD

__all__ = [
    "Advice",
    "advise_design",
    "advise_environments",
    "advise_times",
    "advice_lines",
    "samples_needed",
]

#: Smallest number of samples a recommendation names.
MIN_RECOMMENDED = 1000
#: Default candidate values of an input: these multiples of its current value (or these values
#: when it is 0).
MULTIPLES = (0.1, 0.3, 3.0, 10.0)
AROUND_ZERO = (-2.0, -1.0, 1.0, 2.0)
#: Most candidate times tried by default.
MAX_TIME_CANDIDATES = 6


@dataclass
class Advice:
    """One candidate addition to a design.

    Attributes
    ----------
    kind : {"environment", "time"}
    inputs : dict or None
        Input values of a candidate environment.
    env, time : str, float or None
        The time course and the candidate snapshot time.
    n_free : int
        Directions the current design leaves unresolved.
    resolves : int
        How many of them the candidate resolves (environment advice).
    sigma, noise : float
        Debiased signal of the candidate along the weakest resolved direction and its noise at
        the simulated size.
    n_needed : float
        Samples of the new snapshot for 3 × noise (the "3σ" estimate; inf when it does not
        resolve).
    recommended : float
        What to collect: 2 × n_needed, at least ``MIN_RECOMMENDED``.
    rank, score, bias, se : time advice: rank of the augmented design, its score
        max_k √(bias_k² + SE_k²), the largest debiased bias and standard error.
    note : str
    """

    kind: str
    inputs: dict | None = None
    env: str | None = None
    time: float | None = None
    n_free: int = 0
    resolves: int = 0
    sigma: float = 0.0
    noise: float = 0.0
    n_needed: float = math.inf
    recommended: float = math.inf
    rank: int | None = None
    score: float | None = None
    bias: float | None = None
    se: float | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class SimulatedDesign:
    """What the advice needs about the simulated design (built by
    :func:`dynosed_sym.identifiability.designs.check_design`).

    Attributes
    ----------
    model, design : the model and the design (Design) being checked
    thetas : {env: (n,) nominal parameters}
    fit : FitResult of the simulated design (its ``features`` are reused)
    data : {env: samples or TimeCourse} it was fitted to
    sampler : ``sampler(inputs, theta, n, seed, time=None, initial=None)``
    initial : {env: law at t = 0} of time courses
    n_samples, seed, order, out_dir : as the check
    structural_with : ``fn(u) -> (rank, n) or None``, the exact structural rank of the design
        with one more stationary environment at inputs u
    """

    model: object
    design: object
    thetas: dict
    fit: object
    data: dict
    sampler: object
    initial: dict
    n_samples: int
    seed: int = 0
    order: int | None = None
    out_dir: str | None = None
    structural_with: object = None


def default_candidates(model, design):
    """Input dicts: each input alone at multiples of its current value (module docstring)."""
    if not model.inputs:
        return []
    base = design.envs[0].input_dict
    seen = {tuple(env.inputs.tolist()) for env in design.envs}
    out = []
    for name in model.input_names:
        r = base[name]
        values = [m * r for m in MULTIPLES] if r != 0 else list(AROUND_ZERO)
        for v in values:
            cand = dict(base, **{name: float(v)})
            key = tuple(cand[n] for n in model.input_names)
            if key not in seen:
                seen.add(key)
                out.append(cand)
    return out


def _noise_gram(A, A_blocks, counts):
    """Σ_b w_b (A_b − A)ᵀ(A_b − A)/(B − 1) (n, n): the noise of ÂᵀÂ's expectation."""
    w = np.asarray(counts, dtype=float)
    w = w / w.sum()
    dev = A_blocks - A[None]
    return np.einsum("p,prn,prm->nm", w, dev, dev) / (w.size - 1)


def _current_noise(fit):
    """C (n, n) of the current stacked system, from the report's (pseudo-)blocks."""
    A_blocks, _, counts = fit.report._blocks
    return _noise_gram(fit.A, A_blocks, counts)


def _significant_gram(A, C):
    """AᵀA debiased by its noise Gram C, on the eigen-directions u where the signal is
    significant (uᵀAᵀAu > t²·uᵀCu); zero elsewhere — a zero signal estimated with noise must not
    be multiplied by a large N_c."""
    lam, U = np.linalg.eigh(A.T @ A)
    noise = np.einsum("ki,kl,li->i", U, C, U)
    keep = lam > RANK_THRESHOLD**2 * noise
    val = np.where(keep, lam - noise, 0.0)
    return (U * val) @ U.T


def samples_needed(G_cur, C_cur, G_c, C_c, N, target, t=RANK_THRESHOLD, n_max=1e9):
    """Smallest N_c with at least ``target`` nonnegative eigenvalues of
    K(N_c) = N G_cur + N_c G_c − t²(C_cur + C_c) (module docstring); inf when even ``n_max``
    does not reach it."""

    def count(Nc):
        K = N * G_cur + Nc * G_c - t * t * (C_cur + C_c)
        ev = np.linalg.eigvalsh(0.5 * (K + K.T))
        return int(np.sum(ev >= 0.0))

    if count(n_max) < target:
        return math.inf
    lo, hi = 0.0, math.log(n_max)
    if count(1.0) >= target:
        return 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if count(math.exp(mid)) >= target:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def advise_environments(study, candidates, n_sim):
    """Environment advice (module docstring), best first; beside each estimate the exact
    structural rank of the design with the candidate added, when the laws have a closed form."""
    model, design, fit = study.model, study.design, study.fit
    rep = fit.report
    V0 = rep.null_vectors
    k0 = V0.shape[1]
    if k0 == 0:
        return []
    C = _current_noise(fit)
    N_cur = float(fit.n_samples)
    env_idx = [k for k, p in enumerate(model.params) if p in set(model.env_params)]
    shared = [k for k in range(model.n) if k not in env_idx]
    first = design.envs[0].name
    cols = fit.design.columns[first]
    theta_c = study.thetas[first]
    out = []
    for i, cand in enumerate(candidates):
        try:
            u = model.input_vector(cand, f"candidates[{i}]")
            m_c = model.with_inputs(u) if model.inputs else model
            X = np.asarray(
                study.sampler(
                    dict(zip(model.input_names, u.tolist())),
                    theta_c,
                    n_sim,
                    study.seed + 104_729 + i,
                ),
                dtype=float,
            )
            src = open_source(X, m_c, f"candidate {cand}")
            system = assemble_source(compile_model(m_c, study.out_dir), src, fit.features, 32)
        except DynosedError as exc:
            out.append(
                Advice(
                    "environment",
                    inputs=dict(cand),
                    n_free=k0,
                    note=f"skipped: {' '.join(str(exc).split())}",
                )
            )
            continue
        adv = _score_candidate(
            Snapshot(system), cand, V0, (fit, C), N_cur, shared, env_idx, cols, k0, n_sim
        )
        if study.structural_with is not None:
            adv.extra["structural"] = study.structural_with(u)
        out.append(adv)
    return sorted(out, key=lambda a: (-a.resolves, a.n_needed, a.note != ""))


def _score_candidate(snap, cand, V0, current, N_cur, shared, env_idx, cols, k0, n_sim):
    s = snap.system
    fit, C_stack = current
    n_glob = V0.shape[0]

    def to_glob(A):
        G = np.zeros(A.shape[:-1] + (n_glob,))
        G[..., cols[shared]] = A[..., shared]
        return G

    Ac, Acb = to_glob(s.A), to_glob(s.A_blocks)
    if env_idx:  # its own env parameters could absorb the signal: project them out
        Q, _ = np.linalg.qr(s.A[:, env_idx])
        Ac = Ac - Q @ (Q.T @ Ac)
        Acb = Acb - np.einsum("mq,bqk->bmk", Q, np.einsum("mq,bmk->bqk", Q, Acb))
    Y, Yb = Ac @ V0, Acb @ V0
    _, sv, Wt = np.linalg.svd(Y, full_matrices=False)
    w = np.asarray(s.counts, dtype=float)
    w = w / w.sum()
    z, se = np.zeros(sv.size), np.zeros(sv.size)
    for i in range(sv.size):
        y = Y @ Wt[i]
        yb = Yb @ Wt[i]
        se[i] = math.sqrt(float(np.einsum("b,bm->", w, (yb - y[None]) ** 2)) / (w.size - 1))
        z[i] = sv[i] / se[i] if se[i] > 0 else math.inf
    res = int(np.sum(z > RANK_THRESHOLD))
    adv = Advice("environment", inputs=dict(cand), n_free=k0, resolves=res)
    if res == 0:
        i = sv.size - 1
        adv.sigma, adv.noise = float(sv[i]), float(se[i])
        adv.note = f"does not resolve (signal {z[i]:.2g} × its noise at {n_sim:,} samples)"
        return adv
    i = res - 1  # weakest significant direction
    adv.sigma = math.sqrt(max(sv[i] ** 2 - se[i] ** 2, 0.0))
    adv.noise = float(se[i])
    C_c = _noise_gram(Ac, Acb, s.counts)
    G_cur = _significant_gram(fit.A, C_stack)
    G_c = _significant_gram(Ac, C_c)
    target = fit.report.rank + res
    adv.n_needed = samples_needed(G_cur, N_cur * C_stack, G_c, n_sim * C_c, N_cur, target)
    if np.isfinite(adv.n_needed):
        adv.recommended = max(MIN_RECOMMENDED, math.ceil(2.0 * adv.n_needed / 100.0) * 100.0)
    if res < k0:
        adv.note = f"resolves {res} of the {k0} free directions"
    return adv


def advise_times(study, candidate_times):
    """Time-point advice for every time course of the design (module docstring)."""
    model, design, fit, thetas, seed = (
        study.model,
        study.design,
        study.fit,
        study.thetas,
        study.seed,
    )
    out = []
    nominal = _global_nominal(fit, thetas)
    base_score = _time_score(fit, nominal)
    inputs = {e.name: e.input_dict for e in design.envs}
    for env in design.envs:
        if env.kind != "timecourse":
            continue
        times = env.data.times
        if candidate_times is None:
            gaps = np.diff(times)
            order_gaps = np.argsort(-gaps, kind="stable")[:MAX_TIME_CANDIDATES]
            cands = sorted(float(0.5 * (times[k] + times[k + 1])) for k in order_gaps)
        elif isinstance(candidate_times, dict):
            given = {str(k): v for k, v in candidate_times.items()}
            cands = [float(t) for t in np.atleast_1d(given.get(env.name, []))]
        else:
            cands = [float(t) for t in np.atleast_1d(candidate_times)]
        out.append(_time_advice(env.name, None, fit.report.rank, base_score, "current design"))
        for j, t in enumerate(cands):
            if np.any(np.isclose(times, t)):
                continue
            with _candidate_time(env.name, t, design.single):
                X = study.sampler(
                    env.input_dict,
                    thetas[env.name],
                    study.n_samples,
                    seed + 15_485_863 + 97 * j,
                    t,
                    study.initial[env.name],
                )
                snaps = dict(study.data[env.name].items())
                snaps[t] = np.asarray(X, dtype=float)
                aug = dict(study.data)
                aug[env.name] = TimeCourse(snaps)
                f = fit_global_design(
                    model,
                    as_design(aug, model, inputs),
                    Features(n_features=fit.info["m"], seed=seed),
                    Solver(lam=fit.info["lam"]),
                    Execution(n_blocks=32, out_dir=study.out_dir),
                    order=study.order,
                )
            out.append(_time_advice(env.name, t, f.report.rank, _time_score(f, nominal)))
    return sorted(out, key=lambda a: (-(a.rank or 0), a.score if a.score is not None else 1e300))


@contextmanager
def _candidate_time(env, t, single):
    """A DataError raised while the advice draws and fits the design with a snapshot added at the
    candidate time t, prefixed with it: the user gave t as ``Experiment.candidate_times``, which
    the messages from inside (the sampler's, the fit's) cannot name."""
    try:
        yield
    except DataError as exc:
        where = "" if single else f" of environment {env!r}"
        raise type(exc)(
            f"Experiment.candidate_times: the design with a snapshot added at t = {t:g}{where}: "
            f"{exc}"
        ) from exc


def _time_advice(env, time, rank, score, note=""):
    """Advice of kind "time": the snapshot ``time`` added to ``env`` (None: the current design),
    with the rank and the (score, bias, se) of :func:`_time_score`."""
    return Advice(
        "time", env=env, time=time, rank=rank, score=score[0], bias=score[1], se=score[2], note=note
    )


def _global_nominal(fit, thetas):
    glob = np.zeros(len(fit.param_names))
    for e, cols in fit.design.columns.items():
        glob[cols] = thetas[e]
    return glob


def _time_score(fit, nominal):
    """(max_k √(bias_k² + SE_k²), max debiased |bias|, max SE) of a simulated fit."""
    se = fit.report.std_errors
    if se is None or not np.all(np.isfinite(se)):
        return math.inf, math.inf, math.inf
    err2 = (fit.theta - nominal) ** 2
    bias2 = np.maximum(err2 - se**2, 0.0)
    return (
        float(np.sqrt(bias2 + se**2).max()),
        float(np.sqrt(bias2).max()),
        float(se.max()),
    )


def advise_design(study, candidates=None, candidate_times=None, notes=None):
    """Environment advice when directions are unresolved, time advice for time courses.

    ``notes`` (list): where a note goes when no environment can be suggested.
    """
    out = []
    model, design, fit = study.model, study.design, study.fit
    if fit.report.rank < len(fit.param_names):
        cands = default_candidates(model, design) if candidates is None else list(candidates)
        if not cands and notes is not None:
            notes.append(
                "advice: the model declares no inputs, so no environment can be suggested; "
                "declare the experimental knobs as SDEModel(..., inputs=[...])"
            )
        out += advise_environments(study, cands, max(study.n_samples, 20_000))
    if design.has_time_course:
        out += advise_times(study, candidate_times)
    return out


def advice_lines(advice):
    """Readable lines of an advice list."""
    lines = []
    env = [a for a in advice if a.kind == "environment"]
    if env:
        n_free = env[0].n_free
        lines.append(
            f"design advice: an additional environment for the {n_free} unresolved "
            "direction(s) (samples of the new environment; 3σ estimate, "
            "recommended 2×):"
        )
        good = [a for a in env if a.resolves > 0]
        for a in env:
            inp = ", ".join(f"{k} = {v:g}" for k, v in (a.inputs or {}).items())
            st = a.extra.get("structural")
            if st is not None:
                a_note = f"exact: rank {st[0]} of {st[1]} with it"
                a.note = f"{a.note}; {a_note}" if a.note else a_note
            if a.resolves > 0:
                lines.append(
                    f"  {inp:<24} resolves {a.resolves}/{a.n_free}: N ≈ {a.n_needed:,.0f} "
                    f"(recommended {a.recommended:,.0f})" + (f"  [{a.note}]" if a.note else "")
                )
            else:
                lines.append(f"  {inp:<24} {a.note}")
        if good:
            best = good[0]
            inp = ", ".join(f"{k} = {v:g}" for k, v in best.inputs.items())
            lines.append(f"  → add an environment with {inp} ({best.recommended:,.0f} samples)")
        else:
            lines.append(
                "  → no candidate resolves the free combination(s): these inputs cannot break "
                "the degeneracy (e.g. a scalar noise scale never resolves an OU rotation); try "
                "another kind of perturbation"
            )
    tim = [a for a in advice if a.kind == "time"]
    if tim:
        lines.append(
            "design advice: an extra snapshot time (score max_k √(bias_k² + SE_k²) at "
            "the nominal θ; lower is better):"
        )
        for a in tim:
            what = "current design" if a.time is None else f"add t = {a.time:g}"
            lines.append(
                f"  {a.env}: {what:<16} rank {a.rank}, score {a.score:.3g} (bias {a.bias:.3g}, "
                f"SE {a.se:.3g})"
            )
        cur = [a for a in tim if a.time is None]
        best = min((a for a in tim if a.time is not None), key=lambda a: a.score, default=None)
        if best is not None and cur and best.score < cur[0].score:
            lines.append(f"  → add a snapshot at t = {best.time:g} ({best.env})")
        elif best is not None:
            lines.append("  → no single extra time improves the score")
    return lines
