"""The density model: a latent Gaussian mixture warped by a near-identity affine-coupling flow.

Following the reference paper's supplement: the latent variable ξ has the data's dimension d and
a Gaussian-mixture law with trainable centroids μ_k (K × d), log-weights λ_k and one shared
covariance Σ = P⁻¹.  An invertible map T (= Φ⁻¹ of the paper) takes data x to ξ through RealNVP
affine couplings: with a binary mask m (kept coordinates), layer by layer

    a = W (m ⊙ z) + c,   h = tanh(a),   s = (1 − m) ⊙ (A h),   t = (1 − m) ⊙ (B h),
    z ← z ⊙ exp(s) + t,                 log|det ∂T/∂x| = Σ_layers Σ_i s_i.

A and B start at zero, so the couplings start as the identity.

With ``tail=True`` two fixed-form maps come first, in whitened coordinates
u = W(x − c) (c, W from the starting samples): the radial map u ← u√(1 + γ|u|²) and the
per-coordinate map u_i ← u_i√(1 + γ_i u_i²), γ and γ_i trained through their logarithms.  Both are
monotone with closed-form inverses, and far out |u| grows like the square of the input, so a
Gaussian latent gives q ∝ exp(−c|x|⁴): the quartic tails of the stationary laws of cubic drifts,
which couplings that are affine far out cannot produce (their tails stay Gaussian — heavier — and
there the residual, growing like the cubic drift, dominated the objective).  γ → 0 is the identity.
Then, by the change of variables (T: all maps, x → ξ),

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

__all__ = [
    "FlowMixtureSpec",
    "init_params",
    "mixture_params",
    "jets",
    "sample_latent",
    "inverse_flow",
    "forward_flow",
    "tail_to_latent",
    "param_names",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
#: Tail strength γ of :func:`init_params` when the spec has a tail map.
BLOB_GAMMA = 0.3
#: Per-coordinate tail strength that is "off" (γ is trained through log γ, so never exactly 0).
AXES_GAMMA_OFF = 1e-3


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
    tail : bool
        Put the radial and per-coordinate tail maps first (parameters ``tail_log_gamma`` (1,) and
        ``tail_log_gamma_axes`` (d,)).
    center : array (d,), optional
    whiten : array (d, d), optional
        The tail maps act on u = whiten · (x − center) (defaults: the origin and the identity).
    """

    def __init__(self, d, n_components, n_layers, n_hidden, tail=False, center=None, whiten=None):
        self.d = int(d)
        self.n_components = int(n_components)
        self.n_layers = int(n_layers) if d > 1 else 0
        self.n_hidden = int(n_hidden)
        self.tail = bool(tail)
        self.center = (
            np.zeros(self.d) if center is None else np.asarray(center, dtype=float).reshape(self.d)
        )
        self.whiten = (
            np.eye(self.d)
            if whiten is None
            else np.asarray(whiten, dtype=float).reshape(self.d, self.d)
        )
        self.log_det_whiten = float(np.linalg.slogdet(self.whiten)[1])
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
        if self.tail:
            out["tail_log_gamma"] = (1,)
            out["tail_log_gamma_axes"] = (d,)
        for l in range(self.n_layers):
            out.update({f"W{l}": (M, d), f"c{l}": (M,), f"A{l}": (d, M), f"B{l}": (d, M)})
        return out

    def __repr__(self):
        return (
            f"FlowMixtureSpec(d={self.d}, n_components={self.n_components}, "
            f"n_layers={self.n_layers}, n_hidden={self.n_hidden})"
        )


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
    if spec.tail:
        p["tail_log_gamma"] = np.array([np.log(BLOB_GAMMA)])
        p["tail_log_gamma_axes"] = np.full(d, np.log(AXES_GAMMA_OFF))
    for l in range(spec.n_layers):
        p[f"W{l}"] = rng.standard_normal((M, d)) / scale
        p[f"c{l}"] = rng.standard_normal(M)
        p[f"A{l}"] = np.zeros((d, M))
        p[f"B{l}"] = np.zeros((d, M))
    return p


def mixture_params(spec, centroids, weights, cov, rng, log_gamma=None, log_gamma_axes=None):
    """Parameters with the given latent mixture (shared covariance ``cov``) and an identity flow.

    The conditioners' hidden weights are random (seeded), their output weights zero.
    """
    d, K, M = spec.d, spec.n_components, spec.n_hidden
    L = np.linalg.cholesky(np.linalg.inv(np.asarray(cov, dtype=float).reshape(d, d)))
    p = {
        "centroids": np.array(centroids, dtype=float).reshape(K, d),
        "log_weights": np.log(np.maximum(np.asarray(weights, dtype=float), 1e-12)),
        "precision_chol": np.tril(L, -1) + np.diag(np.log(np.diag(L))),
    }
    if spec.tail:
        p["tail_log_gamma"] = np.array(log_gamma, dtype=float).reshape(1)
        p["tail_log_gamma_axes"] = (
            np.full(d, np.log(AXES_GAMMA_OFF))
            if log_gamma_axes is None
            else np.array(log_gamma_axes, dtype=float).reshape(d)
        )
    for l in range(spec.n_layers):
        # latent coordinates are whitened-scale, so unit-scale conditioner weights
        p[f"W{l}"] = rng.standard_normal((M, d))
        p[f"c{l}"] = rng.standard_normal(M)
        p[f"A{l}"] = np.zeros((d, M))
        p[f"B{l}"] = np.zeros((d, M))
    lg = p["log_weights"]
    p["log_weights"] = lg - lg.max()
    return p


def tail_to_latent(spec, log_gamma, X, log_gamma_axes=None):
    """Values of the tail maps (no couplings) → z (N, d)."""
    X = np.asarray(X, dtype=float)
    if not spec.tail:
        return X
    gam = float(np.exp(np.asarray(log_gamma, dtype=float).reshape(-1)[0]))
    u = (X - spec.center) @ spec.whiten.T
    z = u * np.sqrt(1.0 + gam * np.einsum("ni,ni->n", u, u))[:, None]
    if log_gamma_axes is not None:
        z = _axes_forward(log_gamma_axes, z)
    return z


def forward_flow(spec, params, X):
    """ξ = T(x): tail map then couplings, values only → (N, d)."""
    z = np.asarray(X, dtype=float)
    if spec.tail:
        gam = float(np.exp(np.asarray(params["tail_log_gamma"]).reshape(-1)[0]))
        u = (z - spec.center) @ spec.whiten.T
        z = u * np.sqrt(1.0 + gam * np.einsum("ni,ni->n", u, u))[:, None]
        z = _axes_forward(params["tail_log_gamma_axes"], z)
    for l, m in enumerate(spec.masks):
        h = np.tanh((z * m) @ params[f"W{l}"].T + params[f"c{l}"])
        s = (h @ params[f"A{l}"].T) * (1.0 - m)
        t = (h @ params[f"B{l}"].T) * (1.0 - m)
        z = z * np.exp(s) + t
    return z


def _chol(spec, q):
    """Cholesky factor L of the precision from the raw (d, d) parameter (diagonal via exp)."""
    return q * spec.strict_lower + tp.exp(q) * spec.eye


def _tail_jets(spec, log_gamma, X):
    """The radial tail map z = u √(1 + γ|u|²), u = W(x − c), with its jets and log|det|.

    Far out |z| ~ √γ |u|², so a Gaussian in z is a density ∝ exp(−γ|u|⁴/2σ²) in x: quartic
    tails, as the stationary laws of cubic drifts have; γ → 0 is the identity (Gaussian tails).
    """
    N, d = X.shape
    W = spec.whiten
    WtW = W.T @ W
    u = (X - spec.center) @ W.T
    v = u @ W  # v_a = Σ_j u_j W_ja
    rho = np.einsum("ni,ni->n", u, u)
    gam = tp.exp(log_gamma)  # (1,)
    a = gam * rho + 1.0  # 1 + γρ
    b = gam * (2.0 * rho) + 1.0  # 1 + 2γρ
    la, lb = tp.log(a), tp.log(b)
    phi = tp.exp(0.5 * la)
    gphi = gam * tp.exp(-0.5 * la)  # γ/φ
    g3 = gam * gam * tp.exp(-1.5 * la)  # γ²/φ³
    z = tp.einsum("n,ni->ni", phi, u)
    Jz = tp.einsum("n,ia->nia", phi, W) + tp.einsum("n,ni,na->nia", gphi, u, v)
    Hz = (
        tp.einsum("n,ia,nb->niab", gphi, W, v)
        + tp.einsum("n,ib,na->niab", gphi, W, v)
        + tp.einsum("n,ni,ab->niab", gphi, u, WtW)
        - tp.einsum("n,ni,na,nb->niab", g3, u, v, v)
    )
    ld = 0.5 * (d - 2) * la + lb + spec.log_det_whiten
    ia, ib = tp.exp(-1.0 * la), tp.exp(-1.0 * lb)
    g1 = gam * (0.5 * (d - 2) * ia + 2.0 * ib)  # dg/dρ
    g2 = gam * gam * (-0.5 * (d - 2) * ia * ia - 4.0 * ib * ib)  # d²g/dρ²
    Jld = tp.einsum("n,na->na", 2.0 * g1, v)
    Hld = tp.einsum("n,ab->nab", 2.0 * g1, WtW) + tp.einsum("n,na,nb->nab", 4.0 * g2, v, v)
    return z, Jz, Hz, ld, Jld, Hld


def _axes_jets(log_gamma_axes, z, Jz, Hz, ld, Jld, Hld):
    """Compose the jets with the per-coordinate tail map z_i ← z_i √(1 + γ_i z_i²).

    With h(z) = z√(1 + γz²): h' = (1 + 2γz²)/√(1 + γz²), h'' = γz(3 + 2γz²)/(1 + γz²)^{3/2}, and
    log h' has derivatives ℓ' = 4γz/(1 + 2γz²) − γz/(1 + γz²), ℓ'' = 4γ(1 − 2γz²)/(1 + 2γz²)² −
    γ(1 − γz²)/(1 + γz²)².
    """
    gam = tp.exp(log_gamma_axes)  # (d,)
    z2 = z * z
    a = gam * z2 + 1.0  # 1 + γz²
    b = gam * (2.0 * z2) + 1.0  # 1 + 2γz²
    ia, ib = tp.exp(-1.0 * tp.log(a)), tp.exp(-1.0 * tp.log(b))
    isa = tp.exp(-0.5 * tp.log(a))  # 1/√a
    h = z * a * isa  # z √a
    h1 = b * isa  # h'
    h2 = gam * z * (b + 2.0) * ia * isa  # h'' = γz(3 + 2γz²)/a^{3/2}
    l1 = 4.0 * gam * z * ib - gam * z * ia  # (log h')'
    l2 = (
        4.0 * gam * (1.0 - 2.0 * gam * z2) * ib * ib - gam * (1.0 - gam * z2) * ia * ia
    )  # (log h')''
    Hn = tp.einsum("ni,nij,nik->nijk", h2, Jz, Jz) + tp.einsum("ni,nijk->nijk", h1, Hz)
    Jn = tp.einsum("ni,nij->nij", h1, Jz)
    ld = ld + tp.total(tp.log(h1), axis=1)
    Jld = Jld + tp.einsum("ni,nij->nj", l1, Jz)
    Hld = Hld + tp.einsum("ni,nij,nik->njk", l2, Jz, Jz) + tp.einsum("ni,nijk->njk", l1, Hz)
    return h, Jn, Hn, ld, Jld, Hld


def _axes_inverse(log_gamma_axes, z):
    """Undo z_i ← z_i √(1 + γ_i z_i²) (closed form: z_i² solves t(1 + γt) = z'²)."""
    gam = np.exp(np.asarray(log_gamma_axes, dtype=float).reshape(1, -1))
    t = z * z
    t = 2.0 * t / (1.0 + np.sqrt(1.0 + 4.0 * gam * t))
    return z / np.sqrt(1.0 + gam * t)


def _axes_forward(log_gamma_axes, z):
    gam = np.exp(np.asarray(log_gamma_axes, dtype=float).reshape(1, -1))
    return z * np.sqrt(1.0 + gam * z * z)


def _tail_inverse(spec, log_gamma, z):
    """x from z for :func:`_tail_jets` (closed form: |u|² solves ρ(1 + γρ) = |z|²)."""
    gam = float(np.exp(np.asarray(log_gamma).reshape(-1)[0]))
    rz = np.einsum("ni,ni->n", z, z)
    rho = 2.0 * rz / (1.0 + np.sqrt(1.0 + 4.0 * gam * rz))
    u = z / np.sqrt(1.0 + gam * rho)[:, None]
    return spec.center + np.linalg.solve(spec.whiten, u.T).T


def _flow_jets(spec, params, X):
    """T(x) with its x-Jacobian and x-Hessian, and log|det ∂T/∂x| with its gradient and Hessian."""
    N, d = X.shape
    if spec.tail:
        z, Jz, Hz, ld, Jld, Hld = _axes_jets(
            params["tail_log_gamma_axes"], *_tail_jets(spec, params["tail_log_gamma"], X)
        )
    else:
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
        Ha = tp.einsum("mi,nijk->nmjk", Wm, Hz) if (l > 0 or spec.tail) else None
        h = tp.tanh(a)
        h1 = 1.0 - h * h  # tanh'
        h2 = -2.0 * h * h1  # tanh''
        Jh = tp.einsum("nm,nmj->nmj", h1, Ja)
        Hh = tp.einsum("nm,nmj,nmk->nmjk", h2, Ja, Ja)
        if Ha is not None:
            Hh = Hh + tp.einsum("nm,nmjk->nmjk", h1, Ha)
        keep_out = (1.0 - m)[:, None]
        outs = []
        for name in (f"A{l}", f"B{l}"):
            Wo = params[name] * keep_out  # (d, M): only the transformed coordinates move
            outs.append(
                (
                    tp.einsum("im,nm->ni", Wo, h),
                    tp.einsum("im,nmj->nij", Wo, Jh),
                    tp.einsum("im,nmjk->nijk", Wo, Hh),
                )
            )
        (s, Js, Hs), (t, Jt, Ht) = outs
        E = tp.exp(s)
        JE = tp.einsum("ni,nij->nij", E, Js)
        HE = tp.einsum("ni,nij,nik->nijk", E, Js, Js) + tp.einsum("ni,nijk->nijk", E, Hs)
        Hz = (
            tp.einsum("nijk,ni->nijk", Hz, E)
            + tp.einsum("nij,nik->nijk", Jz, JE)
            + tp.einsum("nik,nij->nijk", Jz, JE)
            + tp.einsum("ni,nijk->nijk", z, HE)
            + Ht
        )
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
    logp = (
        -0.5 * tp.einsum("ni,ni->n", xi, Pxi)
        + lse_eta
        + (0.5 * logdetP - tp.lse(lw, axis=0) - 0.5 * d * _LOG_2PI)
        + ld
    )
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
    hess = (
        tp.einsum("nki,nkl,nlj->nij", J, H_xi, J) + tp.einsum("nk,nkij->nij", g_xi, Hxi_map) + Hld
    )
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
    if spec.tail:
        z = _tail_inverse(
            spec, params["tail_log_gamma"], _axes_inverse(params["tail_log_gamma_axes"], z)
        )
    return z
