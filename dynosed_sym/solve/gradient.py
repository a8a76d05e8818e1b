"""Gradient solver: the global and local losses for drifts that are not affine in θ
(docs/method.md §2, "Solving").

The mean Stein feature of the global route is, for any drift,

    r_r(θ) = −√(2/m)/N Σ_i [sin(ω_rᵀx_i + c_r) ω_rᵀ f(x_i; θ) + cos(ω_rᵀx_i + c_r) ω_rᵀD(x_i)ω_r]

and its Jacobian ``J[r, k] = −√(2/m)/N Σ_i sin(ω_rᵀx_i + c_r) ω_rᵀ ∂f/∂θ_k(x_i; θ)``.  Both come
from compiled code only: the generated ``drift`` and ``drift_jacobian`` kernels (the symbolic
∂f/∂θ, printed with one joint CSE) give per-sample factors ``f_j`` and ``∂f_j/∂θ_k``, the
model-independent fill :func:`~dynosed_sym.kernels.stein_fill.accumulate_stein` contracts them with
the sines of the features (per noise block, one launch), and the small contraction with ω is
NumPy.  The diffusion part does not depend on θ and is summed once (the generated
``stein_features`` cos factors and the ``B_COS_TERMS`` table).  Cost per evaluation: linear in N
and m.

The loss ``‖r(θ)‖² + λ‖θ‖²`` (the same as the affine route's Tikhonov objective, where
r = Aθ − b) is minimised by SciPy's trust-region ``least_squares`` with the analytic Jacobian.

Variable projection.  A parameter θ_a is *separable* when its column of ∂f/∂θ is free of every
parameter, i.e. ∂²f/∂θ_a∂θ_l ≡ 0 for all l (no curvature in θ_a and no cross term with any other
parameter).  Then f = U_a(x) θ_a + h(x; θ_rest) exactly, the Stein mean is
r = A_a θ_a + r_h(θ_rest) with a constant A_a, and for fixed θ_rest the optimal θ_a is the
Tikhonov solution ``θ_a = −(A_aᵀA_a + λI)⁻¹ A_aᵀ r_h``.  The reduced residual
``[(I − A_a G A_aᵀ) r_h; −√λ G A_aᵀ r_h; √λ θ_rest]`` (G = (A_aᵀA_a + λI)⁻¹) is a constant
linear map of r_h and θ_rest, so its Jacobian is exact, and only θ_rest is searched.

At the optimum θ̂ the fit is reported like an affine one on the local linearisation
``A := J(θ̂)``, ``b := J(θ̂) θ̂ − r(θ̂)`` with per-block Jacobians and residuals for the noise.

Local route (:class:`LocalProblem`).  The same search minimises the local loss
``(1/M) Σ_i R(x_i; θ)² + λ‖θ‖²`` (docs/method.md §2) with ``r = R/√M``.  The generated
``local_residual`` kernel (printed from the symbolic ``R = sᵀf + ∇·f − β₀`` and
``∂R/∂θ_k = sᵀ∂f/∂θ_k + ∇·∂f/∂θ_k``, see :mod:`~dynosed_sym.model.derivation`) gives R and
∂R/∂θ at the probes for given scores; the scores are estimated once (they do not depend on
θ).  R is affine in a separable θ_a with the θ-free column ``sᵀU_a + ∇·U_a``, so variable
projection applies unchanged.  At the optimum the linearisation is taken for the full-data
scores and for every delete-one-block replicate, which feed the jackknife of
:func:`dynosed_sym.fit_local` exactly as the affine rows do.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..codegen.loading import check_finite_output
from ..errors import ConvergenceWarning, DataError, NotAffineError
from ..kernels.stein_fill import FEATURE_BLOCK, accumulate_stein
from .linear import MAX_SYSTEM_ENTRY

__all__ = ["GlobalProblem", "LocalProblem", "separable_params", "fit_gradient", "starting_point"]


def separable_params(model):
    """Indices of parameters entering the drift affinely with θ-free coefficients (see module doc).

    Derived symbolically (``model.derivation.separable``); the gradient solver reads the same
    tuple from the generated module (``SEPARABLE``), so a warm start does not re-derive.
    """
    return list(model.derivation.separable)


def starting_point(model, cm, theta0, gradient):
    """Start of the gradient solver: ``theta0``, else ``model.nominal``, else zeros (affine only).

    A non-affine model without either raises :class:`NotAffineError` (naming the offending term
    and asking for ``theta0=``); so does a non-affine model with ``gradient`` False.
    Returns None when ``gradient`` is False.
    """
    if not cm.is_affine:  # read from the generated module: no re-derivation on the warm path
        if not gradient:
            model.derivation.require_affine()
        if theta0 is None and model.nominal is None:
            try:
                model.derivation.require_affine()
            except NotAffineError as exc:
                raise NotAffineError(
                    f"{exc}; the gradient solver needs a starting point: pass "
                    "theta0= or give the model nominal= values",
                    param=exc.param,
                    component=exc.component,
                    term=exc.term,
                ) from None
    start = None if theta0 is None else model.theta_vector(theta0, "theta0")  # checked always
    if not gradient:
        if start is not None:
            warnings.warn(
                "Solver.theta0 is not used: the drift is affine in θ and the linear solve needs "
                "no starting point (Solver(method='gradient') would start from it)",
                UserWarning,
                stacklevel=4,
            )
        return None
    if start is not None:
        return start
    if model.nominal is not None:
        return np.array(model.nominal, dtype=float)
    return np.zeros(model.n)


class LocalProblem:
    """Scaled local residual r(θ) = R/√M (M,) and its Jacobian at probes with given scores.

    Parameters
    ----------
    cm : CompiledModel
    P : (M, d) probes
    S : (K, M, d) scores and J : (K, M, d, d) score Jacobians; index 0 holds the full-data
        estimate, 1 … K−1 optional delete-one-block replicates (used only by
        :meth:`linearisation`)
    g : (M,) ∂ₜlog p at the probes (zeros for a stationary snapshot)
    """

    def __init__(self, cm, P, S, J, g):
        self.cm, self.model = cm, cm.model
        self.P = np.ascontiguousarray(P, dtype=float)
        self.M = self.P.shape[0]
        self.K = S.shape[0]
        self.S = np.ascontiguousarray(S, dtype=float)
        self.J = np.ascontiguousarray(J, dtype=float)
        self.g = np.ascontiguousarray(g, dtype=float)
        self.scale = 1.0 / math.sqrt(self.M)
        self._tiled = None

    def _kernel(self, P, S, J, g, theta):
        n = self.model.n
        R = np.empty(P.shape[0])
        dR = np.empty((P.shape[0], n))
        with np.errstate(invalid="ignore", over="ignore"):
            self.cm.module.local_residual(
                P, S, J, g, np.ascontiguousarray(theta, dtype=float), R, dR
            )
        return R * self.scale, dR * self.scale

    def evaluate(self, theta, cols=None):
        """r (M,) and its Jacobian (M, len(cols)) for the full-data scores."""
        r, Jr = self._kernel(self.P, self.S[0], self.J[0], self.g, theta)
        if not (np.isfinite(r).all() and np.isfinite(Jr).all()):
            bad = int(np.flatnonzero(~(np.isfinite(r) & np.isfinite(Jr).all(axis=1)))[0])
            raise DataError(
                f"the local residual or its θ-gradient is not finite at probe {bad} "
                f"(x = {np.array2string(self.P[bad], precision=4)}, θ = "
                f"{np.array2string(np.asarray(theta), precision=4)}): the drift overflowed "
                "or was evaluated outside its domain, or the score estimate is not finite"
            )
        return r, (Jr if cols is None else Jr[:, list(cols)])

    def linearisation(self, theta):
        """A (K, M, n) = ∂r/∂θ and b (K, M) = Aθ − r at θ for every score set (full, replicates)."""
        K, M, d = self.K, self.M, self.model.d
        if self._tiled is None:
            self._tiled = (
                np.tile(self.P, (K, 1)),
                self.S.reshape(K * M, d),
                self.J.reshape(K * M, d, d),
                np.tile(self.g, K),
            )
        r, Jr = self._kernel(*self._tiled, theta)
        A = Jr.reshape(K, M, self.model.n)
        b = A @ np.asarray(theta, dtype=float) - r.reshape(K, M)
        return A, b


def sample_factors(cm, X, theta, cols):
    """(N, d + d·len(cols)): per sample the drift f(x; θ) and its θ-Jacobian's columns ``cols``
    (``∂f_j/∂θ_k`` in j-major order), from the generated ``drift`` and ``drift_jacobian``
    kernels, checked finite (DataError otherwise)."""
    N, d = X.shape[0], cm.model.d
    F = np.empty((N, d))
    cm.module.drift(X, theta, F)
    # θ named: at a start (theta0, nominal) outside the drift's domain the sample is not to blame
    at = f" at θ = {np.array2string(np.asarray(theta, dtype=float), precision=4)}"
    check_finite_output(F, "the drift" + at, X)
    if not cols:
        return F
    Jf = np.empty((N, d, cm.model.n))
    cm.module.drift_jacobian(X, theta, Jf)
    Jf = Jf[:, :, cols]
    check_finite_output(Jf, "the drift's parameter Jacobian" + at, X)
    return np.ascontiguousarray(np.concatenate([F, Jf.reshape(N, d * len(cols))], axis=1))


#: Largest (N, m) matrix of feature sines :meth:`GlobalProblem.dense` holds (N = 32,768 at
#: m = 2048).
DENSE_BYTES = 512 * 2**20


class GlobalProblem:
    """Stein mean r(θ) and Jacobian J(θ) of the global route over samples X with noise blocks.

    Parameters
    ----------
    cm : CompiledModel
    X : (N, d) samples
    feats : RandomFeatures
    edges : (G + 1,) row boundaries of the noise blocks
    """

    def __init__(self, cm, X, feats, edges):
        self.cm, self.model, self.feats = cm, cm.model, feats
        self.X = np.ascontiguousarray(X, dtype=float)
        self.edges = np.asarray(edges, dtype=np.int64)
        self.counts = np.diff(self.edges)
        self.N = int(self.counts.sum())
        self.G = self.counts.size
        mod = cm.module
        m, d = feats.m, self.model.d
        self.scale = math.sqrt(2.0 / m)
        n_sin = 1 + max([t[0] for t in mod.A_TERMS] + [t[0] for t in mod.B_SIN_TERMS], default=-1)
        n_cos = 1 + max([t[0] for t in mod.B_COS_TERMS], default=-1)
        phi_s = np.empty((self.N, n_sin))
        phi_c = np.empty((self.N, n_cos))
        mod.stein_features(self.X, phi_s, phi_c)
        check_finite_output(phi_c, "a Stein feature (diffusion term)", self.X)
        P_s = np.zeros((self.G, feats.n_blocks, 0, FEATURE_BLOCK))
        P_c = np.zeros((self.G, feats.n_blocks, n_cos, FEATURE_BLOCK))
        accumulate_stein(
            self.X, np.zeros((self.N, 0)), phi_c, self.edges, feats.Wt, feats.ct, P_s, P_c
        )
        Om = feats.omega
        # cos part per block, as sums over the block's rows: Σ_i cos_ri ω_rᵀD(x_i)ω_r  (G, m)
        self.c_sums = np.zeros((self.G, m))
        for g in range(self.G):
            Pc = feats.unblock(P_c[g])
            for e, j, l, coef in mod.B_COS_TERMS:
                self.c_sums[g] += coef * Om[:, j] * Om[:, l] * Pc[e]
        _ = d
        diffusion_scale(self.c_sums.sum(0) / self.N, feats.lengthscale)

    def sums(self, theta, cols=None):
        """Per-block sums (G, m) of the Stein feature and (G, m, len(cols)) of its θ-Jacobian.

        Sums are over rows (divide by the counts for means); ``cols`` selects Jacobian columns.
        """
        model, feats = self.model, self.feats
        theta = np.ascontiguousarray(theta, dtype=float)
        d, n, N = model.d, model.n, self.N
        cols = list(range(n)) if cols is None else list(cols)
        nc = len(cols)
        phi_s = sample_factors(self.cm, self.X, theta, cols)
        K = phi_s.shape[1]
        P_s = np.zeros((self.G, feats.n_blocks, K, FEATURE_BLOCK))
        P_c = np.zeros((self.G, feats.n_blocks, 0, FEATURE_BLOCK))
        accumulate_stein(self.X, phi_s, np.zeros((N, 0)), self.edges, feats.Wt, feats.ct, P_s, P_c)
        S = P_s.transpose(0, 2, 1, 3).reshape(self.G, K, -1)[:, :, : feats.m]  # (G, K, m)
        Om = feats.omega  # (m, d)
        r = -self.scale * (np.einsum("rj,gjr->gr", Om, S[:, :d]) + self.c_sums)
        J = -self.scale * np.einsum("rj,gjkr->grk", Om, S[:, d:].reshape(self.G, d, nc, feats.m))
        return r, J

    def evaluate(self, theta, cols=None):
        """Means over all samples: r (m,), J (m, len(cols))."""
        r, J = self.sums(theta, cols)
        return r.sum(0) / self.N, J.sum(0) / self.N

    def dense(self, max_bytes=DENSE_BYTES):
        """The same means from the sines of the features held as an (N, m) matrix (one BLAS
        product per evaluation instead of the fill's N·m sines): :class:`DenseGlobal`, or None
        when that matrix would exceed ``max_bytes``.  For the many evaluations of a profile
        (:mod:`.profile`); equal to :meth:`evaluate` up to rounding."""
        if 8 * self.N * self.feats.m > max_bytes:
            return None
        return DenseGlobal(self)

    def linearisation(self, theta):
        """A = J(θ), b = Jθ − r and their per-block means, for :func:`.report.analyse`."""
        r_s, J_s = self.sums(theta)
        w = self.counts.astype(float)
        A_blocks = J_s / w[:, None, None]
        r_blocks = r_s / w[:, None]
        A = J_s.sum(0) / self.N
        r = r_s.sum(0) / self.N
        b = A @ theta - r
        b_blocks = A_blocks @ theta - r_blocks
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise DataError("the linearised system at the optimum is not finite")
        return A, b, A_blocks, b_blocks, self.counts.copy()


class DenseGlobal:
    """:meth:`GlobalProblem.evaluate` with the feature sines ``sin(Xωᵀ + c)`` (N, m) held: the
    Stein mean and its Jacobian as one product of the per-sample factors with them."""

    def __init__(self, prob):
        self.cm, self.model, self.X = prob.cm, prob.model, prob.X
        feats = prob.feats
        self.Om, self.scale, self.N = feats.omega, prob.scale, prob.N
        self.sines = np.sin(self.X @ feats.omega.T + feats.phase[None, :])
        self.c_sum = prob.c_sums.sum(0)

    def evaluate(self, theta, cols=None):
        """r (m,), J (m, len(cols)) (module docstring's formulas)."""
        theta = np.ascontiguousarray(theta, dtype=float)
        d, n, N = self.model.d, self.model.n, self.N
        cols = list(range(n)) if cols is None else list(cols)
        nc = len(cols)
        F = sample_factors(self.cm, self.X, theta, cols)
        S = F.T @ self.sines  # (d + d·nc, m): one pass over the sines (the product is memory-bound)
        r = -self.scale * (np.einsum("rj,jr->r", self.Om, S[:d]) + self.c_sum) / N
        J = -self.scale * np.einsum("rj,jkr->rk", self.Om, S[d:].reshape(d, nc, S.shape[1])) / N
        return r, J


def diffusion_scale(c, lengthscale):
    """Raise DataError when the θ-free (diffusion) part ``c`` of the Stein system, of order
    ``D/ℓ²``, leaves the range the solve handles: data spread over ℓ ≈ 1e-151 with D = 1 make
    it ≈ 1e300, and the drift parameters that balance it (≈ D/ℓ²) overflow in the search."""
    big = float(np.abs(c).max(initial=0.0))
    if not big <= MAX_SYSTEM_ENTRY:  # also NaN
        raise DataError(
            f"X: the diffusion part of the Stein system has entries of size {big:.3g} at the "
            f"samples' spread (kernel bandwidth {lengthscale:.3g}): a stationary law this narrow "
            "for this D needs drift parameters of order D/bandwidth², too large for the search "
            "in double precision; rescale the state variables (and the model with them) to a "
            "spread of order one"
        )


class _Memo:
    """r and J at the last θ: least_squares asks for fun then jac at the same point (one fill)."""

    def __init__(self, prob, cols):
        self.prob, self.cols, self.key, self.val = prob, cols, None, None

    def __call__(self, th):
        key = np.asarray(th, dtype=float).tobytes()
        if key != self.key:
            self.key, self.val = key, self.prob.evaluate(th, cols=self.cols)
        return self.val


def _full_search(prob, lam, theta0, **ls_kw):
    from scipy.optimize import least_squares

    n = prob.model.n
    sl = math.sqrt(lam)

    ev = _Memo(prob, None)

    def fun(th):
        r, _ = ev(th)
        return _finite(np.concatenate([r, sl * th]), th)

    def jac(th):
        _, J = ev(th)
        return np.vstack([J, sl * np.eye(n)])

    res = least_squares(fun, theta0, jac=jac, method="trf", **ls_kw)
    return res.x, float(2 * res.cost), res.nfev, _status(res)


def _finite(residual, theta):
    """The residual vector of a search, or a DataError when it overflowed at ``theta``."""
    if not np.isfinite(residual).all():
        raise DataError(
            "the gradient solver's residual is not finite at θ = "
            f"{np.array2string(np.asarray(theta), precision=4)} (overflow): start from a "
            "theta0 of moderate size"
        )
    return residual


def _status(res):
    """(converged, status, message) of a ``least_squares`` result: status 0 is a search stopped
    by ``max_nfev`` (1–4: one of the tolerances was met)."""
    return bool(res.success and res.status > 0), int(res.status), str(res.message)


def _projected_search(prob, lam, theta0, sep, **ls_kw):
    from scipy.optimize import least_squares

    n = prob.model.n
    rest = [k for k in range(n) if k not in sep]
    sl = math.sqrt(lam)
    th_base = np.array(theta0, dtype=float)
    th_base[sep] = 0.0
    # A_a is θ-free: one evaluation of the separable columns
    _, A_a = prob.evaluate(th_base, cols=sep)
    H = A_a.T @ A_a + lam * np.eye(len(sep))
    Gm = np.linalg.pinv(H, hermitian=True)
    GA = Gm @ A_a.T  # (a, m)

    def full_theta(t_rest, r_h):
        th = np.zeros(n)
        th[rest] = t_rest
        th[sep] = -GA @ r_h
        return th

    ev = _Memo(prob, rest)

    def at(t_rest, cols):
        th = np.zeros(n)
        th[rest] = t_rest
        return ev(th)

    def fun(t_rest):
        r_h, _ = at(t_rest, ())
        ta = -GA @ r_h
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.concatenate([r_h + A_a @ ta, sl * ta, sl * t_rest])
        return _finite(out, full_theta(t_rest, r_h))

    def jac(t_rest):
        _, Jh = at(t_rest, rest)
        GJ = GA @ Jh
        return np.vstack([Jh - A_a @ GJ, -sl * GJ, sl * np.eye(len(rest))])

    if rest:
        res = least_squares(fun, th_base[rest], jac=jac, method="trf", **ls_kw)
        t_rest, cost, nfev, status = res.x, float(2 * res.cost), res.nfev, _status(res)
    else:  # every parameter separable: the projection is the exact (linear) solution
        t_rest, nfev = np.zeros(0), 0
        cost = float(np.sum(fun(t_rest) ** 2))
        status = (True, 1, "all parameters separable: solved exactly")
    r_h, _ = at(t_rest, ())
    return full_theta(t_rest, r_h), cost, nfev, status


def fit_gradient(
    prob,
    lam,
    theta0,
    *,
    projection=True,
    n_starts=1,
    seed=0,
    spread=0.5,
    xtol=1e-12,
    ftol=1e-12,
    gtol=1e-12,
    max_nfev=None,
):
    """Minimise ‖r(θ)‖² + λ‖θ‖² from ``theta0`` (and ``n_starts − 1`` seeded perturbed starts).

    Parameters
    ----------
    prob : GlobalProblem or LocalProblem
    lam : float
    theta0 : (n,) array
    projection : bool
        Eliminate the separable parameters exactly (variable projection).
    n_starts, seed, spread
        Starts: ``theta0`` and ``n_starts − 1`` seeded relative perturbations of size ``spread``.
    xtol, ftol, gtol, max_nfev
        Stopping rules of each ``least_squares`` search (``max_nfev`` None: SciPy's default,
        100·n evaluations).

    Returns
    -------
    theta : (n,) array
        The lowest-loss end point.
    info : dict
        ``solver``, ``loss``, ``nfev``, ``starts``, ``projected`` (separable parameter names),
        ``converged`` (every search met a tolerance; False when one was stopped by
        ``max_nfev``), ``status`` (``least_squares`` status of the chosen search: 0 stopped by
        ``max_nfev``, 1–4 a tolerance met) and ``message`` (why a search stopped unconverged,
        "" otherwise).  A :class:`~dynosed_sym.errors.ConvergenceWarning` is issued when
        ``converged`` is False.
    """
    model = prob.model
    theta0 = np.asarray(theta0, dtype=float)
    sep = list(prob.cm.module.SEPARABLE) if projection else []
    rng = np.random.default_rng(seed)
    starts = [theta0]
    for _ in range(max(0, int(n_starts) - 1)):
        starts.append(
            theta0 * (1.0 + spread * rng.standard_normal(theta0.size))
            + spread * rng.standard_normal(theta0.size) * (theta0 == 0)
        )
    kw = dict(xtol=xtol, ftol=ftol, gtol=gtol, max_nfev=max_nfev)
    best = None
    nfev_tot = 0
    failed = []
    for i, th0 in enumerate(starts):
        if sep:
            th, cost, nfev, status = _projected_search(prob, lam, th0, sep, **kw)
        else:
            th, cost, nfev, status = _full_search(prob, lam, th0, **kw)
        nfev_tot += nfev
        if not status[0]:
            failed.append(f"start {i}: {status[2]}" if len(starts) > 1 else status[2])
        if best is None or cost < best[1]:
            best = (th, cost, status)
    info = {
        "solver": "gradient",
        "loss": best[1],
        "nfev": nfev_tot,
        "starts": len(starts),
        "projected": [model.param_names[k] for k in sep],
        "converged": not failed,
        "status": best[2][1],
        "message": "; ".join(failed),
    }
    if failed:
        warnings.warn(
            f"the gradient search did not converge ({info['message']}): θ̂ is where it "
            "stopped, not an optimum; raise max_nfev or give a better theta0",
            ConvergenceWarning,
            stacklevel=3,
        )
    return best[0], info
