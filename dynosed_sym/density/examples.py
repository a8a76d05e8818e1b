"""The two planar SDEs of the dynamics → density demonstration.

* :func:`hopf_oscillator` — a noisy oscillator with a stable limit cycle and a closed-form
  stationary law: a radial potential plus a rotation,

      U(r) = r²/2 + β exp(−r²/(2ℓ²)),   f = −D ∇U + ω (−y, x),   D = const · I,

  whose stationary density is p ∝ exp(−U) for every ω (the rotation is divergence free and
  tangent to the level sets of U).  For β > ℓ² the origin is repelling and the deterministic
  flow has the stable limit cycle r* = ℓ √(2 ln(β/ℓ²)).  The tails are Gaussian.
* :func:`swirl_bistable` — a bistable drift with a non-conservative coupling
  (∂f₁/∂y ≠ ∂f₂/∂x), whose stationary law is not of gradient form and not known in closed form;
  it is compared against a long simulation.

Why not the Stuart–Landau oscillator of ``models/limit_cycle.py`` for the closed-form check: its
density exp((a r²/2 − c r⁴/4)/D) has quartic tails, which neither a Gaussian mixture nor an
affine-coupling flow (affine far out) can follow, and its cubic drift amplifies that tail misfit
in the residual; the learned density then stays visibly off (total variation 0.08–0.33 depending
on D in our runs, see the README).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..model import SDEModel

__all__ = ["hopf_oscillator", "hopf_log_density", "swirl_bistable"]


def hopf_oscillator(D=0.5, beta=2.0, ell=0.7, omega=2.0):
    """The limit-cycle oscillator with closed-form stationary law.

    Parameters
    ----------
    D : float
        Isotropic diffusion coefficient.
    beta, ell : float
        Height and width of the central bump of the potential (ring when beta > ell²).
    omega : float
        Rotation frequency (does not change the stationary law).

    Returns
    -------
    model : SDEModel
        Parameters (beta, omega); ``nominal`` holds the given values.
    theta : numpy.ndarray (2,)
    """
    x, y = sp.symbols("x y", real=True)
    b, w = sp.symbols("beta omega", real=True)
    ell_ = sp.nsimplify(ell)
    D_ = sp.nsimplify(D)
    radial = D_ * (b / ell_**2 * sp.exp(-(x**2 + y**2) / (2 * ell_**2)) - 1)
    model = SDEModel(state=[x, y], params=[b, w], drift=[radial * x - w * y, radial * y + w * x],
                     diffusion=D_, name="hopf_ring", nominal={b: beta, w: omega})
    return model, np.array([beta, omega], dtype=float)


def hopf_log_density(P, beta=2.0, ell=0.7):
    """Unnormalised exact log density −U of :func:`hopf_oscillator` at the rows of P (M, 2)."""
    r2 = np.sum(np.asarray(P, dtype=float) ** 2, axis=1)
    return -r2 / 2.0 - beta * np.exp(-r2 / (2.0 * ell**2))


def swirl_bistable(D=0.4):
    """Bistable drift with a non-conservative coupling; stationary law not of gradient form.

        dx = (−x + 2 tanh(2x) − k y) dt + √(2D) dW₁
        dy = (−y + g tanh(x)) dt         + √(2D) dW₂

    Returns
    -------
    model : SDEModel
        Parameters (k, g), nominal k = 0.8, g = 1.5.
    theta : numpy.ndarray (2,)
    """
    x, y = sp.symbols("x y", real=True)
    k, g = sp.symbols("k g", real=True)
    model = SDEModel(state=[x, y], params=[k, g],
                     drift=[-x + 2 * sp.tanh(2 * x) - k * y, -y + g * sp.tanh(x)],
                     diffusion=sp.nsimplify(D), name="swirl_bistable", nominal={k: 0.8, g: 1.5})
    return model, np.array([0.8, 1.5])
