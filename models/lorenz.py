"""Stochastic Lorenz system (reference paper, main text): σ = 10, ρ = 28, β = 8/3, D = 0.3."""

import sympy as sp

import dynosed_sym as ds

x, y, z = sp.symbols("x y z", real=True)
sigma, rho, beta = sp.symbols("sigma rho beta", real=True)

model = ds.SDEModel(
    state=[x, y, z],
    params=[sigma, rho, beta],
    drift=[sigma * (y - x), x * (rho - z) - y, x * y - beta * z],
    diffusion=sp.Rational(3, 10),  # isotropic D = 0.3 I, noise sqrt(2D) dW
    name="lorenz",
    nominal={sigma: 10.0, rho: 28.0, beta: 8.0 / 3.0},
)
