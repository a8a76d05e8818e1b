# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0+2fa832f1, template kernels_v3.
# model: grn_bcell
# spec hash: 7df7721e90c0c35f923269ce9554623ba25c83e38c149d695dc42a764ea42114
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: 84da7aa4ddef60c3ad77781095e9ff4cbd2182daac107f0ce23e66cea2435eff
# ============================================================================
"""Numba kernels for the SDE model ``grn_bcell``.

d = 7 states, n = 21 parameters, affine in the parameters: True.

Slots (where each symbol sits in the kernels' arrays):

    x[0] = p    x[1] = b    x[2] = r    x[3] = x1   x[4] = y1   x[5] = x2   x[6] = y2
    theta[0] = W[0,0]    theta[1] = W[0,1]    theta[2] = W[0,2]    theta[3] = W[0,3]
    theta[4] = W[0,4]    theta[5] = W[0,5]    theta[6] = W[0,6]    theta[7] = W[1,0]
    theta[8] = W[1,1]    theta[9] = W[1,2]    theta[10] = W[1,3]   theta[11] = W[1,4]
    theta[12] = W[1,5]   theta[13] = W[1,6]   theta[14] = W[2,0]   theta[15] = W[2,1]
    theta[16] = W[2,2]   theta[17] = W[2,3]   theta[18] = W[2,4]   theta[19] = W[2,5]
    theta[20] = W[2,6]
    a kernel names the slots it reads: state, parameter and input names as Python names
    local kernels: s[j] = d log p/dx[j] (score), J[j, l] = ds[j]/dx[l], dlogp_dt = d log p/dt
    lane kernels (simulator): x[j*LANES + l] = x[j] of lane l, LANES = 64
    noise: G (7, 7) constant, simulate_chains's argument (CompiledModel.noise_matrix)
    one step adds sqrt(dt) * G[i, q] * eta[q] to x[i] (eta standard normal)

Kernels and argument shapes (N samples, M probes, C chains, K_sin = 14, K_cos = 1):

    drift(X, theta, out)                     X (N, 7), theta (21,), out (N, 7)
    drift_jacobian(X, theta, out)            X (N, 7), theta (21,), out (N, 7, 21) = df/dtheta
    stein_features(X, out_sin, out_cos)      X (N, 7), out_sin (N, 14), out_cos (N, 1)
    local_rows(X, S, J, dlogp_dt, A, b)      X (M, 7), S (M, 7), J (M, 7, 7), dlogp_dt (M,),
                                             A (M, 21), b (M,)
    local_residual(X, S, J, dlogp_dt, theta, R, dR)
                                             X (M, 7), S (M, 7), J (M, 7, 7), dlogp_dt (M,),
                                             theta (21,), R (M,), dR (M, 21) = dR/dtheta
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 7), G (7, 7), keys (C,) uint64,
                                             out (n_keep, C, 7), status (C,) int64

Operation counts of the printed kernels (after joint CSE; terms: intermediate CSE terms;
written: outputs assigned, structural zeros are not; inputs: slots read of each array):

    kernel                ops  terms    written  inputs read
    drift_point           111     18     7 of 7  x 7/7, theta 21/21
    drift_jacobian_point   30     12  21 of 147  x 3/7, theta 0/21
    stein_features_point   54     10   15 of 15  x 7/7
    local_row_point       169     38   22 of 22  x 7/7, s 7/7, J 7/49, dlogp_dt
    local_residual_point  261     54   22 of 22  x 7/7, s 7/7, J 7/49, dlogp_dt, theta 21/21
    drift_lanes           111     18     7 of 7  x 7/7, theta 21/21
"""

import math

import numba
import numpy as np

from dynosed_sym.kernels import lanes
from dynosed_sym.kernels.lanes import LANES

NAME = 'grn_bcell'
SPEC_HASH = '7df7721e90c0c35f923269ce9554623ba25c83e38c149d695dc42a764ea42114'
GENERATOR_VERSION = '0.1.0+2fa832f1'
STATE = ('p', 'b', 'r', 'x1', 'y1', 'x2', 'y2')
PARAMS = (*(f"W[{j},{k}]" for j in range(3) for k in range(7)),)
# known inputs of an experiment: every kernel's last argument u holds their values
INPUTS = ()
IS_AFFINE = True
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = tuple(range(21))
NOISE_DIM = 7
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.model.derivation.SteinPieces):
#   A[:, k] += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, k, coef) in A_TERMS
#   b       += coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])    (e, j, coef) in B_SIN_TERMS
#   b       += coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    (e, j, l, coef) in B_COS_TERMS
#   A[:, first + r*K + k] += coefs[r] * omega[:, rows[r]] * (sum_i sin_i * out_sin[i, feats[k]])
#                                            (first, rows, coefs, feats) in A_BLOCKS (matrix blocks)
A_TERMS = (
    (0, 0, 0, 9.0),
    (1, 0, 1, 9.0),
    (2, 0, 2, 9.0),
    (3, 0, 3, 9.0),
    (4, 0, 4, 9.0),
    (5, 0, 5, 9.0),
    (6, 0, 6, 9.0),
    (0, 1, 7, 100.0),
    (1, 1, 8, 100.0),
    (2, 1, 9, 100.0),
    (3, 1, 10, 100.0),
    (4, 1, 11, 100.0),
    (5, 1, 12, 100.0),
    (6, 1, 13, 100.0),
    (0, 2, 14, 2.6),
    (1, 2, 15, 2.6),
    (2, 2, 16, 2.6),
    (3, 2, 17, 2.6),
    (4, 2, 18, 2.6),
    (5, 2, 19, 2.6),
    (6, 2, 20, 2.6),
)
A_BLOCKS = ()
B_SIN_TERMS = (
    (7, 0, 1.0),
    (8, 1, 1.0),
    (9, 2, 1.0),
    (10, 3, 1.0),
    (11, 4, 1.0),
    (12, 5, 1.0),
    (13, 6, 1.0),
)
B_COS_TERMS = (
    (0, 0, 0, 0.0001),
    (0, 1, 1, 0.0001),
    (0, 2, 2, 0.0001),
    (0, 3, 3, 0.0001),
    (0, 4, 4, 0.0001),
    (0, 5, 5, 0.0001),
    (0, 6, 6, 0.0001),
)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (7,), theta (21,), out (7,)."""
    # 111 ops, 18 intermediate terms, 7 of 7 outputs written
    p = x[0]
    b = x[1]
    r = x[2]
    x1 = x[3]
    y1 = x[4]
    x2 = x[5]
    y2 = x[6]
    W_0_0 = theta[0]
    W_0_1 = theta[1]
    W_0_2 = theta[2]
    W_0_3 = theta[3]
    W_0_4 = theta[4]
    W_0_5 = theta[5]
    W_0_6 = theta[6]
    W_1_0 = theta[7]
    W_1_1 = theta[8]
    W_1_2 = theta[9]
    W_1_3 = theta[10]
    W_1_4 = theta[11]
    W_1_5 = theta[12]
    W_1_6 = theta[13]
    W_2_0 = theta[14]
    W_2_1 = theta[15]
    W_2_2 = theta[16]
    W_2_3 = theta[17]
    W_2_4 = theta[18]
    W_2_5 = theta[19]
    W_2_6 = theta[20]
    t0 = 1/(p**2 + 1)
    t1 = 9*t0
    t2 = 1/(b**2 + 1)
    t3 = 9*t2
    t4 = 1/(r**2 + 1)
    t5 = t1*t2
    t6 = 100*t0
    t7 = 100*t2
    t8 = t2*t6
    t9 = x1**2 + y1**2
    t10 = 2.6*t0
    t11 = 2.6*t2
    t12 = t10*t2
    t13 = x2**2 + y2**2
    t14 = 0.031415926535897934  # pi/100
    t15 = 1 - t9
    # 1.4142135623730951 = sqrt(2)
    t16 = 1.4142135623730951*t14
    t17 = 1 - t13
    out[0] = (
        W_0_0*t1 + W_0_1*t3 + 9*W_0_2*t4 + W_0_3*t5 + W_0_4*t1*t4 + W_0_5*t3*t4 + W_0_6*t4*t5 - p
        + 1e-06
    )
    out[1] = (
        W_1_0*t6 + W_1_1*t7 + 100*W_1_2*t4 + W_1_3*t8 + W_1_4*t4*t6 + W_1_5*t4*t7 + W_1_6*t4*t8
        - b*(10*t2*y1**30/t9**15 + 1) + 2
    )
    out[2] = (
        W_2_0*t10 + W_2_1*t11 + 2.6*W_2_2*t4 + W_2_3*t12 + W_2_4*t10*t4 + W_2_5*t11*t4
        + W_2_6*t12*t4 - r + 0.1 + 5*t2*y2**30/t13**15
    )
    out[3] = t14*y1 + t15*x1
    out[4] = -t14*x1 + t15*y1
    out[5] = t16*y2 + t17*x2
    out[6] = -t16*x2 + t17*y2


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 7), theta (21,), out (N, 7)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_jacobian_point(x, theta, out):
    """Jacobian df/dtheta at one point: x (7,), theta (21,), out (7, 21) with out[j, k] =
    df_j/dtheta_k."""
    # 30 ops, 12 intermediate terms, 21 of 147 outputs written
    out[:] = 0.0
    p = x[0]
    b = x[1]
    r = x[2]
    t0 = 1/(p**2 + 1)
    t1 = 9*t0
    t2 = 1/(b**2 + 1)
    t3 = 9*t2
    t4 = 1/(r**2 + 1)
    t5 = t1*t2
    t6 = 100*t0
    t7 = 100*t2
    t8 = t2*t6
    t9 = 2.6*t0
    t10 = 2.6*t2
    t11 = t2*t9
    out[0, 0] = t1
    out[0, 1] = t3
    out[0, 2] = 9*t4
    out[0, 3] = t5
    out[0, 4] = t1*t4
    out[0, 5] = t3*t4
    out[0, 6] = t4*t5
    out[1, 7] = t6
    out[1, 8] = t7
    out[1, 9] = 100*t4
    out[1, 10] = t8
    out[1, 11] = t4*t6
    out[1, 12] = t4*t7
    out[1, 13] = t4*t8
    out[2, 14] = t9
    out[2, 15] = t10
    out[2, 16] = 2.6*t4
    out[2, 17] = t11
    out[2, 18] = t4*t9
    out[2, 19] = t10*t4
    out[2, 20] = t11*t4


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def drift_jacobian(X, theta, out):
    """df/dtheta at N points: X (N, 7), theta (21,), out (N, 7, 21)."""
    for i in numba.prange(X.shape[0]):
        drift_jacobian_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (7,), out_sin (14,), out_cos (1,).
    """
    # 54 ops, 10 intermediate terms, 15 of 15 outputs written
    p = x[0]
    b = x[1]
    r = x[2]
    x1 = x[3]
    y1 = x[4]
    x2 = x[5]
    y2 = x[6]
    t0 = 1/(p**2 + 1)
    t1 = 1/(b**2 + 1)
    t2 = 1/(r**2 + 1)
    t3 = t0*t1
    t4 = x1**2 + y1**2
    t5 = x2**2 + y2**2
    t6 = 0.031415926535897934  # pi/100
    t7 = 1 - t4
    # 1.4142135623730951 = sqrt(2)
    t8 = 1.4142135623730951*t6
    t9 = 1 - t5
    out_sin[0] = t0
    out_sin[1] = t1
    out_sin[2] = t2
    out_sin[3] = t3
    out_sin[4] = t0*t2
    out_sin[5] = t1*t2
    out_sin[6] = t2*t3
    out_sin[7] = 1e-06 - p
    out_sin[8] = -b*(10*t1*y1**30/t4**15 + 1) + 2
    out_sin[9] = -r + 5*t1*y2**30/t5**15 + 0.1
    out_sin[10] = t6*y1 + t7*x1
    out_sin[11] = -t6*x1 + t7*y1
    out_sin[12] = t8*y2 + t9*x2
    out_sin[13] = -t8*x2 + t9*y2
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 7), out_sin (N, 14), out_cos (N, 1)."""
    for i in numba.prange(X.shape[0]):
        stein_features_point(X[i], out_sin[i], out_cos[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_row_point(x, s, J, dlogp_dt, out_a, out_b):
    """Local-route row at one probe: x (7,), score s (7,), Jacobian J (7, 7) with J[j, l] =
    ds_j/dx_l, dlogp_dt scalar; out_a (21,) = a(x), out_b (1,) = beta(x)."""
    # 169 ops, 38 intermediate terms, 22 of 22 outputs written
    p = x[0]
    b = x[1]
    r = x[2]
    x1 = x[3]
    y1 = x[4]
    x2 = x[5]
    y2 = x[6]
    t0 = p**2 + 1
    t1 = 1/t0
    t2 = 9*s[0]
    t3 = t1*t2
    t4 = 18*p/t0**2
    t5 = b**2
    t6 = t5 + 1
    t7 = 1/t6
    t8 = t2*t7
    t9 = r**2 + 1
    t10 = 1/t9
    t11 = t3*t7
    t12 = t4*t7
    t13 = 100*s[1]
    t14 = t1*t13
    t15 = t13*t7
    t16 = 1/t6**2
    t17 = 200*b*t16
    t18 = t14*t7
    t19 = t1*t17
    t20 = 2.6*s[2]
    t21 = t1*t20
    t22 = t20*t7
    t23 = 5.2*r/t9**2
    t24 = t21*t7
    t25 = t1*t23
    t26 = x1**2
    t27 = x2**2
    t28 = y1**2
    t29 = y2**2
    t30 = t26 + t28
    t31 = y1**30/t30**15
    t32 = 10*t31*t7
    t33 = 0.031415926535897934  # pi/100
    t34 = 1 - t30
    # 1.4142135623730951 = sqrt(2)
    t35 = 1.4142135623730951*t33
    t36 = t27 + t29
    t37 = 1 - t36
    out_a[0] = t3 - t4
    out_a[1] = t8
    out_a[2] = t10*t2
    out_a[3] = t11 - t12
    out_a[4] = t10*t3 - t10*t4
    out_a[5] = t10*t8
    out_a[6] = t10*t11 - t10*t12
    out_a[7] = t14
    out_a[8] = t15 - t17
    out_a[9] = t10*t13
    out_a[10] = t18 - t19
    out_a[11] = t10*t14
    out_a[12] = t10*t15 - t10*t17
    out_a[13] = t10*t18 - t10*t19
    out_a[14] = t21
    out_a[15] = t22
    out_a[16] = t10*t20 - t23
    out_a[17] = t24
    out_a[18] = t10*t21 - t25
    out_a[19] = t10*t22 - t23*t7
    out_a[20] = t10*t24 - t25*t7
    out_b[0] = (
        -dlogp_dt + 0.0001*J[0, 0] + 0.0001*J[1, 1] + 0.0001*J[2, 2] + 0.0001*J[3, 3]
        + 0.0001*J[4, 4] + 0.0001*J[5, 5] + 0.0001*J[6, 6] + 0.0001*s[0]**2 - s[0]*(1e-06 - p)
        + 0.0001*s[1]**2 - s[1]*(-b*(t32 + 1) + 2) + 0.0001*s[2]**2
        - s[2]*(-r + 0.1 + 5*t7*y2**30/t36**15) + 0.0001*s[3]**2 - s[3]*(t33*y1 + t34*x1)
        + 0.0001*s[4]**2 - s[4]*(-t33*x1 + t34*y1) + 0.0001*s[5]**2 - s[5]*(t35*y2 + t37*x2)
        + 0.0001*s[6]**2 - s[6]*(-t35*x2 + t37*y2) - 20*t16*t31*t5 + 4*t26 + 4*t27 + 4*t28 + 4*t29
        + t32 - 1
    )


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_rows(X, S, J, dlogp_dt, A, b):
    """Local-route rows A[i] = a(x_i), b[i] = beta(x_i) (A theta = b at the truth) at probes X[i]:
    X, S (M, 7), J (M, 7, 7), dlogp_dt (M,) (zeros if stationary), A (M, 21),
    b (M,)."""
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i : i + 1])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def local_residual_point(x, s, J, dlogp_dt, theta, out_r, out_dr):
    """Local residual and its theta-gradient at one probe: x (7,), score s (7,), Jacobian J (7, 7),
    dlogp_dt scalar, theta (21,); out_r (1,) = R, out_dr (21,) = dR/dtheta."""
    # 261 ops, 54 intermediate terms, 22 of 22 outputs written
    p = x[0]
    b = x[1]
    r = x[2]
    x1 = x[3]
    y1 = x[4]
    x2 = x[5]
    y2 = x[6]
    W_0_0 = theta[0]
    W_0_1 = theta[1]
    W_0_2 = theta[2]
    W_0_3 = theta[3]
    W_0_4 = theta[4]
    W_0_5 = theta[5]
    W_0_6 = theta[6]
    W_1_0 = theta[7]
    W_1_1 = theta[8]
    W_1_2 = theta[9]
    W_1_3 = theta[10]
    W_1_4 = theta[11]
    W_1_5 = theta[12]
    W_1_6 = theta[13]
    W_2_0 = theta[14]
    W_2_1 = theta[15]
    W_2_2 = theta[16]
    W_2_3 = theta[17]
    W_2_4 = theta[18]
    W_2_5 = theta[19]
    W_2_6 = theta[20]
    t0 = x1**2
    t1 = x2**2
    t2 = y1**2
    t3 = y2**2
    t4 = r**2 + 1
    t5 = 5.2*r/t4**2
    t6 = p**2 + 1
    t7 = 18*p/t6**2
    t8 = b**2
    t9 = t8 + 1
    t10 = 1/t9**2
    t11 = 200*b*t10
    t12 = 1/t6
    t13 = t12*t5
    t14 = 1/t9
    t15 = t14*t5
    t16 = t14*t7
    t17 = 1/t4
    t18 = W_0_4*t17
    t19 = t11*t12
    t20 = W_1_5*t17
    t21 = y1**30
    t22 = t0 + t2
    t23 = 1/t22**15
    t24 = 10*t14*t21*t23
    t25 = 0.031415926535897934  # pi/100
    t26 = 1 - t22
    t27 = t13*t14
    # 1.4142135623730951 = sqrt(2)
    t28 = 1.4142135623730951*t25
    t29 = t1 + t3
    t30 = 1 - t29
    t31 = W_0_6*t17
    t32 = W_1_6*t17
    t33 = 9*t12
    t34 = 9*t14
    t35 = 9*t17
    t36 = t14*t33
    t37 = 2.6*t12
    t38 = 2.6*t14
    t39 = 2.6*t17
    t40 = t14*t37
    t41 = 100*t12
    t42 = 100*t14
    t43 = 100*t17
    t44 = t14*t41
    t45 = s[0]*t33
    t46 = s[0]*t34
    t47 = t14*t45
    t48 = s[1]*t41
    t49 = s[1]*t42
    t50 = t14*t48
    t51 = s[2]*t37
    t52 = s[2]*t38
    t53 = t14*t51
    out_r[0] = (
        -W_0_0*t7 - W_0_3*t16 - W_1_1*t11 - W_1_3*t19 - W_2_2*t5 - W_2_4*t13 - W_2_5*t15 - W_2_6*t27
        + dlogp_dt - 0.0001*J[0, 0] - 0.0001*J[1, 1] - 0.0001*J[2, 2] - 0.0001*J[3, 3]
        - 0.0001*J[4, 4] - 0.0001*J[5, 5] - 0.0001*J[6, 6] - 0.0001*s[0]**2
        + s[0]*(
            W_0_0*t33 + W_0_1*t34 + W_0_2*t35 + W_0_3*t36 + W_0_5*t17*t34 - p + t18*t33 + t31*t36
            + 1e-06
        ) - 0.0001*s[1]**2
        + s[1]*(
            W_1_0*t41 + W_1_1*t42 + W_1_2*t43 + W_1_3*t44 + W_1_4*t17*t41 - b*(t24 + 1) + t20*t42
            + t32*t44 + 2
        ) - 0.0001*s[2]**2
        + s[2]*(
            W_2_0*t37 + W_2_1*t38 + W_2_2*t39 + W_2_3*t40 + W_2_4*t17*t37 + W_2_5*t17*t38
            + W_2_6*t17*t40 - r + 5*t14*y2**30/t29**15 + 0.1
        ) - 0.0001*s[3]**2 + s[3]*(t25*y1 + t26*x1) - 0.0001*s[4]**2 + s[4]*(-t25*x1 + t26*y1)
        - 0.0001*s[5]**2 + s[5]*(t28*y2 + t30*x2) - 0.0001*s[6]**2 + s[6]*(-t28*x2 + t30*y2) - 4*t0
        - 4*t1 + 20*t10*t21*t23*t8 - t11*t20 - t16*t31 - t18*t7 - t19*t32 - 4*t2 - t24 - 4*t3 + 1
    )
    out_dr[0] = t45 - t7
    out_dr[1] = t46
    out_dr[2] = s[0]*t35
    out_dr[3] = -t16 + t47
    out_dr[4] = t17*t45 - t17*t7
    out_dr[5] = t17*t46
    out_dr[6] = -t16*t17 + t17*t47
    out_dr[7] = t48
    out_dr[8] = -t11 + t49
    out_dr[9] = s[1]*t43
    out_dr[10] = -t19 + t50
    out_dr[11] = t17*t48
    out_dr[12] = -t11*t17 + t17*t49
    out_dr[13] = -t17*t19 + t17*t50
    out_dr[14] = t51
    out_dr[15] = t52
    out_dr[16] = s[2]*t39 - t5
    out_dr[17] = t53
    out_dr[18] = -t13 + t17*t51
    out_dr[19] = -t15 + t17*t52
    out_dr[20] = t17*t53 - t27


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def local_residual(X, S, J, dlogp_dt, theta, R, dR):
    """Local residual R[i] and dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k) at probes X[i]:
    X, S (M, 7), J (M, 7, 7), dlogp_dt (M,), theta (21,), R (M,), dR (M, 21)."""
    for i in range(X.shape[0]):
        local_residual_point(X[i], S[i], J[i], dlogp_dt[i], theta, R[i : i + 1], dR[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_lanes(x, theta, out, nl):
    """Simulator: drift at lanes l < nl of a block of chains, x (7*LANES,) with state j of lane l at
    x[j*LANES+l], theta (21,), out (7*LANES,); structurally zero components are not written
    (open_block zeroes out)."""
    # 111 ops, 18 intermediate terms, 7 of 7 outputs written
    W_0_0 = theta[0]
    W_0_1 = theta[1]
    W_0_2 = theta[2]
    W_0_3 = theta[3]
    W_0_4 = theta[4]
    W_0_5 = theta[5]
    W_0_6 = theta[6]
    W_1_0 = theta[7]
    W_1_1 = theta[8]
    W_1_2 = theta[9]
    W_1_3 = theta[10]
    W_1_4 = theta[11]
    W_1_5 = theta[12]
    W_1_6 = theta[13]
    W_2_0 = theta[14]
    W_2_1 = theta[15]
    W_2_2 = theta[16]
    W_2_3 = theta[17]
    W_2_4 = theta[18]
    W_2_5 = theta[19]
    W_2_6 = theta[20]
    for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
        p = x[l]
        b = x[LANES + l]
        r = x[2*LANES + l]
        x1 = x[3*LANES + l]
        y1 = x[4*LANES + l]
        x2 = x[5*LANES + l]
        y2 = x[6*LANES + l]
        t0 = 1/(p**2 + 1)
        t1 = 9*t0
        t2 = 1/(b**2 + 1)
        t3 = 9*t2
        t4 = 1/(r**2 + 1)
        t5 = t1*t2
        t6 = 100*t0
        t7 = 100*t2
        t8 = t2*t6
        t9 = x1**2 + y1**2
        t10 = 2.6*t0
        t11 = 2.6*t2
        t12 = t10*t2
        t13 = x2**2 + y2**2
        t14 = 0.031415926535897934  # pi/100
        t15 = 1 - t9
        # 1.4142135623730951 = sqrt(2)
        t16 = 1.4142135623730951*t14
        t17 = 1 - t13
        out[l] = (
            W_0_0*t1 + W_0_1*t3 + 9*W_0_2*t4 + W_0_3*t5 + W_0_4*t1*t4 + W_0_5*t3*t4 + W_0_6*t4*t5
            - p + 1e-06
        )
        out[LANES + l] = (
            W_1_0*t6 + W_1_1*t7 + 100*W_1_2*t4 + W_1_3*t8 + W_1_4*t4*t6 + W_1_5*t4*t7 + W_1_6*t4*t8
            - b*(10*t2*y1**30/t9**15 + 1) + 2
        )
        out[2*LANES + l] = (
            W_2_0*t10 + W_2_1*t11 + 2.6*W_2_2*t4 + W_2_3*t12 + W_2_4*t10*t4 + W_2_5*t11*t4
            + W_2_6*t12*t4 - r + 0.1 + 5*t2*y2**30/t13**15
        )
        out[3*LANES + l] = t14*y1 + t15*x1
        out[4*LANES + l] = -t14*x1 + t15*y1
        out[5*LANES + l] = t16*y2 + t17*x2
        out[6*LANES + l] = -t16*x2 + t17*y2


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status):
    """RK4 drift plus Euler-Maruyama noise: C chains in blocks of lanes (dynosed_sym.kernels.lanes).

    x0 (C, 7), theta (21,), G (7, 7), keys (C,) uint64, out (n_keep, C, 7): every
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
