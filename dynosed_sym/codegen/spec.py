"""Kernel spec: what to print for one model (the "what"), and the hash that names it.

The spec hash is computed from the *declaration* alone (state, parameters,
drift, diffusion/noise, name) and the generator version, so an unchanged model
is recognised — and its generated file reused — without re-deriving anything.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np
import sympy as sp

__all__ = ["GENERATOR_VERSION", "KernelSpec", "spec_hash", "build_spec"]


def _release() -> str:
    """The installed package version (``pyproject.toml`` is the one place it is written)."""
    from importlib import metadata

    try:
        return metadata.version("dynosed_sym")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


RELEASE = _release()

# Every source file whose text can change the printed kernels, and every package module whose
# functions a generated module imports (with the modules those import): Numba's cache of a
# generated kernel does not notice a change in a function it calls from another module.  Their
# fingerprint is part of GENERATOR_VERSION, hence of every spec hash and generated file name: a
# changed generator or helper can never silently reuse a file (or a Numba cache) printed or
# compiled against an older one.
_GENERATOR_SOURCES = (
    "codegen/spec.py",
    "model/derivation.py",
    "codegen/printer.py",
    "codegen/wrapping.py",
    "codegen/legend.py",
    "codegen/templates.py",
    "codegen/render.py",
    "kernels/lanes.py",
    "kernels/rng.py",
    "kernels/trig.py",
)


def _generator_fingerprint() -> str:
    """Hash of the generator's token stream without comments and blank lines.

    Editing a comment leaves generated file names (and Numba caches) alone; any code or
    string change, including a template, renames them.  Tokens are the same for CRLF
    checkouts and across Python versions.
    """
    import io
    import tokenize

    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER)
    h = hashlib.sha256()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package folder
    for rel in _GENERATOR_SOURCES:
        with open(os.path.join(here, rel), "rb") as fh:
            # CRLF → LF first: multi-line strings (templates) would otherwise keep the \r
            for tok in tokenize.tokenize(io.BytesIO(fh.read().replace(b"\r\n", b"\n")).readline):
                if tok.type not in skip:
                    h.update(f"{tok.type}:{tok.string}\n".encode())
    return h.hexdigest()[:8]


#: Release plus a fingerprint of the generator's source, e.g. ``0.1.0+1a2b3c4d``.
GENERATOR_VERSION = f"{RELEASE}+{_generator_fingerprint()}"


def spec_hash(model) -> str:
    """SHA-256 (hex) of the model declaration and the generator version.

    Cached on the model (an SDEModel is not meant to be modified after construction).
    """
    cached = model.__dict__.get("_spec_hash")
    if cached is not None:
        return cached
    h = hashlib.sha256()
    for part in (
        GENERATOR_VERSION,
        model.name,
        sp.srepr(sp.Tuple(*model.state)),
        sp.srepr(sp.Tuple(*model.params)),
        sp.srepr(sp.Tuple(*getattr(model, "inputs", ()))),
        sp.srepr(model.drift),
        sp.srepr(model.D),
        sp.srepr(model.G) if model.G is not None else "None",
    ):
        h.update(part.encode())
        h.update(b"\0")
    model._spec_hash = h.hexdigest()
    return model._spec_hash


@dataclass(frozen=True)
class KernelSpec:
    """Everything the printer needs for one model.

    Attributes
    ----------
    name, hash : str
    state, params : tuple of sympy.Symbol
    drift : sympy.Matrix (d, 1)
    is_affine : bool
    stein : SteinPieces or None
        Global-route pieces (affine models only).
    noise : sympy.Matrix (d, d') or None
        Symbolic noise matrix G(x) when it depends on the state; ``None`` when
        it is constant (then the simulator receives it as an array argument).
    constant_noise : numpy.ndarray (d, d') or None
    local : LocalPieces or None
        Local-route rows a(x, s), β(x, s, J, ∂ₜlog p) (affine models only).
    jacobian : sympy.Matrix (d, n) or None
        ∂f/∂θ at general θ (gradient route of non-affine models).
    local_residual : LocalResidualPieces or None
        Local residual R(x, s, J, ∂ₜlog p; θ) and ∂R/∂θ (local gradient route, every model).
    separable : tuple of int
        Parameters entering f affinely with θ-free columns (variable projection).
    """

    name: str
    hash: str
    state: tuple
    params: tuple
    drift: sp.Matrix
    is_affine: bool
    stein: object
    noise: sp.Matrix | None
    constant_noise: np.ndarray | None
    local: object = None
    jacobian: sp.Matrix | None = None
    local_residual: object = None
    separable: tuple = ()


def _noise_matrix(model):
    """G with ½GGᵀ = D: the declared G, else a (symbolic or numeric) square root of 2D."""
    if model.G is not None:
        G = model.G
        if not any(e.free_symbols for e in G):
            return None, np.array(G.evalf(), dtype=float)
        return G, None
    D = model.D
    if model.diffusion_is_constant:
        w, V = np.linalg.eigh(np.array(D.evalf(), dtype=float) * 2.0)
        return None, V * np.sqrt(np.clip(w, 0.0, None))
    if D.is_diagonal():
        return sp.diag(*[sp.sqrt(2 * D[i, i]) for i in range(model.d)]), None
    cached = getattr(model, "_noise_factor", None)  # computed (and checked) at declaration
    return (cached if cached is not None else (2 * D).cholesky(hermitian=False)), None


def build_spec(model) -> KernelSpec:
    der = model.derivation
    noise, constant_noise = _noise_matrix(model)
    return KernelSpec(
        name=model.name,
        hash=spec_hash(model),
        state=model.state,
        params=model.params,
        drift=model.drift,
        is_affine=der.is_affine,
        stein=der.stein,
        noise=noise,
        constant_noise=constant_noise,
        local=der.local,
        jacobian=der.jacobian,
        local_residual=der.local_residual,
        separable=tuple(der.separable),
    )
