"""2-D Ornstein–Uhlenbeck process with only M12 unknown (the other entries fixed):
the informative prior of the reference paper that restores identifiability."""

import sympy as sp

import dynosed_sym as ds

x, y = sp.symbols("x y", real=True)
M12 = sp.Symbol("M12", real=True)
M = sp.Matrix([[-1, M12], [-0.5, -1]])

model = ds.SDEModel(
    state=[x, y],
    params=[M12],
    drift=list(M * sp.Matrix([x, y])),
    diffusion=1,
    name="ou2d_m12",
    nominal={M12: 0.5},
)
