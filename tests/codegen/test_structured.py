"""Matrix parameters printed as loops (issue 20): W·φ(x) detected symbolically, the kernels'
loops against the unrolled kernels and the NumPy oracle, a golden file, and a generated size
that grows with the basis functions, not with d²."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sympy as sp
from conftest import ROOT

import dynosed_sym as ds
from dynosed_sym.apps.bench.network_model import hill, network_model
from dynosed_sym.codegen.files import module_filename, stale_files, write_if_changed
from dynosed_sym.codegen.loading import _import_text
from dynosed_sym.codegen.render import render_module
from dynosed_sym.codegen.spec import STRUCTURED_MIN_ENTRIES, build_spec
from dynosed_sym.reference import drift_reference, local_rows_reference, stein_system_reference

GOLDEN = ROOT / "tests" / "codegen" / "golden"
UPDATE_GOLDEN = os.environ.get("DYNOSED_UPDATE_GOLDEN", "") not in ("", "0")


def mixed_model():
    """Two matrix blocks with rows out of order and coefficients per row, and parameters
    outside them: f_j = c_j Σ_k W[j,k] tanh(x_k) + Σ_k V[j,k] x_k/(1 + x_k²) − g_j x_j + 1/4."""
    d = 4
    x = sp.symbols(f"x0:{d}", real=True)
    W = sp.Matrix(d, d, lambda j, k: sp.Symbol(f"W[{j},{k}]", real=True))
    V = sp.Matrix(d, d, lambda j, k: sp.Symbol(f"V_{j}_{k}", real=True))
    g = sp.symbols(f"g0:{d}", real=True)
    c = [1, 2, sp.Rational(1, 3), 1]
    drift = [0] * d
    for r, j in enumerate((2, 0, 3, 1)):  # W's row r drives component j
        drift[j] += c[r] * sum(W[r, k] * sp.tanh(x[k]) for k in range(d))
    for j in range(d):
        drift[j] += sum(V[j, k] * x[k] / (1 + x[k] ** 2) for k in range(d))
        drift[j] += -g[j] * x[j] + sp.Rational(1, 4)
    return ds.SDEModel(list(x), [W, V, *g], drift, diffusion=sp.Rational(1, 10), name="mixed")


def _load(model, structured, tmp_path):
    spec = build_spec(model, structured=structured)
    path = tmp_path / module_filename(model.name, spec.hash)
    text = render_module(spec)
    path.write_text(text, encoding="utf-8")
    return _import_text(str(path), text, f"test_structured_{model.name}_{spec.hash[:12]}"), spec


# --------------------------------------------------------------------------- detection
def test_matrix_blocks_are_detected(models):
    net, _ = network_model(6, 0)
    (blk,) = net.derivation.blocks
    assert (blk.first, blk.rows, blk.shape) == (0, tuple(range(6)), (6, 6))
    assert all(c == 1 for c in blk.coefs)
    x = net.state
    assert all(
        sp.simplify(phi - x[k] ** 2 / (1 + x[k] ** 2)) == 0 for k, phi in enumerate(blk.basis)
    )
    # ∂h(x_k)/∂x_j is nonzero only for k = j: six derivatives, on the diagonal
    assert [kr for kr, _ in blk.dbasis] == [(k, k) for k in range(6)]
    (grn,) = models["grn_bcell"].derivation.blocks  # W (3 x 7) with row factors 9, 100, 2.6
    assert grn.shape == (3, 7) and [float(c) for c in grn.coefs] == [9.0, 100.0, 2.6]
    assert models["lorenz"].derivation.blocks == ()
    W, V = mixed_model().derivation.blocks
    assert (W.first, W.rows, W.shape, V.first, V.rows) == (
        0,
        (2, 0, 3, 1),
        (4, 4),
        16,
        (0, 1, 2, 3),
    )
    assert [sp.nsimplify(c) for c in W.coefs] == [1, 2, sp.Rational(1, 3), 1]


def test_only_large_blocks_are_printed_as_loops(models):
    """The GRN's 21 weights stay unrolled (its kernels are the bit-identical ones); from
    STRUCTURED_MIN_ENTRIES entries on, a block is a loop."""
    assert STRUCTURED_MIN_ENTRIES == 64
    assert build_spec(models["grn_bcell"]).blocks == ()
    assert len(build_spec(network_model(8, 0)[0]).blocks) == 1
    assert build_spec(network_model(7, 0)[0]).blocks == ()  # 49 entries
    forced = build_spec(models["grn_bcell"], structured=True)
    assert len(forced.blocks) == 1 and forced.hash != build_spec(models["grn_bcell"]).hash


# --------------------------------------------------------------------------- golden file
def test_golden_structured_module():
    """The network with d = 8 (its 64 weights a loop) against tests/codegen/golden (rewritten
    with DYNOSED_UPDATE_GOLDEN=1 or `make golden`)."""
    model, _ = network_model(8, 0)
    spec = build_spec(model)
    fname = module_filename(model.name, spec.hash)
    text = render_module(spec)
    if UPDATE_GOLDEN:
        write_if_changed(str(GOLDEN / fname), text)
        for stale in stale_files(str(GOLDEN), model.name, fname):
            os.unlink(stale)
    assert (GOLDEN / fname).exists(), f"tests/codegen/golden/{fname} is missing: run make golden"
    assert (GOLDEN / fname).read_text(encoding="utf-8") == text, "run make golden"
    assert stale_files(str(GOLDEN), model.name, fname) == []
    drift = text[text.index("def drift_point") : text.index("def drift(")]
    assert "for j in range(8):" in drift and "acc += theta[j*8 + k]*phi0[k]" in drift
    assert "W_3_5" not in drift  # the weights are read by the loop, not one by one


# --------------------------------------------------------------------------- agreement
def _point_outputs(mod, model, rng, n_points=6):
    """Every point kernel's outputs (py_func: pure Python, no compilation) at random points."""
    d, n = model.d, model.n
    out = {}
    theta = rng.standard_normal(n)
    for _ in range(n_points):
        x = rng.uniform(-1.5, 1.5, d)
        s, J, g = rng.standard_normal(d), rng.standard_normal((d, d)), rng.standard_normal()
        f = np.full(d, np.nan)
        mod.drift_point.py_func(x, theta, f)
        jac = np.full((d, n), np.nan)
        mod.drift_jacobian_point.py_func(x, theta, jac)
        a, beta = np.full(n, np.nan), np.full(1, np.nan)
        mod.local_row_point.py_func(x, s, J, g, a, beta)
        r, dr = np.full(1, np.nan), np.full(n, np.nan)
        mod.local_residual_point.py_func(x, s, J, g, theta, r, dr)
        for key, val in zip(("f", "jac", "a", "beta", "r", "dr"), (f, jac, a, beta, r, dr)):
            out.setdefault(key, []).append(val.copy())
    lanes = _lane_drift(mod, model, rng, theta)
    return {k: np.array(v) for k, v in out.items()} | {"lanes": lanes}


def _lane_drift(mod, model, rng, theta):
    from dynosed_sym.kernels.lanes import LANES

    d = model.d
    x = rng.uniform(-1.5, 1.5, d * LANES)
    out = np.zeros(d * LANES)
    work = np.zeros(16 * d * LANES)
    args = (x, theta, out, 5)
    if hasattr(mod, "block_weights"):  # the loops: basis functions in work, nonzero weights
        args += (work, *mod.block_weights.py_func(theta))
    mod.drift_lanes.py_func(*args)
    return out.reshape(d, LANES)[:, :5].copy()


@pytest.mark.parametrize("which", ["network", "grn", "mixed"])
def test_loops_agree_with_the_unrolled_kernels(which, models, tmp_path):
    """Structured and unrolled kernels compute the same values; not bit for bit (the loop sums
    over k in order, SymPy's unrolled sum in its own order), to rounding."""
    model = {
        "network": lambda: network_model(6, 0)[0],
        "grn": lambda: models["grn_bcell"],
        "mixed": mixed_model,
    }[which]()
    loops, spec = _load(model, True, tmp_path)
    unrolled, _ = _load(model, False, tmp_path)
    assert spec.blocks
    a = _point_outputs(loops, model, np.random.default_rng(1))
    b = _point_outputs(unrolled, model, np.random.default_rng(1))
    for key in a:
        assert np.isfinite(a[key]).all(), key
        scale = max(1.0, np.abs(b[key]).max())
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=1e-13 * scale, err_msg=key)
        assert np.array_equal(a[key] == 0, b[key] == 0) or key == "lanes", key


def test_mixed_model_against_the_numpy_oracle(tmp_path):
    """Drift and local rows of the loops against reference.py (SymPy straight from the model)."""
    model = mixed_model()
    mod, _ = _load(model, True, tmp_path)
    rng = np.random.default_rng(3)
    theta = rng.standard_normal(model.n)
    P = rng.uniform(-1.5, 1.5, (5, model.d))
    S, J = rng.standard_normal((5, model.d)), rng.standard_normal((5, model.d, model.d))
    f_ref = drift_reference(model, P, theta)
    A_ref, b_ref = local_rows_reference(model, P, S, J)
    for i in range(5):
        f = np.empty(model.d)
        mod.drift_point.py_func(P[i], theta, f)
        np.testing.assert_allclose(f, f_ref[i], rtol=1e-12, atol=1e-12)
        a, beta = np.empty(model.n), np.empty(1)
        mod.local_row_point.py_func(P[i], S[i], J[i], 0.0, a, beta)
        np.testing.assert_allclose(a, A_ref[i], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(beta[0], b_ref[i], rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def network8(tmp_path_factory):
    """The d = 8 network compiled (its default: the 64 weights as loops)."""
    model, truth = network_model(8, 0)
    return model, truth, ds.compile_model(model, str(tmp_path_factory.mktemp("net8")))


def test_compiled_network_against_the_oracle(network8):
    """Compiled loops: the drift and the assembled A, b against the NumPy reference."""
    from dynosed_sym.assembly.features import draw_features
    from dynosed_sym.assembly.stein import block_sums, contract

    model, truth, cm = network8
    assert cm.a_blocks and len(cm.raw_module.A_TERMS) == 0
    X = np.random.default_rng(4).uniform(-0.5, 2.0, (300, model.d))
    f = cm.drift(X, truth)
    for ref in (drift_reference(model, X, truth), hill(X) @ truth.reshape(8, 8).T - X + 0.5):
        assert np.abs(f - ref).max() <= 1e-14 * np.abs(ref).max()
    feats = draw_features(model.d, 96, 1.5, seed=2)
    A, b = contract(cm, feats, *block_sums(cm, X, feats), X.shape[0])
    A_ref, b_ref = stein_system_reference(model, X, feats.omega, feats.phase)
    assert np.abs(A - A_ref).max() <= 1e-12 * np.abs(A_ref).max()
    assert np.abs(b - b_ref).max() <= 1e-12 * np.abs(b_ref).max()


@pytest.mark.parametrize("weights", ["sparse", "dense"])
def test_compiled_simulator_loops_agree_with_unrolled(weights, network8, tmp_path):
    """The simulator with the loops (over the nonzero weights) and the unrolled one, same streams,
    at the sparse truth and with every weight nonzero."""
    model, truth, cm = network8
    mod, _ = _load(model, False, tmp_path)
    unrolled = ds.CompiledModel(model, mod, "")
    from dynosed_sym.simulation.simulate import chain_keys

    theta = truth if weights == "sparse" else truth + 0.02 * np.cos(np.arange(truth.size))
    assert (theta == 0).sum() == (48 if weights == "sparse" else 0)  # two regulators a gene
    x0 = np.full((24, model.d), 0.5) + 0.1 * np.random.default_rng(5).standard_normal((24, 8))
    keys = chain_keys(7, 24)
    a, sa = cm.run_chains(x0, theta, cm.noise_matrix, 0.01, 50, 5, 4, keys)
    b, sb = unrolled.run_chains(x0, theta, cm.noise_matrix, 0.01, 50, 5, 4, keys)
    assert not sa.any() and not sb.any()
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- size
def test_generated_size_grows_with_the_basis_not_with_d_squared():
    """Lines of the printed module (parameter names included) grow about linearly in d."""

    def lines(d, structured=None):
        return render_module(build_spec(network_model(d, 0)[0], structured)).count("\n")

    small, large = lines(10), lines(30)
    assert large < 3.6 * small  # d ×3, d² ×9
    assert lines(12, False) > 2 * lines(12)  # the unrolled module of the same model
