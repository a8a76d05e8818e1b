# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0, template kernels_v1.
# model: grn_bcell    spec hash: 3d5590eaf53539a35742827c31ae9e4982c76211d11371df5af56b224235597b
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: c844e2469705a682a07ddd4c2663b5e732adbf568ca583e5b420bd70e1619575
# ============================================================================
"""Numba kernels for the SDE model ``grn_bcell``.

State (d = 7): p, b, r, x1, y1, x2, y2
Parameters (n = 21): W[0,0], W[0,1], W[0,2], W[0,3], W[0,4], W[0,5], W[0,6], W[1,0], W[1,1], W[1,2], W[1,3], W[1,4], W[1,5], W[1,6], W[2,0], W[2,1], W[2,2], W[2,3], W[2,4], W[2,5], W[2,6]
Affine in the parameters: True

Kernels and argument shapes (N samples, C chains, K_sin = 14, K_cos = 1):

    drift(X, theta, out)                     X (N, 7), theta (21,), out (N, 7)
    stein_features(X, out_sin, out_cos)      X (N, 7), out_sin (N, 14), out_cos (N, 1)
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 7), G (7, 7), keys (C,) uint64,
                                             out (n_keep, C, 7), status (C,) int64

Operation counts after joint CSE: drift 112, stein_features 53.
"""

import math

import numba
import numpy as np

NAME = 'grn_bcell'
SPEC_HASH = '3d5590eaf53539a35742827c31ae9e4982c76211d11371df5af56b224235597b'
GENERATOR_VERSION = '0.1.0'
STATE = ('p', 'b', 'r', 'x1', 'y1', 'x2', 'y2')
PARAMS = ('W[0,0]', 'W[0,1]', 'W[0,2]', 'W[0,3]', 'W[0,4]', 'W[0,5]', 'W[0,6]', 'W[1,0]', 'W[1,1]', 'W[1,2]', 'W[1,3]', 'W[1,4]', 'W[1,5]', 'W[1,6]', 'W[2,0]', 'W[2,1]', 'W[2,2]', 'W[2,3]', 'W[2,4]', 'W[2,5]', 'W[2,6]')
IS_AFFINE = True
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


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _mix64(z):
    """SplitMix64 finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True, inline="always")
def _fill_normals(key, counter, eta):
    """Standard normals into eta by Box-Muller on counter-based uniforms; returns the new counter."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    m = eta.shape[0]
    for q in range(0, m, 2):
        h1 = _mix64(key + (counter + np.uint64(1)) * golden)
        h2 = _mix64(key + (counter + np.uint64(2)) * golden)
        counter += np.uint64(2)
        u1 = (float(h1 >> np.uint64(11)) + 0.5) * 1.1102230246251565e-16
        u2 = float(h2 >> np.uint64(11)) * 1.1102230246251565e-16
        rad = math.sqrt(-2.0 * math.log(u1))
        eta[q] = rad * math.cos(6.283185307179586 * u2)
        if q + 1 < m:
            eta[q + 1] = rad * math.sin(6.283185307179586 * u2)
    return counter


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False,
            nogil=True)
def simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status):
    """Integrate C independent chains and record every ``thin``-th step after ``n_burn`` steps.

    x0 (C, d) start states, theta (n,), G (d, d') constant noise matrix (ignored when the
    noise depends on the state), keys (C,) uint64 per-chain stream keys, out (n_keep, C, d)
    recorded states, status (C,) int64: 0, or the first step at which a state was not finite.
    """
    n_chains, d = x0.shape
    dn = G.shape[1]
    sqdt = math.sqrt(dt)
    total = n_burn + thin * n_keep
    for c in numba.prange(n_chains):
        x = x0[c].copy()
        k1 = np.empty(d)
        k2 = np.empty(d)
        k3 = np.empty(d)
        k4 = np.empty(d)
        xs = np.empty(d)
        eta = np.empty(dn)
        Gx = G.copy()
        key = keys[c]
        counter = np.uint64(0)
        kept = 0
        status[c] = 0
        for step in range(1, total + 1):
            drift_point(x, theta, k1)
            for j in range(d):
                xs[j] = x[j] + 0.5 * dt * k1[j]
            drift_point(xs, theta, k2)
            for j in range(d):
                xs[j] = x[j] + 0.5 * dt * k2[j]
            drift_point(xs, theta, k3)
            for j in range(d):
                xs[j] = x[j] + dt * k3[j]
            drift_point(xs, theta, k4)
            counter = _fill_normals(key, counter, eta)
            for j in range(d):
                noise = 0.0
                for q in range(dn):
                    noise += Gx[j, q] * eta[q]
                x[j] = x[j] + dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]) + sqdt * noise
            finite = True
            for j in range(d):
                if not math.isfinite(x[j]):
                    finite = False
            if not finite:
                status[c] = step
                break
            if step > n_burn and (step - n_burn) % thin == 0:
                for j in range(d):
                    out[kept, c, j] = x[j]
                kept += 1
