"""dynosed_sym — identify SDE parameters from unordered snapshot data.

The package is a symbolic model compiler.  Its folders are the stages of one pipeline, data
flowing one way (a lower layer never imports a higher one; ``tests/test_layers.py`` checks it):

=====================  ==========================================================================
``model/``             declaration (:class:`SDEModel`) → derivation (SymPy: affine split,
                       divergences, Stein pieces, local rows)
``codegen/``           kernel spec → printed source in ``generated/`` → loaded Numba kernels
``kernels/``           shared Numba helpers (polynomial sin/cos, the fill, the kernel sums)
``data/``              sources that yield checked chunks → noise blocks
``assembly/``          chunks → per-block sums of the linear system A θ ≈ b
``backends/``          the fill and the simulator on Dask workers
``simulation/``        snapshots from the generated integrator
``solve/``             θ̂ (linear or gradient) → report, uncertainty, misspecification
``routes/``            :func:`fit_global`, :func:`fit_local` (probes, scores) → :class:`FitResult`
``identifiability/``   before data: the exact structural check and the simulation check
``density/``           dynamics → density (:func:`density_from_dynamics`)
``apps/``              command line, demo, benchmarks, figures (not imported by the library)
=====================  ==========================================================================

Every entry point follows one signature rule, ``f(model, data…, *, options…)``, and shares the
execution options of :mod:`dynosed_sym.options`.  ``reference`` is the slow NumPy oracle of every
kernel, used by the tests and the benchmarks.
"""

from importlib import metadata as _metadata

from .codegen import CompiledModel, compile_model
from .data import TimeCourse, from_anndata, split_by
from .density import LearnedDensity, density_from_dynamics
from .errors import (
    CodegenError,
    ConvergenceWarning,
    DaskUnavailableError,
    DataError,
    DynosedError,
    ModelError,
    NotAffineError,
    StationarityError,
    StationarityWarning,
    StepSizeWarning,
    TrainingDivergedError,
)
from .identifiability import (
    DesignCheck,
    Experiment,
    IdentifiabilityCheck,
    StructuralReport,
    Study,
    check_identifiability,
    structural_check,
)
from .model import SDEModel, ShiftDesign, load_model, shift_interventions
from .options import Execution
from .routes import Balls, FitResult, choose_probes, fit_global, fit_local
from .routes.options import Features, Scores, Solver
from .routes.scores import KernelScore, ScoreEstimate, ScoreMatching, estimate_scores
from .simulation import Simulation, check_stationarity, simulate
from .solve import BootstrapResult, Combination, IdentifiabilityReport

try:
    __version__ = _metadata.version("dynosed_sym")
except _metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    # declare
    "SDEModel",
    "load_model",
    "shift_interventions",
    "ShiftDesign",
    # compile
    "compile_model",
    "CompiledModel",
    # simulate
    "simulate",
    "Simulation",
    "check_stationarity",
    # fit
    "fit_global",
    "fit_local",
    "FitResult",
    "Features",
    "Scores",
    "Solver",
    "Execution",
    "choose_probes",
    "Balls",
    "estimate_scores",
    "KernelScore",
    "ScoreMatching",
    "ScoreEstimate",
    "from_anndata",
    "TimeCourse",
    "split_by",
    # diagnose
    "check_identifiability",
    "structural_check",
    "IdentifiabilityCheck",
    "DesignCheck",
    "Study",
    "Experiment",
    "StructuralReport",
    "IdentifiabilityReport",
    "BootstrapResult",
    # results
    "Combination",
    # density
    "density_from_dynamics",
    "LearnedDensity",
    # errors and warnings
    "DynosedError",
    "ModelError",
    "NotAffineError",
    "DataError",
    "StationarityError",
    "CodegenError",
    "TrainingDivergedError",
    "DaskUnavailableError",
    "ConvergenceWarning",
    "StationarityWarning",
    "StepSizeWarning",
    "__version__",
]
