"""Small source templates for generated kernel modules.

Every ``numba.njit`` decorator writes all of its options out, so a reader sees
exactly how each kernel is compiled.  Arrays are always arguments, never module
globals, so Numba's on-disk cache stays valid.  Model-independent code (the
counter RNG, the lane-block bookkeeping of the simulator) lives in
:mod:`dynosed_sym.kernels` and is imported; a template line is a line of a
generated module, so it stays within 100 columns too.
"""

TEMPLATE_NAME = "kernels_v3"

BANNER = """\
# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym {version}, template {template}.
# model: {name}
# spec hash: {hash}
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: {content_hash}
# ============================================================================
"""

HEADER = '''\
"""Numba kernels for the SDE model ``{name}``.

d = {d} states, n = {n} parameters, affine in the parameters: {affine}.

Slots (where each symbol sits in the kernels' arrays):

{legend}

Kernels and argument shapes (N samples, M probes, C chains, K_sin = {n_sin}, K_cos = {n_cos}):

{kernel_doc}

Operation counts of the printed kernels (after joint CSE; terms: intermediate CSE terms;
written: outputs assigned, structural zeros are not; inputs: slots read of each array):

{op_table}
"""

import math

import numba
import numpy as np

from dynosed_sym.kernels import lanes
from dynosed_sym.kernels.lanes import LANES

NAME = {name!r}
SPEC_HASH = {hash!r}
GENERATOR_VERSION = {version!r}
STATE = {state_tuple}
PARAMS = {param_tuple}
# known inputs of an experiment: every kernel's last argument u holds their values
INPUTS = {input_tuple}
IS_AFFINE = {affine}
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = {separable}
NOISE_DIM = {dn}
STATE_DEPENDENT_NOISE = {state_noise}
{block_constants}'''

# The kernel list of the header: call, then the argument shapes from column 45.
KERNEL_DOC_WIDTH = 41
KERNEL_DOCS = {
    "drift": ("drift(X, theta, out)", ("X (N, {d})", "theta ({n},)", "out (N, {d})")),
    "drift_jacobian": (
        "drift_jacobian(X, theta, out)",
        ("X (N, {d})", "theta ({n},)", "out (N, {d}, {n}) = df/dtheta"),
    ),
    "stein_features": (
        "stein_features(X, out_sin, out_cos)",
        ("X (N, {d})", "out_sin (N, {n_sin})", "out_cos (N, {n_cos})"),
    ),
    "local_rows": (
        "local_rows(X, S, J, dlogp_dt, A, b)",
        ("X (M, {d})", "S (M, {d})", "J (M, {d}, {d})", "dlogp_dt (M,)", "A (M, {n})", "b (M,)"),
    ),
    "local_residual": (
        "local_residual(X, S, J, dlogp_dt, theta, R, dR)",
        ("X (M, {d})", "S (M, {d})", "J (M, {d}, {d})", "dlogp_dt (M,)", "theta ({n},)")
        + ("R (M,)", "dR (M, {n}) = dR/dtheta"),
    ),
    "simulate_chains": (
        "simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)",
        ("x0 (C, {d})", "G ({d}, {dn})", "keys (C,) uint64", "out (n_keep, C, {d})")
        + ("status (C,) int64",),
    ),
}

STEIN_TABLES = """
# Contraction tables of the global Stein fill (see dynosed_sym.model.derivation.SteinPieces):
#   A[:, k] += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, k, coef) in A_TERMS
#   b       += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, coef) in B_SIN_TERMS
#   b       += coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    (e, j, l, coef) in B_COS_TERMS
#   A[:, first + r*K + k] += coefs[r] * omega[:, rows[r]] * (sum_i sin_i * out_sin[i, feats[k]])
#                                            (first, rows, coefs, feats) in A_BLOCKS (matrix blocks)
A_TERMS = {a_terms}
A_BLOCKS = {a_blocks}
B_SIN_TERMS = {b_sin_terms}
B_COS_TERMS = {b_cos_terms}
"""

POINT_DECORATOR = (
    '@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", '
    "boundscheck=False,\n"
    '            nogil=True, inline="never")'
)
BATCH_DECORATOR = (
    '@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", '
    "boundscheck=False,\n"
    "            nogil=True)"
)
# Local residual and its theta-gradient at given theta (gradient route of the local loss).
# Serial: it runs once per trust-region step over M probes (about 100 ns each), where waking
# threads costs more than the work and, on a busy machine, made the search 10-50x slower.
SERIAL_BATCH_DECORATOR = (
    '@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", '
    "boundscheck=False,\n"
    "            nogil=True)"
)

# {counts}: "# 112 ops, 18 intermediate terms, 7 of 7 outputs written"; {zero}: the zeroing of
# output arrays with structural zeros (or nothing); {body}: the printed assignments.
POINT_FUNCTION = """

{decorator}
def {fname}({args}):
    {doc}
    {counts}
{zero}{body}
"""

BATCH_FUNCTION = """

{decorator}
def {fname}(X, {args}):
    {doc}
    for i in numba.prange(X.shape[0]):
        {point}(X[i], {call_args})
"""

# Rows of the local route: one probe per iteration, no reduction (A[i], b[i] belong to probe i).
LOCAL_BATCH_FUNCTION = '''

{decorator}
def local_rows(X, S, J, dlogp_dt, A, b{u}):
    """Local-route rows A[i] = a(x_i), b[i] = beta(x_i) (A theta = b at the truth) at probes X[i]:
    X, S (M, {d}), J (M, {d}, {d}), dlogp_dt (M,) (zeros if stationary), A (M, {n}),
    b (M,){u_doc}."""
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i : i + 1]{u})
'''

LOCAL_RESIDUAL_BATCH_FUNCTION = '''

{decorator}
def local_residual(X, S, J, dlogp_dt, theta, R, dR{u}):
    """Local residual R[i] and dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k) at probes X[i]:
    X, S (M, {d}), J (M, {d}, {d}), dlogp_dt (M,), theta ({n},), R (M,), dR (M, {n}){u_doc}."""
    for i in range(X.shape[0]):
        local_residual_point(X[i], S[i], J[i], dlogp_dt[i], theta, R[i : i + 1], dR[i]{u})
'''

# The simulator (scheme, layout, streams: dynosed_sym.kernels.lanes).  A lane kernel evaluates
# the drift (or G(x)) at the lanes of a block, state j of lane l at x[j*LANES + l]; its printed
# body ({body}) is indented for the lane loop.  No banner or other text common to every module
# here: the shared code stays in the package (see tests/codegen/test_lean.py).
LANE_FUNCTION = """

{decorator}
def {fname}({args}):
    {doc}
    {counts}
{pre}    for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
{body}
{post}"""

SIMULATOR = '''

@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status{u}):
    """{scheme}: C chains in blocks of lanes (dynosed_sym.kernels.lanes).

    x0 (C, {d}), theta ({n},), G ({d}, {dn}){g_note}, keys (C,) uint64, out (n_keep, C, {d}): every
    thin-th state after n_burn steps, status (C,) int64: 0 or the first non-finite step{u_doc}."""
{weights}    width, n_blocks = lanes.layout(x0.shape[0])
    for blk in range(n_blocks):
        x, xs, k1, k2, acc, eta, lkeys = lanes.open_block(x0, keys, status, G, blk, width)
{work}{steps}
            if lanes.stopped(x, out, status, blk, width, step, n_burn, thin):
                break
'''

# the nonzero weights of the matrix blocks, once per call (structured drift_lanes)
WEIGHTS_CALL = """\
    nz_row, nz_basis, nz_w = block_weights(theta)
"""

# the basis functions of the matrix blocks at every lane of a block (structured drift_lanes)
WORK_BUFFER = """\
        work = np.zeros({n_basis} * LANES)
"""

RK4_STEPS = """\
        for step in range(1, n_burn + thin * n_keep + 1):
            drift_lanes(x, theta, k1, width{lane_args})
            lanes.rk4_first(x, k1, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width{lane_args})
            lanes.rk4_middle(x, k2, xs, acc, 0.5 * dt, width)
            drift_lanes(xs, theta, k2, width{lane_args})
            lanes.rk4_middle(x, k2, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width{lane_args})
            lanes.rk4_last(x, k2, acc, G, eta, lkeys, step, dt, width)"""

EM_STEPS = """\
        Gx = np.zeros(G.size * LANES)  # G(x) of every lane; entries never written stay zero
        for step in range(1, n_burn + thin * n_keep + 1):
            drift_lanes(x, theta, k1, width{lane_args})
            noise_lanes(x, Gx, width{u})
            lanes.em_step(x, k1, Gx, acc, eta, lkeys, step, dt, width)"""
