"""Exception hierarchy.

Every error the package raises on purpose is a :class:`DynosedError`.  Where a
built-in category fits, the subclass also derives from it (``ValueError`` for
bad values, ``TypeError`` for bad types) so generic ``except`` clauses work.
Messages always name the offending symbol, argument or column.  Every error class of the
package is defined here, and so is :class:`ConvergenceWarning`, the warning an iterative
solver gives when it stopped before its convergence criterion was met.
"""


class DynosedError(Exception):
    """Base class of all errors raised by dynosed_sym."""


class ModelError(DynosedError, ValueError):
    """An SDE model declaration is invalid (names the symbol or component)."""


class NotAffineError(ModelError):
    """The drift is not affine in the parameters.

    Attributes
    ----------
    param : sympy.Symbol
        A parameter that enters non-affinely.
    component : int
        Index of the drift component holding the offending term.
    term : sympy.Expr
        The additive term of that component that breaks affinity.
    """

    def __init__(self, message, param=None, component=None, term=None):
        super().__init__(message)
        self.param = param
        self.component = component
        self.term = term


class DataError(DynosedError, ValueError):
    """Input data or a numerical argument is unusable (names the argument)."""


class StationarityError(DataError):
    """Samples are not (or cannot be) stationary: a simulation diverged or is still far from its
    stationary law, or the parameters give no stationary law (names what diverged and what to
    do).  A :class:`DataError`, so ``except DataError`` still catches it."""


class CodegenError(DynosedError, RuntimeError):
    """Code generation or loading of generated kernels failed."""


class TrainingDivergedError(DynosedError, RuntimeError):
    """Density training became non-finite (names the step; lower the learning rate)."""


class DaskUnavailableError(DynosedError, ImportError):
    """The Dask backend was requested but dask / distributed is not installed."""


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped before its convergence criterion was met.

    The result it returned carries a flag saying so (``converged`` or a note in its summary);
    treat its numbers as provisional.
    """


class StationarityWarning(UserWarning):
    """Samples look only approximately stationary (a borderline moment or drift check): e.g. the
    chains were still relaxing at the end of the burn-in.  The message says what to change."""


class StepSizeWarning(UserWarning):
    """The simulation's time step is large against the drift's relaxation where the chains are,
    so the simulated stationary law is biased (by the amount the message states, with a step that
    would make it small)."""


#: Every error and warning class defined here, in the order defined (the package exports them).
__all__ = [
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and value.__module__ == __name__
]
