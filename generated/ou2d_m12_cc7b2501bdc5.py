# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0+2fa832f1, template kernels_v3.
# model: ou2d_m12
# spec hash: cc7b2501bdc57707f6daa2ee7449cbd0de84eea0bb13800c0dbda3c4fecd4702
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: ec45dba879b3a177f50a418482eec727defb395b7ce71fe44f6f4157c7172b5b
# ============================================================================
"""Numba kernels for the SDE model ``ou2d_m12``.

d = 2 states, n = 1 parameters, affine in the parameters: True.

Slots (where each symbol sits in the kernels' arrays):

    x[0] = x   x[1] = y
    theta[0] = M12
    a kernel names the slots it reads: state, parameter and input names as Python names
    local kernels: s[j] = d log p/dx[j] (score), J[j, l] = ds[j]/dx[l], dlogp_dt = d log p/dt
    lane kernels (simulator): x[j*LANES + l] = x[j] of lane l, LANES = 64
    noise: G (2, 2) constant, simulate_chains's argument (CompiledModel.noise_matrix)
    one step adds sqrt(dt) * G[i, q] * eta[q] to x[i] (eta standard normal)

Kernels and argument shapes (N samples, M probes, C chains, K_sin = 3, K_cos = 1):

    drift(X, theta, out)                     X (N, 2), theta (1,), out (N, 2)
    drift_jacobian(X, theta, out)            X (N, 2), theta (1,), out (N, 2, 1) = df/dtheta
    stein_features(X, out_sin, out_cos)      X (N, 2), out_sin (N, 3), out_cos (N, 1)
    local_rows(X, S, J, dlogp_dt, A, b)      X (M, 2), S (M, 2), J (M, 2, 2), dlogp_dt (M,),
                                             A (M, 1), b (M,)
    local_residual(X, S, J, dlogp_dt, theta, R, dR)
                                             X (M, 2), S (M, 2), J (M, 2, 2), dlogp_dt (M,),
                                             theta (1,), R (M,), dR (M, 1) = dR/dtheta
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 2), G (2, 2), keys (C,) uint64,
                                             out (n_keep, C, 2), status (C,) int64

Operation counts of the printed kernels (after joint CSE; terms: intermediate CSE terms;
written: outputs assigned, structural zeros are not; inputs: slots read of each array):

    kernel                ops  terms  written  inputs read
    drift_point             4      0   2 of 2  x 2/2, theta 1/1
    drift_jacobian_point    0      0   1 of 2  x 1/2, theta 0/1
    stein_features_point    2      0   4 of 4  x 2/2
    local_row_point        15      0   2 of 2  x 2/2, s 2/2, J 2/4, dlogp_dt
    local_residual_point   16      0   2 of 2  x 2/2, s 2/2, J 2/4, dlogp_dt, theta 1/1
    drift_lanes             4      0   2 of 2  x 2/2, theta 1/1
"""

import math

import numba
import numpy as np

from dynosed_sym.kernels import lanes
from dynosed_sym.kernels.lanes import LANES

NAME = 'ou2d_m12'
SPEC_HASH = 'cc7b2501bdc57707f6daa2ee7449cbd0de84eea0bb13800c0dbda3c4fecd4702'
GENERATOR_VERSION = '0.1.0+2fa832f1'
STATE = ('x', 'y')
PARAMS = ('M12',)
# known inputs of an experiment: every kernel's last argument u holds their values
INPUTS = ()
IS_AFFINE = True
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = (0,)
NOISE_DIM = 2
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.model.derivation.SteinPieces):
#   A[:, k] += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, k, coef) in A_TERMS
#   b       += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, coef) in B_SIN_TERMS
#   b       += coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    (e, j, l, coef) in B_COS_TERMS
#   A[:, first + r*K + k] += coefs[r] * omega[:, rows[r]] * (sum_i sin_i * out_sin[i, feats[k]])
#                                            (first, rows, coefs, feats) in A_BLOCKS (matrix blocks)
A_TERMS = (
    (0, 0, 0, 1.0),
)
A_BLOCKS = ()
B_SIN_TERMS = (
    (1, 0, -1.0),
    (2, 1, 1.0),
)
B_COS_TERMS = (
    (0, 0, 0, 1.0),
    (0, 1, 1, 1.0),
)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (2,), theta (1,), out (2,)."""
    # 4 ops, 0 intermediate terms, 2 of 2 outputs written
    x_ = x[0]
    y = x[1]
    M12 = theta[0]
    out[0] = M12*y - x_
    out[1] = -0.5*x_ - y


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 2), theta (1,), out (N, 2)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_jacobian_point(x, theta, out):
    """Jacobian df/dtheta at one point: x (2,), theta (1,), out (2, 1) with out[j, k] =
    df_j/dtheta_k."""
    # 0 ops, 0 intermediate terms, 1 of 2 outputs written
    out[:] = 0.0
    y = x[1]
    out[0, 0] = y


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift_jacobian(X, theta, out):
    """df/dtheta at N points: X (N, 2), theta (1,), out (N, 2, 1)."""
    for i in numba.prange(X.shape[0]):
        drift_jacobian_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (2,), out_sin (3,), out_cos (1,).
    """
    # 2 ops, 0 intermediate terms, 4 of 4 outputs written
    x_ = x[0]
    y = x[1]
    out_sin[0] = y
    out_sin[1] = x_
    out_sin[2] = -0.5*x_ - y
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 2), out_sin (N, 3), out_cos (N, 1)."""
    for i in numba.prange(X.shape[0]):
        stein_features_point(X[i], out_sin[i], out_cos[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_row_point(x, s, J, dlogp_dt, out_a, out_b):
    """Local-route row at one probe: x (2,), score s (2,), Jacobian J (2, 2) with J[j, l] =
    ds_j/dx_l, dlogp_dt scalar; out_a (1,) = a(x), out_b (1,) = beta(x)."""
    # 15 ops, 0 intermediate terms, 2 of 2 outputs written
    x_ = x[0]
    y = x[1]
    out_a[0] = s[0]*y
    out_b[0] = -dlogp_dt + J[0, 0] + J[1, 1] + s[0]**2 + s[0]*x_ + s[1]**2 - s[1]*(-0.5*x_ - y) + 2


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_rows(X, S, J, dlogp_dt, A, b):
    """Local-route rows A[i] = a(x_i), b[i] = beta(x_i) (A theta = b at the truth) at probes X[i]:
    X, S (M, 2), J (M, 2, 2), dlogp_dt (M,) (zeros if stationary), A (M, 1),
    b (M,)."""
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i : i + 1])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_residual_point(x, s, J, dlogp_dt, theta, out_r, out_dr):
    """Local residual and its theta-gradient at one probe: x (2,), score s (2,), Jacobian J (2, 2),
    dlogp_dt scalar, theta (1,); out_r (1,) = R, out_dr (1,) = dR/dtheta."""
    # 16 ops, 0 intermediate terms, 2 of 2 outputs written
    x_ = x[0]
    y = x[1]
    M12 = theta[0]
    out_r[0] = (
        dlogp_dt - J[0, 0] - J[1, 1] - s[0]**2 + s[0]*(M12*y - x_) - s[1]**2 + s[1]*(-0.5*x_ - y)
        - 2
    )
    out_dr[0] = s[0]*y


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_residual(X, S, J, dlogp_dt, theta, R, dR):
    """Local residual R[i] and dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k) at probes X[i]:
    X, S (M, 2), J (M, 2, 2), dlogp_dt (M,), theta (1,), R (M,), dR (M, 1)."""
    for i in range(X.shape[0]):
        local_residual_point(X[i], S[i], J[i], dlogp_dt[i], theta, R[i : i + 1], dR[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_lanes(x, theta, out, nl):
    """Simulator: drift at lanes l < nl of a block of chains, x (2*LANES,) with state j of lane l at
    x[j*LANES+l], theta (1,), out (2*LANES,); structurally zero components are not written
    (open_block zeroes out)."""
    # 4 ops, 0 intermediate terms, 2 of 2 outputs written
    M12 = theta[0]
    for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
        x_ = x[l]
        y = x[LANES + l]
        out[l] = M12*y - x_
        out[LANES + l] = -0.5*x_ - y


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status):
    """RK4 drift plus Euler-Maruyama noise: C chains in blocks of lanes (dynosed_sym.kernels.lanes).

    x0 (C, 2), theta (1,), G (2, 2), keys (C,) uint64, out (n_keep, C, 2): every
    thin-th state after n_burn steps, status (C,) int64: 0 or the first non-finite step."""
    width, n_blocks = lanes.layout(x0.shape[0])
    for blk in range(n_blocks):
        x, xs, k1, k2, acc, eta, lkeys = lanes.open_block(x0, keys, status, G, blk, width)
        for step in range(1, n_burn + thin * n_keep + 1):
            drift_lanes(x, theta, k1, width)
            lanes.rk4_first(x, k1, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width)
            lanes.rk4_middle(x, k2, xs, acc, 0.5 * dt, width)
            drift_lanes(xs, theta, k2, width)
            lanes.rk4_middle(x, k2, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width)
            lanes.rk4_last(x, k2, acc, G, eta, lkeys, step, dt, width)
            if lanes.stopped(x, out, status, blk, width, step, n_burn, thin):
                break
