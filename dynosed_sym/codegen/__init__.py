"""From a declared model to loaded Numba kernels: spec → printed source → files → loading.

* :mod:`.spec` — what to compute for one model (:class:`KernelSpec`) and the hash naming it;
* :mod:`.printer` — a SymPy printer mapping symbols to array slots, with one joint CSE per kernel,
  numeric subexpressions folded into literals and structural zeros left out;
* :mod:`.wrapping` — line wrapping of printed code at 100 columns;
* :mod:`.legend` — the header: slot legend and operation counts;
* :mod:`.templates` — the source templates of the generated modules (model-independent code is
  imported from :mod:`dynosed_sym.kernels`);
* :mod:`.render` — spec → module text (deterministic);
* :mod:`.files` — names, folders, banner check, atomic writes;
* :mod:`.loading` — :func:`compile_model`: emit when needed, execute the checked module text →
  :class:`CompiledModel`;
* :mod:`.trust` — what is trusted on disk: the per-user key, records of generated modules,
  Numba cache files sealed and verified by an HMAC.

``python -m dynosed_sym.codegen MODEL.py`` prints the module of model files (``make golden``).
"""

from .files import default_output_dir, user_cache_dir
from .loading import CompiledModel, compile_model
from .printer import SlotPrinter, cse_block
from .render import render_module
from .spec import GENERATOR_VERSION, KernelSpec, build_spec, spec_hash

__all__ = [
    "compile_model",
    "CompiledModel",
    "default_output_dir",
    "user_cache_dir",
    "build_spec",
    "KernelSpec",
    "spec_hash",
    "GENERATOR_VERSION",
    "render_module",
    "SlotPrinter",
    "cse_block",
]
