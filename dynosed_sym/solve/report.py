"""The identifiability report of one linear system: rank against noise, unresolved combinations,
freeness and consistency.

Noise model.  A and b are means of per-sample terms, so their sampling noise is estimated from
per-block means (``A_blocks``): the standard error of ``A v`` for any direction v is
``sqrt(Σ_b w_b ‖(A_b − A) v‖² / (B − 1))`` with weights ``w_b = N_b / N`` (the usual standard
error of a weighted mean).

Rank.  A right singular direction v_i is *resolved* when its singular value exceeds
``rank_threshold`` times the standard error of ``A v_i`` (a direction the model cannot see has σ_i
of the order of that error, shrinking like N^(-1/2)), and also exceeds the floating-point floor
``eps · max(m, n) · σ_max``.

Consistency.  The residual ``r = A θ̂ − b`` is compared with its own standard error estimated the
same way; a ratio well above one means no θ satisfies the Fokker–Planck constraints (misspecified).

Freeness.  ``diag(H_λ⁻¹)`` with ``H_λ = AᵀA + λI``; normalised freeness is ``λ · diag(H_λ⁻¹)`` in
(0, 1]: 1 means the data do not constrain the parameter at all (only the regulariser does).

Uncertainty and misspecification (:mod:`.uncertainty`, :mod:`.misspecification`).  From the same
per-block means: the sandwich covariance of θ̂, standard errors and Student-t confidence intervals
with B − 1 degrees of freedom (infinite for ``free_params``), and a calibrated p-value for "some θ
satisfies the Fokker–Planck constraints" (``p_value``: roughly uniform under a correct model,
small when no θ fits).  The ``consistent`` flag keeps its residual-ratio rule; ``p_value`` is the
calibrated statistic behind it.  A block bootstrap is available on demand
(:meth:`IdentifiabilityReport.bootstrap`, its arguments checked).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from .. import arguments
from ..assembly.memory import check_bootstrap_memory
from ..errors import DynosedError
from ..kernels.blas import single_blas
from .blockops import nbytes
from .combinations import Combinations
from .directions import RANK_THRESHOLD, col_se, singular_directions
from .flat import whole_line_notes
from .intervals import (
    COMBINATION,
    FREE_PROJECTION,
    check_prior_scale,
    open_intervals,
    sandwich_resolution,
    weak_resolution,
    widen_about,
    widened,
)
from .misspecification import TailProbability, birge_ratio
from .profile import hull
from .uncertainty import analyse_uncertainty, block_bootstrap, t_quantile
from .ustat import solve_system
from .verdicts import (
    open_scale_line,
    profiled_p,
    rejects_strongly,
    settle_verdict,
    unresolved_line,
)
from .weak import fieller

__all__ = [
    "IdentifiabilityReport",
    "analyse",
    "RANK_THRESHOLD",
    "CONSISTENCY_THRESHOLD",
    "FREE_PROJECTION",
    "col_se",
]


CONSISTENCY_THRESHOLD = 3.0
#: With a misspecification test, the fit is called consistent when its p-value is at least this.
CONSISTENCY_P = 0.01


KEEP_BLOCKS_BYTES = 256 * 2**20  # per-block means kept for the bootstrap up to this size


@dataclass
class IdentifiabilityReport:
    """Rank, null space, consistency and freeness of one linear system A θ = b.

    Attributes
    ----------
    n_params : int
    rank : int
        Number of singular directions resolved above the sampling noise.
    unique : bool
        ``rank == n_params`` with a sampling-noise estimate (False without one: identifiability
        is not judged from floating-point precision alone).
    consistent : bool or None
        The misspecification test's p-value is at least ``CONSISTENCY_P`` (without the test:
        residual within ``CONSISTENCY_THRESHOLD`` times its noise level); None when the test
        cannot tell (``verdict`` "undetermined") or there is no noise estimate.
    singular_values : (n,) array
    singular_noise : (n,) array or None
        Standard error of ``A v_i`` for each right singular vector v_i.
    null_space : sequence of Combination
        Unresolved directions as named parameter combinations
        (:class:`~dynosed_sym.solve.combinations.Combination`; ``str`` gives the text), made
        when read (:class:`~dynosed_sym.solve.combinations.Combinations`: indexing, iteration,
        ``len``; equal to the list of the same combinations).
    null_vectors : (n, n - rank) array
    free_params : list of str
        Parameters not pinned down: the projection of the parameter's unit vector onto the
        unresolved subspace has norm ≥ ``FREE_PROJECTION`` (0.5, i.e. at least a quarter of
        its variance direction is unresolved).
    freeness : (n,) array
        ``diag(H_λ⁻¹)``.
    freeness_normalised : (n,) array
        ``λ · diag(H_λ⁻¹)`` in (0, 1] (for λ = 0: 1 for an exactly unconstrained
        parameter, else 0).
    residual_norm, residual_noise, residual_ratio : float
        Where the misspecification test is taken: the V-statistic Tikhonov solution
        (``Estimate.theta_tikhonov``; θ̂ itself for the ridge), ``residual_ratio`` being the
        test's √T (where the test could not run: at the resolved estimate, ``residual_noise``
        None without noise blocks).
    lam : float
    std_errors : (n,) array or None
        Sandwich standard errors of θ̂ (inf for ``free_params``); None without noise blocks.
    ci : (n, 2) array or None
        Confidence intervals at ``ci_level`` (Student t, ``n_blocks − 1`` degrees of freedom).
    ci_level : float
    covariance : (n, n) array or None
        Sandwich covariance of θ̂.
    p_value : float or None
        Misspecification test: P(T > t) for the observed ``t = misspec_stat`` under a correct
        model (small ⇒ no θ fits); an upper bound when ``p_value_bound``.
    p_value_bound : bool
        True when the p-value is below the accuracy of its integral (or 1e-12): ``p_value`` is
        then an upper bound, shown as ``p < 1e-12``.
    p_value_converged : bool
        False when the Imhof integral behind the p-value did not converge (``p_value_message``
        says why; a ``ConvergenceWarning`` was issued).
    p_value_message : str
    misspec_stat : float or None
        ``‖r‖² / tr Ŝ_r``, ≈ 1 under a correct model.
    misspec_dim : float or None
        Effective dimension of the residual noise (F degrees of freedom).
    misspec_profiled : bool
        True when the test (and the residual ratio) was taken where its profile along the
        resolved directions is smallest, not at the Tikhonov solution
        (:func:`~dynosed_sym.solve.misspecification.verdict_test`).
    misspec_at : (n,) array or None
        The θ where the test was taken (``residual_norm`` is ``‖A·misspec_at − b‖``).
    misspec_open_scale : tuple (stat, p_value, bound) or None
        A rejected test profiled along the open overall scale as well
        (:func:`~dynosed_sym.solve.misspecification.profile_along`): its infimum over the
        components along it.  When it does not reject, the verdict is "undetermined"
        (:attr:`verdict`; docs/design-statistics.md §7).
    misspec_unresolved : :class:`~dynosed_sym.solve.verdicts.UnresolvedTest` or None
        A rejected test profiled along every direction (some unresolved); with ``.undetermined``
        the verdict is "undetermined" (:func:`~dynosed_sym.solve.verdicts.profile_unresolved`).
    misspec_smoothing : float or None
        Local route: a rejection with the kernel's smoothing bias this many (≥ 1) times the
        standard errors; the test cannot tell the kernel from the model: the verdict is
        "undetermined", every interval open (docs/design-statistics.md §10).
    misspec_attenuated : str or None
        Why an estimate too weak for the data's spread made the verdict "undetermined" (§7).
    interval_scale : float
        The Birge ratio ``S = max(1, √misspec_stat)`` (the residual ratio, at least 1): every
        interval is widened S-fold about its estimate (:func:`.misspecification.birge_ratio`);
        ``std_errors`` are the sampling part alone.  1 without a misspecification test.
    n_blocks : int
        Data blocks behind the noise estimates (a design: pseudo-blocks over all groups).
    dof : int
        Degrees of freedom of the noise estimate: ``n_blocks − 1``, or ``Σ_g (B_g − 1)`` over
        the independent groups of a design.
    n_groups : int
        Independent groups of blocks (1, or the snapshots of a design).
    bootstrap_result : BootstrapResult or None
        Set by :meth:`bootstrap`.
    statistic, estimator : str
        How θ̂ was computed (:mod:`.ustat`): ``"u"``/``"v"`` and ``"resolved"``/``"ridge"``.
    second_order : (n,) array or None
        The bias beyond first order subtracted from θ̂ (U-statistic): the delete-one-block
        jackknife's times its gain, b̂₂ for the rest (:mod:`.jackknife`).
    jackknife : :class:`~dynosed_sym.solve.jackknife.Jackknife` or None
        That jackknife (its bias, standard deviations, the expansion check ρ and the gain).
    loading : (n,) array or None
        Each parameter's loading ρ_j on the unresolved directions (:mod:`.intervals`).
    bias_sd : (n,) array or None
        Standard deviation τρ_j of the resolution bias, included in ``ci``.
    prior_scale : float, (n,) array or None
        τ; ``prior_scale_method`` says how it was chosen ("ml", "given", None).
    status : list of str or None
        Per parameter: "identified", "only in combination" or "not identifiable".
    combinations : list of (Combination or None)
        The estimable combination of each parameter determined only in combination
        (:class:`~dynosed_sym.solve.combinations.Combination` carrying its ``value`` and
        ``interval``), also as the arrays ``combination_estimate`` (n,) and
        ``combination_ci`` (n, 2); None (and
        NaN) when the unresolved components' noise in it is not small beside its own
        (:data:`~dynosed_sym.solve.intervals.COMBINATION_NOISE`).
    resolution : (n, n) array or None
        The resolution matrix Q = V_RV_Rᵀ.
    direction_t : (n,) array or None
        Per singular direction, t_i = κ̂_i/sd(κ̂_i) (:mod:`.directions`); ``resolve_threshold`` the
        value it had to exceed.
    fieller : tuple (c, gamma) or None
        Profile-Fieller coefficients of the resolved estimator's intervals
        (:func:`~dynosed_sym.solve.weak.fieller`; :meth:`intervals` at other levels).
    scale : (n,) bool or None
        The parameters that carry an overall scale the data leave open (whole-line intervals,
        :func:`~dynosed_sym.solve.flat.scale_carriers`).
    whole_line : (n,) bool or None
        The parameters whose interval is the whole line at every level (infinite standard error,
        loading ≥ 0.5, an open scale, or no finite minimiser): the one mask
        :meth:`intervals` reads, set where the intervals are made.
    profile : list of (ProfileTrace or None) or None
        A drift not affine in θ: each parameter's profile of the loss
        (:mod:`~dynosed_sym.solve.profile`); the intervals are the hull of the linearised ones and
        the profile's.
    data_factor : (n,) array or None
        Per parameter, the factor of data that would resolve the directions it loads on
        (:func:`~dynosed_sym.solve.intervals.data_factors`, the point value ``(q/t)²``);
        ``data_factor_range`` (n, 2) the range the noise of t allows, which ``strength`` labels.
    """

    param_names: list
    n_params: int
    rank: int
    unique: bool
    consistent: bool
    singular_values: np.ndarray
    singular_noise: np.ndarray | None
    null_space: Sequence  # of Combination (Combinations: made when read)
    null_vectors: np.ndarray
    free_params: list
    freeness: np.ndarray
    freeness_normalised: np.ndarray
    residual_norm: float
    residual_noise: float | None
    residual_ratio: float | None
    lam: float
    notes: list = field(default_factory=list)
    std_errors: np.ndarray | None = None
    ci: np.ndarray | None = None
    ci_level: float = 0.95
    covariance: np.ndarray | None = None
    p_value: float | None = None
    misspec_stat: float | None = None
    misspec_dim: float | None = None
    misspec_open_scale: tuple | None = None
    misspec_unresolved: object = None
    misspec_smoothing: float | None = None
    misspec_attenuated: str | None = None
    misspec_profiled: bool = False
    misspec_at: np.ndarray | None = None
    interval_scale: float = 1.0
    p_value_bound: bool = False
    p_value_converged: bool = True
    p_value_message: str = ""
    n_blocks: int = 0
    dof: int = 0
    n_groups: int = 1
    bootstrap_result: object = None
    statistic: str = "v"
    estimator: str = "ridge"
    second_order: np.ndarray | None = None
    jackknife: object = None
    loading: np.ndarray | None = None
    bias_sd: np.ndarray | None = None
    prior_scale: object = None
    prior_scale_method: str | None = None
    status: list | None = None
    combinations: list | None = None
    combination_estimate: np.ndarray | None = None
    combination_ci: np.ndarray | None = None
    resolution: np.ndarray | None = None
    direction_t: np.ndarray | None = None
    resolve_threshold: float | None = None
    data_factor: np.ndarray | None = None
    data_factor_range: np.ndarray | None = None
    strength: list | None = None
    fieller: tuple | None = None
    scale: np.ndarray | None = None
    whole_line: np.ndarray | None = None
    profile: list | None = None
    _blocks: tuple | None = field(default=None, repr=False)
    _grouping: object = field(default=None, repr=False)
    _left: object = field(default=None, repr=False)  # left vectors, resolved ones first
    _solve: object = field(default=None, repr=False)

    def bootstrap(self, n_boot=200, seed=0, level=None):
        """Block bootstrap of θ̂ from the kept per-block means
        (:func:`~dynosed_sym.solve.uncertainty.block_bootstrap`).

        The result is stored in ``bootstrap_result`` (and shown by ``FitResult.summary()``).
        Parameters whose interval is the whole line at every level (``whole_line``: not
        identifiable, an open scale, no finite minimiser) keep it: the replicates' spread says
        nothing about a direction the data do not bound.  With a Birge ratio S > 1
        (``interval_scale``) the percentile intervals are widened S-fold about the replicates'
        median, as the other intervals are; ``se`` stays the replicates' spread.

        ``n_boot`` (≥ 2; each resample is a solve) is refused before anything is allocated when
        its resamples would need more than 90 % of the available memory: 8·n_boot·(B + 3n)
        bytes and 4 copies of the kept block means (``assembly.memory.check_bootstrap_memory``).
        """
        n_boot, seed, level = arguments.bootstrap_options(n_boot, seed, level)
        if self._blocks is None:
            raise DynosedError(
                "no per-block means were kept for this report (no noise blocks, or "
                f"more than {KEEP_BLOCKS_BYTES >> 20} MB of them): cannot bootstrap"
            )
        A_blocks, b_blocks, counts = self._blocks
        check_bootstrap_memory(
            n_boot,
            A_blocks.shape[2],
            np.size(counts),
            block_bytes=nbytes(A_blocks) + np.asarray(b_blocks).nbytes,
        )
        self.bootstrap_result = block_bootstrap(
            A_blocks,
            b_blocks,
            counts,
            self.lam,
            n_boot=n_boot,
            seed=seed,
            level=self.ci_level if level is None else level,
            grouping=self._grouping,
            solve=self._solve,
        )
        br = self.bootstrap_result  # the Birge ratio, about the replicates' median
        mid = np.median(br.thetas, axis=0)
        self.bootstrap_result = replace(br, ci=widen_about(mid, br.ci, self.interval_scale))
        if self.whole_line is not None and np.any(self.whole_line):
            ci = self.bootstrap_result.ci.copy()
            ci[np.asarray(self.whole_line, bool)] = [-np.inf, np.inf]
            self.bootstrap_result = replace(self.bootstrap_result, ci=ci)
        return self.bootstrap_result

    def intervals(self, theta, level):
        """Intervals (n, 2) at ``level`` around ``theta``: the profile-Fieller sets of the resolved
        estimator (with the resolution bias), else the sandwich intervals; widened
        ``interval_scale``-fold about ``theta`` (the Birge ratio)."""
        q = t_quantile(level, self.dof)
        se = np.asarray(self.std_errors, dtype=float)
        theta = arguments.parameter_vector(theta, "theta", se.size)
        free = np.isinf(se) if self.whole_line is None else np.asarray(self.whole_line, bool)
        bias = np.zeros_like(se) if self.bias_sd is None else np.asarray(self.bias_sd, float)
        if self.fieller is None:
            half = np.where(free, np.inf, q * np.sqrt(se**2 + bias**2))
            ci = np.column_stack([theta - half, theta + half])
        else:
            a = np.where(np.isinf(se), 0.0, se) ** 2 + bias**2
            ci = fieller(theta, a, *self.fieller, q, free)[0]
        ci = widen_about(theta, ci, self.interval_scale)
        return ci if self.profile is None else hull(ci, self.profile, q)

    def combination_lines(self):
        """Lines naming each parameter determined only in combination, with its interval."""
        if not self.status:
            return []
        pct = f"{100 * self.ci_level:g}%"
        out = []
        for j, st in enumerate(self.status):
            if st == COMBINATION and self.combinations[j] is None:
                out.append(
                    f"  {self.param_names[j]} is determined only in combination with the "
                    "unresolved directions, whose unknown size also sets its noise: no "
                    "combination is stated; its interval includes both"
                )
            elif st == COMBINATION:
                lo, hi = self.combination_ci[j]
                out.append(
                    f"  {self.param_names[j]} is determined only in combination: "
                    f"{self.combinations[j]} = {self.combination_estimate[j]:.4g}, {pct} CI "
                    f"[{lo:.4g}, {hi:.4g}]"
                )
        return out

    @property
    def verdict(self):
        """ "consistent", "INCONSISTENT", "undetermined" (the test rejects at the estimate but
        not along the open scale the data do not bound: docs/design-statistics.md §7) or None
        (no verdict: no noise estimate and no residual ratio)."""
        if self.consistent is not None:
            return "consistent" if self.consistent else "INCONSISTENT"
        rest = getattr(self.misspec_unresolved, "undetermined", False)
        opened = self.misspec_open_scale is not None or self.misspec_smoothing is not None
        return "undetermined" if rest or opened or self.misspec_attenuated else None

    def __str__(self):
        lines = [
            f"rank {self.rank} of {self.n_params} "
            + (
                f"({'identifiable' if self.unique else 'NOT identifiable'})"
                if self.singular_noise is not None or self.unique
                else "against floating-point precision only (identifiability not judged: no "
                "sampling-noise estimate)"
            )
        ]
        for combo in self.null_space:
            lines.append(f"  unresolved combination: {combo}")
        lines.extend(self.combination_lines())
        verdict = {
            "consistent": "(consistent)",
            "INCONSISTENT": "(INCONSISTENT: no θ fits, model misspecified?)",
            "undetermined": "(rejected at the estimate: UNDETERMINED, see below)",
        }.get(self.verdict, "")
        if self.p_value is not None:
            p = TailProbability(self.p_value, bound=self.p_value_bound)
            lines.append(
                f"residual {self.residual_norm:.3g} = {self.residual_ratio:.2f} × its noise level; "
                f"misspecification test{' (profiled)' if self.misspec_profiled else ''}: "
                f"T = {self.misspec_stat:.3g} on {self.misspec_dim:.1f} effective dimensions, "
                f"{p} {verdict}"
            )
            later = self.misspec_smoothing is not None or self.misspec_attenuated is not None
            if self.misspec_open_scale is not None:  # (its verdict before a later one, if any)
                decided = "INCONSISTENT" if later else self.verdict
                line = open_scale_line(self.misspec_open_scale, decided, CONSISTENCY_P, later)
                lines.append(line)
            if self.misspec_unresolved is not None:
                test, names = self.misspec_unresolved, self.param_names
                lines.append(
                    unresolved_line(
                        test, names, CONSISTENCY_P, self.misspec_smoothing, self.misspec_attenuated
                    )
                )
            if self.interval_scale > 1.0:
                lines.append(
                    f"  intervals widened by the Birge ratio S = {self.interval_scale:.3g} "
                    "(the residual beyond its noise level taken as extra noise of the same "
                    "shape; std.err is the sampling part alone)"
                )
            if not self.p_value_converged:
                lines.append(
                    f"  (p-value integral did not converge: {self.p_value_message}; "
                    "the p-value is provisional)"
                )
        elif self.residual_ratio is not None:
            lines.append(
                f"residual {self.residual_norm:.3g} = {self.residual_ratio:.2f} × noise level "
                + verdict
            )
        lines.extend(self.notes)
        return "\n".join(lines)


@single_blas
def analyse(
    A,
    b,
    theta,
    lam,
    names,
    A_blocks=None,
    b_blocks=None,
    counts=None,
    rank_threshold=RANK_THRESHOLD,
    consistency_threshold=CONSISTENCY_THRESHOLD,
    grouping=None,
    *,
    estimate=None,
    prior_scale="ml",
    exact=False,
):
    """Build the :class:`IdentifiabilityReport` of A θ = b at the solution ``theta``.

    ``exact``: A and b carry no sampling noise (exact scores given as arrays): without noise
    blocks the rank is then judged against floating-point precision and may be called
    identifiable; for samples without a noise estimate identifiability is not judged.

    ``grouping`` (:class:`~dynosed_sym.solve.uncertainty.Grouping`): the blocks are the
    pseudo-blocks of a design's independent groups (degrees of freedom, bootstrap).
    ``estimate``: the :class:`~dynosed_sym.solve.ustat.Estimate` behind ``theta`` (its bread
    enters the sandwich, its Tikhonov solution the misspecification test); None: the Tikhonov
    solve.  ``prior_scale``: τ of the honest intervals of the resolved estimator
    (:mod:`.intervals`).
    """
    m, n = A.shape
    if counts is not None:
        counts = np.asarray(counts, dtype=float)
    if estimate is not None and estimate.directions is not None:
        dirs = estimate.directions  # the directions the estimate was computed on
    else:
        dof = None if grouping is None else grouping.dof
        dirs = singular_directions(A, A_blocks, counts, rank_threshold, dof)
    s_full, V, sing_noise, resolved = dirs[:4]
    notes = []
    # the residual, sandwich and intervals describe the resolved estimate (the parameters that
    # are not identifiable may carry other point estimates, :func:`.intervals.fill_free`)
    if estimate is not None and estimate.theta_resolved is not None:
        theta_fit = estimate.theta_resolved
    else:
        theta_fit = theta
    res = A @ theta_fit - b
    res_norm = float(np.linalg.norm(res))
    res_noise = res_ratio = None
    if sing_noise is not None:
        r_blocks = (A_blocks @ theta_fit - b_blocks)[..., None]
        res_noise = float(np.linalg.norm(col_se(r_blocks, res[:, None], counts)))
        res_ratio = res_norm / res_noise if res_noise > 0 else np.inf
    else:
        notes.append(
            "note: too few data blocks to estimate sampling noise; rank judged "
            "against floating-point precision only"
        )
    rank = int(resolved.sum())
    null = V[:, ~resolved]
    null_space = Combinations(null, names)  # each made when read
    free = [names[k] for k in range(n) if np.linalg.norm(null[k]) >= FREE_PROJECTION]
    # diag(H_λ⁻¹) from the same SVD: Σ_i V_ki² / (σ_i² + λ); infinite for an exactly
    # unconstrained parameter when λ = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (V * V) / (s_full * s_full + lam)  # 0/0 (V_ki = 0 on a dead direction) -> 0
    Hinv_diag = np.nan_to_num(terms, nan=0.0, posinf=np.inf).sum(axis=1)
    # None: the noise level could not be estimated (fewer than two data blocks)
    consistent = None if res_ratio is None else bool(res_ratio < consistency_threshold)
    rep = IdentifiabilityReport(
        param_names=list(names),
        n_params=n,
        rank=rank,
        # without a noise estimate nothing can be called identified from the data (N = 3 gave
        # "rank 3 of 3 (identifiable)")
        unique=rank == n and (sing_noise is not None or exact),
        consistent=consistent,
        singular_values=s_full,
        singular_noise=sing_noise,
        null_space=null_space,
        null_vectors=null,
        free_params=free,
        freeness=Hinv_diag,
        freeness_normalised=lam * Hinv_diag if lam > 0 else np.where(np.isinf(Hinv_diag), 1.0, 0.0),
        residual_norm=res_norm,
        residual_noise=res_noise,
        residual_ratio=res_ratio,
        lam=float(lam),
        notes=notes,
    )
    if estimate is not None:
        rep.statistic, rep.estimator = estimate.statistic, estimate.estimator
        rep.second_order, rep.jackknife = estimate.second_order, estimate.jackknife
        notes.extend(estimate.notes)
    rep.direction_t, rep.resolve_threshold = dirs.t, dirs.threshold
    if sing_noise is not None:
        along = None if estimate is None else V[:, resolved]  # the verdict's profile
        rep._left = None if estimate is None else _resolved_first(dirs.left, resolved)
        _attach_uncertainty(
            rep, A, b, theta, lam, A_blocks, b_blocks, counts, grouping, estimate, along
        )
        _attach_resolution(
            rep, theta, (A, b, A_blocks, b_blocks, counts), dirs, estimate, prior_scale
        )
    if estimate is not None:
        estimate.deviations = None  # read by the intervals; B·m·n floats not kept with the fit
        if estimate.no_minimiser:
            _no_minimiser(rep)
    return rep


def _resolved_first(U, resolved):
    """The left singular vectors ``U`` of the directions' SVD (:attr:`.directions.Directions.left`:
    the solve's, or the report's own for an estimator whose solve takes none, the ridge) with the
    resolved directions' first: the misspecification test projects its noise off the first
    ``rank`` of them, which must be the resolved ones even where the resolution rule skips a
    leading direction (a pure noise column can have the largest σ)."""
    resolved = np.asarray(resolved, dtype=bool)
    if U is None or U.shape[1] != resolved.size or resolved.all():
        return U
    order = np.concatenate([np.flatnonzero(resolved), np.flatnonzero(~resolved)])
    return U if np.array_equal(order, np.arange(order.size)) else U[:, order]


def _no_minimiser(rep):
    """A runaway of the corrected Gauss–Newton loop
    (:func:`.gauss_newton.corrected_gauss_newton`): the loss appears to have no finite
    minimiser, so no point is an estimate the data bound (the search's optimum is reported) and
    intervals taken at a linearisation say nothing: every interval is the whole line."""
    open_intervals(rep, "no (no minimiser)")
    if rep.std_errors is not None:
        rep.std_errors = np.full(len(rep.param_names), np.inf)
    rep.notes.append(
        "no finite interval: the corrected loss appears to have no finite minimiser (the "
        "iteration ran off, see the warning above); the estimate is the search's optimum it "
        "started from, and the rank and tests describe the linearisation there only"
    )


def _attach_uncertainty(
    rep, A, b, theta, lam, A_blocks, b_blocks, counts, grouping=None, estimate=None, along=None
):
    """Sandwich SEs, intervals and the misspecification test (:mod:`.uncertainty`)."""
    free_mask = np.array([nm in set(rep.free_params) for nm in rep.param_names])
    if estimate is not None and estimate.theta_resolved is not None:
        theta = estimate.theta_resolved  # see analyse
    try:
        u = analyse_uncertainty(
            A,
            b,
            theta,
            lam,
            A_blocks,
            b_blocks,
            counts,
            free_mask=free_mask,
            level=rep.ci_level,
            rank=rep.rank,
            dof=None if grouping is None else grouping.dof,
            Hinv=None if estimate is None else estimate.bread,
            theta_test=None if estimate is None else estimate.theta_tikhonov,
            U=rep._left,
            along=along,
        )
    except (np.linalg.LinAlgError, DynosedError) as exc:
        rep.notes.append(f"note: no standard errors ({exc})")
        return
    rep.std_errors, rep.ci, rep.covariance = u.se, u.ci, u.covariance
    rep.p_value, rep.misspec_stat, rep.misspec_dim = u.p_value, u.stat, u.effective_dim
    # one verdict: the residual ratio is the test's √T at the point where it is taken
    theta_test = theta if estimate is None else estimate.theta_tikhonov
    rep.misspec_at = u.test_theta
    rep.misspec_profiled = bool(not np.array_equal(u.test_theta, theta_test))
    rep.residual_norm = float(np.linalg.norm(A @ u.test_theta - b))
    rep.residual_ratio = float(np.sqrt(u.stat))
    rep.residual_noise = rep.residual_norm / rep.residual_ratio if u.stat > 0 else 0.0
    rep.consistent = bool(u.p_value >= CONSISTENCY_P)
    rep.interval_scale = birge_ratio(u.stat)
    rep.ci = widen_about(theta, u.ci, rep.interval_scale)  # the sandwich intervals θ̂ ± q·S·SE
    rep.p_value_bound, rep.p_value_converged = u.p_value_bound, u.p_value_converged
    rep.p_value_message = u.p_value_message
    rep.n_blocks = int(np.asarray(counts).size)
    rep.dof = u.dof
    rep.n_groups = 1 if grouping is None else grouping.n_groups
    rep._grouping = grouping
    if nbytes(A_blocks) <= KEEP_BLOCKS_BYTES:  # (a lazy BlockMeans is not made dense here)
        rep._blocks = (A_blocks, b_blocks, np.asarray(counts))
        if estimate is not None and (rep.statistic, rep.estimator) != ("v", "ridge"):
            rep._solve = _bootstrap_solver(rep, estimate)


def _bootstrap_solver(rep, estimate):
    """The estimator of the fit for the block bootstrap (a partial of :func:`_bootstrap_solve`,
    picklable as the report is): the correction recomputed from the drawn blocks; the resolved
    estimator keeps the fit's resolved subspace."""
    subspace = estimate.subspace if estimate.estimator == "resolved" else None
    options = dict(statistic=estimate.statistic, estimator=estimate.estimator, subspace=subspace)
    return partial(_bootstrap_solve, lam=rep.lam, **options)


def _bootstrap_solve(A, b, A_blocks, b_blocks, counts, *, lam, **options):
    return solve_system(A, b, A_blocks, b_blocks, counts, lam, tikhonov=False, **options).theta


def _attach_resolution(rep, theta, system, dirs, estimate, prior_scale):
    """Loadings on unresolved directions, intervals, status, estimable combinations and strength
    (:mod:`.intervals`); the resolved estimator's intervals are the profile-Fieller sets
    (:mod:`.weak`)."""
    if rep.std_errors is None:
        return
    q = t_quantile(rep.ci_level, rep.dof)
    S = rep.interval_scale  # the Birge ratio widens the finished intervals, not their quantile
    if estimate is not None and estimate.fill is not None:
        prior_scale = check_prior_scale(prior_scale, rep.param_names)
        strong = rejects_strongly(rep, system, estimate)
        rescue = profiled_p(rep, system, estimate) if strong else None
        res, se = weak_resolution(
            system, estimate, rep.param_names, q=q, prior_scale=prior_scale, rescue=rescue
        )
        rep.std_errors = np.where(np.isfinite(rep.std_errors), se, rep.std_errors)
        res = widened(res, estimate.theta, S)
        rep.ci = res.ci
    else:  # the sandwich intervals of analyse_uncertainty stay
        res = sandwich_resolution(
            theta,
            rep.std_errors,
            dirs.V,
            dirs.resolved,
            q=q,
            t=dirs.t,
            t_resolve=dirs.threshold,
        )
        res = widened(res, theta, S)  # (rep.ci: the sandwich intervals, widened already)
    rep.loading, rep.bias_sd, rep.resolution = res.loading, res.bias_sd, res.resolution
    rep.prior_scale, rep.prior_scale_method = res.prior_scale, res.prior_scale_method
    rep.status = res.status
    rep.combinations = [
        None if c is None else replace(c, level=rep.ci_level) for c in res.combinations
    ]
    rep.combination_estimate, rep.combination_ci = res.combination_estimate, res.combination_ci
    rep.data_factor, rep.strength, rep.fieller = res.data_factor, res.strength, res.fieller
    rep.data_factor_range = res.data_factor_range
    rep.scale = res.scale
    rep.whole_line = np.isinf(rep.std_errors) | res.whole_line
    rep.notes.extend(whole_line_notes(rep.param_names, res.scale, res.lone, res.lone_directions))
    if estimate is not None:  # undetermined where the rejection may be attenuation
        settle_verdict(rep, system, dirs, estimate, res.open_directions, CONSISTENCY_P)
    if res.prior_scale_converged is False:
        rep.notes.append(
            "WARNING: the maximum-likelihood scale τ of the honest intervals did not converge"
        )
