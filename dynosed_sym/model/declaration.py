"""Model declaration: :class:`SDEModel` and :func:`load_model`.

A model is the SDE ``dx = f_θ(x) dt + G(x) dW`` with ``D(x) = ½ G Gᵀ`` known and
θ unknown.  This module only validates and normalises what the user wrote; all
derived quantities (affine split, divergences, Stein features) live in
:mod:`dynosed_sym.model.derivation`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import traceback
from functools import cached_property

import numpy as np
import sympy as sp

from ..arguments import float_array, labelled_values
from ..errors import ModelError
from .validation import (
    SUPPORTED_FUNCTIONS,
    check_constants,
    check_functions,
    check_real_arguments,
    continuous_symbols,
    declared_signs,
    diffusion_matrix,
    diffusion_range,
    diffusion_symbols,
    distinct_symbols,
    drift_symbols,
    env_param_list,
    expression,
    expression_array,
    parse_strings,
    values_by_name,
)

__all__ = [
    "SDEModel",
    "load_model",
    "require_model",
    "require_parameters",
    "SUPPORTED_FUNCTIONS",
]


def _as_symbol_list(items, what):
    """Flatten symbols / matrices of symbols / MatrixSymbols into a list.

    Returns ``(symbols, replacements)`` where ``replacements`` maps matrix
    elements (``W[1, 6]`` of a MatrixSymbol) onto plain symbols named ``W[1,6]``.
    """
    if isinstance(items, (sp.Symbol, sp.MatrixBase, sp.MatrixSymbol)):
        items = [items]
    out, repl = [], {}
    for item in items:
        if isinstance(item, sp.MatrixSymbol):
            for i in range(item.shape[0]):
                for j in range(item.shape[1]):
                    s = sp.Symbol(f"{item.name}[{i},{j}]", real=True)
                    repl[item[i, j]] = s
                    out.append(s)
        elif isinstance(item, sp.MatrixBase):
            for entry in item:  # row-major flattening
                if not isinstance(entry, sp.Symbol):
                    raise ModelError(f"{what}: matrix entry {entry!r} is not a SymPy Symbol")
                out.append(entry)
        elif isinstance(item, sp.Symbol):
            out.append(item)
        elif isinstance(item, str):
            raise ModelError(
                f"{what}: got the string {item!r}; declare it with sympy.Symbol({item!r}) "
                "and use the same object in the drift"
            )
        else:
            raise ModelError(f"{what}: {item!r} is not a SymPy Symbol or matrix of symbols")
    return out, repl


def _as_column(expr_list, what, state):
    d = len(state)
    if isinstance(expr_list, sp.MatrixBase):
        if 1 not in expr_list.shape:
            raise ModelError(f"{what}: expected a vector, got a {expr_list.shape} matrix")
        items = list(expr_list)
    elif isinstance(expr_list, (list, tuple)):
        items = list(expr_list)
    else:
        raise ModelError(
            f"{what}: expected a list or column matrix, got {type(expr_list).__name__}"
        )
    if len(items) != d:
        raise ModelError(f"{what} has {len(items)} components but the state has dimension {d}")
    if any(isinstance(e, (list, tuple)) and len(e) == 1 for e in items):  # [[f0], [f1]]
        items = [e[0] if isinstance(e, (list, tuple)) and len(e) == 1 else e for e in items]
    return sp.Matrix([expression(e, f"{what}[{j}] (d{state[j]})") for j, e in enumerate(items)])


def _noise_matrix(noise, d):
    """G of ``noise=``: a d×d' matrix, a length-d vector (one Brownian motion, d' = 1), or for
    d = 1 one number or expression (G = [[g]])."""
    entries = expression_array(noise, "noise")
    if entries.ndim == 0:
        if d != 1:
            raise ModelError(
                f"noise: got one value ({entries[()]}) for a state of dimension {d}; G is a "
                f"{d}×d' matrix (noise=g*sympy.eye({d}) for independent noise of strength g on "
                "every variable), or declare D itself with diffusion= (a number c means D = c·I)"
            )
        entries = entries.reshape(1, 1)
    G = sp.Matrix(
        entries.shape[0], entries.shape[1] if entries.ndim == 2 else 1, list(entries.flat)
    )
    if G.shape[0] != d:
        raise ModelError(f"noise: G has {G.shape[0]} rows but the state has dimension {d}")
    for i, j in np.ndindex(G.shape):
        check_constants(G[i, j], f"noise G[{i},{j}]")
    return G


class SDEModel:
    """A stochastic differential equation with unknown drift parameters.

    ``dx = f_θ(x) dt + G(x) dW`` with diffusion tensor ``D(x) = ½ G Gᵀ``.

    Parameters
    ----------
    state : sequence of sympy.Symbol, length d
        State variables, in the column order of data arrays.
    params : sequence of sympy.Symbol, sympy.Matrix or sympy.MatrixSymbol
        Unknown parameters θ.  Matrices are flattened row-wise; entries of a
        ``MatrixSymbol('W', 3, 7)`` become symbols named ``W[i,j]`` (0-based).
    drift : sequence of sympy.Expr or column Matrix, length d
        The drift f_θ(x).
    diffusion : number, expression, length-d sequence or d×d matrix, optional
        D itself: a scalar (isotropic ``D = c I``), a vector (diagonal), or a
        full symmetric matrix.  Entries may depend on the state, not on θ.
    noise : d×d' matrix, optional
        The noise matrix G instead of D; then ``D = ½ G Gᵀ``.  A length-d vector is one column
        (d' = 1); for d = 1 a number or expression g is ``G = [[g]]``.
    name : str, optional
        Identifier used for generated files (letters, digits, underscore).
    nominal : dict or sequence, optional
        Nominal parameter values (keyed by symbol or name, or in θ order).
    inputs : sequence of sympy.Symbol, optional
        Known inputs of an experiment (a dose, a noise level, a shifted forcing): symbols that may
        appear in the drift and in the diffusion, whose values are given per experiment
        (environment) and never fitted.  See :meth:`with_inputs` and the ``inputs=`` argument of
        the fits.
    env_params : sequence of sympy.Symbol or str, optional
        Parameters that take one unknown value per environment (e.g. an unknown knockdown
        strength); all other parameters are shared by every environment.

    Notes
    -----
    The drift and D must not depend on time: both snapshot routes use the time-homogeneous
    f(x; θ), and a snapshot that is not stationary is described by ∂ₜlog p (``dlogp_dt=`` of
    the fits), not by f(x, t).  A symbol named ``t``, ``time`` or ``tau`` is therefore reported
    as time dependence.  A constant D is checked positive semi-definite here; a state-dependent
    D where it is used (at samples, probes and start states,
    :func:`dynosed_sym.data.checks.diffusion_psd`).

    A model may have no unknown parameters (``params=[]``): it can then be simulated and its
    stationary density learned, and fitting it says there is nothing to fit.

    Attributes
    ----------
    state, params, inputs : tuple of sympy.Symbol
    env_params : tuple of sympy.Symbol
        A subset of ``params``.
    drift : sympy.Matrix, shape (d, 1)
    D : sympy.Matrix, shape (d, d)
    G : sympy.Matrix or None, shape (d, d')
    nominal : numpy.ndarray, shape (n,), or None
    """

    def __init__(
        self,
        state,
        params,
        drift,
        diffusion=None,
        *,
        noise=None,
        name=None,
        nominal=None,
        inputs=None,
        env_params=None,
    ):
        state_syms, state_repl = _as_symbol_list(state, "state")
        if state_repl:
            raise ModelError("state: MatrixSymbol states are not supported; list the symbols")
        param_syms, param_repl = _as_symbol_list([] if params is None else params, "params")
        input_syms, input_repl = _as_symbol_list([] if inputs is None else inputs, "inputs")
        if input_repl:
            raise ModelError("inputs: MatrixSymbol inputs are not supported; list the symbols")
        if not state_syms:
            raise ModelError("state: at least one state variable is required")
        distinct_symbols(state_syms, param_syms, input_syms)
        continuous_symbols(state_syms, param_syms, input_syms)

        self.state = tuple(state_syms)
        self.params = tuple(param_syms)
        self.inputs = tuple(input_syms)
        d = len(self.state)

        self._param_repl = param_repl  # MatrixSymbol elements W[i, j] -> symbols named W[i,j]
        names = {str(s): s for s in state_syms + param_syms + input_syms}
        drift = parse_strings(drift, names, "drift")
        diffusion = parse_strings(diffusion, names, "diffusion")
        noise = parse_strings(noise, names, "noise")
        f = _as_column(drift, "drift", self.state)
        if param_repl:
            f = f.xreplace(param_repl)
        declared = set(self.state) | set(self.params) | set(self.inputs)
        for j, fj in enumerate(f):
            where = f"drift[{j}] (d{self.state[j]})"
            check_functions(fj, where)
            check_real_arguments(fj, where, declared)
            drift_symbols(fj, where, declared, names, bool(self.inputs))
        self.drift = f

        if (diffusion is None) == (noise is None):
            raise ModelError(
                "give exactly one of diffusion= (the tensor D) or noise= (G, D = ½GGᵀ)"
            )
        if noise is not None:
            G = _noise_matrix(noise, d).xreplace(param_repl)
            self.G = G
            D = (G * G.T / 2).applyfunc(sp.expand)
        else:
            self.G = None
            D = self._diffusion_matrix(diffusion, d).xreplace(param_repl)
        param_set, known = set(self.params), set(self.state) | set(self.inputs)
        for i, j in np.ndindex(D.shape):
            Dij = D[i, j]
            if Dij.is_Number and Dij.is_finite:  # θ-free; its range is diffusion_range's
                continue
            where = f"diffusion D[{i},{j}]" + (" (½GGᵀ of noise=)" if noise is not None else "")
            check_functions(Dij, where)
            check_real_arguments(Dij, where, param_set | known)
            diffusion_symbols(Dij, where, param_set, known)
        diffusion_range(D, "noise" if noise is not None else "diffusion")
        factor = diffusion_matrix(D, d, "noise G" if noise is not None else "diffusion D", self.G)
        if factor is not None:
            self._noise_factor = factor  # reused by spec._noise_matrix
        self.D = D

        if name is None:
            name = "model"
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
            raise ModelError(f"name {name!r} must be a Python identifier (letters, digits, _)")
        self.name = str(name)
        self.nominal = None if nominal is None else self.theta_vector(nominal, "nominal")
        if self.nominal is not None:
            declared_signs(self.params, self.nominal, "nominal", "parameter", self.name)
            self.nominal.setflags(write=False)
        env = env_param_list(env_params, self.params, param_repl)
        self.env_params = tuple(sorted(env, key=self.params.index))
        self._frozen = True

    # A model is a value: its spec hash and derivation are cached on it, so it must not change
    # after construction (build a new SDEModel instead).
    _MUTABLE_AFTER_INIT = ("source_path",)

    def __setattr__(self, name, value):
        if (
            self.__dict__.get("_frozen")
            and not name.startswith("_")
            and name not in self._MUTABLE_AFTER_INIT
        ):
            raise ModelError(
                f"SDEModel is immutable: cannot set {name!r}; build a new model instead"
            )
        object.__setattr__(self, name, value)

    def __getstate__(self):
        # caches are recomputed where the model is unpickled (e.g. on a Dask worker whose
        # generator version may differ)
        state = dict(self.__dict__)
        state.pop("_spec_hash", None)
        state.pop("derivation", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _diffusion_matrix(diffusion, d):
        entries = expression_array(diffusion, "diffusion")
        if entries.ndim == 0:  # a number or an expression c: D = c·I
            return sp.eye(d) * entries[()]
        if entries.ndim == 2:
            if entries.shape == (d, d):
                return sp.Matrix(entries.tolist())
            if 1 not in entries.shape or entries.size != d:
                raise ModelError(
                    f"diffusion: expected a scalar, {d} diagonal entries or a {d}×{d} "
                    f"matrix, got shape {entries.shape}"
                )
        if entries.size != d:
            raise ModelError(
                f"diffusion: {entries.size} diagonal entries for a state of dimension {d}"
            )
        return sp.diag(*entries.flat)

    @property
    def d(self) -> int:
        """State dimension."""
        return len(self.state)

    @property
    def n(self) -> int:
        """Number of parameters."""
        return len(self.params)

    @property
    def state_names(self) -> list[str]:
        return [str(s) for s in self.state]

    @property
    def param_names(self) -> list[str]:
        """The parameters' names (a new list each call; the names are printed once: a
        400-parameter network's report reads them a dozen times, 10 ms of SymPy printing)."""
        names = self.__dict__.get("_param_names")
        if names is None:
            names = tuple(str(s) for s in self.params)
            self._param_names = names  # (a private cache: allowed on the frozen model)
        return list(names)

    @property
    def input_names(self) -> list[str]:
        return [str(s) for s in self.inputs]

    def input_vector(self, values, what="inputs") -> np.ndarray:
        """Convert input values (a dict keyed by symbol or name, or an array in ``model.inputs``
        order) into shape (k,); every input needs a finite value."""
        values = labelled_values(values)  # a pandas Series by its labels, not by position
        if isinstance(values, dict):
            keyed = {str(key): val for key, val in values.items()}
            out = values_by_name(keyed, self.input_names, what, ("an input", "none"), self.name)
        else:
            values = [] if values is None else values
            out = float_array(values, what, entries=self.input_names, error=ModelError)
            out = out.reshape(-1)
            if out.shape != (len(self.inputs),):
                raise ModelError(
                    f"{what}: expected {len(self.inputs)} value(s) (one per input: "
                    f"{', '.join(self.input_names) or 'none'}), got {out.size}"
                )
        if not np.all(np.isfinite(out)):
            bad = self.input_names[int(np.flatnonzero(~np.isfinite(out))[0])]
            raise ModelError(f"{what}: value of {bad!r} is not finite")
        declared_signs(self.inputs, out, what, "input", self.name)
        return out

    def with_inputs(self, values, name=None) -> SDEModel:
        """The model of one experiment: every input replaced by its value (a new SDEModel
        without inputs, same parameters, nominal values and ``env_params``).

        Its kernels are this model's, with the values as their runtime argument: compiling it
        (:func:`dynosed_sym.compile_model`) generates and compiles nothing new.

        Parameters
        ----------
        values : dict or array
            One value per input (see :meth:`input_vector`).
        name : str, optional
            Default: this model's name, so that messages about the model of an experiment name
            the model the user declared (a generated ``{name}_u{digest of the values}``, e.g.
            ``'ou_in_u3f710ac0'``, showed in the design check's errors).  The name names no
            file: the kernels are this model's, and the input values are their argument.
        """
        u = self.input_vector(values)
        if name is None:
            name = self.name
        sub = {s: sp.Float(float(v), 17) for s, v in zip(self.inputs, u)}
        kw = dict(name=name, nominal=self.nominal, env_params=self.env_params)
        try:
            if self.G is not None:
                noise = self.G.xreplace(sub)
                out = SDEModel(self.state, self.params, self.drift.xreplace(sub), noise=noise, **kw)
            else:
                D = self.D.xreplace(sub)
                out = SDEModel(self.state, self.params, self.drift.xreplace(sub), D, **kw)
        except ModelError as err:  # e.g. a D that is not positive semi-definite at these values
            values = ", ".join(f"{s} = {float(v):g}" for s, v in zip(self.inputs, u))
            raise ModelError(f"model {self.name!r} at inputs {values}: {err}") from None
        out._input_origin = (self, u)  # compile_model runs this model's kernels at u
        return out

    def theta_vector(self, theta, what="theta") -> np.ndarray:
        """Convert an array (θ order) or a dict keyed by symbol/name into shape (n,).

        For a model without parameters, None (or an empty array or dict) gives shape (0,).
        """
        if theta is None and self.n == 0:
            return np.zeros(0)
        if theta is None:
            raise ModelError(
                f"{what}: None; give the {self.n} parameter values of model {self.name!r} "
                f"({', '.join(self.param_names)}) as an array or a dict by name"
            )
        theta = labelled_values(theta)  # a pandas Series by its labels, not by position
        if isinstance(theta, dict):
            keyed = {str(self._param_repl.get(k, k)): val for k, val in theta.items()}
            out = values_by_name(keyed, self.param_names, what, ("a parameter", ""), self.name)
        else:
            out = float_array(theta, what, entries=self.param_names, error=ModelError)
            out = out.reshape(-1)
            if out.shape != (self.n,):
                raise ModelError(
                    f"{what}: expected {self.n} values (one per parameter), got {out.size}"
                )
        if not np.all(np.isfinite(out)):
            bad = self.param_names[int(np.flatnonzero(~np.isfinite(out))[0])]
            raise ModelError(f"{what}: value of {bad!r} is not finite")
        return out

    # -------------------------------------------------------- derived symbolics
    @cached_property
    def derivation(self):
        """The symbolic derivation (:class:`dynosed_sym.model.derivation.Derivation`)."""
        from .derivation import derive

        return derive(self)

    @property
    def U(self) -> sp.Matrix:
        """∂f/∂θ, shape (d, n). Raises NotAffineError for a non-affine drift."""
        return self.derivation.require_affine().U

    @property
    def v(self) -> sp.Matrix:
        """f at θ = 0, shape (d, 1). Raises NotAffineError for a non-affine drift."""
        return self.derivation.require_affine().v

    @property
    def is_affine(self) -> bool:
        return self.derivation.is_affine

    @property
    def diffusion_is_constant(self) -> bool:
        """D has no free symbol at all (neither state nor input)."""
        return not any(e.free_symbols for e in self.D)

    @property
    def diffusion_depends_on_state(self) -> bool:
        """D changes with the state (an input-dependent D is constant within one experiment)."""
        return any(e.free_symbols & set(self.state) for e in self.D)

    def equations(self) -> str:
        """The declared SDE in readable form: one line per state variable, then D and θ.

        ::

            dx = sigma*(-x + y) dt + √(2D) dW_x
            dy = x*(rho - z) - y dt + √(2D) dW_y
            dz = -beta*z + x*y dt + √(2D) dW_z
            D = 3/10 · I (3×3)
            parameters (3): sigma = 10, rho = 28, beta = 2.667   [nominal]

        With ``noise=G`` the noise term reads ``Σ_k G[i,k] dW_k`` and D = ½GGᵀ is not repeated.
        """
        names = self.state_names
        w = max(len(n) for n in names)
        noise_terms = []
        if self.G is not None:
            for i in range(self.d):
                terms = [
                    f"({sp.sstr(g)})·dW{k + 1}" if g.is_Add else f"{sp.sstr(g)}·dW{k + 1}"
                    for k, g in enumerate(self.G.row(i))
                    if g != 0
                ]
                noise_terms.append(" + ".join(terms) if terms else "0")
        else:
            noise_terms = ["√(2D) dW" if self.d == 1 else f"[√(2D) dW]_{n}" for n in names]
            if self.D.is_diagonal():
                noise_terms = [
                    f"√({sp.sstr(2 * self.D[i, i])}) dW_{n}" if self.D[i, i] != 0 else "0"
                    for i, n in enumerate(names)
                ]
        lines = []
        for j, n in enumerate(names):
            f = sp.sstr(self.drift[j])
            f = f"({f})" if self.drift[j].is_Add else f
            lines.append(f"d{n:<{w}} = {f} dt + {noise_terms[j]}")
        if self.G is not None:
            lines.append(f"G: {self.G.shape[0]}×{self.G.shape[1]}, D = ½GGᵀ")
        elif self.D.is_diagonal() and len(set(self.D.diagonal())) == 1:
            c = self.D[0, 0]
            lines.append(
                f"D = {f'({sp.sstr(c)})' if c.is_Add else sp.sstr(c)} · I ({self.d}×{self.d})"
            )
        elif self.D.is_diagonal():
            lines.append("D = diag(" + ", ".join(sp.sstr(e) for e in self.D.diagonal()) + ")")
        else:
            lines.append(f"D = {sp.sstr(self.D.tolist())}")
        if self.nominal is not None:
            vals = ", ".join(f"{p} = {v:.4g}" for p, v in zip(self.param_names, self.nominal))
            lines.append(f"parameters ({self.n}): {vals}   [nominal]")
        else:
            lines.append(f"parameters ({self.n}): " + (", ".join(self.param_names) or "none"))
        if self.env_params:
            lines.append("one value per environment: " + ", ".join(map(str, self.env_params)))
        if self.inputs:
            lines.append(
                f"inputs ({len(self.inputs)}, known per experiment): " + ", ".join(self.input_names)
            )
        return "\n".join(lines)

    def __repr__(self):
        return (
            f"SDEModel(name={self.name!r}, state=[{', '.join(self.state_names)}], "
            f"params=[{', '.join(self.param_names[:8])}{', ...' if self.n > 8 else ''}], "
            f"d={self.d}, n={self.n})"
        )

    def __str__(self):
        return (
            f"SDE model {self.name!r} (d = {self.d} state variables, n = {self.n} parameters)\n"
            + self.equations()
        )


def require_model(model, what):
    """ModelError unless ``model`` is an SDEModel (``what``: the function it was given to)."""
    if not isinstance(model, SDEModel):
        shown = f" {model!r}" if isinstance(model, (str, os.PathLike)) else ""
        raise ModelError(
            f"{what}: expected an SDEModel (ds.load_model(path) reads a model file), got "
            f"{type(model).__name__}{shown}"
        )


def require_parameters(model):
    """ModelError when ``model`` has no unknown parameter: there is nothing to fit or identify."""
    if not isinstance(model, SDEModel):
        raise ModelError(f"model: expected an SDEModel, got {type(model).__name__}")
    if model.n == 0:
        raise ModelError(
            f"model {model.name!r} has no unknown parameters: there is nothing to fit or identify "
            "(ds.simulate draws its snapshots, ds.density_from_dynamics learns its stationary "
            "density)"
        )


def _file_line(path, exc):
    """ "model file 'path', line n": the last line of ``path`` in the traceback of ``exc``."""
    lines = [
        fr.f_lineno
        for fr, _ in traceback.walk_tb(exc.__traceback__)
        if os.path.abspath(fr.f_code.co_filename) == os.path.abspath(path)
    ]
    return f"model file {path!r}" + (f", line {lines[-1]}" if lines else "")


def load_model(path) -> SDEModel:
    """Import a model file and return its module-level ``model``.

    Parameters
    ----------
    path : str or os.PathLike
        A Python file that builds an :class:`SDEModel` named ``model``
        (optionally with ``nominal`` values given to the constructor).
    """
    if isinstance(path, SDEModel):
        raise ModelError("load_model: got an SDEModel, not a path; use the model itself")
    if not isinstance(path, (str, os.PathLike)):
        raise ModelError(
            "load_model: expected the path of a model file (str or os.PathLike), got "
            f"{type(path).__name__} {path!r}"
        )
    path = os.path.expanduser(os.fspath(path))  # "~/m.py", as out_dir= and the shell read it
    if os.path.isdir(path) and not os.path.isfile(path + ".py"):
        raise ModelError(f"model file {path!r} is a folder; give the model's .py file in it")
    if not os.path.isfile(path):
        hint = f"; did you mean {path + '.py'!r}?" if os.path.isfile(path + ".py") else ""
        raise ModelError(f"model file {path!r} does not exist{hint}")
    mod_name = "dynosed_user_model_" + re.sub(
        r"\W", "_", os.path.splitext(os.path.basename(path))[0]
    )
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None:  # importlib only loads files with a Python suffix
        raise ModelError(
            f"model file {path!r} is not a Python file (a .py file that builds an "
            "SDEModel named 'model')"
        )
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModelError as exc:  # a declaration the file makes: name the file and its line
        raise ModelError(f"{_file_line(path, exc)}: {exc}") from exc
    except SystemExit as exc:  # sys.exit(), or argparse reading dynosed's own argv, at top level
        raise ModelError(
            f"{_file_line(path, exc)} called sys.exit({exc.code!r}) while it was loaded: a model "
            "file is imported, not run as a script (it ended the calling program); put its "
            "script part (argument parsing, sys.exit) under "
            "'if __name__ == \"__main__\":'"
        ) from None
    except Exception as exc:  # user code: report the file, keep the cause
        raise ModelError(f"model file {path!r} failed to run: {type(exc).__name__}: {exc}") from exc
    model = getattr(module, "model", None)
    if not isinstance(model, SDEModel):
        raise ModelError(
            f"model file {path!r} must define an SDEModel named 'model'{_found(module)}"
        )
    model.source_path = os.path.abspath(path)
    return model


def _found(module):
    """What a model file defines instead of ``model``: its 'model' that is not an SDEModel, or
    the SDEModels it names otherwise (the message said only what was expected)."""
    found = getattr(module, "model", None)
    if callable(found):  # (a function that builds the model)
        return "; its 'model' is a function: end the file with model = model() to load its result"
    if found is not None:
        return f"; its 'model' is {type(found).__name__} {found!r:.60}"
    names = [k for k, v in vars(module).items() if isinstance(v, SDEModel) and k[:1] != "_"]
    if not names:
        return ""
    shown = ", ".join(f"{k} (model {vars(module)[k].name!r})" for k in names)
    return f"; it defines the SDEModel(s) {shown}: name the one to load model (model = {names[0]})"
