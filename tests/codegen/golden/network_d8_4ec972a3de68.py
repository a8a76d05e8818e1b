# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0+2fa832f1, template kernels_v3.
# model: network_d8
# spec hash: 4ec972a3de68f12d0f2237be80b2d4a34cbfe6c2f7ec9f15512b3459d386a161
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: c48940285fbcb56bff7b58a75f6a3b36b174b36b2f4cdab17e37085cc5e252b3
# ============================================================================
"""Numba kernels for the SDE model ``network_d8``.

d = 8 states, n = 64 parameters, affine in the parameters: True.

Slots (where each symbol sits in the kernels' arrays):

    x[0] = x0   x[1] = x1   x[2] = x2   x[3] = x3   x[4] = x4   x[5] = x5   x[6] = x6   x[7] = x7
    theta[0] = W_0_0    theta[1] = W_0_1    theta[2] = W_0_2    theta[3] = W_0_3
    theta[4] = W_0_4    theta[5] = W_0_5    theta[6] = W_0_6    theta[7] = W_0_7
    theta[8] = W_1_0    theta[9] = W_1_1    theta[10] = W_1_2   theta[11] = W_1_3
    theta[12] = W_1_4   theta[13] = W_1_5   theta[14] = W_1_6   theta[15] = W_1_7
    theta[16] = W_2_0   theta[17] = W_2_1   theta[18] = W_2_2   theta[19] = W_2_3
    theta[20] = W_2_4   theta[21] = W_2_5   theta[22] = W_2_6   theta[23] = W_2_7
    theta[24] = W_3_0   theta[25] = W_3_1   theta[26] = W_3_2   theta[27] = W_3_3
    theta[28] = W_3_4   theta[29] = W_3_5   theta[30] = W_3_6   theta[31] = W_3_7
    theta[32] = W_4_0   theta[33] = W_4_1   theta[34] = W_4_2   theta[35] = W_4_3
    theta[36] = W_4_4   theta[37] = W_4_5   theta[38] = W_4_6   theta[39] = W_4_7
    theta[40] = W_5_0   theta[41] = W_5_1   theta[42] = W_5_2   theta[43] = W_5_3
    theta[44] = W_5_4   theta[45] = W_5_5   theta[46] = W_5_6   theta[47] = W_5_7
    theta[48] = W_6_0   theta[49] = W_6_1   theta[50] = W_6_2   theta[51] = W_6_3
    theta[52] = W_6_4   theta[53] = W_6_5   theta[54] = W_6_6   theta[55] = W_6_7
    theta[56] = W_7_0   theta[57] = W_7_1   theta[58] = W_7_2   theta[59] = W_7_3
    theta[60] = W_7_4   theta[61] = W_7_5   theta[62] = W_7_6   theta[63] = W_7_7
    a kernel names the slots it reads: state, parameter and input names as Python names
    local kernels: s[j] = d log p/dx[j] (score), J[j, l] = ds[j]/dx[l], dlogp_dt = d log p/dt
    lane kernels (simulator): x[j*LANES + l] = x[j] of lane l, LANES = 64
    noise: G (8, 8) constant, simulate_chains's argument (CompiledModel.noise_matrix)
    one step adds sqrt(dt) * G[i, q] * eta[q] to x[i] (eta standard normal)

Kernels and argument shapes (N samples, M probes, C chains, K_sin = 16, K_cos = 1):

    drift(X, theta, out)                     X (N, 8), theta (64,), out (N, 8)
    drift_jacobian(X, theta, out)            X (N, 8), theta (64,), out (N, 8, 64) = df/dtheta
    stein_features(X, out_sin, out_cos)      X (N, 8), out_sin (N, 16), out_cos (N, 1)
    local_rows(X, S, J, dlogp_dt, A, b)      X (M, 8), S (M, 8), J (M, 8, 8), dlogp_dt (M,),
                                             A (M, 64), b (M,)
    local_residual(X, S, J, dlogp_dt, theta, R, dR)
                                             X (M, 8), S (M, 8), J (M, 8, 8), dlogp_dt (M,),
                                             theta (64,), R (M,), dR (M, 64) = dR/dtheta
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 8), G (8, 8), keys (C,) uint64,
                                             out (n_keep, C, 8), status (C,) int64

Operation counts of the printed kernels (after joint CSE; terms: intermediate CSE terms;
written: outputs assigned, structural zeros are not; inputs: slots read of each array):

    kernel                ops  terms    written  inputs read
    drift_point           168      8     8 of 8  x 8/8, theta 64/64
    drift_jacobian_point   24      8  64 of 512  x 8/8, theta 0/64
    stein_features_point   32      8   17 of 17  x 8/8
    local_row_point       226     24   65 of 65  x 8/8, s 8/8, J 8/64, dlogp_dt
    local_residual_point  354     24   65 of 65  x 8/8, s 8/8, J 8/64, dlogp_dt, theta 64/64
    drift_lanes           168      8     8 of 8  x 8/8, theta 64/64
"""

import math

import numba
import numpy as np

from dynosed_sym.kernels import lanes
from dynosed_sym.kernels.lanes import LANES

NAME = 'network_d8'
SPEC_HASH = '4ec972a3de68f12d0f2237be80b2d4a34cbfe6c2f7ec9f15512b3459d386a161'
GENERATOR_VERSION = '0.1.0+2fa832f1'
STATE = ('x0', 'x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7')
PARAMS = (*(f"W_{j}_{k}" for j in range(8) for k in range(8)),)
# known inputs of an experiment: every kernel's last argument u holds their values
INPUTS = ()
IS_AFFINE = True
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = tuple(range(64))
NOISE_DIM = 8
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.model.derivation.SteinPieces):
#   A[:, k] += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, k, coef) in A_TERMS
#   b       += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, coef) in B_SIN_TERMS
#   b       += coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    (e, j, l, coef) in B_COS_TERMS
#   A[:, first + r*K + k] += coefs[r] * omega[:, rows[r]] * (sum_i sin_i * out_sin[i, feats[k]])
#                                            (first, rows, coefs, feats) in A_BLOCKS (matrix blocks)
A_TERMS = ()
A_BLOCKS = (
    (0, tuple(range(8)), (1.0,) * 8, tuple(range(8))),
)
B_SIN_TERMS = (
    (8, 0, 1.0),
    (9, 1, 1.0),
    (10, 2, 1.0),
    (11, 3, 1.0),
    (12, 4, 1.0),
    (13, 5, 1.0),
    (14, 6, 1.0),
    (15, 7, 1.0),
)
B_COS_TERMS = (
    (0, 0, 0, 0.05),
    (0, 1, 1, 0.05),
    (0, 2, 2, 0.05),
    (0, 3, 3, 0.05),
    (0, 4, 4, 0.05),
    (0, 5, 5, 0.05),
    (0, 6, 6, 0.05),
    (0, 7, 7, 0.05),
)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (8,), theta (64,), out (8,)."""
    # 168 ops, 8 intermediate terms, 8 of 8 outputs written (136 ops in loops)
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    x6 = x[6]
    x7 = x[7]
    phi0 = np.empty(8)
    t0 = x0**2
    t1 = x1**2
    t2 = x2**2
    t3 = x3**2
    t4 = x4**2
    t5 = x5**2
    t6 = x6**2
    t7 = x7**2
    phi0[0] = t0/(t0 + 1)
    phi0[1] = t1/(t1 + 1)
    phi0[2] = t2/(t2 + 1)
    phi0[3] = t3/(t3 + 1)
    phi0[4] = t4/(t4 + 1)
    phi0[5] = t5/(t5 + 1)
    phi0[6] = t6/(t6 + 1)
    phi0[7] = t7/(t7 + 1)
    out[0] = 0.5 - x0
    out[1] = 0.5 - x1
    out[2] = 0.5 - x2
    out[3] = 0.5 - x3
    out[4] = 0.5 - x4
    out[5] = 0.5 - x5
    out[6] = 0.5 - x6
    out[7] = 0.5 - x7
    # W (8 x 8), W[j, k] = theta[j*8 + k]: out[j] += sum_k W[j, k] phi0[k]
    for j in range(8):
        acc = 0.0
        for k in range(8):
            acc += theta[j*8 + k]*phi0[k]
        out[j] += acc


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 8), theta (64,), out (N, 8)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_jacobian_point(x, theta, out):
    """Jacobian df/dtheta at one point: x (8,), theta (64,), out (8, 64) with out[j, k] =
    df_j/dtheta_k."""
    # 24 ops, 8 intermediate terms, 64 of 512 outputs written (64 outputs in loops)
    out[:] = 0.0
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    x6 = x[6]
    x7 = x[7]
    phi0 = np.empty(8)
    t0 = x0**2
    t1 = x1**2
    t2 = x2**2
    t3 = x3**2
    t4 = x4**2
    t5 = x5**2
    t6 = x6**2
    t7 = x7**2
    phi0[0] = t0/(t0 + 1)
    phi0[1] = t1/(t1 + 1)
    phi0[2] = t2/(t2 + 1)
    phi0[3] = t3/(t3 + 1)
    phi0[4] = t4/(t4 + 1)
    phi0[5] = t5/(t5 + 1)
    phi0[6] = t6/(t6 + 1)
    phi0[7] = t7/(t7 + 1)
    # W (8 x 8), W[j, k] = theta[j*8 + k]: df/dW[j, k] = phi0[k]
    for j in range(8):
        for k in range(8):
            out[j, j*8 + k] = phi0[k]


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift_jacobian(X, theta, out):
    """df/dtheta at N points: X (N, 8), theta (64,), out (N, 8, 64)."""
    for i in numba.prange(X.shape[0]):
        drift_jacobian_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (8,), out_sin (16,), out_cos (1,).
    """
    # 32 ops, 8 intermediate terms, 17 of 17 outputs written
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    x6 = x[6]
    x7 = x[7]
    t0 = x0**2
    t1 = x1**2
    t2 = x2**2
    t3 = x3**2
    t4 = x4**2
    t5 = x5**2
    t6 = x6**2
    t7 = x7**2
    out_sin[0] = t0/(t0 + 1)
    out_sin[1] = t1/(t1 + 1)
    out_sin[2] = t2/(t2 + 1)
    out_sin[3] = t3/(t3 + 1)
    out_sin[4] = t4/(t4 + 1)
    out_sin[5] = t5/(t5 + 1)
    out_sin[6] = t6/(t6 + 1)
    out_sin[7] = t7/(t7 + 1)
    out_sin[8] = 0.5 - x0
    out_sin[9] = 0.5 - x1
    out_sin[10] = 0.5 - x2
    out_sin[11] = 0.5 - x3
    out_sin[12] = 0.5 - x4
    out_sin[13] = 0.5 - x5
    out_sin[14] = 0.5 - x6
    out_sin[15] = 0.5 - x7
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 8), out_sin (N, 16), out_cos (N, 1)."""
    for i in numba.prange(X.shape[0]):
        stein_features_point(X[i], out_sin[i], out_cos[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_row_point(x, s, J, dlogp_dt, out_a, out_b):
    """Local-route row at one probe: x (8,), score s (8,), Jacobian J (8, 8) with J[j, l] =
    ds_j/dx_l, dlogp_dt scalar; out_a (64,) = a(x), out_b (1,) = beta(x)."""
    # 226 ops, 24 intermediate terms, 65 of 65 outputs written (72 ops, 64 outputs in loops)
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    x6 = x[6]
    x7 = x[7]
    phi0 = np.empty(8)
    t0 = x0**2
    t1 = t0 + 1
    t2 = 1/t1
    t3 = x1**2
    t4 = t3 + 1
    t5 = 1/t4
    t6 = x2**2
    t7 = t6 + 1
    t8 = 1/t7
    t9 = x3**2
    t10 = t9 + 1
    t11 = 1/t10
    t12 = x4**2
    t13 = t12 + 1
    t14 = 1/t13
    t15 = x5**2
    t16 = t15 + 1
    t17 = 1/t16
    t18 = x6**2
    t19 = t18 + 1
    t20 = 1/t19
    t21 = x7**2
    t22 = t21 + 1
    t23 = 1/t22
    phi0[0] = t0*t2
    phi0[1] = t3*t5
    phi0[2] = t6*t8
    phi0[3] = t11*t9
    phi0[4] = t12*t14
    phi0[5] = t15*t17
    phi0[6] = t18*t20
    phi0[7] = t21*t23
    dphi0_0_0 = 2*t2*x0 - 2*x0**3/t1**2
    dphi0_1_1 = 2*t5*x1 - 2*x1**3/t4**2
    dphi0_2_2 = 2*t8*x2 - 2*x2**3/t7**2
    dphi0_3_3 = 2*t11*x3 - 2*x3**3/t10**2
    dphi0_4_4 = 2*t14*x4 - 2*x4**3/t13**2
    dphi0_5_5 = 2*t17*x5 - 2*x5**3/t16**2
    dphi0_6_6 = 2*t20*x6 - 2*x6**3/t19**2
    dphi0_7_7 = 2*t23*x7 - 2*x7**3/t22**2
    out_b[0] = (
        -dlogp_dt + (0.05)*J[0, 0] + (0.05)*J[1, 1] + (0.05)*J[2, 2] + (0.05)*J[3, 3]
        + (0.05)*J[4, 4] + (0.05)*J[5, 5] + (0.05)*J[6, 6] + (0.05)*J[7, 7] + (0.05)*s[0]**2
        - s[0]*(0.5 - x0) + (0.05)*s[1]**2 - s[1]*(0.5 - x1) + (0.05)*s[2]**2 - s[2]*(0.5 - x2)
        + (0.05)*s[3]**2 - s[3]*(0.5 - x3) + (0.05)*s[4]**2 - s[4]*(0.5 - x4) + (0.05)*s[5]**2
        - s[5]*(0.5 - x5) + (0.05)*s[6]**2 - s[6]*(0.5 - x6) + (0.05)*s[7]**2 - s[7]*(0.5 - x7) + 8
    )
    # W (8 x 8), W[j, k] = theta[j*8 + k]: d/dW[j, k] = phi0[k] s[j] + d phi0[k]/dx[j]
    for j in range(8):
        sj = s[j]
        for k in range(8):
            out_a[j*8 + k] = phi0[k]*sj
    out_a[0] += dphi0_0_0
    out_a[9] += dphi0_1_1
    out_a[18] += dphi0_2_2
    out_a[27] += dphi0_3_3
    out_a[36] += dphi0_4_4
    out_a[45] += dphi0_5_5
    out_a[54] += dphi0_6_6
    out_a[63] += dphi0_7_7


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_rows(X, S, J, dlogp_dt, A, b):
    """Local-route rows A[i] = a(x_i), b[i] = beta(x_i) (A theta = b at the truth) at probes X[i]:
    X, S (M, 8), J (M, 8, 8), dlogp_dt (M,) (zeros if stationary), A (M, 64),
    b (M,)."""
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i : i + 1])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_residual_point(x, s, J, dlogp_dt, theta, out_r, out_dr):
    """Local residual and its theta-gradient at one probe: x (8,), score s (8,), Jacobian J (8, 8),
    dlogp_dt scalar, theta (64,); out_r (1,) = R, out_dr (64,) = dR/dtheta."""
    # 354 ops, 24 intermediate terms, 65 of 65 outputs written (201 ops, 64 outputs in loops)
    x0 = x[0]
    x1 = x[1]
    x2 = x[2]
    x3 = x[3]
    x4 = x[4]
    x5 = x[5]
    x6 = x[6]
    x7 = x[7]
    phi0 = np.empty(8)
    t0 = x0**2
    t1 = t0 + 1
    t2 = 1/t1
    t3 = x1**2
    t4 = t3 + 1
    t5 = 1/t4
    t6 = x2**2
    t7 = t6 + 1
    t8 = 1/t7
    t9 = x3**2
    t10 = t9 + 1
    t11 = 1/t10
    t12 = x4**2
    t13 = t12 + 1
    t14 = 1/t13
    t15 = x5**2
    t16 = t15 + 1
    t17 = 1/t16
    t18 = x6**2
    t19 = t18 + 1
    t20 = 1/t19
    t21 = x7**2
    t22 = t21 + 1
    t23 = 1/t22
    phi0[0] = t0*t2
    phi0[1] = t3*t5
    phi0[2] = t6*t8
    phi0[3] = t11*t9
    phi0[4] = t12*t14
    phi0[5] = t15*t17
    phi0[6] = t18*t20
    phi0[7] = t21*t23
    dphi0_0_0 = 2*t2*x0 - 2*x0**3/t1**2
    dphi0_1_1 = 2*t5*x1 - 2*x1**3/t4**2
    dphi0_2_2 = 2*t8*x2 - 2*x2**3/t7**2
    dphi0_3_3 = 2*t11*x3 - 2*x3**3/t10**2
    dphi0_4_4 = 2*t14*x4 - 2*x4**3/t13**2
    dphi0_5_5 = 2*t17*x5 - 2*x5**3/t16**2
    dphi0_6_6 = 2*t20*x6 - 2*x6**3/t19**2
    dphi0_7_7 = 2*t23*x7 - 2*x7**3/t22**2
    out_r[0] = (
        dlogp_dt - 0.05*J[0, 0] - 0.05*J[1, 1] - 0.05*J[2, 2] - 0.05*J[3, 3] - 0.05*J[4, 4]
        - 0.05*J[5, 5] - 0.05*J[6, 6] - 0.05*J[7, 7] - 0.05*s[0]**2 + s[0]*(0.5 - x0) - 0.05*s[1]**2
        + s[1]*(0.5 - x1) - 0.05*s[2]**2 + s[2]*(0.5 - x2) - 0.05*s[3]**2 + s[3]*(0.5 - x3)
        - 0.05*s[4]**2 + s[4]*(0.5 - x4) - 0.05*s[5]**2 + s[5]*(0.5 - x5) - 0.05*s[6]**2
        + s[6]*(0.5 - x6) - 0.05*s[7]**2 + s[7]*(0.5 - x7) - 8
    )
    # W (8 x 8), W[j, k] = theta[j*8 + k]: d/dW[j, k] = phi0[k] s[j] + d phi0[k]/dx[j]
    for j in range(8):
        sj = s[j]
        for k in range(8):
            out_dr[j*8 + k] = phi0[k]*sj
    out_dr[0] += dphi0_0_0
    out_dr[9] += dphi0_1_1
    out_dr[18] += dphi0_2_2
    out_dr[27] += dphi0_3_3
    out_dr[36] += dphi0_4_4
    out_dr[45] += dphi0_5_5
    out_dr[54] += dphi0_6_6
    out_dr[63] += dphi0_7_7
    acc = 0.0
    for k in range(64):
        acc += theta[k]*out_dr[k]
    out_r[0] += acc


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_residual(X, S, J, dlogp_dt, theta, R, dR):
    """Local residual R[i] and dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k) at probes X[i]:
    X, S (M, 8), J (M, 8, 8), dlogp_dt (M,), theta (64,), R (M,), dR (M, 64)."""
    for i in range(X.shape[0]):
        local_residual_point(X[i], S[i], J[i], dlogp_dt[i], theta, R[i : i + 1], dR[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_lanes(x, theta, out, nl, work, nz_row, nz_basis, nz_w):
    """Simulator: drift at lanes l < nl of a block of chains, x (8*LANES,) with state j of lane l at
    x[j*LANES+l], theta (64,), out (8*LANES,); structurally zero components are not written
    (open_block zeroes out). work (K*LANES,): the blocks' basis functions; nz_*:
    block_weights(theta)."""
    # 168 ops, 8 intermediate terms, 8 of 8 outputs written (136 ops in loops)
    for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
        x0 = x[l]
        x1 = x[LANES + l]
        x2 = x[2*LANES + l]
        x3 = x[3*LANES + l]
        x4 = x[4*LANES + l]
        x5 = x[5*LANES + l]
        x6 = x[6*LANES + l]
        x7 = x[7*LANES + l]
        t0 = x0**2
        t1 = x1**2
        t2 = x2**2
        t3 = x3**2
        t4 = x4**2
        t5 = x5**2
        t6 = x6**2
        t7 = x7**2
        work[l] = t0/(t0 + 1)
        work[LANES + l] = t1/(t1 + 1)
        work[2*LANES + l] = t2/(t2 + 1)
        work[3*LANES + l] = t3/(t3 + 1)
        work[4*LANES + l] = t4/(t4 + 1)
        work[5*LANES + l] = t5/(t5 + 1)
        work[6*LANES + l] = t6/(t6 + 1)
        work[7*LANES + l] = t7/(t7 + 1)
        out[l] = 0.5 - x0
        out[LANES + l] = 0.5 - x1
        out[2*LANES + l] = 0.5 - x2
        out[3*LANES + l] = 0.5 - x3
        out[4*LANES + l] = 0.5 - x4
        out[5*LANES + l] = 0.5 - x5
        out[6*LANES + l] = 0.5 - x6
        out[7*LANES + l] = 0.5 - x7
    # W (8 x 8): the nonzero weights w = coefs[j]*W[j, k] (block_weights), j-major
    for q in range(nz_w.size):
        w = nz_w[q]
        o = out[nz_row[q]*LANES :]  # views, indexed by l >= 0: no wraparound
        v = work[nz_basis[q]*LANES :]
        for l in range(min(nl, LANES)):
            o[l] += w*v[l]


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def block_weights(theta):
    """Simulator: the nonzero weights of the matrix blocks, (j, k) in order: the drift
    component nz_row[q] gets nz_w[q] times basis function nz_basis[q] (a zero weight
    costs nothing in drift_lanes)."""
    nz_row = np.empty(64, dtype=np.int64)
    nz_basis = np.empty(64, dtype=np.int64)
    nz_w = np.empty(64)
    q = 0
    for j in range(8):
        for k in range(8):
            w = theta[j*8 + k]
            if w != 0.0:
                nz_row[q], nz_basis[q], nz_w[q] = j, k, w
                q += 1
    return nz_row[:q], nz_basis[:q], nz_w[:q]


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status):
    """RK4 drift plus Euler-Maruyama noise: C chains in blocks of lanes (dynosed_sym.kernels.lanes).

    x0 (C, 8), theta (64,), G (8, 8), keys (C,) uint64, out (n_keep, C, 8): every
    thin-th state after n_burn steps, status (C,) int64: 0 or the first non-finite step."""
    nz_row, nz_basis, nz_w = block_weights(theta)
    width, n_blocks = lanes.layout(x0.shape[0])
    for blk in range(n_blocks):
        x, xs, k1, k2, acc, eta, lkeys = lanes.open_block(x0, keys, status, G, blk, width)
        work = np.zeros(8 * LANES)
        for step in range(1, n_burn + thin * n_keep + 1):
            drift_lanes(x, theta, k1, width, work, nz_row, nz_basis, nz_w)
            lanes.rk4_first(x, k1, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width, work, nz_row, nz_basis, nz_w)
            lanes.rk4_middle(x, k2, xs, acc, 0.5 * dt, width)
            drift_lanes(xs, theta, k2, width, work, nz_row, nz_basis, nz_w)
            lanes.rk4_middle(x, k2, xs, acc, dt, width)
            drift_lanes(xs, theta, k2, width, work, nz_row, nz_basis, nz_w)
            lanes.rk4_last(x, k2, acc, G, eta, lkeys, step, dt, width)
            if lanes.stopped(x, out, status, blk, width, step, n_burn, thin):
                break
