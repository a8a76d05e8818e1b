"""Is a set of samples a stationary law of the model at θ?  Necessary conditions from the
generator, checked against their sampling noise.

For ``dx = f dt + G dW`` with ``D = ½GGᵀ`` and generator ``Lφ = f·∇φ + D:∇∇φ``, a stationary law
p satisfies ``E_p[Lφ] = 0`` for every test function φ whose boundary terms vanish (a density that
decays at infinity or at the edge of the domain).  Four choices of φ give the checks:

* **Second moments** (φ = (vᵀ(x − μ))², any unit vector v)::

      d/dt Var(vᵀx) = E[2 (vᵀf)(vᵀx̃) + 2 vᵀD v] = 0,        x̃ = x − E[x].

  Itô's formula makes the left side the growth rate of the variance along v *now*, so for chains
  (or data) that are not stationary it measures how fast their spread still changes: no window
  over time is needed.  The drift term and the noise term must balance; the *imbalance*
  ``rate / (E|2 vᵀf vᵀx̃| + 2E[vᵀDv]) ∈ [−1, 1]`` is 0 for a stationary law, near +1 when the noise
  (or an expanding drift) spreads the samples with nothing to hold them.

* **First moments** (φ = x_i, so Lφ = f_i)::

      d/dt E[x_i] = E[f_i] = 0.

  The mean still moving: chains that have not settled although their spread has (chains
  started with the stationary spread about a shifted centre, ``tests/simulation/
  test_stationarity.py``).  Its *imbalance* is the rate over ``E|f_i|``.  The thresholds below
  leave slow mixing between parts of an attractor unflagged when the drift's mean is a small
  share of its size: Lorenz-96 (d = 5, F = 3) 20 time units after starting near its unstable
  fixed point has E[f_i] at 6 standard errors but 8 % of E|f_i| (a fit on those samples is
  called INCONSISTENT by its misspecification test).

* **Divergence** (φ = log p, then integration by parts)::

      E_p[∇·f − ∇·∇·D] = −E_p[sᵀ D s] < 0                      (s = ∇log p)

  (``E[f·s] = −E[∇·f]`` and ``E[D:∇s] = −E[sᵀDs] + E[∇·∇·D]``).  So the drift must contract
  volume on average where the samples are.  For a constant D the Cramér–Rao inequality for
  location, ``E[ssᵀ] ⪰ Σ⁻¹`` (Σ the covariance of p), sharpens it to

      E_p[∇·f] ≤ −tr(D Σ⁻¹),

  with equality for a Gaussian law (for an Ornstein–Uhlenbeck drift it is the trace of the
  Lyapunov equation MΣ + ΣMᵀ + 2D = 0).

* **Confinement.**  The relaxation time ``d / |E[∇·f − ∇·∇·D]|`` is the time the drift needs to
  contract the samples' volume by e^d.  Data that spread over a region which the fitted drift
  would fill only over more than ``RELAXATION_LIMIT`` (10⁶) time units are flagged: that is what
  samples of a diverging process look like to a fit (a huge cloud, a vanishing drift), and a
  genuine process this slow is rare in the time units of a model.

The averaged Jacobian ``J̄ = E[∂f/∂x]`` names the directions along which the drift does not
confine (eigenvalues with real part ≥ 0); the variance is also followed along them.  An averaged
Jacobian may have such eigenvalues for a stationary law (Lorenz: +2.6), so they only qualify a
growth that the moments show.

Every mean has a standard error from groups of rows (the chains of a simulation, the contiguous
noise blocks of a fit), and so has the Cramér–Rao bound, whose Σ̂ is estimated too; a check
fails only when it is both significant (``Z_SIGNIFICANT`` = 5
standard errors) and large (imbalance > ``IMBALANCE_DIVERGING`` = 0.5, or > 0.1 for a
borderline verdict), so the time-discretisation bias of the simulator (O(dt), ~1 % at the
defaults) and heavy tails do not trigger it.  A moving mean is never "diverging" by itself:
"not stationary" above 0.5, else borderline.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..arguments import float_array, labelled_values
from ..data.arrays import as_samples, check_finite
from ..data.checks import state_signs
from ..data.designs import TimeCourse
from ..errors import DataError, StationarityError, StationarityWarning
from ..kernels.blas import limited_blas
from ..model.declaration import require_model
from .functions import model_functions

__all__ = [
    "StationarityCheck",
    "check_stationarity",
    "enforce_stationary",
    "check_linear_drift",
    "Z_SIGNIFICANT",
    "IMBALANCE_DIVERGING",
    "IMBALANCE_BORDERLINE",
    "RELAXATION_LIMIT",
    "MAX_ROWS",
    "MIN_GROUPS",
]

Z_SIGNIFICANT = 5.0
IMBALANCE_DIVERGING = 0.5
IMBALANCE_BORDERLINE = 0.1
#: Relaxation times (model time units) beyond which the drift is said not to confine the data.
RELAXATION_LIMIT = 1e6
#: Rows evaluated (whole groups are kept; larger inputs are subsampled group by group).
MAX_ROWS = 20_000
#: Fewer groups than this give no standard error worth testing against: moments are not judged.
MIN_GROUPS = 16
#: Reasons quoted in an error or warning (all are in ``StationarityCheck.reasons``).
MAX_REASONS = 2
#: Step of the central differences of a drift with steps or kinks, in units of each
#: coordinate's standard deviation: a jump enters the mean divergence as its point mass to
#: O(step) (the almost-everywhere derivative drops it: −a·sign(x) gave E[f'] = 0).
FD_STEP = 0.02

#: Rows per Jacobian evaluation (bounds the memory of (rows, d, d)).
_JAC_ROWS = 4096


@dataclass
class StationarityCheck:
    """The necessary conditions of the module docstring, evaluated on samples at θ.

    Attributes
    ----------
    verdict : str
        ``"stationary"`` (no check failed), ``"borderline"`` (a small but significant imbalance,
        or a drift that confines only on astronomically long times), ``"not stationary"`` (the
        moments or the divergence contradict a stationary law) or ``"diverging"`` (that, along a
        direction the drift does not confine, or with the volume expanding), or
        ``"not checked"`` (too few groups of rows, or no finite drift).
    reasons : list of str
        One sentence per failed check.
    directions : (d, K) array
        Unit vectors along which the variance was followed: the coordinate axes, then the real
        parts of the eigenvectors of J̄ with real part ≥ 0.
    direction_names : list of str
    variance_rate, variance_rate_se : (K,) arrays
        ``d/dt Var(vᵀx)`` and its standard error.
    imbalance : (K,) array
        ``variance_rate`` over the sum of the magnitudes of its drift and noise terms.
    mean_rate, mean_rate_se, mean_imbalance : (d,) arrays
        ``d/dt E[x_i] = E[f_i]``, its standard error, and it over ``E|f_i|``.
    unstable : (K,) bool array
        Directions along which the drift does not confine (J̄ eigenvalue with real part ≥ 0, or
        a coordinate with J̄_ii ≥ 0).
    divergence, divergence_se : float
        ``E[∇·f − ∇·∇·D]`` over the samples and its standard error.
    divergence_bound, divergence_bound_se : float
        Its largest value for a stationary law: ``−tr(D Σ̂⁻¹)`` for a constant D, 0 otherwise;
        and the bound's standard error from the groups (Σ̂ is estimated: its influence
        ``x̃ᵀΣ̂⁻¹DΣ̂⁻¹x̃ − tr(DΣ̂⁻¹)`` per row; 0 for the bound 0).
    jacobian_eigenvalues : (d,) complex array
        Of the averaged Jacobian J̄.
    relaxation_time : float
        ``d / −divergence`` (inf when the divergence is not negative; NaN when not computed).
    divergence_skipped : str
        The step or kink functions of D (``"Abs"``, …) for which the divergence conditions were
        not checked (∇·∇·D has point masses the almost-everywhere derivatives miss:
        ``divergence`` is NaN); empty when they were.  (A drift's steps and kinks are handled:
        its divergence is then taken by central differences, :data:`FD_STEP`.)
    linear : bool
        ∂f/∂x does not depend on the state (a drift linear in x, decided symbolically): then an
        eigenvalue with real part ≥ 0 alone rules out a stationary law.
    n_rows, n_groups : int
        Rows evaluated and the groups behind the standard errors.
    """

    verdict: str = "not checked"
    reasons: list = field(default_factory=list)
    directions: np.ndarray | None = None
    direction_names: list = field(default_factory=list)
    variance_rate: np.ndarray | None = None
    variance_rate_se: np.ndarray | None = None
    imbalance: np.ndarray | None = None
    mean_rate: np.ndarray | None = None
    mean_rate_se: np.ndarray | None = None
    mean_imbalance: np.ndarray | None = None
    unstable: np.ndarray | None = None
    divergence: float = float("nan")
    divergence_se: float = float("nan")
    divergence_bound: float = float("nan")
    divergence_bound_se: float = float("nan")
    jacobian_eigenvalues: np.ndarray | None = None
    relaxation_time: float = float("nan")
    linear: bool = False
    n_rows: int = 0
    n_groups: int = 0
    divergence_skipped: str = ""

    @property
    def failed(self) -> bool:
        return self.verdict in ("not stationary", "diverging")

    def to_dict(self) -> dict:
        """Plain record (JSON-ready once non-finite numbers are replaced)."""
        rate = [] if self.variance_rate is None else self.variance_rate.tolist()
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "divergence": float(self.divergence),
            "divergence_se": float(self.divergence_se),
            "divergence_bound": float(self.divergence_bound),
            "divergence_bound_se": float(self.divergence_bound_se),
            "relaxation_time": float(self.relaxation_time),
            "variance_rate": dict(zip(self.direction_names, rate)),
            "imbalance": dict(
                zip(self.direction_names, [] if self.imbalance is None else self.imbalance.tolist())
            ),
            "mean_rate": [] if self.mean_rate is None else self.mean_rate.tolist(),
            "divergence_skipped": self.divergence_skipped,
        }

    def __str__(self):
        head = f"stationarity: {self.verdict}"
        if np.isfinite(self.divergence):
            head += (
                f" (E[∇·f − ∇·∇·D] = {self.divergence:.3g} ± {self.divergence_se:.2g}, "
                f"bound {self.divergence_bound:.3g}; {self.n_rows:,} rows in {self.n_groups} "
                "groups)"
            )
        if self.divergence_skipped:
            head += (
                " (divergence conditions not checked: the kinks of "
                f"{self.divergence_skipped} in D put point masses into ∇·∇·D)"
            )
        return "\n".join([head] + [f"  {r}" for r in self.reasons])


def _group_mean_se(values, inv, n_groups):
    """Mean (k,) of the rows of ``values`` (n, k) and its standard error from the group means
    (computed in units of each column's largest magnitude, so huge values do not overflow)."""
    n = values.shape[0]
    unit = np.abs(values).max(axis=0)
    unit = np.where(np.isfinite(unit) & (unit > 0), unit, 1.0)
    sums = np.zeros((n_groups, values.shape[1]))
    np.add.at(sums, inv, values / unit)
    counts = np.bincount(inv, minlength=n_groups).astype(float)
    mean = sums.sum(axis=0) / n
    if n_groups < 2:
        return mean * unit, np.full(values.shape[1], np.nan)
    dev = sums - counts[:, None] * mean[None, :]  # n_g (m_g − m)
    se = np.sqrt((dev**2).sum(axis=0) / n**2 * n_groups / (n_groups - 1))
    return mean * unit, se * unit


def _subsample(X, groups):
    """At most ``MAX_ROWS`` rows, whole groups kept, groups spread over the input."""
    n = X.shape[0]
    if groups is None:
        groups = np.arange(n)
    if n <= MAX_ROWS:
        return X, groups
    ids, inv = np.unique(groups, return_inverse=True)
    per = n / ids.size
    keep_groups = max(2, int(MAX_ROWS / per))
    if keep_groups >= ids.size:  # groups larger than MAX_ROWS rows: evenly spaced rows
        rows = np.linspace(0, n - 1, MAX_ROWS).astype(np.int64)
        return X[rows], groups[rows]
    chosen = np.zeros(ids.size, dtype=bool)
    chosen[np.linspace(0, ids.size - 1, keep_groups).astype(np.int64)] = True
    rows = chosen[inv]
    return X[rows], groups[rows]


def _directions(d, Jbar, state_names):
    """Coordinate axes, then real unit directions of J̄'s eigenvalues with real part ≥ 0."""
    V = [np.eye(d)[:, i] for i in range(d)]
    names = [str(s) for s in state_names]
    unstable = [bool(Jbar[i, i] >= 0) for i in range(d)]
    eig, vec = np.linalg.eig(Jbar)
    tol = 1e-9 * float(np.abs(eig).max(initial=0.0))
    for k in np.flatnonzero(eig.real >= -tol):
        v = vec[:, k].real if np.linalg.norm(vec[:, k].real) > 1e-12 else vec[:, k].imag
        v = v / np.linalg.norm(v)
        if any(abs(v @ w) > 1 - 1e-9 for w in V):  # already followed (e.g. an axis)
            for i, w in enumerate(V):
                if abs(v @ w) > 1 - 1e-9:
                    unstable[i] = True
            continue
        V.append(v)
        names.append(f"eigendirection of J̄ (eigenvalue {eig[k].real:+.3g})")
        unstable.append(True)
    return np.array(V).T, names, np.array(unstable), eig


def _mean_jacobian(fn, X, theta):
    """J̄ (d, d) and the per-row divergence ∇·f − ∇·∇·D (n,); ∇·f by central differences for a
    drift with steps or kinks in its own coordinates (:data:`FD_STEP`)."""
    Jbar, div = fn.mean_jacobian(X, theta, rows=_JAC_ROWS)
    if fn.drift_not_smooth:  # the almost-everywhere derivative misses the jumps' point masses
        div = fn.divergence_differences(X, theta, FD_STEP)
    if not fn.constant_D:
        div -= fn.div_div_D(X)
    return Jbar, div


def _theta_spread(fn, X, theta, V, xv, theta_sd):
    """Bounds (K,), (d,), (scalar) on how far the variance rates, the mean rates and the mean
    divergence move when θ moves by ``theta_sd``: Σ_k |∂·/∂θ_k|·sd_k (inf along a parameter with
    infinite sd that enters)."""
    K = V.shape[1]
    grad_rate = np.zeros((theta.size, K))
    grad_mean = np.zeros((theta.size, fn.d))
    pairs, vals, column = fn.drift_theta_distinct(X, theta)  # (rows, distinct entries)
    if pairs:
        # mean(2 ∂f_i/∂θ_k · V_i · xv) = 2 V_i · mean(∂f_i/∂θ_k · xv): one product for all
        # distinct entries, then gathered pair by pair
        i, k = np.array(pairs, dtype=np.int64).T
        np.add.at(grad_rate, k, 2.0 * V[i] * (vals.T @ xv / X.shape[0])[column])
        np.add.at(grad_mean, (k, i), vals.mean(axis=0)[column])
    grad_div = np.zeros(theta.size)
    step = FD_STEP if fn.drift_not_smooth else None
    for k, vals in fn.divergence_theta(X, theta, step):
        grad_div[k] += vals.mean()
    sd = np.asarray(theta_sd, dtype=float)

    def bound(g):
        used = g != 0
        return float(np.sum(np.abs(g[used]) * sd[used])) if used.any() else 0.0

    rates = np.array([bound(grad_rate[:, j]) for j in range(K)])
    return rates, np.array([bound(grad_mean[:, i]) for i in range(fn.d)]), bound(grad_div)


def check_stationarity(model, theta, X, groups=None, theta_sd=None) -> StationarityCheck:
    """Test whether samples X can be a stationary law of ``model`` at ``theta``.

    Parameters
    ----------
    model : SDEModel (without unset inputs)
    theta : (n,) array or dict
    X : (N, d) array
        Samples (at most ``MAX_ROWS`` rows are evaluated, whole groups at a time).
    groups : (N,) int array, optional
        Group of each row for the standard errors: rows of one group may be correlated, groups
        are independent (the chains of a simulation, the noise blocks of a fit).  Default: every
        row its own group.
    theta_sd : (n,) array, optional
        Uncertainty of θ (a fit's honest standard deviations; inf for a parameter the data do
        not determine).  The moments move by at most Σ_k |∂/∂θ_k|·sd_k; that bound is added in
        quadrature to their sampling noise, so a check along a direction the fit leaves open
        cannot fail.

    Returns
    -------
    StationarityCheck
        See the module docstring for the conditions and thresholds.
    """
    with limited_blas():  # its covariances and products are small: one BLAS thread
        return _check_stationarity(model, theta, X, groups, theta_sd)


def _check_stationarity(model, theta, X, groups, theta_sd):
    require_model(model, "check_stationarity")
    _refuse_time_course(X)
    _refuse_environments(X, model)
    theta = model.theta_vector(theta)
    fast = isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2
    if not (fast and X.shape[1] == model.d and X.shape[0] >= 1):
        X = as_samples(X, model, "X", min_samples=1)  # (a copy: only for other inputs)
    groups = None if groups is None else _row_groups(groups, X.shape[0])
    theta_sd = None if theta_sd is None else _theta_sd(theta_sd, model)
    X, groups = _subsample(X, groups)
    X = np.ascontiguousarray(X)
    check_finite(X, "X")  # the rows evaluated (a fit's data are checked already)
    state_signs(model, X, "X")  # the model evaluated there is the one declared
    ids, inv = np.unique(groups, return_inverse=True)
    G = ids.size
    out = StationarityCheck(n_rows=X.shape[0], n_groups=int(G))
    fn = model_functions(model)
    F = fn.drift(X, theta)
    if not np.isfinite(F).all():
        out.reasons.append("the drift is not finite at some samples")
        return out
    Jbar, div = _mean_jacobian(fn, X, theta)
    out.linear = fn.linear
    V, names, unstable, eig = _directions(model.d, Jbar, model.state)
    out.directions, out.direction_names, out.unstable = V, names, unstable
    out.jacobian_eigenvalues = eig
    Dx = fn.diffusion(X[:1] if fn.constant_D else X)
    Xc = X - X.mean(axis=0)
    fv, xv = F @ V, Xc @ V
    dv = np.einsum("nij,ik,jk->nk", Dx, V, V)
    dv = np.broadcast_to(dv, fv.shape)
    spread_rate = spread_mean = None
    if theta_sd is not None:
        spread_rate, spread_mean, spread_div = _theta_spread(fn, X, theta, V, xv, theta_sd)
    rate, rate_se, rate_z, out.imbalance = _variance_rate(fv, xv, dv, inv, G, spread_rate)
    out.variance_rate, out.variance_rate_se = rate, rate_se
    (g,), (g_se,) = _group_mean_se(div[:, None], inv, G)
    out.mean_rate, mean_se = _group_mean_se(F, inv, G)
    mean_scale, _ = _group_mean_se(np.abs(F), inv, G)
    with np.errstate(invalid="ignore", divide="ignore"):
        out.mean_imbalance = np.where(mean_scale > 0, out.mean_rate / mean_scale, 0.0)
    if theta_sd is not None:
        mean_se = np.sqrt(mean_se**2 + spread_mean**2)
        g_se = float(np.hypot(g_se, spread_div))
    out.mean_rate_se = mean_se
    out.divergence, out.divergence_se = float(g), float(g_se)
    if fn.diffusion_not_smooth:  # ∇·∇·D almost everywhere misses the kinks' point masses
        out.divergence = out.divergence_se = float("nan")
        out.divergence_skipped = " and ".join(fn.diffusion_not_smooth)
    bound, influence = _cramer_rao_bound(fn, Dx, X)
    out.divergence_bound = bound
    out.divergence_bound_se = float(_group_mean_se(influence[:, None], inv, G)[1][0])
    g = out.divergence
    out.relaxation_time = (
        float("nan") if np.isnan(g) else float(model.d / -g) if g < 0 else float("inf")
    )
    if G < MIN_GROUPS:
        out.reasons.append(f"{G} group(s) of rows: too few to judge the moments against noise")
        return out
    _judge(out, rate_z)
    return out


def _refuse_time_course(X):
    """A DataError for a :class:`~dynosed_sym.data.designs.TimeCourse` as X, saying how to check
    its snapshots (it said "X: holds a value that is not a number: TimeCourse(…)")."""
    if isinstance(X, TimeCourse):
        raise DataError(
            f"X: {X!r} is a time course: check_stationarity takes samples (N, d) of one law "
            "that is to be stationary, and a time course's snapshots are the law on its way "
            "after a change, each at its own time; check one snapshot at a time — the last, "
            "the most settled, with check_stationarity(model, theta, X.snapshots[-1]), or each "
            "with {t: check_stationarity(model, theta, Xt) for t, Xt in X.items()}"
        )


def _refuse_environments(X, model):
    """A DataError for a dict as X, saying what to pass instead (it said "X: holds a value that
    is not a number: {'A': array(…)}"): one data set's columns named by the state variables
    (a DataFrame), or a design's environments (each checked with its own θ)."""
    if not isinstance(X, dict):
        return
    keys = ", ".join(repr(k) for k in list(X)[:5]) + (", …" if len(X) > 5 else "")
    if X and set(map(str, X)) <= set(model.state_names):
        raise DataError(
            f"X: a dict with keys {keys}, the state variables of model {model.name!r}: pass the "
            "columns of one data set as a pandas.DataFrame(X) (read by name) or an (N, d) array"
        )
    raise DataError(
        f"X: a dict with keys {keys}: check_stationarity takes samples (N, d) of one law; for "
        "the environments of a design check each with its own parameters, {env: "
        "check_stationarity(model, theta_env, X_env) for env, X_env in X.items()} (an "
        "environment's inputs set with model.with_inputs)"
    )


def _exponent(values):
    """Per column of ``values`` (n, k): the exponent e of the power of two 2**e at or above its
    largest magnitude (0 for a column of zeros or non-finite values)."""
    top = np.abs(values).max(axis=0)
    return np.frexp(np.where(np.isfinite(top) & (top > 0), top, 1.0))[1]


def _variance_rate(fv, xv, dv, inv, n_groups, spread=None):
    """``d/dt Var(vₖᵀx) = E[2 (vₖᵀf)(vₖᵀx̃) + 2 vₖᵀDvₖ]`` per direction k: (rate, its standard
    error (with ``spread``, the bound of θ's uncertainty, in quadrature), its z-score, and the
    imbalance rate / E[|2 f x̃| + |2 vᵀDv|]).

    The terms are taken in units of a power of two at or above the larger of them (exact
    scaling: the same bits as the plain sums wherever those are finite), so that samples far
    beyond the law's scale cannot overflow them: at ‖x‖ ~ 1e160 the plain x·f was inf, every
    z-score NaN, and the check said "stationary".  The rate itself may be beyond double range
    (inf); the z-score and the imbalance, which the verdict reads, are not."""
    ea, eb, ed = _exponent(fv), _exponent(xv), _exponent(dv)
    e = np.maximum(ea + eb, ed)
    with np.errstate(under="ignore"):
        product = 2.0 * np.ldexp(np.ldexp(fv, -ea) * np.ldexp(xv, -eb), ea + eb - e)
        noise = 2.0 * np.ldexp(dv, -e)
        rate, se = _group_mean_se(product + noise, inv, n_groups)
        scale, _ = _group_mean_se(np.abs(product) + np.abs(noise), inv, n_groups)
        if spread is not None:
            se = np.sqrt(se**2 + np.ldexp(spread, -e) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        imbalance = np.where(scale > 0, rate / scale, 0.0)
    z = _z(rate, se)
    with np.errstate(over="ignore"):
        return np.ldexp(rate, e), np.ldexp(se, e), z, imbalance


def _row_groups(groups, n):
    """``groups`` as an (n,) array: one label per row of X."""
    out = np.asarray(groups)
    if out.shape != (n,):
        raise DataError(
            f"groups: expected one group label per row of X ({n} rows), got shape {out.shape}"
        )
    if out.dtype.kind in "fc" and not np.isfinite(out).all():
        raise DataError(
            f"groups: label of row {int(np.flatnonzero(~np.isfinite(out))[0])} is not finite"
        )
    return out


def _theta_sd(theta_sd, model):
    """``theta_sd`` as an (n,) array of standard deviations: ≥ 0, inf allowed, no NaN; a dict
    or a labelled Series read by parameter name, as θ is (a dict was refused)."""
    theta_sd = labelled_values(theta_sd)
    if isinstance(theta_sd, dict):
        names = model.param_names
        keyed = {str(k): v for k, v in theta_sd.items()}
        unknown = [k for k in keyed if k not in names]
        missing = [n for n in names if n not in keyed]
        if unknown or missing:
            what = (
                f"{unknown[0]!r} is not a parameter" if unknown else f"no value for {missing[0]!r}"
            )
            raise DataError(f"theta_sd: {what} (parameters: {', '.join(names)})")
        theta_sd = [keyed[n] for n in names]
    sd = float_array(theta_sd, "theta_sd", entries=model.param_names).reshape(-1)
    if sd.shape != (model.n,):
        raise DataError(
            f"theta_sd: expected {model.n} values (one per parameter: "
            f"{', '.join(model.param_names) or 'none'}), got {sd.size}"
        )
    bad = np.flatnonzero(np.isnan(sd) | (sd < 0))
    if bad.size:
        k = int(bad[0])
        raise DataError(
            f"theta_sd: value of {model.param_names[k]!r} is {float(sd[k]):g}; standard "
            "deviations are ≥ 0 (inf for a parameter the data do not determine)"
        )
    return sd


def _cramer_rao_bound(fn, Dx, X):
    """(−tr(D Σ̂⁻¹) for a constant D — the largest mean divergence of a stationary law — else 0,
    and its influence per row (n,): ``x̃ᵀMx̃ − tr(MΣ̂)`` with ``M = Σ̂⁻¹DΣ̂⁻¹``, the first-order
    change of the bound with row i's share of Σ̂; zeros for the bound 0).

    Without it the check took Σ̂ as exact: an Ornstein–Uhlenbeck process simulated exactly at
    N = 300 was called "not stationary" for some seeds (its bound off by chance)."""
    zeros = np.zeros(X.shape[0])
    if not fn.constant_D or X.shape[0] <= X.shape[1]:
        return 0.0, zeros
    Xc = X - X.mean(axis=0)
    with np.errstate(over="ignore", invalid="ignore"):  # samples beyond the law's scale
        cov = np.atleast_2d(np.cov(X, rowvar=False))
    if not np.isfinite(cov).all():
        return 0.0, zeros
    try:
        w, U = np.linalg.eigh(cov)
    except np.linalg.LinAlgError:
        return 0.0, zeros
    if not (w > 1e-300).all():
        return 0.0, zeros
    inv = (U / w) @ U.T
    M = inv @ Dx[0] @ inv
    with np.errstate(over="ignore", invalid="ignore"):
        influence = np.einsum("ni,ij,nj->n", Xc, M, Xc) - float(np.trace(M @ cov))
    if not np.isfinite(influence).all():
        influence = zeros
    return float(-np.trace(Dx[0] @ inv)), influence


def _z(value, se):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 0, value / np.where(se > 0, se, 1.0), np.sign(value) * np.inf)


def _judge(out, z=None):
    """Set ``verdict`` and ``reasons`` from the computed moments (module docstring); ``z``: the
    variance rates' z-scores (default: rate / standard error)."""
    z = _z(out.variance_rate, out.variance_rate_se) if z is None else z
    imb = out.imbalance
    grows = (z > Z_SIGNIFICANT) & (imb > IMBALANCE_DIVERGING)
    changes = (np.abs(z) > Z_SIGNIFICANT) & (np.abs(imb) > IMBALANCE_BORDERLINE)
    g, g_se, bound = out.divergence, out.divergence_se, out.divergence_bound
    bound_se = out.divergence_bound_se if np.isfinite(out.divergence_bound_se) else 0.0
    expanding = g >= 0 and (g > Z_SIGNIFICANT * g_se or g_se == 0)
    verdict = "stationary"
    for k in np.flatnonzero(changes):
        what = "grows" if out.variance_rate[k] > 0 else "shrinks"
        out.reasons.append(
            f"the variance along {out.direction_names[k]} still {what} at "
            f"{out.variance_rate[k]:.3g} per time unit (± {out.variance_rate_se[k]:.2g}); the "
            f"drift and the noise terms of d/dt Var are out of balance by {100 * imb[k]:+.0f} %"
        )
    zm = _z(out.mean_rate, out.mean_rate_se)
    moves = (np.abs(zm) > Z_SIGNIFICANT) & (np.abs(out.mean_imbalance) > IMBALANCE_BORDERLINE)
    for i in np.flatnonzero(moves):
        out.reasons.append(
            f"the mean of {out.direction_names[i]} still moves at {out.mean_rate[i]:.3g} per time "
            f"unit (± {out.mean_rate_se[i]:.2g}): E[f] along it is "
            f"{100 * out.mean_imbalance[i]:+.0f} % of E|f| (0 for a stationary law)"
        )
    if changes.any() or moves.any():
        verdict = "borderline"
    if grows.any() or (moves & (np.abs(out.mean_imbalance) > IMBALANCE_DIVERGING)).any():
        verdict = "not stationary"
    if expanding:
        out.reasons.insert(
            0,
            f"the drift expands volume where the samples are: E[∇·f − ∇·∇·D] = {g:.3g} "
            f"(± {g_se:.2g}), while every stationary law needs it negative (= −E[sᵀDs])",
        )
    eig = out.jacobian_eigenvalues
    tol = 1e-9 * float(np.abs(eig).max(initial=0.0))
    linear_unstable = out.linear and bool((eig.real >= -tol).any())
    if (expanding and grows.any()) or linear_unstable:
        unstable = [f"{ev.real:+.3g}" for ev in np.sort_complex(eig) if ev.real >= -tol]
        if unstable:
            out.reasons.insert(
                0,
                (
                    "the drift is linear in x and its Jacobian"
                    if out.linear
                    else "the averaged Jacobian ∂f/∂x"
                )
                + " has eigenvalue(s) with real part "
                + ", ".join(unstable)
                + ": the drift does not confine the state"
                + (" (no stationary law)" if out.linear else " there"),
            )
        verdict = "diverging"
    elif (grows & out.unstable).any():
        out.reasons.append(
            "the variance grows along a direction in which the averaged Jacobian ∂f/∂x does not "
            "contract (chaotic spreading, or a drift that does not confine)"
        )
    elif (
        g - bound > Z_SIGNIFICANT * np.hypot(g_se, bound_se) + IMBALANCE_BORDERLINE * abs(bound)
        and bound < 0
    ):
        out.reasons.append(
            f"the drift contracts less than any stationary law of this spread needs: "
            f"E[∇·f] = {g:.3g} (± {g_se:.2g}) > −tr(D Σ̂⁻¹) = {bound:.3g} (± {bound_se:.2g}) "
            "(Cramér–Rao)"
        )
        verdict = "not stationary"
    if verdict == "stationary" and out.relaxation_time > RELAXATION_LIMIT:
        over = (
            f"≈ {out.relaxation_time:.3g} time units"
            if np.isfinite(out.relaxation_time)
            else f"no finite time (E[∇·f − ∇·∇·D] = {g:.3g} is not negative)"
        )
        out.reasons.append(
            f"the drift confines the samples only over {over} "
            f"(d / |E[∇·f − ∇·∇·D]|, more than {RELAXATION_LIMIT:.0e}): the picture of a "
            "diverging process (a huge cloud, a vanishing drift)"
        )
        verdict = "borderline"
    out.verdict = verdict


def check_linear_drift(model, theta, points) -> StationarityCheck:
    """The check that needs no sample of the law: a drift linear in x (∂f/∂x free of the state,
    symbolically; evaluated at the first of ``points``) has a stationary law only if every
    eigenvalue of ∂f/∂x has a negative real part.  Verdict ``"diverging"`` when one does not,
    else ``"not checked"``."""
    theta = model.theta_vector(theta)
    X = np.ascontiguousarray(points, dtype=float)[:64]
    out = StationarityCheck(n_rows=X.shape[0])
    if X.shape[0] < 1:
        return out
    fn = model_functions(model)
    if not fn.linear:
        return out
    J = fn.jacobian(X[:1], theta)
    if not np.isfinite(J).all():
        return out
    eig = np.linalg.eigvals(J[0])
    out.linear, out.jacobian_eigenvalues = True, eig
    tol = 1e-9 * float(np.abs(eig).max(initial=0.0))
    bad = [f"{ev.real:+.3g}" for ev in np.sort_complex(eig) if ev.real >= -tol]
    if bad:
        out.verdict = "diverging"
        out.reasons.append(
            "the drift is linear in x and its Jacobian has eigenvalue(s) with real part "
            + ", ".join(bad)
            + ": the drift does not confine the state (no stationary law)"
        )
    return out


def enforce_stationary(check, what, advice, fail=("diverging",)):
    """Raise :class:`StationarityError` when the verdict is in ``fail`` (default: only
    ``"diverging"``), warn (:class:`StationarityWarning`) for any other verdict but
    ``"stationary"`` and ``"not checked"``.  ``advice``: what to do, a string or
    ``(when raising, when warning)``."""
    if check.verdict in ("stationary", "not checked"):
        return
    raising = check.verdict in fail
    if isinstance(advice, tuple):
        advice = advice[0] if raising else advice[1]
    shown = check.reasons[:MAX_REASONS]
    more = len(check.reasons) - len(shown)
    text = f"{what}: {check.verdict}: " + "; ".join(shown)
    text += (f" (and {more} more: check_stationarity)" if more else "") + f". {advice}"
    if raising:
        raise StationarityError(text)
    warnings.warn(text, StationarityWarning, stacklevel=3)
