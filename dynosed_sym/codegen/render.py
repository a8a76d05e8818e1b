"""Printed source: render a :class:`~dynosed_sym.codegen.spec.KernelSpec` into the text of a
Python module of Numba kernels (the "how to print"; :mod:`.files` writes and names it).

Output is deterministic: same model ⇒ byte-identical text.  Lines stay within 100 columns
(:mod:`.wrapping`), numeric subexpressions are folded (:mod:`.printer`), structurally zero
outputs are not written (the output array is zeroed once instead), and the header carries a
slot legend and the operation counts of every printed kernel (:mod:`.legend`).  A kernel names
the slots it reads (``W_1_6 = theta[13]``, ``p = x[0]``), and a model's known inputs are its
last argument ``u`` (one module whatever their values).  Matrix parameters of a large block are
printed as loops (:mod:`.structured`).
"""

from __future__ import annotations

import dataclasses
import textwrap

from . import structured as S
from . import templates as T
from .files import content_hash_of
from .legend import (
    inputs_read,
    ints_tuple,
    legend_table,
    names_tuple,
    op_table,
    slot_entries,
)
from .printer import SlotPrinter, alias_lines, alias_names, print_block
from .spec import GENERATOR_VERSION, KernelSpec
from .wrapping import WIDTH, pack_items

__all__ = ["render_module"]


def _docstring(text, indent="    "):
    """A docstring at ``indent``: one line when it fits, else wrapped at 100 columns."""
    if len(f'{indent}"""{text}"""') <= WIDTH:
        return f'"""{text}"""'
    lines = textwrap.wrap(text, WIDTH - len(indent), initial_indent='"""', break_on_hyphens=False)
    body = ("\n" + indent).join(lines)
    return body + ('"""' if len(indent + lines[-1]) + 3 <= WIDTH else f'\n{indent}"""')


def _counts(block, loop_ops, loop_writes):
    text = (
        f"# {block.ops} ops, {block.n_terms} intermediate terms, "
        f"{block.n_written} of {block.n_outputs} outputs written"
    )
    parts = [f"{loop_ops} ops"] if loop_ops else []
    parts += [f"{loop_writes} outputs"] if loop_writes else []
    return text + (f" ({', '.join(parts)} in loops)" if parts else "")


def _zeroing(block, forced=(), indent="    "):
    """``out[:] = 0.0`` for each output array with structurally zero entries."""
    arrays = dict.fromkeys([t.split("[")[0] for t in block.skipped] + list(forced))
    return "".join(f"{indent}{a}[:] = 0.0\n" for a in arrays)


def _batch_function(fname, point, args, doc):
    return T.BATCH_FUNCTION.format(
        decorator=T.BATCH_DECORATOR,
        fname=fname,
        point=point,
        args=args,
        call_args=", ".join(f"{a}[i]" if a.startswith("out") else a for a in args.split(", ")),
        doc=_docstring(doc),
    )


def _fmt_terms(terms):
    """Tuples of (ints..., coefficient) with the coefficient as a full-precision float."""
    rows = []
    for t in terms:
        *idx, c = t
        rows.append("(" + ", ".join(str(int(i)) for i in idx) + f", {float(c)!r})")
    if not rows:
        return "()"
    return "(\n    " + ",\n    ".join(rows) + ",\n)"


def _lane_slot(array, row):
    """Slot of row ``row`` of lane l in a flat lane buffer: x[l], x[LANES + l], x[2*LANES + l]."""
    if row == 0:
        return f"{array}[l]"
    return f"{array}[{'' if row == 1 else f'{row}*'}LANES + l]"


def _kernel_doc(names, fmt, with_u):
    """The kernel list of the header: call, then its argument shapes from column 45."""
    lines, col = [], " " * (4 + T.KERNEL_DOC_WIDTH)
    for name in names:
        call, shapes = T.KERNEL_DOCS[name]
        if with_u:
            call, shapes = call[:-1] + ", u)", tuple(shapes) + ("u ({n_u},)",)
        packed = pack_items([s.format(**fmt) for s in shapes], col)
        first = f"    {call}".ljust(len(col))
        if len(first) > len(col):
            lines.append(first.rstrip())
        else:
            packed[0] = first + packed[0].lstrip()
        lines += packed
    return "\n".join(lines)


class _Module:
    """Collects the printed kernels of one module and the rows of its operation table."""

    def __init__(self, spec):
        self.spec = spec
        self.parts, self.rows = [], []
        named = list(spec.state) + list(spec.params) + list(spec.inputs)
        self.aliases = alias_names(named)
        self.slots = {s: f"x[{j}]" for j, s in enumerate(spec.state)}
        self.slots.update({p: f"theta[{k}]" for k, p in enumerate(spec.params)})
        self.slots.update({v: f"u[{i}]" for i, v in enumerate(spec.inputs)})
        self.u = ", u" if spec.inputs else ""
        self.x_theta = [("x", tuple(spec.state)), ("theta", tuple(spec.params))]
        self.x_only = [("x", tuple(spec.state))]
        if spec.inputs:
            self.x_theta.append(("u", tuple(spec.inputs)))
            self.x_only.append(("u", tuple(spec.inputs)))

    def point(self, fname, args, doc, outputs, inputs, extra=None, lanes=False, **structure):
        """Print a point kernel (or, with ``lanes``, a lane kernel of the simulator).

        ``extra``: slots of other symbols (score, Jacobian); ``structure``: ``pre`` / ``loops``
        lines before and after the printed block, ``keep`` targets written even when zero,
        ``zero`` arrays zeroed first, ``n_outputs`` (default: all outputs), ``loop_ops``,
        ``loop_writes`` (outputs the loops assign) and ``loop_reads`` (symbols the loops read).
        """
        indent = " " * (8 if lanes else 4)
        slots = dict(self.slots)
        if lanes:
            slots.update({s: _lane_slot("x", j) for j, s in enumerate(self.spec.state)})
        names = {s: self.aliases[s] for s in slots}
        names.update(extra or {})
        block = print_block(
            outputs, SlotPrinter(names), indent=indent, keep=structure.get("keep", ())
        )
        written = sum(1 for t, e in outputs if t.startswith("out") and t not in block.skipped)
        loop_writes = structure.get("loop_writes", 0)
        block = dataclasses.replace(
            block,
            ops=block.ops + structure.get("loop_ops", 0),
            n_outputs=structure.get("n_outputs", len(outputs)),
            n_written=(written if "n_outputs" in structure else block.n_written) + loop_writes,
        )
        read = dataclasses.replace(
            block, symbols=block.symbols | frozenset(structure.get("loop_reads", ()))
        )
        state = {s: self.aliases[s] for s in self.spec.state}
        other = {s: a for s, a in self.aliases.items() if s not in state}
        fmt = dict(
            decorator=T.POINT_DECORATOR,
            fname=fname,
            args=args + self.u,
            doc=_docstring(doc),
            counts=_counts(block, structure.get("loop_ops", 0), loop_writes),
        )
        loops = structure.get("loops", [])
        if lanes:
            pre = alias_lines(other, slots, block.symbols, "    ")
            body = alias_lines(state, slots, block.symbols, indent) + block.lines
            fmt.update(
                pre="".join(line + "\n" for line in pre),
                body="\n".join(body) or f"{indent}pass",
                post="".join(line + "\n" for line in loops),
            )
            self.parts.append(T.LANE_FUNCTION.format(**fmt))
        else:
            body = alias_lines(self.aliases, slots, block.symbols, indent)
            body += list(structure.get("pre", ())) + block.lines + loops
            fmt.update(
                zero=_zeroing(block, structure.get("zero", ())),
                body="\n".join(body) or f"{indent}pass",
            )
            self.parts.append(T.POINT_FUNCTION.format(**fmt))
        self.rows.append((fname, block, inputs_read(read, inputs)))


def _probe_slots(pieces, d):
    """Array slots of the local-route kernels' probe inputs: score s, its Jacobian J, dlogp_dt."""
    slots = {sym: f"s[{j}]" for j, sym in enumerate(pieces.score)}
    slots.update({sym: f"J[{q // d}, {q % d}]" for q, sym in enumerate(pieces.jacobian)})
    slots[pieces.dlogp_dt] = "dlogp_dt"
    return slots


def _local_inputs(mod, pieces, with_theta):
    arrays = [
        ("x", tuple(mod.spec.state)),
        ("s", tuple(pieces.score)),
        ("J", tuple(pieces.jacobian)),
        ("dlogp_dt", pieces.dlogp_dt),
    ]
    arrays += [("theta", tuple(mod.spec.params))] if with_theta else []
    return arrays + ([("u", tuple(mod.spec.inputs))] if mod.spec.inputs else [])


def _block_params(spec):
    return [spec.params[k] for blk in spec.blocks for k in blk.columns]


def _render_drift(spec, mod, d, n):
    """drift_point and drift (unrolled, or with the matrix blocks as loops)."""
    doc = f"Drift f(x; theta) at one point: x ({d},), theta ({n},), out ({d},)."
    structure = {}
    if not spec.blocks:
        outputs = [(f"out[{j}]", spec.drift[j]) for j in range(d)]
    else:
        pieces, blocks = spec.structured, spec.blocks
        outputs = S.basis_outputs(blocks) + [(f"out[{j}]", pieces.drift[j]) for j in range(d)]
        structure = dict(
            loops=S.drift_loops(spec.params, blocks),
            keep={f"out[{i}]" for blk in blocks for i in blk.rows},
            n_outputs=d,
            loop_ops=S.loop_ops(blocks, "drift"),
            loop_reads=_block_params(spec),
        )
    batch_doc = f"Drift at N points: X (N, {d}), theta ({n},), out (N, {d})."
    _theta_kernel(mod, "drift", doc, outputs, batch_doc, spec.blocks, **structure)


def _render_jacobian(spec, mod, d, n):
    doc = (
        f"Jacobian df/dtheta at one point: x ({d},), theta ({n},), out ({d}, {n}) with "
        "out[j, k] = df_j/dtheta_k."
    )
    structure = {}
    if not spec.blocks:
        Jf = spec.jacobian
        outputs = [(f"out[{j}, {k}]", Jf[j, k]) for j in range(d) for k in range(n)]
    else:
        blocks = spec.blocks
        outputs = S.basis_outputs(blocks)
        outputs += [(f"out[{j}, {k}]", e) for (j, k), e in sorted(spec.structured.jacobian.items())]
        structure = dict(
            loops=S.jacobian_loops(spec.params, blocks),
            zero=("out",),
            n_outputs=d * n,
            loop_ops=S.loop_ops(blocks, "jacobian"),
            loop_writes=sum(blk.size for blk in blocks),
        )
    batch_doc = f"df/dtheta at N points: X (N, {d}), theta ({n},), out (N, {d}, {n})."
    _theta_kernel(mod, "drift_jacobian", doc, outputs, batch_doc, spec.blocks, **structure)


def _theta_kernel(mod, name, doc, outputs, batch_doc, blocks, **structure):
    """``{name}_point(x, theta, out)`` and its batch ``{name}(X, theta, out)``: unrolled, or with
    the work arrays of the matrix ``blocks`` first and the loops of ``structure``."""
    if blocks:
        structure["pre"] = S.allocations(blocks)
    mod.point(f"{name}_point", "x, theta, out", doc, outputs, mod.x_theta, **structure)
    mod.parts.append(_batch_function(name, f"{name}_point", "theta, out" + mod.u, batch_doc))


def _render_stein(spec, mod, d):
    """stein_features_point, stein_features and the contraction tables; (n_sin, n_cos, text)."""
    st = spec.stein
    n_sin, n_cos = len(st.sin_features), len(st.cos_features)
    outputs = [(f"out_sin[{e}]", ex) for e, ex in enumerate(st.sin_features)]
    outputs += [(f"out_cos[{e}]", ex) for e, ex in enumerate(st.cos_features)]
    mod.point(
        "stein_features_point",
        "x, out_sin, out_cos",
        f"x-dependent factors of the Stein features at one point: x ({d},), "
        f"out_sin ({n_sin},), out_cos ({n_cos},).",
        outputs,
        mod.x_only,
    )
    mod.parts.append(
        _batch_function(
            "stein_features",
            "stein_features_point",
            "out_sin, out_cos" + mod.u,
            f"Stein-feature factors at N points: X (N, {d}), out_sin (N, {n_sin}), "
            f"out_cos (N, {n_cos}).",
        )
    )
    inside = {k for blk in spec.blocks for k in blk.columns}
    sin_index = {phi: e for e, phi in enumerate(st.sin_features)}
    tables = T.STEIN_TABLES.format(
        a_terms=_fmt_terms([t for t in st.a_terms if t[2] not in inside]),
        a_blocks=S.a_blocks_table(spec.blocks, sin_index),
        b_sin_terms=_fmt_terms(st.b_sin_terms),
        b_cos_terms=_fmt_terms(st.b_cos_terms),
    )
    return n_sin, n_cos, tables


def _render_local(spec, mod, d, n):
    """local_row_point and local_rows (affine models)."""
    lp = spec.local if not spec.blocks else None
    doc = (
        f"Local-route row at one probe: x ({d},), score s ({d},), Jacobian J ({d}, {d}) "
        f"with J[j, l] = ds_j/dx_l, dlogp_dt scalar; out_a ({n},) = a(x), out_b (1,) = beta(x)."
    )
    pieces = _Probe(lp.score, lp.jacobian, lp.dlogp_dt) if lp else _Probe(*_symbols(d))
    args = "x, s, J, dlogp_dt, out_a, out_b"
    if lp is not None:
        outputs = [(f"out_a[{k}]", ex) for k, ex in enumerate(lp.a)] + [("out_b[0]", lp.beta)]
        _probe_point(mod, "local_row_point", args, doc, outputs, pieces, d, False)
    else:
        st, blocks = spec.structured, spec.blocks
        inside = {k for blk in blocks for k in blk.columns}
        rest = [(f"out_a[{k}]", st.a.get(k, 0)) for k in range(n) if k not in inside]
        outputs = S.basis_outputs(blocks) + S.dbasis_outputs(blocks) + rest
        _probe_point(
            mod,
            "local_row_point",
            args,
            doc,
            outputs + [("out_b[0]", st.beta)],
            pieces,
            d,
            False,
            blocks=blocks,
            loops=S.local_loops(spec.params, blocks, "out_a"),
            n_outputs=n + 1,
            loop_ops=S.loop_ops(blocks, "local"),
        )
    mod.parts.append(
        T.LOCAL_BATCH_FUNCTION.format(decorator=T.BATCH_DECORATOR, d=d, n=n, **_u_fmt(spec))
    )


def _probe_point(mod, name, args, doc, outputs, pieces, d, residual, blocks=None, **structure):
    """``mod.point`` of a local-route kernel at one probe (the probe's score, Jacobian and
    ∂ₜlog p as slots; θ an input of the ``residual`` one); with structured ``blocks``, their
    work arrays before the printed block and the outputs their loops write."""
    if blocks is not None:
        structure.update(pre=S.allocations(blocks), loop_writes=sum(blk.size for blk in blocks))
    mod.point(
        name,
        args,
        doc,
        outputs,
        _local_inputs(mod, pieces, residual),
        extra=_probe_slots(pieces, d),
        **structure,
    )


def _render_local_residual(spec, mod, d, n):
    """local_residual_point and local_residual (every model)."""
    args = "x, s, J, dlogp_dt, theta, out_r, out_dr"
    doc = (
        f"Local residual and its theta-gradient at one probe: x ({d},), score s ({d},), "
        f"Jacobian J ({d}, {d}), dlogp_dt scalar, theta ({n},); out_r (1,) = R, "
        f"out_dr ({n},) = dR/dtheta."
    )
    if not spec.blocks:
        lr = spec.local_residual
        outputs = [("out_r[0]", lr.residual)]
        outputs += [(f"out_dr[{k}]", ex) for k, ex in enumerate(lr.gradient)]
        pieces = _Probe(lr.score, lr.jacobian, lr.dlogp_dt)
        _probe_point(mod, "local_residual_point", args, doc, outputs, pieces, d, True)
    else:
        st, blocks = spec.structured, spec.blocks
        pieces = _Probe(*_symbols(d))
        inside = {k for blk in blocks for k in blk.columns}
        outputs = S.basis_outputs(blocks) + S.dbasis_outputs(blocks)
        outputs += [("out_r[0]", st.residual)]
        outputs += [(f"out_dr[{k}]", st.gradient.get(k, 0)) for k in range(n) if k not in inside]
        _probe_point(
            mod,
            "local_residual_point",
            args,
            doc,
            outputs,
            pieces,
            d,
            True,
            blocks=blocks,
            loops=S.local_loops(spec.params, blocks, "out_dr", residual="out_r[0]"),
            keep={"out_r[0]"},
            n_outputs=n + 1,
            loop_ops=S.loop_ops(blocks, "residual"),
            loop_reads=_block_params(spec),
        )
    mod.parts.append(
        T.LOCAL_RESIDUAL_BATCH_FUNCTION.format(
            decorator=T.SERIAL_BATCH_DECORATOR, d=d, n=n, **_u_fmt(spec)
        )
    )


@dataclasses.dataclass
class _Probe:
    """The score, Jacobian and ∂ₜlog p symbols of the local kernels."""

    score: tuple
    jacobian: tuple
    dlogp_dt: object


def _symbols(d):
    from ..model.derivation import local_symbols

    return local_symbols(d)


def _u_fmt(spec):
    if not spec.inputs:
        return {"u": "", "u_doc": ""}
    return {"u": ", u", "u_doc": f";\n    u ({len(spec.inputs)},) the known inputs"}


def _render_kernels(spec, mod, d, n):
    """Print every kernel of ``spec`` into ``mod``; returns (n_sin, n_cos, tables, kernel names)."""
    names = ["drift"]
    _render_drift(spec, mod, d, n)
    if spec.jacobian is not None:
        names.append("drift_jacobian")
        _render_jacobian(spec, mod, d, n)
    n_sin = n_cos = 0
    tables = ""
    if spec.stein is not None:
        names.append("stein_features")
        n_sin, n_cos, tables = _render_stein(spec, mod, d)
    if spec.is_affine:
        names.append("local_rows")
        _render_local(spec, mod, d, n)
    names.append("local_residual")
    _render_local_residual(spec, mod, d, n)
    return n_sin, n_cos, tables, names


def _render_lanes(spec, mod, d, n):
    """drift_lanes: unrolled, or with the blocks' basis functions in ``work`` and loops."""
    doc = (
        f"Simulator: drift at lanes l < nl of a block of chains, x ({d}*LANES,) with state j of "
        f"lane l at x[j*LANES+l], theta ({n},), out ({d}*LANES,); structurally zero "
        "components are not written (open_block zeroes out)."
    )
    if not spec.blocks:
        outputs = [(_lane_slot("out", j), spec.drift[j]) for j in range(d)]
        mod.point("drift_lanes", "x, theta, out, nl", doc, outputs, mod.x_theta, lanes=True)
        return 0
    blocks = spec.blocks
    outputs = S.basis_outputs(blocks, lambda q: _lane_slot("work", q))
    outputs += [(_lane_slot("out", j), spec.structured.drift[j]) for j in range(d)]
    mod.point(
        "drift_lanes",
        "x, theta, out, nl, work, nz_row, nz_basis, nz_w",
        doc + " work (K*LANES,): the blocks' basis functions; nz_*: block_weights(theta).",
        outputs,
        mod.x_theta,
        lanes=True,
        loops=S.lane_loops(spec.params, blocks),
        keep={_lane_slot("out", i) for blk in blocks for i in blk.rows},
        n_outputs=d,
        loop_ops=S.loop_ops(blocks, "lanes"),
        loop_reads=_block_params(spec),
    )
    return sum(blk.shape[1] for blk in blocks)


def _render_simulator(spec, mod, d, n, dn):
    """The noise kernel (state-dependent G), the lane kernels and ``simulate_chains``."""
    if spec.noise is not None:
        G = spec.noise
        mod.point(
            "noise_point",
            "x, out",
            f"State-dependent noise matrix G(x): x ({d},), out ({d}, {dn}).",
            [(f"out[{i}, {q}]", G[i, q]) for i in range(d) for q in range(dn)],
            mod.x_only,
        )
    n_basis = _render_lanes(spec, mod, d, n)
    if spec.noise is not None:
        mod.point(
            "noise_lanes",
            "x, out, nl",
            f"G(x) at lanes l < nl of a block: x ({d}*LANES,), out ({d}*{dn}*LANES,), "
            f"G[i, q] at out[(i*{dn}+q)*LANES+l]; zero entries are not written.",
            [
                (_lane_slot("out", i * dn + q), spec.noise[i, q])
                for i in range(d)
                for q in range(dn)
            ],
            mod.x_only,
            lanes=True,
        )
        scheme, g_note, steps = "Euler-Maruyama with G(x)", " (unused)", T.EM_STEPS
    else:
        scheme, g_note, steps = "RK4 drift plus Euler-Maruyama noise", "", T.RK4_STEPS
    lane_args = (", work, nz_row, nz_basis, nz_w" if n_basis else "") + mod.u
    steps = steps.format(lane_args=lane_args, u=mod.u)
    work = T.WORK_BUFFER.format(n_basis=n_basis) if n_basis else ""
    if n_basis:
        mod.parts.append(S.weights_function(spec.params, spec.blocks, T.POINT_DECORATOR))
    mod.parts.append(
        T.SIMULATOR.format(
            scheme=scheme,
            d=d,
            n=n,
            dn=dn,
            g_note=g_note,
            steps=steps,
            work=work,
            weights=T.WEIGHTS_CALL if n_basis else "",
            **_u_fmt(spec),
        )
    )


def _legend(spec, d, dn):
    entries = slot_entries("x", [str(s) for s in spec.state])
    lines = legend_table(entries)
    lines += legend_table(slot_entries("theta", [str(p) for p in spec.params]))
    if spec.inputs:
        lines += legend_table(slot_entries("u", [str(v) for v in spec.inputs]))
    lines.append(
        "    a kernel names the slots it reads: state, parameter and input names as Python names"
    )
    lines.append(
        "    local kernels: s[j] = d log p/dx[j] (score), J[j, l] = ds[j]/dx[l], "
        "dlogp_dt = d log p/dt"
    )
    lines.append("    lane kernels (simulator): x[j*LANES + l] = x[j] of lane l, LANES = 64")
    if spec.noise is not None:
        lines.append(
            f"    noise: G(x) ({d}, {dn}) = noise_point(x, out), out[i, q] = G[i, q]; "
            f"lanes: out[(i*{dn} + q)*LANES + l]"
        )
    else:
        lines.append(
            f"    noise: G ({d}, {dn}) constant, simulate_chains's argument "
            "(CompiledModel.noise_matrix)"
        )
    lines.append("    one step adds sqrt(dt) * G[i, q] * eta[q] to x[i] (eta standard normal)")
    return "\n".join(lines)


def render_module(spec: KernelSpec) -> str:
    """Full text of the generated module for ``spec`` (banner included)."""
    d, n, dn = len(spec.state), len(spec.params), spec.noise_dim
    mod = _Module(spec)
    n_sin, n_cos, tables, names = _render_kernels(spec, mod, d, n)
    _render_simulator(spec, mod, d, n, dn)
    fmt = {"d": d, "n": n, "dn": dn, "n_sin": n_sin, "n_cos": n_cos, "n_u": len(spec.inputs)}
    header = T.HEADER.format(
        name=spec.name,
        hash=spec.hash,
        version=GENERATOR_VERSION,
        d=d,
        n=n,
        affine=spec.is_affine,
        n_sin=n_sin,
        n_cos=n_cos,
        dn=dn,
        legend=_legend(spec, d, dn),
        kernel_doc=_kernel_doc(names + ["simulate_chains"], fmt, bool(spec.inputs)),
        op_table="\n".join(op_table(mod.rows)),
        state_tuple=names_tuple(spec.state),
        param_tuple=names_tuple(spec.params),
        input_tuple=names_tuple(spec.inputs),
        state_noise=spec.noise is not None,
        separable=ints_tuple(spec.separable),
        block_constants=S.block_constants(spec.blocks),
    )
    body = header + tables + "".join(mod.parts)
    banner = T.BANNER.format(
        version=GENERATOR_VERSION,
        template=T.TEMPLATE_NAME,
        name=spec.name,
        hash=spec.hash,
        content_hash=content_hash_of(body),
    )
    return banner + body
