# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0+62fa2304, template kernels_v1.
# model: grn_bcell    spec hash: 79f1c21c91ed610cbcf0339eccc6276e0d677148fb0f6e989846e1a67675ab1a
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: a4b6be3c841e79e0a7918f4609efe273e588b7dab6cd007bba331b28565ff9d5
# ============================================================================
"""Numba kernels for the SDE model ``grn_bcell``.

State (d = 7): p, b, r, x1, y1, x2, y2
Parameters (n = 21): W[0,0], W[0,1], W[0,2], W[0,3], W[0,4], W[0,5], W[0,6], W[1,0], W[1,1], W[1,2], W[1,3], W[1,4], W[1,5], W[1,6], W[2,0], W[2,1], W[2,2], W[2,3], W[2,4], W[2,5], W[2,6]
Affine in the parameters: True

Kernels and argument shapes (N samples, C chains, K_sin = 14, K_cos = 1):

    drift(X, theta, out)                     X (N, 7), theta (21,), out (N, 7)
    drift_jacobian(X, theta, out)            X (N, 7), theta (21,), out (N, 7, 21) = df/dtheta
    stein_features(X, out_sin, out_cos)      X (N, 7), out_sin (N, 14), out_cos (N, 1)
    local_rows(X, S, J, dlogp_dt, A, b)      X (M, 7) probes, S (M, 7) scores, J (M, 7, 7) score
                                             Jacobians (J[i, j, l] = ds_j/dx_l), dlogp_dt (M,),
                                             A (M, 21), b (M,)
    local_residual(X, S, J, dlogp_dt, theta, R, dR)
                                             X (M, 7) probes, S (M, 7), J (M, 7, 7), dlogp_dt (M,),
                                             theta (21,), R (M,) residual, dR (M, 21) = dR/dtheta
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 7), G (7, 7), keys (C,) uint64,
                                             out (n_keep, C, 7), status (C,) int64

Operation counts after joint CSE: drift 112, drift_jacobian 30, stein_features 53, local_rows 167, local_residual 253.
"""

import math

import numba
import numpy as np

NAME = 'grn_bcell'
SPEC_HASH = '79f1c21c91ed610cbcf0339eccc6276e0d677148fb0f6e989846e1a67675ab1a'
GENERATOR_VERSION = '0.1.0+62fa2304'
STATE = ('p', 'b', 'r', 'x1', 'y1', 'x2', 'y2')
PARAMS = ('W[0,0]', 'W[0,1]', 'W[0,2]', 'W[0,3]', 'W[0,4]', 'W[0,5]', 'W[0,6]', 'W[1,0]', 'W[1,1]', 'W[1,2]', 'W[1,3]', 'W[1,4]', 'W[1,5]', 'W[1,6]', 'W[2,0]', 'W[2,1]', 'W[2,2]', 'W[2,3]', 'W[2,4]', 'W[2,5]', 'W[2,6]')
IS_AFFINE = True
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
NOISE_DIM = 7
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.symbolic.SteinPieces):
#   A[:, k] gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, k, coef) in A_TERMS
#   b       gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, coef) in B_SIN_TERMS
#   b       gets coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    for (e, j, l, coef) in B_COS_TERMS
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


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (7,), theta (21,), out (7,)."""
    t0 = 1/(x[0]**2 + 1)
    t1 = 9*t0
    t2 = 1/(x[1]**2 + 1)
    t3 = 9*t2
    t4 = 1/(x[2]**2 + 1)
    t5 = t1*t2
    t6 = 100*t0
    t7 = 100*t2
    t8 = t2*t6
    t9 = x[3]**2 + x[4]**2
    t10 = 2.6*t0
    t11 = 2.6*t2
    t12 = t10*t2
    t13 = x[5]**2 + x[6]**2
    t14 = (0.01)*math.pi
    t15 = 1 - t9
    t16 = math.sqrt(2)*t14
    t17 = 1 - t13
    out[0] = theta[0]*t1 + theta[1]*t3 + 9*theta[2]*t4 + theta[3]*t5 + theta[4]*t1*t4 + theta[5]*t3*t4 + theta[6]*t4*t5 - x[0] + 1e-06
    out[1] = theta[7]*t6 + theta[8]*t7 + 100*theta[9]*t4 + theta[10]*t8 + theta[11]*t4*t6 + theta[12]*t4*t7 + theta[13]*t4*t8 - x[1]*(10*t2*x[4]**30/t9**15 + 1) + 2
    out[2] = theta[14]*t10 + theta[15]*t11 + 2.6*theta[16]*t4 + theta[17]*t12 + theta[18]*t10*t4 + theta[19]*t11*t4 + theta[20]*t12*t4 - x[2] + 0.1 + 5*t2*x[6]**30/t13**15
    out[3] = t14*x[4] + t15*x[3]
    out[4] = -t14*x[3] + t15*x[4]
    out[5] = t16*x[6] + t17*x[5]
    out[6] = -t16*x[5] + t17*x[6]


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 7), theta (21,), out (N, 7)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def drift_jacobian_point(x, theta, out):
    """Jacobian df/dtheta at one point: x (7,), theta (21,), out (7, 21), out[j, k] = df_j/dtheta_k."""
    t0 = 1/(x[0]**2 + 1)
    t1 = 9*t0
    t2 = 1/(x[1]**2 + 1)
    t3 = 9*t2
    t4 = 1/(x[2]**2 + 1)
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
    out[0, 7] = 0
    out[0, 8] = 0
    out[0, 9] = 0
    out[0, 10] = 0
    out[0, 11] = 0
    out[0, 12] = 0
    out[0, 13] = 0
    out[0, 14] = 0
    out[0, 15] = 0
    out[0, 16] = 0
    out[0, 17] = 0
    out[0, 18] = 0
    out[0, 19] = 0
    out[0, 20] = 0
    out[1, 0] = 0
    out[1, 1] = 0
    out[1, 2] = 0
    out[1, 3] = 0
    out[1, 4] = 0
    out[1, 5] = 0
    out[1, 6] = 0
    out[1, 7] = t6
    out[1, 8] = t7
    out[1, 9] = 100*t4
    out[1, 10] = t8
    out[1, 11] = t4*t6
    out[1, 12] = t4*t7
    out[1, 13] = t4*t8
    out[1, 14] = 0
    out[1, 15] = 0
    out[1, 16] = 0
    out[1, 17] = 0
    out[1, 18] = 0
    out[1, 19] = 0
    out[1, 20] = 0
    out[2, 0] = 0
    out[2, 1] = 0
    out[2, 2] = 0
    out[2, 3] = 0
    out[2, 4] = 0
    out[2, 5] = 0
    out[2, 6] = 0
    out[2, 7] = 0
    out[2, 8] = 0
    out[2, 9] = 0
    out[2, 10] = 0
    out[2, 11] = 0
    out[2, 12] = 0
    out[2, 13] = 0
    out[2, 14] = t9
    out[2, 15] = t10
    out[2, 16] = 2.6*t4
    out[2, 17] = t11
    out[2, 18] = t4*t9
    out[2, 19] = t10*t4
    out[2, 20] = t11*t4
    out[3, 0] = 0
    out[3, 1] = 0
    out[3, 2] = 0
    out[3, 3] = 0
    out[3, 4] = 0
    out[3, 5] = 0
    out[3, 6] = 0
    out[3, 7] = 0
    out[3, 8] = 0
    out[3, 9] = 0
    out[3, 10] = 0
    out[3, 11] = 0
    out[3, 12] = 0
    out[3, 13] = 0
    out[3, 14] = 0
    out[3, 15] = 0
    out[3, 16] = 0
    out[3, 17] = 0
    out[3, 18] = 0
    out[3, 19] = 0
    out[3, 20] = 0
    out[4, 0] = 0
    out[4, 1] = 0
    out[4, 2] = 0
    out[4, 3] = 0
    out[4, 4] = 0
    out[4, 5] = 0
    out[4, 6] = 0
    out[4, 7] = 0
    out[4, 8] = 0
    out[4, 9] = 0
    out[4, 10] = 0
    out[4, 11] = 0
    out[4, 12] = 0
    out[4, 13] = 0
    out[4, 14] = 0
    out[4, 15] = 0
    out[4, 16] = 0
    out[4, 17] = 0
    out[4, 18] = 0
    out[4, 19] = 0
    out[4, 20] = 0
    out[5, 0] = 0
    out[5, 1] = 0
    out[5, 2] = 0
    out[5, 3] = 0
    out[5, 4] = 0
    out[5, 5] = 0
    out[5, 6] = 0
    out[5, 7] = 0
    out[5, 8] = 0
    out[5, 9] = 0
    out[5, 10] = 0
    out[5, 11] = 0
    out[5, 12] = 0
    out[5, 13] = 0
    out[5, 14] = 0
    out[5, 15] = 0
    out[5, 16] = 0
    out[5, 17] = 0
    out[5, 18] = 0
    out[5, 19] = 0
    out[5, 20] = 0
    out[6, 0] = 0
    out[6, 1] = 0
    out[6, 2] = 0
    out[6, 3] = 0
    out[6, 4] = 0
    out[6, 5] = 0
    out[6, 6] = 0
    out[6, 7] = 0
    out[6, 8] = 0
    out[6, 9] = 0
    out[6, 10] = 0
    out[6, 11] = 0
    out[6, 12] = 0
    out[6, 13] = 0
    out[6, 14] = 0
    out[6, 15] = 0
    out[6, 16] = 0
    out[6, 17] = 0
    out[6, 18] = 0
    out[6, 19] = 0
    out[6, 20] = 0


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def drift_jacobian(X, theta, out):
    """df/dtheta at N points: X (N, 7), theta (21,), out (N, 7, 21)."""
    for i in numba.prange(X.shape[0]):
        drift_jacobian_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (7,), out_sin (14,), out_cos (1,)."""
    t0 = 1/(x[0]**2 + 1)
    t1 = 1/(x[1]**2 + 1)
    t2 = 1/(x[2]**2 + 1)
    t3 = t0*t1
    t4 = x[3]**2 + x[4]**2
    t5 = x[5]**2 + x[6]**2
    t6 = (0.01)*math.pi
    t7 = 1 - t4
    t8 = math.sqrt(2)*t6
    t9 = 1 - t5
    out_sin[0] = t0
    out_sin[1] = t1
    out_sin[2] = t2
    out_sin[3] = t3
    out_sin[4] = t0*t2
    out_sin[5] = t1*t2
    out_sin[6] = t2*t3
    out_sin[7] = 1e-06 - x[0]
    out_sin[8] = -x[1]*(10*t1*x[4]**30/t4**15 + 1) + 2
    out_sin[9] = -x[2] + 5*t1*x[6]**30/t5**15 + 0.1
    out_sin[10] = t6*x[4] + t7*x[3]
    out_sin[11] = -t6*x[3] + t7*x[4]
    out_sin[12] = t8*x[6] + t9*x[5]
    out_sin[13] = -t8*x[5] + t9*x[6]
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 7), out_sin (N, 14), out_cos (N, 1)."""
    for i in numba.prange(X.shape[0]):
        stein_features_point(X[i], out_sin[i], out_cos[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def local_row_point(x, s, J, dlogp_dt, out_a, out_b):
    """Local-route row at one probe: x (7,), score s (7,), Jacobian J (7, 7) with J[j, l] = ds_j/dx_l, dlogp_dt scalar; out_a (21,) = a(x), out_b (1,) = beta(x)."""
    t0 = x[0]**2 + 1
    t1 = 1/t0
    t2 = 9*s[0]
    t3 = t1*t2
    t4 = 18*x[0]/t0**2
    t5 = x[1]**2
    t6 = t5 + 1
    t7 = 1/t6
    t8 = t2*t7
    t9 = x[2]**2 + 1
    t10 = 1/t9
    t11 = t3*t7
    t12 = t4*t7
    t13 = 100*s[1]
    t14 = t1*t13
    t15 = t13*t7
    t16 = t6**(-2)
    t17 = 200*x[1]*t16
    t18 = t14*t7
    t19 = t1*t17
    t20 = 2.6*s[2]
    t21 = t1*t20
    t22 = t20*t7
    t23 = 5.2*x[2]/t9**2
    t24 = t21*t7
    t25 = t1*t23
    t26 = x[3]**2
    t27 = x[5]**2
    t28 = x[4]**2
    t29 = x[6]**2
    t30 = t26 + t28
    t31 = x[4]**30/t30**15
    t32 = 10*t31*t7
    t33 = (0.01)*math.pi
    t34 = 1 - t30
    t35 = math.sqrt(2)*t33
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
    out_b[0] = -dlogp_dt + 0.0001*J[0, 0] + 0.0001*J[1, 1] + 0.0001*J[2, 2] + 0.0001*J[3, 3] + 0.0001*J[4, 4] + 0.0001*J[5, 5] + 0.0001*J[6, 6] + 0.0001*s[0]**2 - s[0]*(1e-06 - x[0]) + 0.0001*s[1]**2 - s[1]*(-x[1]*(t32 + 1) + 2) + 0.0001*s[2]**2 - s[2]*(-x[2] + 0.1 + 5*t7*x[6]**30/t36**15) + 0.0001*s[3]**2 - s[3]*(t33*x[4] + t34*x[3]) + 0.0001*s[4]**2 - s[4]*(-t33*x[3] + t34*x[4]) + 0.0001*s[5]**2 - s[5]*(t35*x[6] + t37*x[5]) + 0.0001*s[6]**2 - s[6]*(-t35*x[5] + t37*x[6]) - 20*t16*t31*t5 + 4*t26 + 4*t27 + 4*t28 + 4*t29 + t32 - 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def local_rows(X, S, J, dlogp_dt, A, b):
    """Local-route rows at M probes: A[i] = a(x_i), b[i] = beta(x_i), so that A theta = b at the truth.

    X (M, 7) probes, S (M, 7) scores, J (M, 7, 7) score Jacobians (J[i, j, l] = ds_j/dx_l),
    dlogp_dt (M,) time derivative of log p (zeros for a stationary snapshot), A (M, 21), b (M,).
    """
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i:i + 1])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def local_residual_point(x, s, J, dlogp_dt, theta, out_r, out_dr):
    """Local residual and its theta-gradient at one probe: x (7,), score s (7,), Jacobian J (7, 7), dlogp_dt scalar, theta (21,); out_r (1,) = R, out_dr (21,) = dR/dtheta."""
    t0 = x[3]**2
    t1 = x[5]**2
    t2 = x[4]**2
    t3 = x[6]**2
    t4 = x[2]**2 + 1
    t5 = 5.2*x[2]/t4**2
    t6 = x[0]**2 + 1
    t7 = 18*x[0]/t6**2
    t8 = x[1]**2
    t9 = t8 + 1
    t10 = t9**(-2)
    t11 = 200*x[1]*t10
    t12 = 1/t6
    t13 = t12*t5
    t14 = 1/t9
    t15 = t14*t5
    t16 = t14*t7
    t17 = 1/t4
    t18 = theta[4]*t17
    t19 = t11*t12
    t20 = theta[12]*t17
    t21 = x[4]**30
    t22 = t0 + t2
    t23 = t22**(-15)
    t24 = 10*t14*t21*t23
    t25 = (0.01)*math.pi
    t26 = 1 - t22
    t27 = t13*t14
    t28 = math.sqrt(2)*t25
    t29 = t1 + t3
    t30 = 1 - t29
    t31 = theta[6]*t17
    t32 = theta[13]*t17
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
    out_r[0] = -theta[0]*t7 - theta[3]*t16 - theta[8]*t11 - theta[10]*t19 - theta[16]*t5 - theta[18]*t13 - theta[19]*t15 - theta[20]*t27 + dlogp_dt - 0.0001*J[0, 0] - 0.0001*J[1, 1] - 0.0001*J[2, 2] - 0.0001*J[3, 3] - 0.0001*J[4, 4] - 0.0001*J[5, 5] - 0.0001*J[6, 6] - 0.0001*s[0]**2 + s[0]*(theta[0]*t33 + theta[1]*t34 + theta[2]*t35 + theta[3]*t36 + theta[5]*t17*t34 - x[0] + t18*t33 + t31*t36 + 1e-06) - 0.0001*s[1]**2 + s[1]*(theta[7]*t41 + theta[8]*t42 + theta[9]*t43 + theta[10]*t44 + theta[11]*t17*t41 - x[1]*(t24 + 1) + t20*t42 + t32*t44 + 2) - 0.0001*s[2]**2 + s[2]*(theta[14]*t37 + theta[15]*t38 + theta[16]*t39 + theta[17]*t40 + theta[18]*t17*t37 + theta[19]*t17*t38 + theta[20]*t17*t40 - x[2] + 5*t14*x[6]**30/t29**15 + 0.1) - 0.0001*s[3]**2 + s[3]*(t25*x[4] + t26*x[3]) - 0.0001*s[4]**2 + s[4]*(-t25*x[3] + t26*x[4]) - 0.0001*s[5]**2 + s[5]*(t28*x[6] + t30*x[5]) - 0.0001*s[6]**2 + s[6]*(-t28*x[5] + t30*x[6]) - 4*t0 - 4*t1 + 20*t10*t21*t23*t8 - t11*t20 - t16*t31 - t18*t7 - t19*t32 - 4*t2 - t24 - 4*t3 + 1
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


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def local_residual(X, S, J, dlogp_dt, theta, R, dR):
    """Local Fokker-Planck residual R(x_i; theta) and dR/dtheta at M probes.

    X (M, 7) probes, S (M, 7) scores, J (M, 7, 7) score Jacobians (J[i, j, l] = ds_j/dx_l),
    dlogp_dt (M,), theta (21,), R (M,), dR (M, 21) with dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k).
    """
    for i in range(X.shape[0]):
        local_residual_point(X[i], S[i], J[i], dlogp_dt[i], theta, R[i:i + 1], dR[i])


# ---------------------------------------------------------------------------
# Simulator.  Chains run in blocks of up to LANES lanes; a block holds state j
# of lane l at [j, l] (flat: j*LANES + l) and every inner loop runs over lanes.
LANES = 64


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def drift_lanes(x, theta, out, nl):
    """Drift at lanes l < nl of a block: x (d*LANES,), theta (n,), out (d*LANES,); row j at j*LANES."""
    for l in range(min(nl, LANES)):  # the bound lets LLVM prove the indices non-negative
        t0 = 1/(x[0*LANES + l]**2 + 1)
        t1 = 9*t0
        t2 = 1/(x[1*LANES + l]**2 + 1)
        t3 = 9*t2
        t4 = 1/(x[2*LANES + l]**2 + 1)
        t5 = t1*t2
        t6 = 100*t0
        t7 = 100*t2
        t8 = t2*t6
        t9 = x[3*LANES + l]**2 + x[4*LANES + l]**2
        t10 = 2.6*t0
        t11 = 2.6*t2
        t12 = t10*t2
        t13 = x[5*LANES + l]**2 + x[6*LANES + l]**2
        t14 = (0.01)*math.pi
        t15 = 1 - t9
        t16 = math.sqrt(2)*t14
        t17 = 1 - t13
        out[0*LANES + l] = theta[0]*t1 + theta[1]*t3 + 9*theta[2]*t4 + theta[3]*t5 + theta[4]*t1*t4 + theta[5]*t3*t4 + theta[6]*t4*t5 - x[0*LANES + l] + 1e-06
        out[1*LANES + l] = theta[7]*t6 + theta[8]*t7 + 100*theta[9]*t4 + theta[10]*t8 + theta[11]*t4*t6 + theta[12]*t4*t7 + theta[13]*t4*t8 - x[1*LANES + l]*(10*t2*x[4*LANES + l]**30/t9**15 + 1) + 2
        out[2*LANES + l] = theta[14]*t10 + theta[15]*t11 + 2.6*theta[16]*t4 + theta[17]*t12 + theta[18]*t10*t4 + theta[19]*t11*t4 + theta[20]*t12*t4 - x[2*LANES + l] + 0.1 + 5*t2*x[6*LANES + l]**30/t13**15
        out[3*LANES + l] = t14*x[4*LANES + l] + t15*x[3*LANES + l]
        out[4*LANES + l] = -t14*x[3*LANES + l] + t15*x[4*LANES + l]
        out[5*LANES + l] = t16*x[6*LANES + l] + t17*x[5*LANES + l]
        out[6*LANES + l] = -t16*x[5*LANES + l] + t17*x[6*LANES + l]


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="never")
def noise_lanes(x, out, nl):
    """G(x) at lanes l < nl of a block: x (d*LANES,), out (d*d'*LANES,); G[i, q] at (i*d' + q)*LANES."""
    for l in range(min(nl, LANES)):
        pass  # constant noise: simulate_chains takes G as an argument


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _mix64(z):
    """SplitMix64 finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _unit_float(h):
    """1 + (top 52 bits of h) / 2**52: a uniform double in [1, 2), built from bits."""
    return np.uint64((h >> np.uint64(12)) | np.uint64(0x3FF0000000000000)).view(np.float64)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _log_unit(u):
    """log(u) for a normal double u in (0, 1]; error below 4e-16 relative (no libm call)."""
    b = np.float64(u).view(np.uint64)
    # u = 2**e * m with m in [1, 2); e as a double by the 2**52 trick (no int -> float conversion)
    m = np.uint64((b & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(0x3FF0000000000000)).view(np.float64)
    e = np.uint64((b >> np.uint64(52)) | np.uint64(0x4330000000000000)).view(np.float64) - 4503599627371519.0
    big = m > 1.4142135623730951
    m = 0.5 * m if big else m
    e = e + 1.0 if big else e
    # log m = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.1716: odd series to s^19
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    p = 0.10526315789473684
    p = p * z + 0.11764705882352941
    p = p * z + 0.13333333333333333
    p = p * z + 0.15384615384615385
    p = p * z + 0.18181818181818182
    p = p * z + 0.2222222222222222
    p = p * z + 0.2857142857142857
    p = p * z + 0.4
    p = p * z + 0.6666666666666666
    # log 2 split into an exact high part and a low part: e * 0.693147180369... is exact
    return e * 0.6931471803691238 + (e * 1.9082149292705877e-10 + (2.0 * s + s * z * p))


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _sqrt_nonneg(a):
    """sqrt(a) for finite a >= 0: Newton steps on 1/sqrt(a) (Numba's sqrt is a libm call that
    blocks vectorisation); error about 1 ulp."""
    y = np.uint64(np.uint64(0x5FE6EB50C7B537A9) - (np.float64(a).view(np.uint64) >> np.uint64(1))).view(np.float64)
    h = 0.5 * a
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    y = y * (1.5 - h * y * y)
    r = a * y
    return r + y * (h - 0.5 * r * r)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _sin_turns(v):
    """sin(2 pi v) for v in [-1/4, 1/4]: Taylor series to v^19 (error < 4e-16)."""
    v2 = v * v
    p = -0.012031585942120619
    p = p * v2 + 0.10422916220813978
    p = p * v2 - 0.7181223017785001
    p = p * v2 + 3.8199525848482803
    p = p * v2 - 15.094642576822984
    p = p * v2 + 42.058693944897634
    p = p * v2 - 76.70585975306136
    p = p * v2 + 81.60524927607504
    p = p * v2 - 41.341702240399755
    p = p * v2 + 6.283185307179586
    return p * v


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _fold(u):
    """Map u in [-1/2, 1/2] (turns) to v in [-1/4, 1/4] with sin(2 pi v) = sin(2 pi u)."""
    v = min(u, 0.5 - u)
    return max(v, -0.5 - v)


# fastmath={"contract"} only: FMA contraction of the polynomials (every lane runs the same
# instructions, so results stay independent of lane, block and thread); no other fast-math
# assumptions, so the hash and the bit manipulations are exact.
@numba.njit(parallel=False, fastmath={"contract"}, cache=True, error_model="numpy",
            boundscheck=False, nogil=True, inline="never")
def normals_lanes(keys, counter, eta, nq, nl):
    """Standard normals eta[q, l] (q < nq, l < nl) from the streams keyed by keys[l] (LANES,).

    Uniform number k of a stream is the SplitMix64 hash of key + k * golden; a Box-Muller pair
    uses numbers counter + p + 1 and counter + p + 2.  Returns the counter advanced past the
    2 * ceil(nq / 2) numbers used.  eta (>= nq + nq % 2, LANES).
    """
    golden = np.uint64(0x9E3779B97F4A7C15)
    counter = np.uint64(counter)  # an int64 counter would promote the hash input to float64
    for p in range(0, nq, 2):
        s1 = (counter + np.uint64(p + 1)) * golden
        s2 = (counter + np.uint64(p + 2)) * golden
        for l in range(min(nl, LANES)):
            u1 = 2.0 - _unit_float(_mix64(keys[l] + s1))  # (0, 1], multiples of 2**-52
            t = _unit_float(_mix64(keys[l] + s2)) - 1.5   # angle in turns, [-1/2, 1/2)
            rad = _sqrt_nonneg(-2.0 * _log_unit(u1))      # at most 8.49
            w = t + 0.25                                  # cos(2 pi t) = sin(2 pi (t + 1/4)); exact
            w = w - np.floor(w + 0.5)
            eta[p, l] = rad * _sin_turns(_fold(w))
            eta[p + 1, l] = rad * _sin_turns(_fold(t))
    return counter + np.uint64(2 * ((nq + 1) // 2))


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status):
    """Integrate C independent chains and record every ``thin``-th step after ``n_burn`` steps.

    x0 (C, d) start states, theta (n,), G (d, d') constant noise matrix (ignored when the
    noise depends on the state), keys (C,) uint64 per-chain stream keys, out (n_keep, C, d)
    recorded states, status (C,) int64: 0, or the first step at which a state was not finite.

    Chains run in blocks of ``width`` lanes (a multiple of 8, at most LANES, set by C alone).
    When a chain diverges its block stops: chains of that block that were still finite keep
    status 0 and incomplete records.
    """
    n_chains, d = x0.shape
    dn = G.shape[1]
    hdt = 0.5 * dt
    dt6 = dt / 6.0
    sqdt = math.sqrt(dt)
    total = n_burn + thin * n_keep
    width = min(LANES, 8 * max(1, -(-n_chains // 64)))  # >= 8 blocks when C allows
    n_blocks = -(-n_chains // width)
    for blk in numba.prange(n_blocks):
        c0 = blk * width
        nr = min(width, n_chains - c0)  # real lanes; lanes nr..width-1 repeat chain c0 + nr - 1
        x = np.empty((d, LANES))
        xs = np.empty((d, LANES))
        k1 = np.empty((d, LANES))
        k2 = np.empty((d, LANES))
        acc = np.empty((d, LANES))
        eta = np.empty((dn + 1, LANES))
        Gx = np.empty((d, dn, LANES if STATE_DEPENDENT_NOISE else 0))  # G(x) per lane (EM only)
        lkeys = np.empty(LANES, dtype=np.uint64)
        # flat views of the same buffers for the lane kernels (constant row offsets vectorise)
        xf = x.reshape(d * LANES)
        xsf = xs.reshape(d * LANES)
        k1f = k1.reshape(d * LANES)
        k2f = k2.reshape(d * LANES)
        Gxf = Gx.reshape(Gx.size)
        for l in range(width):
            c = c0 + min(l, nr - 1)
            lkeys[l] = keys[c]
            for j in range(d):
                x[j, l] = x0[c, j]
        for l in range(nr):
            status[c0 + l] = 0
        counter = np.uint64(0)
        kept = 0
        for step in range(1, total + 1):
            # RK4 for the drift; acc collects k1 + 2 k2 + 2 k3 + k4 in that order
            drift_lanes(xf, theta, k1f, width)
            for j in range(d):
                for l in range(width):
                    xs[j, l] = x[j, l] + hdt * k1[j, l]
                    acc[j, l] = k1[j, l]
            drift_lanes(xsf, theta, k2f, width)
            for j in range(d):
                for l in range(width):
                    xs[j, l] = x[j, l] + hdt * k2[j, l]
                    acc[j, l] = acc[j, l] + 2.0 * k2[j, l]
            drift_lanes(xsf, theta, k2f, width)
            for j in range(d):
                for l in range(width):
                    xs[j, l] = x[j, l] + dt * k2[j, l]
                    acc[j, l] = acc[j, l] + 2.0 * k2[j, l]
            drift_lanes(xsf, theta, k2f, width)
            # Euler-Maruyama noise increment sqrt(dt) G eta (zero entries of G skipped)
            counter = normals_lanes(lkeys, counter, eta, dn, width)
            for j in range(d):
                for l in range(width):
                    acc[j, l] = dt6 * (acc[j, l] + k2[j, l])
                for q in range(dn):
                    g = sqdt * G[j, q]
                    if g != 0.0:
                        for l in range(width):
                            acc[j, l] += g * eta[q, l]
                for l in range(width):
                    x[j, l] = x[j, l] + acc[j, l]
            # a non-finite coordinate stays non-finite (x + anything); v - v is nan exactly then
            nbad = 0
            for j in range(d):
                for l in range(nr):
                    v = x[j, l]
                    nbad += (v - v) != 0.0
            if nbad > 0:
                for l in range(nr):
                    for j in range(d):
                        v = x[j, l]
                        if (v - v) != 0.0:
                            status[c0 + l] = step
                break
            if step > n_burn and (step - n_burn) % thin == 0:
                for l in range(nr):
                    for j in range(d):
                        out[kept, c0 + l, j] = x[j, l]
                kept += 1
