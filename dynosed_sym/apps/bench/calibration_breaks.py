"""Held-out families, second round: textbook models taken while trying to break the method (stop
40), after its estimator and intervals were frozen, each of a kind the sweep did not have.

* ``kramers`` — the underdamped Langevin (Kramers) oscillator in a double well: noise on the
  velocity only, a *singular* diffusion matrix, and a stationary law that is not reversible (its
  probability flux circulates) but known exactly;
* ``predprey`` — predator and prey with logistic prey growth and multiplicative noise
  (D = diag(x², y²)/100): a slow stable focus;
* ``lvcomp`` — two competing species (Lotka–Volterra competition, stable coexistence) with the
  same multiplicative noise;
* ``selkov`` — Sel'kov's glycolysis oscillator on its limit cycle with additive noise;
* ``net20rep`` — a 20-gene network of the issue-20 kind but with *repressive* Hill inputs
  h(x) = 1/(1 + x²), its own sparse truth, at the issue's N = 20,000 (global route).

Run with ``--families kramers,predprey,lvcomp,selkov``
(benchmarks/calibration_sweep_heldout2.txt); the predator–prey focus also from the independent
solver (diffrax); the network with ``--routes global --families net20rep``
(benchmarks/calibration_sweep_heldout_net.txt).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .calibration_data import declare_family, grid_sampler
from .calibration_networks import network_model, network_protocol

__all__ = ["BREAKS", "KRAMERS_T", "kramers_sampler"]

R = sp.Rational

#: Temperature of the Kramers oscillator's stationary law, D_vv / g = (1/8) / (1/2).
KRAMERS_T = 0.25


def kramers_sampler(T=KRAMERS_T):
    """Exact sampler ``(n, rng) -> (n, 2)`` of p(x, v) ∝ exp(−(v²/2 + V(x))/T), V(x) = −x²/2 +
    x⁴/4: x by the inverse CDF of its marginal on [−4, 4] (the grid built once), v ~ N(0, T)
    independent of it."""
    marginal = grid_sampler(lambda u: -(-(u**2) / 2 + u**4 / 4) / T, -4.0, 4.0)

    def draw(n, rng):
        xs = marginal(n, rng)[:, 0]
        return np.column_stack([xs, np.sqrt(T) * rng.standard_normal(xs.size)])

    return draw


def kramers():
    """x' = v, v' = −g v + a x − b x³, (g, a, b) = (1/2, 1, 1), D = diag(0, 1/8): the stationary
    law ∝ exp(−(v²/2 + V(x))/T) with T = D_vv/g = 1/4 (the Maxwell–Boltzmann law of the double
    well; its flux (v ∂ₓ − V'(x) ∂ᵥ) p circulates without changing it).  Chains start from the
    exact law (the burn-in removes the integrator's transient, not the barrier crossings)."""
    x, v = sp.symbols("x v", real=True)
    g, a, b = sp.symbols("g a b", real=True)
    return declare_family(
        "heldout_kramers",
        [x, v],
        [g, a, b],
        [v, -g * v + a * x - b * x**3],
        [0.5, 1.0, 1.0],
        [0, R(1, 8)],
        burn_in=4000,
        relaxation=4.0,
        x0="exact",
        exact=kramers_sampler(),
        relaxation_note="1/|Re λ| = 2/g in the wells (eigenvalues −g/2 ± i√(2 − g²/4)); starts "
        "drawn from the exact law",
    )


def predator_prey():
    """x' = r x − k x² − p x y, y' = e x y − μ y, (r, k, p, e, μ) = (1, 1/2, 1, 1, 0.6), with
    multiplicative noise D = diag(x², y²)/100: a stable focus at (0.6, 0.7) (eigenvalues
    −0.15 ± 0.63i)."""
    x, y = sp.symbols("x y", real=True)
    r, k, p, e, mu = sp.symbols("r k p e mu", real=True)
    return declare_family(
        "heldout_predprey",
        [x, y],
        [r, k, p, e, mu],
        [r * x - k * x**2 - p * x * y, e * x * y - mu * y],
        [1.0, 0.5, 1.0, 1.0, 0.6],
        [x**2 / 100, y**2 / 100],
        burn_in=7000,
        relaxation=1.0 / 0.15,
        x0=(0.6, 0.7),
        relaxation_note="1/|Re λ| at the focus; starts there",
        diffrax=True,
    )


def lv_competition():
    """x' = x(r₁ − a₁₁x − a₁₂y), y' = y(r₂ − a₂₁x − a₂₂y), (r₁, a₁₁, a₁₂, r₂, a₂₁, a₂₂) =
    (1, 1, 1/2, 1, 0.4, 1), D = diag(x², y²)/50: stable coexistence at (0.625, 0.75)
    (eigenvalues −0.375 and −1)."""
    x, y = sp.symbols("x y", real=True)
    r1, a11, a12, r2, a21, a22 = sp.symbols("r1 a11 a12 r2 a21 a22", real=True)
    return declare_family(
        "heldout_lvcomp",
        [x, y],
        [r1, a11, a12, r2, a21, a22],
        [x * (r1 - a11 * x - a12 * y), y * (r2 - a21 * x - a22 * y)],
        [1.0, 1.0, 0.5, 1.0, 0.4, 1.0],
        [x**2 / 50, y**2 / 50],
        burn_in=3000,
        relaxation=1.0 / 0.375,
        x0=(0.625, 0.75),
        relaxation_note="1/|λ| slowest at the coexistence point; starts there",
    )


def selkov():
    """Sel'kov's glycolysis model x' = −k x + a y + c x²y, y' = b − a y − c x²y, (k, a, b, c) =
    (1, 0.08, 0.6, 1), D = 1/100 · I: the fixed point (0.6, 1.36) is unstable, a limit cycle."""
    x, y = sp.symbols("x y", real=True)
    k, a, b, c = sp.symbols("k a b c", real=True)
    return declare_family(
        "heldout_selkov",
        [x, y],
        [k, a, b, c],
        [-k * x + a * y + c * x**2 * y, b - a * y - c * x**2 * y],
        [1.0, 0.08, 0.6, 1.0],
        R(1, 100),
        burn_in=8000,
        relaxation=8.0,
        x0=(0.6, 1.36),
        relaxation_note="about one period of the cycle (phase mixing by the noise: checked "
        "empirically)",
    )


def net20_repressive(d=20, seed=20_261_128):
    """d genes (default 20, n = 400), drift ``Σ_k W[j,k]/(1 + x_k²) − x_j + 1/4``, D = 1/20; the
    truth has two inputs per gene off the diagonal, ±U(0.3, 1.2), drawn from ``seed`` (a date).
    The drift is −x plus a bounded term, so every W has a stationary law; the feedback
    ``|h'| ≤ 0.65·|W|`` is checked by the sweep's stationarity check.  Chains start at x = 1/2.
    Built by the sweep's own network helpers (:mod:`.calibration_networks`)."""
    model, truth = network_model(
        d,
        seed,
        inputs=lambda xi: 1 / (1 + xi**2),
        offset=R(1, 4),
        weights=(0.3, 1.2),
        name=f"heldout_net{d}rep",
    )
    return model, truth, network_protocol((20_000,), 800, x0=(0.5,) * d)


BREAKS = {
    "kramers": kramers,
    "predprey": predator_prey,
    "lvcomp": lv_competition,
    "selkov": selkov,
    "net20rep": net20_repressive,
}
