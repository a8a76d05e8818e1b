"""Loaded kernels: emit (if needed), import by path, wrap with checks.

``compile_model`` is cheap for an unchanged model: the spec hash is computed
from the declaration, the generated file is found by that hash, checked by its content hash
and trusted by its record in the per-user trust folder (:mod:`.trust`), and Numba loads the
compiled machine code from its on-disk cache, each file verified by its HMAC trailer.  No
symbolic derivation and no recompilation happen on this path (the first use of a file this
user has not seen regenerates it once to compare).
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import sys
import threading
import tokenize
import warnings

import numpy as np
import sympy as sp

from ..errors import CodegenError, DataError, ModelError
from ..kernels.threads import map_ordered
from ..model.declaration import require_model
from ..options import out_dir_path
from ..progress import note_first_compile
from . import trust
from .files import (
    content_hash_of,
    default_output_dir,
    module_filename,
    split_banner,
    user_cache_dir,
    write_if_changed,
)
from .render import render_module
from .spec import GENERATOR_VERSION, _noise_matrix, build_spec, constant_noise, spec_hash

__all__ = ["CompiledModel", "compile_model", "check_finite_output"]

_LOADED: dict = {}
_LOCK = threading.Lock()


def _valid_file(path, expected_hash):
    """The text of ``path`` when it is an intact generated file for ``expected_hash``, else None.

    Intact: its banner's content hash matches its body and it names this spec hash and generator
    version.  That catches truncation and careless edits, not a planted file (whoever edits the
    body can recompute the hash): trust is :func:`_trusted_text`'s.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return None
    recorded, body = split_banner(text)
    intact = (
        recorded is not None
        and recorded == content_hash_of(body)
        and f"SPEC_HASH = {expected_hash!r}" in body
        and f"GENERATOR_VERSION = {GENERATOR_VERSION!r}" in body
    )
    return text if intact else None


def _trusted_text(model, path, expected_hash):
    """(text, problem): the text of ``path`` when it is what ``model`` generates, else None and
    what is wrong with the file (None when there is no file).

    An intact file is trusted when the trust folder holds a record of its text
    (:mod:`.trust`); otherwise it is regenerated and compared once, and recorded when equal.
    """
    text = _valid_file(path, expected_hash)
    if text is None:
        return None, ("was modified or truncated" if os.path.exists(path) else None)
    data = text.encode("utf-8")
    if trust.module_is_trusted(data):
        return text, None
    if render_module(build_spec(model)) == text:
        trust.trust_module(data)
        return text, None
    return None, (
        "is not what this declaration generates (edited, or planted by someone who can "
        "write to its folder)"
    )


def _numba_cache_files(module):
    """Numba's on-disk cache files (index ``.nbi``, data ``.nbc``) of a loaded generated module.

    Found through each kernel's own cache locator, as Numba finds them: ``__pycache__`` beside
    the module, or the per-user / ``NUMBA_CACHE_DIR`` folder Numba uses when that one cannot
    be written.  Only kernels defined in the module are looked at.
    """
    files = []
    for obj in vars(module).values():
        try:
            cache_file = obj._cache._cache_file
            folder, index = cache_file._cache_path, cache_file._index_path
        except AttributeError:
            continue
        if getattr(getattr(obj, "py_func", None), "__module__", None) != module.__name__:
            continue
        index_name = os.path.basename(index)
        base = index_name[: -len(".nbi")] + "."
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        files += [
            os.path.join(folder, n)
            for n in sorted(names)
            if n == index_name
            or (n.startswith(base) and n.endswith(".nbc") and n[len(base) : -len(".nbc")].isdigit())
        ]
    return files


def _import_text(path, text, module_name):
    """Execute the checked ``text`` of ``path`` as module ``module_name``.

    The text is the one that was verified, not the file read again: a file swapped after the
    check, or a ``.pyc`` planted beside it, is never run.  ``__file__`` and the code's file name
    are ``path``, where Numba's cache locator looks.
    """
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        exec(compile(text, path, "exec"), module.__dict__)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise CodegenError(f"generated module {path!r} failed to import: {exc}") from exc
    return module


#: Kernels of a generated module that are called from Python (their last argument is ``u``
#: when the model has inputs).
BATCH_KERNELS = (
    "drift",
    "drift_jacobian",
    "stein_features",
    "local_rows",
    "local_residual",
    "simulate_chains",
)


class BoundKernels:
    """A generated module whose kernels take a model's inputs: attributes are the module's, and
    its batch kernels (:data:`BATCH_KERNELS`) are called with the input values ``u`` appended.
    """

    def __init__(self, module, u, name):
        self._module, self._u, self._name = module, u, name

    def __getattr__(self, attr):
        obj = getattr(self._module, attr)
        if attr not in BATCH_KERNELS:
            return obj
        if self._u is None:
            inputs = ", ".join(self._module.INPUTS)
            raise ModelError(
                f"model {self._name!r} has inputs ({inputs}): its kernels need their values; "
                "pass inputs= (or compile model.with_inputs(values))"
            )
        u = self._u
        return lambda *args: obj(*args, u)


def _a_terms(module):
    """The rows (e, j, k) and coefficients of A's contraction: A_TERMS, then every matrix block
    of A_BLOCKS expanded entry by entry (one term per block column)."""
    rows = [t[:3] for t in module.A_TERMS]
    coef = [t[3] for t in module.A_TERMS]
    for first, brows, bcoefs, feats in getattr(module, "A_BLOCKS", ()):
        K = len(feats)
        for r, (j, c) in enumerate(zip(brows, bcoefs)):
            rows += [(feats[k], j, first + r * K + k) for k in range(K)]
            coef += [c] * K
    return np.array(rows, dtype=np.int64).reshape(-1, 3), np.array(coef, dtype=float)


class CompiledModel:
    """A model together with its loaded kernel module.

    Attributes
    ----------
    model : SDEModel
    module : module
        The generated module (``drift``, ``stein_features``, ``simulate_chains`` ...).  For a
        model with inputs, a :class:`BoundKernels` view whose kernels get the input values.
    path : str
        File the module was loaded from.
    inputs : numpy.ndarray (k,) or None
        The values of the generated model's inputs the kernels run with (None: the model has
        no inputs, or none were bound).
    noise_matrix : numpy.ndarray (d, d') or None
        Constant G with ½GGᵀ = D (at the inputs), or None when G depends on the state.
    """

    def __init__(self, model, module, path, inputs=None, source=None):
        self.model = model
        self.source = model if source is None else source  # the model the module was printed for
        self.raw_module = module
        self.path = path
        self.inputs = None if inputs is None else np.ascontiguousarray(inputs, dtype=float)
        self.module = BoundKernels(module, self.inputs, model.name) if module.INPUTS else module
        self.noise_matrix = None
        if not module.STATE_DEPENDENT_NOISE:  # constant G: a numeric eigh (at the inputs)
            self.noise_matrix = _noise_matrix(self.source)[1]
            if self.noise_matrix is None and self.inputs is not None:
                self.noise_matrix = constant_noise(self.source, self.inputs)
        self.noise_dim = module.NOISE_DIM
        if module.IS_AFFINE:
            self.a_terms, self.a_coef = _a_terms(module)
            self.a_blocks = tuple(getattr(module, "A_BLOCKS", ()))
            self.b_sin_terms = np.array(
                [t[:2] for t in module.B_SIN_TERMS], dtype=np.int64
            ).reshape(-1, 2)
            self.b_sin_coef = np.array([t[2] for t in module.B_SIN_TERMS], dtype=float)
            self.b_cos_terms = np.array(
                [t[:3] for t in module.B_COS_TERMS], dtype=np.int64
            ).reshape(-1, 3)
            self.b_cos_coef = np.array([t[3] for t in module.B_COS_TERMS], dtype=float)
            self.n_sin = int(self.a_terms[:, 0].max(initial=-1)) + 1
            self.n_sin = max(self.n_sin, int(self.b_sin_terms[:, 0].max(initial=-1)) + 1)
            self.n_cos = int(self.b_cos_terms[:, 0].max(initial=-1)) + 1

    def bind(self, inputs, model=None):
        """This module with its kernels run at input values ``inputs`` (k,): a CompiledModel of
        ``model`` (default: the same model), sharing the compiled kernels."""
        u = self.source.input_vector(inputs)
        return CompiledModel(model or self.model, self.raw_module, self.path, u, self.source)

    @property
    def is_affine(self):
        return bool(self.module.IS_AFFINE)

    def _rows(self, X):
        """X as C-contiguous float64 (N, d); shape errors name X (kernels skip bounds checks)."""
        X = np.ascontiguousarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.model.d:
            raise DataError(
                f"X: expected shape (N, {self.model.d}) for model {self.model.name!r}, "
                f"got {X.shape}"
            )
        return X

    def drift(self, X, theta) -> np.ndarray:
        """f(x; θ) at the rows of X (N, d) → (N, d)."""
        X = self._rows(X)
        out = np.empty_like(X)
        self.module.drift(X, self.model.theta_vector(theta), out)
        return out

    def stein_features(self, X):
        """Per-sample Stein-feature factors → (sin (N, K_sin), cos (N, K_cos))."""
        X = self._rows(X)
        out_sin = np.empty((X.shape[0], self.n_sin))
        out_cos = np.empty((X.shape[0], self.n_cos))
        self.module.stein_features(X, out_sin, out_cos)
        return out_sin, out_cos

    def run_chains(self, x0, theta, G, dt, burn_in, thin, n_keep, keys, threads=None):
        """Run the generated integrator on chains: start states ``x0`` (C, d), stream ``keys`` (C,).

        The chains are split into contiguous parts (whole blocks of 64 lanes) run on ``threads``
        threads (default: Numba's thread count); a chain's records depend only on its key, its
        start and θ, so the result is the same, bit for bit, for any split.

        Returns
        -------
        out : (n_keep, C, d) recorded states
        status : (C,) int64, 0 or the first step at which a chain was not finite
        """
        import numba

        x0 = np.ascontiguousarray(x0, dtype=float)
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        C, d = x0.shape
        status = np.zeros(C, dtype=np.int64)
        rest = (np.ascontiguousarray(theta, dtype=float), np.ascontiguousarray(G, dtype=float))
        rest += (float(dt), int(burn_in), int(thin), int(n_keep))
        n_parts = max(1, min(int(threads or numba.get_num_threads()), -(-C // 64)))
        edges = [64 * (-(-C // 64) * p // n_parts) for p in range(n_parts)] + [C]
        parts = [(lo, min(hi, C)) for lo, hi in zip(edges[:-1], edges[1:]) if lo < C]
        outs = [np.empty((int(n_keep), hi - lo, d)) for lo, hi in parts]
        kernel = self.module.simulate_chains

        def run(i):
            lo, hi = parts[i]
            kernel(x0[lo:hi], *rest, keys[lo:hi], outs[i], status[lo:hi])

        list(map_ordered(run, range(len(parts)), len(parts)))
        return (outs[0] if len(parts) == 1 else np.concatenate(outs, axis=1)), status

    def __repr__(self):
        return f"CompiledModel({self.model.name!r}, path={self.path!r})"


def compile_model(model, out_dir=None, *, force=False) -> CompiledModel:
    """Emit (when needed) and load the generated kernels of ``model``.

    Parameters
    ----------
    model : SDEModel
    out_dir : str, optional
        Folder of generated modules (default: :func:`default_output_dir`).  A folder given here
        or by ``$DYNOSED_GENERATED_DIR`` that cannot be written raises CodegenError; when the
        automatic default cannot be written, the modules go to :func:`user_cache_dir` with a
        warning.  A valid file already present is loaded without any write.
    force : bool
        Re-derive and rewrite even when a valid file exists (the file is still
        only touched if its content changes).

    A model made by :meth:`SDEModel.with_inputs` runs the module of the model it came from,
    with the input values as the kernels' argument ``u``: one module and one compilation
    whatever the number of input values.

    Returns
    -------
    CompiledModel
    """
    require_model(model, "compile_model")
    if out_dir is not None:
        out_dir = out_dir_path(out_dir, "compile_model: out_dir")
    origin = getattr(model, "_input_origin", None)
    if origin is not None:
        parent, u = origin
        return compile_model(parent, out_dir, force=force).bind(u, model)
    h = spec_hash(model)
    # a folder the user chose is used or fails loudly; the automatic default (e.g. a read-only
    # installed project) falls back to the per-user cache with a warning
    chosen = out_dir is not None or bool(os.environ.get("DYNOSED_GENERATED_DIR"))
    out_dir = os.path.abspath(out_dir or default_output_dir(model))
    key = (h, out_dir)
    with _LOCK:
        if key in _LOADED and not force:
            cm = _LOADED[key]
            return cm if cm.model is model else CompiledModel(model, cm.raw_module, cm.path)
        try:
            path, text = _ensure_file(model, h, out_dir, force)
        except CodegenError as exc:
            fallback = os.path.abspath(user_cache_dir())
            if chosen or out_dir == fallback:
                raise
            warnings.warn(f"{exc}; using the user cache {fallback!r} instead", stacklevel=2)
            path, text = _ensure_file(model, h, fallback, force)
        refuse_wide_integers(model, text)
        module = _import_text(path, text, f"dynosed_generated_{model.name}_{h[:12]}")
        trust.verify_numba_caches(module)  # Numba checks each cache file before it unpickles it
        note_first_compile(module, model.name)  # one stderr line when Numba's disk cache is cold
        cm = CompiledModel(model, module, path)
        _LOADED[key] = cm
        return cm


def _ensure_file(model, h, out_dir, force):
    """(path, text) of a trusted generated module for spec hash ``h`` in ``out_dir``, written
    if needed (with a warning when a file was there but could not be trusted).

    Another process may write the same file at the same time: every write is a whole-file
    atomic replace of identical text (the output is deterministic), so a reader sees either
    no file, or a complete one.
    """
    path = os.path.join(out_dir, module_filename(model.name, h))
    text, problem = (None, None) if force else _trusted_text(model, path, h)
    if text is None:
        if problem is not None:
            warnings.warn(f"generated file {path} {problem}; regenerating it", stacklevel=3)
        text = render_module(build_spec(model))
        refuse_wide_integers(model, text)  # (before the file is written)
        try:
            write_if_changed(path, text)
        except OSError as exc:
            raise CodegenError(
                f"cannot write generated kernels to {out_dir!r} ({exc}); "
                "pass out_dir= or set DYNOSED_GENERATED_DIR to a writable folder"
            ) from exc
        trust.trust_module(text.encode("utf-8"))
    return path, text


_LONG_DIGITS = re.compile(r"\d{19}")


def refuse_wide_integers(model, text):
    """ModelError when the generated module ``text`` holds an integer literal beyond int64,
    which Numba refuses ("Int value is too large"): SymPy keeps a constant such as
    ``10**30`` or ``2**1000`` an exact integer, and the printer writes it as one.  Names the
    entries of the drift and D holding integers beyond 2**53 (their doubles and derivatives
    are what overflows) and the fix.  A plain regular expression first: tokenising the module
    is left to the rare text with a run of 19 digits."""
    if not _LONG_DIGITS.search(text):
        return
    wide = [
        int(tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.NUMBER and tok.string.isdigit() and int(tok.string) >= 2**63
    ]
    if not wide:
        return
    entries = [(f"drift[{j}] (d{model.state[j]})", e) for j, e in enumerate(model.drift)]
    entries += [(f"diffusion D[{i},{j}]", model.D[i, j]) for i, j in np.ndindex(model.D.shape)]
    origin = [
        (where, e) for where, e in entries if any(abs(n) >= 2**53 for n in e.atoms(sp.Integer))
    ]
    digits = str(max(wide))
    shown = digits if len(digits) <= 24 else f"{digits[:8]}…{digits[-8:]} ({len(digits)} digits)"
    where = f" (from {origin[0][0]} = {sp.sstr(origin[0][1])[:120]})" if origin else ""
    raise ModelError(
        f"model {model.name!r}: its kernels would hold the integer constant {shown}{where}, "
        "beyond the 64-bit integers Numba compiles (it refuses the kernel: 'Int value is too "
        "large'): SymPy keeps a constant such as 10**30 an exact integer; write it as a float "
        "(1e30, or sp.Float(10**30)), or rescale the model's units"
    )


def check_finite_output(arr, what, X=None):
    """Raise DataError when a kernel produced non-finite values (names the first row)."""
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        where = f" at sample {row}" + (
            f" (x = {np.array2string(X[row], precision=4)})" if X is not None else ""
        )
        raise DataError(
            f"{what} is not finite{where}: the drift or diffusion overflowed or "
            "was evaluated outside its domain"
        )
