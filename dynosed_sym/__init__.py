"""dynosed_sym — identify SDE parameters from unordered snapshot data.

Pipeline (one module per stage, data flowing one way)::

    model.py (declaration) → symbolic.py (derivation) → spec.py (kernel spec)
      → codegen/ (printed source in generated/) → compiled.py (loaded kernels)
      → assembly.py (A, b) → report.py + fit.py (solve and report)

``simulate.py`` draws snapshots with the generated integrator; ``reference.py``
is the NumPy oracle used by tests and benchmarks.
"""

from .compiled import CompiledModel, compile_model, default_output_dir
from .errors import CodegenError, DataError, DynosedError, ModelError, NotAffineError
from .fit import FitResult, fit_global
from .model import SDEModel, load_model
from .report import IdentifiabilityReport
from .identifiability import IdentifiabilityCheck, StructuralReport, check_identifiability, structural_check
from .uncertainty import BootstrapResult
from .simulate import simulate
from .data import from_anndata
from .local import fit_local, local_system
from .probes import Balls, choose_probes, restrict_to_balls
from .scores import KernelScore, ScoreEstimate, ScoreMatching, estimate_scores
from . import distributed
from .density import LearnedDensity, TrainingDivergedError, density_from_dynamics
from .spec import GENERATOR_VERSION, RELEASE

__version__ = RELEASE

__all__ = [
    "SDEModel", "load_model", "compile_model", "CompiledModel", "default_output_dir",
    "simulate", "fit_global", "FitResult", "IdentifiabilityReport",
    "DynosedError", "ModelError", "NotAffineError", "DataError", "CodegenError",
    "GENERATOR_VERSION", "__version__", "distributed",
    "check_identifiability", "structural_check", "IdentifiabilityCheck", "StructuralReport",
    "BootstrapResult",
    "fit_local", "local_system", "Balls", "choose_probes", "restrict_to_balls",
    "KernelScore", "ScoreMatching", "ScoreEstimate", "estimate_scores",
    "from_anndata",
    "density_from_dynamics", "LearnedDensity", "TrainingDivergedError",
]
