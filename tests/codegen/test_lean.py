"""Lean, legible generated modules (issue 15): shared code lives in the package, lines stay within
100 columns, numeric subexpressions are folded, structural zeros are not written, and the header
carries a slot legend and per-kernel operation counts that match the printed kernels."""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import pytest
import sympy as sp
from conftest import GENERATED_SNAPSHOT, MODELS_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.apps.bench.network_model import network_model
from dynosed_sym.codegen.legend import legend_table, slot_entries
from dynosed_sym.codegen.printer import SlotPrinter, print_block
from dynosed_sym.codegen.render import render_module
from dynosed_sym.codegen.spec import build_spec
from dynosed_sym.codegen.wrapping import wrap_assignment

MAX_SHARED_RUN = 25
x, y, z = sp.symbols("x y z", real=True)
a, b, c = sp.symbols("a b c", real=True)


def _other_models():
    """Models beside models/, in pairs with equal shapes (d, n, d') — the hardest case for
    shared runs: their docstrings agree too.  Constant noise (RK4) and state-dependent noise
    (Euler-Maruyama), with structural zeros in f, df/dtheta and G(x)."""
    return [
        ds.SDEModel([x, y], [a, b], [-a * x + y, -b * y**3], diffusion=1, name="rk4_a"),
        ds.SDEModel(
            [x, y],
            [a, b],
            [sp.sin(y) - a * x, -b * y + sp.pi * x / 100],
            noise=[[1, 0], [sp.Rational(-1, 3), sp.sqrt(2)]],
            name="rk4_b",
        ),
        ds.SDEModel(
            [x, y],
            [a],
            [-a * x, -y + sp.tanh(x)],
            diffusion=[(1 + x**2) / 2, sp.Rational(1, 4)],
            name="em_a",
        ),
        ds.SDEModel(
            [x, y],
            [a],
            [-a * x**3, sp.Integer(0)],
            noise=[[1 + x**2 / 10, 0], [sp.cos(x) / 3, sp.sqrt(2)]],
            name="em_b",
        ),
        ds.SDEModel(
            [x, y, z],
            [a, b, c],
            [-a * x + y / (1 + z**2), -b * y + x * z, -c * z + sp.exp(-(x**2) / 2)],
            diffusion=sp.Rational(1, 2),
            name="rk4_c",
        ),
    ]


@pytest.fixture(scope="module")
def modules():
    """{name: text}: the committed generated/ files, modules rendered for _other_models(), and
    modules with matrix blocks as loops (the d = 8 network; the GRN's W forced, whose rows have
    different coefficients)."""
    texts = {f"generated/{k}": v for k, v in GENERATED_SNAPSHOT.items()}
    texts.update({m.name: render_module(build_spec(m)) for m in _other_models()})
    texts["network_d8"] = render_module(build_spec(network_model(8, 0)[0]))
    grn = ds.load_model(MODELS_DIR / "grn_bcell.py")
    texts["grn_structured"] = render_module(build_spec(grn, structured=True))
    return texts


def _longest_shared_run(a_lines, b_lines):
    """Length and first line of the longest run of consecutive lines common to both."""
    best, at, prev = 0, "", [0] * (len(b_lines) + 1)
    for i in range(1, len(a_lines) + 1):
        cur = [0] * (len(b_lines) + 1)
        for j in range(1, len(b_lines) + 1):
            if a_lines[i - 1] == b_lines[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best, at = cur[j], a_lines[i - cur[j]]
        prev = cur
    return best, at


def test_no_long_run_of_lines_shared_by_two_modules(modules):
    """No run of more than 25 identical lines in two generated modules: the shared code
    (RNG, lane blocks, RK4/EM stages, bookkeeping) is imported from dynosed_sym.kernels."""
    windows = {}
    for name, text in modules.items():
        model = re.search(r"^NAME = (.*)$", text, re.M).group(1)  # versions of one model agree
        lines = text.splitlines()
        for i in range(len(lines) - MAX_SHARED_RUN):
            key = tuple(lines[i : i + MAX_SHARED_RUN + 1])
            windows.setdefault(key, {})[model] = name
    shared = {key: set(names.values()) for key, names in windows.items() if len(names) > 1}
    if shared:
        key, names = next(iter(shared.items()))
        first, second = sorted(names)[:2]
        n, at = _longest_shared_run(modules[first].splitlines(), modules[second].splitlines())
        pytest.fail(f"{first} and {second} share {n} consecutive lines, from {at!r}")
    # the simulator stays in every module, short: the block loop and the stage calls (with
    # matrix blocks, one line more: their nonzero weights)
    for text in modules.values():
        sim = text[text.index("def simulate_chains") :]
        assert len(sim.splitlines()) <= 20 + ("block_weights(theta)" in sim)
        assert "lanes.open_block(" in sim and "lanes.stopped(" in sim


def test_lines_within_100_columns(modules):
    for name, text in modules.items():
        long = [(k + 1, len(s)) for k, s in enumerate(text.splitlines()) if len(s) > 100]
        assert not long, f"{name}: lines longer than 100 columns (line, length): {long[:5]}"


def test_modules_parse_and_carry_no_unfolded_constants(modules):
    for name, text in modules.items():
        ast.parse(text)
        body = text[text.index('"""', text.index('"""') + 3) :]  # after the header docstring
        found = re.findall(r"math\.(?:pi|e|tau)\b|math\.\w+\(-?[\d.]+(?:e-?\d+)?\)", body)
        assert not found, f"{name}: unfolded numeric subexpressions {found}"


# --------------------------------------------------------------------------- legend and counts
def _legend(text):
    """{slot: name} of the explicit legend entries of a module header."""
    head = text[: text.index("Kernels and argument shapes")]
    return dict(re.findall(r"\b((?:x|theta)\[\d+\]) = (\S+)", head))


def test_legend_names_every_slot(model):
    text = render_module(build_spec(model))
    legend = _legend(text)
    expected = {f"x[{j}]": str(s) for j, s in enumerate(model.state)}
    expected.update({f"theta[{k}]": str(p) for k, p in enumerate(model.params)})
    assert legend == expected
    if model.name == "grn_bcell":
        assert "theta[13] = W[1,6]" in text


def test_legend_ranges_for_long_arrays():
    """Beyond 64 slots, runs of names with consecutive trailing integers become one entry."""
    names = [f"k{i}" for i in range(1000)]
    assert slot_entries("theta", names) == ["theta[0:1000] = k0 ... k999"]
    grid = [f"W[{i},{j}]" for i in range(50) for j in range(20)] + ["sigma", "c7", "c8"]
    entries = slot_entries("theta", grid)
    assert entries[0] == "theta[0:20] = W[0,0] ... W[0,19]"
    assert entries[49] == "theta[980:1000] = W[49,0] ... W[49,19]"
    assert entries[50:] == ["theta[1000] = sigma", "theta[1001] = c7", "theta[1002] = c8"]
    lines = legend_table(entries)
    assert len(lines) == 27 and max(map(len, lines)) <= 100  # two entries a line
    # the explicit form up to 64 slots, in aligned columns
    short = slot_entries("theta", names[:64])
    assert short[13] == "theta[13] = k13" and len(legend_table(short)) <= 13


def _function(text, name):
    start = text.index(f"\ndef {name}(")
    end = text.find("\n\n\n", start)
    return text[start : end if end > 0 else None]


def test_op_table_matches_the_printed_kernels(modules):
    """terms = intermediate assignments, written = output assignments of each printed kernel
    (those a loop over a matrix block writes are counted in its comment)."""
    for name, text in modules.items():
        rows = re.findall(r"^    (\w+_(?:point|lanes)) +(\d+) +(\d+) +(\d+) of (\d+) ", text, re.M)
        assert {r[0] for r in rows} >= {"drift_point", "drift_lanes"}, name
        for kernel, ops, terms, written, _total in rows:
            src = _function(text, kernel)
            assert f"# {ops} ops, {terms} intermediate terms, {written} of" in src
            assert len(re.findall(r"^ +t\d+ = ", src, re.M)) == int(terms), (name, kernel)
            in_loops = re.search(r"(\d+) outputs in loops\)", src)
            outputs = re.findall(r"^ +out\w*\[(?![^\]]*\b[jk]\b)(?!:)[^\]]*\] = ", src, re.M)
            assert len(outputs) + int(in_loops[1] if in_loops else 0) == int(written), (
                name,
                kernel,
            )


def test_op_count_of_a_small_kernel():
    """-a*x + 0.01*pi*y: NEG, two MUL, ADD after folding 0.01*pi into one literal, whose
    symbolic form the comment above the line keeps."""
    block = print_block([("out[0]", -a * x + sp.pi * y / 100)], SlotPrinter({}))
    assert block.ops == 4 and block.n_terms == 0 and block.n_written == 1
    assert block.lines == [
        "    # 0.031415926535897934 = pi/100",
        "    out[0] = -a*x + 0.031415926535897934*y",
    ]


# --------------------------------------------------------------------------- structural zeros
def test_structural_zeros_are_zeroed_not_written(models, compiled):
    """GRN: 21 of 147 entries of df/dtheta are nonzero; the kernel zeroes its output once, so
    callers passing np.empty (or NaN-filled) arrays get exact zeros (jit and py_func)."""
    m, cm = models["grn_bcell"], compiled["grn_bcell"]
    text = open(cm.path, encoding="utf-8").read()
    kernel = _function(text, "drift_jacobian_point")
    assert len(re.findall(r"^    out\[\d+, \d+\] = ", kernel, re.M)) == 21
    assert "    out[:] = 0.0\n" in kernel and " = 0\n" not in kernel
    X = np.random.default_rng(0).uniform(0.5, 2.0, (5, m.d))
    theta = np.asarray(m.nominal, dtype=float)
    reference = sp.lambdify([*m.state, *m.params], m.drift.jacobian(m.params), "numpy")
    jit = np.full((5, m.d, m.n), np.nan)
    cm.module.drift_jacobian(X, theta, jit)
    py = np.full((m.d, m.n), np.nan)
    for i in range(5):
        expected = np.asarray(reference(*X[i], *theta), dtype=float)
        cm.module.drift_jacobian_point.py_func(X[i], theta, py)
        np.testing.assert_allclose(jit[i], expected, rtol=1e-13, atol=0)
        np.testing.assert_array_equal(py, jit[i])
        assert np.array_equal(jit[i] == 0, expected == 0)


def test_zero_drift_component_and_zero_noise_entries(tmp_path):
    """em_b: f_1 = 0 and G(x)[0, 1] = 0 are never written; the simulator's buffers and the
    point kernels' outputs still hold exact zeros there (py_func, no compile)."""
    m = _other_models()[3]
    text = render_module(build_spec(m))
    assert "out[LANES + l] =" not in _function(text, "drift_lanes")
    assert "out[LANES + l] =" not in _function(text, "noise_lanes")  # G[0, 1]
    cm = ds.compile_model(m, str(tmp_path))
    out = np.full(2, np.nan)
    cm.module.drift_point.py_func(np.array([0.5, 1.0]), np.array([2.0]), out)
    assert out[1] == 0.0 and out[0] == -2.0 * 0.5**3
    G = np.full((2, 2), np.nan)
    cm.module.noise_point.py_func(np.array([0.5, 1.0]), G)
    np.testing.assert_array_equal(G[0, 1], 0.0)
    assert G[1, 1] == math.sqrt(2)


# --------------------------------------------------------------------------- folding, wrapping
def test_numeric_subexpressions_fold_to_literals():
    P = SlotPrinter({x: "x[0]"})
    cases = {
        sp.pi * x / 100: "0.031415926535897934*x[0]",
        -sp.sqrt(2) * x: "-1.4142135623730951*x[0]",
        sp.sin(2 * sp.pi * x): "math.sin(6.283185307179586*x[0])",
        # a numeric factor after a symbol, or in a denominator, is a literal of its own
        sp.log(2) * x**2: "x[0]**2*0.6931471805599453",
        sp.exp(-(x**2) / 2) / sp.sqrt(2 * sp.pi): (
            "0.7071067811865476*math.exp(-0.5*x[0]**2)/1.7724538509055159"
        ),
        x - sp.sqrt(2): "x[0] - 1.4142135623730951",
        sp.cos(3) ** x: "(-0.9899924966004454)**x[0]",
        x**2 + 9 / (1 + x**2): "x[0]**2 + 9/(x[0]**2 + 1)",  # plain numbers stay
        sp.sqrt(2) * (x + 1): "1.4142135623730951*(x[0] + 1)",  # not distributed
        sp.sqrt(2): "1.4142135623730951",
    }
    for expr, printed in cases.items():
        assert P.doprint(expr) == printed


_LEAVES = [sp.pi, sp.E, sp.sqrt(2), sp.log(3), sp.cos(3), sp.Rational(1, 3), sp.Integer(7), x, y]


@st.composite
def _numeric_expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_LEAVES))
    kind = draw(st.sampled_from(["mul", "add", "div", "pow", "sin", "exp"]))
    args = draw(st.lists(_numeric_expressions(depth=depth - 1), min_size=2, max_size=4))
    if kind == "mul":
        return sp.Mul(*args)
    if kind == "add":
        return sp.Add(*args)
    if kind == "div":
        return args[0] / (args[1] ** 2 + 1)
    if kind == "pow":
        return args[0] ** draw(st.sampled_from([2, 3, -1, sp.Rational(1, 2)]))
    return (sp.sin if kind == "sin" else sp.exp)(args[0] / 10)


@settings(max_examples=150)
@given(_numeric_expressions())
def test_folding_never_changes_a_result(expr):
    """Folded code computes bit for bit what the unfolded code computes (every literal is the
    double its printed subexpression evaluates to), and no numeric call or constant is left."""
    P = SlotPrinter({x: "x[0]", y: "x[1]"})
    raw = SlotPrinter({x: "x[0]", y: "x[1]"}, fold=False)
    folded, unfolded = P.doprint(expr), raw.doprint(expr)
    assert not re.search(r"math\.(?:pi|e)\b|math\.\w+\(-?[\d.]+\)", folded), folded
    for point in ([0.3, -1.7], [2.5, 0.01], [-0.9, 4.0]):
        env = {"math": math, "x": point}
        try:
            want = eval(unfolded, env)
        except (ArithmeticError, ValueError):
            continue
        got = eval(folded, env)
        assert got == want or (got != got and want != want), (unfolded, folded, point)


_ATOMS = ["x[0]", "theta[12]", "t7", "s[3]", "J[2, 5]", "0.0001", "2.6", "math.exp(x[1])"]


@st.composite
def _long_expressions(draw, depth=3):
    """Printed-looking Python expressions: sums, products, quotients, calls, powers."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(_ATOMS))
    kind = draw(st.sampled_from(["sum", "product", "call", "power", "group"]))
    parts = draw(st.lists(_long_expressions(depth=depth - 1), min_size=2, max_size=9))
    if kind == "sum":
        out = parts[0]
        for p in parts[1:]:
            out += draw(st.sampled_from([" + ", " - "])) + p
        return out
    if kind == "product":
        return "*".join(f"({p})" if " " in p else p for p in parts)
    if kind == "call":
        return f"math.atan2({parts[0]}, {' + '.join(parts[1:])})"
    if kind == "power":
        return f"({parts[0]})**2"
    return "-(" + " - ".join(parts) + ")/t3"


@settings(max_examples=150)
@given(_long_expressions(), st.sampled_from(["    ", " " * 8]))
def test_wrapping_keeps_the_syntax_tree(code, indent):
    """A wrapped assignment parses to exactly the tree of the one-line assignment (so it
    computes the same operations), and its lines fit in 100 columns."""
    lines = wrap_assignment("out[0]", code, indent)
    one = ast.dump(ast.parse(f"out[0] = {code}"))
    assert ast.dump(ast.parse("\n".join(s[len(indent) :] for s in lines))) == one
    assert max(map(len, lines)) <= 100


# --------------------------------------------------------------------------- names (issue 21)
_ALIAS = re.compile(r"^ +(\w+) = (x|theta|u)\[(?:(\d+)\*)?(LANES \+ l|l|\d+)\]$")


def _slot(array, factor, index):
    """Slot number of an alias's right-hand side: x[3], theta[13], x[l], x[2*LANES + l]."""
    if index == "l":
        return 0
    if index == "LANES + l":
        return int(factor or 1)
    return int(index)


def test_kernels_name_their_slots(modules):
    """Every slot a kernel reads is loaded once into a variable named after its symbol
    (``W[1,6]`` → ``W_1_6``, a clash with the kernel's own names gets ``_``); the formulas use
    the names, never the slots."""
    for name, text in modules.items():
        ns = {}
        exec(text[text.index("STATE = ") : text.index("IS_AFFINE")], ns)
        symbols = {"x": ns["STATE"], "theta": ns["PARAMS"], "u": ns["INPUTS"]}
        for kernel in re.findall(r"^def (\w+_(?:point|lanes))\(", text, re.M):
            src = _function(text, kernel).splitlines()
            aliases = [(i, _ALIAS.match(line)) for i, line in enumerate(src)]
            aliases = {i: m for i, m in aliases if m}
            for m in aliases.values():
                alias, array, factor, index = m.groups()
                wanted = re.sub(
                    r"_+", "_", re.sub(r"\W", "_", symbols[array][_slot(*m.groups()[1:])])
                )
                assert alias.rstrip("_") == wanted.strip("_"), (name, kernel, m.group(0))
            names = [m.group(1) for m in aliases.values()]
            assert len(names) == len(set(names)), (name, kernel)
            for i, line in enumerate(src):
                if i in aliases or line.lstrip().startswith("#"):
                    continue
                assert not re.search(r"\b(?:x|u)\[\d|\bx\[(?:\d+\*)?(?:LANES \+ )?l\]", line), (
                    name,
                    kernel,
                    line,
                )
                if "for " not in line and "theta[k]" not in line and "theta[j*" not in line:
                    assert not re.search(r"\btheta\[\d", line), (name, kernel, line)


def test_constants_keep_their_symbolic_form(modules):
    grn = next(t for k, t in modules.items() if k.startswith("generated/grn_bcell"))
    assert "    W_1_6 = theta[13]\n" in grn and "    p = x[0]\n" in grn
    assert "    t14 = 0.031415926535897934  # pi/100\n" in grn
    assert "    # 1.4142135623730951 = sqrt(2)\n    t16 = 1.4142135623730951*t14\n" in grn
    P = SlotPrinter({x: "x"})
    block = print_block([("out[0]", x / 3 + sp.Rational(1, 4) * x**2)], P)
    assert block.lines[0] == "    # 0.3333333333333333 = 1/3"  # 1/4 reads back exactly: no note
