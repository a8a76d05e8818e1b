"""The local route on a design: probes per environment, and time courses with ∂ₜlog p estimated
from neighbouring snapshots (docs/designs.md).

Every environment (or interior snapshot of a time course) gives its own local system
``A_e θ ≈ b_e`` (rows scaled by 1/√M_e) from :func:`dynosed_sym.fit_local` on
``model.with_inputs(u_e)``, with its delete-one-block jackknife pseudo-values.  They are stacked
with weights ``√w_e``, ``w_e = N_e / N`` (N_e: samples of that snapshot) in the global parameter
columns (env parameters one column per environment).

Time courses.  At an interior snapshot t_k the non-stationary term is estimated from Gaussian
kernel log-densities ℓ_j = log p̂_j of the neighbouring snapshots at the probes of t_k (3-point
formula, valid for uneven spacing; h₋ = t_k − t_{k−1}, h₊ = t_{k+1} − t_k):

    ∂ₜlog p(x, t_k) ≈ −h₊/(h₋(h₋+h₊)) ℓ_{k−1} + (h₊−h₋)/(h₋h₊) ℓ_k + h₋/(h₊(h₋+h₊)) ℓ_{k+1}.

Its error is (h₋h₊/6)∂ₜ³log p plus the kernel smoothing; right after a sharp initial law (a fast
transient) the first interior snapshots are strongly biased.  The summary reports, per interior
snapshot, how much the forward and backward differences disagree (their difference is
≈ ((h₋+h₊)/2)∂ₜ²log p); rows with a large disagreement should be left out (``use_times=``).

Noise.  Every snapshot is an independent group.  Deleting block b of snapshot j changes its own
scores (row block j, jackknife of :func:`fit_local`) and ℓ_j at the probes of t_{j−1}, t_j and
t_{j+1}; both enter the pseudo-values of that block, and the groups are combined as in
:func:`dynosed_sym.assembly.designs.grouped_blocks`.
"""

from __future__ import annotations

import math

import numpy as np

from ..assembly.designs import grouped_blocks, param_layout
from ..data.arrays import as_samples
from ..data.blocks import block_edges
from ..errors import DataError
from ..solve.intervals import check_prior_scale
from ..solve.linear import system_scale
from ..solve.uncertainty import Grouping
from ..solve.ustat import estimator_options, solve_system
from .designs import DesignInfo, env_record, env_residuals, environment_models
from .probes import Balls, as_probes
from .result import FitResult, report_on
from .scores.bandwidth import apply_smoothing_bias, open_for_jumps, smoothing_bias

__all__ = ["fit_local_design", "log_kde_jackknife", "time_derivative_weights"]


def time_derivative_weights(t_prev, t, t_next):
    """Weights (c₋, c₀, c₊) of the 3-point ∂ₜ formula at t (uneven spacing)."""
    hm, hp = t - t_prev, t_next - t
    return (-hp / (hm * (hm + hp)), (hp - hm) / (hm * hp), hm / (hp * (hm + hp)))


def log_kde_jackknife(X, P, h, edges):
    """Gaussian-kernel log-density of X (N, d) at P (M, d), and with each block left out.

    Returns
    -------
    logp : (M,)
    logp_del : (B, M)
        Without the rows ``edges[b]:edges[b+1]``.
    """
    from scipy.special import logsumexp

    N, d = X.shape
    B = edges.size - 1
    lse = np.empty((B, P.shape[0]))
    for b in range(B):
        Xb = X[edges[b] : edges[b + 1]]
        acc = np.full(P.shape[0], -np.inf)
        for lo in range(0, Xb.shape[0], 4096):
            d2 = ((P[:, None, :] - Xb[None, lo : lo + 4096, :]) ** 2).sum(-1)
            acc = np.logaddexp(acc, logsumexp(-0.5 * d2 / h**2, axis=1))
        lse[b] = acc
    const = 0.5 * d * math.log(2.0 * math.pi * h * h)
    counts = np.diff(edges).astype(float)
    logp = logsumexp(lse, axis=0) - math.log(N) - const
    logp_del = np.empty_like(lse)
    for b in range(B):
        logp_del[b] = logsumexp(np.delete(lse, b, axis=0), axis=0) - math.log(N - counts[b]) - const
    return logp, logp_del


def _probes_for(probes, env, t, design, snapshots=()):
    """The probe spec of environment ``env`` (and time t of a time course, one of its
    ``snapshots`` times)."""
    spec = probes
    keyed = isinstance(spec, dict) and env in {str(k) for k in spec}  # (one environment too)
    if isinstance(spec, dict) and (keyed or not design.single):
        keys = {str(k): v for k, v in spec.items()}
        names = [str(n) for n in design.names]
        unknown = [k for k in keys if k not in names]
        if unknown:  # (a key naming no environment, a typo, was ignored without a word)
            raise DataError(
                f"probes: environment {unknown[0]!r} has no data (environments: "
                f"{', '.join(names)}); give the probes of each environment under its name"
            )
        if env not in keys:
            raise DataError(f"probes: no probes for environment {env!r}")
        spec = keys[env]
    if t is not None and isinstance(spec, dict):
        unused = [k for k in spec if float(k) not in snapshots]
        if unused:  # (no snapshot at that time, a typo: its probes were ignored)
            shown = ", ".join(f"{u:g}" for u in snapshots)
            raise DataError(
                f"probes: time {float(unused[0]):g} of environment {env!r} is not one of its "
                f"snapshot times ({shown}); its probes would be ignored"
            )
        match = [v for k, v in spec.items() if float(k) == t]
        if not match:
            raise DataError(f"probes: no probes for time {t:g} of environment {env!r}")
        spec = match[0]
    return spec


def _jackknife(fit, what):
    blocks = fit.report._blocks
    if blocks is None:
        raise DataError(
            f"{what}: no noise estimate (too few data blocks, or a delete-one-block score was "
            "not finite); a design needs the noise of every snapshot"
        )
    Ab, bb, _ = blocks
    return Ab - fit.A[None], bb - fit.b[None]


def fit_local_design(
    model,
    design,
    probes,
    fit_one,
    *,
    lam,
    n_blocks,
    dlogp_bandwidth=None,
    use_times=None,
    out_dir=None,
    **options,
):
    """Fit a design by the local route (module docstring); called by :func:`fit_local`.

    ``fit_one(model_e, X, probes, **options)`` fits one snapshot (the single-snapshot route).
    """
    models = environment_models(model, design, out_dir)
    names, columns = param_layout(
        model.param_names, [str(p) for p in model.env_params], design.names, design.single
    )
    rows = []  # row blocks: dict(env, label, A, b, N)
    groups = []  # dict(env, contributions: {row index: (dA, db)}, B)
    notes = []
    env_sizes = {}
    kw = dict(options, lam=lam, n_blocks=n_blocks, out_dir=out_dir)
    for env in design.envs:
        m_e = models[env.name][0]
        if env.kind == "stationary":
            spec = _probes_for(probes, env.name, None, design)
            where = None if design.single else env.name
            fit = _in_environment(where, fit_one, m_e, env.data, spec, **kw)
            dA, db = _jackknife(fit, f"environment {env.name!r}")
            rows.append(dict(env=env.name, A=fit.A, b=fit.b, N=fit.n_samples, fit=fit))
            groups.append(dict(env=env.name, parts={len(rows) - 1: (dA, db)}, B=dA.shape[0]))
            env_sizes[env.name] = fit.n_samples
            continue
        times = env.data.times
        if times.size < 3:
            raise DataError(
                f"environment {env.name!r}: the local route needs at least 3 snapshots of a "
                "time course (∂ₜlog p at an interior time from its neighbours)"
            )
        Xs = [
            as_samples(X, m_e, f"X[{env.name!r}][t={t:g}]")
            for t, X in zip(times.tolist(), env.data.snapshots)
        ]
        env_sizes[env.name] = int(sum(X.shape[0] for X in Xs))
        interior = list(range(1, times.size - 1))
        if use_times is not None:
            wanted = [float(t) for t in np.atleast_1d(use_times)]
            bad = [t for t in wanted if not any(abs(t - times[k]) < 1e-12 for k in interior)]
            if bad:
                raise DataError(f"use_times: {bad[0]:g} is not an interior snapshot time")
            interior = [k for k in interior if any(abs(t - times[k]) < 1e-12 for t in wanted)]
        edges = [block_edges(X.shape[0], n_blocks) for X in Xs]
        h = _kde_bandwidth(dlogp_bandwidth, Xs, kw.get("temperature", "auto"))
        first_group = len(groups)
        for e_j in edges:
            groups.append(dict(env=env.name, parts={}, B=e_j.size - 1))
        for k in interior:
            t = float(times[k])
            spec = _probes_for(probes, env.name, t, design, times.tolist())
            P, radius = as_probes(spec, m_e, Xs[k], distinct=True)
            c = time_derivative_weights(times[k - 1], times[k], times[k + 1])
            kde = [log_kde_jackknife(Xs[j], P, h, edges[j]) for j in (k - 1, k, k + 1)]
            g = sum(cj * lj for cj, (lj, _) in zip(c, kde))
            note = _transient_note(kde, times, k, g, env.name)
            if note:
                notes.append(note)
            fit = fit_one(
                m_e, Xs[k], Balls(P, radius) if radius is not None else P, dlogp_dt=g, **kw
            )
            dA, db = _jackknife(fit, f"environment {env.name!r}, t = {t:g}")
            if dA.shape[0] != edges[k].size - 1:  # pragma: no cover - same block partition
                raise DataError("internal: score and density jackknife blocks differ")
            rows.append(dict(env=env.name, A=fit.A, b=fit.b, N=Xs[k].shape[0], t=t, fit=fit))
            r = len(rows) - 1
            M = P.shape[0]
            for cj, j, (_, ldel) in zip(c, (k - 1, k, k + 1), kde):
                B = ldel.shape[0]
                dev_b = (B - 1) * cj * (ldel - ldel.mean(axis=0)) / math.sqrt(M)
                part = groups[first_group + j]["parts"]
                if j == k:
                    part[r] = (dA, db + dev_b)
                else:
                    part[r] = (np.zeros_like(dA), dev_b)
    return _stack_and_solve(
        model, design, rows, groups, names, columns, lam, notes, env_sizes, options
    )


def _transient_note(kde, times, k, g, env):
    """A note when forward and backward differences disagree beyond their noise and by more than
    half the size of the central estimate (their difference ≈ ((h₋+h₊)/2)∂ₜ²log p)."""
    hp, hm = times[k + 1] - times[k], times[k] - times[k - 1]
    coef = (
        -1.0 / hm,
        1.0 / hm + 1.0 / hp,
        -1.0 / hp,
    )  # bwd − fwd in terms of ℓ_{k−1}, ℓ_k, ℓ_{k+1}
    diff = sum(c * lj for c, (lj, _) in zip(coef, kde))
    var = 0.0
    for c, (_, ldel) in zip(coef, kde):
        B = ldel.shape[0]
        var = var + c * c * (B - 1) / B * ((ldel - ldel.mean(axis=0)) ** 2).sum(axis=0)
    size, noise = float(np.sqrt(np.mean(diff**2))), float(np.sqrt(np.mean(var)))
    central = float(np.sqrt(np.mean(g**2)))
    if size > 3.0 * noise and size > 0.5 * central:
        return (
            f"∂ₜlog p at t = {times[k]:g} ({env}): forward and backward differences disagree by "
            f"{size / max(central, 1e-300):.2g}× its size ({size / max(noise, 1e-300):.2g}× their "
            "noise) — a fast transient biases this snapshot's rows; consider use_times= without it"
        )
    return None


def _kde_bandwidth(h, Xs, temperature):
    """Bandwidth of the ∂ₜ kernel densities: given, or twice the score kernel's 1/√T (for
    ``temperature="auto"``: Scott's rule σ_min·n^(−1/(d+4)) on the pooled snapshots)."""
    if h is not None:
        h = float(h)
        if not h > 0:
            raise DataError(f"dlogp_bandwidth must be positive, got {h!r}")
        return h
    if isinstance(temperature, str):
        X = np.concatenate(Xs)
        n, d = X.shape
        var = np.linalg.eigvalsh(np.atleast_2d(np.cov(X, rowvar=False))).min()
        return math.sqrt(max(float(var), 1e-300)) * n ** (-1.0 / (d + 4))
    return 2.0 / math.sqrt(float(temperature))


def _stack_and_solve(model, design, rows, groups, names, columns, lam, notes, env_sizes, options):
    N_rows = np.array([r["N"] for r in rows], dtype=float)
    w = N_rows / N_rows.sum()
    n_glob = len(names)
    sizes = [r["A"].shape[0] for r in rows]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    R = int(offs[-1])
    A, b = _stacked([(r["A"], r["b"]) for r in rows], rows, offs, w, columns, n_glob)
    row_scale = np.repeat(1.0 / np.sqrt(w), sizes)
    used = [g for g in groups if g["parts"]]
    devs = []
    for g in used:
        dA = np.zeros((g["B"], R, n_glob))
        db = np.zeros((g["B"], R))
        for i, (pa, pb) in g["parts"].items():
            sl = slice(offs[i], offs[i + 1])
            dA[:, sl][:, :, columns[rows[i]["env"]]] = math.sqrt(w[i]) * pa
            db[:, sl] = math.sqrt(w[i]) * pb
        devs.append((dA, db, np.ones(g["B"])))
    system_scale(A, b, "local")
    if len(devs) == 1:
        A_blocks, b_blocks = A[None] + devs[0][0], b[None] + devs[0][1]
        weights, grouping = np.ones(devs[0][2].size), None
    else:
        A_blocks, b_blocks, weights, ids, kappa = grouped_blocks(A, b, devs)
        grouping = Grouping(ids, kappa)
    # the stacked system is solved by the route's own estimator (routes.local_route)
    statistic, estimator = estimator_options(
        options.get("statistic", "v"), options.get("estimator", "resolved")
    )
    prior_scale = check_prior_scale(options.get("prior_scale", "ml"), names)
    system = (A, b, A_blocks, b_blocks, weights)
    dof = None if grouping is None else grouping.dof
    estimate = solve_system(*system, lam, statistic=statistic, estimator=estimator, dof=dof)
    theta = estimate.theta
    options = dict(grouping=grouping, estimate=estimate, prior_scale=prior_scale)
    report = report_on(system, theta, lam, names, **options)
    where = (offs, w, columns, len(names))
    solve = (lam, statistic, estimator, dof)
    smoothing = _smoothing(report, theta, rows, system, where, solve)
    open_for_jumps(report, model)  # (the environments' scores are estimated)
    info = DesignInfo(
        environments=[env_record(env, env_sizes[env.name], model) for env in design.envs],
        param_names=names,
        model_params=model.param_names,
        columns=columns,
        notes=notes,
    )
    if len(design.envs) > 1:
        slices = {}
        for e in design.names:
            idx = [i for i, r in enumerate(rows) if r["env"] == e]
            slices[e] = slice(offs[idx[0]], offs[idx[-1] + 1])
        info.residuals = env_residuals(slices, row_scale, A, b, A_blocks, b_blocks, weights, theta)
    settings = {"probes": R, "lam": lam, "snapshots used": len(rows)}
    if len(design.envs) > 1:
        settings["environments"] = len(design.envs)
    N = int(sum(env_sizes.values()))
    fit = FitResult(model, theta, A, b, report, "local", N, settings, names=names, design=info)
    fit.smoothing_bias = smoothing
    return fit


def _smoothing(report, theta, rows, system, where, solve):
    """The kernel's smoothing bias of the stacked estimate, into its report: the environments'
    companion fits (their local Gaussian rows at T and T/2, :func:`.local_route._smoothing`)
    stacked as the design stacks its rows and solved by the same rule, their noise taken from
    the design's blocks, and the bias of θ̂ from those two stacked estimates as on one snapshot
    (:func:`~.scores.bandwidth.smoothing_bias`; ``u_max`` the largest of the environments');
    added to ``bias_sd`` and the intervals, and a rejection it may explain makes every interval
    open and the verdict "undetermined" (:func:`~.scores.bandwidth.apply_smoothing_bias`).
    Returns that bias (n,), or None where no environment estimated one.

    An environment alone may leave parameters unresolved that the design resolves, so the bias
    of the stacked estimate is not that of any environment's (a 1-D OU with drift −(a + b·u)x at
    u = 3 and 4, each rank 1 of 2: the largest of the two environments' biases was a quarter of
    the stacked estimate's error, its interval missed the truth).  Where some environment has no
    companion fit (a degenerate local fit), the largest of the environments' own biases stands in,
    and the note names them.  Before stop 55 a design dropped the environments' biases: an
    Oregonator snapshot fitted as a one-environment design was INCONSISTENT with four finite
    intervals about 10⁻³ of the truth, where the same data on one snapshot gave none."""
    offs, w, columns, n = where
    fits = [r["fit"] for r in rows]
    missing = [
        r["env"] if "t" not in r else f"{r['env']} at t = {r['t']:g}"
        for r, fit in zip(rows, fits)
        if fit._smoothing_companions is None
        and fit.info.get("score") in ("kernel", "local_gaussian")  # (estimated, not given)
    ]
    comps = [fit._smoothing_companions for fit in fits]
    if all(c is None for c in comps):
        if missing:
            report.notes.append(
                "note: the kernel's smoothing bias was not estimated in "
                + ", ".join(dict.fromkeys(missing))
                + " (a degenerate local fit): it is not in the intervals"
            )
        return None
    if any(c is None for c in comps):  # the largest of the environments' own biases
        bias, how = np.zeros(n), "the largest of the environments' estimated biases"
        for r, fit in zip(rows, fits):
            if fit.smoothing_bias is not None:
                np.fmax.at(bias, columns[r["env"]], np.abs(np.nan_to_num(fit.smoothing_bias)))
    else:
        thetas = [_stacked_companion(comps, k, rows, system, where, solve) for k in (0, 1)]
        u_max = max(c.u_max for c in comps)
        bias = smoothing_bias(theta, thetas[0], thetas[1], comps[0].method, u_max=u_max)
        how = "the environments' local Gaussian fits at T and T/2 stacked as the design"
    cause = apply_smoothing_bias(report, theta, bias)
    unestimated = "" if not missing else "; not estimated in " + ", ".join(dict.fromkeys(missing))
    report.notes.append(
        f"kernel smoothing: the stacked estimate's smoothing bias ({how}; largest "
        f"{np.nanmax(bias):.3g}) is in bias.sd and the intervals{unestimated}{cause}"
    )
    return bias


def _stacked_companion(comps, k, rows, system, where, solve):
    """θ of the environments' k-th companion rows (0: local Gaussian at T, 1: at T/2) stacked
    with the design's offsets, columns and weights, with the design's block deviations."""
    offs, w, columns, n = where
    lam, statistic, estimator, dof = solve
    A, b, A_blocks, b_blocks, weights = system
    Ac, bc = _stacked([c.rows[k] for c in comps], rows, offs, w, columns, n)
    blocks = (None, None, None)
    if A_blocks is not None:
        blocks = (Ac[None] + (A_blocks - A[None]), bc[None] + (b_blocks - b[None]), weights)
    est = solve_system(Ac, bc, *blocks, lam, statistic=statistic, estimator=estimator, dof=dof)
    return est.theta


def _stacked(parts, rows, offs, w, columns, n):
    """(A, b): the row blocks ``parts`` ((A_i, b_i) of ``rows[i]``) stacked at ``offs``, each
    weighted by √w_i, A_i's columns at its environment's ``columns`` of the n design parameters."""
    A, b = np.zeros((int(offs[-1]), n)), np.zeros(int(offs[-1]))
    for i, (r, (Ai, bi)) in enumerate(zip(rows, parts)):
        sl = slice(offs[i], offs[i + 1])
        A[sl][:, columns[r["env"]]] = math.sqrt(w[i]) * Ai if w[i] != 1.0 else Ai
        b[sl] = math.sqrt(w[i]) * bi if w[i] != 1.0 else bi
    return A, b


def _in_environment(name, fit_one, *args, **kw):
    """``fit_one(*args, **kw)`` with a DataError's message prefixed by the environment it is
    about (the single-snapshot route names its input ``X``: a design has several; ``name``
    None for one snapshot, as its data are then ``X`` itself)."""
    try:
        return fit_one(*args, **kw)
    except DataError as exc:
        if name is None:
            raise
        raise type(exc)(f"environment {name!r}: {exc}") from exc
