"""Fitting entry points and :class:`FitResult`."""

from __future__ import annotations

import itertools

import numpy as np

from .assembly import assemble_array, draw_features, median_lengthscale
from .compiled import compile_model
from . import validate
from .data import DEFAULT_BLOCKS
from .errors import DataError
from .nonaffine import starting_point
from .report import analyse, solve_tikhonov

__all__ = ["FitResult", "fit_global"]


class FitResult:
    """Estimate, linear system and identifiability report of one fit.

    Attributes
    ----------
    theta : (n,) array
        Estimated parameters in ``model.params`` order.
    params : dict
        ``{name: estimate}``.
    A : (m, n) array, b : (m,) array
        The assembled system A θ ≈ b.
    report : IdentifiabilityReport
    route : str
    n_samples : int
    info : dict
        Route settings (bandwidth, number of features, λ, seed ...).
    """

    def __init__(self, model, theta, A, b, report, route, n_samples, info):
        self.model = model
        self.theta = np.asarray(theta, dtype=float)
        self.A, self.b = A, b
        self.report = report
        self.route = route
        self.n_samples = int(n_samples)
        self.info = dict(info)

    @property
    def params(self) -> dict:
        return dict(zip(self.model.param_names, self.theta.tolist()))

    @property
    def std_errors(self):
        """(n,) sandwich standard errors (inf for parameters that are not identified), or None."""
        return self.report.std_errors

    def conf_int(self, level=None, method="sandwich"):
        """Confidence intervals (n, 2).

        Parameters
        ----------
        level : float, optional
            Coverage (default: the report's, 0.95).
        method : {"sandwich", "bootstrap"}
            Student-t intervals from the sandwich covariance, or block-bootstrap percentiles
            (computed with 200 replicates if :meth:`bootstrap` was not called).
        """
        from .errors import DynosedError
        from .uncertainty import confidence_intervals

        rep = self.report
        level = rep.ci_level if level is None else float(level)
        if method == "sandwich":
            if rep.std_errors is None:
                raise DynosedError("this fit has no noise blocks, hence no standard errors")
            return confidence_intervals(self.theta, rep.std_errors, level, rep.n_blocks - 1)
        if method == "bootstrap":
            res = rep.bootstrap_result
            if res is None or res.level != level:
                res = rep.bootstrap(level=level)
            return res.ci
        raise DynosedError(f"method must be 'sandwich' or 'bootstrap', got {method!r}")

    def bootstrap(self, n_boot=200, seed=0, level=None):
        """Block bootstrap reusing the per-block partial sums (no new pass over the data).

        Returns the :class:`~dynosed_sym.uncertainty.BootstrapResult`; ``summary()`` then shows
        its standard errors and percentile intervals beside the sandwich ones.
        """
        return self.report.bootstrap(n_boot=n_boot, seed=seed, level=level)

    def summary(self, truth=None, bootstrap=None) -> str:
        """A readable table: estimate, standard error, confidence interval, freeness,
        identifiability, then rank, consistency and the misspecification test.

        Parameters
        ----------
        truth : array or dict, optional
            True values, shown beside the estimates when given.
        bootstrap : bool, optional
            Show block-bootstrap standard errors and intervals (computed if needed when True;
            shown when already computed if None).
        """
        rep = self.report
        names = self.model.param_names
        tv = self.model.theta_vector(truth, "truth") if truth is not None else None
        free = set(rep.free_params)
        if bootstrap and rep.bootstrap_result is None and rep._blocks is not None:
            rep.bootstrap()
        boot = rep.bootstrap_result if bootstrap is not False else None
        has_se = rep.std_errors is not None
        pct = f"{100 * rep.ci_level:g}% CI"
        w = max(9, max(len(nm) for nm in names))
        head = f"{'parameter':<{w}}  {'estimate':>12}" + (f"  {'truth':>10}" if tv is not None else "")
        if has_se:
            head += f"  {'std.err':>9}  {pct:^23}"
        if boot is not None:
            head += f"  {'boot.se':>9}  {'bootstrap ' + pct:^23}"
        head += f"  {'freeness':>10}  {'normalised':>10}  identifiable"
        lines = [f"{self.model.name}: {self.route} route, N = {self.n_samples}, "
                 + ", ".join(f"{k} = {v}" for k, v in self.info.items()), head, "-" * len(head)]

        def interval(lo, hi):
            if not (np.isfinite(lo) and np.isfinite(hi)):
                return f"{'(−∞, ∞)':^23}"
            return f"[{lo:>10.4g}, {hi:>10.4g}]"

        for k, nm in enumerate(names):
            row = f"{nm:<{w}}  {self.theta[k]:>12.5g}"
            if tv is not None:
                row += f"  {tv[k]:>10.4g}"
            if has_se:
                row += f"  {rep.std_errors[k]:>9.3g}  " + interval(*rep.ci[k])
            if boot is not None:
                row += f"  {boot.se[k]:>9.3g}  " + interval(*boot.ci[k])
            row += f"  {rep.freeness[k]:>10.3g}  {rep.freeness_normalised[k]:>10.3g}  "
            row += "no" if nm in free else "yes"
            lines.append(row)
        if has_se:
            lines.append(f"std.err: sandwich covariance from {rep.n_blocks} data blocks; intervals "
                         f"Student t with {rep.n_blocks - 1} d.o.f. (infinite when not identifiable)"
                         + (f"; bootstrap: {boot.thetas.shape[0]} block resamples, percentile "
                            "intervals" if boot is not None else ""))
        lines.append("")
        lines.append(str(rep))
        return "\n".join(lines)

    # ------------------------------------------------------------------ results out
    def _param_columns(self, truth=None):
        """{column: (n,) values} of the per-parameter table (shared by to_dict and to_dataframe)."""
        rep = self.report
        n = self.model.n
        free = set(rep.free_params)
        cols = {"estimate": self.theta.copy()}
        if truth is not None:
            cols["truth"] = self.model.theta_vector(truth, "truth")
        nan = np.full(n, np.nan)
        ci = rep.ci if rep.ci is not None else np.column_stack([nan, nan])
        cols["std_error"] = rep.std_errors.copy() if rep.std_errors is not None else nan.copy()
        cols["ci_low"], cols["ci_high"] = ci[:, 0].copy(), ci[:, 1].copy()
        cols["freeness"] = np.asarray(rep.freeness, dtype=float).copy()
        cols["freeness_normalised"] = np.asarray(rep.freeness_normalised, dtype=float).copy()
        cols["identifiable"] = np.array([nm not in free for nm in self.model.param_names])
        return cols

    def to_dataframe(self, truth=None):
        """One row per parameter (index: parameter names).

        Columns: ``estimate`` (``truth`` when given), ``std_error``, ``ci_low``, ``ci_high`` (at
        ``report.ci_level``; NaN without noise blocks, ±inf when not identifiable), ``freeness``
        diag(H_λ⁻¹), ``freeness_normalised`` λ·diag(H_λ⁻¹) and ``identifiable`` (bool).
        Needs pandas.
        """
        try:
            import pandas as pd
        except ImportError:
            from .errors import DynosedError

            raise DynosedError("to_dataframe() needs pandas: pip install pandas") from None
        df = pd.DataFrame(self._param_columns(truth), index=pd.Index(self.model.param_names, name="parameter"))
        return df

    def to_dict(self, truth=None) -> dict:
        """Everything needed to report the fit, as plain Python types (JSON-ready except ±inf).

        Keys: ``model``, ``route``, ``n_samples``, ``settings`` (the route's settings), ``parameters``
        (a list of per-parameter records as in :meth:`to_dataframe`, with ``name``) and ``report``
        (rank, n_params, unique, consistent, residual_norm, residual_ratio, p_value, ci_level,
        singular_values, null_space, free_params, notes).
        """
        cols = self._param_columns(truth)
        params = []
        for k, nm in enumerate(self.model.param_names):
            rec = {"name": nm}
            for key, vals in cols.items():
                rec[key] = bool(vals[k]) if key == "identifiable" else float(vals[k])
            params.append(rec)
        rep = self.report
        return {
            "model": self.model.name,
            "route": self.route,
            "n_samples": self.n_samples,
            "settings": _plain(self.info),
            "parameters": params,
            "report": {
                "rank": int(rep.rank), "n_params": int(rep.n_params), "unique": bool(rep.unique),
                "consistent": None if rep.consistent is None else bool(rep.consistent),
                "residual_norm": float(rep.residual_norm),
                "residual_ratio": None if rep.residual_ratio is None else float(rep.residual_ratio),
                "p_value": None if rep.p_value is None else float(rep.p_value),
                "ci_level": float(rep.ci_level), "lam": float(rep.lam),
                "singular_values": [float(v) for v in rep.singular_values],
                "null_space": list(rep.null_space), "free_params": list(rep.free_params),
                "notes": list(rep.notes),
            },
        }

    def to_json(self, path=None, truth=None, indent=2) -> str:
        """:meth:`to_dict` as strict JSON (non-finite numbers become ``null``); written to ``path``
        when given.  Returns the JSON text."""
        import json

        text = json.dumps(_finite_or_none(self.to_dict(truth)), indent=indent, allow_nan=False)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        return text

    def __repr__(self):
        vals = ", ".join(f"{k}={v:.4g}" for k, v in itertools.islice(self.params.items(), 6))
        more = ", ..." if self.model.n > 6 else ""
        return f"FitResult({self.route}, {vals}{more}, rank={self.report.rank}/{self.model.n})"


def _plain(obj):
    """Numpy scalars/arrays and tuples inside ``obj`` → plain Python (for JSON); others → str."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def _finite_or_none(obj):
    """Replace NaN and ±inf floats by None, recursively (strict JSON has no such numbers)."""
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def _dlogp_per_sample(dlogp_dt, X):
    """∂ₜlog p at the rows of X (N,) from an array or a callable ``fn(X)``; None stays None."""
    return None if dlogp_dt is None else validate.per_row(dlogp_dt, X, "dlogp_dt", "sample")


def fit_global(model, X, n_features=2048, bandwidth="median", lam=1e-6, seed=0,
               n_blocks=DEFAULT_BLOCKS, out_dir=None, *, backend=None, client=None, progress=None,
               chunk_rows=None, dlogp_dt=None, theta0=None, solver=None, projection=True,
               n_starts=1) -> FitResult:
    """Fit a model by the global kernel-Stein route (DESIGN §2).

    Parameters
    ----------
    model : SDEModel
        Affine in its parameters: one linear (Tikhonov) solve.  Not affine: the same loss
        ‖r(θ)‖² + λ‖θ‖² is minimised by trust-region least squares with the compiled
        Jacobian ∂f/∂θ (:mod:`dynosed_sym.nonaffine`), starting from ``theta0`` or
        ``model.nominal`` (NotAffineError when neither is given).
    X : samples
        Unordered stationary samples: an (N, d) array or a DataFrame with the state names as
        columns (in memory); or streamed with memory independent of N: a ``.npy`` path
        (memory-mapped), a ``.zarr`` or ``.h5`` path, a Zarr array, an h5py dataset, an
        iterable/iterator of chunks (arrays or DataFrames); or a ``dask.array`` (fitted on
        Dask workers).  See :mod:`dynosed_sym.data`.
    n_features : int
        Number m of random Fourier features.
    bandwidth : "median" or float
        Length scale ℓ of the Gaussian kernel; "median" uses the median pairwise distance of a
        seeded subsample (≤ 1000 rows) of the first ``data.BANDWIDTH_ROWS`` (65,536) rows —
        the same rows for every kind of input.
    lam : float
        Tikhonov regularisation λ ≥ 0.
    seed : int
        Seeds the bandwidth subsample and the random features.
    n_blocks : int
        Data blocks used to estimate the sampling noise of A and b (for a stream of unknown
        length: between ``n_blocks`` and ``2·n_blocks`` blocks of equal size).
    out_dir : str, optional
        Folder of generated kernel modules.
    backend : {None, "local", "dask"}
        Where the fill runs.  None: on Dask workers for a dask array, in this process
        otherwise.  "dask" also distributes arrays (scattered) and files the workers can
        open by path (needs ``dynosed_sym[dask]``).
    client : distributed.Client, optional
        Cluster for the Dask backend (default: the current default client, else Dask's local
        scheduler); passing one selects the Dask backend unless ``backend="local"``.
    progress : bool or None
        Progress bar (tqdm) over rows; None shows one for streamed or distributed input when
        standard error is a terminal.
    chunk_rows : int, optional
        Rows per kernel call (and per file read) for streamed input (default 65,536); bounds
        the memory of the fill.
    dlogp_dt : (N,) array or callable, optional
        Non-stationary snapshot: ∂ₜlog p at each sample, as an array in the row order of X or a
        function ``fn(X) -> (N,)``.  The Stein operator gains ``−φ ∂ₜlog p`` (DESIGN §2), i.e.
        one more per-sample factor of the fill.  X must be in memory (array or DataFrame).
    theta0 : array or dict, optional
        Starting point of the gradient route (default: ``model.nominal``; zeros for an
        affine model fitted with ``solver="gradient"``).
    solver : {None, "linear", "gradient"}
        None: linear for an affine model, gradient otherwise.  "gradient" also fits an affine
        model by the gradient route (the optimum is the linear solve's).
    projection : bool
        Gradient route: eliminate the separable parameters exactly (variable projection,
        :func:`dynosed_sym.nonaffine.separable_params`) and search only the others.
    n_starts : int
        Gradient route: starts (``theta0`` plus seeded perturbations of it); the lowest loss wins.

    Returns
    -------
    FitResult
    """
    from .data import BANDWIDTH_ROWS, CHUNK_ROWS, assemble_stream, block_edges, open_source, rows_differ
    from .progress import progress_bar, progress_enabled

    n_features = validate.integer(n_features, "n_features", minimum=1)
    lam = validate.number(lam, "lam", nonnegative=True)
    seed = validate.seed(seed)
    if backend not in (None, "local", "dask"):
        raise DataError(f"backend must be None, 'local' or 'dask', got {backend!r}")
    chunk_rows = validate.integer(CHUNK_ROWS if chunk_rows is None else chunk_rows, "chunk_rows", minimum=1)
    n_blocks = validate.integer(n_blocks, "n_blocks", minimum=1)
    if backend == "dask" or client is not None:
        from .distributed import require_dask

        require_dask()
    if solver not in (None, "linear", "gradient"):
        raise DataError(f"solver must be None, 'linear' or 'gradient', got {solver!r}")
    n_starts = validate.integer(n_starts, "n_starts", minimum=1)
    cm = compile_model(model, out_dir)
    gradient = solver == "gradient" or (solver is None and not cm.is_affine)
    start = starting_point(model, cm, theta0, gradient)
    source = open_source(X, model, "X")
    try:
        use_dask = backend == "dask" or (backend is None and (source.kind == "dask" or client is not None))
        if dlogp_dt is not None and (use_dask or source.kind != "array"):
            raise DataError("dlogp_dt= needs X in memory (an array or DataFrame), not a stream, file "
                            "or dask array")
        head = source.head(BANDWIDTH_ROWS)
        if head.shape[0] < 2:
            raise DataError(f"X: {head.shape[0]} sample(s); at least 2 are needed")
        # reliability checks: X in memory as a whole; a streamed X on its first rows here, then
        # chunk by chunk as it is read (data.accumulate: feature range, D(x), spread)
        if source.kind == "array":
            validate.distinct_samples(source.array)
            validate.diffusion_psd(model, source.array, "X")
        else:
            validate.diffusion_psd(model, head, "X")
            more = head.shape[0] >= BANDWIDTH_ROWS and source.n_rows != head.shape[0]
            if not more or isinstance(bandwidth, str):  # (the median bandwidth comes from the head)
                validate.distinct_samples(head, first=more)
            elif use_dask and not (head != head[:1]).any():  # the workers do not tell: look here
                if not rows_differ(source, head[0], int(chunk_rows)):
                    validate.same_point(source.n_rows, head[0])
        if isinstance(bandwidth, str):
            if bandwidth != "median":
                raise DataError(f"bandwidth must be 'median' or a positive number, got {bandwidth!r}")
            ell = median_lengthscale(head, seed=seed)
            if not np.isfinite(ell):
                raise DataError("X: the median pairwise distance overflows (values too large for "
                                "double precision); rescale the state variables")
        else:
            ell = validate.number(bandwidth, "bandwidth", positive=True)
        del head
        feats = draw_features(model.d, int(n_features), ell, seed=seed)
        if source.kind == "array":  # streamed chunks are checked as they are read (data.accumulate)
            validate.feature_arguments(source.array, feats)
        show = progress_enabled(progress, streamed=source.streamed or use_dask)
        with progress_bar(show, total=source.n_rows, desc=f"fit_global {model.name}") as bar:
            if use_dask:
                from .distributed import assemble_dask

                A, b, A_blocks, b_blocks, counts = assemble_dask(cm, source, feats, n_blocks, int(chunk_rows),
                                                                 client=client, bar=bar)
            elif gradient:
                if source.kind != "array" or dlogp_dt is not None:
                    raise DataError("the gradient route (non-affine model) needs X in memory (an "
                                    "array or DataFrame), without dlogp_dt=")
                from .nonaffine import GlobalProblem, fit_gradient

                prob = GlobalProblem(cm, source.array, feats, block_edges(source.n_rows, n_blocks))
                theta, ginfo = fit_gradient(prob, lam, start, projection=projection,
                                            n_starts=n_starts, seed=seed)
                A, b, A_blocks, b_blocks, counts = prob.linearisation(theta)
                bar.update(source.n_rows)
            elif source.kind == "array":
                edges = block_edges(source.n_rows, n_blocks)
                g = _dlogp_per_sample(dlogp_dt, source.array)
                A, b, A_blocks, b_blocks, counts = assemble_array(cm, source.array, edges, feats, g)
                bar.update(source.n_rows)
            else:
                A, b, A_blocks, b_blocks, counts = assemble_stream(cm, source, feats, n_blocks,
                                                                   int(chunk_rows), bar=bar)
    finally:
        source.close()
    N = int(counts.sum())
    if N < 2:
        raise DataError(f"X: {N} sample(s); at least 2 are needed")
    validate.system_scale(A, b, "global")
    if not gradient:
        theta = solve_tikhonov(A, b, lam)
    report = analyse(A, b, theta, lam, model.param_names, A_blocks, b_blocks, counts)
    info = {"m": int(n_features), "bandwidth": round(ell, 6), "lam": lam, "seed": seed}
    if dlogp_dt is not None:
        info["dlogp_dt"] = "given"
    if gradient:
        info["solver"] = "gradient"
        info["nfev"] = ginfo["nfev"]
        if ginfo["projected"]:
            info["projected"] = ",".join(ginfo["projected"])
    if source.streamed or use_dask:
        info["input"] = source.kind if (source.kind == "dask" or not use_dask) else f"{source.kind} on dask"
    return FitResult(model, theta, A, b, report, "global", N, info)
