"""The house rules of issue 21 on the package's code: no function longer than 100 lines (its
docstring not counted: the numpydoc Parameters of an entry point are documentation, not logic),
and no public entry point with more than 12 parameters (``**moved``, the flat keywords of earlier
versions, counted).  There are no exceptions."""

from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import dynosed_sym as ds

PACKAGE = pathlib.Path(ds.__file__).resolve().parent
MAX_LINES = 100
MAX_PARAMETERS = 12


ENTRY_POINTS = [
    ds.fit_global,
    ds.fit_local,
    ds.check_identifiability,
    ds.density_from_dynamics,
    ds.simulate,
]


def _code_lines(node):
    """Lines of a function from its ``def`` to its last line, less its docstring."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
        if isinstance(first.value.value, str):
            lines -= first.end_lineno - first.lineno + 1
    return lines


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{path.relative_to(PACKAGE).as_posix()}:{node.name}", node


def test_code_lines_count_the_body_not_the_docstring():
    tree = ast.parse('def f(a):\n    """Doc\n\n    more."""\n    x = a\n    return x\n')
    assert _code_lines(tree.body[0]) == 3


def test_no_function_is_longer_than_100_lines():
    long = {name: _code_lines(node) for name, node in _functions() if _code_lines(node) > MAX_LINES}
    assert not long, f"functions longer than {MAX_LINES} lines (docstring not counted): {long}"


@pytest.mark.parametrize(
    "entry", ENTRY_POINTS, ids=["fit_global", "fit_local", "check", "density", "simulate"]
)
def test_entry_point_takes_at_most_12_parameters(entry):
    assert len(inspect.signature(entry).parameters) <= MAX_PARAMETERS
