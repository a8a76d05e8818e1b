"""2-D Ornstein–Uhlenbeck process dx = M x dt + sqrt(2D) dW with all four entries of M free.

The stationary law N(0, Σ) with M Σ + Σ Mᵀ + 2D = 0 does not determine M: adding a
divergence-free probability current changes M but not Σ, so snapshots leave one
combination of the entries free (rank 3 of 4).
"""

import sympy as sp

import dynosed_sym as ds

x, y = sp.symbols("x y", real=True)
M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))

model = ds.SDEModel(
    state=[x, y],
    params=M,  # flattened row-wise: M11, M12, M21, M22
    drift=list(M * sp.Matrix([x, y])),
    diffusion=1,
    name="ou2d",
    nominal={"M11": -1.0, "M12": 0.5, "M21": -0.5, "M22": -1.0},
)
