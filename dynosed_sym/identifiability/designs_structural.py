"""Structural identifiability of a design (docs/designs.md; the method is described in
:mod:`dynosed_sym.identifiability.designs`).

* every environment stationary with a linear drift and constant D at the nominal θ: exact
  (Gaussian laws from the exact Lyapunov solve, :func:`function_null_space` on the functions
  a_k^(e) concatenated over environments);
* Gaussian laws at snapshot times: numerical (random points of every law, rank by SVD);
* otherwise: the intersection of the environments' own structural null spaces (upper bound).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import sympy as sp

from ..assembly.designs import param_layout
from ..errors import ModelError
from ..solve.combinations import Combination
from .exact import exact, function_null_space, orthonormal
from .stationary import gaussian_score
from .structural import structural_check

__all__ = ["DesignStructural", "design_structural", "env_thetas", "gaussian_law_at"]

NUMERIC_RANK_TOL = 1e-8  # relative singular value below which a numerical direction is free


@dataclass
class DesignStructural:
    """Structural verdict of a design (module docstring).

    Attributes
    ----------
    rank : int
    n_params : int
    certificate : str
        ``"exact"``, ``"numerical"`` or ``"upper bound"``.
    null_vectors : (n, k) array, orthonormal
    combinations : list of Combination
        Free combinations (:class:`~dynosed_sym.solve.combinations.Combination`; exact text when
        the certificate is exact).
    per_env_rank : dict {env: int}
        Rank of each environment alone (its own parameters).
    notes : list of str
    """

    rank: int
    n_params: int
    certificate: str
    null_vectors: np.ndarray
    combinations: list
    per_env_rank: dict
    param_names: list
    notes: list = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def rank_is_exact(self):
        return self.certificate in ("exact", "numerical")

    @property
    def null_space(self):
        """The free combinations (``Combination`` objects), as ``StructuralReport.null_space``."""
        return self.combinations

    def __str__(self):
        lines = [
            f"structural check of the design ({self.certificate}, {self.elapsed * 1e3:.0f} ms): "
            f"rank {self.rank} of {self.n_params}"
            + (" — identifiable" if self.rank == self.n_params else " — NOT identifiable")
        ]
        for e, r in self.per_env_rank.items():
            lines.append(f"  environment {e} alone: rank {r}")
        for c in self.combinations:
            lines.append(f"  free combination: {c}")
        lines.extend("  " + n for n in self.notes)
        return "\n".join(lines)


def env_thetas(model, nominal, env_names):
    """{env: (n,) model parameters} from a nominal given as an array or a dict (an env parameter
    may be given per environment as ``{"k": {"A": 1, "B": 2}}`` or as ``"k[A]"``)."""
    if nominal is None:
        if model.nominal is None:
            raise ModelError(f"model {model.name!r} has no nominal parameters: pass nominal=")
        return {e: np.asarray(model.nominal, dtype=float) for e in env_names}
    if not isinstance(nominal, dict):
        theta = model.theta_vector(nominal, "nominal")
        return {e: theta for e in env_names}
    given = {str(k): v for k, v in nominal.items()}
    out = {}
    for e in env_names:
        vals = {}
        for p in model.param_names:
            if f"{p}[{e}]" in given:
                vals[p] = given[f"{p}[{e}]"]
            elif p in given:
                v = given[p]
                if isinstance(v, dict):
                    v = {str(a): b for a, b in v.items()}
                    if e not in v:
                        raise ModelError(f"nominal: no value of {p!r} for environment {e!r}")
                    v = v[e]
                vals[p] = v
            elif model.nominal is not None:
                vals[p] = model.nominal[model.param_names.index(p)]
            else:
                raise ModelError(f"nominal: no value for parameter {p!r}")
        out[e] = model.theta_vector(vals, "nominal")
    return out


def _linear_part(model_e, theta):
    """(M, c) of a drift linear in x at θ, else None."""
    f = model_e.drift.xreplace(dict(zip(model_e.params, [sp.Float(v, 17) for v in theta])))
    state = model_e.state
    for e in f:
        if not e.is_polynomial(*state) or sp.Poly(e, *state).total_degree() > 1:
            return None
    zero = {s: 0 for s in state}
    M = np.array([[float(sp.diff(f[i], s)) for s in state] for i in range(len(state))])
    c = np.array([float(e.xreplace(zero)) for e in f])
    return M, c


def gaussian_law_at(M, c, D, t=None, initial=None):
    """(μ, Σ) of dx = (Mx + c)dt + √(2D)dW: stationary (t None, Lyapunov) or at time t from a
    Gaussian initial law (μ₀, Σ₀) (mean by the augmented exponential, covariance by Van Loan)."""
    d = M.shape[0]
    if t is None:
        if np.max(np.linalg.eigvals(M).real) >= 0:
            return None
        S = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * D)
        return -np.linalg.solve(M, c), 0.5 * (S + S.T)
    mu0, S0 = initial
    C = np.zeros((2 * d, 2 * d))
    C[:d, :d], C[:d, d:], C[d:, d:] = -M, 2.0 * D, M.T
    F = scipy.linalg.expm(C * t)
    Q = F[d:, d:].T @ F[:d, d:]
    E = scipy.linalg.expm(M * t)
    Cm = np.zeros((d + 1, d + 1))
    Cm[:d, :d], Cm[:d, d] = M, c
    mu = (scipy.linalg.expm(Cm * t) @ np.concatenate([mu0, [1.0]]))[:d]
    S = E @ S0 @ E.T + Q
    return mu, 0.5 * (S + S.T)


def _a_functions(model_e):
    """Numerical a(x, s) = U(x)ᵀs + ∇·U(x) → (N, n) for points X (N, d) and scores S (N, d)."""
    U = model_e.U
    state = list(model_e.state)
    d, n = U.shape
    div = [sum(sp.diff(U[j, k], state[j]) for j in range(d)) for k in range(n)]
    fU = [[sp.lambdify(state, U[j, k], "numpy") for k in range(n)] for j in range(d)]
    fdiv = [sp.lambdify(state, e, "numpy") for e in div]

    def a(X, S):
        cols = [X[:, j] for j in range(d)]
        N = X.shape[0]

        def ev(f):
            return np.broadcast_to(np.asarray(f(*cols), dtype=float), (N,))

        out = np.array([ev(f) for f in fdiv]).T  # (N, n)
        for j in range(d):
            out += np.array([ev(f) for f in fU[j]]).T * S[:, j : j + 1]
        return out

    return a


def _env_laws(model, design, thetas, models, initial):
    """({env: [Gaussian law per snapshot] or None}, {env: exact score}) of the environments
    whose model is linear with constant D (None: no closed-form law)."""
    laws, exact_scores = {}, {}
    for env in design.envs:
        m_e, th = models[env.name], thetas[env.name]
        lin = _linear_part(m_e, th) if m_e.diffusion_is_constant and m_e.is_affine else None
        if lin is None:
            laws[env.name] = None
            continue
        D = np.array(m_e.D.evalf(), dtype=float)
        if env.kind == "stationary":
            law = gaussian_law_at(*lin, D)
            laws[env.name] = None if law is None else [law]
            if law is not None:
                f0 = (m_e.U * sp.Matrix([exact(sp.nsimplify(v)) for v in th]) + m_e.v).applyfunc(
                    exact
                )
                sc = gaussian_score(f0, m_e.D.applyfunc(exact), list(m_e.state))
                exact_scores[env.name] = None if sc is None else sc[0]
        else:
            init = initial.get(env.name)
            if not (isinstance(init, (tuple, list)) and len(init) == 2):
                laws[env.name] = None
                continue
            mu0 = np.asarray(init[0], dtype=float)
            S0 = np.asarray(init[1], dtype=float)
            S0 = S0 * np.eye(model.d) if S0.ndim == 0 else S0
            laws[env.name] = [
                (mu0, S0) if t == 0 else gaussian_law_at(*lin, D, t, (mu0, S0))
                for t in env.data.times
            ]
    return laws, exact_scores


def design_structural(model, design, thetas, models, initial=None, seed=0) -> DesignStructural:
    """Structural check of a design (module docstring).

    Parameters
    ----------
    model : SDEModel
    design : Design
        Environments (their data may be placeholders: only inputs and times are read).
    thetas : {env: (n,) nominal parameters}
    models : {env: model with the inputs substituted}
    initial : {env: (mean, cov) or samples or None}
    """
    t0 = time.perf_counter()
    names, columns = param_layout(
        model.param_names, [str(p) for p in model.env_params], design.names, design.single
    )
    n = len(names)
    notes = []
    laws, exact_scores = _env_laws(model, design, thetas, models, initial or {})
    per_env_rank = {}
    if all(e.name in exact_scores and exact_scores[e.name] is not None for e in design.envs):
        cols = [[] for _ in range(n)]
        for env in design.envs:
            m_e, s = models[env.name], exact_scores[env.name]
            U = m_e.U.applyfunc(exact)
            st = list(m_e.state)
            a = [
                sp.expand(
                    sum(U[j, k] * s[j] for j in range(len(st)))
                    + sum(sp.diff(U[j, k], st[j]) for j in range(len(st)))
                )
                for k in range(U.shape[1])
            ]
            per_env = function_null_space([[a[k]] for k in range(len(a))], st, seed)
            per_env_rank[env.name] = len(a) - per_env.dim
            for c in range(n):
                ks = np.flatnonzero(columns[env.name] == c)
                cols[c].append(a[ks[0]] if ks.size else sp.Integer(0))
        ns = function_null_space(cols, list(model.state), seed)
        Q = orthonormal(ns.basis, n)
        combos = [Combination.from_exact(list(v), names) for v in ns.basis]
        cert = "exact" if not ns.numerical else "numerical"
        rank = n - ns.dim
    elif all(laws[e.name] is not None for e in design.envs):
        rng = np.random.default_rng(seed)
        blocks = []
        for env in design.envs:
            a = _a_functions(models[env.name])
            rows_e = []
            for mu, S in laws[env.name]:
                L = np.linalg.cholesky(S + 1e-14 * np.trace(S) * np.eye(model.d))
                X = mu + rng.standard_normal((6 * n + 6, model.d)) @ L.T
                Sc = -np.linalg.solve(S, (X - mu).T).T
                rows_e.append(a(X, Sc))
            R_e = np.concatenate(rows_e)
            per_env_rank[env.name] = _numeric_rank(R_e)[0]
            G = np.zeros((R_e.shape[0], n))
            G[:, columns[env.name]] = R_e
            blocks.append(G)
        rank, Q = _numeric_rank(np.concatenate(blocks))
        combos = [Combination(Q[:, i], names) for i in range(Q.shape[1])]
        cert = "numerical"
        notes.append("Gaussian laws at the nominal θ (and at every snapshot time), rank by SVD")
    else:
        rows = []
        for env in design.envs:
            rep = structural_check(models[env.name], thetas[env.name], seed=seed)
            per_env_rank[env.name] = rep.rank
            Qe = rep.null_vectors
            Pe = np.zeros((model.n, n))
            Pe[np.arange(model.n), columns[env.name]] = 1.0
            rows.append(Pe - Qe @ (Qe.T @ Pe))
        rank, Q = _numeric_rank(np.concatenate(rows), absolute=True)
        combos = [Combination(Q[:, i], names) for i in range(Q.shape[1])]
        cert = "upper bound"
        notes.append(
            "no closed-form law in some environment: only directions every environment's own "
            "structural check finds are listed; the simulated check decides the rest"
        )
    return DesignStructural(
        rank=int(rank),
        n_params=n,
        certificate=cert,
        null_vectors=Q,
        combinations=combos,
        per_env_rank=per_env_rank,
        param_names=names,
        notes=notes,
        elapsed=time.perf_counter() - t0,
    )


def _numeric_rank(R, absolute=False):
    """(rank, orthonormal null vectors) of the columns of R, relative tolerance after scaling."""
    scale = np.linalg.norm(R, axis=0)
    Rs = R / np.where(scale > 0, scale, 1.0) if not absolute else R
    _, s, Vt = np.linalg.svd(Rs, full_matrices=True)
    n = R.shape[1]
    s_full = np.zeros(n)
    s_full[: s.size] = s[:n]
    tol = NUMERIC_RANK_TOL * (s_full[0] if s_full[0] > 0 else 1.0)
    keep = s_full > tol
    null = Vt[~keep].T
    if not absolute:  # back to unscaled parameter coordinates
        null = null / np.where(scale > 0, scale, 1.0)[:, None]
        null = orthonormal([list(v) for v in null.T], n) if null.size else np.zeros((n, 0))
    return int(keep.sum()), null
