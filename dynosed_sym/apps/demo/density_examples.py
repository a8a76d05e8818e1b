"""SDEs with known stationary laws, and distances of a learned density to a reference.

Used by the dynamics → density demonstration (:mod:`.density_figures`), the sweep
(:mod:`dynosed_sym.apps.bench.density_sweep`) and the tests.  The demonstration pair:

* :func:`hopf_oscillator` — a noisy oscillator with a stable limit cycle and a closed-form
  stationary law: a radial potential plus a rotation,

      U(r) = r²/2 + β exp(−r²/(2ℓ²)),   f = −D ∇U + ω (−y, x),   D = const · I,

  whose stationary density is p ∝ exp(−U) for every ω (the rotation is divergence free and
  tangent to the level sets of U).  For β > ℓ² the origin is repelling and the deterministic
  flow has the stable limit cycle r* = ℓ √(2 ln(β/ℓ²)).  The tails are Gaussian.
* :func:`swirl_bistable` — a bistable drift with a non-conservative coupling
  (∂f₁/∂y ≠ ∂f₂/∂x), whose stationary law is not of gradient form and not known in closed form;
  it is compared against a long simulation.

The family (exact laws, all checked symbolically in ``tests/density/test_family.py``):

* :func:`ring` — Stuart–Landau-type ring with rotation, p ∝ exp((α r²/2 − β r⁴/4)/D): quartic
  tails and a cubic drift (a density class with Gaussian tails misses it by TV 0.1–0.33);
* :func:`double_well_1d`, :func:`double_well_2d` — p ∝ exp(−V/D) with barriers of a few D, the
  2-D one with a non-gradient rotation −ω J∇V and a coupling that leaves p unchanged;
* :func:`ou` — linear drift Mx (any stable, e.g. non-normal M), Gaussian law from the Lyapunov
  equation MΣ + ΣMᵀ + 2D = 0;
* :func:`state_dependent_well` — D(x) = g(x) I varying in space, f = ∇g − g∇U (+ rotation), so
  p ∝ exp(−U);
* :func:`swirl_bistable` above: non-gradient, no closed form, compared against a long simulation.

Each ``*_log_density`` returns the exact unnormalised log density at the rows of P (M, d).  The
distances: :func:`grid_tv` (total variation against an exact law, both normalised by midpoint
quadrature on one grid, d ≤ 2) and :func:`histogram_tv` (against a 2-D sample histogram, the
learned mass per bin by sub-cell quadrature, mass outside the box counted too).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ...errors import DataError
from ...model import SDEModel

__all__ = [
    "hopf_oscillator",
    "hopf_log_density",
    "swirl_bistable",
    "swirl_bistable_variant",
    "ring",
    "ring_log_density",
    "double_well_1d",
    "double_well_1d_log_density",
    "double_well_2d",
    "double_well_2d_log_density",
    "ou",
    "ou_covariance",
    "state_dependent_well",
    "state_dependent_well_log_density",
    "grid_points",
    "grid_tv",
    "histogram_tv",
]


def hopf_oscillator(D=0.5, beta=2.0, ell=0.7, omega=2.0):
    """The limit-cycle oscillator with closed-form stationary law.

    Parameters
    ----------
    D : float
        Isotropic diffusion coefficient.
    beta, ell : float
        Height and width of the central bump of the potential (ring when beta > ell²).
    omega : float
        Rotation frequency (does not change the stationary law).

    Returns
    -------
    model : SDEModel
        Parameters (beta, omega); ``nominal`` holds the given values.
    theta : numpy.ndarray (2,)
    """
    x, y = sp.symbols("x y", real=True)
    b, w = sp.symbols("beta omega", real=True)
    ell_ = sp.nsimplify(ell)
    D_ = sp.nsimplify(D)
    radial = D_ * (b / ell_**2 * sp.exp(-(x**2 + y**2) / (2 * ell_**2)) - 1)
    model = SDEModel(
        state=[x, y],
        params=[b, w],
        drift=[radial * x - w * y, radial * y + w * x],
        diffusion=D_,
        name="hopf_ring",
        nominal={b: beta, w: omega},
    )
    return model, np.array([beta, omega], dtype=float)


def hopf_log_density(P, beta=2.0, ell=0.7):
    """Unnormalised exact log density −U of :func:`hopf_oscillator` at the rows of P (M, 2)."""
    r2 = np.sum(np.asarray(P, dtype=float) ** 2, axis=1)
    return -r2 / 2.0 - beta * np.exp(-r2 / (2.0 * ell**2))


def swirl_bistable(D=0.4):
    """Bistable drift with a non-conservative coupling; stationary law not of gradient form.

        dx = (−x + 2 tanh(2x) − k y) dt + √(2D) dW₁
        dy = (−y + g tanh(x)) dt         + √(2D) dW₂

    Returns
    -------
    model : SDEModel
        Parameters (k, g), nominal k = 0.8, g = 1.5.
    theta : numpy.ndarray (2,)
    """
    x, y = sp.symbols("x y", real=True)
    k, g = sp.symbols("k g", real=True)
    model = SDEModel(
        state=[x, y],
        params=[k, g],
        drift=[-x + 2 * sp.tanh(2 * x) - k * y, -y + g * sp.tanh(x)],
        diffusion=sp.nsimplify(D),
        name="swirl_bistable",
        nominal={k: 0.8, g: 1.5},
    )
    return model, np.array([0.8, 1.5])


def swirl_bistable_variant(D=0.3, k=0.5, g=2.0):
    """:func:`swirl_bistable` with other constants (held-out case of the sweep)."""
    model, _ = swirl_bistable(D)
    return model, np.array([k, g], dtype=float)


def ring(alpha=1.0, beta=1.0, omega=1.5, D=0.25):
    """Ring with rotation: f = (α − β r²) x + ω (−y, x), D constant; p ∝ exp((α r²/2 − β r⁴/4)/D).

    Parameters: (omega,) — the rotation does not change the law.  Ring radius √(α/β); radial
    width ≈ √(D/(2α)); the density at the centre is exp(−α²/(4βD)) of the ring's.
    """
    x, y = sp.symbols("x y", real=True)
    w = sp.Symbol("omega", real=True)
    a, b = sp.nsimplify(alpha), sp.nsimplify(beta)
    r2 = x**2 + y**2
    model = SDEModel(
        state=[x, y],
        params=[w],
        drift=[(a - b * r2) * x - w * y, (a - b * r2) * y + w * x],
        diffusion=sp.nsimplify(D),
        name="ring",
        nominal={w: omega},
    )
    return model, np.array([omega], dtype=float)


def ring_log_density(P, alpha=1.0, beta=1.0, D=0.25):
    r2 = np.sum(np.asarray(P, dtype=float) ** 2, axis=1)
    return (alpha * r2 / 2.0 - beta * r2**2 / 4.0) / D


def double_well_1d(D=0.2, a=1.0, b=1.0, tilt=0.0):
    """f = a x − b x³ + tilt, constant D; p ∝ exp((a x²/2 − b x⁴/4 + tilt·x)/D).

    Barrier (tilt 0): a²/(4b), i.e. a²/(4bD) in units of D.  Parameter: (a,).
    """
    x = sp.Symbol("x", real=True)
    a_ = sp.Symbol("a", real=True)
    model = SDEModel(
        state=[x],
        params=[a_],
        drift=[a_ * x - sp.nsimplify(b) * x**3 + sp.nsimplify(tilt)],
        diffusion=sp.nsimplify(D),
        name="double_well_1d",
        nominal={a_: a},
    )
    return model, np.array([a], dtype=float)


def double_well_1d_log_density(P, D=0.2, a=1.0, b=1.0, tilt=0.0):
    x = np.asarray(P, dtype=float).reshape(-1)
    return (a * x**2 / 2.0 - b * x**4 / 4.0 + tilt * x) / D


def double_well_2d(D=0.125, omega=0.5, c=0.5):
    """V = (x² − 1)²/4 + (y − c x)²/2, f = −∇V − ω J∇V (J = [[0, −1], [1, 0]]), D constant.

    p ∝ exp(−V/D) for every ω (the rotation of ∇V is divergence free and tangent to the level
    sets of V).  Barrier 1/4, i.e. 1/(4D) in units of D.  Parameter: (omega,).
    """
    x, y = sp.symbols("x y", real=True)
    w = sp.Symbol("omega", real=True)
    c_ = sp.nsimplify(c)
    V = (x**2 - 1) ** 2 / 4 + (y - c_ * x) ** 2 / 2
    gx, gy = sp.diff(V, x), sp.diff(V, y)
    model = SDEModel(
        state=[x, y],
        params=[w],
        drift=[-gx + w * gy, -gy - w * gx],
        diffusion=sp.nsimplify(D),
        name="double_well_2d",
        nominal={w: omega},
    )
    return model, np.array([omega], dtype=float)


def double_well_2d_log_density(P, D=0.125, c=0.5):
    P = np.asarray(P, dtype=float)
    x, y = P[:, 0], P[:, 1]
    return -((x**2 - 1) ** 2 / 4.0 + (y - c * x) ** 2 / 2.0) / D


def ou(M, D):
    """dx = M x dt + √(2D) dW with constant M (d × d, stable) and D; parameter: a scale s (M·s).

    Returns the model and θ = (1,); the law is N(0, Σ) with Σ from :func:`ou_covariance`.
    """
    M = np.asarray(M, dtype=float)
    D = np.asarray(D, dtype=float)
    d = M.shape[0]
    xs = sp.symbols(" ".join(f"x{i + 1}" for i in range(d)), real=True, seq=True)
    s = sp.Symbol("s", real=True)
    Ms = sp.Matrix(d, d, lambda i, j: sp.nsimplify(M[i, j]))
    drift = [s * sum(Ms[i, j] * xs[j] for j in range(d)) for i in range(d)]
    Dm = sp.Matrix(d, d, lambda i, j: sp.nsimplify(D[i, j]))
    model = SDEModel(
        state=list(xs), params=[s], drift=drift, diffusion=Dm, name=f"ou{d}d", nominal={s: 1.0}
    )
    return model, np.array([1.0])


def ou_covariance(M, D):
    """Σ solving M Σ + Σ Mᵀ + 2D = 0 (the stationary covariance of :func:`ou`)."""
    from scipy.linalg import solve_continuous_lyapunov

    return solve_continuous_lyapunov(np.asarray(M, dtype=float), -2.0 * np.asarray(D, dtype=float))


def state_dependent_well(d=1, D0=0.25, k=0.5, omega=0.5):
    """Double well with a diffusion that varies in space.

    D(x) = g(x) I with g = D0 (1 + k|x|²), U = ((x₁² − 1)²/4 + Σ_{i>1} x_i²/2) / D0 and
    f = ∇g − g∇U, plus in 2-D the rotation ω J∇U (J = [[0, −1], [1, 0]]), whose flux e^{−U} ω J∇U
    is divergence free; so p ∝ exp(−U) whatever ω and g.  Barrier 1/(4 D0) in units of D0.

    Parameter: ``omega`` in 2-D; in 1-D a placeholder ``s`` that does not enter the drift.
    """
    xs = sp.symbols(" ".join(f"x{i + 1}" for i in range(d)), real=True, seq=True)
    D0_, k_ = sp.nsimplify(D0), sp.nsimplify(k)
    g = D0_ * (1 + k_ * sum(v**2 for v in xs))
    U = ((xs[0] ** 2 - 1) ** 2 / 4 + sum(v**2 for v in xs[1:]) / 2) / D0_
    drift = [sp.diff(g, v) - g * sp.diff(U, v) for v in xs]
    if d == 2:
        w = sp.Symbol("omega", real=True)
        drift = [drift[0] - w * sp.diff(U, xs[1]), drift[1] + w * sp.diff(U, xs[0])]
        theta = omega
    else:
        w = sp.Symbol("s", real=True)
        theta = 1.0
    model = SDEModel(
        state=list(xs),
        params=[w],
        drift=drift,
        diffusion=g * sp.eye(d) if d > 1 else g,
        name=f"state_dependent_well_{d}d",
        nominal={w: theta},
    )
    return model, np.array([theta], dtype=float)


def state_dependent_well_log_density(P, D0=0.25):
    P = np.asarray(P, dtype=float)
    if P.ndim == 1:
        P = P[:, None]
    return -((P[:, 0] ** 2 - 1) ** 2 / 4.0 + 0.5 * (P[:, 1:] ** 2).sum(1)) / D0


# ------------------------------------------------------------------ distances to a reference
def grid_points(extent, n):
    """Cell centres of a grid of n cells per axis over ``extent`` ((lo, hi) per axis).

    Returns the axes' centres (a list of (n,) arrays), the points P (nᵈ, d) in "ij" order and
    the cell volume.
    """
    extent = [(float(lo), float(hi)) for lo, hi in extent]
    if not all(hi > lo for lo, hi in extent):
        raise DataError(f"extent: expected (lo, hi) per axis with hi > lo, got {extent}")
    axes = [lo + (hi - lo) / n * (np.arange(n) + 0.5) for lo, hi in extent]
    volume = float(np.prod([(hi - lo) / n for lo, hi in extent]))
    grids = np.meshgrid(*axes, indexing="ij")
    return axes, np.column_stack([g.ravel() for g in grids]), volume


def grid_tv(density, log_density, extent, n):
    """Total variation ½∫|q − p| by the midpoint rule, p = exp(log_density) normalised on the
    same grid (n cells per axis over ``extent``, (lo, hi) per axis).

    Returns
    -------
    tv : float
    integral : float
        ∫ q over the grid: 1 up to quadrature error and the mass outside the box.
    """
    _, P, volume = grid_points(extent, n)
    q = density.prob(P)
    lp = np.asarray(log_density(P), dtype=float)
    p = np.exp(lp - lp.max())
    p /= p.sum() * volume
    return 0.5 * float(np.abs(q - p).sum() * volume), float(q.sum() * volume)


def histogram_tv(density, X, extent, bins=40, sub=4):
    """Total variation between the learned mass per bin and the histogram of samples X (N, 2).

    ``extent``: ((xmin, xmax), (ymin, ymax)); ``bins`` per axis; the learned mass per bin by a
    ``sub`` × ``sub`` midpoint rule.  Mass outside the box counts as one more bin.
    """
    (xmin, xmax), (ymin, ymax) = extent
    H, _, _ = np.histogram2d(X[:, 0], X[:, 1], bins=bins, range=[[xmin, xmax], [ymin, ymax]])
    H = H / X.shape[0]
    hx, hy = (xmax - xmin) / (bins * sub), (ymax - ymin) / (bins * sub)
    cx = xmin + hx * (np.arange(bins * sub) + 0.5)
    cy = ymin + hy * (np.arange(bins * sub) + 0.5)
    XX, YY = np.meshgrid(cx, cy, indexing="ij")
    q = (
        (density.prob(np.column_stack([XX.ravel(), YY.ravel()])) * hx * hy)
        .reshape(bins, sub, bins, sub)
        .sum((1, 3))
    )
    return 0.5 * float(np.abs(q - H).sum() + abs(H.sum() - q.sum()))
