"""Model declaration and validation (SDEModel, load_model)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

import dynosed_sym as ds

x, y, z = sp.symbols("x y z", real=True)
k, m_, q = sp.symbols("k m q", real=True)


def simple(**kw):
    args = dict(state=[x, y], params=[k, m_], drift=[-k * x, -m_ * y], diffusion=1)
    args.update(kw)
    return ds.SDEModel(**args)


def expect_model_error(match, **kw):
    """Build a model expecting ModelError whose message matches all regexes in ``match``."""
    with pytest.raises(ds.ModelError) as info:
        ds.SDEModel(**kw)
    msg = str(info.value)
    for pattern in [match] if isinstance(match, str) else match:
        assert pattern in msg, f"message {msg!r} does not name {pattern!r}"
    return info.value


# --------------------------------------------------------------------------- error classes
def test_error_hierarchy():
    assert issubclass(ds.ModelError, ds.DynosedError)
    assert issubclass(ds.ModelError, ValueError)
    assert issubclass(ds.NotAffineError, ds.ModelError)
    assert issubclass(ds.DataError, ds.DynosedError)
    assert issubclass(ds.DataError, ValueError)
    assert issubclass(ds.CodegenError, ds.DynosedError)


# --------------------------------------------------------------------------- parameters
def test_params_as_symbols():
    mod = simple()
    assert mod.params == (k, m_)
    assert mod.state == (x, y)
    assert mod.param_names == ["k", "m"]
    assert mod.state_names == ["x", "y"]
    assert (mod.d, mod.n) == (2, 2)


def test_params_as_matrix_of_symbols_row_major():
    M = sp.Matrix(2, 2, sp.symbols("a b c e", real=True))  # [[a, b], [c, e]]
    mod = ds.SDEModel([x, y], M, list(M * sp.Matrix([x, y])), diffusion=1)
    assert mod.param_names == ["a", "b", "c", "e"]
    a, b, c, e = M
    assert sp.simplify(mod.U - sp.Matrix([[x, y, 0, 0], [0, 0, x, y]])) == sp.zeros(2, 4)
    assert mod.params == (a, b, c, e)


def test_params_as_matrix_symbol_readable_names():
    W = sp.MatrixSymbol("W", 3, 7)
    s7 = sp.symbols("s0:7", real=True)
    drift = list(sp.Matrix(W) * sp.Matrix(s7))[:3] + [-si for si in s7[3:]]
    mod = ds.SDEModel(list(s7), W, drift, diffusion=0.1)
    assert mod.n == 21
    assert mod.param_names[:8] == [
        "W[0,0]",
        "W[0,1]",
        "W[0,2]",
        "W[0,3]",
        "W[0,4]",
        "W[0,5]",
        "W[0,6]",
        "W[1,0]",
    ]
    assert "W[1,6]" in mod.param_names
    assert mod.param_names.index("W[1,6]") == 1 * 7 + 6  # row-major
    # the drift no longer holds matrix elements, only the plain parameter symbols
    assert not any(fj.atoms(MatrixElement) for fj in mod.drift)
    assert mod.drift[1].free_symbols == set(s7) | set(mod.params[7:14])
    # W[1,6] multiplies s6 in the second drift component
    W16 = mod.params[13]
    assert sp.diff(mod.drift[1], W16) == s7[6]


def test_params_mixed_symbols_and_matrix():
    M = sp.Matrix([[sp.Symbol("a", real=True), sp.Symbol("b", real=True)]])
    mod = ds.SDEModel([x, y], [k, M], [-k * x + M[0] * y, -M[1] * y], diffusion=1)
    assert mod.param_names == ["k", "a", "b"]


def test_string_param_rejected_with_hint():
    expect_model_error(["'k'", "Symbol"], state=[x], params=["k"], drift=[-k * x], diffusion=1)


def test_a_model_without_parameters_is_simulated_but_not_fitted():
    """params=[] is a valid model (simulation, density); a fit says there is nothing to fit."""
    m = ds.SDEModel([x], [], [-x], diffusion=1, name="noparams")
    assert m.n == 0 and m.theta_vector(None).shape == (0,) and "parameters (0): none" in str(m)
    X = ds.simulate(m, None, 4000, burn_in=500, seed=0)
    assert abs(X.var() - 1.0) < 0.1  # dx = −x dt + √2 dW: stationary N(0, 1)
    for fit in (ds.fit_global, lambda m, X: ds.fit_local(m, X, X[:3])):
        with pytest.raises(ds.ModelError, match="no unknown parameters: there is nothing to fit"):
            fit(m, X)
    with pytest.raises(ds.ModelError, match="no unknown parameters"):
        ds.check_identifiability(m, simulate=False)


def test_empty_state():
    expect_model_error("state", state=[], params=[k], drift=[], diffusion=1)


# --------------------------------------------------------------------------- drift
def test_drift_list_and_column_matrix_agree():
    a = simple()
    b = simple(drift=sp.Matrix([-k * x, -m_ * y]))
    c = simple(drift=sp.Matrix([[-k * x, -m_ * y]]))  # a row vector is accepted too
    assert a.drift == b.drift == c.drift
    assert a.drift.shape == (2, 1)


@pytest.mark.parametrize("drift", [[-k * x], [-k * x, -m_ * y, 0]])
def test_wrong_drift_length(drift):
    expect_model_error(
        ["drift", f"{len(drift)} components", "dimension 2"],
        state=[x, y],
        params=[k, m_],
        drift=drift,
        diffusion=1,
    )


def test_drift_matrix_not_vector():
    expect_model_error(
        "drift", state=[x, y], params=[k, m_], drift=sp.Matrix([[k, 0], [0, m_]]), diffusion=1
    )


def test_duplicate_symbol_in_state():
    expect_model_error(["x", "twice"], state=[x, x], params=[k], drift=[-k * x, -x], diffusion=1)


def test_duplicate_symbol_state_and_params():
    expect_model_error(["y", "twice"], state=[x, y], params=[k, y], drift=[-k * x, -y], diffusion=1)


def test_duplicate_symbol_in_params():
    expect_model_error(["k", "twice"], state=[x], params=[k, k], drift=[-k * x], diffusion=1)


def test_two_symbols_sharing_a_name():
    k_plain = sp.Symbol("k")  # different assumptions -> a different symbol with the same name
    expect_model_error("'k'", state=[x], params=[k, k_plain], drift=[-k * x - k_plain], diffusion=1)


def test_undeclared_symbol_in_drift():
    err = expect_model_error(
        ["q", "drift[1]"], state=[x, y], params=[k, m_], drift=[-k * x, -m_ * y + q], diffusion=1
    )
    assert "neither a state variable, a parameter nor an input" in str(err)


def test_undefined_function():
    g = sp.Function("g")
    expect_model_error(
        ["g", "drift[0]", "undefined"], state=[x], params=[k], drift=[-k * g(x)], diffusion=1
    )


def test_function_numba_cannot_compile():
    expect_model_error(
        ["besselj", "drift[0]", "Numba"],
        state=[x],
        params=[k],
        drift=[-k * x + sp.besselj(0, x)],
        diffusion=1,
    )


def test_unevaluated_derivative_rejected():
    expect_model_error(
        ["drift[0]", "Derivative"],
        state=[x],
        params=[k],
        drift=[-k * x + sp.Derivative(x**3, x, evaluate=False)],
        diffusion=1,
    )


def test_complex_and_infinite_rejected():
    expect_model_error(
        ["drift[0]", "complex"], state=[x], params=[k], drift=[-k * x + sp.I * x], diffusion=1
    )
    expect_model_error(["drift[0]"], state=[x], params=[k], drift=[-k * x + sp.oo], diffusion=1)


# --------------------------------------------------------------------------- diffusion
def test_diffusion_scalar_is_isotropic():
    mod = simple(diffusion=sp.Rational(3, 10))
    assert mod.D == sp.eye(2) * sp.Rational(3, 10)
    assert mod.diffusion_is_constant
    assert mod.G is None


def test_diffusion_vector_is_diagonal():
    mod = simple(diffusion=[1, sp.Rational(1, 2)])
    assert mod.D == sp.diag(1, sp.Rational(1, 2))
    mod2 = simple(diffusion=sp.Matrix([1, sp.Rational(1, 2)]))
    assert mod2.D == mod.D


def test_diffusion_full_matrix():
    D = sp.Matrix([[2, 1], [1, 2]])
    mod = simple(diffusion=D)
    assert mod.D == D
    mod2 = simple(diffusion=[[2, 1], [1, 2]])
    assert mod2.D == D


@pytest.mark.parametrize(
    "G",
    [
        sp.Matrix([[1, 0], [1, 1]]),
        sp.Matrix([[1, 2, 0], [0, 1, 3]]),  # d x d' with d' > d
        sp.Matrix([[sp.sqrt(2), 0], [0, sp.Rational(1, 3)]]),
    ],
)
def test_noise_matrix_gives_half_GGt_exactly(G):
    mod = simple(diffusion=None, noise=G)
    assert mod.G == G
    assert sp.simplify(mod.D - G * G.T / 2) == sp.zeros(2, 2)
    # exact rational arithmetic, no floats introduced
    assert all(not e.has(sp.Float) for e in mod.D)


def test_noise_matrix_state_dependent():
    G = sp.Matrix([[x, 1], [0, 1 + y**2]])
    mod = simple(diffusion=None, noise=G)
    assert sp.simplify(mod.D - G * G.T / 2) == sp.zeros(2, 2)
    assert not mod.diffusion_is_constant


def test_state_dependent_diffusion():
    D = [sp.Rational(1, 10) * (1 + x**2), sp.Rational(1, 5) + sp.sin(y) ** 2]
    mod = simple(diffusion=D)
    assert not mod.diffusion_is_constant
    assert mod.D[0, 0] == D[0] and mod.D[1, 1] == D[1] and mod.D[0, 1] == 0


def test_noise_wrong_rows():
    expect_model_error(
        ["noise", "3 rows"], state=[x, y], params=[k, m_], drift=[-k * x, -m_ * y], noise=sp.eye(3)
    )


def test_exactly_one_of_diffusion_and_noise():
    expect_model_error("exactly one", state=[x], params=[k], drift=[-k * x])
    expect_model_error(
        "exactly one", state=[x], params=[k], drift=[-k * x], diffusion=1, noise=[[1]]
    )


def test_diffusion_wrong_shape():
    expect_model_error(
        ["diffusion", "3"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        diffusion=[1, 2, 3],
    )


def test_parameter_inside_diffusion():
    err = expect_model_error(
        ["k", "D[1,1]"], state=[x, y], params=[k, m_], drift=[-k * x, -m_ * y], diffusion=[1, k**2]
    )
    assert "parameter" in str(err)


def test_parameter_inside_noise():
    expect_model_error(
        ["m", "diffusion"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        noise=sp.Matrix([[1, 0], [0, m_]]),
    )


def test_matrix_symbol_parameter_inside_diffusion_raises():
    W = sp.MatrixSymbol("W", 1, 2)
    with pytest.raises(ds.ModelError):
        ds.SDEModel([x, y], W, [-W[0, 0] * x, -W[0, 1] * y], diffusion=[1, 1 + W[0, 1] ** 2])


def test_matrix_symbol_parameter_inside_diffusion_is_named():
    W = sp.MatrixSymbol("W", 1, 2)
    with pytest.raises(ds.ModelError) as info:
        ds.SDEModel([x, y], W, [-W[0, 0] * x, -W[0, 1] * y], diffusion=[1, 1 + W[0, 1] ** 2])
    msg = str(info.value)
    assert "W[0,1]" in msg and "parameter" in msg


def test_undeclared_symbol_in_diffusion():
    expect_model_error(
        ["q", "D[0,0]"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        diffusion=[q**2 + 1, 1],
    )


def test_non_symmetric_diffusion():
    expect_model_error(
        ["symmetric", "D[0,1]"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        diffusion=sp.Matrix([[1, x], [0, 1]]),
    )


def test_non_symmetric_constant_diffusion():
    expect_model_error(
        ["symmetric", "D[0,1]"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        diffusion=[[1, 0.5], [0.2, 1]],
    )


def test_symmetric_after_simplification_is_accepted():
    off1 = sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1 + x * y / 10
    off2 = x * y / 10
    mod = simple(diffusion=sp.Matrix([[1 + x**2, off1], [off2, 1 + y**2]]))
    assert not mod.diffusion_is_constant


@pytest.mark.parametrize(
    "D",
    [
        [[1, 2], [2, 1]],  # eigenvalues 3, -1
        [1, -0.5],
        -0.1,
    ],
)
def test_indefinite_constant_diffusion(D):
    expect_model_error(
        ["diffusion", "positive semi-definite"],
        state=[x, y],
        params=[k, m_],
        drift=[-k * x, -m_ * y],
        diffusion=D,
    )


def test_unsupported_function_in_diffusion():
    expect_model_error(
        ["besselj", "diffusion D[0,0]"],
        state=[x],
        params=[k],
        drift=[-k * x],
        diffusion=1 + sp.besselj(0, x) ** 2,
    )


def test_bad_name():
    expect_model_error("name", state=[x], params=[k], drift=[-k * x], diffusion=1, name="my model")


# --------------------------------------------------------------------------- nominal / theta
def test_nominal_by_symbol_name_and_array():
    a = simple(nominal={k: 1.5, m_: 2})
    b = simple(nominal={"k": 1.5, "m": 2})
    c = simple(nominal=[1.5, 2.0])
    d = simple(nominal=np.array([1.5, 2.0]))
    for mod in (a, b, c, d):
        assert isinstance(mod.nominal, np.ndarray)
        assert mod.nominal.dtype == float
        np.testing.assert_array_equal(mod.nominal, [1.5, 2.0])
    assert simple().nominal is None


def test_nominal_by_matrix_symbol_name():
    W = sp.MatrixSymbol("W", 1, 2)
    mod = ds.SDEModel(
        [x, y], W, [-W[0, 0] * x, -W[0, 1] * y], diffusion=1, nominal={"W[0,0]": 1.0, "W[0,1]": 2.0}
    )
    np.testing.assert_array_equal(mod.nominal, [1.0, 2.0])


def test_nominal_keyed_by_matrix_symbol_element():
    W = sp.MatrixSymbol("W", 1, 2)
    mod = ds.SDEModel(
        [x, y], W, [-W[0, 0] * x, -W[0, 1] * y], diffusion=1, nominal={W[0, 0]: 1.0, W[0, 1]: 2.0}
    )
    np.testing.assert_array_equal(mod.nominal, [1.0, 2.0])


def test_nominal_errors_name_the_parameter():
    with pytest.raises(ds.ModelError, match="'m'"):
        simple(nominal={"k": 1.0})
    with pytest.raises(ds.ModelError, match="'zz'"):
        simple(nominal={"k": 1.0, "m": 2.0, "zz": 3.0})
    with pytest.raises(ds.ModelError, match="nominal"):
        simple(nominal=[1.0, 2.0, 3.0])
    with pytest.raises(ds.ModelError, match="'m'"):
        simple(nominal=[1.0, np.nan])


def test_theta_vector_roundtrip():
    mod = simple()
    np.testing.assert_array_equal(mod.theta_vector({k: 3, "m": 4}), [3.0, 4.0])
    np.testing.assert_array_equal(mod.theta_vector((3, 4)), [3.0, 4.0])


# --------------------------------------------------------------------------- misc API
def test_repr_and_equations():
    mod = simple(name="toy")
    assert "toy" in repr(mod)
    text = str(mod)
    assert "dx" in text and "dy" in text and "k" in text and "m" in text


def test_model_is_affine_and_U_v():
    mod = simple()
    assert mod.is_affine
    assert mod.U == sp.Matrix([[-x, 0], [0, -y]])
    assert mod.v == sp.zeros(2, 1)


# --------------------------------------------------------------------------- load_model
def test_load_every_model(models, model_name, project_root):
    mod = models[model_name]
    assert isinstance(mod, ds.SDEModel)
    assert mod.nominal is not None and mod.nominal.shape == (mod.n,)
    assert mod.source_path == str(project_root / "models" / f"{model_name}.py")
    assert mod.is_affine


def test_load_model_zoo_facts(models):
    lor = models["lorenz"]
    assert lor.param_names == ["sigma", "rho", "beta"]
    np.testing.assert_allclose(lor.nominal, [10.0, 28.0, 8.0 / 3.0], rtol=0, atol=1e-15)
    assert lor.D == sp.eye(3) * sp.Rational(3, 10)
    grn = models["grn_bcell"]
    assert grn.d == 7 and grn.n == 21
    assert grn.param_names[0] == "W[0,0]" and grn.param_names[-1] == "W[2,6]"
    assert models["ou2d"].param_names == ["M11", "M12", "M21", "M22"]
    assert models["ou2d_m12"].param_names == ["M12"]
    assert models["limit_cycle"].param_names == ["a", "c", "omega"]


def test_load_model_accepts_pathlike(project_root):
    mod = ds.load_model(project_root / "models" / "lorenz.py")
    assert mod.name == "lorenz"


def write(tmp_path, name, body):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def test_load_model_missing_file(tmp_path):
    with pytest.raises(ds.ModelError, match="does not exist"):
        ds.load_model(tmp_path / "nope.py")
    # a folder that exists was "does not exist" too
    with pytest.raises(ds.ModelError, match="is a folder; give the model's .py file in it"):
        ds.load_model(tmp_path)


def test_theta_none_is_named(models):
    """simulate(model, None, n) said "expected 4 values (one per parameter), got 1"."""
    m = models["ou2d"]
    with pytest.raises(ds.ModelError, match=r"theta: None; give the 4 parameter values of model"):
        m.theta_vector(None)
    with pytest.raises(ds.ModelError, match="theta: None"):
        ds.simulate(m, None, 10)


def test_load_model_syntax_error(tmp_path):
    p = write(tmp_path, "broken.py", "model = (\n")
    with pytest.raises(ds.ModelError) as info:
        ds.load_model(p)
    assert "broken.py" in str(info.value) and "SyntaxError" in str(info.value)


def test_load_model_runtime_error(tmp_path):
    p = write(tmp_path, "raises.py", "raise RuntimeError('boom')\n")
    with pytest.raises(ds.ModelError, match="boom") as info:
        ds.load_model(p)
    assert "raises.py" in str(info.value)


def test_load_model_without_model(tmp_path):
    p = write(tmp_path, "empty.py", "x = 1\n")
    with pytest.raises(ds.ModelError, match="named 'model'"):
        ds.load_model(p)


def test_load_model_wrong_type(tmp_path):
    p = write(tmp_path, "wrongtype.py", "model = 42\n")
    with pytest.raises(ds.ModelError, match="SDEModel"):
        ds.load_model(p)


def test_load_model_propagates_model_error(tmp_path):
    p = write(
        tmp_path,
        "invalid.py",
        """
        import sympy as sp
        import dynosed_sym as ds
        x, k = sp.symbols("x k")
        model = ds.SDEModel([x], [k], [-k * x, x], diffusion=1)
    """,
    )
    with pytest.raises(ds.ModelError, match="drift has 2 components"):
        ds.load_model(p)


def test_load_model_user_file(tmp_path):
    p = write(
        tmp_path,
        "double_well.py",
        """
        import sympy as sp
        import dynosed_sym as ds
        x = sp.Symbol("x", real=True)
        a, b = sp.symbols("a b", real=True)
        model = ds.SDEModel([x], [a, b], [a * x - b * x**3], diffusion=0.5, name="double_well",
                            nominal={"a": 1, "b": 1})
    """,
    )
    mod = ds.load_model(p)
    assert mod.name == "double_well" and mod.param_names == ["a", "b"]
    np.testing.assert_array_equal(mod.nominal, [1.0, 1.0])


def test_state_as_matrix_and_numpy_diffusion():
    mod = ds.SDEModel(sp.Matrix([x, y]), [k], [-k * x, -y], diffusion=np.array([[1, 0], [0, 2]]))
    assert mod.state == (x, y)
    assert mod.D == sp.diag(1, 2)
    assert ds.SDEModel([x, y], [k], [-k * x, -y], diffusion=np.array([1, 2])).D == sp.diag(1, 2)
    D = ds.SDEModel([x, y], [k], [-k * x, -y], diffusion=np.float64(0.5)).D
    np.testing.assert_array_equal(np.array(D, dtype=float), 0.5 * np.eye(2))


def test_state_dependent_D_without_cholesky_factor_is_named():
    """Found by tests/test_fuzz.py: D = [[0, x], [x, 0]] was accepted and then broke code
    generation (the simulator's symbolic Cholesky factor divides by zero)."""
    x0, x1, p0 = sp.symbols("x0 x1 p0", real=True)
    with pytest.raises(ds.ModelError, match="Cholesky"):
        ds.SDEModel([x0, x1], [p0], [p0 * x0, -x1], diffusion=sp.Matrix([[0, x0], [x0, 0]]))
    # a factorable state-dependent D is still accepted
    ds.SDEModel(
        [x0, x1], [p0], [p0 * x0, -x1], diffusion=sp.Matrix([[1 + x0**2, x0 / 2], [x0 / 2, 1]])
    )


def test_load_model_names_a_file_that_is_not_python(tmp_path):
    path = tmp_path / "model.txt"
    path.write_text("model = None\n")
    with pytest.raises(ds.ModelError, match="not a Python file"):
        ds.load_model(path)
