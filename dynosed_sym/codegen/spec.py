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

__all__ = [
    "GENERATOR_VERSION",
    "KernelSpec",
    "spec_hash",
    "build_spec",
    "constant_noise",
    "STRUCTURED_MIN_ENTRIES",
]


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
    "codegen/structured.py",
    "kernels/jit.py",
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


def _srepr(expr):
    """srepr in the order of SymPy's (canonical, hash-independent) arguments: sorting the terms
    of a network's drift for printing took seconds at d = 100."""
    return sp.srepr(expr, order="none")


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
        _srepr(sp.Tuple(*model.state)),
        _srepr(sp.Tuple(*model.params)),
        _srepr(sp.Tuple(*getattr(model, "inputs", ()))),
        _srepr(model.drift),
        _srepr(model.D),
        _srepr(model.G) if model.G is not None else "None",
    ):
        h.update(part.encode())
        h.update(b"\0")
    model._spec_hash = h.hexdigest()
    return model._spec_hash


#: Smallest matrix block (R·K parameters) printed as loops; smaller ones stay unrolled, so the
#: bundled models' kernels (the GRN's 3 × 7 W included) are the unrolled, bit-identical ones.
STRUCTURED_MIN_ENTRIES = 64


def _derived(name, doc):
    """A read-only attribute of the spec that is the derivation's attribute ``name``."""
    return property(lambda spec: getattr(spec.der, name), doc=doc)


@dataclass(frozen=True)
class KernelSpec:
    """Everything the printer needs for one model.

    Attributes
    ----------
    name, hash : str
    state, params, inputs : tuple of sympy.Symbol
        ``inputs``: known per-experiment values, a runtime argument ``u`` of every kernel.
    drift : sympy.Matrix (d, 1)
    is_affine : bool
    der : Derivation
        The model's symbolic derivation (:mod:`dynosed_sym.model.derivation`).
    noise : sympy.Matrix (d, d') or None
        Symbolic noise matrix G(x) when it depends on the state; ``None`` when it does not
        (then the simulator receives it as an array argument).
    constant_noise : numpy.ndarray (d, d') or None
        G when it depends on nothing; ``None`` when it depends on the state or on inputs (then
        :func:`constant_noise` computes it for the inputs' values).
    noise_dim : int
        d', the columns of G.
    structured : StructuredPieces or None
        The matrix blocks printed as loops and what every kernel computes besides them
        (:func:`dynosed_sym.model.derivation.structured_pieces`); None: every kernel unrolled.
    """

    name: str
    hash: str
    state: tuple
    params: tuple
    inputs: tuple
    drift: sp.Matrix
    is_affine: bool
    der: object
    noise: sp.Matrix | None
    constant_noise: np.ndarray | None
    noise_dim: int
    structured: object = None

    stein = _derived("stein", "Global-route pieces (:class:`SteinPieces`).")
    local = _derived("local", "Local-route rows a(x, s), β(x, s, J, ∂ₜlog p) (affine models only).")
    jacobian = _derived("jacobian", "∂f/∂θ at general θ (gradient route of non-affine models).")
    local_residual = _derived(
        "local_residual",
        "Local residual R(x, s, J, ∂ₜlog p; θ) and ∂R/∂θ (local gradient route).",
    )

    @property
    def separable(self):
        """Parameters entering f affinely with θ-free columns (variable projection)."""
        return tuple(self.der.separable)

    @property
    def blocks(self):
        """Matrix blocks printed as loops (empty: every kernel unrolled)."""
        return () if self.structured is None else self.structured.blocks


def _noise_matrix(model):
    """(G(x) symbolic or None, G numeric or None) with ½GGᵀ = D.

    Symbolic when G depends on the state; numeric when it depends on nothing; both None when it
    depends on inputs only (:func:`constant_noise` at their values).
    """
    state = set(model.state)
    if model.G is not None:
        G = model.G
        free = set().union(*(e.free_symbols for e in G))
        if not free:
            return None, np.array(G.evalf(), dtype=float)
        return (G, None) if free & state else (None, None)
    D = model.D
    if model.diffusion_is_constant:
        return None, constant_noise(model)
    if not model.diffusion_depends_on_state:
        return None, None
    if D.is_diagonal():
        return sp.diag(*[sp.sqrt(2 * D[i, i]) for i in range(model.d)]), None
    cached = getattr(model, "_noise_factor", None)  # computed (and checked) at declaration
    return (cached if cached is not None else (2 * D).cholesky(hermitian=False)), None


def constant_noise(model, u=()):
    """G (d, d') with ½GGᵀ = D of a noise that does not depend on the state, at inputs ``u``.

    The inputs are substituted as 17-digit Floats, as :meth:`SDEModel.with_inputs` does.
    """
    sub = {s: sp.Float(float(v), 17) for s, v in zip(model.inputs, np.asarray(u, dtype=float))}
    if model.G is not None:
        return np.array(model.G.xreplace(sub).evalf(), dtype=float)
    D = model.D.xreplace(sub) if sub else model.D
    w, V = np.linalg.eigh(np.array(D.evalf(), dtype=float) * 2.0)
    return V * np.sqrt(np.clip(w, 0.0, None))


def _blocks(der, structured):
    """The matrix blocks to print as loops: those of at least STRUCTURED_MIN_ENTRIES
    parameters (``structured=None``), all of them (True) or none (False)."""
    if not der.is_affine or structured is False:
        return ()
    return tuple(b for b in der.blocks if structured or b.size >= STRUCTURED_MIN_ENTRIES)


def build_spec(model, structured=None) -> KernelSpec:
    """The :class:`KernelSpec` of ``model``.

    ``structured``: None prints matrix blocks of at least :data:`STRUCTURED_MIN_ENTRIES`
    parameters as loops; True every matrix block; False none.  A choice other than the
    default gets its own hash (and file name).
    """
    from ..model.derivation import structured_pieces

    der = model.derivation
    noise, constant = _noise_matrix(model)
    blocks = _blocks(der, structured)
    pieces = structured_pieces(der, blocks) if blocks else None
    h = spec_hash(model)
    if blocks != _blocks(der, None):
        h = hashlib.sha256(f"{h}:structured={structured}".encode()).hexdigest()
    if noise is not None:
        dn = noise.shape[1]
    else:
        dn = model.G.shape[1] if model.G is not None else model.d
    return KernelSpec(
        name=model.name,
        hash=h,
        state=model.state,
        params=model.params,
        inputs=tuple(model.inputs),
        drift=model.drift,
        is_affine=der.is_affine,
        der=der,
        noise=noise,
        constant_noise=constant,
        noise_dim=dn,
        structured=pieces,
    )
