"""The known-dynamics side of the residual: f, ∇·f, D, ∇·D and ∇·∇·D at collocation points.

With the model's score s and its Jacobian ∇s, the stationary residual of docs/method.md §2,

    R = sᵀ(f − ∇·D − D s) + ∇·(f − ∇·D − D s),

expands (D symmetric) into R = sᵀc − sᵀ D s − ⟨D, ∇s⟩ + e with

    c(x) = f − 2 ∇·D,      e(x) = ∇·f − ∇·∇·D,

which depend on x only.  f comes from the model's generated ``drift`` kernel
(:func:`dynosed_sym.compile_model`); ∇·f, D, ∇·D and ∇·∇·D are derived here with SymPy from the
declaration and printed (one joint CSE, the package's :class:`SlotPrinter`) into a small Numba
kernel built in memory, so nothing is written next to the model's generated module.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..codegen.loading import check_finite_output, compile_model
from ..codegen.printer import SlotPrinter, cse_block

__all__ = ["DynamicsTerms", "dynamics_terms"]

_KERNELS: dict = {}


def _kernel_source(model):
    """Source of ``terms(X, theta, out_divf, out_D, out_divD, out_divdivD)`` for ``model``."""
    d, state, params = model.d, model.state, model.params
    f, D = model.drift, model.D
    div_f = sp.Add(*[sp.diff(f[j], state[j]) for j in range(d)])
    div_D = [sp.Add(*[sp.diff(D[i, j], state[j]) for j in range(d)]) for i in range(d)]
    div_div_D = sp.Add(*[sp.diff(div_D[i], state[i]) for i in range(d)])
    slots = {s: f"X[n, {i}]" for i, s in enumerate(state)}
    slots.update({p: f"theta[{k}]" for k, p in enumerate(params)})
    outputs = [("out_divf[n]", div_f)]
    outputs += [(f"out_D[n, {i}, {j}]", D[i, j]) for i in range(d) for j in range(d)]
    outputs += [(f"out_divD[n, {i}]", div_D[i]) for i in range(d)]
    outputs += [("out_divdivD[n]", div_div_D)]
    lines, _ = cse_block(outputs, SlotPrinter(slots), indent=" " * 8)
    return "\n".join(
        [
            "import math",
            "import numba",
            "",
            "@numba.njit(parallel=False, cache=False, fastmath=False, error_model='numpy',"
            " boundscheck=False)",
            "def terms(X, theta, out_divf, out_D, out_divD, out_divdivD):",
            "    for n in range(X.shape[0]):",
            *lines,
            "",
        ]
    )


def _terms_kernel(model):
    from ..codegen.spec import spec_hash

    key = spec_hash(model)
    if key not in _KERNELS:
        namespace: dict = {}
        exec(
            compile(_kernel_source(model), f"<dynosed density terms {model.name}>", "exec"),
            namespace,
        )
        _KERNELS[key] = namespace["terms"]
    return _KERNELS[key]


class DynamicsTerms:
    """Evaluates the x-only pieces c, e and D of the residual for one model and θ.

    Parameters
    ----------
    model : SDEModel
    theta : numpy.ndarray (n,)
    out_dir : str, optional
        Folder of the model's generated module (see :func:`dynosed_sym.compile_model`).
    """

    def __init__(self, model, theta, out_dir=None):
        self.model = model
        self.theta = np.ascontiguousarray(theta, dtype=float)
        self.compiled = compile_model(model, out_dir)
        self.kernel = _terms_kernel(model)

    def __call__(self, X):
        """→ c (N, d), e (N,), D (N, d, d) at the rows of X (N, d)."""
        X = np.ascontiguousarray(X, dtype=float)
        N, d = X.shape
        f = self.compiled.drift(X, self.theta)
        divf, D = np.empty(N), np.empty((N, d, d))
        divD, divdivD = np.empty((N, d)), np.empty(N)
        self.kernel(X, self.theta, divf, D, divD, divdivD)
        c = f - 2.0 * divD
        e = divf - divdivD
        for arr, what in ((c, "drift f − 2∇·D"), (e, "∇·f − ∇·∇·D"), (D, "diffusion D")):
            check_finite_output(arr, what, X)
        return c, e, D


def dynamics_terms(model, theta, out_dir=None) -> DynamicsTerms:
    """Shorthand for :class:`DynamicsTerms`."""
    return DynamicsTerms(model, theta, out_dir)
