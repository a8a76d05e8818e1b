"""Is the time step small against the drift where the chains are?

A stationary law from a discretised SDE is the law of the *scheme*, not of the SDE.  The check
reads the bias from the samples in the form exact for a linear drift:

* **State-dependent noise (Euler–Maruyama)**, ``x' = x + f dt + G√dt η``.  The variance of one
  step gives, exactly, for the scheme's stationary law

      0 = E[f x̃ᵀ] + E[x̃ fᵀ] + dt·Cov(f) + 2E[D]        (x̃ = x − E[x]),

  where the SDE's law has no middle term: the step spreads the state as extra noise dt·Cov(f).
  For a linear drift f = Mx the difference E = Σ_scheme − Σ then solves the SDE's own Lyapunov
  equation with that source, ``ME + EMᵀ + dt·Cov(f) = 0`` (Cov(f) measured on the scheme's
  samples): exact, whatever M (a damped rotation, a non-normal stiff cascade) and for the CIR
  process.  The check solves it with the mean Jacobian J̄ for M and reports the largest
  ``vᵀEv / vᵀΣv`` over the coordinate axes and the principal axes of the samples (Σ from
  ``J̄Σ + ΣJ̄ᵀ + 2E[D] = 0``).  Where J̄ has an eigenvalue with real part ≥ 0 (a cycle, chaos)
  there is no Lyapunov solution; the check then compares the sources directly along v,
  ``dt·vᵀCov(f)v / 2vᵀE[D]v`` — exact in one dimension, an upper bound for a stable linear drift
  (the Lyapunov solution is monotone in its source).  (Read instead from the eigenvalues of
  ∂f/∂x row by row, as for constant noise below, a noisy predator–prey cycle at dt = 0.01 looked
  11 % off: its local eigenvalues are nearly imaginary, and a locally undamped rotation is what
  Euler steps inflate most; the moments above see the cycle's actual spreading.)
* **Constant noise** (RK4 drift between two half noise kicks, records half-way through the kick;
  :mod:`.simulate`): ``y' = R(y + √(a/2) η) + √(a/2) η'`` with a = σ²dt and R = R₄(−z) the RK4
  stability polynomial, so for ``dx = −λx dt + σ dW`` the ratio to the exact variance σ²/2λ is
  ``z (1 + R²)/(1 − R²)`` (= 1 + z²/3 + …; unstable beyond z ≈ 2.785).  Its bias is that of
  stiff directions — the rotation of a cycle is integrated by RK4 to O((ω dt)⁶) — so the check
  reads it from the relaxation rates where the chains are: at up to ``STEP_ROWS`` samples, the
  real parts of the eigenvalues of ∂f/∂x that contract, each row's largest |ratio − 1| (10 where
  the step is locally unstable), their mean over the rows.  Exact for a linear drift with real
  eigenvalues and a normal matrix; expanding directions (a chaotic attractor's) are not judged.

:func:`variance_ratio` gives both ratios for a complex z too (``tests/simulation/
test_stepsize.py`` checks them against the schemes' covariances from a discrete Lyapunov
equation).  Above ``STEP_BIAS_WARN`` (5 %) :func:`~.simulate.simulate` warns
(:class:`~dynosed_sym.errors.StepSizeWarning`) with a step that would bring the bias to 1 %.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..errors import StepSizeWarning

__all__ = [
    "StepCheck",
    "check_step_size",
    "warn_step_size",
    "variance_ratio",
    "euler_bias",
    "STEP_BIAS_WARN",
]

#: Bias of the stationary spread above which simulate warns.
STEP_BIAS_WARN = 0.05
#: The bias the suggested step aims at.
STEP_BIAS_TARGET = 0.01
#: Rows of the samples at which the Jacobian's eigenvalues are read (constant noise): at most
#: this many, and fewer for large d (rows·d³ ≤ ``_EIG_BUDGET``, at least 16).
STEP_ROWS = 256
_EIG_BUDGET = 2e7
#: Rows of the samples whose moments measure the Euler step's extra spreading: at most this many,
#: fewer for large d (rows·d² ≤ ``_D_BUDGET`` numbers of D(x), at least 256).
EULER_ROWS = 8192
_D_BUDGET = 4e6
#: A locally unstable step (ratio ∞) counts as this bias in the mean over the rows.
_DEV_CAP = 10.0
#: Relaxation over one step below which a direction is not judged (z → 0: ratio → 1).
_Z_FLOOR = 1e-8


def _rk4(w):
    return 1.0 + w + w * w / 2.0 + w**3 / 6.0 + w**4 / 24.0


def variance_ratio(z, scheme):
    """The scheme's stationary variance over the SDE's along an eigendirection with
    ``z = −μ·dt`` (Re z > 0; module docstring): ``scheme`` "splitting" (constant noise, records
    half-way through the kick), "end" (constant noise, records at the end of the step, as
    :func:`~.simulate.simulate_time_course` takes them: ``2 Re z/(1 − |R|²)`` = 1 + z + …) or
    "euler" (state-dependent noise).  ``inf`` where the step is unstable (|R| ≥ 1)."""
    z = np.asarray(z, dtype=complex)
    if scheme == "splitting":
        r2 = np.abs(_rk4(-z)) ** 2
        num = z.real * (1.0 + r2)
    elif scheme == "end":  # RK4 then the whole kick, recorded at the end of the step
        r2 = np.abs(_rk4(-z)) ** 2
        num = 2.0 * z.real
    elif scheme == "euler":
        r2 = np.abs(1.0 - z) ** 2
        num = 2.0 * z.real
    else:
        raise ValueError(f"scheme must be 'splitting', 'end' or 'euler', got {scheme!r}")
    den = 1.0 - r2
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf)


@dataclass(frozen=True)
class StepCheck:
    """What :func:`check_step_size` found.

    Attributes
    ----------
    dt : float
    scheme : str
        "splitting" (constant noise) or "euler" (state-dependent noise).
    bias : float
        The bias of the stationary spread the scheme's step causes (module docstring): Euler, the
        largest share b_v; splitting, the mean over the rows of the largest local |ratio − 1|.
    where : str
        Where it is largest: the direction (Euler) or the median fastest relaxation rate.
    unstable : float
        Share of the rows where the step is locally unstable (splitting; 0 for Euler).
    suggested_dt : float
        A step with ``bias`` ≈ ``STEP_BIAS_TARGET`` (dt itself when below it).
    """

    dt: float
    scheme: str
    bias: float
    where: str
    unstable: float
    suggested_dt: float

    @property
    def too_large(self) -> bool:
        return bool(self.bias > STEP_BIAS_WARN)


def _rows(X, limit):
    return X[np.unique(np.linspace(0, X.shape[0] - 1, min(limit, X.shape[0])).astype(np.int64))]


def _row_bias(z, scheme):
    """(largest |ratio − 1| per row (``_DEV_CAP`` where unstable), unstable per row) of the
    scheme at the real parts z (rows, d) of −μ·dt."""
    judged = z > _Z_FLOOR
    ratio = variance_ratio(np.where(judged, z, 1.0), scheme).real
    dev = np.where(judged, np.minimum(np.abs(ratio - 1.0), _DEV_CAP), 0.0)
    return dev.max(axis=1), (judged & ~np.isfinite(ratio)).any(axis=1)


def _check_rows(fn, theta, X, dt, scheme):
    with np.errstate(all="ignore"):
        limit = min(STEP_ROWS, max(16, int(_EIG_BUDGET / X.shape[1] ** 3)))
        J = fn.row_jacobians(_rows(X, limit), theta)
    J = J[np.isfinite(J).all(axis=(1, 2))]
    if J.shape[0] == 0:
        return StepCheck(float(dt), scheme, 0.0, "", 0.0, float(dt))
    rates = -np.linalg.eigvals(J).real  # (rows, d): relaxation rates where > 0
    dev, unstable = _row_bias(rates * dt, scheme)
    bias, step = float(dev.mean()), float(dt)
    for _ in range(40):  # halve until the mean bias is at most the target
        if float(_row_bias(rates * step, scheme)[0].mean()) <= STEP_BIAS_TARGET:
            break
        step /= 2.0
    fastest = float(np.median(np.clip(rates, 0.0, None).max(axis=1)))
    return StepCheck(
        float(dt),
        scheme,
        bias,
        f"fastest relaxation rate ≈ {fastest:.3g} per time unit at the median sample",
        float(unstable.mean()),
        step,
    )


def euler_bias(Jbar, Q, Cf, dt):
    """The Euler scheme's stationary covariance bias for a drift linearised at J̄ (module
    docstring): ``(E, Σ)`` with Σ the Lyapunov solution of ``J̄Σ + ΣJ̄ᵀ + Q = 0`` (Q = 2E[D]) and
    E that of ``J̄E + EJ̄ᵀ + dt·C_f = 0`` (C_f = Cov(f) on the scheme's samples); None when J̄ has
    an eigenvalue with real part ≥ 0 (no Lyapunov solution to read)."""
    if np.linalg.eigvals(Jbar).real.max() >= 0:
        return None
    Sigma = scipy.linalg.solve_continuous_lyapunov(Jbar, -Q)
    E = scipy.linalg.solve_continuous_lyapunov(Jbar, -dt * Cf)
    return 0.5 * (E + E.T), 0.5 * (Sigma + Sigma.T)


def _check_euler(fn, theta, X, dt, names):
    X = _rows(X, min(EULER_ROWS, max(256, int(_D_BUDGET / X.shape[1] ** 2))))
    with np.errstate(all="ignore"):
        F, D = fn.drift(X, theta), fn.diffusion(X)
        Jbar = fn.mean_jacobian(X, theta)[0]
    ok = np.isfinite(F).all(axis=1) & np.isfinite(D).all(axis=(1, 2))
    X, F, D = X[ok], F[ok], D[ok]
    if X.shape[0] < 2 or not np.isfinite(Jbar).all():
        return StepCheck(float(dt), "euler", 0.0, "", 0.0, float(dt))
    d = X.shape[1]
    Q = 2.0 * D.mean(axis=0)
    Cf = np.atleast_2d(np.cov(F.T))
    _, axes = np.linalg.eigh(np.atleast_2d(np.cov(X.T)))
    V = np.concatenate([np.eye(d), axes], axis=1)  # coordinate axes, then principal axes
    lyap = euler_bias(Jbar, Q, Cf, dt)
    if lyap is not None:  # the extra spreading propagated as the noise is
        E, Sigma = lyap
        num, den = np.einsum("ik,ij,jk->k", V, E, V), np.einsum("ik,ij,jk->k", V, Sigma, V)
    else:  # against the noise along v: exact in 1-D, an upper bound for a linear drift
        num, den = dt * np.einsum("ik,ij,jk->k", V, Cf, V), np.einsum("ik,ij,jk->k", V, Q, V)
    judged = den > 1e-12 * max(float(den.max()), 0.0)
    share = np.where(judged, np.abs(num) / np.where(judged, den, 1.0), 0.0)
    k = int(np.argmax(share))
    bias = float(share[k])
    where = f"along {names[k]}" if k < d else "along a principal axis of the samples"
    step = float(dt) if bias <= STEP_BIAS_TARGET else float(dt) * STEP_BIAS_TARGET / bias
    return StepCheck(float(dt), "euler", bias, where, 0.0, step)


def check_step_size(fn, theta, X, dt, scheme, names=None, stationary=True) -> StepCheck:
    """:class:`StepCheck` of step ``dt`` for ``scheme`` ("splitting", "end" or "euler") on the
    samples ``X`` (``fn``: the model's :class:`~.functions.ModelFunctions`; ``names``: the state
    variables', for the message).  Euler steps on samples that are not ``stationary`` (a time
    course's snapshot, where the moment identity does not hold) are read from the relaxation
    rates at the rows, as the other schemes are."""
    theta = np.asarray(theta, dtype=float).reshape(-1)
    if scheme not in ("splitting", "end", "euler"):
        raise ValueError(f"scheme must be 'splitting', 'end' or 'euler', got {scheme!r}")
    if scheme == "euler" and stationary:
        names = [f"x{j}" for j in range(X.shape[1])] if names is None else list(names)
        return _check_euler(fn, theta, X, dt, names)
    return _check_rows(fn, theta, X, dt, scheme)


def warn_step_size(check: StepCheck, what: str, stacklevel: int = 3, stationary=True) -> None:
    """Warn (:class:`~dynosed_sym.errors.StepSizeWarning`) when ``check.too_large``
    (``stationary``: the samples are meant to be a stationary law, not a time course's
    snapshot, whose fast directions only have settled)."""
    if not check.too_large:
        return
    scheme = {
        "splitting": "RK4 drift between half noise kicks (constant noise)",
        "end": "RK4 drift and a noise kick per step, recorded at the step's end (constant noise)",
        "euler": "Euler–Maruyama (state-dependent noise)",
    }[check.scheme]
    if check.scheme == "euler" and stationary:  # read from the Euler step's moments
        cause = f"spreads the state as extra noise {check.where} (dt·Var(f) against 2·E[D])"
    else:
        unstable = (
            f"; the step is locally unstable at {check.unstable:.0%} of the samples"
            if check.unstable > 0
            else ""
        )
        cause = f"is large against the drift's relaxation ({check.where}{unstable})"
    law = "stationary law" if stationary else "law along its fast directions"
    warnings.warn(
        f"{what}: dt={check.dt:g} {cause}: the {law} of the {scheme} scheme differs "
        f"from the SDE's by ≈ {check.bias:.0%} in its spread, and a fit to these samples "
        f"inherits that bias; dt={check.suggested_dt:.3g} brings it to ≈ "
        f"{STEP_BIAS_TARGET:.0%}",
        StepSizeWarning,
        stacklevel=stacklevel,
    )
