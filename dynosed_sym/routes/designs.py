"""The global route on a design: several environments with known inputs and env parameters,
time courses, or both (docs/designs.md) — one :class:`~dynosed_sym.routes.result.FitResult` over
the stacked system.

Each environment's model is ``model.with_inputs(u_e)`` (a plain model whose inputs are numbers;
its kernels are the model's one generated module, with u_e as their runtime argument).  All
snapshots share one feature draw, with the median bandwidth of a subsample pooled over them.
The stacking, the time-course quadrature and the grouped noise model are in
:mod:`dynosed_sym.assembly.designs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..arguments import labelled_values
from ..assembly.designs import (
    Snapshot,
    assemble_snapshot,
    design_map,
    param_layout,
    pooled_lengthscale,
    pseudo_blocks,
)
from ..assembly.features import draw_features, feature_arguments
from ..assembly.stein import assemble_source
from ..codegen.loading import compile_model
from ..data.arrays import as_samples
from ..data.blocks import block_edges
from ..data.checks import diffusion_psd, distinct_samples
from ..data.sources import open_source
from ..errors import DataError, ModelError, NotAffineError
from ..options import BANDWIDTH_ROWS
from ..solve.intervals import check_prior_scale
from ..solve.linear import system_scale
from ..solve.uncertainty import Grouping
from ..solve.ustat import estimator_options, solve_system
from .result import FitResult, report_on, significant

__all__ = ["DesignInfo", "fit_global_design", "environment_models", "env_residuals"]

#: Largest memory (bytes) of a design's pseudo-blocks; above it, fewer blocks per snapshot.
DESIGN_BLOCK_BYTES = 1 << 30
#: Fewest noise blocks per snapshot when the memory cap lowers them.
MIN_DESIGN_BLOCKS = 8
#: |θ̂(trapezoid) − θ̂(order p)| above this many standard errors is reported as a warning note.
QUADRATURE_Z = 1.0


@dataclass
class DesignInfo:
    """What a design fit used and what it found per environment (``FitResult.design``).

    Attributes
    ----------
    environments : list of dict
        ``name``, ``kind`` ("stationary" / "timecourse"), ``inputs`` ({name: value}),
        ``n_samples``, ``weight`` (w_e = N_e/N), and for a time course ``times`` and
        ``order`` (quadrature order).
    param_names : list of str
        Global parameters (env parameters as ``k[A]``).
    model_params : list of str
    columns : dict {env: (n,) int array}
        Global column of each model parameter in each environment.
    residuals : dict {env: dict}
        ``residual`` ‖A_e θ̂ − b_e‖ on that environment's own (unweighted) rows, ``noise`` its
        sampling noise from that environment's blocks, ``ratio`` (≈ 1 or below under a correct
        model: the fit's projection makes it slightly smaller; ≫ 1 points at the environment
        the model does not describe).
    quadrature : dict or None
        Time courses with quadrature order > 2: ``theta_trapezoid`` (the order-2 estimate),
        ``z`` ((θ̂₂ − θ̂)/SE per parameter), ``max_z`` and ``param`` (where it is largest).
    notes : list of str
    """

    environments: list
    param_names: list
    model_params: list
    columns: dict
    residuals: dict = field(default_factory=dict)
    quadrature: dict | None = None
    notes: list = field(default_factory=list)

    def theta_vector(self, theta, what="truth"):
        """Values in the global parameter order from an array, or a dict keyed by global names
        (``k[A]``) or model parameter names (an env parameter given once applies to every
        environment, or as ``{env: value}``)."""
        names = self.param_names
        theta = labelled_values(theta)  # a pandas Series by its labels, not by position
        if not isinstance(theta, dict):
            out = np.asarray(theta, dtype=float).reshape(-1)
            if out.shape != (len(names),):
                raise ModelError(
                    f"{what}: expected {len(names)} values ({', '.join(names)}), got {out.size}"
                )
            return out
        given = {str(k): v for k, v in theta.items()}
        out = np.full(len(names), np.nan)
        for e, cols in self.columns.items():
            for k, p in enumerate(self.model_params):
                g = cols[k]
                if names[g] in given:
                    val = given[names[g]]
                elif p in given:
                    val = given[p]
                    if isinstance(val, dict):
                        if e not in {str(x) for x in val}:
                            raise ModelError(f"{what}: no value of {p!r} for environment {e!r}")
                        val = {str(x): y for x, y in val.items()}[e]
                else:
                    raise ModelError(f"{what}: no value for parameter {names[g]!r}")
                out[g] = float(val)
        return out

    def summary_lines(self):
        lines = ["", "design: " + ", ".join(_env_text(env) for env in self.environments)]
        if self.residuals:
            w = max(11, max(len(e) for e in self.residuals))
            lines.append(
                f"  {'environment':<{w}}  {'N':>9}  {'residual':>10}  {'noise':>10}  {'ratio':>6}"
            )
            sizes = {env["name"]: env["n_samples"] for env in self.environments}
            for e, r in self.residuals.items():
                lines.append(
                    f"  {e:<{w}}  {sizes[e]:>9,}  {r['residual']:>10.3g}  {r['noise']:>10.3g}  "
                    f"{r['ratio']:>6.2f}"
                )
            lines.append(
                "  residual of each environment's own rows against its sampling noise (≈ 1 or "
                "below when the model fits it)"
            )
        lines.extend("  " + n for n in self.notes)
        return lines

    def to_dict(self):
        return {
            "environments": [
                {k: (list(v) if isinstance(v, np.ndarray) else v) for k, v in env.items()}
                for env in self.environments
            ],
            "residuals": self.residuals,
            "quadrature": None
            if self.quadrature is None
            else {
                "max_z": self.quadrature["max_z"],
                "param": self.quadrature["param"],
                "theta_trapezoid": [float(v) for v in self.quadrature["theta_trapezoid"]],
            },
            "notes": list(self.notes),
        }


def _env_text(env):
    inp = ", ".join(f"{k} = {v:g}" for k, v in env["inputs"].items())
    if env["kind"] == "timecourse":
        t = env["times"]
        what = f"time course of {len(t)} snapshots, t = {t[0]:g} … {t[-1]:g}"
        what += f", order {env['order']}" if "order" in env else ""
    else:
        what = "stationary"
    return f"{env['name']} ({what}{'; ' + inp if inp else ''})"


def environment_models(model, design, out_dir=None):
    """{env: (model_e, compiled_e)}: ``model.with_inputs(u_e)``, its kernels the model's module
    bound to u_e (one module and one compilation for every environment)."""
    cache, out = {}, {}
    for env in design.envs:
        key = tuple(np.asarray(env.inputs, dtype=float).tolist())
        if key not in cache:
            try:
                m_e = model.with_inputs(env.inputs) if model.inputs else model
            except ModelError as err:  # (a D not positive semi-definite at its inputs)
                if design.single:
                    raise
                raise ModelError(f"environment {env.name!r}: {err}") from None
            cm = compile_model(m_e, out_dir)
            if not cm.is_affine:
                raise NotAffineError(
                    f"model {model.name!r}: designs (several environments, time courses) need a "
                    "drift affine in the parameters"
                )
            cache[key] = (m_e, cm)
        out[env.name] = cache[key]
    return out


def _open_snapshots(design, models):
    """[(env, time, source or array)] in group order, checked; and their heads for the bandwidth."""
    groups, heads = [], []
    for env in design.envs:
        m_e = models[env.name][0]
        if env.kind == "stationary":
            name = "X" if design.single else f"X[{env.name!r}]"
            src = open_source(env.data, m_e, name)
            if src.kind == "dask":
                src.close()
                raise DataError(f"{name}: a dask array in a design is not supported; load it")
            head = src.head(BANDWIDTH_ROWS)
            if head.shape[0] < 2:
                raise DataError(f"{name}: {head.shape[0]} sample(s); at least 2 are needed")
            if src.kind == "array":
                distinct_samples(src.array, name)
                diffusion_psd(m_e, src.array, name)
            else:
                diffusion_psd(m_e, head, name)
            groups.append((env.name, None, src))
            heads.append(head)
        else:
            for t, X in env.data.items():
                name = f"X[{env.name!r}][t={t:g}]" if not design.single else f"X[t={t:g}]"
                arr = as_samples(X, m_e, name)
                distinct_samples(arr, name)
                diffusion_psd(m_e, arr, name)
                groups.append((env.name, t, arr))
                heads.append(arr[:BANDWIDTH_ROWS])
    return groups, heads


def _block_budget(design, groups, n_features, n_glob, n_blocks):
    """Blocks per snapshot so that the pseudo-blocks fit :data:`DESIGN_BLOCK_BYTES`."""
    rows = sum(1 if e.kind == "stationary" else len(e.data) - 1 for e in design.envs)
    per_block = rows * n_features * (n_glob + 1) * 8.0
    G = len(groups)
    fit = int(DESIGN_BLOCK_BYTES // max(1.0, G * per_block))
    if G == 1 or fit >= n_blocks:
        return n_blocks, None
    nb = max(MIN_DESIGN_BLOCKS, fit)
    return nb, (
        f"note: {nb} noise blocks per snapshot (not {n_blocks}) keep the design's "
        f"{G} × blocks pseudo-blocks within {DESIGN_BLOCK_BYTES >> 20} MB"
    )


def env_residuals(slices, row_scale, A, b, A_blocks, b_blocks, weights, theta):
    """{env: residual, noise, ratio} on each environment's own rows.

    ``slices``: {env: slice of the stacked rows}; ``row_scale`` (R,): 1/√w of each row (undoes
    the environment weights).  The noise is the grouped estimate from the pseudo-blocks (other
    groups do not move these rows).
    """
    r = (A @ theta - b) * row_scale
    dev = (A_blocks @ theta - b_blocks) * row_scale[None] - r[None]
    P = weights.size
    w = weights / weights.sum()
    out = {}
    for e, sl in slices.items():
        res = float(np.linalg.norm(r[sl]))
        noise = math.sqrt(float(np.einsum("p,pr->", w, dev[:, sl] ** 2)) / (P - 1))
        out[e] = {"residual": res, "noise": noise, "ratio": res / noise if noise > 0 else math.inf}
    return out


def fit_global_design(model, design, features, solver, execution, order=None) -> FitResult:
    """Fit a :class:`~dynosed_sym.data.designs.Design` by the global route (module docstring).

    Called by :func:`dynosed_sym.fit_global` (whose docstring lists the arguments), with its
    option objects (:class:`~dynosed_sym.routes.options.Features`,
    :class:`~dynosed_sym.routes.options.Solver`, :class:`~dynosed_sym.options.Execution`).
    """
    statistic, estimator = estimator_options(solver.statistic or "u", solver.estimator)
    lam, prior_scale, out_dir = solver.lam, solver.prior_scale, execution.out_dir
    n_features, seed = features.n_features, features.seed
    models = environment_models(model, design, out_dir)
    names, columns = param_layout(
        model.param_names, [str(p) for p in model.env_params], design.names, design.single
    )
    snaps, per_env, feats, ell, note = _assemble_snapshots(
        model, design, models, features, len(names), execution.n_blocks, execution.chunk_rows
    )
    dmap = design_map(design, per_env, names, columns, order)
    A, b, A_blocks, b_blocks, weights, ids, kappa = pseudo_blocks(dmap, snaps)
    system_scale(A, b, "global")
    # the estimator of the global route on the stacked system: its U-statistic correction is
    # taken from the pseudo-blocks, whose spread is the grouped noise of the stacked A and b
    prior_scale = check_prior_scale(prior_scale, names)
    system = (A, b, A_blocks, b_blocks, weights)
    grouping = Grouping(ids, kappa) if len(snaps) > 1 else None
    dof = None if grouping is None else grouping.dof
    rule = dict(statistic=statistic, estimator=estimator, dof=dof)
    estimate = solve_system(*system, lam, **rule)
    theta = estimate.theta
    options = dict(grouping=grouping, estimate=estimate, prior_scale=prior_scale)
    report = report_on(system, theta, lam, names, **options)
    info = DesignInfo(
        environments=[_env_record(env, per_env[env.name], dmap, model) for env in design.envs],
        param_names=names,
        model_params=model.param_names,
        columns=columns,
    )
    if note:
        info.notes.append(note)
    if len(design.envs) > 1:
        m = A.shape[0] // len(dmap.rows)
        slices = dmap.row_slices(m)
        row_scale = np.empty(A.shape[0])
        for e, sl in slices.items():
            row_scale[sl] = 1.0 / math.sqrt(dmap.weights[e])
        info.residuals = env_residuals(slices, row_scale, A, b, A_blocks, b_blocks, weights, theta)

    def solve(system):  # the same estimator on another stacked system
        return solve_system(
            *system[:5], lam, statistic=statistic, estimator=estimator, dof=dof
        ).theta

    info.quadrature = _quadrature_check(
        design, per_env, names, columns, dmap, snaps, solve, theta, report
    )
    if info.quadrature is not None:
        info.notes.append(_quadrature_note(info.quadrature, dmap))
    N = int(sum(s.n_samples for s in snaps))
    settings = {"m": int(n_features), "bandwidth": significant(ell), "lam": lam, "seed": seed}
    settings["statistic"], settings["estimator"] = estimate.statistic, estimate.estimator
    if len(design.envs) > 1:
        settings["environments"] = len(design.envs)
    if design.has_time_course:
        settings["snapshots"] = len(snaps)
    fit = FitResult(model, theta, A, b, report, "global", N, settings, names=names, design=info)
    fit.features = feats  # the shared feature draw (design advice assembles candidates with it)
    fit.lengthscale = float(ell)
    return fit


def _assemble_snapshots(model, design, models, features, n_params, n_blocks, chunk_rows):
    """Every snapshot of the design assembled with one feature draw (``features``: m, bandwidth,
    seed) → (snapshots, {environment: [(index, N)]}, features drawn, ℓ, note on the block
    budget)."""
    n_features, bandwidth, seed = features.n_features, features.bandwidth, features.seed
    groups, heads = _open_snapshots(design, models)
    try:
        if isinstance(bandwidth, str):
            ell = pooled_lengthscale(heads, seed=seed)
            if not np.isfinite(ell):
                raise DataError(
                    "X: the median pairwise distance overflows (values too large for double "
                    "precision); rescale the state variables"
                )
        else:
            ell = float(bandwidth)
        del heads
        feats = draw_features(model.d, n_features, ell, seed=seed)
        nb, note = _block_budget(design, groups, n_features, n_params, n_blocks)
        snaps, per_env = [], {e: [] for e in design.names}
        for env_name, t, data in groups:
            cm = models[env_name][1]
            if t is None:
                snap = Snapshot(assemble_source(cm, data, feats, nb, chunk_rows))
            else:
                name = f"X[{env_name!r}][t={t:g}]"
                feature_arguments(data, feats, name=name, model=cm.model)
                snap = assemble_snapshot(cm, data, block_edges(data.shape[0], nb), feats)
            per_env[env_name].append((len(snaps), snap.n_samples))
            snaps.append(snap)
    finally:
        for _, t, data in groups:
            if t is None:
                data.close()
    return snaps, per_env, feats, ell, note


def _env_record(env, groups, dmap, model):
    rec = env_record(env, int(sum(n for _, n in groups)), model)
    rec["weight"] = float(dmap.weights[env.name])
    if env.kind == "timecourse":
        rec["order"] = int(dmap.orders[env.name])
    return rec


def env_record(env, n_samples, model):
    rec = {
        "name": env.name,
        "kind": env.kind,
        "inputs": dict(zip(model.input_names, np.asarray(env.inputs, dtype=float).tolist())),
        "n_samples": int(n_samples),
    }
    if env.kind == "timecourse":
        rec["times"] = [float(t) for t in env.data.times]
    return rec


def _quadrature_check(design, per_env, names, columns, dmap, snaps, solve, theta, report):
    """θ̂ with the trapezoid against θ̂ with the chosen order (``theta``; both by the route's
    estimator, ``solve(pseudo_blocks)``), in standard errors."""
    if not any(p > 2 for p in dmap.orders.values()) or report.std_errors is None:
        return None
    dmap2 = design_map(design, per_env, names, columns, order=2)
    theta2 = solve(pseudo_blocks(dmap2, snaps))
    se = np.asarray(report.std_errors, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(np.isfinite(se) & (se > 0), (theta2 - theta) / se, 0.0)
    k = int(np.argmax(np.abs(z)))
    return {"theta_trapezoid": theta2, "z": z, "max_z": float(abs(z[k])), "param": names[k]}


def _quadrature_note(q, dmap):
    orders = sorted(set(dmap.orders.values()))
    what = f"order {orders[-1]}"
    text = (
        f"quadrature check: θ̂(trapezoid) − θ̂({what}) is at most {q['max_z']:.2g} SE ({q['param']})"
    )
    if q["max_z"] > QUADRATURE_Z:
        return (
            text + ": the time discretisation matters at this noise level; the higher order is "
            "less biased, but snapshots closer in time (dense where the law changes fast) make "
            "the intervals trustworthy"
        )
    return text + ": the quadrature error is small against the noise"
