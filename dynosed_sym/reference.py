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

__all__ = [
    "lambdified",
    "drift_reference",
    "stein_system_reference",
    "simulate_reference",
    "stein_vstat",
    "local_residual_reference",
    "local_rows_reference",
    "kernel_score_reference",
]


def _vectorise(fn, shape, X):
    """Evaluate a lambdified matrix function at all rows of X → (N, *shape)."""
    N = X.shape[0]
    out = np.empty((N,) + shape)
    cols = [X[:, j] for j in range(X.shape[1])]
    vals = fn(*cols)
    for idx in np.ndindex(shape):
        out[(slice(None),) + idx] = np.broadcast_to(
            np.asarray(vals[idx[0]][idx[1]], dtype=float), (N,)
        )
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


def stein_system_reference(model, X, omega, phase, lam_fns=None, dlogp_dt=None):
    """A (m, n) and b (m,) of the global route by the formulas of docs/method.md §2, in NumPy.

    ``dlogp_dt`` (N,), optional: ∂ₜlog p at each sample (non-stationary snapshot); the Stein
    feature gains ``−z_r(x)·∂ₜlog p(x)``, i.e. b gains
    ``√(2/m)/N Σ_i cos(ω_rᵀx_i + c_r) ∂ₜlog p(x_i)``.
    """
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
    if dlogp_dt is not None:
        b = b + scale * (C * np.asarray(dlogp_dt, dtype=float)[:, None]).sum(axis=0)
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
    k = sp.exp(-sum((a - b) ** 2 for a, b in zip(xs, ys)) / (2 * ell**2))
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


def local_residual_reference(model, P, S, J, theta, dlogp_dt=None):
    """Local Fokker–Planck residual R(x_i; θ) at probes, straight from docs/method.md §2 (M,).

    ``R = sᵀ(f − ∇·D − Ds) + ∇·(f − ∇·D − Ds) + ∂ₜlog p`` with every derivative of f and D
    taken here by SymPy from the declaration (no use of the package's derivation), and
    ``∇·(Ds) = Σ_i Σ_j (∂_i D_ij s_j + D_ij ∂_i s_j)`` with ``∂_i s_j = J[j, i]``.
    """
    d = model.d
    xs = list(model.state)
    theta = np.asarray(theta, dtype=float)
    f = model.drift.xreplace(dict(zip(model.params, [sp.Float(t) for t in theta])))
    D = model.D
    divD = [sum(sp.diff(D[i, j], xs[j]) for j in range(d)) for i in range(d)]
    scal = sum(sp.diff(f[j], xs[j]) for j in range(d)) - sum(
        sp.diff(divD[i], xs[i]) for i in range(d)
    )
    dD = [[[sp.diff(D[i, j], xs[i]) for j in range(d)] for i in range(d)]]  # ∂_i D_ij
    fn = sp.lambdify(xs, [list(f), divD, D.tolist(), scal, dD[0]], ["scipy", "numpy"])
    P = np.asarray(P, dtype=float)
    S = np.asarray(S, dtype=float)
    J = np.asarray(J, dtype=float)
    M = P.shape[0]
    R = np.zeros(M)
    for m in range(M):
        fv, dv, Dv, sc, dDv = fn(*P[m])
        fv, dv, Dv, dDv = (np.asarray(a, dtype=float).reshape(-1) for a in (fv, dv, Dv, dDv))
        Dv, dDv = Dv.reshape(d, d), dDv.reshape(d, d)
        s = S[m]
        F = fv - dv - Dv @ s
        div_Ds = sum(dDv[i, j] * s[j] + Dv[i, j] * J[m, j, i] for i in range(d) for j in range(d))
        R[m] = s @ F + float(sc) - div_Ds
        if dlogp_dt is not None:
            R[m] += float(dlogp_dt[m])
    return R


def local_rows_reference(model, P, S, J, dlogp_dt=None):
    """Rows of the local route, A (M, n) and b (M,), from :func:`local_residual_reference`.

    R is affine in θ, so ``b = −R(0)`` and ``A[:, k] = R(e_k) − R(0)``.
    """
    n = model.n
    R0 = local_residual_reference(model, P, S, J, np.zeros(n), dlogp_dt)
    A = np.empty((R0.shape[0], n))
    for k in range(n):
        A[:, k] = local_residual_reference(model, P, S, J, np.eye(n)[k], dlogp_dt) - R0
    return A, -R0


def kernel_score_reference(X, P, temperature):
    """Gaussian-kernel score and Jacobian at probes P by the formulas of docs/method.md §2 (dense,
    O(M N)).

    ``w_j ∝ exp(−T‖x − x_j‖²/2)``, ``ŝ = T(Σ_j w_j x_j − x)``, ``∇ŝ = T² Cov_w(x_j) − T I``.
    """
    X = np.asarray(X, dtype=float)
    T = float(temperature)
    S = np.empty(P.shape)
    Jac = np.empty(P.shape + (P.shape[1],))
    for m, x in enumerate(np.asarray(P, dtype=float)):
        logw = -0.5 * T * ((X - x) ** 2).sum(axis=1)
        w = np.exp(logw - logw.max())
        w /= w.sum()
        mean = w @ X
        cov = (X - mean).T @ (w[:, None] * (X - mean))
        S[m] = T * (mean - x)
        Jac[m] = T * (T * cov) - T * np.eye(X.shape[1])
    return S, Jac
