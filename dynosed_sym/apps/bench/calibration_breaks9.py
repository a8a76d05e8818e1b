"""Held-out families, ninth round: textbook models taken while trying to break the method
with its estimator, intervals and verdicts frozen (no change to the package was made for them),
each of a kind the earlier rounds lacked.

* ``vdp_relax`` — the van der Pol oscillator deep in its relaxation regime (μ = 5) in Liénard
  form, ``x' = a x − b x³ − c y``, ``y' = e x`` (truth μ, μ/3, μ, 1/μ): a stiff slow–fast cycle,
  x jumping between the outer branches of the cubic on a time scale 1/μ while y creeps along
  them, so the law sits on two thin slow branches and the fast jumps are rarely sampled (the
  earlier van der Pol had μ = 1); diffrax draws too;
* ``repress12`` — a 12-gene *repressive* network ``W·r(x) − x + β`` with r(x) = 1/(1 + x²)
  decreasing, W ≥ 0 sparse (two repressors per gene), the full W and the basal rates β unknown
  (n = 156): the earlier networks activated (h = x²/(1 + x²)), here r and the constant 1 are
  the features, and r(x_j) is close to linear over the range the chains visit;
* ``allee`` — a population with a strong Allee effect and immigration,
  ``x' = m − c x + a x² − b x³``, under demographic (CIR-type) noise D(x) = x/4: bistable in 1-D
  (a rare low state near 0.5 and a common high state near 4.5) with a noise vanishing at the
  boundary x = 0, cubic polynomial features on x > 0; exact draws of the known stationary law
  ``∝ x^{m/s − 1} exp((a x²/2 − b x³/3 − c x)/s)`` (s = 1/4);
* ``crn3`` — a three-species reaction network in the chemical Langevin approximation, every
  reaction changing one species (inflow of A, A removed by C, B made by A, B removed in pairs,
  C made by B, C decaying): a negative feedback loop with bimolecular propensities
  ``A' = k1 − k2 A C``, ``B' = k3 A − k4 B²``, ``C' = k5 B − k6 C``, and the exact diagonal CLE
  noise ``D = diag(k1 + k2 A C, k3 A + k4 B², k5 B + k6 C)/(2Ω)`` at the true rates; diffrax
  draws too;
* ``sl_shear`` — a Stuart–Landau oscillator with amplitude-dependent frequency (shear, or twist)
  ``z' = (a + i w) z − (b + i q)|z|² z``: the frequency ``w − q|z|²`` changes with the amplitude,
  which turns the amplitude noise into phase noise; the rotation is visible in the stationary
  law only through the anisotropic D (the earlier hopf had no shear), and the two rotation
  features −J x and |x|²·J x are nearly collinear on the cycle; diffrax draws too.

Run with ``--routes global,local --families vdp_relax,repress12,allee,crn3,sl_shear``
(benchmarks/calibration_sweep_heldout9.txt).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .calibration_data import declare_family, grid_sampler
from .calibration_networks import NETWORK_SEED, basal_network

__all__ = ["BREAKS9"]

R = sp.Rational

#: μ of the relaxation van der Pol oscillator.
VDP_MU = 5


def vdp_relax():
    """(a, b, c, e) = (5, 5/3, 5, 1/5), i.e. Liénard's ``x' = μ(x − x³/3 − y)``, ``y' = x/μ`` at
    μ = 5, D = diag(1/10, 1/1000): the fixed point 0 is an unstable node, a relaxation cycle of
    period ≈ (3 − 2 ln 2)μ ≈ 8 (x between ±2, y between ±2/3); on the slow branches the fast
    variable relaxes at μ(x² − 1) ≈ 5–15.  dt = 0.005 (dt·15 = 0.075); dt = 0.0025 gives the
    same law (KS p 0.65, 0.77, N = 10,000).  Burn-in 200 time units from N(0, I): against 600,
    KS p 0.38, 0.84 (N = 5000); 50 time units already agree (0.31, 0.08), 25 do not (0.018,
    0.038) — the phase of the cycle mixes within a few periods (checked empirically)."""
    x, y = sp.symbols("x y", real=True)
    a, b, c, e = sp.symbols("a b c e", real=True)
    mu = VDP_MU
    return declare_family(
        "heldout_vdp_relax",
        [x, y],
        [a, b, c, e],
        [a * x - b * x**3 - c * y, e * x],
        [float(mu), mu / 3, float(mu), 1 / mu],
        [R(1, 10), R(1, 1000)],
        dt=0.005,
        burn_in=40_000,
        relaxation=20.0,
        relaxation_note="the phase diffusion of the cycle (see the docstring)",
        diffrax=True,
    )


#: Genes of repress12.
REPRESS_D = 12


def repress_truth(d=REPRESS_D, seed=(NETWORK_SEED, REPRESS_D, 9)):
    """(W, β) of the repressive network: two repressors per gene (off the diagonal),
    W[i, j] ~ U(0.5, 1.5) ≥ 0, then β_i ~ U(0.25, 0.75), from ``seed``."""
    rng = np.random.default_rng(list(seed))
    W = np.zeros((d, d))
    for i in range(d):
        js = rng.choice([j for j in range(d) if j != i], 2, replace=False)
        W[i, js] = rng.uniform(0.5, 1.5, 2)
    beta = rng.uniform(0.25, 0.75, d)
    return W, beta


def repress12():
    """12 genes, ``x_i' = Σ_j W[i,j] r(x_j) − x_i + β_i`` with r(x) = 1/(1 + x²), D = 1/20,
    θ = (W row-major, β), n = 156; truth from :func:`repress_truth` (24 nonzero W in
    0.51–1.47, β in 0.27–0.72).  One fixed point (the ODE from 100 uniform starts in [−1, 3]¹²
    reaches the same one), x* between 0.73 and 1.76, Jacobian eigenvalues' real parts −1.69 …
    −0.57 (imaginary parts up to 0.22).  dt = 0.02 as the sweep's networks; 1000 steps = 20
    time units = 11 × the slowest relaxation (KS against 3 × the burn-in: smallest p of the 12
    coordinates 0.044, N = 5000, which is above the check's Bonferroni level 0.01/12)."""
    d = REPRESS_D
    x = sp.symbols(f"x0:{d}", real=True)
    Wt, bt = repress_truth()
    return basal_network("heldout_repress12", [1 / (1 + xi**2) for xi in x], Wt, bt, 1.8)


#: s of the Allee population's noise D(x) = s·x.
ALLEE_S = R(1, 4)
#: (m, c, a, b) of the Allee population: m − s − c x + a x² − b x³ = −b(x − ½)(x − 2)(x − 9/2).
ALLEE_TRUTH = (1.15, 2.45, 1.4, 0.2)


def _allee_logp(m, c, a, b, s):
    """log of the stationary density x^{m/s − 1} exp((a x²/2 − b x³/3 − c x)/s) on x > 0."""

    def logp(u):
        with np.errstate(divide="ignore"):
            return (m / s - 1) * np.log(u) + (a * u**2 / 2 - b * u**3 / 3 - c * u) / s

    return logp


def allee():
    """(m, c, a, b) = (1.15, 2.45, 1.4, 0.2), D(x) = x/4: the law p ∝ x^{3.6} exp(…) (the
    zero-flux solution p ∝ exp(∫ f/D)/D) has its modes at x = 0.5 and 4.5 and its antimode at
    2 (the roots of f − s), 24 % of the mass below 2, the log-density 1.3 lower at the antimode
    than at the low mode.  Exact draws only (inverse CDF on a grid of (0, 12]).  Near 0 the law
    is ∝ x^{3.6}: the boundary is never reached by the diffusion, but ``ds.simulate``'s
    Euler–Maruyama steps at dt = 0.01 took a chain below 0 (where D < 0, a StationarityError
    "simulation diverged") within 90–530 time units in 5000–20,000 chains; at dt = 0.005 20,000
    chains ran 100 time units without it, and at the protocol's dt = 0.002 (100 time units from
    x = 4.5) they agree with the exact law (KS p 0.75, 0.46, 0.38, N = 20,000, three seeds; the
    low mode's share 0.241, 0.250, 0.248 against 0.244; no warning)."""
    x = sp.Symbol("x", real=True)
    m, c, a, b = sp.symbols("m c a b", real=True)
    return declare_family(
        "heldout_allee",
        [x],
        [m, c, a, b],
        [m - c * x + a * x**2 - b * x**3],
        list(ALLEE_TRUTH),
        [ALLEE_S * x],
        sampler="exact",
        exact=grid_sampler(_allee_logp(*ALLEE_TRUTH, float(ALLEE_S)), 1e-9, 12.0),
        x0=(4.5,),
        dt=0.002,
        burn_in=50_000,
        relaxation=20.0,
        relaxation_note="the hopping between the two modes; only for the check against ds.simulate",
    )


#: System size Ω of the reaction network's chemical Langevin noise.
CRN_OMEGA = 200
#: (k1, …, k6) of the reaction network: the fixed point (A, B, C) = (2, 2, 1).
CRN_TRUTH = (2.0, 1.0, 2.0, 1.0, 1.0, 2.0)


def crn3():
    """(k1, …, k6) = (2, 1, 2, 1, 1, 2), Ω = 200: the fixed point (A, B, C) = (2, 2, 1), Jacobian
    eigenvalues −4.47 and −1.27 ± 1.04i; D at the fixed point diag(0.01, 0.02, 0.01): spreads
    (0.12, 0.09, 0.07), at least 13 of them from 0 (the noise's D stays positive).  Starts at the
    fixed point; burn-in 20 time units against 60: KS p 0.32, 0.68, 0.70 (N = 5000)."""
    A, B, C = sp.symbols("A B C", real=True)
    k = sp.symbols("k1:7", real=True)
    kt = [sp.nsimplify(v) for v in CRN_TRUTH]
    two_omega = 2 * CRN_OMEGA
    D = [
        (kt[0] + kt[1] * A * C) / two_omega,
        (kt[2] * A + kt[3] * B**2) / two_omega,
        (kt[4] * B + kt[5] * C) / two_omega,
    ]
    return declare_family(
        "heldout_crn3",
        [A, B, C],
        list(k),
        [k[0] - k[1] * A * C, k[2] * A - k[3] * B**2, k[4] * B - k[5] * C],
        list(CRN_TRUTH),
        D,
        dt=0.005,
        burn_in=4000,
        relaxation=0.8,
        x0=(2.0, 2.0, 1.0),
        relaxation_note="1/|Re λ| at the fixed point; starts there",
        diffrax=True,
    )


def sl_shear():
    """(a, b, w, q) = (1, 1, 2, 1), D = diag(1/10, 1/40): the cycle |z|² ≈ a/b = 1 turns at
    w − q|z|² ≈ 1; the shear q/b = 1 doubles the phase diffusion.  The law's sd (0.74, 0.67) is
    anisotropic, but only just more than without any rotation: its covariance at (w, q) = (0, 0)
    is [[0.538, 0.001], [0.001, 0.467]] against [[0.541, 0.009], [0.009, 0.458]] at the truth
    (20,000 chains each) — the rotation is weakly identified.  Burn-in 60 time units from
    N(0, I): 7.5 already agree with 180 (KS p 0.52, 0.11, N = 10,000); dt = 0.005 gives the same
    law (KS p 0.75, 0.33)."""
    x, y = sp.symbols("x y", real=True)
    a, b, w, q = sp.symbols("a b w q", real=True)
    r2 = x**2 + y**2
    return declare_family(
        "heldout_sl_shear",
        [x, y],
        [a, b, w, q],
        [a * x - b * r2 * x - w * y + q * r2 * y, a * y - b * r2 * y + w * x - q * r2 * x],
        [1.0, 1.0, 2.0, 1.0],
        [R(1, 10), R(1, 40)],
        dt=0.01,
        burn_in=6000,
        relaxation=6.0,
        relaxation_note="the phase diffusion (see the docstring)",
        diffrax=True,
    )


BREAKS9 = {
    "vdp_relax": vdp_relax,
    "repress12": repress12,
    "allee": allee,
    "crn3": crn3,
    "sl_shear": sl_shear,
}
