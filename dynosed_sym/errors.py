"""Exception hierarchy.

Every error the package raises on purpose is a :class:`DynosedError`.  Where a
built-in category fits, the subclass also derives from it (``ValueError`` for
bad values, ``TypeError`` for bad types) so generic ``except`` clauses work.
Messages always name the offending symbol, argument or column.
"""

__all__ = [
    "DynosedError",
    "ModelError",
    "NotAffineError",
    "DataError",
    "CodegenError",
]


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


class CodegenError(DynosedError, RuntimeError):
    """Code generation or loading of generated kernels failed."""
