"""``python -m dynosed_sym.apps.demo`` — the package's main job on the bundled models.

1. Lorenz, global route: mean ± sd of (σ, ρ, β) over 20 independent draws at N = 300 and 5000.
2. 2-D Ornstein–Uhlenbeck from exact Gaussian samples: all four entries of M free (rank 3
   of 4, the free combination named) versus only M12 free (identified).
3. Noisy limit cycle: the rotation frequency is not identifiable from snapshots.
4. B-cell gene-regulatory network, the reference paper's protocol: recovered 3×7 matrix
   beside the truth and the normalised freeness matrix.
5. Identifiability before any data: the exact structural check of every bundled model (and of
   a model with two parameters on one basis function), the simulation check of the OU model,
   the GRN's pre-data freeness ordering against the post-data one, and the calibration of the
   standard errors and of the misspecification p-value.
6. Figures (``--figures DIR``, default ``demo_output/``): the Lorenz local/global figure, the GRN's
   true and inferred matrices, steady-state clouds and freeness, and the OU ill-posedness figure
   with the singular-value spectra (the copies in ``docs/images/`` come from
   ``python -m dynosed_sym.apps.demo --figures-only --figures docs/images``).
7. Local route: the 2-D OU with exact and with estimated scores (score matching in balls, the
   kernel estimator's bias–variance table over the temperature T), state-dependent diffusion
   and a non-stationary snapshot (both routes), and the reference paper's Lorenz experiment:
   ten balls on the attractor, a sweep of T (including T* = |λ_min|/D ≈ 49), dense and sparse balls.
8. Designs beyond one snapshot (:mod:`.designs_example`): a gene network with knockdown
   environments — what the wild type leaves free, the design advice before data, the fits with
   a knockdown of gene 2 (resolved) and gene 1 (weak), an unknown knockdown strength
   (``env_params``); figure ``designs_grn_knockdown.png``.
"""

from .figures import FIGURES, make_figures
from .run import main

__all__ = ["main", "make_figures", "FIGURES"]
