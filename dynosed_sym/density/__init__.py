"""Dynamics → density: a normalised stationary density learned from known dynamics, no data.

:func:`density_from_dynamics` trains a latent Gaussian mixture warped by a near-identity
affine-coupling flow (:mod:`.flow_mixture`) on the stationary Fokker–Planck residual
(:mod:`.train`); :mod:`.figures` draws the learned-vs-reference comparison (matplotlib, optional).
"""

from .flow_mixture import FlowMixtureSpec
from ..errors import TrainingDivergedError
from .train import LearnedDensity, density_from_dynamics, residual_loss

__all__ = ["density_from_dynamics", "LearnedDensity", "FlowMixtureSpec", "TrainingDivergedError",
           "residual_loss"]
