"""Sphinx configuration: the guide pages (Markdown, MyST) and the API reference (autodoc and
numpydoc).

Build with ``make docs`` (warnings are errors): ``sphinx-build -W --keep-going -b html docs
docs/_build/html``.
"""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))  # document the source tree, installed or not

import dynosed_sym  # noqa: E402

project = "dynosed_sym"
author = "the dynosed_sym authors"
copyright = "the dynosed_sym authors, MIT licence"
release = dynosed_sym.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "results"]

# MyST: GitHub-style Markdown; headings get anchors so that "method.md#2-..." links resolve
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

# autodoc + numpydoc: signatures from the code, numpydoc sections rendered
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc "Parameters" sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

html_theme = "alabaster"
html_title = f"dynosed_sym {release}"
