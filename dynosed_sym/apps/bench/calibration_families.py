"""Model families of the calibration sweep: textbook SDEs the method was not designed on.

Each family is a small function returning ``(SDEModel, truth, Protocol)``, declared with SymPy as
a user would.  The :class:`Protocol` says how data sets are drawn: from ``ds.simulate`` (one
record per independent chain, ``n_chains = N``, ``thin = 1``, ``burn_in`` steps of ``dt``) or
from an exact sampler of the stationary law (no simulation), which sample sizes N form the
cells, and why the burn-in suffices: ``relaxation`` is the slowest relaxation time (from the
linearisation at the stable point, or the stated estimate for oscillators, switches and chaos)
and ``burn_in · dt`` is at least ten of it.  Every family's stationarity is also checked
empirically (:func:`dynosed_sym.apps.bench.calibration_data.stationarity_check`): against the
exact law where there is one, else the records after ``burn_in`` against records after
``3 · burn_in`` steps.

Families with a closed-form stationary law carry an exact sampler (``Protocol.exact``); for the
bistable ones (1-D/2-D double well, Schlögl) the chains also *start* from it (``x0="exact"``), so
the burn-in only has to remove the integrator's discretisation transient, not the Kramers time.
The networks are in :mod:`.calibration_networks`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .calibration_breaks import BREAKS
from .calibration_breaks4 import BREAKS4
from .calibration_breaks5 import BREAKS5
from .calibration_breaks6 import BREAKS6
from .calibration_breaks7 import BREAKS7
from .calibration_breaks8 import BREAKS8
from .calibration_breaks9 import BREAKS9
from .calibration_breaks10 import BREAKS10
from .calibration_breaks11 import BREAKS11
from .calibration_breaks12 import BREAKS12
from .calibration_breaks13 import BREAKS13
from .calibration_data import Protocol, ou_stationary_cov
from .calibration_data import declare_family as _family
from .calibration_data import exact_gaussian as _exact_gaussian
from .calibration_data import gaussian_sampler as _gaussian_sampler
from .calibration_data import grid_sampler as _grid_sampler
from .calibration_data import law_1d as _law_1d
from .calibration_data import ou_model as _ou_model
from .calibration_networks import net10, net20
from .calibration_nonaffine import NONAFFINE

__all__ = ["Protocol", "FAMILIES", "HELD_OUT", "family", "family_names", "ou_stationary_cov"]

R = sp.Rational


# --------------------------------------------------------------------------- oscillators
def _fhn(name, c4, **protocol):
    """FitzHugh–Nagumo with c4 (its two regimes): cells up to N = 50,000, diffrax draws too."""
    x, y = sp.symbols("x y", real=True)
    c = sp.symbols("c1:6", real=True)
    drift = [c[0] * (x - x**3 / 3 - y) + c[1], c[2] * x + c[3] - c[4] * y]
    truth = [3.0, 0.5, 0.3, c4, 0.24]
    D = [R(1, 20), R(1, 20)]
    sizes = (2000, 10_000, 50_000)
    return _family(name, [x, y], c, drift, truth, D, sizes=sizes, diffrax=True, **protocol)


def fhn_focus():
    """FitzHugh–Nagumo, affine, stable focus: c = (3, 0.5, 0.3, 0.2, 0.24)."""
    # fixed point x* ≈ −1.063: Jacobian [[3(1 − x*²), −3], [0.3, −0.24]], eigenvalues −0.31 ± 0.94i
    return _fhn(
        "sweep_fhn_focus",
        0.2,
        burn_in=6000,
        relaxation=3.2,
        relaxation_note="1/|Re λ| at the focus",
    )


def fhn_cycle():
    """FitzHugh–Nagumo with c4 = 0.05: the fixed point (−0.5, −0.42) is unstable, a limit cycle."""
    return _fhn(
        "sweep_fhn_cycle",
        0.05,
        burn_in=8000,
        relaxation=8.0,
        relaxation_note="about one period of the relaxation oscillation (phase mixing by the "
        "noise: checked empirically)",
    )


def van_der_pol():
    """x' = a y, y' = μ(1 − x²) y − k x (a = μ = k = 1), D = 0.1 I: a limit cycle of period 6.7."""
    x, y = sp.symbols("x y", real=True)
    a, mu, k = sp.symbols("a mu k", real=True)
    return _family(
        "sweep_vdp",
        [x, y],
        [a, mu, k],
        [a * y, mu * (1 - x**2) * y - k * x],
        [1.0, 1.0, 1.0],
        R(1, 10),
        burn_in=10_000,
        relaxation=6.7,
        relaxation_note="one period (phase mixing: checked empirically)",
    )


def hopf():
    """Stuart–Landau normal form f = (a − c r²) x − w J x with anisotropic D = diag(0.05, 0.2),
    which makes the rotation w visible in the stationary law (with isotropic D it is not)."""
    x, y = sp.symbols("x y", real=True)
    a, c, w = sp.symbols("a c w", real=True)
    r2 = x**2 + y**2
    return _family(
        "sweep_hopf",
        [x, y],
        [a, c, w],
        [a * x - c * r2 * x - w * y, a * y - c * r2 * y + w * x],
        [1.0, 1.0, 2.0],
        [R(1, 20), R(1, 5)],
        burn_in=6000,
        relaxation=5.0,
        relaxation_note="radial 1/(2a) = 0.5; phase diffusion D/r² ≈ 0.1 needs ≈ 10: 60 units",
    )


# --------------------------------------------------------------------------- bistable switches
def toggle():
    """Toggle switch f1 = a1/(1 + y²) − g1 x, f2 = a2/(1 + x²) − g2 y, a = 2.5, g = 1, D = 0.25 I;
    stable states (2.4, 0.37) and (0.37, 2.4), saddle (1.08, 1.08).  The truth is symmetric
    under x ↔ y, as are the N(0, I) starts, so the weights of the two states are right whatever
    the switching time; within a state τ ≈ 1."""
    x, y = sp.symbols("x y", real=True)
    a1, g1, a2, g2 = sp.symbols("a1 g1 a2 g2", real=True)
    return _family(
        "sweep_toggle",
        [x, y],
        [a1, g1, a2, g2],
        [a1 / (1 + y**2) - g1 * x, a2 / (1 + x**2) - g2 * y],
        [2.5, 1.0, 2.5, 1.0],
        R(1, 4),
        burn_in=3000,
        relaxation=1.5,
        relaxation_note="within-state 1/|λ| (symmetric truth and starts)",
    )


def _dw1_logp(c, D):
    return lambda x: (c[0] * x**2 / 2 - c[1] * x**4 / 4 + c[2] * x) / D


def double_well_1d():
    """f = c1 x − c2 x³ + c3 (tilt 0.2), D = 0.15: exact law ∝ exp(−V/D)."""
    x = sp.Symbol("x", real=True)
    c = sp.symbols("c1:4", real=True)
    truth = np.array([1.0, 1.0, 0.2])
    return _family(
        "sweep_dw1",
        [x],
        c,
        [c[0] * x - c[1] * x**3 + c[2]],
        truth,
        R(3, 20),
        burn_in=2000,
        relaxation=0.5,
        x0="exact",
        exact=_grid_sampler(_dw1_logp(truth, 0.15), -4.0, 4.0),
        relaxation_note="in-well 1/|V''| ≤ 0.5; starts drawn from the exact law",
    )


def double_well_2d():
    """f1 = c1 x − c2 x³ + c3 + c4 y, f2 = c5 x − c6 y, truth (1, 1, 0.2, 0.5, 0.5, 1), D = 0.2 I:
    the gradient of V = −x²/2 + x⁴/4 − 0.2x − 0.5xy + y²/2, exact law y | x ~ N(x/2, D)."""
    x, y = sp.symbols("x y", real=True)
    c = sp.symbols("c1:7", real=True)
    D = 0.2
    marg = _grid_sampler(lambda u: (0.5 * u**2 - 0.25 * u**4 + 0.2 * u + 0.125 * u**2) / D, -4, 4)

    def exact(n, rng):
        xs = marg(n, rng)[:, 0]
        return np.column_stack([xs, 0.5 * xs + np.sqrt(D) * rng.standard_normal(xs.size)])

    return _family(
        "sweep_dw2",
        [x, y],
        c,
        [c[0] * x - c[1] * x**3 + c[2] + c[3] * y, c[4] * x - c[5] * y],
        [1.0, 1.0, 0.2, 0.5, 0.5, 1.0],
        R(1, 5),
        burn_in=2000,
        relaxation=1.0,
        x0="exact",
        exact=exact,
        relaxation_note="in-well slowest 1/|λ| ≈ 1; starts drawn from the exact law",
    )


# --------------------------------------------------------------------------- chemical networks
_SCHLOGL = (3.75, 0.5, 5.0, 8.25)  # roots of f at 1, 2.5, 4
_OMEGA = 70


def _schlogl_D(u):
    k1, k2, k3, k4 = _SCHLOGL
    return (k1 * u**2 + k2 * u**3 + k3 + k4 * u) / (2 * _OMEGA)


def schlogl():
    """Schlögl model in the chemical Langevin approximation, system size Ω = 70: f = k1 x² −
    k2 x³ + k3 − k4 x, D(x) = (k1x² + k2x³ + k3 + k4x)/(2Ω) at the true rates (known noise);
    bistable (1 and 4); exact 1-D law p ∝ exp(∫ f/D)/D."""
    x = sp.Symbol("x", real=True)
    k = sp.symbols("k1:5", real=True)
    t = [sp.nsimplify(v) for v in _SCHLOGL]
    Dx = (t[0] * x**2 + t[1] * x**3 + t[2] + t[3] * x) / (2 * _OMEGA)
    k1, k2, k3, k4 = _SCHLOGL
    exact = _law_1d(lambda u: k1 * u**2 - k2 * u**3 + k3 - k4 * u, _schlogl_D, -0.5, 9.0)
    return _family(
        "sweep_schlogl",
        [x],
        k,
        [k[0] * x**2 - k[1] * x**3 + k[2] - k[3] * x],
        _SCHLOGL,
        [Dx],
        burn_in=2000,
        relaxation=0.5,
        x0="exact",
        exact=exact,
        relaxation_note="in-well 1/|f'| ≤ 0.5; starts drawn from the exact law",
    )


def dimerisation():
    """Two species, mass action, chemical Langevin noise (Ω = 20): ∅ → A (k1), A → ∅ (k2),
    2A → B (k3), B → 2A (k4), B → ∅ (k5); G = ν diag(√propensities)/√Ω at the true rates."""
    A, B = sp.symbols("A B", real=True)
    k = sp.symbols("k1:6", real=True)
    truth = np.array([10.0, 1.0, 0.1, 1.0, 1.0])
    t = [sp.nsimplify(v) for v in truth]
    props = [t[0], t[1] * A, t[2] * A**2, t[3] * B, t[4] * B]
    nu = sp.Matrix([[1, -1, -2, 2, 0], [0, 0, 1, -1, -1]])
    G = nu * sp.diag(*[sp.sqrt(p) for p in props]) / sp.sqrt(20)
    drift = [k[0] - k[1] * A - 2 * k[2] * A**2 + 2 * k[3] * B, k[2] * A**2 - k[3] * B - k[4] * B]
    # steady state A* = 6.18, B* = 1.91; Jacobian eigenvalues −1, −4.5
    return _family(
        "sweep_dimer",
        [A, B],
        k,
        drift,
        truth,
        noise=G,
        burn_in=2000,
        relaxation=1.0,
        x0=(6.18, 1.91),
        relaxation_note="1/|λ| at the steady state; starts there (inside the domain)",
    )


def cir():
    """Cox–Ingersoll–Ross dx = (a − b x) dt + √x dW (D = x/2), a = 4, b = 1: Gamma(8, rate 2).

    (With a = 2, Gamma(4, rate 2), the simulator's Euler–Maruyama steps took a chain below
    x = 0 about once in 10⁸ chain-steps at dt = 0.01, where D < 0 stops the run: the shape is
    raised to 8.)"""
    x = sp.Symbol("x", real=True)
    a, b = sp.symbols("a b", real=True)
    return _family(
        "sweep_cir",
        [x],
        [a, b],
        [a - b * x],
        [4.0, 1.0],
        [x / 2],
        burn_in=2000,
        relaxation=1.0,
        x0=(4.0,),
        exact=lambda n, rng: rng.gamma(8.0, 0.5, (int(n), 1)),
        relaxation_note="1/b; starts at the mean 4 (inside x > 0)",
        diffrax=True,
    )


# --------------------------------------------------------------------------- linear, stiff, small
def fast_slow():
    """Stiff OU: f1 = −k1 x + k2 y (fast), f2 = k3 x − k4 y, truth (50, 50, 0.5, 1),
    D = diag(0.5, 0.05); eigenvalues −50.5, −0.5; exact Gaussian law."""
    M = [[-50.0, 50.0], [0.5, -1.0]]
    D = np.diag([0.5, 0.05])
    x, y = sp.symbols("x y", real=True)
    k = sp.symbols("k1:5", real=True)
    return _family(
        "sweep_fastslow",
        [x, y],
        k,
        [-k[0] * x + k[1] * y, k[2] * x - k[3] * y],
        [50.0, 50.0, 0.5, 1.0],
        [R(1, 2), R(1, 20)],
        dt=0.005,
        burn_in=8000,
        relaxation=2.0,
        exact=_gaussian_sampler(ou_stationary_cov(M, D)),
        relaxation_note="1/0.5 (the slow eigenvalue); dt·|λ_fast| = 0.25",
    )


def ou_small_noise():
    """2-D OU, all four entries free, D = 1e-4 I (spread ≈ 0.01), exact draws."""
    M = [[-1.0, 0.5], [-0.5, -1.0]]
    D = 1e-4 * np.eye(2)
    model, truth = _ou_model("sweep_ou_small", M, D, ["M11", "M12", "M21", "M22"])
    return model, truth, _exact_gaussian(M, D)


def ou2d_partial():
    """2-D OU, anisotropic D = diag(1, 0.5), M21 known, M11, M12, M22 free, exact draws."""
    M = [[-1.0, 0.8], [-0.3, -0.7]]
    D = np.diag([1.0, 0.5])
    model, truth = _ou_model("sweep_ou2_partial", M, D, ["M11", "M12", "M22"])
    return model, truth, _exact_gaussian(M, D)


def ou3d_free():
    """3-D OU, all nine entries free, D = I (rank 6 of 9: Σ fixes only M's symmetric part
    relative to D), exact draws."""
    M = [[-1.0, 0.5, 0.0], [-0.5, -1.5, 0.3], [0.2, 0.0, -0.8]]
    D = np.eye(3)
    free = [f"M{i}{j}" for i in range(1, 4) for j in range(1, 4)]
    model, truth = _ou_model("sweep_ou3_free", M, D, free)
    return model, truth, _exact_gaussian(M, D)


# --------------------------------------------------------------------------- genes, chaos
def repressilator():
    """f_i = a_i/(1 + x_{i−1}²) − g_i x_i (a = 2, 2.5, 1.5; g = 1), D = 0.05 I: a stable
    focus for Hill exponent 2."""
    x = sp.symbols("x1:4", real=True)
    a = sp.symbols("a1:4", real=True)
    g = sp.symbols("g1:4", real=True)
    drift = [a[i] / (1 + x[i - 1] ** 2) - g[i] * x[i] for i in range(3)]
    return _family(
        "sweep_repress",
        x,
        a + g,
        drift,
        [2.0, 2.5, 1.5, 1.0, 1.0, 1.0],
        R(1, 20),
        sizes=(2000, 10_000, 50_000),
        burn_in=3000,
        relaxation=1.5,
        relaxation_note="1/|Re λ| at the fixed point ≈ 1.5 or less",
        diffrax=True,
    )


def rossler():
    """Rössler f = (−y − z, x + a y, b + z(x − c)), (a, b, c) = (0.2, 0.2, 5.7), noise on x and y
    only, D = diag(0.05, 0.05, 0).  (Additive noise on z has no stationary law: a z < 0 while
    x > c runs away — ds.simulate stops such chains.  Without it z' = b > 0 at z = 0, so z stays
    positive.)  Chains start on the attractor, (0, −6.5, 0.02)."""
    x, y, z = sp.symbols("x y z", real=True)
    a, b, c = sp.symbols("a b c", real=True)
    return _family(
        "sweep_rossler",
        [x, y, z],
        [a, b, c],
        [-y - z, x + a * y, b + z * (x - c)],
        [0.2, 0.2, 5.7],
        [R(1, 20), R(1, 20), 0],
        burn_in=10_000,
        relaxation=10.0,
        x0=(0.0, -6.5, 0.02),
        relaxation_note="about 1.7 rotations of period 6 (mixing on the attractor: checked "
        "empirically)",
    )


# --------------------------------------------------------------------------- held out
# Families added after the estimator and its intervals were frozen (stop 33), to test them on
# models they were not tuned on; not in the default sweep (``family_names()``), run with
# ``--families bruss_cycle,goodwin,mm,thomas`` (benchmarks/calibration_sweep_heldout.txt); the
# Brusselator and Goodwin's loop also from the independent solver (diffrax), as the hand-over of
# stop 38 was built on exact and ds.simulate draws only.
def brusselator_cycle():
    """Brusselator f = (a − (b + 1)x + x²y, bx − x²y), (a, b) = (1, 2.5): the fixed point (1, 2.5)
    is unstable (eigenvalues 0.25 ± 0.97i), a limit cycle; D = 1/50 · I."""
    x, y = sp.symbols("x y", real=True)
    a, b = sp.symbols("a b", real=True)
    return _family(
        "heldout_bruss_cycle",
        [x, y],
        [a, b],
        [a - (b + 1) * x + x**2 * y, b * x - x**2 * y],
        [1.0, 2.5],
        R(1, 50),
        dt=0.005,
        burn_in=16_000,
        relaxation=8.0,
        x0=(1.0, 2.5),
        relaxation_note="about one period of the cycle (phase mixing by the noise: checked "
        "empirically)",
        diffrax=True,
    )


def goodwin():
    """Goodwin's negative-feedback loop f = (a/(1 + z⁶) − b x, x − b y, y − b z), (a, b) =
    (2, 0.6), D = 1/100 · I: a slow stable focus (Hill 6 < 8, the secant condition; eigenvalues
    −0.083 ± 0.90i and −1.63 at the fixed point)."""
    x, y, z = sp.symbols("x y z", real=True)
    a, b = sp.symbols("a b", real=True)
    return _family(
        "heldout_goodwin",
        [x, y, z],
        [a, b],
        [a / (1 + z**6) - b * x, x - b * y, y - b * z],
        [2.0, 0.6],
        R(1, 100),
        burn_in=12_000,
        relaxation=12.0,
        x0=(1.0, 1.0, 1.0),
        relaxation_note="1/|Re λ| at the focus",
        diffrax=True,
    )


def michaelis_menten():
    """Birth–death with Michaelis–Menten degradation f = k − v x/(1 + x), (k, v) = (1, 2), and
    CIR-type noise D(x) = x/20 + 1/200 (positive on x > −0.1)."""
    x = sp.Symbol("x", real=True)
    k, v = sp.symbols("k v", real=True)
    return _family(
        "heldout_mm",
        [x],
        [k, v],
        [k - v * x / (1 + x)],
        [1.0, 2.0],
        [x / 20 + R(1, 200)],
        dt=0.005,
        burn_in=4000,
        relaxation=2.0,
        x0=(1.0,),
        relaxation_note="1/|f'(x*)| = (1 + x*)²/v at x* = 1; starts there",
    )


def thomas():
    """Thomas' cyclically symmetric system f = (sin y − b x, sin z − b y, sin x − b z), b = 0.3,
    D = 1/20 · I (the origin unstable: eigenvalue 0.7; wandering attractor)."""
    x, y, z = sp.symbols("x y z", real=True)
    b = sp.Symbol("b", real=True)
    return _family(
        "heldout_thomas",
        [x, y, z],
        [b],
        [sp.sin(y) - b * x, sp.sin(z) - b * y, sp.sin(x) - b * z],
        [0.3],
        R(1, 20),
        burn_in=6000,
        relaxation=3.3,
        relaxation_note="1/b, the contraction of every coordinate (mixing on the attractor: "
        "checked empirically)",
    )


def switch():
    """Bistable autoactivation switch f = a + b x²/(1 + x²) − g x, (a, b, g) = (0.05, 2, 1), with
    chemical-Langevin-type noise D(x) = (a + b x²/(1 + x²) + g x)/(2Ω) at the true rates, Ω = 20
    (wells at 0.06 and 1.8, 3 % of the mass in the upper one); exact 1-D law p ∝ exp(∫ f/D)/D on
    x > x₀ ≈ −0.0563, the zero of D (an entrance boundary: p → 0 there).  Found while trying to
    break the method: its just-resolved direction is where the hand-over (docs/design-statistics.md
    §8) was built.  Exact draws only (an Euler step can cross the zero of D)."""
    x = sp.Symbol("x", real=True)
    a, b, g = sp.symbols("a b g", real=True)
    hill = 2 * x**2 / (1 + x**2)
    exact = _law_1d(
        lambda u: 0.05 + 2 * u**2 / (1 + u**2) - u,
        lambda u: (0.05 + 2 * u**2 / (1 + u**2) + u) / 40,
        -0.056324929554168,  # the zero of D (brentq on D)
        5.0,
    )
    return _family(
        "heldout_switch",
        [x],
        [a, b, g],
        [a + b * x**2 / (1 + x**2) - g * x],
        [0.05, 2.0, 1.0],
        [(R(1, 20) + hill + x) / 40],
        sampler="exact",
        exact=exact,
    )


def logistic():
    """Stochastic logistic growth f = a x − c x², (a, c) = (1, 1/2), with multiplicative noise
    D(x) = x²/20: the stationary law is Gamma(a/0.05 − 1, c/0.05) = Gamma(19, rate 10), drawn
    exactly (exact draws only: an Euler step can leave x > 0)."""
    x = sp.Symbol("x", real=True)
    a, c = sp.symbols("a c", real=True)
    return _family(
        "heldout_logistic",
        [x],
        [a, c],
        [a * x - c * x**2],
        [1.0, 0.5],
        [x**2 / 20],
        sampler="exact",
        exact=lambda n, rng: rng.gamma(19.0, 0.1, size=(int(n), 1)),
    )


HELD_OUT = {
    "bruss_cycle": brusselator_cycle,
    "goodwin": goodwin,
    "mm": michaelis_menten,
    "thomas": thomas,
    "switch": switch,
    "logistic": logistic,
    **BREAKS,  # the second round (calibration_breaks)
    **NONAFFINE,  # the third: drifts not affine in θ (calibration_nonaffine)
    **BREAKS4,  # the fourth (calibration_breaks4)
    **BREAKS5,  # the fifth (calibration_breaks5)
    **BREAKS6,  # the sixth (calibration_breaks6)
    **BREAKS7,  # the seventh (calibration_breaks7)
    **BREAKS8,  # the eighth (calibration_breaks8)
    **BREAKS9,  # the ninth (calibration_breaks9)
    **BREAKS10,  # the tenth (calibration_breaks10)
    **BREAKS11,  # the eleventh (calibration_breaks11)
    **BREAKS12,  # the twelfth (calibration_breaks12)
    **BREAKS13,  # the thirteenth (calibration_breaks13)
}


def _networks():
    return {"net10": net10, "net20": net20}


FAMILIES = {
    "fhn_focus": fhn_focus,
    "fhn_cycle": fhn_cycle,
    "vdp": van_der_pol,
    "hopf": hopf,
    "toggle": toggle,
    "dwell1d": double_well_1d,
    "dwell2d": double_well_2d,
    "schlogl": schlogl,
    "dimer": dimerisation,
    "cir": cir,
    "fastslow": fast_slow,
    "ou_small": ou_small_noise,
    "ou2_partial": ou2d_partial,
    "ou3_free": ou3d_free,
    "repressilator": repressilator,
    "rossler": rossler,
}


def family_names():
    """All family names in the sweep's fixed order."""
    return list(FAMILIES) + list(_networks())


def family(name):
    """``(model, truth, protocol)`` of the family ``name``."""
    table = {**FAMILIES, **_networks(), **HELD_OUT}
    if name not in table:
        raise KeyError(
            f"unknown family {name!r}; choose from {', '.join(family_names())} "
            f"or the held-out {', '.join(HELD_OUT)}"
        )
    return table[name]()
