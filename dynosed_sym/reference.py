"""A slow, obviously correct NumPy implementation of the same formulas.

Used as the oracle in tests and the baseline in benchmarks.  It shares no code
with the generated kernels: U, v, D and f are turned into NumPy functions by
``sympy.lambdify`` straight from the declaration, and ``np.sin``/``np.cos`` are
evaluated feature by feature.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

__all__ = ["lambdified", "drift_reference", "stein_system_reference", "simulate_reference",
           "stein_vstat"]


def _vectorise(fn, shape, X):
    """Evaluate a lambdified matrix function at all rows of X → (N, *shape)."""
    N = X.shape[0]
    out = np.empty((N,) + shape)
    cols = [X[:, j] for j in range(X.shape[1])]
    vals = fn(*cols)
    for idx in np.ndindex(shape):
        out[(slice(None),) + idx] = np.broadcast_to(np.asarray(vals[idx[0]][idx[1]], dtype=float), (N,))
    return out


class lambdified:
    """NumPy callables for U(x), v(x), D(x) and f(x; θ) of an affine model."""

    def __init__(self, model):
        self.model = model
        args = list(model.state)
        self._f = sp.lambdify(args + list(model.params), model.drift.tolist(), ["scipy", "numpy"])
        self._D = sp.lambdify(args, model.D.tolist(), ["scipy", "numpy"])
        if model.is_affine:
            self._U = sp.lambdify(args, model.U.tolist(), ["scipy", "numpy"])
            self._v = sp.lambdify(args, model.v.tolist(), ["scipy", "numpy"])

    def U(self, X):
        return _vectorise(self._U, (self.model.d, self.model.n), X)

    def v(self, X):
        return _vectorise(self._v, (self.model.d, 1), X)[:, :, 0]

    def D(self, X):
        return _vectorise(self._D, (self.model.d, self.model.d), X)

    def f(self, X, theta):
        fn = lambda *cols: self._f(*cols[: self.model.d], *theta)  # noqa: E731
        return _vectorise(fn, (self.model.d, 1), X)[:, :, 0]


def drift_reference(model, X, theta):
    """f(x; θ) at the rows of X → (N, d)."""
    return lambdified(model).f(np.asarray(X, dtype=float), np.asarray(theta, dtype=float))


def stein_system_reference(model, X, omega, phase, lam_fns=None):
    """A (m, n) and b (m,) of the global route by the formulas of DESIGN §2, in NumPy."""
    L = lam_fns or lambdified(model)
    X = np.asarray(X, dtype=float)
    N = X.shape[0]
    m = omega.shape[0]
    U, v, D = L.U(X), L.v(X), L.D(X)
    arg = X @ omega.T + phase[None, :]  # (N, m)
    S, C = np.sin(arg), np.cos(arg)
    wU = np.einsum("rj,ijk->irk", omega, U)  # (N, m, n)
    wv = v @ omega.T  # (N, m)
    wDw = np.einsum("rj,ijl,rl->ir", omega, D, omega)  # (N, m)
    scale = math.sqrt(2.0 / m) / N
    A = -scale * np.einsum("ir,irk->rk", S, wU)
    b = scale * (S * wv + C * wDw).sum(axis=0)
    return A, b


def stein_vstat(model, X, theta, lengthscale):
    """Exact O(N²) V-statistic of the kernel Stein discrepancy with the Gaussian kernel.

    ``(1/N²) Σ_ij 𝒜_x 𝒜_y k(x_i, x_j)`` with ``k = exp(−‖x − y‖²/(2ℓ²))`` and
    ``𝒜φ = fᵀ∇φ + Tr(D ∇²φ)``, differentiated by SymPy (an independent route
    to the same quantity).  The random-feature loss ``‖Aθ − b‖²`` of the global
    route converges to it as the number of features grows.  For small N only.
    """
    d = model.d
    xs = sp.symbols(f"_x0:{d}", real=True)
    ys = sp.symbols(f"_y0:{d}", real=True)
    theta = np.asarray(theta, dtype=float)
    sub = dict(zip(model.params, [sp.Float(t) for t in theta]))

    def generator(phi, vars_):
        rep = dict(zip(model.state, vars_))
        f = [fi.xreplace(sub).xreplace(rep) for fi in model.drift]
        D = model.D.xreplace(rep)
        out = sum(f[i] * sp.diff(phi, vars_[i]) for i in range(d))
        out += sum(D[i, j] * sp.diff(phi, vars_[i], vars_[j]) for i in range(d) for j in range(d))
        return out

    ell = sp.Float(lengthscale)
    k = sp.exp(-sum((a - b) ** 2 for a, b in zip(xs, ys)) / (2 * ell ** 2))
    expr = generator(generator(k, ys), xs)
    fn = sp.lambdify(list(xs) + list(ys), expr, ["scipy", "numpy"])
    X = np.asarray(X, dtype=float)
    Xi = [X[:, None, j] for j in range(d)]
    Yj = [X[None, :, j] for j in range(d)]
    return float(np.mean(fn(*Xi, *Yj)))


def simulate_reference(model, theta, n_chains, n_steps, dt, seed=0, x0=None):
    """Vectorised NumPy RK4 + Euler–Maruyama over chains (constant noise): final states (C, d)."""
    L = lambdified(model)
    theta = np.asarray(theta, dtype=float)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_chains, model.d)) if x0 is None else np.array(x0, dtype=float)
    Dc = L.D(X[:1])[0]
    w, V = np.linalg.eigh(2 * Dc)
    G = V * np.sqrt(np.clip(w, 0, None))
    sq = math.sqrt(dt)
    for _ in range(int(n_steps)):
        k1 = L.f(X, theta)
        k2 = L.f(X + 0.5 * dt * k1, theta)
        k3 = L.f(X + 0.5 * dt * k2, theta)
        k4 = L.f(X + dt * k3, theta)
        X = X + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4) + sq * rng.standard_normal(X.shape) @ G.T
    return X
