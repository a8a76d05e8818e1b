"""Printed source: render a :class:`~dynosed_sym.codegen.spec.KernelSpec` into the text of a
Python module of Numba kernels (the "how to print"; :mod:`.files` writes and names it).

Output is deterministic: same model ⇒ byte-identical text.  Lines stay within 100 columns
(:mod:`.wrapping`), numeric subexpressions are folded (:mod:`.printer`), structurally zero
outputs are not written (the output array is zeroed once instead), and the header carries a
slot legend and the operation counts of every printed kernel (:mod:`.legend`).
"""

from __future__ import annotations

import textwrap

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
from .printer import SlotPrinter, print_block
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


def _counts(block):
    return (
        f"# {block.ops} ops, {block.n_terms} intermediate terms, "
        f"{block.n_written} of {block.n_outputs} outputs written"
    )


def _zeroing(block, indent="    "):
    """``out[:] = 0.0`` for each output array with structurally zero entries."""
    arrays = dict.fromkeys(t.split("[")[0] for t in block.skipped)
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


def _probe_slots(slots_x, pieces, d):
    """Array slots of the local-route kernels' inputs: x, score s, its Jacobian J and dlogp_dt."""
    slots = dict(slots_x)
    slots.update({sym: f"s[{j}]" for j, sym in enumerate(pieces.score)})
    slots.update({sym: f"J[{q // d}, {q % d}]" for q, sym in enumerate(pieces.jacobian)})
    slots[pieces.dlogp_dt] = "dlogp_dt"
    return slots


def _lane_slot(array, row):
    """Slot of row ``row`` of lane l in a flat lane buffer: x[l], x[LANES + l], x[2*LANES + l]."""
    if row == 0:
        return f"{array}[l]"
    return f"{array}[{'' if row == 1 else f'{row}*'}LANES + l]"


def _kernel_doc(names, fmt):
    """The kernel list of the header: call, then its argument shapes from column 45."""
    lines, col = [], " " * (4 + T.KERNEL_DOC_WIDTH)
    for name in names:
        call, shapes = T.KERNEL_DOCS[name]
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
        self.slots_x = {s: f"x[{j}]" for j, s in enumerate(spec.state)}
        self.slots_x.update({p: f"theta[{k}]" for k, p in enumerate(spec.params)})
        self.x_theta = [("x", tuple(spec.state)), ("theta", tuple(spec.params))]

    def point(self, fname, args, doc, outputs, slots, inputs, lanes=False):
        """Print a point kernel (or, with ``lanes``, a lane kernel of the simulator)."""
        indent = " " * (8 if lanes else 4)
        block = print_block(outputs, SlotPrinter(slots), indent=indent)
        self.parts.append(
            (T.LANE_FUNCTION if lanes else T.POINT_FUNCTION).format(
                decorator=T.POINT_DECORATOR,
                fname=fname,
                args=args,
                doc=_docstring(doc),
                counts=_counts(block),
                zero=_zeroing(block),
                body="\n".join(block.lines) or f"{indent}pass",
            )
        )
        self.rows.append((fname, block, inputs_read(block, inputs)))


def _local_inputs(spec, pieces, with_theta):
    arrays = [
        ("x", tuple(spec.state)),
        ("s", tuple(pieces.score)),
        ("J", tuple(pieces.jacobian)),
        ("dlogp_dt", pieces.dlogp_dt),
    ]
    return arrays + ([("theta", tuple(spec.params))] if with_theta else [])


def _render_kernels(spec, mod, d, n):
    """Print every kernel of ``spec`` into ``mod``; returns (n_sin, n_cos, tables, kernel names)."""
    names = ["drift"]
    mod.point(
        "drift_point",
        "x, theta, out",
        f"Drift f(x; theta) at one point: x ({d},), theta ({n},), out ({d},).",
        [(f"out[{j}]", spec.drift[j]) for j in range(d)],
        mod.slots_x,
        mod.x_theta,
    )
    mod.parts.append(
        _batch_function(
            "drift",
            "drift_point",
            "theta, out",
            f"Drift at N points: X (N, {d}), theta ({n},), out (N, {d}).",
        )
    )
    if spec.jacobian is not None:
        names.append("drift_jacobian")
        Jf = spec.jacobian
        mod.point(
            "drift_jacobian_point",
            "x, theta, out",
            f"Jacobian df/dtheta at one point: x ({d},), theta ({n},), out ({d}, {n}) with "
            "out[j, k] = df_j/dtheta_k.",
            [(f"out[{j}, {k}]", Jf[j, k]) for j in range(d) for k in range(n)],
            mod.slots_x,
            mod.x_theta,
        )
        mod.parts.append(
            _batch_function(
                "drift_jacobian",
                "drift_jacobian_point",
                "theta, out",
                f"df/dtheta at N points: X (N, {d}), theta ({n},), out (N, {d}, {n}).",
            )
        )

    n_sin = n_cos = 0
    tables = ""
    if spec.stein is not None:
        names.append("stein_features")
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
            mod.slots_x,
            mod.x_theta[:1],
        )
        mod.parts.append(
            _batch_function(
                "stein_features",
                "stein_features_point",
                "out_sin, out_cos",
                f"Stein-feature factors at N points: X (N, {d}), out_sin (N, {n_sin}), "
                f"out_cos (N, {n_cos}).",
            )
        )
        tables = T.STEIN_TABLES.format(
            a_terms=_fmt_terms(st.a_terms),
            b_sin_terms=_fmt_terms(st.b_sin_terms),
            b_cos_terms=_fmt_terms(st.b_cos_terms),
        )

    if spec.local is not None:
        names.append("local_rows")
        lp = spec.local
        outputs = [(f"out_a[{k}]", ex) for k, ex in enumerate(lp.a)] + [("out_b[0]", lp.beta)]
        mod.point(
            "local_row_point",
            "x, s, J, dlogp_dt, out_a, out_b",
            f"Local-route row at one probe: x ({d},), score s ({d},), Jacobian J ({d}, {d}) "
            f"with J[j, l] = ds_j/dx_l, dlogp_dt scalar; out_a ({n},) = a(x), "
            "out_b (1,) = beta(x).",
            outputs,
            _probe_slots(mod.slots_x, lp, d),
            _local_inputs(spec, lp, False),
        )
        mod.parts.append(T.LOCAL_BATCH_FUNCTION.format(decorator=T.BATCH_DECORATOR, d=d, n=n))

    if spec.local_residual is not None:
        names.append("local_residual")
        lr = spec.local_residual
        outputs = [("out_r[0]", lr.residual)]
        outputs += [(f"out_dr[{k}]", ex) for k, ex in enumerate(lr.gradient)]
        mod.point(
            "local_residual_point",
            "x, s, J, dlogp_dt, theta, out_r, out_dr",
            f"Local residual and its theta-gradient at one probe: x ({d},), score s ({d},), "
            f"Jacobian J ({d}, {d}), dlogp_dt scalar, theta ({n},); out_r (1,) = R, "
            f"out_dr ({n},) = dR/dtheta.",
            outputs,
            _probe_slots(mod.slots_x, lr, d),
            _local_inputs(spec, lr, True),
        )
        mod.parts.append(
            T.LOCAL_RESIDUAL_BATCH_FUNCTION.format(decorator=T.SERIAL_BATCH_DECORATOR, d=d, n=n)
        )
    return n_sin, n_cos, tables, names


def _render_simulator(spec, mod, d, n, dn):
    """The noise kernel (state-dependent G), the lane kernels and ``simulate_chains``."""
    if spec.noise is not None:
        G = spec.noise
        mod.point(
            "noise_point",
            "x, out",
            f"State-dependent noise matrix G(x): x ({d},), out ({d}, {dn}).",
            [(f"out[{i}, {q}]", G[i, q]) for i in range(d) for q in range(dn)],
            mod.slots_x,
            mod.x_theta[:1],
        )
    slots_lane = {s: _lane_slot("x", j) for j, s in enumerate(spec.state)}
    slots_lane.update({p: f"theta[{k}]" for k, p in enumerate(spec.params)})
    mod.point(
        "drift_lanes",
        "x, theta, out, nl",
        f"Simulator: drift at lanes l < nl of a block of chains, x ({d}*LANES,) with state j of "
        f"lane l at x[j*LANES+l], theta ({n},), out ({d}*LANES,); structurally zero "
        "components are not written (open_block zeroes out).",
        [(_lane_slot("out", j), spec.drift[j]) for j in range(d)],
        slots_lane,
        mod.x_theta,
        lanes=True,
    )
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
            slots_lane,
            mod.x_theta[:1],
            lanes=True,
        )
        scheme, g_note, steps = "Euler-Maruyama with G(x)", " (unused)", T.EM_STEPS
    else:
        scheme, g_note, steps = "RK4 drift plus Euler-Maruyama noise", "", T.RK4_STEPS
    mod.parts.append(T.SIMULATOR.format(scheme=scheme, d=d, n=n, dn=dn, g_note=g_note, steps=steps))


def _legend(spec, d, dn):
    entries = slot_entries("x", [str(s) for s in spec.state])
    lines = legend_table(entries)
    lines += legend_table(slot_entries("theta", [str(p) for p in spec.params]))
    if spec.local is not None or spec.local_residual is not None:
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
    d, n = len(spec.state), len(spec.params)
    dn = spec.noise.shape[1] if spec.noise is not None else spec.constant_noise.shape[1]
    mod = _Module(spec)
    n_sin, n_cos, tables, names = _render_kernels(spec, mod, d, n)
    _render_simulator(spec, mod, d, n, dn)
    fmt = {"d": d, "n": n, "dn": dn, "n_sin": n_sin, "n_cos": n_cos}
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
        kernel_doc=_kernel_doc(names + ["simulate_chains"], fmt),
        op_table="\n".join(op_table(mod.rows)),
        state_tuple=names_tuple(spec.state),
        param_tuple=names_tuple(spec.params),
        state_noise=spec.noise is not None,
        separable=ints_tuple(spec.separable),
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
