"""The result of a fit: :class:`FitResult` (estimate, system, report; summary, tables, JSON)."""

from __future__ import annotations

import itertools

import numpy as np

from .. import arguments
from ..errors import DataError, DynosedError
from ..solve.report import analyse

__all__ = ["FitResult", "plain", "finite_or_none", "gradient_info", "report_on", "significant"]


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
        Route settings (bandwidth, number of features, λ, seed ...); the gradient route adds
        ``nfev``, ``converged``, ``status`` (``least_squares``) and, when it did not converge,
        ``message``.
    param_names : list of str
        Names of the entries of ``theta``: the model's parameters, or for a design with
        ``env_params`` one entry per environment (``k[A]``, ``k[B]``).
    design : DesignInfo or None
        A fit over several environments or time courses
        (:class:`dynosed_sym.routes.designs.DesignInfo`): environments, inputs, per-environment
        residuals, the quadrature check of time courses.
    converged : bool
        False when the gradient search stopped before meeting its tolerances (True for the
        linear solve).
    lengthscale : float or None
        The global route's kernel length scale ℓ, exact (``info["bandwidth"]`` is rounded):
        ``Features(bandwidth=fit.lengthscale)`` reproduces the fit; None on the local route.
    smoothing_bias : (n,) array or None
        A local fit on estimated scores: the kernel's estimated smoothing bias per parameter
        (in ``report.bias_sd`` and the intervals); None where it was not estimated.
    """

    def __init__(self, model, theta, A, b, report, route, n_samples, info, names=None, design=None):
        self.model = model
        self.theta = np.asarray(theta, dtype=float)
        self.A, self.b = A, b
        self.report = report
        self.route = route
        self.n_samples = int(n_samples)
        self.info = dict(info)
        self.param_names = list(model.param_names if names is None else names)
        self.design = design
        self.lengthscale = None
        self.smoothing_bias = None
        self._smoothing_companions = None  # (a local fit's companion rows, for a design)

    @property
    def converged(self) -> bool:
        """False when the iterative search for θ̂ stopped unconverged (``info["message"]``)."""
        return bool(self.info.get("converged", True))

    @property
    def params(self) -> dict:
        return dict(zip(self.param_names, self.theta.tolist()))

    def _truth(self, truth):
        if truth is None:
            return None
        if self.design is not None:
            return self.design.theta_vector(truth, "truth")
        return self.model.theta_vector(truth, "truth")

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
            Student-t intervals from the sandwich covariance (with the resolved estimator: the
            profile-Fieller intervals of ``report.ci``, which include ``bias_sd`` and are the
            whole line where the data do not determine the curvature), or
            block-bootstrap percentiles (computed with 200 replicates if :meth:`bootstrap` was
            not called).
        """
        rep = self.report
        level = rep.ci_level if level is None else arguments.level(level)
        if method == "sandwich":
            if rep.std_errors is None:
                raise DynosedError("this fit has no noise blocks, hence no standard errors")
            if level == rep.ci_level and rep.ci is not None:
                return rep.ci.copy()
            return rep.intervals(self.theta, level)
        if method == "bootstrap":
            res = rep.bootstrap_result
            if res is None or res.level != level:
                res = rep.bootstrap(level=level)
            return res.ci
        hint = (
            " (the 'sandwich' intervals of the resolved estimator are the profile-Fieller ones)"
            if method == "profile"
            else ""
        )
        raise DataError(  # (a ValueError: it was the bare DynosedError)
            f"conf_int: method must be 'sandwich' or 'bootstrap', got {method!r}{hint}"
        )

    def bootstrap(self, n_boot=200, seed=0, level=None):
        """Block bootstrap reusing the per-block partial sums (no new pass over the data).

        Returns the :class:`~dynosed_sym.solve.uncertainty.BootstrapResult`; ``summary()`` then
        shows its standard errors and percentile intervals beside the sandwich ones.

        ``n_boot`` (at least 2) is refused, before anything is allocated, when its resamples
        would not fit in memory (:meth:`~dynosed_sym.solve.report.Report.bootstrap`).
        """
        return self.report.bootstrap(n_boot=n_boot, seed=seed, level=level)  # (checks them)

    def summary(self, truth=None, bootstrap=None) -> str:
        """A readable table: estimate, standard error, bias standard deviation, confidence
        interval, loading on unresolved directions, freeness, identifiability (yes, no, or only in
        combination), then rank, the estimable combinations, consistency and the
        misspecification test.

        Parameters
        ----------
        truth : array or dict, optional
            True values, shown beside the estimates when given.
        bootstrap : bool, optional
            Show block-bootstrap standard errors and intervals (computed if needed when True;
            shown when already computed if None).
        """
        rep = self.report
        names = self.param_names
        tv = self._truth(truth)
        free = set(rep.free_params)
        if bootstrap is not None:  # (5, meant as a count of replicates, was read as True)
            bootstrap = arguments.flag(bootstrap, "summary: bootstrap")
        if bootstrap and rep.bootstrap_result is None and rep._blocks is not None:
            rep.bootstrap()
        boot = rep.bootstrap_result if bootstrap is not False else None
        has_se = rep.std_errors is not None
        honest = has_se and rep.loading is not None
        # the loading and bias.sd columns only when some direction is unresolved (else all 0)
        columns = honest and bool(
            np.any(np.asarray(rep.loading) > 0)
            or (rep.bias_sd is not None and np.any(np.asarray(rep.bias_sd) > 0))
        )
        widened = columns and rep.estimator == "resolved"
        pct = f"{100 * rep.ci_level:g}% CI"
        w = max(9, max(len(nm) for nm in names))
        head = f"{'parameter':<{w}}  {'estimate':>12}" + (
            f"  {'truth':>10}" if tv is not None else ""
        )
        if has_se:
            head += f"  {'std.err':>9}" + (f"  {'bias.sd':>9}" if widened else "") + f"  {pct:^23}"
        if columns:
            head += f"  {'loading':>7}"
        if boot is not None:
            # its own level: conf_int(0.8, method="bootstrap") stores an 80 % result
            head += f"  {'boot.se':>9}  {f'bootstrap {100 * boot.level:g}% CI':^23}"
        head += f"  {'freeness':>10}  {'normalised':>10}  identifiable"
        lines = [
            f"{self.model.name}: {self.route} route, N = {self.n_samples}, "
            + ", ".join(
                f"{k} = {v}"
                for k, v in self.info.items()
                if k not in ("message", "timings", "bandwidth_search")
            )
        ]
        if not self.converged:
            lines.append(
                f"NOT CONVERGED: {self.info.get('message', '')} — θ̂ is where the search "
                "stopped, not an optimum"
            )
        lines += [head, "-" * len(head)]

        def interval(lo, hi):
            if not (np.isfinite(lo) and np.isfinite(hi)):
                return f"{'(−∞, ∞)':^23}"
            return f"[{lo:>10.4g}, {hi:>10.4g}]"

        for k, nm in enumerate(names):
            row = f"{nm:<{w}}  {self.theta[k]:>12.5g}"
            if tv is not None:
                row += f"  {tv[k]:>10.4g}"
            if has_se:
                row += f"  {rep.std_errors[k]:>9.3g}"
                row += (
                    (f"  {rep.bias_sd[k]:>9.3g}" if widened else "") + "  " + interval(*rep.ci[k])
                )
            if columns:
                row += f"  {rep.loading[k]:>7.3f}"
            if boot is not None:
                row += f"  {boot.se[k]:>9.3g}  " + interval(*boot.ci[k])
            row += f"  {rep.freeness[k]:>10.3g}  {rep.freeness_normalised[k]:>10.3g}  "
            if honest and rep.strength is not None and rep.status[k] != "only in combination":
                row += rep.strength[k]
            else:
                row += (
                    _IDENTIFIABLE.get(rep.status[k])
                    if honest
                    else "not judged"
                    if rep.singular_noise is None
                    else ("no" if nm in free else "yes")
                )
            lines.append(row)
        if has_se:
            groups = f" in {rep.n_groups} independent groups" if rep.n_groups > 1 else ""
            lines.append(
                f"std.err: sandwich covariance from {rep.n_blocks} data blocks{groups}; intervals "
                f"Student t with {rep.dof} d.o.f."
                + (
                    ", profile-Fieller (infinite when the data do not determine the curvature)"
                    if rep.fieller is not None
                    else " (infinite when not identifiable)"
                )
                + (
                    f"; bootstrap: {boot.thetas.shape[0]} block resamples, percentile intervals"
                    if boot is not None
                    else ""
                )
            )
        if honest:
            lines.extend(_resolution_notes(rep, widened))
        lines.append("")
        lines.append(str(rep))
        if self.design is not None:
            lines.extend(self.design.summary_lines())
        return "\n".join(lines)

    # ------------------------------------------------------------------ results out
    def _param_columns(self, truth=None):
        """{column: (n,) values} of the per-parameter table (shared by to_dict and to_dataframe)."""
        rep = self.report
        n = len(self.param_names)
        free = set(rep.free_params)
        cols = {"estimate": self.theta.copy()}
        if truth is not None:
            cols["truth"] = self._truth(truth)
        nan = np.full(n, np.nan)
        ci = rep.ci if rep.ci is not None else np.column_stack([nan, nan])
        cols["std_error"] = rep.std_errors.copy() if rep.std_errors is not None else nan.copy()
        cols["ci_low"], cols["ci_high"] = ci[:, 0].copy(), ci[:, 1].copy()
        cols["freeness"] = np.asarray(rep.freeness, dtype=float).copy()
        cols["freeness_normalised"] = np.asarray(rep.freeness_normalised, dtype=float).copy()
        whole = np.zeros(n, bool) if rep.whole_line is None else np.asarray(rep.whole_line, bool)
        cols["identifiable"] = np.array([nm not in free for nm in self.param_names]) & ~whole
        honest = rep.loading is not None
        cols["loading"] = np.asarray(rep.loading, dtype=float).copy() if honest else nan.copy()
        cols["bias_sd"] = np.asarray(rep.bias_sd, dtype=float).copy() if honest else nan.copy()
        cols["status"] = np.array(rep.status if honest else ["" for _ in range(n)], dtype=object)
        cols["combination"] = np.array(rep.combinations if honest else [None] * n, dtype=object)
        c_ci = rep.combination_ci if honest else np.column_stack([nan, nan])
        cols["combination_estimate"] = (
            np.asarray(rep.combination_estimate, dtype=float).copy() if honest else nan.copy()
        )
        cols["combination_low"], cols["combination_high"] = c_ci[:, 0].copy(), c_ci[:, 1].copy()
        return cols

    def to_dataframe(self, truth=None):
        """One row per parameter (index: parameter names).

        Columns: ``estimate`` (``truth`` when given), ``std_error``, ``ci_low``, ``ci_high`` (at
        ``report.ci_level``; NaN without noise blocks, ±inf when not identifiable; with the
        resolved estimator they include ``bias_sd``), ``freeness`` diag(H_λ⁻¹),
        ``freeness_normalised`` λ·diag(H_λ⁻¹), ``identifiable`` (bool), ``loading`` (on the
        unresolved directions), ``bias_sd`` (τ·loading), ``status`` ("identified", "only in
        combination", "not identifiable"), ``combination`` (the estimable combination of a
        parameter determined only in combination, a
        :class:`~dynosed_sym.solve.combinations.Combination`, else None) with
        ``combination_estimate``,
        ``combination_low``, ``combination_high``; ``df.attrs["converged"]`` is
        :attr:`converged`.  Needs pandas.
        """
        try:
            import pandas as pd
        except ImportError:
            raise DynosedError("to_dataframe() needs pandas: pip install pandas") from None
        df = pd.DataFrame(
            self._param_columns(truth), index=pd.Index(self.param_names, name="parameter")
        )
        df.attrs["converged"] = self.converged
        return df

    def to_dict(self, truth=None) -> dict:
        """Everything needed to report the fit, as plain Python types (JSON-ready except ±inf).

        Keys: ``model``, ``route``, ``n_samples``, ``converged``, ``settings`` (the route's
        settings),
        ``parameters``
        (a list of per-parameter records as in :meth:`to_dataframe`, with ``name``; the
        combination as its text plus ``combination_coefficients``) and ``report``
        (rank, n_params, unique, consistent, verdict — "consistent", "INCONSISTENT",
        "undetermined" or None —, residual_norm, residual_ratio, p_value — an upper
        bound when p_value_bound —, p_value_converged, p_value_message, misspec_open_scale — the
        rejected test profiled along an open scale as well, "undetermined" when it does not
        reject, or None —, misspec_unresolved — the rejected test profiled along every
        direction, or None —, misspec_smoothing — on the local route, the kernel's smoothing
        bias over the standard errors where it made a rejection "undetermined", or None —,
        misspec_attenuated — why an estimate too weak for the data's spread made it so, or None —,
        misspec_profiled — the test taken along the resolved directions where it is smallest —,
        interval_scale — the Birge ratio by which every interval is widened about its estimate
        —, ci_level, lam,
        singular_values, null_space (texts) with null_space_coefficients, free_params, notes,
        statistic, estimator, prior_scale, prior_scale_method); for a design also ``design``
        (environments with their inputs, sizes and times, per-environment residuals, the
        quadrature check).
        """
        cols = self._param_columns(truth)
        params = []
        for k, nm in enumerate(self.param_names):
            rec = {"name": nm}
            for key, vals in cols.items():
                if key == "identifiable":
                    rec[key] = bool(vals[k])
                elif key == "status":
                    rec[key] = vals[k]
                elif key == "combination":
                    rec[key] = None if vals[k] is None else str(vals[k])
                    rec["combination_coefficients"] = (
                        None if vals[k] is None else list(vals[k].coefficients)
                    )
                else:
                    rec[key] = float(vals[k])
            params.append(rec)
        rep = self.report
        out = {
            "model": self.model.name,
            "route": self.route,
            "n_samples": self.n_samples,
            "converged": self.converged,
            "settings": plain(self.info),
            "parameters": params,
            "report": {
                "rank": int(rep.rank),
                "n_params": int(rep.n_params),
                "unique": bool(rep.unique),
                "consistent": None if rep.consistent is None else bool(rep.consistent),
                "verdict": rep.verdict,
                "residual_norm": float(rep.residual_norm),
                "residual_ratio": None if rep.residual_ratio is None else float(rep.residual_ratio),
                "p_value": None if rep.p_value is None else float(rep.p_value),
                "p_value_bound": bool(rep.p_value_bound),
                "p_value_converged": bool(rep.p_value_converged),
                "p_value_message": rep.p_value_message,
                "misspec_open_scale": _open_scale_test(rep),
                "misspec_unresolved": _unresolved_test(rep),
                "misspec_smoothing": rep.misspec_smoothing,
                "misspec_attenuated": rep.misspec_attenuated,
                "misspec_profiled": bool(rep.misspec_profiled),
                "interval_scale": float(rep.interval_scale),
                "ci_level": float(rep.ci_level),
                "lam": float(rep.lam),
                "singular_values": [float(v) for v in rep.singular_values],
                "null_space": [str(c) for c in rep.null_space],
                "null_space_coefficients": [list(c.coefficients) for c in rep.null_space],
                "free_params": list(rep.free_params),
                "notes": list(rep.notes),
                "statistic": rep.statistic,
                "estimator": rep.estimator,
                "prior_scale": plain(rep.prior_scale),
                "prior_scale_method": rep.prior_scale_method,
            },
        }
        if self.design is not None:
            out["design"] = plain(self.design.to_dict())
        return out

    def to_json(self, path=None, truth=None, indent=2) -> str:
        """:meth:`to_dict` as strict JSON (non-finite numbers become ``null``); written to ``path``
        when given.  Returns the JSON text."""
        import json

        if path is not None:
            path = arguments.file_path(path, "to_json: path")
        _check_indent(indent)
        text = json.dumps(finite_or_none(self.to_dict(truth)), indent=indent, allow_nan=False)
        if path is not None:
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")
            except OSError as exc:  # (a missing folder was a bare FileNotFoundError)
                shown = f"to_json: cannot write path={str(path)!r}"
                raise DataError(f"{shown}: {exc.strerror}") from None
        return text

    def __repr__(self):
        vals = ", ".join(f"{k}={v:.4g}" for k, v in itertools.islice(self.params.items(), 6))
        n = len(self.param_names)
        more = ", ..." if n > 6 else ""
        flag = "" if self.converged else ", NOT CONVERGED"
        return f"FitResult({self.route}, {vals}{more}, rank={self.report.rank}/{n}{flag})"


_IDENTIFIABLE = {
    "identified": "yes",
    "only in combination": "only in combination",
    "not identifiable": "no",
}


def _resolution_notes(rep, widened):
    """Footnote lines of the summary on loadings, bias.sd and τ."""
    if not np.any(np.asarray(rep.loading) > 0):
        out = [
            "every direction is resolved above its noise: no parameter loads on an unresolved one"
        ]
        if rep.strength is not None and "no (kernel)" in rep.strength:
            out.append(
                "identifiable: no (kernel): the local fit's kernel smoothing may decide it (the "
                "kernel smoothing note): no interval is finite"
            )
        return out
    out = [
        "loading: norm of the parameter's projection on the unresolved directions "
        "(≥ 0.5: not identifiable)"
    ]
    if not widened:
        out.append(
            f"{rep.estimator} estimator: its intervals do not include the regularisation bias; "
            "estimator='resolved' gives intervals that do"
        )
        return out
    if rep.prior_scale_method is None:
        out.append("bias.sd: not included (prior_scale=None): intervals are variance only")
        return out
    tau = rep.prior_scale
    how = (
        "maximum-likelihood scale of the identified estimates"
        if rep.prior_scale_method == "ml"
        else "given prior_scale"
    )
    tau_text = f"{tau:.3g}" if np.ndim(tau) == 0 else "per parameter"
    out.append(
        "bias.sd: what the directions the data cannot separate do to the estimate — their bias "
        f"(τ·loading) and the noise their columns carry (in proportion to τ), τ = {tau_text} "
        f"({how}; at network size, for a parameter on the whole line, the bias alone: a lower "
        "bound); intervals: the values the block moments do not reject at the level, with "
        "std.err² + bias.sd² as their variance (profile-Fieller)"
    )
    if rep.strength is not None:
        out.append(
            "identifiable: yes ±p% (interval half-width against |estimate|); no (≥k× N): at least "
            "k times the data would resolve the directions it loads on, no (≈a–b× N): between a "
            "and b times (the range the noise of their curvature allows: no upper end while a "
            "curvature of 0 is not excluded; ds.check_identifiability with a Study plans N); "
            "no (flat): no curvature seen along them at this N; no (open profile): the loss's "
            "profile flattens on one side (drift not affine in θ); no (kernel): a local fit "
            "whose kernel smoothing may decide it (its note)"
        )
    return out


def _check_indent(indent):
    """DataError unless ``indent`` is None, a count of spaces or a whitespace string: json.dumps
    puts any string before every line (indent="x" wrote a file no JSON reader reads) and fails
    on a float with "can't multiply sequence by non-int"."""
    if indent is None or (isinstance(indent, str) and not indent.strip()):
        return
    if isinstance(indent, (int, np.integer)) and not isinstance(indent, bool) and indent >= 0:
        return
    raise DataError(
        "to_json: indent must be None, a number of spaces (an integer ≥ 0) or a string of "
        f"whitespace (e.g. '\\t'), got {type(indent).__name__} {indent!r}: it is written before "
        "every line of the JSON text"
    )


def significant(value):
    """``value`` for the info record: rounded to 6 decimals, or below 0.1 to 6 significant
    digits (a kernel width or temperature of data × 1e-10, ℓ ≈ 1e-10, read 0.0)."""
    value = float(value)
    return round(value, 6) if abs(value) >= 0.1 else float(f"{value:.6g}")


def plain(obj):
    """Numpy scalars/arrays and tuples inside ``obj`` → plain Python (for JSON); others → str."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def finite_or_none(obj):
    """Replace NaN and ±inf floats by None, recursively (strict JSON has no such numbers)."""
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_or_none(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def gradient_info(ginfo, gn=None):
    """The ``info`` entries of a fit by the gradient solver: its search (``ginfo``) and, when the
    corrected Gauss–Newton iteration followed it (``gn``), that too.  ``converged`` is False when
    either stopped unconverged, and ``message`` says which."""
    messages = [] if ginfo["converged"] else [ginfo["message"]]
    if gn is not None and not gn["converged"]:
        messages.append(gn["message"])
    info = {"solver": "gradient", "nfev": ginfo["nfev"], "converged": not messages}
    info["status"] = ginfo["status"]
    if messages:
        info["message"] = "; ".join(messages)
    if ginfo["projected"]:
        info["projected"] = ",".join(ginfo["projected"])
    if gn is not None:
        info["gn_steps"], info["gn_converged"] = gn["steps"], gn["converged"]
        info["gn_stop"] = gn["stop"]  # why it stopped (solve.fixedpoint.anderson_fixed_point)
        if gn.get("tempered"):  # directions along which the move was tempered (solve.temper)
            info["gn_tempered"] = gn["tempered"]
    return info


def _open_scale_test(rep):
    """The report's ``misspec_open_scale`` as plain types (None when there is none)."""
    if rep.misspec_open_scale is None:
        return None
    stat, p, bound = rep.misspec_open_scale
    return {"stat": float(stat), "p_value": float(p), "p_value_bound": bool(bound)}


def _unresolved_test(rep):
    """The report's ``misspec_unresolved`` as plain types (None when there is none)."""
    test = rep.misspec_unresolved
    if test is None:
        return None
    return {
        "stat": float(test.stat),
        "p_value": float(test.p_value),
        "p_value_bound": bool(test.p_value_bound),
        "theta": [float(v) for v in test.theta],
        "noise_ratio": float(test.noise_ratio),
        "outside": [rep.param_names[j] for j in test.outside],
        "undetermined": bool(test.undetermined),
    }


def report_on(system, theta, lam, names, **options):
    """The identifiability report of θ̂ on a block system ``(A, b, A_blocks, b_blocks, counts)``
    passed whole (:func:`dynosed_sym.solve.report.analyse`; ``options``: its keywords)."""
    A, b, A_blocks, b_blocks, counts = system
    return analyse(A, b, theta, lam, names, A_blocks, b_blocks, counts, **options)
