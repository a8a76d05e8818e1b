"""Assembly: from checked chunks of samples to the per-block sums of a linear system A θ ≈ b.

* :mod:`.features` — the random Fourier features of the global route and the median bandwidth;
* :mod:`.stein` — the global route: the model's generated ``stein_features`` factors contracted
  with sin/cos of the features (:mod:`dynosed_sym.kernels.stein_fill`) into per-noise-block
  sums, then into A, b and their per-block means;
* :mod:`.local` — the local route's rows ``a(x)ᵀθ = β(x)`` at probes, from the generated
  ``local_rows`` kernel.

The solve and the report (:mod:`dynosed_sym.solve`) read only what this stage returns.
"""

from .features import RandomFeatures, draw_features, median_lengthscale
from .stein import BlockSystem, assemble_array, assemble_source

__all__ = [
    "RandomFeatures",
    "draw_features",
    "median_lengthscale",
    "BlockSystem",
    "assemble_array",
    "assemble_source",
]
