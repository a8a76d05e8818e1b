"""Noisy Stuart–Landau (limit-cycle) oscillator with unknown growth rate a, radial damping c
and rotation frequency omega:

    dx = (a x − omega y − c x r²) dt + sqrt(2D) dW₁
    dy = (a y + omega x − c y r²) dt + sqrt(2D) dW₂,   r² = x² + y²

The stationary density p ∝ exp((a r²/2 − c r⁴/4)/D) is rotation invariant and the rotational
term is divergence free with zero flux against it, so omega cannot be identified from snapshots.
"""

import sympy as sp

import dynosed_sym as ds

x, y = sp.symbols("x y", real=True)
a, c, omega = sp.symbols("a c omega", real=True)
r2 = x**2 + y**2

model = ds.SDEModel(
    state=[x, y],
    params=[a, c, omega],
    drift=[a * x - omega * y - c * x * r2, a * y + omega * x - c * y * r2],
    diffusion=sp.Rational(1, 10),
    name="limit_cycle",
    nominal={a: 1.0, c: 1.0, omega: 2.0},
)
