"""7-D B-cell gene-regulatory network (reference paper, supplement: "Seven-dimensional
stochastic GRN model").

State (p, b, r, x1, y1, x2, y2): three genes driven by two noisy Stuart–Landau oscillators.
The 3×7 interaction matrix W acting on the basis (π, β, ρ, πβ, πρ, βρ, πβρ), with
π = 1/(1+p²), β = 1/(1+b²), ρ = 1/(1+r²), is unknown: 21 parameters W[i,j] (row-wise).
BCR = 10 sin(α₁)^30 β and CD40 = 5 sin(α₂)^30 β with α the polar angle of each oscillator,
so sin(α₁) = y1 / sqrt(x1² + y1²).  D = 1e-4 I₇.
"""

import sympy as sp

import dynosed_sym as ds

p, b, r, x1, y1, x2, y2 = sp.symbols("p b r x1 y1 x2 y2", real=True)
W = sp.MatrixSymbol("W", 3, 7)

pi_, beta_, rho_ = 1 / (1 + p**2), 1 / (1 + b**2), 1 / (1 + r**2)
phi = sp.Matrix([pi_, beta_, rho_, pi_ * beta_, pi_ * rho_, beta_ * rho_, pi_ * beta_ * rho_])
i1, i2, i3 = sp.Matrix(W) * phi

w1 = sp.pi / 100
w2 = sp.sqrt(2) * sp.pi / 100
sin_a1 = y1 / sp.sqrt(x1**2 + y1**2)
sin_a2 = y2 / sp.sqrt(x2**2 + y2**2)
BCR = 10 * sin_a1**30 * beta_
CD40 = 5 * sin_a2**30 * beta_

W_true = [
    [0, 1, 1, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1],
    [0, 0, 1, 0, 0, 0, 0],
]

model = ds.SDEModel(
    state=[p, b, r, x1, y1, x2, y2],
    params=W,
    drift=[
        sp.Float("1e-6") - p + 9 * i1,
        2 - (1 + BCR) * b + 100 * i2,
        sp.Float("0.1") - r + CD40 + sp.Float("2.6") * i3,
        w1 * y1 + x1 * (1 - x1**2 - y1**2),
        -w1 * x1 + y1 * (1 - x1**2 - y1**2),
        w2 * y2 + x2 * (1 - x2**2 - y2**2),
        -w2 * x2 + y2 * (1 - x2**2 - y2**2),
    ],
    diffusion=sp.Float("1e-4"),
    name="grn_bcell",
    nominal={f"W[{i},{j}]": W_true[i][j] for i in range(3) for j in range(7)},
)
