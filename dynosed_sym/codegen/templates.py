"""Small source templates for generated kernel modules.

Every ``numba.njit`` decorator writes all of its options out, so a reader sees
exactly how each kernel is compiled.  Arrays are always arguments, never module
globals, so Numba's on-disk cache stays valid.
"""

TEMPLATE_NAME = "kernels_v1"

BANNER = '''\
# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym {version}, template {template}.
# model: {name}    spec hash: {hash}
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: {content_hash}
# ============================================================================
'''

HEADER = '''\
"""Numba kernels for the SDE model ``{name}``.

State (d = {d}): {state}
Parameters (n = {n}): {params}
Affine in the parameters: {affine}

Kernels and argument shapes (N samples, C chains, K_sin = {n_sin}, K_cos = {n_cos}):

    drift(X, theta, out)                     X (N, {d}), theta ({n},), out (N, {d})
{stein_doc}    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, {d}), G ({d}, {dn}), keys (C,) uint64,
                                             out (n_keep, C, {d}), status (C,) int64

Operation counts after joint CSE: {op_counts}.
"""

import math

import numba
import numpy as np

NAME = {name!r}
SPEC_HASH = {hash!r}
GENERATOR_VERSION = {version!r}
STATE = {state_tuple}
PARAMS = {param_tuple}
IS_AFFINE = {affine}
NOISE_DIM = {dn}
STATE_DEPENDENT_NOISE = {state_noise}
'''

STEIN_DOC = '''\
    stein_features(X, out_sin, out_cos)      X (N, {d}), out_sin (N, {n_sin}), out_cos (N, {n_cos})
'''

STEIN_TABLES = '''
# Contraction tables of the global Stein fill (see dynosed_sym.symbolic.SteinPieces):
#   A[:, k] gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, k, coef) in A_TERMS
#   b       gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, coef) in B_SIN_TERMS
#   b       gets coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    for (e, j, l, coef) in B_COS_TERMS
A_TERMS = {a_terms}
B_SIN_TERMS = {b_sin_terms}
B_COS_TERMS = {b_cos_terms}
'''

POINT_OPTS = ('parallel=False, fastmath=False, cache=True, error_model="numpy", '
              'boundscheck=False, nogil=True, inline="never"')
BATCH_OPTS = ('parallel=True, fastmath=False, cache=True, error_model="numpy", '
              'boundscheck=False, nogil=True')

POINT_FUNCTION = '''

@numba.njit({opts})
def {fname}({args}):
    """{doc}"""
{body}
'''

BATCH_FUNCTION = '''

@numba.njit({opts})
def {fname}(X, {args}):
    """{doc}"""
    for i in numba.prange(X.shape[0]):
        {point}(X[i], {call_args})
'''

# The simulator: RK4 for the drift plus an Euler-Maruyama noise increment (the
# reference paper's scheme) when the noise is constant; plain Euler-Maruyama
# when G depends on the state.  Each chain draws its normals from a
# counter-based generator keyed by ``keys[c]``, so results do not depend on the
# number of threads or on how chains are scheduled.
SIMULATOR = '''

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
{step_body}
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
'''

RK4_STEP = '''\
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
                x[j] = x[j] + dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]) + sqdt * noise'''

EM_STEP = '''\
            drift_point(x, theta, k1)
            noise_point(x, Gx)
            counter = _fill_normals(key, counter, eta)
            for j in range(d):
                noise = 0.0
                for q in range(dn):
                    noise += Gx[j, q] * eta[q]
                x[j] = x[j] + dt * k1[j] + sqdt * noise'''
