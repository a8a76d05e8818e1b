"""Sections ``fill`` and ``scaling``: the global fill against the NumPy reference and the
sin/cos-only limit; scaling in N and m."""

from __future__ import annotations

import math
import time
from functools import cache

import numba
import numpy as np

from ...kernels.jit import kernel
from ...kernels.stein_fill import phases
from ...kernels.trig import fold as _fold

# noqa: E402  (inlined polynomial helpers of the fill)
from ...kernels.trig import sin_turns as _sin_turns
from .common import TARGETS, _fmt_s, _load, _rss_mb, _slope, _target, _timed

LIMIT_BLOCK = 128


@kernel(parallel=True, fastmath=True)
def sincos_only(X, Wt, ct, out):
    """Phase ωᵀx + c and polynomial sin and cos of every (sample, feature) pair, summed.

    The memory-free limit of the fill: the same blocking, phase computation (:func:`phases`)
    and sin/cos polynomials as :func:`dynosed_sym.assembly.accumulate_stein`, but no per-sample
    factors and no running sums beyond one register-resident row per block.

    X (N, d); Wt (B, d, LIMIT_BLOCK) frequencies in turns; ct (B, LIMIT_BLOCK) phases in
    turns; out (B, LIMIT_BLOCK) receives Σ_i (sin + cos) per feature.
    """
    N = X.shape[0]
    nblk, _, FB = Wt.shape
    for blk in numba.prange(nblk):
        Wb = Wt[blk]
        cb = ct[blk]
        t = np.empty(FB)
        acc = np.zeros(FB)
        for i in range(N):
            phases(X[i], Wb, cb, t)
            for q in range(FB):
                u = t[q] - np.floor(t[q] + 0.5)
                w = u + 0.25
                w = w - np.floor(w + 0.5)
                acc[q] += _sin_turns(_fold(u)) + _sin_turns(_fold(w))
        ob = out[blk]
        for q in range(FB):
            ob[q] = acc[q]


def _limit_layout(feats):
    """Block-major (B, d, 128) frequencies and (B, 128) phases in turns for :func:`sincos_only`."""
    m, d = feats.omega.shape
    B = -(-m // LIMIT_BLOCK)
    W = np.zeros((d, B * LIMIT_BLOCK))
    W[:, :m] = feats.omega.T / (2 * math.pi)
    c = np.zeros(B * LIMIT_BLOCK)
    c[:m] = feats.phase / (2 * math.pi)
    Wt = np.ascontiguousarray(W.reshape(d, B, LIMIT_BLOCK).transpose(1, 0, 2))
    return Wt, np.ascontiguousarray(c.reshape(B, LIMIT_BLOCK)), np.zeros((B, LIMIT_BLOCK))


# --------------------------------------------------------------------------- data
@cache
def _grn_samples(quick):
    """GRN samples by the paper's protocol: 2048 chains, dt = 0.01, burn-in 30,000 steps,
    thinning 10, N = 50,000 (quick: burn-in 3,000)."""
    from ...simulation.simulate import simulate

    model = _load("grn_bcell")
    burn = 3000 if quick else 30000
    t0 = time.perf_counter()
    X = simulate(
        model, model.nominal, 50_000, dt=0.01, burn_in=burn, thin=10, n_chains=2048, seed=0
    )
    return X, burn, time.perf_counter() - t0


@cache
def _lorenz_samples(quick):
    from ...simulation.simulate import simulate

    model = _load("lorenz")
    t0 = time.perf_counter()
    X = simulate(
        model, model.nominal, 100_000, dt=0.01, burn_in=2000, thin=10, n_chains=2048, seed=0
    )
    return X, 2000, time.perf_counter() - t0


def _features(model, X, m, seed=0):
    from ...assembly.features import draw_features, median_lengthscale

    return draw_features(model.d, m, median_lengthscale(X, seed=seed), seed=seed)


def _fill_call(cm, X, feats, phi):
    """The fill kernel alone on precomputed per-sample factors (as in assembly.block_sums)."""
    from ...kernels.stein_fill import accumulate_stein

    phi_s, phi_c = phi
    P_s, P_c = feats.zeros(phi_s.shape[1])[None], feats.zeros(phi_c.shape[1])[None]
    accumulate_stein(
        X, phi_s, phi_c, np.array([0, X.shape[0]], dtype=np.int64), feats.Wt, feats.ct, P_s, P_c
    )
    return P_s[0], P_c[0]


def _reference_subsample(model, m, N, budget_bytes=4e8):
    """Rows the NumPy reference can take within ``budget_bytes`` ((N, m, n) temporaries)."""
    per_row = m * max(model.n, model.d) * 8 * 3
    return int(max(50, min(N, budget_bytes // per_row)))


# --------------------------------------------------------------------------- sections
def bench_fill_case(name, X, m, repeats, ref_repeats, results, protocol):
    from ...assembly.stein import assemble_global, block_sums, contract
    from ...codegen.loading import compile_model
    from ...reference import stein_system_reference

    model = _load(name)
    cm = compile_model(model)
    N = X.shape[0]
    feats = _features(model, X, m)
    pairs = N * m
    # warm-ups compile (or load) every kernel on a small slice first
    block_sums(cm, X[:256], feats)
    phi = cm.stein_features(X)
    t_feat, _, _ = _timed(lambda: cm.stein_features(X), repeats)
    t_fill, fills, _ = _timed(lambda: _fill_call(cm, X, feats, phi), repeats)
    t_block, _, _ = _timed(lambda: block_sums(cm, X, feats), repeats)
    blocks = [X[i : i + N // 32] for i in range(0, N, N // 32)]
    t_asm, _, _ = _timed(lambda: assemble_global(cm, iter(blocks), feats), repeats)

    # NumPy reference on a subsample, scaled linearly in N (it is linear in N)
    n_ref = _reference_subsample(model, m, N)
    Xr = X[:n_ref]
    t_ref_sub, _, _ = _timed(
        lambda: stein_system_reference(model, Xr, feats.omega, feats.phase), ref_repeats, warmup=0
    )
    t_ref = t_ref_sub * N / n_ref
    A_ref, b_ref = stein_system_reference(model, Xr, feats.omega, feats.phase)
    A_k, b_k = contract(cm, feats, *block_sums(cm, Xr, feats), n_ref)
    err = max(
        np.abs(A_k - A_ref).max() / np.abs(A_ref).max(),
        np.abs(b_k - b_ref).max() / np.abs(b_ref).max(),
    )

    # memory-free limit: phase + polynomial sin and cos only
    Wt, ct, out = _limit_layout(feats)
    sincos_only(X[:256], Wt, ct, out)
    t_lim, _, _ = _timed(lambda: sincos_only(X, Wt, ct, out), repeats)

    ns = t_fill / pairs * 1e9
    ns_block = t_block / pairs * 1e9
    r = {
        "N": N,
        "m": m,
        "n": model.n,
        "d": model.d,
        "K_sin": phi[0].shape[1],
        "K_cos": phi[1].shape[1],
        "protocol": protocol,
        "stein_features_s": t_feat,
        "fill_kernel_s": t_fill,
        "fill_kernel_ns_per_pair": ns,
        "fill_kernel_all_s": fills,
        "features_plus_fill_s": t_block,
        "features_plus_fill_ns_per_pair": ns_block,
        "assemble_global_32_blocks_s": t_asm,
        "reference_rows": n_ref,
        "reference_subsample_s": t_ref_sub,
        "reference_scaled_s": t_ref,
        "speedup_vs_reference": t_ref / t_block,
        "max_rel_error_vs_reference": float(err),
        "sincos_only_s": t_lim,
        "sincos_only_ns_per_pair": t_lim / pairs * 1e9,
        "fill_over_sincos_only": t_fill / t_lim,
    }
    results[name] = r
    print(
        f"  {name}: N = {N:,}, m = {m}, n = {model.n}, K_sin = {r['K_sin']}, K_cos = {r['K_cos']}  "
        f"[{protocol}]"
    )
    print(f"    stein_features (generated)     {_fmt_s(t_feat)}")
    print(
        f"    fill kernel accumulate_stein   {_fmt_s(t_fill)}   {ns:6.3f} ns/pair  "
        f"(min {min(fills) / pairs * 1e9:.3f})"
    )
    print(f"    features + fill (block_sums)   {_fmt_s(t_block)}   {ns_block:6.3f} ns/pair")
    print(
        f"    assemble_global, 32 blocks     {_fmt_s(t_asm)}   (one launch per block, incl. "
        "contraction)"
    )
    print(
        f"    NumPy reference                {_fmt_s(t_ref)}   (run on {n_ref:,} rows: "
        f"{_fmt_s(t_ref_sub).strip()}, scaled x{N / n_ref:.1f})   max rel. diff {err:.1e}"
    )
    print(f"    speed-up vs NumPy              {t_ref / t_block:8.1f} x   (features + fill)")
    print(
        f"    memory-free limit (sin/cos)    {_fmt_s(t_lim)}   {r['sincos_only_ns_per_pair']:6.3f} "
        "ns/pair"
        f"   fill / limit = {r['fill_over_sincos_only']:.2f}"
    )
    return r


def section_fill(quick, repeats):
    results = {}
    print("\n== fill: global A, b assembly ==")
    X, burn, t_sim = _grn_samples(quick)
    grn = bench_fill_case(
        "grn_bcell",
        X,
        2048,
        repeats,
        1 if quick else 2,
        results,
        f"simulated: 2048 chains, burn-in {burn}, thin 10, {t_sim:.1f} s",
    )
    print(
        f"    -> GRN fill {grn['fill_kernel_ns_per_pair']:.2f} ns/pair (target <= "
        f"{TARGETS['grn_fill_ns_per_pair']}): "
        f"{_target(grn['fill_kernel_ns_per_pair'] <= TARGETS['grn_fill_ns_per_pair'])}; "
        f"speed-up {grn['speedup_vs_reference']:.0f}x (target >= "
        f"{TARGETS['grn_fill_speedup']:.0f}x): "
        f"{_target(grn['speedup_vs_reference'] >= TARGETS['grn_fill_speedup'])}"
    )
    X, burn, t_sim = _lorenz_samples(quick)
    bench_fill_case(
        "lorenz",
        X,
        2048,
        repeats,
        1 if quick else 2,
        results,
        f"simulated: 2048 chains, burn-in {burn}, thin 10, {t_sim:.1f} s",
    )
    return results


def section_scaling(quick, repeats):
    from ...assembly.stein import assemble_global, block_sums
    from ...codegen.loading import compile_model

    print("\n== scaling (GRN, fill = generated stein_features + accumulate_stein + contraction) ==")
    model = _load("grn_bcell")
    cm = compile_model(model)
    base, _, _ = _grn_samples(quick)
    feats = _features(model, base, 2048)
    block_sums(cm, base[:256], feats)
    chunk_rows = 1_000_000
    chunk = np.ascontiguousarray(np.tile(base, (-(-chunk_rows // base.shape[0]), 1))[:chunk_rows])
    Ns = [10**3, 10**4, 10**5, 10**6] + ([] if quick else [10**7])
    rows, rss = [], []

    def stream(N):
        """N rows as 1e6-row chunks (one simulated block, repeated: the cost ignores values)."""
        left = N
        while left > 0:
            k = min(left, chunk_rows)
            rss.append(_rss_mb())
            yield chunk[:k]
            left -= k

    for N in Ns:
        reps = repeats if N <= 10**5 else 1
        if N <= chunk_rows:
            Xn = chunk[:N]
            t, _, _ = _timed(lambda Xn=Xn: assemble_global(cm, [Xn], feats), reps)
        else:
            rss.clear()
            t, _, _ = _timed(lambda N=N: assemble_global(cm, stream(N), feats), reps, warmup=0)
        rows.append((N, t))
        print(
            f"    N = {N:>10,}   {_fmt_s(t)}   {t / (N * 2048) * 1e9:6.3f} ns/pair"
            + (
                f"   (streamed in {N // chunk_rows} chunks; RSS {min(rss):.0f}-{max(rss):.0f} MiB)"
                if N > chunk_rows
                else ""
            )
        )
    pN = _slope([n for n, _ in rows if n >= 10**5], [t for n, t in rows if n >= 10**5])
    pN_all = _slope(*zip(*rows))
    print(
        f"    exponent in N: {pN:.3f} (N >= 1e5), {pN_all:.3f} (all points; small N pay fixed "
        "per-call costs)"
    )

    Nm = 20_000 if quick else 100_000
    Xm = chunk[:Nm]
    mrows = []
    for m in (128, 256, 512, 1024, 2048, 4096, 8192):
        f = _features(model, Xm, m)
        block_sums(cm, Xm[:64], f)
        t, _, _ = _timed(lambda f=f: block_sums(cm, Xm, f), repeats)
        mrows.append((m, t))
        print(f"    m = {m:>5}  (N = {Nm:,})   {_fmt_s(t)}   {t / (Nm * m) * 1e9:6.3f} ns/pair")
    pm = _slope(*zip(*mrows))
    pm_hi = _slope(*zip(*mrows[2:]))
    print(
        f"    exponent in m: {pm:.3f} (all), {pm_hi:.3f} (m >= 512; the fill is parallel over "
        "blocks of "
        f"128 features, so m < 256 leaves a thread idle)"
    )
    return {
        "N": rows,
        "exponent_N": pN,
        "exponent_N_all": pN_all,
        "m": mrows,
        "N_for_m": Nm,
        "exponent_m": pm,
        "exponent_m_ge_512": pm_hi,
        "stream_rss_mib": [min(rss), max(rss)] if rss else None,
    }
