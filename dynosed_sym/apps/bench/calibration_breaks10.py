"""Held-out families, tenth round: textbook models taken while trying to break the method
with its estimator, intervals and verdicts frozen (no change to the package was made for them),
each of a kind the earlier rounds lacked.

* ``rayleigh`` — Rayleigh's oscillator ``x' = a y``, ``y' = b y − c y³ − e x`` on a thin limit
  cycle (radius ≈ 0.26) with small additive noise D = 1/1000: the law is a narrow ring whose
  four features (y, y³, x and the rotation) are nearly collinear on it; diffrax draws too;
* ``tristable`` — a sextic double-well-plus-centre potential in x (three wells, at 0 and
  ±1.79) coupled to a relaxing y by a small non-gradient rotation,
  ``x' = a x + b x³ − c x⁵ − w y``, ``y' = −g y + w x`` (w appears in both components): three
  modes with barriers 2.7 and 3.3 D, and a law not known in closed form (simulated);
* ``lv3_cir`` — three competing species (Lotka–Volterra with the full 3 × 3 competition matrix
  and the growth rates unknown, n = 12) with a small known immigration m and demographic
  (CIR-type) noise D = diag(s x_i): the rare third species' law is skewed towards 0;
* ``gk_cascade`` — a two-stage phosphorylation cascade in the chemical Langevin
  approximation: a graded Michaelis–Menten stage (K = 1/2) drives a zero-order ultrasensitive
  Goldbeter–Koshland stage (K = 1/20) poised near its switch, the exact diagonal CLE noise at
  the true rates; the four rates are the parameters, the drift's features rational functions;
  diffrax draws too;
* ``mm_net15`` — a 15-gene network ``x_i' = Σ_j W[i,j] g_j(x_j) − x_i + β_i`` with MIXED
  regulators: half the genes activate with the Michaelis–Menten g(x) = x/(1 + x), the others
  repress with g(x) = 1/(1 + x), the full W and the basal rates β unknown (n = 240), two
  regulators per gene in the truth.

Run with ``--routes global,local --families rayleigh,tristable,lv3_cir,gk_cascade,mm_net15``
(benchmarks/calibration_sweep_heldout10.txt).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .calibration_data import declare_family
from .calibration_networks import NETWORK_SEED, basal_network

__all__ = ["BREAKS10"]

R = sp.Rational


def rayleigh():
    """(a, b, c, e) = (1, 2, 50, 1), D = diag(1/1000, 1/1000): Rayleigh's ``y'' − μ(y' − y'³/3)
    + y = 0`` (μ = 2) scaled to amplitude 2·√(b/3c) = 0.23 in y; the origin is an unstable
    focus, the deterministic cycle (period 7.63) has |x| ≤ 0.30 and |y| ≤ 0.23; the noisy law's
    sd is (0.21, 0.17), its radius's sd 0.05 (20 % of its mean 0.26).  Starts at the origin
    (N(0, I) starts put some chains where the c y³ term is too stiff for any usable dt: Euler
    overflowed at step 2): the noise pushes each chain off the unstable focus in its own
    direction (the drift is odd, so the law is symmetric), and the phase diffusion mixes the
    rest.  dt = 0.01 (c·3y²·dt ≤ 0.12); dt = 0.005 gives the same law (KS p 0.76, 0.88; again
    0.06, 0.47; N = 10,000).  Burn-in 100 time units: against 300, KS p 0.31, 0.25 and again
    0.10, 0.27 (N = 10,000); 50 time units agree too (0.49, 0.07), 20 do not (0.001, 0.001)."""
    x, y = sp.symbols("x y", real=True)
    a, b, c, e = sp.symbols("a b c e", real=True)
    return declare_family(
        "heldout_rayleigh",
        [x, y],
        [a, b, c, e],
        [a * y, b * y - c * y**3 - e * x],
        [1.0, 2.0, 50.0, 1.0],
        [R(1, 1000), R(1, 1000)],
        dt=0.01,
        burn_in=10_000,
        relaxation=10.0,
        x0=(0.0, 0.0),
        relaxation_note="the phase diffusion of the thin cycle (checked empirically, docstring)",
        diffrax=True,
    )


#: (a, b, c, g, w) of the tristable system: V'(x) = (3/2)·x(x² − 1)(x² − 3.2), rotation w.
TRI_TRUTH = (-4.8, 6.3, 1.5, 1.0, 0.5)


def tristable():
    """(a, b, c, g, w) = (−4.8, 6.3, 1.5, 1, 1/2), D = 2/5: without w, x' = −V'(x) with
    V' = (3/2)x(x² − 1)(x² − 3.2): wells at 0 and ±1.79 (V = 0 and −0.26), barriers at ±1
    (V = 1.08), i.e. 2.7 D from the centre and 3.3 D from the outer wells; the rotation w
    couples x to y (y' = −y + w x) and makes the drift non-gradient, so the law is not known.
    Shares: 0.24 / 0.51 / 0.25 of the chains in x < −1, |x| ≤ 1, x > 1; the x-histogram has
    three modes (the dips at ±1 hold under a tenth of the peaks' counts).  Starts at the origin
    (the x⁵ term makes N(0, I) starts beyond |x| ≈ 4 blow up at any usable dt); the drift is odd, so
    the two outer wells are equally filled whatever the time, and the centre's share settles
    by Kramers hopping (rate ≈ 0.1 per time unit).  dt = 0.005, burn-in 100 time units: against
    300, KS p 0.53, 0.44 (N = 10,000); 25 time units already agree (0.85, 0.32); dt = 0.0025
    gives the same law (KS p 0.95, 0.25; shares 0.243 / 0.510 / 0.247)."""
    x, y = sp.symbols("x y", real=True)
    a, b, c, g, w = sp.symbols("a b c g w", real=True)
    return declare_family(
        "heldout_tristable",
        [x, y],
        [a, b, c, g, w],
        [a * x + b * x**3 - c * x**5 - w * y, -g * y + w * x],
        list(TRI_TRUTH),
        R(2, 5),
        dt=0.005,
        burn_in=20_000,
        relaxation=10.0,
        x0=(0.0, 0.0),
        relaxation_note="the Kramers hopping between the wells (checked empirically)",
    )


#: Growth rates and competition matrix of lv3_cir.
LV_R = (1.2, 1.0, 0.8)
LV_A = ((1.0, 0.5, 0.2), (0.4, 1.0, 0.5), (0.3, 0.6, 1.0))
#: Known immigration m and noise scale s (D = s·x) of lv3_cir.
LV_M = R(1, 10)
LV_S = R(1, 50)


def lv3_cir():
    """``x_i' = m + x_i (r_i − Σ_j A_ij x_j)``, r = (1.2, 1, 0.8), A = [[1, .5, .2], [.4, 1,
    .5], [.3, .6, 1]] (n = 12 unknowns), m = 1/10 known, D = diag(x_i/50): the interior
    equilibrium (0.93, 0.59, 0.41), Jacobian eigenvalues −1.37, −0.67, −0.41; near 0 the law is
    ∝ x_i^{m/s − 1} = x_i⁴, so 0 is never reached (without m a chain can die out).  Law: means
    (0.92, 0.58, 0.40), sd (0.15, 0.14, 0.12), the third species down to 0.07.  Starts at the
    equilibrium; dt = 0.002: at dt = 0.005 the Euler steps moved the first species' mean by
    +0.003 (1.5 standard errors against dt = 0.001, KS p 0.09); burn-in 30 time units = 12
    × 1/0.41: against 90, KS p 0.34, 0.98, 0.55; 10 time units already agree (0.53, 0.24,
    0.65); dt = 0.001 gives the same law (KS p 0.16, 0.86, 0.57; means within 0.002) (N =
    10,000)."""
    x = sp.symbols("x1:4", real=True)
    r = sp.symbols("r1:4", real=True)
    A = sp.Matrix(3, 3, sp.symbols("a11 a12 a13 a21 a22 a23 a31 a32 a33", real=True))
    drift = [LV_M + x[i] * (r[i] - sum(A[i, j] * x[j] for j in range(3))) for i in range(3)]
    return declare_family(
        "heldout_lv3_cir",
        list(x),
        [*r, *A],
        drift,
        np.concatenate([LV_R, np.ravel(LV_A)]),
        [LV_S * xi for xi in x],
        dt=0.002,
        burn_in=15_000,
        relaxation=2.4,
        x0=(0.93, 0.59, 0.41),
        relaxation_note="1/|Re λ| at the equilibrium; starts there",
    )


#: Michaelis constants of the cascade's graded and ultrasensitive stages, system size Ω.
GK_K1 = R(1, 2)
GK_K2 = R(1, 20)
GK_OMEGA = 400
#: (v1, v2, v3, v4): v3 x* = 1.05·v4 puts the second stage 5 % above its switch.
GK_TRUTH = (1.0, 0.8, 1.725, 1.0)


def gk_cascade():
    """``x' = v1 (1 − x)/(K1 + 1 − x) − v2 x/(K1 + x)``, ``y' = v3 x (1 − y)/(K2 + 1 − y) −
    v4 y/(K2 + y)`` (fractions of the phosphorylated kinase and of its target), K1 = 1/2,
    K2 = 1/20, D = diag(sum of each stage's two propensities)/(2Ω), Ω = 400, at
    (v1, v2, v3, v4) = (1, 0.8, 1.725, 1): x* = 0.608, and v3 x* = 1.05 v4 poises the
    zero-order stage just above its switch (y* = 0.626); the drift's slopes at the fixed point
    are −0.95 and −0.40, D* = (0.0011, 0.0023).  y (mean 0.61, sd 0.10, from 0.23 to 0.90)
    amplifies x's relative spread (sd 0.034) threefold.  The walls at y → 0, 1 are steep (where
    the zero-order stage saturates, f/D ≈ −2Ω·K2/(K2 + 1 − y)): the boundaries, beyond which D
    turns negative, are not reached (at Ω = 100 and dt = 0.01 a chain crossed y = 1 within 50
    time units).  Starts at (x*, 1/2); dt = 0.005, burn-in 100 time units (40 × 1/0.40; the
    flat top of the y-law makes the approach slower, 10 assumed): against 300, KS p 0.89, 0.95
    and again 0.16, 0.39; 20 time units already agree (0.39, 0.99); dt = 0.0025 gives the same
    law (0.45, 0.85; again 0.53, 0.72) (N = 10,000)."""
    x, y = sp.symbols("x y", real=True)
    v = sp.symbols("v1:5", real=True)
    fw1, bw1 = (1 - x) / (GK_K1 + 1 - x), x / (GK_K1 + x)
    fw2, bw2 = x * (1 - y) / (GK_K2 + 1 - y), y / (GK_K2 + y)
    t = [sp.nsimplify(v) for v in GK_TRUTH]
    D = [(t[0] * fw1 + t[1] * bw1) / (2 * GK_OMEGA), (t[2] * fw2 + t[3] * bw2) / (2 * GK_OMEGA)]
    return declare_family(
        "heldout_gk_cascade",
        [x, y],
        list(v),
        [v[0] * fw1 - v[1] * bw1, v[2] * fw2 - v[3] * bw2],
        list(GK_TRUTH),
        D,
        dt=0.005,
        burn_in=20_000,
        relaxation=10.0,
        x0=(0.608, 0.5),
        relaxation_note="the slow second stage near its switch (checked empirically)",
        diffrax=True,
    )


#: Genes of mm_net15.
MMNET_D = 15


def mm_net_truth(d=MMNET_D, seed=(NETWORK_SEED, MMNET_D, 10)):
    """(W, β, repressor) of the mixed network: a random half of the genes (⌊d/2⌋) repress,
    the others activate; two regulators per gene (off the diagonal), W[i, j] ~ U(0.5, 1.5),
    β_i ~ U(0.25, 0.75), from ``seed``."""
    rng = np.random.default_rng(list(seed))
    repressor = np.zeros(d, bool)
    repressor[rng.permutation(d)[: d // 2]] = True
    W = np.zeros((d, d))
    for i in range(d):
        js = rng.choice([j for j in range(d) if j != i], 2, replace=False)
        W[i, js] = rng.uniform(0.5, 1.5, 2)
    beta = rng.uniform(0.25, 0.75, d)
    return W, beta, repressor


def mm_net15():
    """15 genes, ``x_i' = Σ_j W[i,j] g_j(x_j) − x_i + β_i`` with g_j(x) = x/(1 + x) for the
    activators and 1/(1 + x) for the repressors (:func:`mm_net_truth`), D = 1/20,
    θ = (W row-major, β), n = 240; truth from :func:`mm_net_truth`: 8 activators, 7
    repressors, 30 nonzero W in 0.53–1.50, β in 0.26–0.71.  One fixed point (the ODE's
    root-finder from 100 uniform starts in [0, 3]¹⁵ reaches the same one), x* between 0.89
    and 2.19, Jacobian eigenvalues' real parts −1.16 … −0.75 (imaginary parts up to 0.21); there
    the features' slopes |g'| = 1/(1 + x)² are 0.10–0.28, so every g_j is close to linear over
    the range the chains visit (sd 0.23): W is weakly identified.  The features are singular at
    x = −1; the chains stay above 0.08 (N = 5000), and start at x = 1 (N(0, I) starts would
    put chains below −1).  dt = 0.02 as the sweep's networks, 1000 steps = 20 time units = 15
    × the slowest relaxation: KS against 3 × the burn-in, smallest p of the 15 coordinates
    0.072, and against dt = 0.01, 0.032 (N = 5000; the check's Bonferroni level is 0.01/15);
    5 time units do not agree (p < 0.001, and ds.simulate warns)."""
    d = MMNET_D
    x = sp.symbols(f"x0:{d}", real=True)
    Wt, bt, rep = mm_net_truth()
    return basal_network(
        "heldout_mm_net15",
        [1 / (1 + xi) if rep[j] else xi / (1 + xi) for j, xi in enumerate(x)],
        Wt,
        bt,
        1.34,
        x0=(1.0,) * d,
    )


BREAKS10 = {
    "rayleigh": rayleigh,
    "tristable": tristable,
    "lv3_cir": lv3_cir,
    "gk_cascade": gk_cascade,
    "mm_net15": mm_net15,
}
