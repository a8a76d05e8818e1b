"""Declarations that SymPy or NumPy accept but the kernels cannot use are refused with a
ModelError that names the argument, the entry or the drift component — never a SymPy or NumPy
traceback at declaration, nor a failure (or a silent zero) later in a fit, a simulation or the
generated code."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds

x, y = sp.symbols("x y", real=True)
a = sp.symbols("a", real=True)


def ou1(**kw):
    return ds.SDEModel([x], [a], [-a * x], **kw)


# --------------------------------------------------------------------------- D out of range
@pytest.mark.parametrize(
    "d, kw, shown",
    [
        (1, dict(noise=[[1e-170]]), r"^noise: D\[0,0\] = ½\(GGᵀ\)\[0,0\] = 5.000E-341 underflows"),
        (1, dict(diffusion=sp.Float("1e-340")), r"^diffusion: D\[0,0\] = 1.000E-340 underflows"),
        (2, dict(diffusion=[1, sp.Float("1e-340")]), r"^diffusion: D\[1,1\] = 1.000E-340"),
        (2, dict(noise=[[1e-170, 0], [0, 1]]), r"^noise: D\[0,0\] = ½\(GGᵀ\)\[0,0\] = 5.000E-341"),
    ],
)
def test_diffusion_that_underflows_to_zero_is_refused(d, kw, shown):
    """(noise=[[1e-170]] gave D = 5e-341, zero in the kernels: a fit returned a = 0 with
    std. error 0, "identifiable"; diffusion=sp.Float("1e-340") was accepted while
    diffusion=1e-340, already 0.0 as a Python float, was refused as identically zero)"""
    state, drift = ([x, y], [-a * x, -y]) if d == 2 else ([x], [-a * x])
    with pytest.raises(ds.ModelError, match=shown + r".*double precision.*rescale"):
        ds.SDEModel(state, [a], drift, **kw)


@pytest.mark.parametrize(
    "kw, shown",
    [
        (dict(noise=[[1e155]]), r"^noise: D\[0,0\] = ½\(GGᵀ\)\[0,0\] = 5.000E\+309 is beyond"),
        (dict(noise=[[1e200]]), r"^noise: D\[0,0\] = ½\(GGᵀ\)\[0,0\] = 5.000E\+399 is beyond"),
        (dict(diffusion=1e308), r"^diffusion: D\[0,0\] = 1.000E\+308 is beyond"),
        (dict(diffusion=sp.Float("1e309")), r"^diffusion: D\[0,0\] = 1.000E\+309 is beyond"),
        (dict(noise=[[sp.Float("1e400")]]), r"^noise G\[0,0\]: the constant 1.000E\+400 is beyond"),
    ],
)
def test_diffusion_beyond_double_range_is_refused(kw, shown):
    """(noise=[[1e155]] passed the declaration, and every use then failed in the generated code
    with "name 'inf' is not defined", leaving that broken module on disk; diffusion=1e308 gave
    overflow warnings in simulate and a StationarityError blaming the drift)"""
    with pytest.raises(ds.ModelError, match=shown):
        ou1(**kw)


def test_diffusion_near_the_range_limits_is_accepted():
    assert float(ou1(diffusion=8e307).D[0, 0]) == 8e307  # 2D = 1.6e308 still a double
    assert float(ou1(noise=[[1e-160]]).D[0, 0]) == pytest.approx(5e-321)  # subnormal, not 0


# --------------------------------------------------------------------------- scalars, shapes
@pytest.mark.parametrize(
    "noise, D",
    [
        (1, sp.Rational(1, 2)),
        (-1, sp.Rational(1, 2)),
        (2.0, 2.0),
        (sp.sqrt(2), 1),
        (np.float64(2.0), 2.0),
        (np.array(2.0), 2.0),
        (x, x**2 / 2),
        ("x", x**2 / 2),
    ],
)
def test_scalar_noise_of_a_one_dimensional_state_is_g(noise, D):
    """(noise=1, sqrt(2), 2.0, x or -1 raised SymPy's "TypeError: Data type not understood";
    np.float64(1) and a 0-d array a NotImplementedError): for d = 1, noise=g is G = [[g]]"""
    m = ou1(noise=noise)
    assert m.G.shape == (1, 1)
    assert sp.simplify(m.D[0, 0] - D) == 0


@pytest.mark.parametrize("noise", [1, sp.sqrt(2), np.float64(1.0), np.array(1.0), x])
def test_scalar_noise_of_a_larger_state_says_what_shape_is_expected(noise):
    with pytest.raises(ds.ModelError, match=r"^noise: got one value .* dimension 2; G is a 2×d'"):
        ds.SDEModel([x, y], [a], [-a * x, -y], noise=noise)


@pytest.mark.parametrize("diffusion", [np.array(2.0), np.float64(2.0), 2, sp.Float(2)])
def test_scalar_diffusion_of_any_kind_is_c_times_identity(diffusion):
    """(a 0-d NumPy array raised "TypeError: iteration over a 0-d array"; the docstring says a
    scalar means D = c·I)"""
    m = ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=diffusion)
    np.testing.assert_array_equal(np.array(m.D, dtype=float), 2 * np.eye(2))


@pytest.mark.parametrize(
    "kw, shown",
    [
        (dict(diffusion=True), r"^diffusion: True is a truth value"),
        (dict(diffusion=np.bool_(True)), r"^diffusion: True is a truth value"),
        (dict(diffusion=[1, True]), r"^diffusion\[1\]: True is a truth value"),
        (dict(noise=True), r"^noise: True is a truth value"),
        (dict(noise=[[True, 0], [0, 1]]), r"^noise\[0,0\]: True is a truth value"),
        (dict(diffusion=[[1, 0], [0, x < 1]]), r"^diffusion\[1,1\]: x < 1 is a condition"),
        (dict(diffusion=[1, None]), r"^diffusion\[1\]: no value \(None\)"),
        (dict(noise=[[None, 0], [0, 1]]), r"^noise\[0,0\]: no value \(None\)"),
        (dict(diffusion={1, 2}), r"^diffusion: \{1, 2\} is a FiniteSet"),
        (dict(diffusion=[[1, 0], [0]]), r"^diffusion: rows of different lengths"),
        (dict(noise=[[1, 0], [0]]), r"^noise: rows of different lengths"),
        (dict(diffusion=np.ones((2, 2, 2))), r"^diffusion: expected .* got 3 dimensions"),
        (dict(noise=np.ones((2, 2, 2))), r"^noise: expected .* got 3 dimensions"),
    ],
)
def test_diffusion_and_noise_entries_that_are_not_numbers_are_named(kw, shown):
    """(diffusion=True: "BooleanAtom not allowed in this context"; x < 1 in D was accepted; None
    an AttributeError; a ragged list a LinAlgError or "mismatched dimensions"; a (2, 2, 2)
    array became a 4×4 D for a state of dimension 2)"""
    with pytest.raises(ds.ModelError, match=shown):
        ds.SDEModel([x, y], [a], [-a * x, -y], **kw)


# --------------------------------------------------------------------------- drift components
@pytest.mark.parametrize(
    "component, shown",
    [
        (True, r"True is a truth value"),
        (np.bool_(False), r"False is a truth value"),
        (sp.Eq(x, a), r"Eq\(x, a\) is a condition \(Equality\)"),
        (x < a, r"x < a is a condition \(StrictLessThan\)"),
        ("x < a", r"x < a is a condition"),
        (sp.And(x < a, x > 0), r"\(x > 0\) & \(x < a\) is a condition \(And\)"),
        (None, r"no value \(None\)"),
    ],
)
def test_drift_components_that_are_conditions_are_refused(component, shown):
    """(drift [True] was accepted and simulate then failed with AttributeError 'BooleanTrue';
    [Eq(x, a)] was accepted and a fit failed with AttributeError 'Equality')"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no SymPy deprecation warning on the way either
        with pytest.raises(ds.ModelError, match=r"^drift\[1\] \(dy\): " + shown):
            ds.SDEModel([x, y], [a], [-a * x, component], diffusion=1)


def test_drift_as_a_nested_column_still_works():
    m = ds.SDEModel([x, y], [a], [[-a * x], [-y]], diffusion=1)
    assert list(m.drift) == [-a * x, -y]


# --------------------------------------------------------------------------- load_model
@pytest.mark.parametrize("path, shown", [(None, "NoneType None"), (123, "int 123")])
def test_load_model_of_something_that_is_no_path(path, shown):
    """(load_model(None): "TypeError: expected str, bytes or os.PathLike object")"""
    with pytest.raises(ds.ModelError, match=rf"^load_model: expected the path .* got {shown}"):
        ds.load_model(path)


def test_load_model_of_a_model():
    with pytest.raises(ds.ModelError, match=r"^load_model: got an SDEModel, not a path"):
        ds.load_model(ou1(diffusion=1))


def test_abs_of_a_symbol_not_declared_real_is_refused_by_name():
    """Abs(x) of sp.symbols("x") (not known to be real) has a SymPy derivative through re() and
    im(): simulate, fit_global, fit_local and check_stationarity all failed with a SymPy
    printer error ('Unsupported by SlotPrinter: re').  Refused when declared, naming the
    component, the function and the symbol; the same model with real symbols compiles and
    simulates."""
    x, a = sp.symbols("x a")
    with pytest.raises(ds.ModelError) as err:
        ds.SDEModel([x], [a], [-a * x / sp.Abs(x)], diffusion=0.5, name="abs_nr")
    assert str(err.value) == (
        "drift[0] (dx): Abs(x) takes x, which SymPy does not know to be real, and differentiates "
        "it through re() and im(); declare it real, e.g. sp.symbols('x', real=True)"
    )
    with pytest.raises(ds.ModelError, match=r"^diffusion D\[0,0\]: Abs\(x\) takes x"):
        ds.SDEModel([x], [a], [-a * x], diffusion=0.5 + sp.Abs(x), name="abs_nr_d")
    xr, ar = sp.symbols("x a", real=True)
    model = ds.SDEModel([xr], [ar], [-ar * xr / sp.Abs(xr)], diffusion=0.5, name="abs_real")
    X = ds.simulate(model, [2.0], 500, seed=0)
    assert np.isfinite(X).all()
