"""Declaration and derivation: the first two stages of the pipeline.

* :mod:`.declaration` — :class:`SDEModel` (state, parameters, drift, diffusion; validated and
  immutable) and :func:`load_model` (a model file);
* :mod:`.derivation` — everything the kernels need, derived exactly with SymPy: the affine split
  ``f = Uθ + v``, divergences, the Stein-feature pieces of the global route, the rows and the
  residual of the local route;
* :mod:`.interventions` — :func:`shift_interventions`: a model plus the inputs of a design whose
  environments shift the drift of known target variables (an observational reference pinned to
  no shift).
"""

from .declaration import SUPPORTED_FUNCTIONS, SDEModel, load_model
from .derivation import Derivation, derive
from .interventions import ShiftDesign, shift_interventions

__all__ = [
    "SDEModel",
    "load_model",
    "shift_interventions",
    "ShiftDesign",
    "SUPPORTED_FUNCTIONS",
    "Derivation",
    "derive",
]
