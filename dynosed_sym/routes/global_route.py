"""The global route: kernel Stein discrepancy with random Fourier features
(docs/method.md §2), from any input to a :class:`~dynosed_sym.routes.result.FitResult`.

Data flow, one way down the layers: the input is opened as a source of checked chunks
(:mod:`dynosed_sym.data`); the assembly consumes the chunks into per-block sums
(:mod:`dynosed_sym.assembly`, on Dask workers with :mod:`dynosed_sym.backends.dask`); the solve
and the report read the block sums (:mod:`dynosed_sym.solve`).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import arguments
from ..assembly.features import draw_features, feature_arguments, median_lengthscale
from ..assembly.memory import check_assembly_memory
from ..assembly.stein import BlockSystem, assemble_source
from ..codegen.loading import compile_model
from ..data.blocks import block_edges
from ..data.checks import diffusion_psd, distinct_samples, per_row, same_point
from ..data.designs import as_design
from ..data.sources import open_source, rows_differ
from ..errors import DataError
from ..kernels.blas import limited_blas
from ..model.declaration import require_parameters
from ..options import BANDWIDTH_ROWS, Execution, resolve_options
from ..progress import progress_bar, progress_enabled
from ..solve.gauss_newton import corrected_gauss_newton
from ..solve.gradient import GlobalProblem, fit_gradient, starting_point
from ..solve.intervals import check_prior_scale
from ..solve.linear import system_scale
from ..solve.profile import attach as attach_profile
from ..solve.ustat import estimator_options, solve_system
from .bandwidth import fit_auto, replayable
from .designs import fit_global_design
from .options import EXECUTION_MOVED, Features, Solver, check_start, moved_to
from .result import FitResult, gradient_info, report_on, significant
from .stationarity import flag_stationarity

__all__ = ["fit_global"]

#: The flat keywords of earlier versions, now fields of the option objects (FutureWarning).
MOVED = {
    **moved_to("features", Features, "n_features", "bandwidth", "seed"),
    **moved_to("solver", Solver, "lam", "statistic", "estimator", "prior_scale", "theta0"),
    **moved_to("solver", Solver, "projection", "n_starts", "max_nfev", "method"),
    **EXECUTION_MOVED,
}


def fit_global(
    model,
    X,
    *,
    inputs=None,
    env_column=None,
    time_column=None,
    order=None,
    dlogp_dt=None,
    features=None,
    solver=None,
    execution=None,
    **moved,
) -> FitResult:
    """Fit a model by the global kernel-Stein route (docs/method.md §2).

    Reads as validate → open → assemble → solve → report.

    Parameters
    ----------
    model : SDEModel
        Affine in its parameters: one linear (Tikhonov) solve.  Not affine: the same loss
        ‖r(θ)‖² + λ‖θ‖² is minimised by trust-region least squares with the compiled
        Jacobian ∂f/∂θ (:mod:`dynosed_sym.solve.gradient`), starting from ``Solver.theta0`` or
        ``model.nominal`` (NotAffineError when neither is given).
    X : samples
        Unordered stationary samples: an (N, d) array or a DataFrame with the state names as
        columns (in memory); or streamed with memory independent of N: a ``.npy`` path
        (memory-mapped), a ``.zarr`` or ``.h5`` path, a Zarr array, an h5py dataset, an
        iterable/iterator of chunks (arrays or DataFrames); or a ``dask.array`` (fitted on
        Dask workers).  See :mod:`dynosed_sym.data.sources`.

        Designs (docs/designs.md): a dict ``{environment: samples}`` (several stationary
        environments with shared parameters), a :class:`~dynosed_sym.data.designs.TimeCourse`
        ``{t: X_t}`` of unpaired snapshots after a change, or a dict whose values are
        TimeCourses or samples.  One :class:`FitResult` over the stacked system; the noise
        blocks of every snapshot form an independent group.
    inputs : dict, optional
        Values of the model's known inputs (``SDEModel(..., inputs=[...])``):
        ``{environment: {input: value}}``, or ``{input: value}`` for data with one environment.
        Each distinct input vector compiles its own kernels once (cached on disk).
    env_column : str, optional
        X is one DataFrame (or AnnData: an ``.obs`` column) whose column names each row's
        environment.
    time_column : str, optional
        The column (``.obs`` column) holding each row's time: every environment is a time
        course.
    order : int, optional
        Quadrature order of time courses: 2 (trapezoid), 3 or 4 (default: 4 with at least four
        snapshots, else the number of snapshots).
    dlogp_dt : (N,) array or callable, optional
        Non-stationary snapshot: ∂ₜlog p at each sample, as an array in the row order of X or a
        function ``fn(X) -> (N,)``.  The Stein operator gains ``−φ ∂ₜlog p`` (docs/method.md §2),
        i.e. one more per-sample factor of the fill.  X must be in memory (array or DataFrame).
    features : Features, optional
        The kernel: number of random Fourier features, bandwidth, seed
        (:class:`~dynosed_sym.routes.options.Features`; None: the defaults).
    solver : Solver, optional
        Linear or gradient method, λ, statistic ("u" by default here: the unbiased U-statistic),
        estimator, prior scale of the honest intervals, and the gradient search's start and
        budget (:class:`~dynosed_sym.routes.options.Solver`; None: the defaults).  A search
        stopped by ``max_nfev`` is reported: ``FitResult.converged`` False, ``NOT CONVERGED`` in
        the summary and a :class:`~dynosed_sym.errors.ConvergenceWarning`.
    execution : Execution, optional
        Noise blocks, rows per kernel call, progress bar, folder of generated kernels, Dask
        backend and client (:class:`~dynosed_sym.options.Execution`; None: the defaults).
    **moved
        The flat keywords of earlier versions (``n_features=``, ``lam=``, ``seed=``,
        ``n_blocks=``, …): each still works and builds its option object, with a FutureWarning
        naming the new spelling.

    Returns
    -------
    FitResult

    Examples
    --------
    An Ornstein–Uhlenbeck process dx = −k x dt + √2 dW has the stationary law N(0, 1/k):

    >>> import numpy as np
    >>> import sympy as sp
    >>> from dynosed_sym import Features, SDEModel, Solver, fit_global
    >>> x, k = sp.symbols("x k", real=True)
    >>> model = SDEModel([x], [k], [-k * x], diffusion=1.0, name="ou_doc")
    >>> X = np.random.default_rng(0).normal(0.0, 0.5, size=(20_000, 1))  # exact draws, k = 4
    >>> fit = fit_global(model, X, features=Features(n_features=256), solver=Solver(lam=0.0))
    >>> bool(abs(fit.theta[0] - 4.0) < 0.2)
    True
    """
    with limited_blas():  # the whole fit: its checks' and report's small BLAS calls too
        given = dict(features=(features, Features), solver=(solver, Solver))
        given["execution"] = (execution, Execution)
        objects = resolve_options("fit_global", moved, given, MOVED)
        features, solver = objects["features"], objects["solver"]
        if features.bandwidth == "auto":  # fits at candidate length scales (routes.bandwidth)

            def fit_at(candidate, profile):
                return fit_global(
                    model,
                    X,
                    inputs=inputs,
                    env_column=env_column,
                    time_column=time_column,
                    order=order,
                    dlogp_dt=dlogp_dt,
                    features=candidate,
                    solver=solver if profile else replace(solver, profile=False),
                    execution=objects["execution"],
                )

            return fit_auto(fit_at, features, replayable(X), profiles=solver.profile)
        ex = objects["execution"].at_least(1, "fit_global")
        require_parameters(model)
        check_assembly_memory(model, features.n_features, ex.n_blocks)  # before anything m-sized
        design = as_design(X, model, inputs, env_column, time_column)
        if design is not None:
            return _design(model, design, order, dlogp_dt, features, solver, ex)
        if order is not None:  # it would be ignored without a word
            raise DataError(
                f"order={order!r} is the quadrature order of time courses (time_column= or a "
                "TimeCourse); X holds stationary samples, which have none"
            )
        if ex.backend == "dask" or ex.client is not None:
            from ..backends.dask import require_dask

            require_dask()
        statistic, estimator = estimator_options(solver.statistic or "u", solver.estimator)
        prior_scale = check_prior_scale(solver.prior_scale, model.param_names)
        cm = compile_model(model, ex.out_dir)
        gradient = solver.method == "gradient" or (solver.method is None and not cm.is_affine)
        start = check_start(
            starting_point(model, cm, solver.theta0, gradient), model, solver.theta0
        )
        run = _Run(model, cm, features, solver, ex, gradient, dlogp_dt)
        clock = [time.perf_counter()]
        source = open_source(X, model, "X")
        try:
            system, prob, theta, ginfo = run.assemble(source, start)
        finally:
            source.close()
        clock.append(time.perf_counter())
        estimate, gn, theta_v = None, None, theta  # (theta_v: the gradient search's optimum)
        if not gradient:
            estimate = solve_system(*system, solver.lam, statistic=statistic, estimator=estimator)
            theta = estimate.theta
        elif (statistic, estimator) != ("v", "ridge"):
            # re-linearise and solve the corrected system per step, from the V-statistic optimum
            estimate, system, gn = corrected_gauss_newton(
                prob.linearisation,
                theta,
                solver.lam,
                statistic=statistic,
                estimator=estimator,
                names=model.param_names,
                temper=solver.temper and not cm.is_affine,  # (an affine fit: the linear one)
            )
            theta = estimate.theta
        clock.append(time.perf_counter())
        options = dict(estimate=estimate, prior_scale=prior_scale)
        report = report_on(system, theta, solver.lam, model.param_names, **options)
        if gradient and solver.profile:  # the linearised intervals widened to the loss's profile
            report = attach_profile(report, prob, solver.lam, theta_v, theta)
        clock.append(time.perf_counter())
        A, b = system[0], system[1]
        info = run.info(source, statistic, estimator, ginfo, gn)
        fit = FitResult(model, theta, A, b, report, "global", run.N, info)
        fit = flag_stationarity(fit, X, stationary_data=dlogp_dt is None)
        fit.lengthscale = float(run.ell)
        clock.append(time.perf_counter())
        # wall seconds per stage (the gradient solver's search is in "assembly"; "checks": the
        # stationarity check of the fitted drift on the data); not in the summary
        stages = ("assembly", "solve", "report", "checks")
        timings = {k: round(t1 - t0, 4) for k, t0, t1 in zip(stages, clock, clock[1:])}
        fit.info["timings"] = {**timings, "total": round(clock[-1] - clock[0], 4)}
        return fit


class _Run:
    """One fit_global call on one snapshot: the checked options and what the reading found."""

    def __init__(self, model, cm, features, solver, ex, gradient, dlogp_dt):
        self.model, self.cm, self.features, self.solver = model, cm, features, solver
        self.ex, self.gradient, self.dlogp_dt = ex, gradient, dlogp_dt
        self.use_dask = False
        self.ell, self.N = None, None

    def assemble(self, source, start):
        """The block system of ``source`` (and for the gradient method its problem, θ and search
        record): the head checked, the bandwidth, the features, the fill."""
        ex, dlogp_dt = self.ex, self.dlogp_dt
        self.use_dask = ex.backend == "dask" or (
            ex.backend is None and (source.kind == "dask" or ex.client is not None)
        )
        if dlogp_dt is not None and (self.use_dask or source.kind != "array"):
            raise DataError(
                "dlogp_dt= needs X in memory (an array or DataFrame), not a stream, file "
                "or dask array"
            )
        head = self._checked_head(source)
        self.ell = _lengthscale(head, self.features)
        del head
        feats = draw_features(
            self.model.d, self.features.n_features, self.ell, seed=self.features.seed
        )
        show = progress_enabled(ex.progress, streamed=source.streamed or self.use_dask)
        with progress_bar(show, total=source.n_rows, desc=f"fit_global {self.model.name}") as bar:
            if (self.use_dask or self.gradient) and source.kind == "array":
                # (assemble_source checks its own input)
                feature_arguments(source.array, feats, model=self.model)
            prob, theta, ginfo = None, None, None
            if self.use_dask:
                from ..backends.dask import assemble_dask

                system = assemble_dask(
                    self.cm, source, feats, ex.n_blocks, ex.chunk_rows, client=ex.client, bar=bar
                )
            elif self.gradient:
                prob, theta, ginfo = self._search(source, feats, start)
                system = BlockSystem(*prob.linearisation(theta))
                bar.update(source.n_rows)
            else:
                g = (
                    None
                    if dlogp_dt is None
                    else per_row(dlogp_dt, source.array, "dlogp_dt", "sample")
                )
                system = assemble_source(
                    self.cm, source, feats, ex.n_blocks, ex.chunk_rows, bar=bar, dlogp_dt=g
                )
        self.N = int(system[4].sum())  # (the counts of the blocks)
        if self.N < 2:
            raise DataError(f"X: {self.N} sample(s); at least 2 are needed")
        system_scale(system[0], system[1], "global")
        return system, prob, theta, ginfo

    def _checked_head(self, source):
        """The first rows, with the reliability checks: X in memory as a whole; a streamed X on
        its first rows here, then chunk by chunk as it is read (DataSource.checked_chunks)."""
        head = source.head(BANDWIDTH_ROWS)
        if head.shape[0] < 2:
            raise DataError(f"X: {head.shape[0]} sample(s); at least 2 are needed")
        if source.kind == "array":
            distinct_samples(source.array)
            diffusion_psd(self.model, source.array, "X")
            return head
        diffusion_psd(self.model, head, "X")
        more = head.shape[0] >= BANDWIDTH_ROWS and source.n_rows != head.shape[0]
        if not more or isinstance(self.features.bandwidth, str):  # (the median uses the head)
            distinct_samples(head, first=more)
        elif self.use_dask and not (head != head[:1]).any():  # the workers do not tell: look here
            if not rows_differ(source, head[0], self.ex.chunk_rows):
                same_point(source.n_rows, head[0])
        return head

    def _search(self, source, feats, start):
        """The gradient method's search on X in memory → (problem, θ, search record)."""
        if source.kind != "array" or self.dlogp_dt is not None:
            raise DataError(
                "the gradient solver (non-affine model) needs X in memory (an "
                "array or DataFrame), without dlogp_dt="
            )
        prob = GlobalProblem(
            self.cm, source.array, feats, block_edges(source.n_rows, self.ex.n_blocks)
        )
        s = self.solver
        theta, ginfo = fit_gradient(
            prob,
            s.lam,
            start,
            projection=s.projection,
            n_starts=s.n_starts,
            seed=self.features.seed if s.seed is None else s.seed,
            max_nfev=s.max_nfev,
        )
        return prob, theta, ginfo

    def info(self, source, statistic, estimator, ginfo, gn):
        """The ``FitResult.info`` record of this fit."""
        f = self.features
        info = {"m": f.n_features, "bandwidth": significant(self.ell), "lam": self.solver.lam}
        info["seed"] = f.seed
        info["statistic"], info["estimator"] = statistic, estimator
        if self.dlogp_dt is not None:
            info["dlogp_dt"] = "given"
        if self.gradient:
            info.update(gradient_info(ginfo, gn))
        if source.streamed or self.use_dask:
            info["input"] = (
                source.kind
                if (source.kind == "dask" or not self.use_dask)
                else f"{source.kind} on dask"
            )
        return info


def _lengthscale(head, features):
    """ℓ: the given bandwidth, or the median pairwise distance of a seeded subsample of ``head``."""
    if not isinstance(features.bandwidth, str):
        return features.bandwidth
    ell = median_lengthscale(head, seed=features.seed)
    if not np.isfinite(ell):
        raise DataError(
            "X: the median pairwise distance overflows (values too large for "
            "double precision); rescale the state variables"
        )
    return ell


def _design(model, design, order, dlogp_dt, features, solver, ex):
    """fit_global on a design (several environments, time courses): routes.designs."""
    unsupported = [
        name
        for name, value in (("dlogp_dt", dlogp_dt), ("theta0", solver.theta0))
        if value is not None
    ]
    if solver.method == "gradient":
        unsupported.append("solver=Solver(method='gradient')")
    if ex.dask_requested:
        unsupported.append("backend='dask'")
    if unsupported:
        raise DataError(
            f"fit_global on a design (environments, time courses) does not take "
            f"{unsupported[0]}= (designs need a drift affine in θ; a time course replaces "
            "dlogp_dt=)"
        )
    if order is not None:
        order = arguments.integer(order, "order", minimum=2)
        if order > 4:
            raise DataError(f"order must be 2, 3 or 4, got {order}")
    estimator_options(solver.statistic or "u", solver.estimator)  # (checked before any work)
    return fit_global_design(model, design, features, solver, ex, order=order)
