"""Stage 4 — printing kernel specs into Python modules of Numba kernels."""

from .emit import module_filename, render_module, write_if_changed
from .printer import SlotPrinter, cse_block

__all__ = ["SlotPrinter", "cse_block", "render_module", "module_filename", "write_if_changed"]
