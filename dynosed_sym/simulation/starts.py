"""Start states of the simulator's chains: inside the model's domain.

The *domain* is where one step of the integrator is defined: the drift f(x; θ) is finite, a
state-dependent D(x) is finite and positive semi-definite, and the noise matrix G(x) the
simulator uses (the declared G, or √(2D_ii), or the Cholesky factor of 2D) is finite.  Noise like
σ√x (a CIR or chemical Langevin model) makes the negative half-line fall outside it.

Without ``x0=`` chain c starts at its own standard normal draw z_c (seeded by ``seed``: the
reference paper's choice, kept bit for bit wherever it lies in the domain).  A draw outside the
domain is replaced by |z_c| — the positive orthant, where noise that needs x ≥ 0 is defined —
and relaxed along the deterministic drift ``dx/dt = f(x; θ)`` for ``RELAX_TIME`` time units (RK4
with the simulation's dt, a row stops where a step would leave the domain), which carries it off
the domain's edge towards an attractor.  A draw that is still outside raises a DataError that
names the state and asks for ``x0=``.

Populations and concentrations live in the positive orthant even when the noise is defined
everywhere (Lotka–Volterra with noise ∝ x: from a negative start the drift blows up).  When
chains from the default starts leave the finite range, :func:`positive_starts` gives the
fallback that :func:`~dynosed_sym.simulate` tries once: every draw with a negative coordinate
replaced by |z_c| relaxed along the drift.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError
from .functions import model_functions

__all__ = ["start_states", "positive_starts", "outside_domain", "domain_failure", "RELAX_TIME"]

#: Time units of deterministic relaxation applied to a replaced start state.
RELAX_TIME = 1.0
_RELAX_STEPS_MAX = 1000


def outside_domain(model, X, theta=None) -> np.ndarray:
    """(n,) bool: rows of X where f(x; θ) (when θ is given), D(x) or the simulator's G(x) is
    not finite, or D(x) is not positive semi-definite."""
    fn = model_functions(model)
    bad = np.zeros(X.shape[0], dtype=bool)
    if theta is not None:
        bad |= ~np.isfinite(fn.drift(X, theta)).all(axis=1)
    if not fn.constant_D:
        Dx = fn.diffusion(X)
        finite = np.isfinite(Dx).all(axis=(1, 2))
        bad |= ~finite
        if finite.any():
            eig = np.linalg.eigvalsh(np.where(finite[:, None, None], Dx, 0.0))
            tol = 1e-12 * np.maximum(1.0, np.abs(eig).max(axis=1))
            bad |= eig[:, 0] < -tol
    G = fn.noise(X)
    if G is not None:
        bad |= ~np.isfinite(G).reshape(X.shape[0], -1).all(axis=1)
    return bad


def _relax(model, theta, X, dt):
    """RK4 along dx/dt = f(x; θ) for RELAX_TIME; a row keeps its last state inside the domain."""
    fn = model_functions(model)
    steps = int(min(_RELAX_STEPS_MAX, max(1, np.ceil(RELAX_TIME / dt))))
    h = RELAX_TIME / steps
    x = X.copy()
    live = np.ones(x.shape[0], dtype=bool)
    for _ in range(steps):
        xl = x[live]
        # a step that leaves the domain is non-finite: its chain is dropped just below (by
        # ``ok``), so NumPy's overflow/invalid warnings of that arithmetic say nothing more
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            k1 = fn.drift(xl, theta)
            k2 = fn.drift(xl + 0.5 * h * k1, theta)
            k3 = fn.drift(xl + 0.5 * h * k2, theta)
            k4 = fn.drift(xl + h * k3, theta)
            new = xl + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            ok = np.isfinite(new).all(axis=1)
        ok[ok] = ~outside_domain(model, new[ok], theta)
        idx = np.flatnonzero(live)
        x[idx[ok]] = new[ok]
        live[idx[~ok]] = False
        if not live.any():
            break
    return x


def start_states(model, n_chains, seed, theta=None, dt=0.01) -> np.ndarray:
    """(C, d) start states inside the domain (module docstring), seeded by ``seed``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    Z = rng.standard_normal((n_chains, model.d))
    bad = outside_domain(model, Z, theta)
    if not bad.any():
        return Z
    Z[bad] = _relax(model, theta, np.abs(Z[bad]), dt) if theta is not None else np.abs(Z[bad])
    still = outside_domain(model, Z, theta)
    if still.any():
        i = int(np.flatnonzero(still)[0])
        everywhere = ""
        if still.all() and theta is not None and still.size > 1:  # no start at all: θ's fault?
            everywhere = (
                f"; it fails at all {still.size} start states, so the parameters θ = "
                f"{np.array2string(np.asarray(theta, dtype=float), precision=4)} may leave the "
                "drift or D undefined everywhere (a division by a parameter that is 0, the log or "
                "square root of a negative one): check them"
            )
        raise DataError(
            f"x0: no start state inside the domain of model {model.name!r} was found (chain {i}: "
            f"at the standard normal draw and at its absolute value "
            f"{np.array2string(Z[i], precision=4)}, D(x) is not positive semi-definite or f(x) or "
            f"the noise is not finite){everywhere}; pass x0= with a state where they are (one "
            "state (d,) or one per chain (n_chains, d))"
        )
    return Z


def positive_starts(model, n_chains, seed, theta, dt=0.01):
    """The default draws with every row that has a negative coordinate replaced by its absolute
    value relaxed along the drift (module docstring); None when no row changes or a row is
    outside the domain."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    Z = rng.standard_normal((n_chains, model.d))
    neg = (Z < 0).any(axis=1)
    if not neg.any():
        return None
    Z[neg] = _relax(model, theta, np.abs(Z[neg]), dt)
    return None if outside_domain(model, Z, theta).any() else Z


def domain_failure(model, theta, x):
    """Why the state x (d,) lies outside the domain (module docstring): a phrase naming the
    entry of D(x), G(x) or the drift and its formula, or None when x is inside."""
    fn = model_functions(model)
    X = np.asarray(x, dtype=float)[None]
    with np.errstate(all="ignore"):
        f = fn.drift(X, theta)[0]
        Dx = None if fn.constant_D else fn.diffusion(X)[0]
        G = fn.noise(X)
    if Dx is not None:
        if not np.isfinite(Dx).all():
            i, j = np.argwhere(~np.isfinite(Dx))[0]
            return f"D(x) is not finite (D[{i},{j}] = {model.D[i, j]})"
        eig = np.linalg.eigvalsh(Dx)
        if eig[0] < -1e-12 * max(1.0, float(np.abs(eig).max())):
            i = int(np.argmin(np.diag(Dx)))
            entry = f"; D[{i},{i}] = {model.D[i, i]} = {Dx[i, i]:.3g}" if Dx[i, i] < 0 else ""
            return (
                f"D(x) is not positive semi-definite (smallest eigenvalue {eig[0]:.3g}"
                f"{entry}), and the noise √(2D) of the next step is not a number"
            )
    if G is not None and not np.isfinite(G).all():
        return "the noise matrix G(x) is not finite"
    if not np.isfinite(f).all():
        j = int(np.flatnonzero(~np.isfinite(f))[0])
        return f"the drift is not finite (drift[{j}] (d{model.state[j]}) = {model.drift[j]})"
    return None
