# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0, template kernels_v1.
# model: lorenz    spec hash: 81254dbdf4540fef7e8ff9bca15f1fd8a492e32c840a4e9e15f2ed2c9d7d054f
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: db5f9baf8de8a8e4eab2edeffa6c2ad50b838afe3755e0d7dd83727452aef7bf
# ============================================================================
"""Numba kernels for the SDE model ``lorenz``.

State (d = 3): x, y, z
Parameters (n = 3): sigma, rho, beta
Affine in the parameters: True

Kernels and argument shapes (N samples, C chains, K_sin = 5, K_cos = 1):

    drift(X, theta, out)                     X (N, 3), theta (3,), out (N, 3)
    stein_features(X, out_sin, out_cos)      X (N, 3), out_sin (N, 5), out_cos (N, 1)
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 3), G (3, 3), keys (C,) uint64,
                                             out (n_keep, C, 3), status (C,) int64

Operation counts after joint CSE: drift 10, stein_features 5.
"""

import math

import numba
import numpy as np

NAME = 'lorenz'
SPEC_HASH = '81254dbdf4540fef7e8ff9bca15f1fd8a492e32c840a4e9e15f2ed2c9d7d054f'
GENERATOR_VERSION = '0.1.0'
STATE = ('x', 'y', 'z')
PARAMS = ('sigma', 'rho', 'beta')
IS_AFFINE = True
NOISE_DIM = 3
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.symbolic.SteinPieces):
#   A[:, k] gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, k, coef) in A_TERMS
#   b       gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, coef) in B_SIN_TERMS
#   b       gets coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    for (e, j, l, coef) in B_COS_TERMS
A_TERMS = (
    (0, 0, 0, 1.0),
    (1, 1, 1, 1.0),
    (2, 2, 2, -1.0),
)
B_SIN_TERMS = (
    (3, 1, 1.0),
    (4, 2, 1.0),
)
B_COS_TERMS = (
    (0, 0, 0, 0.3),
    (0, 1, 1, 0.3),
    (0, 2, 2, 0.3),
)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (3,), theta (3,), out (3,)."""
    t0 = -x[1]
    out[0] = theta[0]*(-t0 - x[0])
    out[1] = t0 + x[0]*(theta[1] - x[2])
    out[2] = -theta[2]*x[2] + x[0]*x[1]


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 3), theta (3,), out (N, 3)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (3,), out_sin (5,), out_cos (1,)."""
    out_sin[0] = -x[0] + x[1]
    out_sin[1] = x[0]
    out_sin[2] = x[2]
    out_sin[3] = -x[0]*x[2] - x[1]
    out_sin[4] = x[0]*x[1]
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 3), out_sin (N, 5), out_cos (N, 1)."""
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
