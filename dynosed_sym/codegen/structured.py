"""Loops over matrix parameters: the structured part of the printed kernels.

A matrix block (:class:`~dynosed_sym.model.derivation.MatrixBlock`) is R × K parameters
``W[j, k] = theta[first + j*K + k]`` entering drift component ``rows[j]`` as
``coefs[j]·W[j, k]·phi[k](x)``.  Its K basis functions are printed once (with the rest of the
kernel, under one joint CSE) into ``phi0[k]`` (point kernels) or ``work[k*LANES + l]`` (the
simulator's lane kernel); the products with W are loops over the index sets, so the printed
source and the compile time grow with K, not with R·K:

    for j in range(30):                      # drift_point
        acc = 0.0
        for k in range(30):
            acc += theta[j*30 + k]*phi0[k]
        out[j] += acc

The local route's rows ``a = coefs[j]·(phi[k]·s[rows[j]] + d phi[k]/dx[rows[j]])`` follow the
same pattern (the derivatives, nonzero for few (k, j), are printed one by one).  The loops sum
over k in order, which rounds differently from SymPy's unrolled sum: structured and unrolled
kernels agree to rounding, not bit for bit, so only blocks of at least
:data:`~dynosed_sym.codegen.spec.STRUCTURED_MIN_ENTRIES` parameters are printed this way (the
bundled models keep their unrolled kernels).

In the simulator a zero weight is skipped: ``block_weights(theta)`` lists the nonzero weights
once per call and the lane kernel loops over them, so a sparse network simulates at the cost of
its nonzero interactions.  Adding ``0·phi`` changes no finite sum, so only a basis function that
overflows (inf, where the unrolled sum would give NaN) behaves differently.
"""

from __future__ import annotations

import re

from .legend import ints_tuple

__all__ = [
    "allocations",
    "dbasis_outputs",
    "block_label",
    "block_constants",
    "a_blocks_table",
    "basis_outputs",
    "drift_loops",
    "jacobian_loops",
    "local_loops",
    "lane_loops",
    "weights_function",
    "loop_ops",
]

_INDEXED = re.compile(r"(.+?)(?:\[\d+,\s*\d+\]|_\d+_\d+)")


def block_label(params, blk):
    """The matrix's name for comments: ``W`` from ``W_0_0`` or ``W[0,0]``, else ``theta``."""
    m = _INDEXED.fullmatch(str(params[blk.first]))
    return m.group(1) if m else "theta"


def _contiguous(rows):
    return list(rows) == list(range(rows[0], rows[0] + len(rows)))


def _row(blk, b, var="j"):
    """Source of the drift component of block row ``var``."""
    if _contiguous(blk.rows):
        return var if blk.rows[0] == 0 else f"{blk.rows[0]} + {var}"
    return f"BLOCK{b}_ROWS[{var}]"


def _coef(blk, b, var="j"):
    """``c*`` factor of block row ``var`` (empty for coefficients 1)."""
    values = {float(c) for c in blk.coefs}
    if values == {1.0}:
        return ""
    if len(values) == 1:
        return f"{values.pop()!r}*"
    return f"BLOCK{b}_COEFS[{var}]*"


def _theta(blk, var="j", col="k"):
    K = blk.shape[1]
    return f"{blk.first} + {var}*{K} + {col}" if blk.first else f"{var}*{K} + {col}"


def block_constants(blocks):
    """Module constants of the blocks whose rows are not contiguous or whose coefficients differ
    (text, empty when there are none)."""
    lines = []
    for b, blk in enumerate(blocks):
        if not _contiguous(blk.rows):
            lines.append(f"BLOCK{b}_ROWS = {ints_tuple(blk.rows)}")
        if len({float(c) for c in blk.coefs}) > 1:
            coefs = ", ".join(repr(float(c)) for c in blk.coefs)
            lines.append(f"BLOCK{b}_COEFS = ({coefs},)")
    if not lines:
        return ""
    return (
        "# rows and coefficients of the matrix blocks (see the kernels' loops)\n"
        + "\n".join(lines)
        + "\n"
    )


def a_blocks_table(blocks, sin_index):
    """Source of ``A_BLOCKS``: (first, rows, coefs, features) per block (``()`` when none)."""
    if not blocks:
        return "()"
    rows = []
    for blk in blocks:
        coefs = [float(c) for c in blk.coefs]
        if len(set(coefs)) == 1:
            coef_text = f"({coefs[0]!r},) * {len(coefs)}"
        else:
            coef_text = "(" + ", ".join(map(repr, coefs)) + ",)"
        feats = ints_tuple([sin_index[phi] for phi in blk.basis])
        rows.append(f"({blk.first}, {ints_tuple(blk.rows)}, {coef_text}, {feats})")
    return "(\n    " + ",\n    ".join(rows) + ",\n)"


def basis_outputs(blocks, lane_slot=None):
    """CSE outputs of the basis functions: ``phi{b}[k]``, or work slots for the lane kernel."""
    out, offset = [], 0
    for b, blk in enumerate(blocks):
        for k, phi in enumerate(blk.basis):
            out.append((f"phi{b}[{k}]" if lane_slot is None else lane_slot(offset + k), phi))
        offset += blk.shape[1]
    return out


def dbasis_outputs(blocks):
    """CSE outputs of the nonzero derivatives ``d phi[k]/dx[rows[j]]``: scalars ``dphi{b}_k_j``."""
    return [(f"dphi{b}_{k}_{r}", e) for b, blk in enumerate(blocks) for (k, r), e in blk.dbasis]


def _comment(params, blk, b, indent, what):
    R, K = blk.shape
    name = block_label(params, blk)
    return f"{indent}# {name} ({R} x {K}), {name}[j, k] = theta[{_theta(blk)}]: {what}"


def allocations(blocks, indent="    "):
    """``phi{b} = np.empty(K)`` for every block (point kernels)."""
    return [f"{indent}phi{b} = np.empty({blk.shape[1]})" for b, blk in enumerate(blocks)]


def _block_loops(params, blocks, indent, what, body):
    """For every block: its comment (``what(b)``), ``for j in range(R):`` and the lines
    ``body(blk, b, K)`` of that loop (and any after it)."""
    lines = []
    for b, blk in enumerate(blocks):
        R, K = blk.shape
        lines += [_comment(params, blk, b, indent, what(b)), f"{indent}for j in range({R}):"]
        lines += body(blk, b, K)
    return lines


def drift_loops(params, blocks, out="out", indent="    "):
    """f[rows[j]] += coefs[j]·Σ_k W[j, k]·phi[k] (drift_point)."""
    return _block_loops(
        params,
        blocks,
        indent,
        lambda b: f"{out}[{_row(blocks[b], b)}] += sum_k W[j, k] phi{b}[k]",
        lambda blk, b, K: [
            f"{indent}    acc = 0.0",
            f"{indent}    for k in range({K}):",
            f"{indent}        acc += theta[{_theta(blk)}]*phi{b}[k]",
            f"{indent}    {out}[{_row(blk, b)}] += {_coef(blk, b)}acc",
        ],
    )


def jacobian_loops(params, blocks, indent="    "):
    """out[rows[j], first + j*K + k] = coefs[j]·phi[k] (drift_jacobian_point)."""
    return _block_loops(
        params,
        blocks,
        indent,
        lambda b: f"df/dW[j, k] = phi{b}[k]",
        lambda blk, b, K: [
            f"{indent}    for k in range({K}):",
            f"{indent}        out[{_row(blk, b)}, {_theta(blk)}] = {_coef(blk, b)}phi{b}[k]",
        ],
    )


def local_loops(params, blocks, out, residual=None, indent="    "):
    """Local rows (or residual gradients) ``out[first + j*K + k] = coefs[j]·(phi[k]·s[rows[j]]
    + d phi[k]/dx[rows[j]])``; with ``residual`` (the residual's output), also
    ``residual += Σ θ_k out[k]`` over the block."""
    lines = []
    for b, blk in enumerate(blocks):
        R, K = blk.shape
        c = _coef(blk, b)
        lines += [
            _comment(params, blk, b, indent, f"d/dW[j, k] = phi{b}[k] s[j] + d phi{b}[k]/dx[j]"),
            f"{indent}for j in range({R}):",
            f"{indent}    sj = s[{_row(blk, b)}]",
            f"{indent}    for k in range({K}):",
            f"{indent}        {out}[{_theta(blk)}] = "
            + (f"{c}(phi{b}[k]*sj)" if c else f"phi{b}[k]*sj"),
        ]
        K_ = blk.shape[1]
        for (k, r), _ in blk.dbasis:
            col = blk.first + r * K_ + k
            cr = (
                "" if c == "" else (c if not c.startswith("BLOCK") else f"{float(blk.coefs[r])!r}*")
            )
            lines.append(f"{indent}{out}[{col}] += {cr}dphi{b}_{k}_{r}")
        if residual is not None:
            lines += [
                f"{indent}acc = 0.0",
                f"{indent}for k in range({f'{blk.first}, ' if blk.first else ''}"
                f"{blk.first + blk.size}):",
                f"{indent}    acc += theta[k]*{out}[k]",
                f"{indent}{residual} += acc",
            ]
    return lines


def lane_loops(params, blocks, indent="    "):
    """The lane kernel's f[rows[j]] += coefs[j]·W[j, k]·phi[k] at every lane, over the nonzero
    weights only (``block_weights``: rows, basis slots and weights, in (j, k) order)."""
    names = ", ".join(
        f"{block_label(params, blk)} ({blk.shape[0]} x {blk.shape[1]})" for blk in blocks
    )
    return [
        f"{indent}# {names}: the nonzero weights w = coefs[j]*W[j, k] (block_weights), j-major",
        f"{indent}for q in range(nz_w.size):",
        f"{indent}    w = nz_w[q]",
        f"{indent}    o = out[nz_row[q]*LANES :]  # views, indexed by l >= 0: no wraparound",
        f"{indent}    v = work[nz_basis[q]*LANES :]",
        f"{indent}    for l in range(min(nl, LANES)):",
        f"{indent}        o[l] += w*v[l]",
    ]


def weights_function(params, blocks, decorator):
    """Source of ``block_weights(theta)``: the nonzero weights of the matrix blocks as arrays
    (drift component, basis slot, coefs[j]·W[j, k]) in block, then (j, k) order."""
    size = sum(blk.size for blk in blocks)
    lines = [
        "",
        "",
        decorator,
        "def block_weights(theta):",
        '    """Simulator: the nonzero weights of the matrix blocks, (j, k) in order: the drift',
        "    component nz_row[q] gets nz_w[q] times basis function nz_basis[q] (a zero weight",
        '    costs nothing in drift_lanes)."""',
        f"    nz_row = np.empty({size}, dtype=np.int64)",
        f"    nz_basis = np.empty({size}, dtype=np.int64)",
        f"    nz_w = np.empty({size})",
        "    q = 0",
    ]
    offset = 0
    for b, blk in enumerate(blocks):
        R, K = blk.shape
        slot = "k" if not offset else f"{offset} + k"
        lines += [
            f"    for j in range({R}):",
            f"        for k in range({K}):",
            f"            w = {_coef(blk, b)}theta[{_theta(blk)}]",
            "            if w != 0.0:",
            f"                nz_row[q], nz_basis[q], nz_w[q] = {_row(blk, b)}, {slot}, w",
            "                q += 1",
        ]
        offset += K
    lines.append("    return nz_row[:q], nz_basis[:q], nz_w[:q]")
    return "\n".join(lines) + "\n"


def loop_ops(blocks, kernel):
    """Operations of a kernel's loops per point (multiplications and additions)."""
    n = 0
    for blk in blocks:
        R, K = blk.shape
        c = 0 if {float(v) for v in blk.coefs} == {1.0} else 1
        if kernel in ("drift", "lanes"):
            n += 2 * R * K + R + (c * R if kernel == "drift" else c * R * K)
        elif kernel == "jacobian":
            n += c * R * K
        else:  # local rows / residual gradients (+ the residual's sum)
            n += (1 + c) * R * K + (1 + c) * len(blk.dbasis)
            n += 2 * R * K + 1 if kernel == "residual" else 0
    return n
