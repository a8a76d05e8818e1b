"""Data sets of the calibration sweep: seeds, the on-disk cache, the stationarity checks.

Seeds.  Data set k of family F is drawn with seed ``data_seed(F, k)`` — the SeedSequence of
``(BASE_SEED, crc32(F), k)`` — so nobody chose (or tuned on) the seeds of any cell; fit seeds
are k.

Nesting.  For seed s the largest cell's data set (``N_max = max(protocol.sizes)`` independent
chains, one record each) is drawn once; the N-sample data set of a smaller cell is its first N
rows, i.e. the first N chains.  ``ds.simulate`` guarantees that chain c's records do not depend
on ``n_chains``, so this *is* ``simulate(..., N, n_chains=N)``; exact draws are i.i.d., so a
prefix is again an exact sample.

Cache.  Every data set is an ``.npy`` file under ``<cache>/data/<family>/``, named by the SHA-256
of everything that determines it: family, sampler, seed, N_max, the protocol (dt, burn-in,
start), the truth, the model's equations, the package version and a hash of the simulator's
sources (``simulation/`` and ``codegen/``) — a change to any of them draws the data anew.
The cache folder defaults to ``benchmarks/.cache`` (git-ignored) or ``$DYNOSED_BENCH_CACHE``.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import sympy as sp

import dynosed_sym as ds

from .common import ROOT

__all__ = [
    "Protocol",
    "declare_family",
    "grid_sampler",
    "law_1d",
    "gaussian_sampler",
    "ou_stationary_cov",
    "exact_gaussian",
    "ou_model",
    "BASE_SEED",
    "data_seed",
    "default_cache_dir",
    "load_dataset",
    "prefetch_diffrax",
    "stationarity_check",
    "ks_columns",
]

#: Base of every data seed of the sweep (a date: 2026-04-19); documented, not tuned.
BASE_SEED = 20_260_419


def data_seed(name, k):
    """Seed of data set k of family ``name``."""
    ss = np.random.SeedSequence([BASE_SEED, zlib.crc32(name.encode()), int(k)])
    return int(ss.generate_state(1, np.uint32)[0])


def default_cache_dir():
    return os.environ.get("DYNOSED_BENCH_CACHE") or os.path.join(ROOT, "benchmarks", ".cache")


@dataclass(frozen=True)
class Protocol:
    """How the data sets of one family are drawn, and which N form its cells.

    Attributes
    ----------
    sizes : tuple of int
        Sample sizes N of the cells (default 2000 and 10,000; the N-sample data set of seed s is
        the first N rows — N independent chains — of the largest one, so the cells share seeds,
        not chains' draws).
    sampler : "simulate" or "exact"
    dt, burn_in : simulation step and steps before the single record of each chain.
    relaxation : float
        Slowest relaxation time (time units) behind the burn-in; ``relaxation_note`` says whence.
    x0 : None (standard normal starts), a tuple (d,) start state, or "exact" (draws of the
        exact law).
    exact : callable ``(n, rng) -> (n, d)``, optional
        Exact sampler of the stationary law (the oracle of the stationarity check).
    diffrax : bool
        Also drawn with the independent diffrax solver (calibration_diffrax).
    local_probes : int
        k-means probes of the local route (``fit_local(model, X, k)``).
    """

    sizes: tuple = (2000, 10_000)
    sampler: str = "simulate"
    dt: float = 0.01
    burn_in: int = 5000
    relaxation: float = 1.0
    relaxation_note: str = ""
    x0: object = None
    exact: object = field(default=None, compare=False)
    diffrax: bool = False
    local_probes: int = 20

    def describe(self):
        if self.sampler == "exact":
            return "exact draws of the stationary law"
        start = {None: "N(0, I) starts", "exact": "starts drawn from the exact law"}.get(
            self.x0 if isinstance(self.x0, (str, type(None))) else "", f"start x0 = {self.x0}"
        )
        units = self.burn_in * self.dt
        return (
            f"ds.simulate: n_chains = N, thin = 1, dt = {self.dt:g}, burn_in = {self.burn_in} "
            f"({units:g} time units = {units / self.relaxation:.0f}"
            f" × relaxation time {self.relaxation:.3g}: {self.relaxation_note}), {start}"
        )


def declare_family(
    name, state, params, drift, truth, diffusion=None, noise=None, nominal=None, **protocol
):
    """``(model, truth, Protocol(**protocol))`` of a family whose SDE is declared as a user would:
    ``ds.SDEModel(state, params, drift, diffusion, noise=noise, name=name, nominal=nominal)``
    (``nominal``: the start of the gradient search of a drift not affine in θ)."""
    model = ds.SDEModel(
        list(state), list(params), drift, diffusion, noise=noise, name=name, nominal=nominal
    )
    return model, np.asarray(truth, float), Protocol(**protocol)


def grid_sampler(logp, lo, hi, m=200_001):
    """Inverse-CDF sampler of a 1-D density ∝ exp(logp(x)) on [lo, hi] (linear interpolation of
    the CDF on m grid points; the tails beyond carry < 1e-12 of the mass for the laws used)."""
    x = np.linspace(lo, hi, m)
    lp = logp(x)
    w = np.exp(lp - lp.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(x))])
    cdf /= cdf[-1]
    return lambda n, rng: np.interp(rng.random(int(n)), cdf, x)[:, None]


def ou_stationary_cov(M, D):
    """Σ with M Σ + Σ Mᵀ + 2D = 0 (dx = Mx dt + √(2D) dW)."""
    import scipy.linalg

    S = scipy.linalg.solve_continuous_lyapunov(np.asarray(M, float), -2.0 * np.asarray(D, float))
    return 0.5 * (S + S.T)


def gaussian_sampler(S):
    """Exact sampler ``(n, rng) -> (n, d)`` of N(0, S)."""
    L = np.linalg.cholesky(S)
    return lambda n, rng: rng.standard_normal((int(n), len(S))) @ L.T


def exact_gaussian(M, D, **protocol):
    """The :class:`Protocol` of an OU family drawn exactly from its Gaussian stationary law."""
    return Protocol(sampler="exact", exact=gaussian_sampler(ou_stationary_cov(M, D)), **protocol)


def ou_model(name, M, D, free):
    """``(model, truth)``: dx = Mx dt + √(2D) dW (states x1 … xd) with the entries of M named in
    ``free`` (``"M12"``: row 1, column 2) unknown in that order, the others known."""
    x = sp.symbols(f"x1:{len(M) + 1}", real=True)
    d = len(M)
    syms = {
        f"M{i + 1}{j + 1}": sp.Symbol(f"M{i + 1}{j + 1}", real=True)
        for i in range(d)
        for j in range(d)
    }
    Ms = sp.Matrix(
        d,
        d,
        lambda i, j: (
            syms[f"M{i + 1}{j + 1}"] if f"M{i + 1}{j + 1}" in free else sp.nsimplify(M[i][j])
        ),
    )
    params = [syms[k] for k in free]
    truth = np.array([M[int(k[1]) - 1][int(k[2]) - 1] for k in free], float)
    Dm = sp.Matrix(np.asarray(D, float).tolist()).applyfunc(sp.nsimplify)
    model = ds.SDEModel(list(x), params, list(Ms * sp.Matrix(x)), diffusion=Dm, name=name)
    return model, truth


def law_1d(f, D, lo, hi):
    """Sampler of the exact stationary law of a 1-D model, ``p ∝ exp(∫ f/D)/D`` (zero flux), with
    ``∫ f/D`` by the trapezoid rule on 400,001 points of [lo, hi] (f, D: NumPy callables at the
    true parameters), drawn by :func:`grid_sampler`."""
    u = np.linspace(lo, hi, 400_001)
    Du = D(u)
    ratio = f(u) / Du
    phi = np.concatenate([[0.0], np.cumsum(0.5 * (ratio[1:] + ratio[:-1]) * np.diff(u))])
    return grid_sampler(lambda v: np.interp(v, u, phi - np.log(Du)), lo, hi)


@cache
def simulator_fingerprint():
    """Package version and a hash of the simulator's sources (simulation/, codegen/ and the
    kernels' lane blocks and random numbers)."""
    pkg = os.path.dirname(os.path.abspath(ds.__file__))
    h = hashlib.sha256()
    for sub in ("simulation", "codegen", "kernels"):
        folder = os.path.join(pkg, sub)
        for fn in sorted(os.listdir(folder)):
            if fn.endswith(".py") and (sub != "kernels" or fn in ("lanes.py", "rng.py")):
                with open(os.path.join(folder, fn), "rb") as fh:
                    h.update(fn.encode() + fh.read())
    return f"{ds.__version__}+{h.hexdigest()[:12]}"


def _key(name, model, truth, protocol, seed, n_max, sampler):
    spec = {
        "family": name,
        "sampler": sampler,
        "seed": int(seed),
        "n_max": int(n_max),
        "dt": protocol.dt,
        "burn_in": protocol.burn_in,
        "x0": protocol.x0 if isinstance(protocol.x0, (str, type(None))) else list(protocol.x0),
        "truth": [float(v) for v in truth],
        "equations": model.equations(),
        "simulator": simulator_fingerprint() if sampler != "exact" else "exact",
    }
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]
    return spec, digest


def start_states(protocol, n, seed):
    """The x0 argument of ``ds.simulate`` for a protocol (None: the simulator's N(0, I))."""
    if protocol.x0 is None:
        return None
    if isinstance(protocol.x0, str):  # "exact": draws of the exact law
        return protocol.exact(n, np.random.default_rng(np.random.SeedSequence([seed, 1])))
    return np.asarray(protocol.x0, float)


def draw(model, truth, protocol, n, seed, burn_in=None, sampler=None):
    """n stationary samples: exact draws, or ``ds.simulate`` with n independent chains."""
    if (sampler or protocol.sampler) == "exact":
        return np.ascontiguousarray(protocol.exact(n, np.random.default_rng(seed)))
    return ds.simulate(
        model,
        truth,
        n,
        dt=protocol.dt,
        burn_in=protocol.burn_in if burn_in is None else burn_in,
        thin=1,
        n_chains=n,
        seed=seed,
        x0=start_states(protocol, n, seed),
    )


def _location(name, model, truth, protocol, k, n, cache_dir, source):
    """(path, key spec, seed, rows drawn) of data set k (the N_max one, or n rows of diffrax)."""
    seed = data_seed(name, k)
    n_max = max(protocol.sizes) if source != "diffrax" else n
    sampler = source if source in ("diffrax", "exact") else protocol.sampler
    spec, digest = _key(name, model, truth, protocol, seed, n_max, sampler)
    path = os.path.join(cache_dir, "data", name, f"{sampler}_{digest}.npy")
    return path, spec, seed, n_max


def _save(path, spec, X):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + f".{os.getpid()}.tmp.npy"
    np.save(tmp, X)
    os.replace(tmp, path)  # atomic: an interrupted run never leaves a partial data set
    with open(path[:-4] + ".json", "w", encoding="utf-8") as fh:
        json.dump(spec, fh, indent=1)


def prefetch_diffrax(name, model, truth, protocol, ks, n, cache_dir):
    """Draw every missing diffrax data set among ``ks`` in one run of the solver (one JIT)."""
    from .calibration_diffrax import run_diffrax

    locs = [_location(name, model, truth, protocol, k, n, cache_dir, "diffrax") for k in ks]
    missing = [loc for loc in locs if not os.path.exists(loc[0])]
    if missing:
        sets = run_diffrax(model, truth, protocol, n, [loc[2] for loc in missing], cache_dir)
        for (path, spec, _, _), X in zip(missing, sets):
            _save(path, spec, X)


def load_dataset(name, model, truth, protocol, k, n, cache_dir, source="simulate"):
    """Data set k of family ``name`` with n rows (the prefix of the N_max one), from the cache or
    drawn now: ``source="simulate"`` the protocol's sampler, ``"exact"`` draws of the exact law
    (for a simulated family: the oracle cells that separate the data's error from the method's),
    ``"diffrax"`` the independent solver's data set."""
    path, spec, seed, n_max = _location(name, model, truth, protocol, k, n, cache_dir, source)
    if not os.path.exists(path):
        if source == "diffrax":
            prefetch_diffrax(name, model, truth, protocol, [k], n, cache_dir)
        else:
            _save(path, spec, draw(model, truth, protocol, n_max, seed, sampler=spec["sampler"]))
    X = np.load(path)
    if X.shape[0] < n or not np.isfinite(X).all():
        raise RuntimeError(f"{path}: corrupt cached data set (delete it)")
    return X[:n]


def ks_columns(X, Y):
    """Two-sample Kolmogorov–Smirnov p-value per coordinate."""
    from scipy import stats

    return [float(stats.ks_2samp(X[:, j], Y[:, j]).pvalue) for j in range(X.shape[1])]


def stationarity_check(name, model, truth, protocol, cache_dir, n=5000):
    """Is the data's law the stationary one?  Exact law known: KS of the sweep's first data set
    (n rows) against n exact draws; else against n chains run three times as long
    (``3·burn_in``, independent seed).  Returns a dict with the per-coordinate p-values, the
    smallest and a verdict at the Bonferroni level 0.01/d.  Cached as JSON."""
    if protocol.sampler == "exact":
        return {"method": "exact sampler", "p_values": [], "min_p": None, "ok": True}
    X = load_dataset(name, model, truth, protocol, 0, min(n, max(protocol.sizes)), cache_dir)
    n = X.shape[0]
    seed = data_seed(name, 10_000)
    spec, digest = _key(name, model, truth, protocol, seed, n, "check")
    path = os.path.join(cache_dir, "data", name, f"check_{digest}.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    if protocol.exact is not None:
        Y = protocol.exact(n, np.random.default_rng(seed))
        method = f"KS against {n} exact draws"
    else:
        Y = draw(model, truth, protocol, n, seed, burn_in=3 * protocol.burn_in)
        method = f"KS against {n} chains after 3 × burn-in"
    p = ks_columns(X, Y)
    out = {
        "method": method,
        "p_values": p,
        "min_p": min(p),
        "ok": bool(min(p) >= 0.01 / len(p)),
        "sd_ratio": (X.std(0) / Y.std(0)).tolist(),
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return out
