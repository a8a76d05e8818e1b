"""The local route: Fokker–Planck residuals at probe points with estimated scores
(docs/method.md §2).

At probes x_1 … x_M the residual of an affine drift is ``R(x_i; θ) = a(x_i)ᵀθ − β(x_i)`` with

    a(x) = U(x)ᵀs(x) + ∇·U(x)
    β(x) = sᵀDs + Σ_jl D_jl J_jl + 2 sᵀ(∇·D) + ∇·(∇·D) − sᵀv − ∇·v − ∂ₜlog p

(s the score, J its Jacobian; all derivatives of U, v and D derived symbolically, see
:mod:`dynosed_sym.model.derivation`).  The rows are filled by the model's generated
``local_rows`` kernel.

A drift that is not affine in θ is fitted by the gradient solver: the same loss is minimised by
trust-region least squares with R and ∂R/∂θ from the generated ``local_residual`` kernel
(:class:`dynosed_sym.solve.gradient.LocalProblem`), and the report below is taken on the
linearisation ``A = ∂r/∂θ(θ̂)``, ``b = Aθ̂ − r(θ̂)`` (r = R/√M) for the full-data scores and for
every delete-one-block replicate.

Scaling.  Rows are divided by √M, so ``‖Aθ − b‖² = (1/M) Σ_i R(x_i; θ)²`` is the local loss of the
reference paper and λ has the same meaning whatever the number of probes.

Noise.  The scores are estimated from data, so A and b are noisy.  Their sampling noise is
estimated by the delete-one-block jackknife over B contiguous blocks of rows of X (rows of
:func:`dynosed_sym.simulate` output are chain by chain, so blocks hold whole chains, and
:func:`~dynosed_sym.routes.probes.restrict_to_balls` keeps the row order).  Both built-in
estimators are smooth functions of per-block sums, so the B delete-one-block estimates cost no
extra pass over the data.  From the replicate systems ``A_(b)`` the jackknife pseudo-values
``B·A − (B−1)·A_(b)`` are formed and handed to :func:`~dynosed_sym.solve.report.analyse` as equally
weighted "blocks": their standard error is exactly the jackknife standard error.  The report's
rank and consistency verdicts are therefore judged against the sampling noise of the score
estimates.  They do not see the estimator's *bias* (kernel smoothing, a local basis too poor for
the density): a biased estimate with small noise shows up as an inconsistent system (residual ≫
noise).  With exact scores given as
arrays there is no sampling noise; the rank is then judged against floating-point precision.
"""

from __future__ import annotations

import numbers
import warnings
from types import SimpleNamespace

import numpy as np

from ..assembly.local import local_rows
from ..codegen.loading import compile_model
from ..data.arrays import as_samples
from ..data.checks import diffusion_psd, distinct_samples, per_row, state_overflow, state_signs
from ..data.designs import as_design
from ..data.sources import ArraySource, is_streamed, open_source
from ..errors import DataError
from ..kernels.blas import limited_blas
from ..model.declaration import require_parameters
from ..options import BANDWIDTH_ROWS, Execution, resolve_options
from ..progress import progress_bar, progress_enabled
from ..solve.gauss_newton import corrected_gauss_newton
from ..solve.gradient import LocalProblem, fit_gradient, starting_point
from ..solve.intervals import check_prior_scale
from ..solve.linear import system_scale
from ..solve.profile import attach as attach_profile
from ..solve.ustat import estimator_options, solve_system
from .local_designs import fit_local_design
from .options import Scores, Solver, check_start, moved_to
from .probes import as_probes, refuse_far_probes
from .result import FitResult, gradient_info, report_on, significant
from .scores import ScoreEstimate, check_scores, make_estimator
from .scores.bandwidth import (
    U_REFUSE,
    apply_smoothing_bias,
    auto_temperature,
    open_for_jumps,
    refuse_constant_column,
    refuse_wide_kernel,
    saturation_factor,
    score_label,
    smoothing_bias,
    smoothing_ratio,
)
from .stationarity import flag_stationarity

__all__ = ["fit_local", "local_system"]

#: Default statistic of the local route (see fit_local's ``statistic``): the V-statistic.  The
#: U-statistic's correction (the jackknife covariance of the rows) moves local estimates by far
#: less than their error, which the score estimator's bias dominates, and widens their intervals
#: (docs/uncertainty-honest.md); the resolved estimator and honest intervals are the default.
LOCAL_STATISTIC = "v"

#: Kernel widths 1/√T that must fit inside a ball for the kernel estimators (warning otherwise).
KERNEL_WIDTHS = 3.0


def _dlogp_at(dlogp_dt, P):
    """∂ₜlog p at the probes (M,); zero (a stationary snapshot) when not given."""
    if dlogp_dt is None:
        return np.zeros(P.shape[0])
    return per_row(dlogp_dt, P, "dlogp_dt", "probe")


def local_system(model, probes, S, J, dlogp_dt=None, out_dir=None):
    """The local linear system ``A θ ≈ b`` (rows scaled by 1/√M) from scores at probes.

    Parameters
    ----------
    model : SDEModel (affine)
    probes : (M, d) array, DataFrame or Balls
    S, J : scores (M, d) and Jacobians (M, d, d)
    dlogp_dt : (M,) array or callable ``fn(probes) -> (M,)``, optional

    Returns
    -------
    A : (M, n), b : (M,)
    """
    cm = compile_model(model, out_dir)
    if not cm.is_affine:
        model.derivation.require_affine()
    P, _ = as_probes(probes, model)
    S, J = check_scores(S, J, P.shape[0], model.d)
    A, b = local_rows(cm, P, S, J, _dlogp_at(dlogp_dt, P))
    scale = 1.0 / np.sqrt(P.shape[0])
    return A * scale, b * scale


def _is_score_arrays(score):
    return isinstance(score, (tuple, list)) and len(score) == 2 and not callable(score[0])


#: The flat keywords of earlier versions, now fields of the option objects (FutureWarning).
MOVED = {
    **moved_to("scores", Scores, "score", "temperature", "radius", "degree"),
    **moved_to("scores", Scores, "dlogp_bandwidth", "use_times"),
    **moved_to("solver", Solver, "lam", "statistic", "estimator", "prior_scale", "theta0"),
    **moved_to("solver", Solver, "projection", "n_starts", "max_nfev", "method", "seed"),
    **moved_to("execution", Execution, "n_blocks", "chunk_rows", "progress", "out_dir"),
}


def fit_local(
    model,
    X,
    probes,
    *,
    inputs=None,
    env_column=None,
    time_column=None,
    dlogp_dt=None,
    scores=None,
    solver=None,
    execution=None,
    **moved,
) -> FitResult:
    """Fit a model by the local route: residuals at probes with estimated scores.

    Reads as validate → scores at the probes → solve → report.

    Parameters
    ----------
    model : SDEModel
        Affine in its parameters: one linear (Tikhonov) solve.  Not affine: the same loss
        ``(1/M) Σ_i R(x_i; θ)² + λ‖θ‖²`` is minimised by trust-region least squares with the
        compiled θ-gradient of the residual (generated ``local_residual`` kernel,
        :class:`dynosed_sym.solve.gradient.LocalProblem`), starting from ``Solver.theta0`` or
        ``model.nominal`` (NotAffineError when neither is given).
    X : samples, or None
        Samples (may be restricted to regions, e.g. by
        :func:`~dynosed_sym.routes.probes.restrict_to_balls`): an (N, d) array or DataFrame in
        memory, or — as for :func:`dynosed_sym.fit_global` — a ``.npy`` path (memory-mapped), a
        ``.zarr`` or ``.h5`` path, a Zarr array, an h5py dataset, an iterable/iterator of chunks or
        a dask array, read once in chunks with memory independent of N by the built-in estimators
        (see :mod:`dynosed_sym.data.sources`).  Noise blocks: those of the array in memory when N
        is known; for an iterator, equal blocks as in ``fit_global``.  Not needed when the scores
        are given as arrays (``Scores(score=(S, J))``).
    probes : (M, d) array, DataFrame, :class:`~dynosed_sym.routes.probes.Balls` or int
        Probe points.  Balls: their centres, and their radius as the default ``Scores.radius``;
        an int k: the k-means centres of X (X in memory only: a stream is read once).  A design:
        the same for every snapshot, or ``{environment: probes}`` and, for a time course,
        ``{time: probes}``.

        Designs (docs/designs.md): X may be a dict ``{environment: samples}`` or a
        :class:`~dynosed_sym.data.designs.TimeCourse` (or a dict of them); each environment
        (each interior snapshot of a time course) gives its own local system, stacked with
        weights N_e/N and independent noise groups.
    inputs, env_column, time_column
        As :func:`dynosed_sym.fit_global`: known inputs per environment, a column naming each
        row's environment, a column holding each row's time.
    dlogp_dt : (M,) array or callable ``fn(probes) -> (M,)``, optional
        ∂ₜlog p at the probes for a non-stationary snapshot (docs/method.md §2); zero when
        omitted.
    scores : Scores, optional
        How scores and Jacobians at the probes are obtained
        (:class:`~dynosed_sym.routes.options.Scores`; None: the kernel estimator with
        ``temperature="auto"``).  With the kernel estimators, whatever the temperature T, the
        smoothing bias is estimated (local Gaussian fits at T and T/2 from the same pass) and
        added to ``bias.sd`` and the intervals; a given T whose kernel is more than 10× wider
        than the data's spread around some probe is refused with a DataError.
    solver : Solver, optional
        As :func:`dynosed_sym.fit_global` (:class:`~dynosed_sym.routes.options.Solver`), with
        the jackknife pseudo-values as the noise blocks.  The local defaults: the V-statistic
        (``LOCAL_STATISTIC``: the U-statistic's correction does not help here, measured) and the
        resolved estimator.
    execution : Execution, optional
        Noise blocks, rows per kernel call, progress bar, folder of generated kernels
        (:class:`~dynosed_sym.options.Execution`; no Dask backend).  ``n_blocks`` counts the
        blocks of the delete-one-block jackknife; 0 or 1: no noise estimate.
    **moved
        The flat keywords of earlier versions (``score=``, ``temperature=``, ``lam=``,
        ``n_blocks=``, …): each still works and builds its option object, with a FutureWarning
        naming the new spelling.

    Returns
    -------
    FitResult
        ``route == "local"``; ``A`` (M, n) and ``b`` (M,) scaled by 1/√M; ``info`` holds the
        estimator settings and the smallest effective number of data points behind a probe;
        ``scores`` attribute: the :class:`~dynosed_sym.routes.scores.ScoreEstimate` used.

    Examples
    --------
    Exact scores of the stationary law N(0, 1/k) of dx = −k x dt + √2 dW, k = 4, at five probes:
    s(x) = −4x and J = −4, given as arrays.

    >>> import numpy as np
    >>> import sympy as sp
    >>> from dynosed_sym import SDEModel, Scores, Solver, fit_local
    >>> x, k = sp.symbols("x k", real=True)
    >>> model = SDEModel([x], [k], [-k * x], diffusion=1.0, name="ou_doc")
    >>> P = np.linspace(-1.0, 1.0, 5)[:, None]
    >>> S, J = -4.0 * P, np.full((5, 1, 1), -4.0)
    >>> fit = fit_local(model, None, P, scores=Scores(score=(S, J)), solver=Solver(lam=0.0))
    >>> round(float(fit.theta[0]), 6)
    4.0
    """
    with limited_blas():  # the whole fit: its checks' and report's small BLAS calls too
        given = dict(scores=(scores, Scores), solver=(solver, Solver))
        given["execution"] = (execution, Execution)
        objects = resolve_options("fit_local", moved, given, MOVED)
        scores, solver = objects["scores"], objects["solver"]
        ex = objects["execution"].in_process("fit_local")
        require_parameters(model)
        design = None if X is None else as_design(X, model, inputs, env_column, time_column)
        if design is None or not design.has_time_course:
            unused = [f for f in ("dlogp_bandwidth", "use_times") if getattr(scores, f) is not None]
            if unused:  # (they were ignored without a word)
                raise DataError(
                    f"Scores.{unused[0]} is a setting of time courses (∂ₜlog p from neighbouring "
                    "snapshots); X holds no time course (pass a TimeCourse or time_column=)"
                )
        if design is None:
            return _fit_local_single(model, X, probes, scores, solver, ex, dlogp_dt)
        if dlogp_dt is not None or solver.theta0 is not None or solver.method == "gradient":
            raise DataError(
                "fit_local on a design (environments, time courses) does not take "
                f"{'dlogp_dt' if dlogp_dt is not None else 'theta0/solver'}= (designs need a "
                "drift affine in θ; a time course estimates ∂ₜlog p itself)"
            )

        def fit_one(m_e, X_e, probes_e, dlogp_dt=None, **_same):
            return _fit_local_single(m_e, X_e, probes_e, scores, solver, ex, dlogp_dt)

        s = scores
        return fit_local_design(
            model,
            design,
            probes,
            fit_one,
            lam=solver.lam,
            n_blocks=ex.n_blocks,
            dlogp_bandwidth=s.dlogp_bandwidth,
            use_times=s.use_times,
            out_dir=ex.out_dir,
            temperature=s.temperature,
            statistic=solver.statistic or LOCAL_STATISTIC,
            estimator=solver.estimator or "resolved",
            prior_scale=solver.prior_scale,
        )


def _fit_local_single(model, X, probes, scores, solver, ex, dlogp_dt=None) -> FitResult:
    """:func:`fit_local` on one snapshot (its docstring lists the arguments)."""
    require_parameters(model)
    statistic, solve_as = estimator_options(
        solver.statistic or LOCAL_STATISTIC, solver.estimator or "resolved"
    )
    prior_scale = check_prior_scale(solver.prior_scale, model.param_names)
    cm = compile_model(model, ex.out_dir)
    gradient = solver.method == "gradient" or (solver.method is None and not cm.is_affine)
    start = check_start(starting_point(model, cm, solver.theta0, gradient), model, solver.theta0)
    at = _scores_at_probes(model, X, probes, scores, ex, dlogp_dt)
    info, est = at.info, at.est
    info["lam"] = solver.lam
    B = est.n_blocks if est.n_blocks >= 2 else 0
    notes = []
    if at.kmeans and not at.kmeans["converged"]:
        notes.append(
            f"note: the k-means placement of the probes stopped after {at.kmeans['iterations']} "
            "iterations without converging (valid probes, but not k-means centres)"
        )
    rule = (solver.lam, statistic, solve_as, prior_scale)
    searched = None  # (problem, optimum) of the gradient method's search, for the profile
    if gradient:
        theta, system, estimate, searched = _gradient_local(cm, at, B, solver, rule, start)
    else:
        A_all, b_all = _rows_all(cm, model, at.P, at.g, est)
        system_scale(A_all[0], b_all[0], "local")
        system = _pseudo(A_all, b_all, B)
        estimate = solve_system(*system, solver.lam, statistic=statistic, estimator=solve_as)
        theta = estimate.theta
    A, b, A_blocks, b_blocks, counts = system
    if A_blocks is not None:
        info["blocks"] = B
    elif B:
        notes.append(
            "note: a delete-one-block score estimate was not finite (too little data "
            "near a probe without one block); no noise estimate"
        )
    info["statistic"], info["estimator"] = (
        ("v", "ridge") if estimate is None else (estimate.statistic, estimate.estimator)
    )
    options = dict(estimate=estimate, prior_scale=prior_scale, exact=A_blocks is None and at.arrays)
    report = report_on(system, theta, solver.lam, model.param_names, **options)
    if A_blocks is not None and report.notes:
        report.notes = [n for n in report.notes if "too few data blocks" not in n]
    report.notes.extend(notes)
    smoothing = companions = None  # (the kernel's estimated smoothing bias, where there is one)
    if at.companions is not None:
        where = (cm, model, at.P, at.g)
        smoothing, companions = _smoothing(
            report, theta, at.companions, gradient, at.estimator, info, where, rule
        )
    if searched is not None and solver.profile:  # the linearised intervals, to the profile
        report = attach_profile(report, searched[0], solver.lam, searched[1], theta)
    if not at.arrays:  # estimated scores, smoothed across a jump of the drift
        open_for_jumps(report, model)
    if A_blocks is None and at.arrays:
        report.notes = [n for n in report.notes if "too few data blocks" not in n]
        report.notes.append(
            "note: scores given as arrays carry no sampling-noise estimate; rank judged "
            "against floating-point precision only"
        )
    fit = FitResult(model, theta, A, b, report, "local", at.n_samples, info)
    fit.smoothing_bias, fit._smoothing_companions = smoothing, companions  # (for a design)
    fit.scores = est
    fit.probes = at.P
    kmeans_probes = isinstance(probes, (int, np.integer)) and not isinstance(probes, bool)
    return flag_stationarity(
        fit, X, stationary_data=kmeans_probes and dlogp_dt is None, points=at.P
    )


def _gradient_local(cm, at, B, solver, rule, start):
    """The gradient method on the local loss → (θ̂, system, estimate or None, (problem, the
    search's optimum)).

    The scores are fixed; only θ is searched.  The report is taken on the linearisation at θ̂,
    for the full-data scores and each delete-one-block replicate (jackknife)."""
    lam, statistic, solve_as, prior_scale = rule
    S_all, J_all, _ = _score_stack(at.est)  # (its B is the caller's: the same rule)

    def pseudo(A_all, b_all):
        return _pseudo(A_all, b_all, B)

    prob = LocalProblem(cm, at.P, S_all, J_all, at.g)
    theta, ginfo = fit_gradient(
        prob,
        lam,
        start,
        projection=solver.projection,
        n_starts=solver.n_starts,
        seed=0 if solver.seed is None else solver.seed,
        max_nfev=solver.max_nfev,
    )
    system = pseudo(*prob.linearisation(theta))
    system_scale(system[0], system[1], "local")
    estimate = gn = None
    theta_v = theta
    if (statistic, solve_as) != ("v", "ridge") and system[2] is not None:
        estimate, system, gn = corrected_gauss_newton(
            lambda th: pseudo(*prob.linearisation(th)),
            theta,
            lam,
            statistic=statistic,
            estimator=solve_as,
            names=prob.model.param_names,
            temper=solver.temper and not cm.is_affine,  # (an affine fit: the linear one)
        )
        theta = estimate.theta
    at.info.update(gradient_info(ginfo, gn))
    return theta, system, estimate, (prob, theta_v)


class _AtProbes:
    """What the local route knows at its probes: points P, ∂ₜlog p there (g), the score estimate
    (est) and its estimator, the companion fits of the smoothing bias, the info record."""

    def __init__(self, P, g, est, estimator, companions, info, n_samples, kmeans, arrays):
        self.P, self.g, self.est, self.estimator = P, g, est, estimator
        self.companions, self.info, self.n_samples = companions, info, n_samples
        self.kmeans, self.arrays = kmeans, arrays


def _open_local(X, model, arrays):
    """(X in memory or None, streamed source or None)."""
    if X is None:
        if not arrays:
            raise DataError("X is required unless score is given as (S, J) arrays")
        return None, None
    if not is_streamed(X):
        return as_samples(X, model, "X", min_samples=1), None
    source = open_source(X, model, "X")
    if isinstance(source, ArraySource):  # e.g. an in-memory dask-free array-like
        return source.array, None
    return None, source


def _check_radius(scores, M):
    """``Scores.radius`` (and ``degree``) that would be ignored or misread: given with a score
    that does not use it, or not one number or one per probe (``Scores(radius=[1, 2])`` with 8
    probes passed)."""
    degree = scores.degree
    given = isinstance(degree, bool) or not isinstance(degree, numbers.Real) or degree != 2
    if given and not (isinstance(scores.score, str) and scores.score == "score_matching"):
        raise DataError(
            f"Scores.degree={_shown(degree)} is the polynomial degree of score='score_matching'; "
            f"score={_shown(scores.score)} does not use it"
        )
    if scores.radius is None:
        return
    if isinstance(scores.score, str) and scores.score != "score_matching":
        raise DataError(
            f"Scores.radius is the ball radius of score='score_matching'; score={scores.score!r} "
            "does not use it (its kernel width is temperature=)"
        )
    r = np.asarray(scores.radius, dtype=object)
    if r.ndim == 1 and r.shape[0] != M:
        raise DataError(f"Scores.radius: one number, or one per probe ({M}), got {r.shape[0]}")


def _shown(score):
    """A Scores field in a message: a name or number as it is, anything else by its type."""
    if isinstance(score, numbers.Integral) and not isinstance(score, bool):
        return str(int(score))
    if isinstance(score, (str, numbers.Number)):
        return repr(score)
    return f"of type {type(score).__name__}"


def _scores_at_probes(model, X, probes, scores, ex, dlogp_dt):
    """Probes, ∂ₜlog p at them and the scores there (estimated from X, or given) → _AtProbes."""
    arrays = _is_score_arrays(scores.score)
    Xa, source = _open_local(X, model, arrays)
    try:
        if (
            source is not None
            and isinstance(probes, (int, np.integer))
            and not isinstance(probes, bool)
        ):
            listed = isinstance(X, (list, tuple))  # (chunks in memory: not read only once)
            raise DataError(
                f"probes={int(probes)} chooses probes by k-means from X, which needs X in "
                + (
                    "one array; X is a list of chunks: pass explicit probes, e.g. "
                    f"ds.choose_probes(np.concatenate(X), {int(probes)}), or the chunks joined"
                    if listed
                    else f"memory; X is streamed ({source.kind}) and is read only once: pass "
                    "explicit probes (an (M, d) array or Balls), e.g. ds.choose_probes on a "
                    "subsample"
                )
            )
        kmeans = {}
        P, ball_radius = as_probes(probes, model, Xa, info=kmeans, distinct=not arrays)
        state_signs(model, P, "probes", "probe", fix="or move those probes")  # model there
        state_overflow(model, P, "probes", "probe")
        diffusion_psd(model, P, "probes", "probe")  # β needs D (and its derivatives) there
        M = P.shape[0]
        g = _dlogp_at(dlogp_dt, P)
        info = {"probes": M}
        n_samples = 0 if Xa is None else Xa.shape[0]
        if source is not None:
            info["input"] = source.kind
            n_samples = source.n_rows or 0
        estimator = companions = None
        if arrays:
            S, J = check_scores(scores.score[0], scores.score[1], M, model.d)
            est = ScoreEstimate(S, J, None, None, None, "given")
            info["score"] = "given"
        else:
            radius = ball_radius if scores.radius is None else scores.radius
            estimator = make_estimator(scores.score, scores.temperature, radius, scores.degree)
            _check_radius(scores, M)  # (after make_estimator has checked its values)
            est, companions, n_samples = _estimate_at(
                estimator, scores.score, Xa, source, P, ex, model, ball_radius, n_samples
            )
            _estimator_info(info, estimator, est)
    finally:
        if source is not None:
            source.close()
    return _AtProbes(P, g, est, estimator, companions, info, n_samples, kmeans, arrays)


def _estimate_at(estimator, score, Xa, source, P, ex, model, ball_radius, n_samples):
    """The checks on X for a built-in estimator, then the estimate →
    (estimate, companions, number of samples read)."""
    if Xa is not None and estimator.method in ("kernel", "local_gaussian", "score_matching"):
        distinct_samples(Xa)  # (a callable may not even read X)
    if source is not None and not getattr(estimator, "streams", False):
        raise DataError(
            f"score={score!r} needs X in memory (an array or DataFrame); X is "
            f"streamed ({source.kind}): use score='kernel', 'local_gaussian' or "
            "'score_matching', which read it in one pass, or load X"
        )
    est, companions = _estimate(
        estimator, Xa, source, P, ex.n_blocks, ex.chunk_rows, ex, model, ball_radius
    )
    if source is not None:
        n_samples = est.n_samples if est.n_samples is not None else n_samples
    return est, companions, n_samples


def _estimator_info(info, estimator, est):
    """The estimator's settings in the info record."""
    info["score"] = estimator.method
    if estimator.method in ("kernel", "local_gaussian"):
        info["temperature"] = significant(estimator.temperature)
        if estimator.auto:
            info["temperature_rule"] = "auto"
    if estimator.method == "score_matching":
        r = np.asarray(estimator.radius)
        info["radius"] = float(r) if r.ndim == 0 else "per probe"
        info["degree"] = estimator.degree
    if est.n_effective is not None:
        info["min_points"] = round(float(np.min(est.n_effective)), 1)


def _pseudo(A_all, b_all, B):
    """Full-data system and its jackknife pseudo-values as noise blocks (module docstring)."""
    A, b = A_all[0], b_all[0]
    if not B:
        return A, b, None, None, None
    Ab, bb = A_all[1:], b_all[1:]
    if not (np.isfinite(Ab).all() and np.isfinite(bb).all()):
        return A, b, None, None, None
    pa = B * A[None] - (B - 1) * Ab
    pb = B * b[None] - (B - 1) * bb
    return A, b, pa - pa.mean(axis=0) + A[None], pb - pb.mean(axis=0) + b[None], np.ones(B)


def _score_stack(est):
    """``(S_all, J_all, B)``: the full-data scores and Jacobians of a score estimate followed by
    its B delete-one-block replicates (B = 0 without at least two blocks)."""
    B = est.n_blocks if est.n_blocks >= 2 else 0
    S_all, J_all = est.score[None], est.jacobian[None]
    if B:
        S_all = np.concatenate([S_all, est.score_blocks])
        J_all = np.concatenate([J_all, est.jacobian_blocks])
    return S_all, J_all, B


def _linearised_rows(cm, P, g, est, theta):
    """:func:`_rows_all` for a drift not affine in θ: the rows of the residual linearised at θ
    (:meth:`~dynosed_sym.solve.gradient.LocalProblem.linearisation`)."""
    S_all, J_all, _ = _score_stack(est)
    return LocalProblem(cm, P, S_all, J_all, g).linearisation(theta)


def _rows_all(cm, model, P, g, est):
    """Rows (B + 1, M, n) and (B + 1, M) of the full-data system and the B delete-one-block
    systems of a score estimate, scaled by 1/√M, in one kernel call."""
    M = P.shape[0]
    S_all, J_all, B = _score_stack(est)
    with np.errstate(invalid="ignore", over="ignore"):
        A_all, b_all = local_rows(
            cm,
            np.tile(P, (B + 1, 1)),
            S_all.reshape(-1, model.d),
            J_all.reshape(-1, model.d, model.d),
            np.tile(g, B + 1),
        )
    scale = 1.0 / np.sqrt(M)
    return A_all.reshape(B + 1, M, model.n) * scale, b_all.reshape(B + 1, M) * scale


def _estimate(estimator, Xa, source, P, n_blocks, chunk_rows, ex, model, ball_radius):
    """(scores at the probes, companion estimates or None): kernel estimators resolve an "auto"
    temperature, the plain kernel refuses a given one whose kernel is far wider than the data
    (the local Gaussian fit deconvolves it), and both return the local Gaussian estimates at T
    and T/2 for the smoothing bias (:mod:`.scores.bandwidth`)."""
    kernel = estimator.method in ("kernel", "local_gaussian")
    if kernel and source is None:  # (a stream is not read for it)
        label = score_label(estimator.method)
        refuse_far_probes(Xa, P, model.state_names, label, auto=estimator.temperature is None)
    if kernel and estimator.temperature is None:
        head = Xa if source is None else source.head(BANDWIDTH_ROWS)
        refuse_constant_column(np.asarray(head), model.state_names, estimator.method)
        if source is None:
            estimator.resolve(Xa, P)
        else:
            estimator.resolve(head, P, n_rows=source.n_rows)
    if kernel and ball_radius is not None:
        if np.min(ball_radius) * np.sqrt(estimator.temperature) < KERNEL_WIDTHS:
            warnings.warn(
                f"kernel bandwidth 1/√T = {1 / np.sqrt(estimator.temperature):.3g} is not "
                f"small against the ball radius {np.min(ball_radius):.3g}: data cut off at "
                f"the ball's edge bias the kernel score (keep radius·√T ≥ {KERNEL_WIDTHS}, or "
                "use score='score_matching')",
                UserWarning,
                stacklevel=4,
            )
    kw = {"companions": True} if kernel else {}
    if source is None:
        out = (estimator.estimate_family if kernel else estimator.estimate)(
            Xa, P, n_blocks=int(n_blocks), **kw
        )
    else:
        show = progress_enabled(ex.progress, streamed=True)
        with progress_bar(show, total=source.n_rows, desc=f"fit_local {model.name}") as bar:
            out = (estimator.estimate_family if kernel else estimator.estimate)(
                source, P, n_blocks=int(n_blocks), chunk_rows=int(chunk_rows), bar=bar, **kw
            )
    if not kernel:
        return out, None
    est, lg, lg_half = out
    if lg is not None and not estimator.auto and estimator.method == "kernel":
        u = smoothing_ratio(lg, estimator.temperature)
        hint = None
        if Xa is not None and u.max() > U_REFUSE:
            hint = auto_temperature(estimator, Xa, P)[0]
        refuse_wide_kernel(u, estimator.temperature, estimator.method, P, hint)
    return est, (lg, lg_half)


def _smoothing(report, theta, companions, gradient, estimator, info, where, solve):
    """Widen the report's intervals by the kernel's estimated smoothing bias (or say why not);
    returns ``(bias (n,), companions)`` — ``companions``: the full-data rows (A, b) of the local
    Gaussian fits at T and T/2, ``u_max`` and the method, for a design to stack — or (None,
    None) where the bias was not estimated."""
    lg, lg_half = companions
    T = estimator.temperature
    if lg is None:
        report.notes.append(
            "note: the local Gaussian fit at some probe is degenerate: the kernel's smoothing "
            "bias was not estimated and is not in the intervals"
        )
        return None, None
    u = smoothing_ratio(lg, T)
    info["smoothing"] = round(float(np.median(u)), 4)
    if lg_half is None:
        report.notes.append(
            f"note: kernel variance 1/T is {np.median(u):.3g} × the data's local variance "
            "(median over probes); its smoothing bias was not estimated (degenerate local fit "
            "at T/2) and is not in the intervals"
        )
        return None, None
    cm, model, P, g = where
    lam, statistic, solve_as, prior_scale = solve
    thetas, rows = [], []
    for comp in (lg, lg_half):
        if gradient:  # the companions' rows linearised at θ̂: one Gauss–Newton step each
            A_all, b_all = _linearised_rows(cm, P, g, comp, theta)
        else:
            A_all, b_all = _rows_all(cm, model, P, g, comp)
        B = comp.n_blocks if comp.n_blocks >= 2 else 0
        sys_c = _pseudo(A_all, b_all, B)
        thetas.append(solve_system(*sys_c, lam, statistic=statistic, estimator=solve_as).theta)
        rows.append(sys_c[:2])
    u_max = float(np.max(u))
    bias = smoothing_bias(theta, thetas[0], thetas[1], estimator.method, u_max=u_max)
    cause = apply_smoothing_bias(report, theta, bias)
    report.notes.append(
        f"kernel smoothing: kernel variance 1/T = {1 / T:.3g} is {np.median(u):.3g} × the data's "
        f"narrowest local variance around the probes (median; max {u_max:.3g}); its "
        "estimated smoothing bias ("
        + ("kernel vs local Gaussian fit at T, " if estimator.method == "kernel" else "")
        + f"local Gaussian at T/2 vs T × {saturation_factor(u_max):.3g} = 1 + 2·u_max for "
        + f"its saturation; largest {np.nanmax(bias):.3g}"
        + ("; drift not affine in θ: both fits linearised at θ̂" if gradient else "")
        + ") is in bias.sd and the intervals"
        + cause
    )
    return bias, SimpleNamespace(rows=rows, u_max=u_max, method=estimator.method)
