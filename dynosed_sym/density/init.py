"""Where the mass is: the starting density of :func:`density_from_dynamics` from a short simulation.

The residual the density is trained on is local, so training must start in the right region, and
it cannot move mass between metastable states (see the notes in :mod:`.optimize`).  Both come
cheaply from the model's own compiled simulator (:func:`dynosed_sym.simulate`, ≈ 10⁸ chain-steps
per second on two cores):

1. **Time step from the drift.**  Chains start from ``center + scale·N(0, I)``; the step is
   ``dt = 0.02 / κ`` with κ the 90th percentile over the chains of the spectral norm of the drift
   Jacobian ∂f/∂x (central differences of the compiled drift), re-estimated after a 500-step
   warm-up, so that the Euler–Maruyama bias of the stationary law is about a percent.  A run that
   diverges is repeated with half the step.
2. **Run until the mass stops moving.**  20 000 chains run S = 2000 steps and record 4 states each
   over the second half.  Per chain, the change between its first two and last two records of the
   mass in 8 coarse cells (k-means) is averaged over chains (a paired comparison); while some
   cell's change exceeds 4 standard errors and the change is more than 0.005 in total variation,
   or the simulated time is shorter than 3 slowest relaxation times τ (estimated from the chains'
   moves between the cells: the second eigenvalue of the cell-to-cell transition matrix between
   consecutive records) while an imbalance of more than 0.01 could still be relaxing undetected
   (bounded by 4 s.e. / (e^{Δ/τ} − 1), Δ the time between the two halves of the records), the run
   continues with S doubled (everything before becoming burn-in), within a budget of 2·10⁹
   chain-steps.  Wells that the chains do not cross within the run keep the share of chains they
   started with, known to ±0.5/√20 000 ≈ 0.0035 — right only if the start is placed evenly; such a
   run is reported as not settled.
3. **A mixture where the samples are** (:func:`starting_mixture`).  The samples set the centre and
   (Cholesky) whitening of the tail maps of :mod:`.flow_mixture`; which tail map starts switched on
   comes from the drift's growth (:func:`tail_exponents`); an EM fit with one shared covariance,
   started by k-means++, on 6000 of the samples mapped to latent coordinates gives the centroids and
   covariance, and the mean responsibilities over all samples the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..codegen.loading import compile_model
from ..errors import DataError
from ..options import Execution
from . import flow_mixture as fm

__all__ = [
    "SimulationStart",
    "simulation_start",
    "fit_tied_mixture",
    "starting_mixture",
    "tail_exponents",
    "tail_exponent",
    "starting_gamma",
    "soft_bins",
]

#: Smallest γ used for "0" (γ is trained through log γ).
GAMMA_FLOOR = 1e-3
_RECORDS = 4  # recorded states per chain (second half of the run)
_FIRST_STEPS = 2000  # steps of the first run (doubled while the chains have not settled)
_BUDGET = 2e9  # chain-steps over all runs (≈ 17 s at 1.2·10⁸ chain-steps/s)
_DT_FACTOR = 0.02  # dt = _DT_FACTOR / κ
_DRIFT_Z = 4.0  # the mass is still moving when some cell's drift exceeds 4 standard errors
_DRIFT_TV = 0.005  # ... and the drift (as a TV) exceeds this
_RELAX_TIMES = 3.0  # settled after this many slowest relaxation times (e^{-3} ≈ 5 % left) ...
_LEFT_TV = 0.01  # ... or when the imbalance that can be left undetected is below this


@dataclass
class SimulationStart:
    """Samples of a short simulation and how they were obtained.

    Attributes
    ----------
    samples : numpy.ndarray (n_chains · 4, d)
        Recorded states, ordered by chain then time.
    n_chains : int
    dt : float
    steps : int
        Steps per chain over all runs.
    equilibrated : bool
        Whether the run lasted at least 3 slowest relaxation times and the mass in coarse cells
        had stopped drifting (within 4 standard errors, or by less than 0.005) at the end.
    time, relaxation_time : float
        Simulated time per chain, and the slowest relaxation time estimated from the chains'
        moves between coarse cells (∞ when none moved).
    drift_tv, noise_tv : float
        Total variation between the coarse-cell masses of the first and last halves of the
        recorded window (the same chains), and the sum of its per-cell standard errors.
    """

    samples: np.ndarray
    n_chains: int
    dt: float
    steps: int
    equilibrated: bool
    drift_tv: float
    noise_tv: float
    time: float = float("nan")
    relaxation_time: float = float("nan")
    history: list = field(default_factory=list)

    def summary(self):
        return {
            "n_samples": int(self.samples.shape[0]),
            "n_chains": self.n_chains,
            "dt": self.dt,
            "steps": self.steps,
            "time": self.time,
            "relaxation_time": self.relaxation_time,
            "equilibrated": self.equilibrated,
            "drift_tv": self.drift_tv,
            "noise_tv": self.noise_tv,
        }


def _drift_rate(cm, theta, X):
    """90th percentile over the rows of X of ‖∂f/∂x‖₂ (central differences of the drift)."""
    N, d = X.shape
    h = 1e-5 * (1.0 + np.abs(X))
    J = np.empty((N, d, d))
    for j in range(d):
        E = np.zeros_like(X)
        E[:, j] = h[:, j]
        J[:, :, j] = (cm.drift(X + E, theta) - cm.drift(X - E, theta)) / (2.0 * h[:, j : j + 1])
    norms = np.linalg.norm(J, ord=2, axis=(1, 2))
    norms = norms[np.isfinite(norms)]
    if norms.size == 0:
        raise DataError(
            "density_from_dynamics: the drift Jacobian is not finite at the start points; "
            "move the start where the drift is defined (start=Start(center=..., scale=...))"
        )
    return float(np.quantile(norms, 0.9))


def _kmeans(X, k, rng, iters=30):
    """Plain k-means (k-means++ start) → centres (k, d)."""
    C = [X[rng.integers(X.shape[0])]]
    d2 = ((X - C[0]) ** 2).sum(1)
    for _ in range(k - 1):
        total = d2.sum()
        i = rng.integers(X.shape[0]) if total <= 0 else rng.choice(X.shape[0], p=d2 / total)
        C.append(X[i])
        d2 = np.minimum(d2, ((X - C[-1]) ** 2).sum(1))
    C = np.array(C)
    for _ in range(iters):
        lab = np.argmin(((X[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
        for j in range(k):
            sel = lab == j
            if sel.any():
                C[j] = X[sel].mean(0)
    return C


def _drift_check(records, rng):
    """Has the mass stopped moving, and how slowly does it move?

    Cells: k-means (8) on the scaled late records.  (1) Per chain, the fraction of its early and of
    its late records in each cell; their difference averaged over chains is the drift of the
    cell's mass (paired: the same chains), with a standard error from the spread over chains.
    (2) The cell-to-cell transitions between consecutive records give a transition matrix (counts
    symmetrised); its second eigenvalue λ₂ gives the slowest relaxation time in units of the record
    spacing, −1/ln λ₂ (∞ when no chain changes cell).

    records : (n_chains, R, d)

    Returns
    -------
    drift : float      ½Σ|drift| (a total variation)
    noise : float      ½Σ standard errors
    z : float          largest |drift|/se over the cells
    lags : float       slowest relaxation time in record spacings
    """
    n, R, d = records.shape
    sd = records[:, R // 2 :].reshape(-1, d).std(0)
    sd[sd == 0] = 1.0
    scaled = records / sd
    late_pts = scaled[:, R // 2 :].reshape(-1, d)
    C = _kmeans(late_pts[:: max(1, late_pts.shape[0] // 4000)], 8, rng)
    k = C.shape[0]
    lab = np.argmin(((scaled.reshape(-1, d)[:, None, :] - C[None]) ** 2).sum(-1), axis=1).reshape(
        n, R
    )
    onehot = lab[:, :, None] == np.arange(k)[None, None, :]
    diff = onehot[:, R // 2 :].mean(1) - onehot[:, : R // 2].mean(1)  # (n, cells)
    drift = diff.mean(0)
    se = diff.std(0) / np.sqrt(n) + 1e-12
    counts = np.zeros((k, k))
    np.add.at(counts, (lab[:, :-1].ravel(), lab[:, 1:].ravel()), 1.0)
    counts = counts + counts.T
    occupied = counts.sum(1) > 0
    T = counts[np.ix_(occupied, occupied)]
    T = T / T.sum(1, keepdims=True)
    # reversible (symmetrised) chain: eigenvalues of the similar symmetric matrix
    pi = counts[occupied].sum(1)
    S = np.sqrt(pi)[:, None] * T / np.sqrt(pi)[None, :]
    ev = np.sort(np.linalg.eigvalsh(0.5 * (S + S.T)))[::-1]
    lam2 = float(ev[1]) if ev.size > 1 else 0.0
    lags = np.inf if lam2 >= 1.0 - 1e-12 else (0.0 if lam2 <= 0 else -1.0 / np.log(lam2))
    return (
        0.5 * float(np.abs(drift).sum()),
        0.5 * float(se.sum()),
        float(np.max(np.abs(drift) / se)),
        float(lags),
    )


def simulation_start(model, theta, start, *, seed, out_dir=None, budget=_BUDGET) -> SimulationStart:
    """Run the compiled simulator until the coarse mass stops drifting (see the module notes).

    Parameters
    ----------
    model : SDEModel
    theta : numpy.ndarray (n,)
    start : Start
        The chains start from ``start.center + start.scale·N(0, I)``; ``start.n_chains`` of them.
    seed : int
    out_dir : str, optional
    budget : float
        Most chain-steps over all runs.

    Raises
    ------
    DataError
        When the chains diverge even at a 16 times smaller step (names dt).
    """
    cm = compile_model(model, out_dir)
    root = np.random.SeedSequence([seed, 0x5EED])
    x_rng, k_rng, *sim_seeds = (np.random.default_rng(s) for s in root.spawn(12))
    seeds = [int(r.integers(2**31)) for r in sim_seeds]
    chains = _Chains(model, theta, start.n_chains, out_dir)
    X = start.center_of(model.d) + start.scale * x_rng.standard_normal((start.n_chains, model.d))
    dt = _DT_FACTOR / max(_drift_rate(cm, theta, X), 1e-12)
    # warm-up: move the chains off the start blob, then take the step from where they are
    warm, dt, elapsed, _ = chains.run(X, 500, 1, dt, seeds[0])
    X = warm[:, -1]
    dt = min(dt, _DT_FACTOR / max(_drift_rate(cm, theta, X), 1e-12))
    return _settle(chains, X, dt, elapsed, seeds[1:], k_rng, budget)


class _Chains:
    """The model's chains, run by :func:`dynosed_sym.simulate` from given states."""

    def __init__(self, model, theta, n_chains, out_dir):
        self.model, self.theta, self.n_chains, self.out_dir = model, theta, n_chains, out_dir

    def run(self, x0, steps, n_rec, dt, seed):
        """Records (n_chains, n_rec, d) at the end of ``steps`` steps, the dt used, the time
        simulated and the time between records; dt is halved (steps doubled) while the chains
        diverge."""
        from ..simulation import simulate

        n = self.n_chains
        for attempt in range(5):
            thin = max(1, steps // (2 * n_rec))
            burn = max(0, steps - n_rec * thin)
            try:
                out = simulate(
                    self.model,
                    self.theta,
                    n * n_rec,
                    dt=dt,
                    burn_in=burn,
                    thin=thin,
                    n_chains=n,
                    seed=seed,
                    x0=x0,
                    execution=Execution(out_dir=self.out_dir),
                )
                records = out.reshape(n, n_rec, self.model.d)
                return records, dt, (burn + n_rec * thin) * dt, thin * dt
            except DataError as exc:
                if "diverged" not in str(exc) or attempt == 4:
                    raise DataError(
                        f"density_from_dynamics: the starting simulation diverged at dt={dt:.3g} "
                        f"({exc}); move the start where the dynamics live "
                        "(start=Start(center=..., scale=...)), or pass samples as init="
                    ) from None
                dt /= 2.0
                steps *= 2


def _settle(chains, X, dt, elapsed, seeds, k_rng, budget):
    """Run, doubling the steps, until the mass in coarse cells has stopped drifting (or the
    budget is spent) → :class:`SimulationStart`."""
    n_chains = chains.n_chains
    steps, chain_steps, history = _FIRST_STEPS, 500 * n_chains, []
    for seed in seeds:
        rec, dt, t_run, spacing = chains.run(X, steps, _RECORDS, dt, seed)
        elapsed += t_run
        chain_steps += n_chains * int(round(t_run / dt))
        window = _window(rec, k_rng, spacing)
        history.append(dict(steps=steps, dt=dt, time=elapsed, **window))
        equilibrated = bool(
            window["z"] < _DRIFT_Z or window["drift_tv"] < _DRIFT_TV  # the mass stopped moving
        ) and bool(
            elapsed >= _RELAX_TIMES * window["relaxation_time"]
            or window["imbalance_bound"] <= _LEFT_TV
        )
        X = rec[:, -1]
        if equilibrated or chain_steps + 2 * steps * n_chains > budget:
            break
        steps *= 2
    last = history[-1]
    return SimulationStart(
        samples=np.ascontiguousarray(rec.reshape(-1, rec.shape[-1])),
        n_chains=n_chains,
        dt=dt,
        steps=int(round(chain_steps / n_chains)),
        equilibrated=equilibrated,
        drift_tv=last["drift_tv"],
        noise_tv=last["noise_tv"],
        time=elapsed,
        relaxation_time=last["relaxation_time"],
        history=history,
    )


def _window(records, k_rng, spacing):
    """The recorded window's drift check (:func:`_drift_check`) as a dict, with the slowest
    relaxation time and the bound on an imbalance still relaxing undetected.

    What is left of a relaxing imbalance δ e^{-t/τ} at the end: the records' halves are 2 record
    spacings apart, so an undetected drift (< 4 s.e.) bounds it by 4 s.e. / (e^{2 spacing/τ} − 1).
    """
    drift, noise, z, lags = _drift_check(records, k_rng)
    relax = lags * spacing  # slowest relaxation time
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        left = _DRIFT_Z * noise / np.expm1(2.0 * spacing / relax) if relax > 0 else 0.0
    return dict(
        relaxation_time=relax,
        drift_tv=drift,
        noise_tv=noise,
        z=z,
        imbalance_bound=float(left),
    )


def fit_tied_mixture(Z, K, rng, iters=150, tol=1e-7):
    """EM for a K-component Gaussian mixture with one shared covariance (k-means++ start).

    Parameters
    ----------
    Z : numpy.ndarray (N, d)
    K : int
    rng : numpy.random.Generator

    Returns
    -------
    centroids (K, d), weights (K,), cov (d, d), mean log-likelihood
    """
    N, d = Z.shape
    K = min(K, N)
    mu = _kmeans(Z, K, rng, iters=10)
    w = np.full(K, 1.0 / K)
    S = np.atleast_2d(np.cov(Z.T)) / K ** (2.0 / d) + 1e-9 * np.eye(d)
    prev = -np.inf
    for _ in range(iters):
        L = np.linalg.cholesky(S)
        m = np.linalg.solve(L, (Z[:, None, :] - mu[None]).reshape(-1, d).T).T.reshape(N, K, d)
        logdet = 2.0 * np.log(np.diag(L)).sum()
        lq = (
            -0.5 * (m**2).sum(-1)
            + np.log(np.maximum(w, 1e-300))
            - 0.5 * logdet
            - 0.5 * d * np.log(2 * np.pi)
        )
        top = lq.max(1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(lq - top).sum(1))
        ll = float(lse.mean())
        r = np.exp(lq - lse[:, None])
        Nk = r.sum(0) + 1e-12
        w = Nk / N
        mu = (r.T @ Z) / Nk[:, None]
        diff = Z[:, None, :] - mu[None]
        S = np.einsum("nk,nkd,nke->de", r, diff, diff) / N
        S = S + 1e-6 * np.trace(S) / d * np.eye(d)
        if ll - prev < tol * max(1.0, abs(ll)):
            break
        prev = ll
    return mu, w, S, ll


def tail_exponents(terms_of, center, whiten, rng, n_dir=32):
    """Growth exponents m of |D⁻¹f| from whitened radius 2 to 4: per whitened axis (both signs,
    the smaller) and the median over random directions → (m_axes (d,), m_median).

    Where the flux is negligible the score is ≈ D⁻¹f far out, so log p ~ −r^{m+1}: m ≈ 1 for
    linear drifts (Gaussian tails), m ≈ 3 for cubic ones (quartic tails).
    """
    d = center.shape[0]
    V = np.vstack([np.eye(d), -np.eye(d), rng.standard_normal((n_dir, d))])
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    Winv = np.linalg.inv(whiten)
    sizes = []
    for r in (2.0, 4.0):
        X = np.ascontiguousarray(center + (r * V) @ Winv.T)
        f = terms_of.compiled.drift(X, terms_of.theta)
        D = terms_of(X)[2]
        sizes.append(np.linalg.norm(np.linalg.solve(D, f[:, :, None])[:, :, 0], axis=1))
    a1, a2 = sizes
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.log(a2 / a1) / np.log(2.0)
    m = np.where(np.isfinite(m), m, 1.0)
    m_axes = np.minimum(m[:d], m[d : 2 * d])
    return m_axes, float(np.median(m))


def tail_exponent(terms_of, center, whiten, rng, n_dir=32):
    """Median growth exponent of |D⁻¹f| over directions (see :func:`tail_exponents`)."""
    return tail_exponents(terms_of, center, whiten, rng, n_dir)[1]


def starting_gamma(exponent):
    """Starting tail strength from :func:`tail_exponent`: 0.3 for drifts growing like r² or faster
    (quartic tails of q fit), γ ≈ 0 (Gaussian tails) for linear ones, 0.1 in between."""
    if exponent >= 2.0:
        return 0.3
    if exponent > 1.5:
        return 0.1
    return GAMMA_FLOOR


def starting_mixture(samples, architecture, rng, terms_of=None, n_fit=6000):
    """Spec and parameters of the starting density fitted to ``samples``.

    The tail maps' centre and whitening come from the samples' mean and covariance, their starting
    strengths from the drift's growth (:func:`tail_exponents`: quartic along every whitened axis →
    the radial map at γ = 0.3, only along some → those axes' maps; a likelihood of the samples
    could not tell the tails apart); the latent mixture is an EM fit to (a subsample of)
    the samples mapped to latent coordinates; the weights are the mean responsibilities over all
    samples; the couplings start as the identity.

    Parameters
    ----------
    samples : numpy.ndarray (N, d)
    architecture : Architecture
        Components, couplings and whether there is a tail map.
    rng : numpy.random.Generator
    terms_of : DynamicsTerms, optional
        For the tail exponents (without it the radial map starts at γ = 0.3).

    Returns
    -------
    spec : FlowMixtureSpec
    params : dict
    info : dict
        ``tail_exponents`` (per axis), ``gamma`` (radial) and ``gamma_axes``.
    """
    X = np.asarray(samples, dtype=float)
    N, d = X.shape
    center = X.mean(0)
    C = np.atleast_2d(np.cov(X.T))
    C = C + 1e-9 * np.trace(C) / d * np.eye(d)
    whiten = np.linalg.inv(np.linalg.cholesky(C))
    spec = architecture.spec(d, center=center, whiten=whiten)
    info = {}
    lg = lga = None
    if spec.tail:
        # quartic in every direction: the radial map; only along some axes: the per-axis maps
        if terms_of is not None:
            m_axes, _ = tail_exponents(terms_of, center, whiten, rng)
        else:
            m_axes = np.full(d, 3.0)
        if m_axes.min() >= 2.0:
            g_r, g_axes = starting_gamma(m_axes.min()), np.full(d, fm.AXES_GAMMA_OFF)
        else:
            g_r, g_axes = GAMMA_FLOOR, np.array([starting_gamma(m) for m in m_axes])
        info.update(tail_exponents=m_axes.tolist(), gamma=g_r, gamma_axes=g_axes.tolist())
        lg, lga = np.array([np.log(g_r)]), np.log(g_axes)
    Z = fm.tail_to_latent(spec, lg, X, lga)
    fit = rng.permutation(N)[:n_fit]
    mu, w, S, _ = fit_tied_mixture(Z[fit], spec.n_components, rng)
    params = fm.mixture_params(spec, mu, w, S, rng, log_gamma=lg, log_gamma_axes=lga)
    # weights: mean responsibilities over all samples (the share of mass, as precisely as N allows)
    w_all = soft_bins(spec, params, X).mean(0)
    params["log_weights"] = np.log(np.maximum(w_all, 1e-12))
    return spec, params, info


def soft_bins(spec, params, X):
    """Responsibilities (M, K) of the components of a density at the rows of X (its soft bins).

    For the starting density (identity flow) these partition space into K smooth cells; their
    means under two distributions give a coarse, dimension-free comparison of where the mass is.
    """
    xi = fm.forward_flow(spec, params, X)
    q = params["precision_chol"]
    L = q * spec.strict_lower + np.exp(q) * spec.eye
    P = L @ L.T
    mu, lw = params["centroids"], params["log_weights"]
    eta = (xi @ P) @ mu.T - 0.5 * np.einsum("ki,ij,kj->k", mu, P, mu) + lw
    eta -= eta.max(1, keepdims=True)
    r = np.exp(eta)
    return r / r.sum(1, keepdims=True)
