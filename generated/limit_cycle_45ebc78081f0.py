# ============================================================================
# GENERATED FILE - DO NOT EDIT.  Produced by dynosed_sym 0.1.0+62fa2304, template kernels_v1.
# model: limit_cycle    spec hash: 45ebc78081f0a1df393a150c30e92805dc0d14bdf873e98a3045f4926915eb8f
# Regenerate with ds.compile_model(model) or `python -m dynosed_sym.codegen MODEL.py`.
# content-sha256: ea42b88d4691b94b7fd377df310e43751dd3ded72e276844f339ce5a701fb39a
# ============================================================================
"""Numba kernels for the SDE model ``limit_cycle``.

State (d = 2): x, y
Parameters (n = 3): a, c, omega
Affine in the parameters: True

Kernels and argument shapes (N samples, C chains, K_sin = 4, K_cos = 1):

    drift(X, theta, out)                     X (N, 2), theta (3,), out (N, 2)
    drift_jacobian(X, theta, out)            X (N, 2), theta (3,), out (N, 2, 3) = df/dtheta
    stein_features(X, out_sin, out_cos)      X (N, 2), out_sin (N, 4), out_cos (N, 1)
    local_rows(X, S, J, dlogp_dt, A, b)      X (M, 2) probes, S (M, 2) scores, J (M, 2, 2) score
                                             Jacobians (J[i, j, l] = ds_j/dx_l), dlogp_dt (M,),
                                             A (M, 3), b (M,)
    local_residual(X, S, J, dlogp_dt, theta, R, dR)
                                             X (M, 2) probes, S (M, 2), J (M, 2, 2), dlogp_dt (M,),
                                             theta (3,), R (M,) residual, dR (M, 3) = dR/dtheta
    simulate_chains(x0, theta, G, dt, n_burn, thin, n_keep, keys, out, status)
                                             x0 (C, 2), G (2, 2), keys (C,) uint64,
                                             out (n_keep, C, 2), status (C,) int64

Operation counts after joint CSE: drift 14, drift_jacobian 8, stein_features 5, local_rows 28, local_residual 52.
"""

import math

import numba
import numpy as np

NAME = 'limit_cycle'
SPEC_HASH = '45ebc78081f0a1df393a150c30e92805dc0d14bdf873e98a3045f4926915eb8f'
GENERATOR_VERSION = '0.1.0+62fa2304'
STATE = ('x', 'y')
PARAMS = ('a', 'c', 'omega')
IS_AFFINE = True
# parameters entering the drift affinely with parameter-free columns (variable projection)
SEPARABLE = (0, 1, 2)
NOISE_DIM = 2
STATE_DEPENDENT_NOISE = False

# Contraction tables of the global Stein fill (see dynosed_sym.symbolic.SteinPieces):
#   A[:, k] gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, k, coef) in A_TERMS
#   b       gets coef * omega[:, j] * (sum_i sin_i * out_sin[i, e])  for (e, j, coef) in B_SIN_TERMS
#   b       gets coef * omega[:, j] * omega[:, l] * (sum_i cos_i * out_cos[i, e])
#                                                                    for (e, j, l, coef) in B_COS_TERMS
A_TERMS = (
    (0, 0, 0, 1.0),
    (1, 0, 1, -1.0),
    (2, 0, 2, -1.0),
    (2, 1, 0, 1.0),
    (3, 1, 1, -1.0),
    (0, 1, 2, 1.0),
)
B_SIN_TERMS = ()
B_COS_TERMS = (
    (0, 0, 0, 0.1),
    (0, 1, 1, 0.1),
)


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def drift_point(x, theta, out):
    """Drift f(x; theta) at one point: x (2,), theta (3,), out (2,)."""
    t0 = theta[1]*(x[0]**2 + x[1]**2)
    out[0] = theta[0]*x[0] - theta[2]*x[1] - t0*x[0]
    out[1] = theta[0]*x[1] + theta[2]*x[0] - t0*x[1]


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def drift(X, theta, out):
    """Drift at N points: X (N, 2), theta (3,), out (N, 2)."""
    for i in numba.prange(X.shape[0]):
        drift_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def drift_jacobian_point(x, theta, out):
    """Jacobian df/dtheta at one point: x (2,), theta (3,), out (2, 3), out[j, k] = df_j/dtheta_k."""
    t0 = x[0]**2 + x[1]**2
    out[0, 0] = x[0]
    out[0, 1] = -t0*x[0]
    out[0, 2] = -x[1]
    out[1, 0] = x[1]
    out[1, 1] = -t0*x[1]
    out[1, 2] = x[0]


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def drift_jacobian(X, theta, out):
    """df/dtheta at N points: X (N, 2), theta (3,), out (N, 2, 3)."""
    for i in numba.prange(X.shape[0]):
        drift_jacobian_point(X[i], theta, out[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def stein_features_point(x, out_sin, out_cos):
    """x-dependent factors of the Stein features at one point: x (2,), out_sin (4,), out_cos (1,)."""
    t0 = x[0]**2 + x[1]**2
    out_sin[0] = x[0]
    out_sin[1] = t0*x[0]
    out_sin[2] = x[1]
    out_sin[3] = t0*x[1]
    out_cos[0] = 1


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def stein_features(X, out_sin, out_cos):
    """Stein-feature factors at N points: X (N, 2), out_sin (N, 4), out_cos (N, 1)."""
    for i in numba.prange(X.shape[0]):
        stein_features_point(X[i], out_sin[i], out_cos[i])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def local_row_point(x, s, J, dlogp_dt, out_a, out_b):
    """Local-route row at one probe: x (2,), score s (2,), Jacobian J (2, 2) with J[j, l] = ds_j/dx_l, dlogp_dt scalar; out_a (3,) = a(x), out_b (1,) = beta(x)."""
    t0 = s[0]*x[0]
    t1 = s[1]*x[1]
    t2 = x[0]**2
    t3 = x[1]**2
    t4 = t2 + t3
    out_a[0] = t0 + t1 + 2
    out_a[1] = -t0*t4 - t1*t4 - 4*t2 - 4*t3
    out_a[2] = -s[0]*x[1] + s[1]*x[0]
    out_b[0] = -dlogp_dt + (0.1)*J[0, 0] + (0.1)*J[1, 1] + (0.1)*s[0]**2 + (0.1)*s[1]**2


@numba.njit(parallel=True, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def local_rows(X, S, J, dlogp_dt, A, b):
    """Local-route rows at M probes: A[i] = a(x_i), b[i] = beta(x_i), so that A theta = b at the truth.

    X (M, 2) probes, S (M, 2) scores, J (M, 2, 2) score Jacobians (J[i, j, l] = ds_j/dx_l),
    dlogp_dt (M,) time derivative of log p (zeros for a stationary snapshot), A (M, 3), b (M,).
    """
    for i in numba.prange(X.shape[0]):
        local_row_point(X[i], S[i], J[i], dlogp_dt[i], A[i], b[i:i + 1])


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True, inline="never")
def local_residual_point(x, s, J, dlogp_dt, theta, out_r, out_dr):
    """Local residual and its theta-gradient at one probe: x (2,), score s (2,), Jacobian J (2, 2), dlogp_dt scalar, theta (3,); out_r (1,) = R, out_dr (3,) = dR/dtheta."""
    t0 = x[0]**2
    t1 = 2*theta[1]
    t2 = x[1]**2
    t3 = t0 + t2
    t4 = theta[1]*t3
    t5 = s[0]*x[0]
    t6 = s[1]*x[1]
    out_r[0] = dlogp_dt - 0.1*J[0, 0] - 0.1*J[1, 1] - 0.1*s[0]**2 + s[0]*(theta[0]*x[0] - theta[2]*x[1] - t4*x[0]) - 0.1*s[1]**2 + s[1]*(theta[0]*x[1] + theta[2]*x[0] - t4*x[1]) + 2*theta[0] - t0*t1 - t1*t2 - 2*t4
    out_dr[0] = t5 + t6 + 2
    out_dr[1] = -4*t0 - 4*t2 - t3*t5 - t3*t6
    out_dr[2] = -s[0]*x[1] + s[1]*x[0]


@numba.njit(parallel=False, fastmath=False, cache=True, error_model="numpy", boundscheck=False, nogil=True)
def local_residual(X, S, J, dlogp_dt, theta, R, dR):
    """Local Fokker-Planck residual R(x_i; theta) and dR/dtheta at M probes.

    X (M, 2) probes, S (M, 2) scores, J (M, 2, 2) score Jacobians (J[i, j, l] = ds_j/dx_l),
    dlogp_dt (M,), theta (3,), R (M,), dR (M, 3) with dR[i, k] = s^T df/dtheta_k + div(df/dtheta_k).
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
        t0 = theta[1]*(x[0*LANES + l]**2 + x[1*LANES + l]**2)
        out[0*LANES + l] = theta[0]*x[0*LANES + l] - theta[2]*x[1*LANES + l] - t0*x[0*LANES + l]
        out[1*LANES + l] = theta[0]*x[1*LANES + l] + theta[2]*x[0*LANES + l] - t0*x[1*LANES + l]


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
