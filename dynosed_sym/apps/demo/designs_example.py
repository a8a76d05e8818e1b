"""Designs beyond one snapshot: a gene network with knockdown environments (docs/designs.md).

Three genes in a feedback loop (1 activates 2, 2 activates 3, 3 represses 1), linearised around
their steady state (the linear-noise picture of a gene network):

    dx_i = (u_i b_i + Σ_j W_ij x_j) dt + √(2D) dW_i,     D = 0.05,

with the 3×3 interaction matrix W and the production rates b unknown (12 parameters) and u_i the
known knockdown factor of gene i's production (1 in the wild type).  The stationary law of every
environment is Gaussian (Lyapunov equation), sampled exactly.

* Wild type alone: rank 9 of 12 — three combinations (a divergence-free probability current,
  ΩΣ⁻¹, together with the production rates that keep the mean) are free.
* Advice before any data: from the wild type alone, which single knockdown resolves the free
  combinations and with how many cells — every one can (structurally: the knockdown moves the
  mean, and δW μ_e = −u_e∘δb in both environments forces δW = 0), but a knockdown of gene 2
  needs tens of cells where one of gene 1 needs about a million.
* Wild type + gene 2 knocked down to 30 %: rank 12 of 12; + gene 1 knocked down: still rank 11
  at 50,000 cells each, as the advice said.
* An unknown knockdown strength (b₂ one value per environment, ``env_params``): wild type + that
  knockdown leaves one combination free; a second, known knockdown (gene 3) resolves it.

``python -m dynosed_sym.apps.demo.designs_example --figures DIR`` writes the figure
``designs_grn_knockdown.png`` (also part of ``python -m dynosed_sym.apps.demo``).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import scipy.linalg
import sympy as sp

import dynosed_sym as ds

from .common import _new_figure, _rule

W_TRUE = np.array([[-1.0, 0.0, -0.7], [0.8, -1.0, 0.0], [0.0, 0.6, -1.0]])
B_TRUE = np.array([2.0, 1.0, 1.0])
D_NOISE = 0.05
N_CELLS = 50_000


def network_model(unknown_kd2=False):
    """The linear gene network; ``unknown_kd2``: b₂ takes one unknown value per environment."""
    x = sp.symbols("x1:4", real=True)
    u = sp.symbols("u1:4", real=True)
    W = sp.Matrix(3, 3, sp.symbols("W11 W12 W13 W21 W22 W23 W31 W32 W33", real=True))
    b = sp.symbols("b1:4", real=True)
    prod = [u[0] * b[0], b[1] if unknown_kd2 else u[1] * b[1], u[2] * b[2]]
    drift = [prod[i] + sum(W[i, j] * x[j] for j in range(3)) for i in range(3)]
    nominal = dict(zip(map(str, W), W_TRUE.reshape(-1)))
    nominal.update({"b1": 2.0, "b2": 1.0, "b3": 1.0})
    return ds.SDEModel(
        list(x),
        list(W) + list(b),
        drift,
        D_NOISE,
        inputs=list(u),
        env_params=["b2"] if unknown_kd2 else None,
        name="grn_linear_kd" if unknown_kd2 else "grn_linear",
        nominal=nominal,
    )


def stationary_cells(u, n, seed, b=B_TRUE):
    """Exact stationary samples N(μ, Σ): μ = −W⁻¹(u∘b), WΣ + ΣWᵀ + 2D = 0."""
    S = scipy.linalg.solve_continuous_lyapunov(W_TRUE, -2.0 * D_NOISE * np.eye(3))
    mu = -np.linalg.solve(W_TRUE, np.asarray(u) * b)
    return np.random.default_rng(seed).multivariate_normal(mu, 0.5 * (S + S.T), int(n))


def sampler(inputs, theta, n, seed, time=None, initial=None):
    """Exact sampler for :func:`dynosed_sym.check_identifiability` (the nominal θ is the truth)."""
    return stationary_cells([inputs["u1"], inputs["u2"], inputs["u3"]], n, seed)


def _u(u1=1.0, u2=1.0, u3=1.0):
    return {"u1": u1, "u2": u2, "u3": u3}


def _which(inputs):
    return ", ".join(f"{n} = {v:g}" for n, v in inputs.items() if v != 1.0)


def knockdown_example(n_cells=N_CELLS, seed=0):
    """Print the section and return the results the figure uses."""
    model = network_model()
    truth = model.nominal
    _rule("Designs: a gene network with knockdown environments (exact stationary laws)")
    print(
        "dx_i = (u_i b_i + Σ_j W_ij x_j) dt + √(2·0.05) dW_i: 3 genes in a feedback loop, W (9) "
        "and b (3) unknown, u_i the known knockdown factor of gene i"
    )
    # before any data: what does the wild type leave free, and which knockdown resolves it?
    cands = [_u(u1=0.3), _u(u2=0.3), _u(u3=0.3), _u(u1=0.1), _u(u2=0.1), _u(u3=0.1)]
    check = ds.check_identifiability(
        model,
        experiment=ds.Experiment(inputs=_u(), candidates=cands),
        study=ds.Study(sampler=sampler, n_samples=n_cells, seed=seed),
    )
    print(
        f"before data, wild type only: structural rank {check.structural.rank} of 12 "
        f"({check.structural.certificate}); design advice (one more environment):"
    )
    advice = [a for a in check.advice if a.kind == "environment"]
    for a in advice:
        if a.resolves:
            print(
                f"  knock down {_which(a.inputs):<9}: resolves {a.resolves}/{a.n_free}, "
                f"N ≈ {a.n_needed:,.0f} cells (recommended {a.recommended:,.0f})"
            )
        else:
            print(f"  knock down {_which(a.inputs):<9}: {a.note}")
    wt = stationary_cells([1, 1, 1], n_cells, seed)
    kd = {
        g: stationary_cells([0.3 if j == g else 1 for j in (1, 2, 3)], n_cells, seed + g)
        for g in (1, 2, 3)
    }
    one = ds.fit_global(model, wt, inputs=_u(), features=ds.Features(seed=seed))
    print(f"wild type only, {n_cells:,} cells: rank {one.report.rank} of 12")
    for combo in one.report.null_space:
        print(f"  free combination: {combo}")
    fits = {}
    for g in (2, 1):
        name = f"kd{g}"
        fits[g] = ds.fit_global(
            model,
            {"wt": wt, name: kd[g]},
            inputs={"wt": _u(), name: _u(**{f"u{g}": 0.3})},
            features=ds.Features(seed=seed),
        )
        f = fits[g]
        print(
            f"wild type + gene-{g} knockdown to 30 % ({n_cells:,} cells each): rank "
            f"{f.report.rank} of 12, max |error| {np.abs(f.theta - truth).max():.3f}, "
            f"p = {f.report.p_value:.2f}"
            + ("   (weak, as the advice said)" if f.report.rank < 12 else "")
        )
    # an unknown knockdown strength: b2 one value per environment
    kdm = network_model(unknown_kd2=True)
    part = ds.fit_global(
        kdm,
        {"wt": wt, "kd2": kd[2]},
        inputs={"wt": _u(), "kd2": _u()},
        features=ds.Features(seed=seed),
    )
    full = ds.fit_global(
        kdm,
        {"wt": wt, "kd2": kd[2], "kd3": kd[3]},
        inputs={"wt": _u(), "kd2": _u(), "kd3": _u(u3=0.3)},
        features=ds.Features(seed=seed),
    )
    print(
        f"unknown knockdown strength (b2 one value per environment): wt + kd2 rank "
        f"{part.report.rank} of {len(part.param_names)}"
    )
    for combo in part.report.null_space:
        print(f"  free combination: {combo}")
    k = dict(zip(full.param_names, full.theta))
    se = dict(zip(full.param_names, full.report.std_errors))
    print(
        f"  + a known knockdown of gene 3 (u3 = 0.3): rank {full.report.rank} of "
        f"{len(full.param_names)}; knockdown strength b2[kd2]/b2[wt] = "
        f"{k['b2[kd2]'] / k['b2[wt]']:.3f} (truth 0.3; b2[kd2] = {k['b2[kd2]']:.3f} ± "
        f"{se['b2[kd2]']:.3f})"
    )
    return {
        "one": one,
        "both": fits[2],
        "weak": fits[1],
        "part": part,
        "full": full,
        "advice": advice,
        "truth": truth,
    }


def figure_knockdown(res, out_dir, dpi=90):
    """Three panels: singular values against noise, estimates ± CI, the advice.  Returns the PNG."""
    from .. import plotting

    fig = _new_figure((13.0, 4.2))
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1.6, 1.1]})
    for key, label, colour in (
        ("one", "wild type only", "tab:red"),
        ("weak", "+ knockdown of gene 1", "tab:orange"),
        ("both", "+ knockdown of gene 2", "tab:blue"),
    ):
        rep = res[key].report
        idx = np.arange(1, rep.n_params + 1)
        ax1.semilogy(idx, rep.singular_values, "o-", color=colour, label=f"σ: {label}")
        ax1.semilogy(idx, rep.singular_noise, ":", color=colour)
    ax1.set_xlabel("singular direction")
    ax1.set_ylabel("σ_i of the stacked system")
    ax1.set_title("what the design resolves (σ against the noise of Av, dotted)", fontsize=9)
    ax1.legend(fontsize=7)
    names = res["one"].param_names
    x = np.arange(len(names))
    for shift, key, colour in ((-0.15, "one", "tab:red"), (0.15, "both", "tab:blue")):
        fit = res[key]
        ci = fit.conf_int()
        lo = np.where(np.isfinite(ci[:, 0]), fit.theta - ci[:, 0], 0.0)
        hi = np.where(np.isfinite(ci[:, 1]), ci[:, 1] - fit.theta, 0.0)
        # parameters in a free combination (projection ≥ 0.1 on the unresolved directions): the
        # estimate there is the λ-regularised choice, not a measurement — no interval drawn
        free = ~np.isfinite(ci[:, 0]) | (np.linalg.norm(fit.report.null_vectors, axis=1) >= 0.1)
        ax2.errorbar(
            x[~free] + shift,
            fit.theta[~free],
            yerr=[lo[~free], hi[~free]],
            fmt="o",
            ms=3,
            color=colour,
            capsize=2,
        )
        ax2.plot(x[free] + shift, fit.theta[free], "x", color=colour, ms=6)
    ax2.plot(x, res["truth"], "_", color="k", ms=14, mew=2, label="truth")
    ax2.set_xticks(x, names, rotation=60, fontsize=7)
    ax2.set_title(
        "estimates and 95 % intervals (red: wild type, blue: + gene 2 knockdown; ×: in a free "
        "combination)",
        fontsize=8,
    )
    ax2.legend(fontsize=7)
    adv = res["advice"]
    labels = [_which(a.inputs) for a in adv]
    vals = [a.recommended if a.resolves else np.nan for a in adv]
    ax3.barh(np.arange(len(adv)), vals, color="tab:green")
    ax3.set_yticks(np.arange(len(adv)), labels, fontsize=8)
    ax3.set_xscale("log")
    ax3.set_xlabel("cells to collect (2 × the 3σ estimate)")
    ax3.set_title("advice from the wild type alone (before data)", fontsize=9)
    for i, v in enumerate(vals):
        ax3.text(
            v if np.isfinite(v) else 1.0,
            i,
            f" {v:,.0f}" if np.isfinite(v) else " —",
            va="center",
            fontsize=7,
        )
    fig.suptitle(
        "Linear gene network (3 genes, W and b unknown): one snapshot leaves 3 combinations free; "
        "a knockdown of gene 2 resolves them with few cells, one of gene 1 needs ~10⁶",
        fontsize=10,
    )
    return plotting.save_figure(fig, os.path.join(out_dir, "designs_grn_knockdown.png"), dpi=dpi)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dynosed_sym.apps.demo.designs_example")
    ap.add_argument("--figures", default=None, metavar="DIR", help="also write the figure")
    args = ap.parse_args(argv)
    res = knockdown_example()
    if args.figures:
        print(figure_knockdown(res, args.figures))
    return res


if __name__ == "__main__":
    main()
