"""Dynamics → density: a normalised stationary density learned from known dynamics, no data.

:func:`density_from_dynamics` trains a latent Gaussian mixture warped by a radial tail map and a
near-identity affine-coupling flow (:mod:`.flow_mixture`) on the stationary Fokker–Planck residual
(:mod:`.train`), starting from a short simulation (:mod:`.init`), and checks the result
(:mod:`.diagnostics`); :mod:`.figures` draws the learned-vs-reference comparison (matplotlib,
optional).
"""

from ..errors import ConvergenceWarning, TrainingDivergedError
from .diagnostics import DensityDiagnostic
from .flow_mixture import FlowMixtureSpec
from .train import LearnedDensity, density_from_dynamics, residual_loss

__all__ = [
    "density_from_dynamics",
    "LearnedDensity",
    "FlowMixtureSpec",
    "TrainingDivergedError",
    "ConvergenceWarning",
    "DensityDiagnostic",
    "residual_loss",
]
