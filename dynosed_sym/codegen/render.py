"""Printed source: render a :class:`~dynosed_sym.codegen.spec.KernelSpec` into the text of a
Python module of Numba kernels (the "how to print"; :mod:`.files` writes and names it).

Output is deterministic: same model ⇒ byte-identical text.
"""

from __future__ import annotations

from . import templates as T
from .files import content_hash_of
from .printer import SlotPrinter, cse_block
from .spec import GENERATOR_VERSION, KernelSpec

__all__ = ["render_module"]


def _point_function(fname, args, doc, outputs, slots):
    lines, n_ops = cse_block(outputs, SlotPrinter(slots))
    if not lines:
        lines = ["    pass"]
    src = T.POINT_FUNCTION.format(
        opts=T.POINT_OPTS, fname=fname, args=args, doc=doc, body="\n".join(lines)
    )
    return src, n_ops


def _batch_function(fname, point, args, doc):
    return T.BATCH_FUNCTION.format(
        opts=T.BATCH_OPTS,
        fname=fname,
        point=point,
        args=args,
        call_args=", ".join(f"{a}[i]" if a.startswith("out") else a for a in args.split(", ")),
        doc=doc,
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


def render_module(spec: KernelSpec) -> str:
    """Full text of the generated module for ``spec`` (banner included)."""
    d, n = len(spec.state), len(spec.params)
    slots_x = {s: f"x[{j}]" for j, s in enumerate(spec.state)}
    slots_x.update({p: f"theta[{k}]" for k, p in enumerate(spec.params)})
    parts, op_counts = [], {}

    src, ops = _point_function(
        "drift_point",
        "x, theta, out",
        f"Drift f(x; theta) at one point: x ({d},), theta ({n},), out ({d},).",
        [(f"out[{j}]", spec.drift[j]) for j in range(d)],
        slots_x,
    )
    parts.append(src)
    parts.append(
        _batch_function(
            "drift",
            "drift_point",
            "theta, out",
            f"Drift at N points: X (N, {d}), theta ({n},), out (N, {d}).",
        )
    )
    op_counts["drift"] = ops

    if spec.jacobian is not None:
        Jf = spec.jacobian
        src, ops = _point_function(
            "drift_jacobian_point",
            "x, theta, out",
            f"Jacobian df/dtheta at one point: x ({d},), theta ({n},), out ({d}, {n}), out[j, k] = "
            "df_j/dtheta_k.",
            [(f"out[{j}, {k}]", Jf[j, k]) for j in range(d) for k in range(n)],
            slots_x,
        )
        parts.append(src)
        parts.append(
            _batch_function(
                "drift_jacobian",
                "drift_jacobian_point",
                "theta, out",
                f"df/dtheta at N points: X (N, {d}), theta ({n},), out (N, {d}, {n}).",
            )
        )
        op_counts["drift_jacobian"] = ops

    n_sin = n_cos = 0
    stein_doc = ""
    tables = ""
    if spec.stein is not None:
        st = spec.stein
        n_sin, n_cos = len(st.sin_features), len(st.cos_features)
        outputs = [(f"out_sin[{e}]", ex) for e, ex in enumerate(st.sin_features)]
        outputs += [(f"out_cos[{e}]", ex) for e, ex in enumerate(st.cos_features)]
        src, ops = _point_function(
            "stein_features_point",
            "x, out_sin, out_cos",
            f"x-dependent factors of the Stein features at one point: x ({d},), "
            f"out_sin ({n_sin},), out_cos ({n_cos},).",
            outputs,
            slots_x,
        )
        parts.append(src)
        parts.append(
            _batch_function(
                "stein_features",
                "stein_features_point",
                "out_sin, out_cos",
                f"Stein-feature factors at N points: X (N, {d}), out_sin (N, {n_sin}), out_cos (N, "
                f"{n_cos}).",
            )
        )
        op_counts["stein_features"] = ops
        stein_doc = T.STEIN_DOC.format(d=d, n_sin=n_sin, n_cos=n_cos)
        tables = T.STEIN_TABLES.format(
            a_terms=_fmt_terms(st.a_terms),
            b_sin_terms=_fmt_terms(st.b_sin_terms),
            b_cos_terms=_fmt_terms(st.b_cos_terms),
        )

    local_doc = ""
    if spec.local is not None:
        lp = spec.local
        slots_local = _probe_slots(slots_x, lp, d)
        outputs = [(f"out_a[{k}]", ex) for k, ex in enumerate(lp.a)] + [("out_b[0]", lp.beta)]
        src, ops = _point_function(
            "local_row_point",
            "x, s, J, dlogp_dt, out_a, out_b",
            f"Local-route row at one probe: x ({d},), score s ({d},), Jacobian J ({d}, {d}) with "
            f"J[j, l] = ds_j/dx_l, dlogp_dt scalar; out_a ({n},) = a(x), out_b (1,) = beta(x).",
            outputs,
            slots_local,
        )
        parts.append(src)
        parts.append(T.LOCAL_BATCH_FUNCTION.format(opts=T.BATCH_OPTS, d=d, n=n))
        op_counts["local_rows"] = ops
        local_doc = T.LOCAL_DOC.format(d=d, n=n)

    if spec.local_residual is not None:
        lr = spec.local_residual
        slots_res = _probe_slots(slots_x, lr, d)
        outputs = [("out_r[0]", lr.residual)] + [
            (f"out_dr[{k}]", ex) for k, ex in enumerate(lr.gradient)
        ]
        src, ops = _point_function(
            "local_residual_point",
            "x, s, J, dlogp_dt, theta, out_r, out_dr",
            f"Local residual and its theta-gradient at one probe: x ({d},), score s ({d},), "
            "Jacobian "
            f"J ({d}, {d}), dlogp_dt scalar, theta ({n},); out_r (1,) = R, out_dr ({n},) = "
            "dR/dtheta.",
            outputs,
            slots_res,
        )
        parts.append(src)
        parts.append(T.LOCAL_RESIDUAL_BATCH_FUNCTION.format(opts=T.SERIAL_BATCH_OPTS, d=d, n=n))
        op_counts["local_residual"] = ops
        local_doc += T.LOCAL_RESIDUAL_DOC.format(d=d, n=n)

    if spec.noise is not None:
        G = spec.noise
        dn = G.shape[1]
        src, ops = _point_function(
            "noise_point",
            "x, out",
            f"State-dependent noise matrix G(x): x ({d},), out ({d}, {dn}).",
            [(f"out[{i}, {q}]", G[i, q]) for i in range(d) for q in range(dn)],
            slots_x,
        )
        parts.append(src)
        op_counts["noise"] = ops
        step = T.EM_STEP
    else:
        dn = spec.constant_noise.shape[1]
        step = T.RK4_STEP
    # lane kernels of the simulator: state j of lane l at x[j*LANES + l] (see templates.SIMULATOR)
    slots_lane = {s: f"x[{j}*LANES + l]" for j, s in enumerate(spec.state)}
    slots_lane.update({p: f"theta[{k}]" for k, p in enumerate(spec.params)})
    drift_lanes, _ = cse_block(
        [(f"out[{j}*LANES + l]", spec.drift[j]) for j in range(d)],
        SlotPrinter(slots_lane),
        indent=" " * 8,
    )
    noise_lanes = ["        pass  # constant noise: simulate_chains takes G as an argument"]
    if spec.noise is not None:
        noise_lanes, _ = cse_block(
            [
                (f"out[{i * dn + q}*LANES + l]", spec.noise[i, q])
                for i in range(d)
                for q in range(dn)
            ],
            SlotPrinter(slots_lane),
            indent=" " * 8,
        )
    parts.append(
        T.SIMULATOR.format(
            step_body=step,
            drift_lanes="\n".join(drift_lanes) or "        pass",
            noise_lanes="\n".join(noise_lanes) or "        pass",
        )
    )

    header = T.HEADER.format(
        name=spec.name,
        hash=spec.hash,
        version=GENERATOR_VERSION,
        d=d,
        n=n,
        state=", ".join(map(str, spec.state)),
        params=", ".join(map(str, spec.params)),
        affine=spec.is_affine,
        n_sin=n_sin,
        n_cos=n_cos,
        dn=dn,
        stein_doc=stein_doc,
        local_doc=local_doc,
        op_counts=", ".join(f"{k} {v}" for k, v in op_counts.items()),
        state_tuple=repr(tuple(map(str, spec.state))),
        param_tuple=repr(tuple(map(str, spec.params))),
        state_noise=spec.noise is not None,
        separable=repr(tuple(int(k) for k in spec.separable)),
    )
    body = header + tables + "".join(parts)
    banner = T.BANNER.format(
        version=GENERATOR_VERSION,
        template=T.TEMPLATE_NAME,
        name=spec.name,
        hash=spec.hash,
        content_hash=content_hash_of(body),
    )
    return banner + body
