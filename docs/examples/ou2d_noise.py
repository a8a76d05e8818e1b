"""2-D Ornstein–Uhlenbeck process with all four entries of M free and a known, per-experiment
noise intensity s of the first coordinate: dx = M x dt + √(2D) dW with D = diag(s, 1).

One stationary snapshot leaves the rotation M12 − M21 free (rank 3 of 4); two environments
with different s identify all of M, because D = diag(s, 1) changes the *shape* of the
stationary covariance.  A scalar noise scale (D = s·I) would not: docs/designs.md.
"""

import sympy as sp

import dynosed_sym as ds

x, y, s = sp.symbols("x y s", real=True)
M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))

model = ds.SDEModel(
    state=[x, y],
    params=M,
    drift=list(M * sp.Matrix([x, y])),
    diffusion=[s, 1],
    inputs=[s],
    name="ou2d_noise",
    nominal={"M11": -1.0, "M12": 0.5, "M21": -0.5, "M22": -1.0},
)
