"""Section ``simulator``: the compiled integrator against the vectorised NumPy scheme."""

from __future__ import annotations

import numpy as np

from .common import TARGETS, _fmt_s, _load, _target, _timed


def _sim_case(name, steps_short, repeats, ref_repeats, results, full_protocol=None):
    from ...codegen.loading import compile_model
    from ...reference import simulate_reference
    from ...simulation.simulate import chain_keys, initial_states, simulate

    model = _load(name)
    compile_model(model)
    C, dt = 2048, 0.01
    theta = model.nominal
    simulate(model, theta, C, dt=dt, burn_in=5, thin=1, n_chains=C)  # warm-up (compile / load)
    r = {"chains": C}
    if full_protocol:
        burn, thin, n = full_protocol
        steps = burn + thin * (-(-n // C))
        t, _, _ = _timed(
            lambda: simulate(model, theta, n, dt=dt, burn_in=burn, thin=thin, n_chains=C),
            1,
            warmup=0,
        )
        r.update(full_steps=steps, full_s=t, full_rate=C * steps / t)
        print(
            f"  {name}: paper protocol {C} chains x {steps:,} steps (burn-in {burn}, thin {thin}, "
            f"N = {n:,}): ds.simulate {_fmt_s(t).strip()}, {C * steps / t / 1e6:.1f} M "
            "chain-steps/s"
        )
    t_k, _, _ = _timed(
        lambda: simulate(model, theta, C, dt=dt, burn_in=steps_short - 1, thin=1, n_chains=C),
        repeats,
    )
    # the kernel alone, without ds.simulate's per-call Python work (spec hash, keys, start states)
    cm = compile_model(model)
    args = (
        initial_states(model, C, 0),
        np.asarray(theta, dtype=float),
        np.ascontiguousarray(cm.noise_matrix),
        dt,
        steps_short - 1,
        1,
        1,
        chain_keys(0, C),
        np.empty((1, C, model.d)),
        np.zeros(C, np.int64),
    )
    t_kern, _, _ = _timed(lambda: cm.module.simulate_chains(*args), repeats)
    t_np, _, _ = _timed(
        lambda: simulate_reference(model, theta, C, steps_short, dt, seed=0), ref_repeats, warmup=0
    )
    rate_k, rate_np = C * steps_short / t_k, C * steps_short / t_np
    r.update(
        short_steps=steps_short,
        compiled_s=t_k,
        kernel_s=t_kern,
        numpy_s=t_np,
        compiled_rate=rate_k,
        kernel_rate=C * steps_short / t_kern,
        numpy_rate=rate_np,
        speedup=t_np / t_k,
        speedup_kernel=t_np / t_kern,
    )
    print(f"  {name}: {C} chains x {steps_short} steps")
    print(
        f"    ds.simulate          {_fmt_s(t_k)}  {rate_k / 1e6:7.1f} M chain-steps/s   ratio "
        f"{t_np / t_k:6.1f} x"
    )
    print(
        f"    simulate_chains only {_fmt_s(t_kern)}  {C * steps_short / t_kern / 1e6:7.1f} M "
        "chain-steps/s"
        f"   ratio {t_np / t_kern:6.1f} x"
    )
    print(f"    NumPy reference      {_fmt_s(t_np)}  {rate_np / 1e6:7.2f} M chain-steps/s")
    results[name] = r
    return r


def section_simulator(quick, repeats):
    print("\n== simulator: RK4 + Euler-Maruyama noise, compiled vs vectorised NumPy ==")
    sim = {}
    grn = _sim_case(
        "grn_bcell",
        300,
        repeats,
        1 if quick else 3,
        sim,
        full_protocol=(3000 if quick else 30000, 10, 50_000),
    )
    _sim_case("lorenz", 300, repeats, 1 if quick else 3, sim)
    print(
        f"    -> GRN simulator {grn['speedup']:.0f}x NumPy through ds.simulate, "
        f"{grn['speedup_kernel']:.0f}x "
        f"kernel only (target >= {TARGETS['simulator_speedup']:.0f}x): "
        f"{_target(grn['speedup'] >= TARGETS['simulator_speedup'])}"
    )
    return sim
