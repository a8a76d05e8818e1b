"""The global route: kernel Stein discrepancy with random Fourier features
(docs/design.md §2), from any input to a :class:`~dynosed_sym.routes.result.FitResult`.

Data flow, one way down the layers: the input is opened as a source of checked chunks
(:mod:`dynosed_sym.data`); the assembly consumes the chunks into per-block sums
(:mod:`dynosed_sym.assembly`, on Dask workers with :mod:`dynosed_sym.backends.dask`); the solve
and the report read the block sums (:mod:`dynosed_sym.solve`).
"""

from __future__ import annotations

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
from ..model.declaration import require_parameters
from ..options import BANDWIDTH_ROWS, DEFAULT_BLOCKS, Execution, execution_doc
from ..progress import progress_bar, progress_enabled
from ..solve.gradient import GlobalProblem, fit_gradient, starting_point
from ..solve.intervals import check_prior_scale
from ..solve.linear import system_scale
from ..solve.report import analyse
from ..solve.ustat import corrected_gauss_newton, estimator_options, solve_system
from .designs import fit_global_design
from .result import FitResult, gradient_info
from .stationarity import flag_stationarity

__all__ = ["fit_global"]

SOLVERS = (None, "linear", "gradient")


@execution_doc()
def fit_global(
    model,
    X,
    *,
    inputs=None,
    env_column=None,
    time_column=None,
    order=None,
    n_features=2048,
    bandwidth="median",
    lam=1e-6,
    seed=0,
    dlogp_dt=None,
    theta0=None,
    solver=None,
    projection=True,
    n_starts=1,
    max_nfev=None,
    statistic="u",
    estimator=None,
    prior_scale="ml",
    n_blocks=DEFAULT_BLOCKS,
    chunk_rows=None,
    progress=None,
    out_dir=None,
    backend=None,
    client=None,
) -> FitResult:
    """Fit a model by the global kernel-Stein route (docs/design.md §2).

    Parameters
    ----------
    model : SDEModel
        Affine in its parameters: one linear (Tikhonov) solve.  Not affine: the same loss
        ‖r(θ)‖² + λ‖θ‖² is minimised by trust-region least squares with the compiled
        Jacobian ∂f/∂θ (:mod:`dynosed_sym.solve.gradient`), starting from ``theta0`` or
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
    n_features : int
        Number m of random Fourier features.
    bandwidth : "median" or float
        Length scale ℓ of the Gaussian kernel; "median" uses the median pairwise distance of a
        seeded subsample (≤ 1000 rows) of the first ``options.BANDWIDTH_ROWS`` (65,536) rows —
        the same rows for every kind of input.
    lam : float
        Tikhonov regularisation λ ≥ 0.
    seed : int
        Seeds the bandwidth subsample and the random features.
    dlogp_dt : (N,) array or callable, optional
        Non-stationary snapshot: ∂ₜlog p at each sample, as an array in the row order of X or a
        function ``fn(X) -> (N,)``.  The Stein operator gains ``−φ ∂ₜlog p`` (docs/design.md §2),
        i.e. one more per-sample factor of the fill.  X must be in memory (array or DataFrame).
    theta0 : array or dict, optional
        Starting point of the gradient route (default: ``model.nominal``; zeros for an
        affine model fitted with ``solver="gradient"``).
    solver : {None, "linear", "gradient"}
        None: linear for an affine model, gradient otherwise.  "gradient" also fits an affine
        model by the gradient route (the optimum is the linear solve's).
    projection : bool
        Gradient route: eliminate the separable parameters exactly (variable projection,
        :func:`dynosed_sym.solve.gradient.separable_params`) and search only the others.
    n_starts : int
        Gradient route: starts (``theta0`` plus seeded perturbations of it); the lowest loss wins.
    max_nfev : int, optional
        Gradient route: evaluations allowed per search (default: SciPy's, 100·n).  A search
        stopped by it is reported: ``FitResult.converged`` False, ``NOT CONVERGED`` in the
        summary and a :class:`~dynosed_sym.errors.ConvergenceWarning`.
    statistic : {"u", "v"}
        "u" (default): the unbiased U-statistic of the kernel Stein discrepancy — the pairs of
        samples inside one noise block are dropped (they shrink the drift by O(1/N)), plus the
        second-order bias term, both from the per-block sums (:mod:`dynosed_sym.solve.ustat`).
        "v": the V-statistic ‖Aθ − b‖² of the reference paper; with the default ``estimator``
        it reproduces earlier versions' estimates and intervals bit for bit.
    estimator : {"resolved", "ridge"}, optional
        "resolved" (default with ``statistic="u"``): no regularisation on the directions the
        data resolve above their noise, nothing along the others; intervals include the bias
        from what the data cannot separate (``prior_scale``) and parameters determined only
        in combination are named with that combination (:mod:`dynosed_sym.solve.intervals`).
        "ridge" (default with ``statistic="v"``): Tikhonov λ on every direction; its intervals
        are the sandwich ones and do not include the regularisation bias.
    prior_scale : "ml", float, array, dict or None
        Scale τ of the parameters behind the honest intervals of the resolved estimator
        (bias standard deviation τ·loading): "ml" (default) the maximum-likelihood scale of the
        identified estimates; a number, or one per parameter, if you know their typical size;
        None: no widening (variance-only intervals).

    <execution options>

    Returns
    -------
    FitResult
    """
    require_parameters(model)
    n_features = arguments.integer(n_features, "n_features", minimum=1)
    check_assembly_memory(model, n_features, n_blocks)  # before anything m-sized is allocated
    lam = arguments.number(lam, "lam", nonnegative=True)
    seed = arguments.seed(seed)
    design = as_design(X, model, inputs, env_column, time_column)
    if design is not None:
        return _design(model, design, locals())
    ex = Execution.resolve(
        n_blocks=n_blocks,
        chunk_rows=chunk_rows,
        progress=progress,
        out_dir=out_dir,
        backend=backend,
        client=client,
    )
    if ex.backend == "dask" or ex.client is not None:
        from ..backends.dask import require_dask

        require_dask()
    arguments.choice(solver, "solver", SOLVERS)
    n_starts = arguments.integer(n_starts, "n_starts", minimum=1)
    if max_nfev is not None:
        max_nfev = arguments.integer(max_nfev, "max_nfev", minimum=1)
    statistic, estimator = estimator_options(statistic, estimator)
    prior_scale = check_prior_scale(prior_scale, model.param_names)
    cm = compile_model(model, ex.out_dir)
    gradient = solver == "gradient" or (solver is None and not cm.is_affine)
    start = starting_point(model, cm, theta0, gradient)
    source = open_source(X, model, "X")
    try:
        use_dask = ex.backend == "dask" or (
            ex.backend is None and (source.kind == "dask" or ex.client is not None)
        )
        if dlogp_dt is not None and (use_dask or source.kind != "array"):
            raise DataError(
                "dlogp_dt= needs X in memory (an array or DataFrame), not a stream, file "
                "or dask array"
            )
        head = source.head(BANDWIDTH_ROWS)
        if head.shape[0] < 2:
            raise DataError(f"X: {head.shape[0]} sample(s); at least 2 are needed")
        # reliability checks: X in memory as a whole; a streamed X on its first rows here, then
        # chunk by chunk as it is read (DataSource.checked_chunks: D(x), spread)
        if source.kind == "array":
            distinct_samples(source.array)
            diffusion_psd(model, source.array, "X")
        else:
            diffusion_psd(model, head, "X")
            more = head.shape[0] >= BANDWIDTH_ROWS and source.n_rows != head.shape[0]
            if not more or isinstance(bandwidth, str):  # (the median bandwidth comes from the head)
                distinct_samples(head, first=more)
            elif use_dask and not (head != head[:1]).any():  # the workers do not tell: look here
                if not rows_differ(source, head[0], ex.chunk_rows):
                    same_point(source.n_rows, head[0])
        if isinstance(bandwidth, str):
            arguments.choice(bandwidth, "bandwidth", ("median",))
            ell = median_lengthscale(head, seed=seed)
            if not np.isfinite(ell):
                raise DataError(
                    "X: the median pairwise distance overflows (values too large for "
                    "double precision); rescale the state variables"
                )
        else:
            ell = arguments.number(bandwidth, "bandwidth", positive=True)
        del head
        feats = draw_features(model.d, int(n_features), ell, seed=seed)
        show = progress_enabled(ex.progress, streamed=source.streamed or use_dask)
        with progress_bar(show, total=source.n_rows, desc=f"fit_global {model.name}") as bar:
            if (use_dask or gradient) and source.kind == "array":
                feature_arguments(source.array, feats)  # (assemble_source checks its own input)
            if use_dask:
                from ..backends.dask import assemble_dask

                system = assemble_dask(
                    cm, source, feats, ex.n_blocks, ex.chunk_rows, client=ex.client, bar=bar
                )
            elif gradient:
                if source.kind != "array" or dlogp_dt is not None:
                    raise DataError(
                        "the gradient route (non-affine model) needs X in memory (an "
                        "array or DataFrame), without dlogp_dt="
                    )
                prob = GlobalProblem(
                    cm, source.array, feats, block_edges(source.n_rows, ex.n_blocks)
                )
                theta, ginfo = fit_gradient(
                    prob,
                    lam,
                    start,
                    projection=projection,
                    n_starts=n_starts,
                    seed=seed,
                    max_nfev=max_nfev,
                )
                system = BlockSystem(*prob.linearisation(theta))
                bar.update(source.n_rows)
            else:
                g = (
                    None
                    if dlogp_dt is None
                    else per_row(dlogp_dt, source.array, "dlogp_dt", "sample")
                )
                system = assemble_source(
                    cm, source, feats, ex.n_blocks, ex.chunk_rows, bar=bar, dlogp_dt=g
                )
    finally:
        source.close()
    A, b, A_blocks, b_blocks, counts = system
    N = int(counts.sum())
    if N < 2:
        raise DataError(f"X: {N} sample(s); at least 2 are needed")
    system_scale(A, b, "global")
    estimate, gn = None, None
    if not gradient:
        estimate = solve_system(
            A,
            b,
            A_blocks,
            b_blocks,
            counts,
            lam,
            statistic=statistic,
            estimator=estimator,
            prior_scale=prior_scale,
        )
        theta = estimate.theta
    elif (statistic, estimator) != ("v", "ridge"):
        # re-linearise and solve the corrected system per step, from the V-statistic optimum
        estimate, system, gn = corrected_gauss_newton(
            prob.linearisation,
            theta,
            lam,
            statistic=statistic,
            estimator=estimator,
            prior_scale=prior_scale,
        )
        A, b, A_blocks, b_blocks, counts = system
        theta = estimate.theta
    report = analyse(
        A,
        b,
        theta,
        lam,
        model.param_names,
        A_blocks,
        b_blocks,
        counts,
        estimate=estimate,
        prior_scale=prior_scale,
    )
    info = {"m": int(n_features), "bandwidth": round(ell, 6), "lam": lam, "seed": seed}
    info["statistic"], info["estimator"] = statistic, estimator
    if dlogp_dt is not None:
        info["dlogp_dt"] = "given"
    if gradient:
        info.update(gradient_info(ginfo, gn))
    if source.streamed or use_dask:
        info["input"] = (
            source.kind if (source.kind == "dask" or not use_dask) else f"{source.kind} on dask"
        )
    fit = FitResult(model, theta, A, b, report, "global", N, info)
    return flag_stationarity(fit, X, stationary_data=dlogp_dt is None)


def _design(model, design, args):
    """fit_global on a design (several environments, time courses): routes.designs."""
    ex = Execution.resolve(
        n_blocks=args["n_blocks"],
        chunk_rows=args["chunk_rows"],
        progress=args["progress"],
        out_dir=args["out_dir"],
        backend=args["backend"],
        client=args["client"],
    )
    unsupported = [
        name
        for name, default in (("dlogp_dt", None), ("theta0", None), ("solver", None))
        if args[name] is not default and not (name == "solver" and args[name] == "linear")
    ]
    if ex.dask_requested:
        unsupported.append("backend='dask'")
    if unsupported:
        raise DataError(
            f"fit_global on a design (environments, time courses) does not take "
            f"{unsupported[0]}= (designs need a drift affine in θ; a time course replaces "
            "dlogp_dt=)"
        )
    statistic, estimator = estimator_options(args["statistic"], args["estimator"])
    bandwidth = args["bandwidth"]
    if isinstance(bandwidth, str):
        arguments.choice(bandwidth, "bandwidth", ("median",))
    else:
        bandwidth = arguments.number(bandwidth, "bandwidth", positive=True)
    order = args["order"]
    if order is not None:
        order = arguments.integer(order, "order", minimum=2)
        if order > 4:
            raise DataError(f"order must be 2, 3 or 4, got {order}")
    return fit_global_design(
        model,
        design,
        n_features=args["n_features"],
        bandwidth=bandwidth,
        lam=args["lam"],
        seed=args["seed"],
        order=order,
        n_blocks=ex.n_blocks,
        chunk_rows=ex.chunk_rows,
        out_dir=ex.out_dir,
        statistic=statistic,
        estimator=estimator,
        prior_scale=args["prior_scale"],
    )
