"""Dynamics → density: a normalised stationary density learned from known dynamics, no data.

:func:`density_from_dynamics` trains a latent Gaussian mixture warped by a radial tail map and a
near-identity affine-coupling flow (:mod:`.flow_mixture`) on the stationary Fokker–Planck residual
(:mod:`.optimize`), starting from a short simulation (:mod:`.init`), and checks the result
(:mod:`.diagnostics`).  What it learns and how is set by three option objects (:mod:`.options`):
:class:`Architecture`, :class:`Training` and :class:`Start`.  The demonstration figures and the
sweep over SDEs with known laws are applications (:mod:`dynosed_sym.apps.demo.density_figures`,
:mod:`dynosed_sym.apps.bench.density_sweep`).
"""

from ..errors import ConvergenceWarning, TrainingDivergedError
from .diagnostics import DensityDiagnostic
from .flow_mixture import FlowMixtureSpec
from .options import Architecture, Start, Training
from .result import LearnedDensity
from .train import density_from_dynamics, residual_loss

__all__ = [
    "density_from_dynamics",
    "Architecture",
    "Training",
    "Start",
    "LearnedDensity",
    "FlowMixtureSpec",
    "TrainingDivergedError",
    "ConvergenceWarning",
    "DensityDiagnostic",
    "residual_loss",
]
