"""The package's shape: layers that only import downwards, no import cycles, small modules.

Every import counts, also one inside a function (a lazy import hides a cycle, it does not
remove it).  The layers are the pipeline's stages, in the order data flows through them.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "dynosed_sym"

#: Top-level modules and subpackages, lowest layer first.  A module may import its own layer
#: or lower ones, never a higher one.
LAYERS = [
    {"errors", "arguments", "options", "progress", "kernels"},
    {"model"},
    {"codegen", "reference"},
    {"data"},
    {"assembly"},
    {"backends"},
    {"simulation"},
    {"solve"},
    {"routes"},
    {"identifiability"},
    {"density"},
    {"apps", "__init__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
MAX_LINES = 700


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _imports(name, path):  # noqa: C901 (one walk over the syntax tree)
    """Fully qualified dynosed_sym modules imported anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "dynosed_sym"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "dynosed_sym":
                continue
            for a in node.names:  # `from . import x` may name a submodule: then that is imported
                out.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in NAMES else mod)
    return out


MODULES = dict(_modules())
NAMES = set(MODULES)
GRAPH = {
    name: {m for m in _imports(name, path) if m in MODULES and m != name}
    for name, path in MODULES.items()
}


def _layer(module):
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    assert top in RANK, (
        f"{module}: no layer is assigned to dynosed_sym.{top} (tests/test_layers.py)"
    )
    return RANK[top]


def test_every_module_has_a_layer():
    for name in MODULES:
        _layer(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down_the_layers(name):
    upward = sorted(m for m in GRAPH[name] if _layer(m) > _layer(name))
    assert not upward, f"{name} (layer {_layer(name)}) imports higher layers: {upward}"


def test_no_import_cycles():
    """A package's ``__init__`` re-exports its modules, so edges *into* an ``__init__`` are
    followed to what it imports; a cycle is then a real one between modules."""
    colour, stack, cycles = {}, [], []

    def visit(node):
        colour[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if colour.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in colour:
                visit(nxt)
        stack.pop()
        colour[node] = 2

    for node in sorted(GRAPH):
        if node not in colour:
            visit(node)
    # a package __init__ importing its own submodules, which import a sibling through the
    # package (``from . import x``), is the package's namespace, not a cycle of modules
    real = [
        c
        for c in cycles
        if not any(m.count(".") < c[0].count(".") and c[0].startswith(m + ".") for m in c)
    ]
    assert not real, "import cycles: " + "; ".join(" → ".join(c) for c in real)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_are_small(name):
    n = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{name}: {n} lines (at most {MAX_LINES}); split it along its sections"


def test_the_fixture_finds_the_modules_it_checks():
    # the checks above are only as good as the import graph they read
    assert "dynosed_sym.routes.global_route" in MODULES
    assert "dynosed_sym.assembly.stein" in GRAPH["dynosed_sym.routes.global_route"]
    assert "dynosed_sym.data.sources" in GRAPH["dynosed_sym.routes.global_route"]
    assert _layer("dynosed_sym.apps.cli") > _layer("dynosed_sym.routes.global_route")
