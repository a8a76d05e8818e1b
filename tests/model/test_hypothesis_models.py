"""Property tests over randomly generated models.

Models: dimension 1-3, 1-4 parameters; every drift component is a sum of
``coefficient · parameter · basis`` terms and parameter-free terms, with polynomial,
rational and transcendental (bounded arguments) basis functions; diffusion is a
constant isotropic or diagonal D, a constant full D given through a noise matrix G,
or a state-dependent diagonal D such as 0.1·(1 + x²).

Checks: the affine split is exact (symbolically and numerically), and the generated
kernels agree with the NumPy reference.  Numba compilation takes seconds per model,
so most examples run the generated point kernels through ``.py_func`` (pure
Python; the model-independent fill ``accumulate_stein`` is compiled once per
session), and a separate test compiles a few models for real.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from strategies import (
    PyFuncModel,
    _check_against_reference,
    models_and_data,
    sde_models,
)

import dynosed_sym as ds
from dynosed_sym.reference import lambdified


@pytest.fixture(scope="session")
def hyp_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("hypothesis_generated"))


# --------------------------------------------------------------------------- affine split
@settings(max_examples=300)
@given(models_and_data())
def test_affine_split_exact(case):
    model, X, theta, *_ = case
    assert model.is_affine
    residual = model.U * sp.Matrix(model.params) + model.v - model.drift
    for e in residual:
        assert sp.expand(e) == 0 or sp.simplify(e) == 0, f"U θ + v − f = {e}"
    # numerically, through independent lambdified functions
    L = lambdified(model)
    U, v, f = L.U(X), L.v(X), L.f(X, theta)
    np.testing.assert_allclose(
        np.einsum("ijk,k->ij", U, theta) + v, f, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(f).max())
    )


@settings(max_examples=400)
@given(models_and_data())
def test_generated_kernels_match_reference_py_func(hyp_dir, case):
    model, X, theta, m, ell, seed = case
    loaded = ds.compile_model(model, hyp_dir)  # emits and imports; no Numba compilation yet
    cm = PyFuncModel(model, loaded.module, loaded.path)
    _check_against_reference(cm, X, theta, m, ell, seed)
    if model.diffusion_is_constant:
        assert cm.noise_matrix is not None
        G = cm.noise_matrix
        np.testing.assert_allclose(G @ G.T / 2, np.array(model.D.evalf(), dtype=float), atol=1e-12)
    else:
        # state-dependent noise: the generated G(x) satisfies ½ G Gᵀ = D(x)
        assert loaded.module.STATE_DEPENDENT_NOISE
        Dx = lambdified(model).D(X)
        Gx = np.empty((model.d, loaded.module.NOISE_DIM))
        for i in range(X.shape[0]):
            loaded.module.noise_point.py_func(X[i], Gx)
            np.testing.assert_allclose(Gx @ Gx.T / 2, Dx[i], rtol=1e-12, atol=1e-14)


@settings(max_examples=4)
@given(models_and_data(max_rows=200))
def test_compiled_kernels_match_reference(hyp_dir, case):
    """A few models through the real Numba compiler (seconds each)."""
    model, X, theta, m, ell, seed = case
    cm = ds.compile_model(model, hyp_dir)
    _check_against_reference(cm, X, theta, m, ell, seed)
    py = PyFuncModel(model, cm.module, cm.path)
    s_jit, c_jit = cm.stein_features(X)
    s_py, c_py = py.stein_features(X)
    np.testing.assert_allclose(s_jit, s_py, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(s_py).max()))
    np.testing.assert_allclose(c_jit, c_py, rtol=1e-13, atol=1e-13 * max(1.0, np.abs(c_py).max()))


@settings(max_examples=30)
@given(sde_models())
def test_render_deterministic(model):
    from dynosed_sym.codegen.render import render_module
    from dynosed_sym.codegen.spec import build_spec

    # a fresh model object from the same declaration: nothing cached is shared
    noise = {"noise": model.G} if model.G is not None else {"diffusion": model.D}
    twin = ds.SDEModel(
        list(model.state), list(model.params), list(model.drift), name=model.name, **noise
    )
    assert render_module(build_spec(model)) == render_module(build_spec(twin))
