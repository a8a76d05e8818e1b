"""The density model: a latent Gaussian mixture warped by a near-identity affine-coupling flow.

Following the reference paper's supplement: the latent variable ξ has the data's dimension d and
a Gaussian-mixture law with trainable centroids μ_k (K × d), log-weights λ_k and one shared
covariance Σ = P⁻¹.  An invertible map T (= Φ⁻¹ of the paper) takes data x to ξ through RealNVP
affine couplings: with a binary mask m (kept coordinates), layer by layer

    a = W (m ⊙ z) + c,   h = tanh(a),   s = (1 − m) ⊙ (A h),   t = (1 − m) ⊙ (B h),
    z ← z ⊙ exp(s) + t,                 log|det ∂T/∂x| = Σ_layers Σ_i s_i.

A and B start at zero, so T starts as the identity.  Then, by the change of variables,

    log p(x) = log p_ξ(T(x)) + log|det ∂T/∂x|
    s(x)     = Jᵀ ∇log p_ξ(ξ) + ∇ log|det|
    ∇s(x)    = Jᵀ ∇²log p_ξ(ξ) J + Σ_k ∂_k log p_ξ(ξ) ∇²T_k + ∇² log|det|

with the closed forms (α = softmax of η_k = μ_kᵀPξ + λ_k − ½μ_kᵀPμ_k, μ̄ = Σ α_k μ_k)

    log p_ξ = −½ ξᵀPξ + lse(η) − lse(λ) + ½ log det P − (d/2) log 2π
    ∇log p_ξ = P (μ̄ − ξ),     ∇²log p_ξ = P Cov_α(μ) P − P.

Everything is computed as second-order jets in x (value, x-gradient, x-Hessian of every
intermediate), vectorised over points, with the operations of :mod:`._tape` so that the exact
parameter gradient of any scalar built from them follows by one backward sweep.  P is
parameterised by its Cholesky factor (strict lower triangle free, diagonal through exp).
Sampling inverts each coupling in closed form (z_b = (z'_b − t) e^{−s}).
"""

from __future__ import annotations

import numpy as np

from . import _tape as tp

__all__ = ["FlowMixtureSpec", "init_params", "jets", "sample_latent", "inverse_flow", "param_names"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class FlowMixtureSpec:
    """Architecture (no trainable values): dimension, mixture size, flow depth and width.

    Parameters
    ----------
    d : int
    n_components : int
        Mixture components K.
    n_layers : int
        Affine-coupling layers (0 for d = 1: a coupling needs two coordinate groups).
    n_hidden : int
        Hidden tanh units of each coupling's conditioner.
    """

    def __init__(self, d, n_components, n_layers, n_hidden):
        self.d = int(d)
        self.n_components = int(n_components)
        self.n_layers = int(n_layers) if d > 1 else 0
        self.n_hidden = int(n_hidden)
        half = (self.d + 1) // 2
        first = np.zeros(self.d)
        first[:half] = 1.0
        # alternate which half conditions the other, so every coordinate gets transformed
        self.masks = [first if l % 2 == 0 else 1.0 - first for l in range(self.n_layers)]
        self.strict_lower = np.tril(np.ones((self.d, self.d)), -1)
        self.eye = np.eye(self.d)

    def shapes(self):
        """{parameter name: shape}, in the fixed order of the flat parameter vector."""
        d, K, M = self.d, self.n_components, self.n_hidden
        out = {"centroids": (K, d), "log_weights": (K,), "precision_chol": (d, d)}
        for l in range(self.n_layers):
            out.update({f"W{l}": (M, d), f"c{l}": (M,), f"A{l}": (d, M), f"B{l}": (d, M)})
        return out

    def __repr__(self):
        return (f"FlowMixtureSpec(d={self.d}, n_components={self.n_components}, "
                f"n_layers={self.n_layers}, n_hidden={self.n_hidden})")


def param_names(spec):
    return list(spec.shapes())


def init_params(spec, center, scale, rng):
    """Initial parameters: centroids spread around ``center``, identity flow.

    Centroids are drawn from N(center, scale² I); the shared covariance is (scale/2)² I, so the
    initial density is a broad blob of size ~scale; the conditioners' hidden weights are random
    (seeded) and their output weights zero, which makes the flow exactly the identity.
    """
    d, K, M = spec.d, spec.n_components, spec.n_hidden
    p = {
        "centroids": center + scale * rng.standard_normal((K, d)),
        "log_weights": np.zeros(K),
        # P = L Lᵀ with L = diag(exp(q)): Σ = (scale/2)² I
        "precision_chol": np.diag(np.full(d, -np.log(scale / 2.0))),
    }
    for l in range(spec.n_layers):
        p[f"W{l}"] = rng.standard_normal((M, d)) / scale
        p[f"c{l}"] = rng.standard_normal(M)
        p[f"A{l}"] = np.zeros((d, M))
        p[f"B{l}"] = np.zeros((d, M))
    return p


def _chol(spec, q):
    """Cholesky factor L of the precision from the raw (d, d) parameter (diagonal via exp)."""
    return q * spec.strict_lower + tp.exp(q) * spec.eye


def _flow_jets(spec, params, X):
    """T(x) with its x-Jacobian and x-Hessian, and log|det ∂T/∂x| with its gradient and Hessian."""
    N, d = X.shape
    z = X
    Jz = np.broadcast_to(np.eye(d), (N, d, d))
    Hz = np.zeros((N, d, d, d))
    ld = np.zeros(N)
    Jld = np.zeros((N, d))
    Hld = np.zeros((N, d, d))
    for l, m in enumerate(spec.masks):
        Wm = params[f"W{l}"] * m  # (M, d): the conditioner sees the kept coordinates only
        a = tp.einsum("mi,ni->nm", Wm, z) + params[f"c{l}"]
        Ja = tp.einsum("mi,nij->nmj", Wm, Jz)
        Ha = tp.einsum("mi,nijk->nmjk", Wm, Hz) if l > 0 else None
        h = tp.tanh(a)
        h1 = 1.0 - h * h          # tanh'
        h2 = -2.0 * h * h1        # tanh''
        Jh = tp.einsum("nm,nmj->nmj", h1, Ja)
        Hh = tp.einsum("nm,nmj,nmk->nmjk", h2, Ja, Ja)
        if Ha is not None:
            Hh = Hh + tp.einsum("nm,nmjk->nmjk", h1, Ha)
        keep_out = (1.0 - m)[:, None]
        outs = []
        for name in (f"A{l}", f"B{l}"):
            Wo = params[name] * keep_out  # (d, M): only the transformed coordinates move
            outs.append((tp.einsum("im,nm->ni", Wo, h), tp.einsum("im,nmj->nij", Wo, Jh),
                         tp.einsum("im,nmjk->nijk", Wo, Hh)))
        (s, Js, Hs), (t, Jt, Ht) = outs
        E = tp.exp(s)
        JE = tp.einsum("ni,nij->nij", E, Js)
        HE = tp.einsum("ni,nij,nik->nijk", E, Js, Js) + tp.einsum("ni,nijk->nijk", E, Hs)
        Hz = (tp.einsum("nijk,ni->nijk", Hz, E) + tp.einsum("nij,nik->nijk", Jz, JE)
              + tp.einsum("nik,nij->nijk", Jz, JE) + tp.einsum("ni,nijk->nijk", z, HE) + Ht)
        Jz = tp.einsum("nij,ni->nij", Jz, E) + tp.einsum("ni,nij->nij", z, JE) + Jt
        z = z * E + t
        ld = ld + tp.total(s, axis=1)
        Jld = Jld + tp.total(Js, axis=1)
        Hld = Hld + tp.total(Hs, axis=1)
    return z, Jz, Hz, ld, Jld, Hld


def jets(spec, params, X, order=2):
    """log p, score and score Jacobian of the model at the rows of X.

    Parameters
    ----------
    spec : FlowMixtureSpec
    params : dict of name → array or :class:`._tape.Node`
    X : numpy.ndarray (N, d)
    order : {0, 1, 2}
        Highest x-derivative wanted (0: log p only).

    Returns
    -------
    logp : (N,)   score : (N, d) or None   hess : (N, d, d) or None
        Tape nodes when ``params`` holds nodes, else arrays.
    """
    d = spec.d
    xi, J, Hxi_map, ld, Jld, Hld = _flow_jets(spec, params, X)
    L = _chol(spec, params["precision_chol"])
    P = tp.einsum("ik,jk->ij", L, L)
    logdetP = 2.0 * tp.total(tp.einsum("ij,ij->i", params["precision_chol"], spec.eye))
    mu, lw = params["centroids"], params["log_weights"]
    Pmu = tp.einsum("ij,kj->ki", P, mu)
    eta = tp.einsum("ki,ni->nk", Pmu, xi) + (lw - 0.5 * tp.einsum("ki,ki->k", mu, Pmu))
    lse_eta = tp.lse(eta, axis=1)
    Pxi = tp.einsum("ij,nj->ni", P, xi)
    logp = (-0.5 * tp.einsum("ni,ni->n", xi, Pxi) + lse_eta
            + (0.5 * logdetP - tp.lse(lw, axis=0) - 0.5 * d * _LOG_2PI) + ld)
    if order == 0:
        return logp, None, None
    alpha = tp.exp(eta - tp.einsum("n,k->nk", lse_eta, np.ones(spec.n_components)))
    mbar = tp.einsum("nk,ki->ni", alpha, mu)
    g_xi = tp.einsum("ij,nj->ni", P, mbar) - Pxi
    score = tp.einsum("nki,nk->ni", J, g_xi) + Jld
    if order == 1:
        return logp, score, None
    C = tp.einsum("nk,ki,kj->nij", alpha, mu, mu) - tp.einsum("ni,nj->nij", mbar, mbar)
    H_xi = tp.einsum("ia,nab,bj->nij", P, C, P) - P
    hess = (tp.einsum("nki,nkl,nlj->nij", J, H_xi, J) + tp.einsum("nk,nkij->nij", g_xi, Hxi_map) + Hld)
    return logp, score, hess


def sample_latent(spec, params, n, rng, widen=1.0):
    """Draws from the latent mixture (covariance multiplied by ``widen``²) → (n, d)."""
    lw = params["log_weights"]
    w = np.exp(lw - lw.max())
    w /= w.sum()
    k = rng.choice(spec.n_components, size=n, p=w)
    q = params["precision_chol"]
    L = q * spec.strict_lower + np.exp(q) * spec.eye
    eps = rng.standard_normal((n, spec.d))
    # ξ = μ_k + L⁻ᵀ ε has covariance (L Lᵀ)⁻¹ = Σ
    offsets = np.linalg.solve(L.T, eps.T).T
    return params["centroids"][k] + widen * offsets


def inverse_flow(spec, params, xi):
    """x = T⁻¹(ξ), undoing the couplings in reverse order (each in closed form)."""
    z = np.array(xi, dtype=float)
    for l in reversed(range(spec.n_layers)):
        m = spec.masks[l]
        h = np.tanh((z * m) @ params[f"W{l}"].T + params[f"c{l}"])
        s = (h @ params[f"A{l}"].T) * (1.0 - m)
        t = (h @ params[f"B{l}"].T) * (1.0 - m)
        z = (z - t) * np.exp(-s)
    return z
