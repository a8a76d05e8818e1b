"""Section ``large``: a generated network with d = 50 states and n = 1000 parameters."""

from __future__ import annotations

import math
import os
import tempfile
import time

import numpy as np

from .common import _fmt_s, _timed
from .fill import _features, _fill_call


def synthetic_network(d=50, per=20, seed=0):
    """A large affine test network: d states, n = d·per parameters.

    Drift component i is ``Σ_k θ[i,k] φ_ik(x) − x_i`` with ``per`` distinct smooth basis
    functions φ_ik of two or three state variables (tanh, rational, Gaussian, sin·cos
    terms), chosen with a seeded generator; D = ½ I.  ``nominal`` holds small random
    weights (0.2/√per · N(0, 1)), so the −x_i decay dominates and the model is stable.
    """
    import sympy as sp

    from ...model import SDEModel

    rng = np.random.default_rng(seed)
    x = sp.symbols(f"x0:{d}", real=True)
    theta = sp.Matrix(d, per, sp.symbols(f"k0:{d * per}", real=True))

    def basis(kind, a, b, c):
        xa, xb, xc = x[a], x[b], x[c]
        if kind == 0:
            return sp.tanh(xa + xb / 2)
        if kind == 1:
            return xa / (1 + xb**2)
        if kind == 2:
            return sp.exp(-(xa**2 + xc**2) / 2)
        if kind == 3:
            return sp.sin(xa) * sp.cos(xb)
        if kind == 4:
            return 1 / (1 + xa**2 + xb**2 + xc**2)
        return xa * xb / (1 + xc**2)

    drift = []
    for i in range(d):
        seen, terms = set(), []
        while len(terms) < per:
            kind = int(rng.integers(6))
            a, b, c = (int(v) for v in rng.choice(d, 3, replace=False))
            if (kind, a, b, c) in seen:
                continue
            seen.add((kind, a, b, c))
            terms.append(theta[i, len(terms)] * basis(kind, a, b, c))
        drift.append(sp.Add(*terms) - x[i])
    nominal = 0.2 / math.sqrt(per) * rng.standard_normal(d * per)
    return SDEModel(
        state=list(x),
        params=theta,
        drift=drift,
        diffusion=sp.Rational(1, 2),
        name=f"synthetic_d{d}_n{d * per}",
        nominal=nominal,
    )


_NR, _MR = 40, 64  # rows and features of the comparison with the NumPy reference


def section_large(quick, repeats):
    from ...assembly.stein import block_sums, contract
    from ...codegen.loading import compile_model
    from ...options import Execution
    from ...reference import drift_reference, simulate_reference, stein_system_reference
    from ...simulation.simulate import simulate

    print("\n== large synthetic network: d = 50, n = 1000 ==")
    r = {}
    t0 = time.perf_counter()
    model = synthetic_network()
    r["declare_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = model.derivation  # derive now, timed
    r["derive_s"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="dynosed_bench_large_") as tmp:
        t0 = time.perf_counter()
        cm = compile_model(model, tmp)
        r["print_and_import_s"] = time.perf_counter() - t0
        ex = Execution(out_dir=tmp)
        r["generated_kib"] = os.path.getsize(cm.path) / 1024
        rng = np.random.default_rng(1)
        # states for the fill: standard normal (the fill cost does not depend on where they are)
        N = 2000 if quick else 10_000
        m = 2048
        X = rng.standard_normal((N, model.d))
        feats = _features(model, X, m)
        t0 = time.perf_counter()
        cm.drift(X[:8], model.nominal)
        cm.stein_features(X[:8])
        r["jit_model_kernels_s"] = time.perf_counter() - t0
        block_sums(cm, X[:64], feats)
        t0 = time.perf_counter()
        simulate(model, model.nominal, 8, burn_in=1, thin=1, n_chains=8, execution=ex)
        r["jit_simulator_s"] = time.perf_counter() - t0
        phi = cm.stein_features(X)
        t_fill, _, _ = _timed(lambda: _fill_call(cm, X, feats, phi), max(1, repeats // 2))
        t_feat, _, _ = _timed(lambda: cm.stein_features(X), max(1, repeats // 2))
        r.update(
            N=N,
            m=m,
            K_sin=phi[0].shape[1],
            K_cos=phi[1].shape[1],
            fill_s=t_fill,
            fill_ns_per_pair=t_fill / (N * m) * 1e9,
            stein_features_s=t_feat,
        )
        # agreement with the NumPy reference on a small N
        Nr, mr = _NR, _MR
        Xr = X[:Nr]
        fr = _features(model, Xr, mr, seed=2)
        A_ref, b_ref = stein_system_reference(model, Xr, fr.omega, fr.phase)
        A_k, b_k = contract(cm, fr, *block_sums(cm, Xr, fr), Nr)
        r["fill_max_rel_error"] = float(
            max(
                np.abs(A_k - A_ref).max() / np.abs(A_ref).max(),
                np.abs(b_k - b_ref).max() / np.abs(b_ref).max(),
            )
        )
        f_ref = drift_reference(model, Xr, model.nominal)
        r["drift_max_rel_error"] = float(
            np.abs(cm.drift(Xr, model.nominal) - f_ref).max() / np.abs(f_ref).max()
        )
        # simulator throughput against NumPy (same scheme), short run
        C, steps = 256, 20
        t_k, _, _ = _timed(
            lambda: simulate(
                model, model.nominal, C, burn_in=steps - 1, thin=1, n_chains=C, execution=ex
            ),
            repeats,
        )
        t_np, _, _ = _timed(
            lambda: simulate_reference(model, model.nominal, C, steps, 0.01), 1, warmup=0
        )
        r.update(
            sim_chains=C,
            sim_steps=steps,
            sim_compiled_rate=C * steps / t_k,
            sim_numpy_rate=C * steps / t_np,
            sim_speedup=t_np / t_k,
        )
    _print_large(r)
    return r


def _print_large(r):
    """The table of section_large."""
    N, m, C, steps = r["N"], r["m"], r["sim_chains"], r["sim_steps"]
    print(f"    declare (SymPy)                {_fmt_s(r['declare_s'])}")
    print(f"    symbolic derivation            {_fmt_s(r['derive_s'])}")
    print(
        f"    print + write + import         {_fmt_s(r['print_and_import_s'])}   "
        f"({r['generated_kib']:.0f} KiB of source)"
    )
    print(f"    Numba: drift + stein_features  {_fmt_s(r['jit_model_kernels_s'])}")
    print(f"    Numba: simulator               {_fmt_s(r['jit_simulator_s'])}")
    print(f"    stein_features, N = {N:,}       {_fmt_s(r['stein_features_s'])}")
    print(
        f"    fill, N = {N:,}, m = {m}, K_sin = {r['K_sin']}   {_fmt_s(r['fill_s'])}   "
        f"{r['fill_ns_per_pair']:.2f} ns/pair ({r['fill_ns_per_pair'] / r['K_sin'] * 1e3:.0f} ps "
        "per pair and factor)"
    )
    print(
        f"    kernels vs NumPy reference (N = {_NR}, m = {_MR}): A, b max rel. diff "
        f"{r['fill_max_rel_error']:.1e}; "
        f"drift {r['drift_max_rel_error']:.1e}"
    )
    print(
        f"    simulator {C} chains x {steps} steps: {r['sim_compiled_rate'] / 1e6:.2f} M "
        "chain-steps/s, "
        f"NumPy {r['sim_numpy_rate'] / 1e6:.3f} M chain-steps/s, ratio {r['sim_speedup']:.1f} x"
    )
