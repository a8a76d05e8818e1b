"""Shared fixtures for the dynosed_sym test suite.

* every model file in ``models/`` is loaded once per session (``models``) and
  compiled once (``compiled``: :class:`dynosed_sym.CompiledModel`, generated
  module in the project's ``generated/`` folder, Numba cache beside it);
* ``model_name`` parametrises a test over every model file in ``models/``;
* exact stationary samplers (OU from the Lyapunov solution, rotation-invariant
  2-D densities by inverse CDF of the radius) and plausible state points for
  kernel comparisons (``model_points``);
* seeded RNG fixtures;
* a Hypothesis profile with ``deadline=None`` (Numba compiles and SymPy
  derivations make single examples slow; the wall clock says nothing useful).

The content of ``generated/`` is snapshotted when this file is imported, i.e.
before any test or fixture can call ``compile_model`` (which may write there),
so the golden test compares against what was checked out, not against files
the session itself produced.
"""

from __future__ import annotations

import os
import pathlib
import tracemalloc

import numpy as np
import pytest
import scipy.linalg
import sympy as sp
from hypothesis import HealthCheck, settings

import dynosed_sym as ds

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
GENERATED_DIR = ROOT / "generated"
MODEL_FILES = sorted(p for p in MODELS_DIR.glob("*.py") if not p.name.startswith("_"))
MODEL_STEMS = [p.stem for p in MODEL_FILES]

#: {file name: text} of generated/*.py as checked out, read before any test runs.
GENERATED_SNAPSHOT = {
    p.name: p.read_text(encoding="utf-8") for p in sorted(GENERATED_DIR.glob("*.py"))
}

# --------------------------------------------------------------------------- Hypothesis
# `make test` and CI draw the same examples on every run and machine (derandomize: a seed from
# each test function's source, with the Hypothesis version pinned in constraints.txt), as
# Hypothesis's own "ci" profile does: a red run is the code's, not the draw's.  New examples are
# searched for with `make test-explore` (fresh random draws on every run); what it finds becomes
# an @example of the test it broke.
settings.register_profile(
    "dynosed",
    deadline=None,
    print_blob=True,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dynosed-explore",  # make test-explore: HYPOTHESIS_PROFILE=dynosed-explore
    parent=settings.get_profile("dynosed"),
    derandomize=False,
)
settings.register_profile(
    "dynosed-quick",  # for local iteration: HYPOTHESIS_PROFILE=dynosed-quick
    parent=settings.get_profile("dynosed"),
    max_examples=10,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dynosed"))


# --------------------------------------------------------------------------- parametrisation
def pytest_generate_tests(metafunc):
    """``model_name``: one test per model file in models/ (file stem)."""
    if "model_name" in metafunc.fixturenames:
        metafunc.parametrize("model_name", MODEL_STEMS)


# --------------------------------------------------------------------------- models
@pytest.fixture(scope="session")
def project_root():
    return ROOT


@pytest.fixture(scope="session")
def models():
    """{file stem: SDEModel} for every model file in models/ (loaded once)."""
    assert MODEL_FILES, f"no model files found in {MODELS_DIR}"
    return {p.stem: ds.load_model(p) for p in MODEL_FILES}


@pytest.fixture(scope="session")
def compiled(models):
    """{file stem: CompiledModel}; kernels are jit-compiled (or loaded from cache) on first use."""
    return {stem: ds.compile_model(m) for stem, m in models.items()}


@pytest.fixture
def model(models, model_name):
    return models[model_name]


@pytest.fixture
def cmodel(compiled, model_name):
    return compiled[model_name]


# --------------------------------------------------------------------------- randomness
@pytest.fixture
def rng():
    """A fresh, seeded Generator per test."""
    return np.random.default_rng(20240601)


@pytest.fixture
def make_rng():
    """Factory: ``make_rng(seed)`` -> numpy Generator."""
    return np.random.default_rng


# --------------------------------------------------------------------------- exact samplers
def ou_stationary_cov(M, D):
    """Σ solving M Σ + Σ Mᵀ + 2 D = 0 (stationary covariance of dx = Mx dt + √(2D) dW)."""
    M = np.asarray(M, dtype=float)
    D = float(D) * np.eye(M.shape[0]) if np.ndim(D) == 0 else np.asarray(D, dtype=float)
    S = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * D)
    return 0.5 * (S + S.T)


def records(X, names):
    """X (N, k) as a NumPy structured (record) array with the fields ``names``."""
    rec = np.zeros(X.shape[0], dtype=[(n, float) for n in names])
    for j, n in enumerate(names):
        rec[n] = X[:, j]
    return rec


def ou_stationary_samples(M, D, n, seed):
    """n exact i.i.d. draws (n, d) from N(0, Σ), Σ from the Lyapunov equation."""
    S = ou_stationary_cov(M, D)
    L = np.linalg.cholesky(S)
    z = np.random.default_rng(seed).standard_normal((int(n), S.shape[0]))
    return z @ L.T


def radial_samples(log_density_r2, n, seed, r_max=5.0, grid=400_001):
    """Exact-ish draws (n, 2) of a rotation-invariant density p(x) ∝ exp(log_density_r2(r²)).

    Inverse CDF of the radius (density ∝ r·p) on a fine grid, uniform angle.
    """
    rng = np.random.default_rng(seed)
    r = np.linspace(0.0, r_max, grid)
    logp = np.log(np.maximum(r, 1e-300)) + log_density_r2(r * r)
    w = np.exp(logp - logp.max())
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    rr = np.interp(rng.uniform(size=int(n)), cdf, r)
    ang = rng.uniform(0.0, 2.0 * np.pi, int(n))
    return np.column_stack([rr * np.cos(ang), rr * np.sin(ang)])


def density_samples_1d(log_density, n, seed, lo=-6.0, hi=6.0, grid=400_001):
    """Draws (n, 1) from a 1-D density p ∝ exp(log_density(x)) by grid inverse CDF."""
    rng = np.random.default_rng(seed)
    x = np.linspace(lo, hi, grid)
    lp = log_density(x)
    w = np.exp(lp - lp.max())
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    return np.interp(rng.uniform(size=int(n)), cdf, x)[:, None]


@pytest.fixture(scope="session")
def ou_samples():
    """``ou_samples(M, D, n, seed)`` -> exact stationary OU samples (n, d)."""
    return ou_stationary_samples


@pytest.fixture(scope="session")
def ou_cov():
    return ou_stationary_cov


@pytest.fixture(scope="session")
def radial_sampler():
    return radial_samples


@pytest.fixture(scope="session")
def sampler_1d():
    return density_samples_1d


# --------------------------------------------------------------------------- state points
def points_for(model, n, seed):
    """Plausible state points (n, d) for kernel-vs-reference comparisons.

    Not stationary samples; only the region matters.  Models whose formulas have
    singular points (the GRN's polar angles at the oscillator origin) are kept away
    from them.
    """
    rng = np.random.default_rng(seed)
    name = model.name
    if name == "lorenz":
        return rng.standard_normal((n, 3)) * [8.0, 9.0, 9.0] + [0.0, 0.0, 24.0]
    if name == "grn_bcell":
        X = np.empty((n, 7))
        X[:, 0:3] = rng.uniform(0.0, 3.0, (n, 3))
        for c in (3, 5):
            rad = 1.0 + 0.05 * rng.standard_normal(n)
            ang = rng.uniform(0.0, 2.0 * np.pi, n)
            X[:, c] = rad * np.cos(ang)
            X[:, c + 1] = rad * np.sin(ang)
        return X
    return 1.5 * rng.standard_normal((n, model.d))


@pytest.fixture(scope="session")
def model_points():
    """``model_points(model, n, seed)`` -> plausible state points (n, d)."""
    return points_for


# --------------------------------------------------------------------------- shared assertions
def assert_same_system(fit, ref, rtol=1e-12):
    """Same samples, θ̂, A and b (relative to the largest entry) as a reference fit."""
    assert fit.n_samples == ref.n_samples
    np.testing.assert_allclose(fit.theta, ref.theta, rtol=rtol, atol=0)
    assert np.abs(fit.A - ref.A).max() <= rtol * np.abs(ref.A).max()
    assert np.abs(fit.b - ref.b).max() <= rtol * np.abs(ref.b).max()


def assert_close_to_scale(got, want, rtol=1e-9, atol_scale=1e-12):
    """``got`` ≈ ``want`` to ``rtol``, entries near 0 to ``atol_scale`` times want's largest
    magnitude (the solve's products against their NumPy oracles: their rounding is relative to
    the largest entry)."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol_scale * scale)


def traced_peak(fn):
    """Peak memory traced by tracemalloc while ``fn()`` runs (bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_memory_flat(small, large, data_bytes):
    """Streaming 8× more rows: peak far below the data and barely above the small run's."""
    assert large < 0.35 * data_bytes
    assert large < 1.2 * small + 1e6


# --------------------------------------------------------------------------- designs (issue 16)
def ou_transient_law(M, D, mu0, S0, t, c=None):
    """Exact law N(μ(t), Σ(t)) of dx = (Mx + c)dt + √(2D)dW started from N(μ0, S0).

    μ(t) = e^{Mt}μ0 (+ ∫ e^{Ms}c ds), Σ(t) = e^{Mt}S0e^{Mᵀt} + Q(t), Q from Van Loan's exponential
    of [[−M, 2D], [0, Mᵀ]] (an oracle independent of the package's own helpers).
    """
    M = np.asarray(M, dtype=float)
    d = M.shape[0]
    D = float(D) * np.eye(d) if np.ndim(D) == 0 else np.asarray(D, dtype=float)
    c = np.zeros(d) if c is None else np.asarray(c, dtype=float)
    C = np.zeros((2 * d, 2 * d))
    C[:d, :d], C[:d, d:], C[d:, d:] = -M, 2.0 * D, M.T
    F = scipy.linalg.expm(C * t)
    Q = F[d:, d:].T @ F[:d, d:]
    E = scipy.linalg.expm(M * t)
    aug = np.zeros((d + 1, d + 1))
    aug[:d, :d], aug[:d, d] = M, c
    mu = (scipy.linalg.expm(aug * t) @ np.append(mu0, 1.0))[:d]
    S = E @ np.asarray(S0, dtype=float) @ E.T + Q
    return mu, 0.5 * (S + S.T)


def gaussian_samples(mu, S, n, seed):
    """n exact draws (n, d) of N(μ, S)."""
    L = np.linalg.cholesky(np.asarray(S, dtype=float))
    z = np.random.default_rng(seed).standard_normal((int(n), len(mu)))
    return z @ L.T + np.asarray(mu, dtype=float)


def ou_noise_model(kind="aniso", name=None):
    """2-D OU, all of M free, a known noise input s: D = diag(s, 1) ("aniso") or s·I ("iso")."""
    x, y, s = sp.symbols("x y s", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    return ds.SDEModel(
        [x, y],
        M,
        list(M * sp.Matrix([x, y])),
        [s, 1] if kind == "aniso" else s,
        inputs=[s],
        name=name or f"ou2d_{kind}",
        nominal={"M11": -1.0, "M12": 0.5, "M21": -0.5, "M22": -1.0},
    )


@pytest.fixture(scope="session")
def aniso():
    """The OU with a known noise input, D = diag(s, 1)."""
    return ou_noise_model("aniso")


@pytest.fixture(scope="session")
def iso():
    """The OU with a scalar noise scale, D = s·I."""
    return ou_noise_model("iso")


def ou_noise_diffusion(kind, s):
    return np.diag([s, 1.0]) if kind == "aniso" else s * np.eye(2)


def ou_noise_sampler(kind):
    """``sampler(inputs, theta, n, seed, time=None, initial=None)`` of the exact law (stationary
    from the Lyapunov equation; transient from a Gaussian initial law)."""

    def sample(inputs, theta, n, seed, time=None, initial=None):
        M = np.asarray(theta, dtype=float).reshape(2, 2)
        D = ou_noise_diffusion(kind, inputs["s"])
        if time is None:
            return ou_stationary_samples(M, D, n, seed)
        mu, S = ou_transient_law(M, D, initial[0], initial[1], time)
        return gaussian_samples(mu, S, n, seed)

    return sample


OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
OU_START = (np.array([2.0, -1.0]), 0.1 * np.eye(2))


def ou_time_course(times, n, seed, M=OU_M, D=1.0, start=OU_START):
    """{t: exact samples} of the OU started from ``start`` (the issue's N((2, −1), 0.1 I))."""
    return {
        float(t): gaussian_samples(*ou_transient_law(M, D, *start, t), n, seed + 7 * k)
        for k, t in enumerate(times)
    }


def sign_model_and_exact_draws(n=20_000, seed=1):
    """f = −a·sign(x) − b·x, D = 1/2, (a, b) = (2, 1/2): the exact law
    p ∝ exp(−(a|x| + b x²/2)/D) by inverse CDF on a fine grid."""
    x, a, b = sp.symbols("x a b")
    model = ds.SDEModel(
        [x], [a, b], [-a * sp.sign(x) - b * x], diffusion=0.5, name="sign1d", nominal=[2.0, 0.5]
    )
    grid = np.linspace(-8.0, 8.0, 400_001)
    logp = -(2.0 * np.abs(grid) + 0.25 * grid**2) / 0.5
    cdf = np.cumsum(np.exp(logp - logp.max()))
    cdf /= cdf[-1]
    X = np.interp(np.random.default_rng(seed).random(n), cdf, grid)[:, None]
    return model, X
