"""Known inputs as the kernels' runtime argument (issue 20): one generated module and one Numba
compilation per model whatever the number of environments, and the results of the model with
the values substituted (the NumPy oracle on ``model.with_inputs(u)``, and bit for bit a module
printed with the numbers where its arithmetic is the same)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from conftest import ou_noise_model, ou_stationary_samples

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import block_sums, contract
from dynosed_sym.reference import drift_reference, local_rows_reference, stein_system_reference
from dynosed_sym.simulation.simulate import chain_keys

VALUES = (0.5, 1.25, 2.0)


def forced_model(name="forced"):
    """2-D OU with an input in the drift (a forcing a·u) and in the diffusion (D = diag(u, 1))."""
    x, y, u = sp.symbols("x y u", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    f = M * sp.Matrix([x, y]) + sp.Matrix([u / 2, -u * x / 4])
    return ds.SDEModel(
        [x, y],
        M,
        list(f),
        [u, 1],
        inputs=[u],
        name=name,
        nominal={"M11": -1.0, "M12": 0.5, "M21": -0.5, "M22": -1.0},
    )


def _plain(model_u, name):
    """The specialised model as a model of its own (the path before inputs were arguments)."""
    return ds.SDEModel(model_u.state, model_u.params, model_u.drift, model_u.D, name=name)


@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")  # burn_in=5: short
def test_three_input_values_one_module_one_compile(tmp_path):
    model = forced_model()
    X = np.random.default_rng(0).standard_normal((64, 2))
    cms = [ds.compile_model(model.with_inputs({"u": v}), str(tmp_path)) for v in VALUES]
    for cm, v in zip(cms, VALUES):
        assert cm.inputs.tolist() == [v] and cm.path == cms[0].path
        cm.stein_features(X)
        ds.simulate(
            model,
            model.nominal,
            64,
            inputs={"u": v},
            burn_in=5,
            execution=ds.Execution(out_dir=str(tmp_path)),
        )
    assert sorted(p.name for p in tmp_path.glob("*.py")) == [cms[0].path.split("/")[-1]]
    raw = cms[0].raw_module
    assert len(raw.stein_features.signatures) == 1
    assert len(raw.simulate_chains.signatures) == 1


def test_a_design_of_three_environments_compiles_once(tmp_path):
    """fit_global over three environments with three input values: one module, one compile."""
    model = ou_noise_model("aniso", name="ou_aniso_design")
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    X = {
        f"e{i}": ou_stationary_samples(M, np.diag([s, 1.0]), 3000, i) for i, s in enumerate(VALUES)
    }
    inputs = {f"e{i}": {"s": s} for i, s in enumerate(VALUES)}
    fit = ds.fit_global(
        model,
        X,
        inputs=inputs,
        features=ds.Features(n_features=128),
        execution=ds.Execution(out_dir=str(tmp_path)),
    )
    files = list(tmp_path.glob("*.py"))
    assert len(files) == 1
    cm = ds.compile_model(model.with_inputs({"s": 1.0}), str(tmp_path))
    assert len(cm.raw_module.stein_features.signatures) == 1
    np.testing.assert_allclose(fit.theta, M.reshape(-1), atol=0.25)


@pytest.mark.parametrize("v", VALUES)
def test_kernels_at_runtime_inputs_match_the_oracle(v, tmp_path):
    """Drift, A and b, and the local rows at u = v against reference.py on model.with_inputs."""
    model = forced_model()
    sub = model.with_inputs({"u": v})
    cm = ds.compile_model(sub, str(tmp_path))
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 2))
    theta = rng.standard_normal(4)
    np.testing.assert_allclose(cm.drift(X, theta), drift_reference(sub, X, theta), rtol=1e-13)
    feats = draw_features(2, 64, 1.0, seed=3)
    A, b = contract(cm, feats, *block_sums(cm, X, feats), X.shape[0])
    A_ref, b_ref = stein_system_reference(sub, X, feats.omega, feats.phase)
    assert np.abs(A - A_ref).max() <= 1e-12 * np.abs(A_ref).max()
    assert np.abs(b - b_ref).max() <= 1e-12 * np.abs(b_ref).max()
    P, S, J = X[:5], rng.standard_normal((5, 2)), rng.standard_normal((5, 2, 2))
    A_loc, b_loc = np.empty((5, 4)), np.empty(5)
    cm.module.local_rows(P, S, J, np.zeros(5), A_loc, b_loc)
    A_ref, b_ref = local_rows_reference(sub, P, S, J)
    np.testing.assert_allclose(A_loc, A_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b_loc, b_ref, rtol=1e-12, atol=1e-12)
    G = cm.noise_matrix  # computed from D(u) as for the substituted model
    np.testing.assert_array_equal(
        G, ds.compile_model(_plain(sub, "plain_g"), str(tmp_path)).noise_matrix
    )


def test_simulation_bit_for_bit_as_the_substituted_module(tmp_path):
    """An input only in D: the runtime-input simulator and a module printed with the number
    run the same arithmetic, so their samples agree bit for bit."""
    model = ou_noise_model("aniso", name="ou_aniso_bits")
    sub = model.with_inputs({"s": 2.0})
    plain = ds.compile_model(_plain(sub, "ou_aniso_plain"), str(tmp_path))
    bound = ds.compile_model(sub, str(tmp_path))
    assert plain.path != bound.path and not plain.raw_module.INPUTS
    np.testing.assert_array_equal(plain.noise_matrix, bound.noise_matrix)
    x0 = np.random.default_rng(2).standard_normal((40, 2))
    keys = chain_keys(3, 40)
    a, _ = plain.run_chains(x0, model.nominal, plain.noise_matrix, 0.01, 30, 2, 5, keys)
    b, _ = bound.run_chains(x0, model.nominal, bound.noise_matrix, 0.01, 30, 2, 5, keys)
    np.testing.assert_array_equal(a, b)


def test_kernels_of_an_unbound_model_name_the_inputs(tmp_path):
    cm = ds.compile_model(forced_model("unbound"), str(tmp_path))
    with pytest.raises(ds.ModelError, match=r"has inputs \(u\)"):
        cm.stein_features(np.zeros((3, 2)))
    assert cm.bind({"u": 1.0}).stein_features(np.zeros((3, 2)))[0].shape[0] == 3
