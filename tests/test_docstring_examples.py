"""The Examples sections of the public API run and show what they print.

Every public name — in ``dynosed_sym.__all__`` or a subpackage's ``__all__`` — whose docstring (or
one of its methods') holds ``>>>`` examples is a test: doctest runs them in the namespace of the
module that defines the name and compares the output under the rules of the documentation pages
(tests/test_docs.py: ``...`` stands for any text, whitespace is normalised).  An Examples section
that takes long says so with the reST comment ``.. slow`` (invisible in the rendered docs); its
examples then run in the ``@pytest.mark.slow`` part of the suite, like a page's
```` ```python slow ```` blocks.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
import re

import pytest

import dynosed_sym

SLOW = re.compile(r"^\s*\.\. slow\b", re.M)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_names():
    """{qualified name: object} of the public API, each object once (the top level first)."""
    packages = [dynosed_sym] + [
        importlib.import_module(f"dynosed_sym.{info.name}")
        for info in pkgutil.iter_modules(dynosed_sym.__path__)
        if info.ispkg and info.name != "apps"  # applications, not the library's API
    ]
    found, seen = {}, set()
    for package in packages:
        for name in getattr(package, "__all__", ()):
            obj = getattr(package, name)
            if callable(obj) and id(obj) not in seen:
                seen.add(id(obj))
                found[f"{package.__name__}.{name}"] = obj
    return found


def _examples():
    finder = doctest.DocTestFinder()
    tests = []
    for name, obj in _public_names().items():
        module = importlib.import_module(obj.__module__)
        for test in finder.find(obj, name, module=module):
            if test.examples:
                slow = bool(SLOW.search(test.docstring or ""))
                tests.append(pytest.param(test, id=test.name, marks=[pytest.mark.slow] * slow))
    return tests


EXAMPLES = _examples()


@pytest.mark.parametrize("test", EXAMPLES)
def test_docstring_examples_run(test):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = io.StringIO()
    result = runner.run(test, out=out.write, clear_globs=True)
    assert result.failed == 0, f"{test.name}: {result.failed} example(s) failed\n{out.getvalue()}"


def test_the_collector_finds_the_entry_points_examples():
    # the test above is only as good as what it collects
    names = {p.values[0].name for p in EXAMPLES}
    assert "dynosed_sym.density_from_dynamics" in names
    assert "dynosed_sym.density.Training" in names
    slow = {p.values[0].name for p in EXAMPLES if p.marks}
    assert slow == {"dynosed_sym.density_from_dynamics"}
