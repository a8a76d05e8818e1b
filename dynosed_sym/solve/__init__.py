"""Solve and report: from the per-block sums of a linear system to θ̂ and what the data say about it.

* :mod:`.linear` — the Tikhonov solve and H_λ⁻¹ (one SVD-based implementation);
* :mod:`.report` — rank against sampling noise, unresolved combinations, freeness, consistency
  (:class:`IdentifiabilityReport`);
* :mod:`.uncertainty` — sandwich covariance, confidence intervals, block bootstrap;
* :mod:`.misspecification` — the calibrated test "some θ satisfies the Fokker–Planck constraints";
* :mod:`.gradient` — the same losses for drifts that are not affine in θ (trust-region least
  squares with the compiled ∂f/∂θ);
* :mod:`.combinations` — parameter combinations written with the parameters' names.
"""

from .combinations import Combination
from .linear import hinv, solve_tikhonov
from .report import IdentifiabilityReport, analyse
from .uncertainty import BootstrapResult

__all__ = [
    "solve_tikhonov",
    "hinv",
    "analyse",
    "IdentifiabilityReport",
    "BootstrapResult",
    "Combination",
]
