"""Reliability round seven: unusual but plausible inputs, each refused with a message that names
the argument, the field, the symbol or the environment and says what to do
(docs/reliability.md, one row each).

Oracles: the documented accepted inputs (a DataFrame read by its column names), SymPy's own
simplification under an assumption, the simulator's chains run again step by step (the same
stream, bit for bit), and the messages of the same checks on plain data.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.simulation.simulate import chain_keys, initial_states

OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])  # ou2d's nominal drift; D = I


@pytest.fixture(scope="module")
def ou_data(ou_samples):
    return ou_samples(OU_M, 1.0, 600, seed=7)


def _records(X, names):
    rec = np.zeros(X.shape[0], dtype=[(n, float) for n in names])
    for j, n in enumerate(names):
        rec[n] = X[:, j]
    return rec


# --------------------------------------------------------------------------- record arrays
STRUCTURED = re.escape(
    "X: a NumPy structured (record) array with fields 'x', 'y': each row is one record, not a "
    "row of numbers: pass pandas.DataFrame(X), whose columns are read by name as the state "
    "variables, or np.column_stack([X[f] for f in ('x', 'y')]) in the model's order"
)


def test_a_record_array_is_refused_naming_its_fields_and_the_conversion(models, ou_data):
    """A structured array said "holds a value that is not a number at row 0: (…, …)"."""
    ou = models["ou2d"]
    rec = _records(ou_data, ["x", "y"])
    features = ds.Features(n_features=16)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_global(ou, rec, features=features)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_local(ou, rec, 4)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.check_stationarity(ou, ou.nominal, rec)
    with pytest.raises(ds.DataError, match="^" + STRUCTURED + "$"):
        ds.fit_global(ou, rec.view(np.recarray), features=features)
    # the conversion the message gives is the fit of the plain array, bit for bit
    plain = ds.fit_global(ou, ou_data, features=features)
    framed = ds.fit_global(ou, pd.DataFrame(rec), features=features)
    np.testing.assert_array_equal(framed.theta, plain.theta)


def test_a_record_array_without_a_state_field_names_it(models, ou_data):
    rec = _records(ou_data, ["x", "q"])
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "fields 'x', 'q': each row is one record, not a row of numbers; it has no field 'y' "
            "for state variable 'y' (state variables: x, y)"
        ),
    ):
        ds.fit_global(models["ou2d"], rec, features=ds.Features(n_features=16))


def test_a_record_npy_file_is_refused_before_reading(models, ou_data, tmp_path):
    path = tmp_path / "rec.npy"
    np.save(path, _records(ou_data, ["x", "y"]))
    shown = repr(str(path))
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"X: {path}: a NumPy structured (record) array with fields 'x', 'y': each row is one "
            f"record, not a row of numbers: pass pandas.DataFrame(np.load({shown})), whose columns"
        ),
    ):
        ds.fit_global(models["ou2d"], str(path), features=ds.Features(n_features=16))


# --------------------------------------------------------------------------- out_dir=""
EMPTY_OUT_DIR = (
    "out_dir='{v}' is an empty or blank string, not a folder (an empty one was taken as 'not "
    "given': the kernels went to the default folder); pass out_dir='.' for the working "
    "directory, or None (or leave it out) for the default folder"
)


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_out_dir_is_refused(models, value):
    """``compile_model(m, out_dir="")`` compiled into the default folder without a word."""
    message = re.escape(EMPTY_OUT_DIR.format(v=value))
    with pytest.raises(ds.DataError, match="^compile_model: " + message):
        ds.compile_model(models["ou2d"], out_dir=value)
    with pytest.raises(ds.DataError, match="^Execution." + message):
        ds.Execution(out_dir=value)


# --------------------------------------------------------------------------- input signs
def _signed_input_model(**assumption):
    x, a = sp.symbols("x a", real=True)
    s = sp.Symbol("s", **assumption)
    return ds.SDEModel(
        [x], [a], [-a * x + sp.Abs(s) - 1], diffusion=1, inputs=[s], name="signed_in"
    ), s


VALID = {"positive": 1.0, "nonnegative": 0.0, "negative": -1.0, "nonpositive": 0.0}


@pytest.mark.parametrize(
    "assumption, value, allowed",
    [
        ("positive", -1.0, "> 0"),
        ("positive", 0.0, "> 0"),
        ("nonnegative", -0.5, "≥ 0"),
        ("negative", 2.0, "< 0"),
        ("nonpositive", 3.0, "≤ 0"),
    ],
)
def test_an_input_outside_its_declared_sign_is_refused(assumption, value, allowed):
    """SymPy simplified Abs(s) to s (or -s) when the drift was written; an input value of the
    other sign ran another model without a word (simulate's mean was −2 instead of 0)."""
    model, s = _signed_input_model(**{assumption: True})
    simplified = sp.Abs(s)  # the oracle: SymPy's own simplification under the assumption
    assert simplified != sp.Abs(sp.Symbol("s", real=True))
    message = re.escape(
        f"inputs: value of 's' is {value:g}, but model 'signed_in' declares input s "
        f"{assumption}=True, under which SymPy has already simplified the drift and D written "
        f"with it (Abs(s) is {simplified}, sqrt(s**2) is {sp.sqrt(s**2)}), so at {value:g} the "
        f"kernels would compute another model; give a value {allowed}, or declare it real=True "
        "(sp.Symbol('s', real=True)) and write the model for both signs"
    )
    with pytest.raises(ds.ModelError, match="^" + message + "$"):
        model.with_inputs({"s": value})
    with pytest.raises(ds.ModelError, match=message):
        ds.simulate(model, [1.0], 100, inputs={"s": value}, seed=0)
    with pytest.raises(ds.ModelError, match=re.escape("inputs['B']: value of 's' is")):
        ds.fit_global(
            model,
            {"A": np.zeros((4, 1)), "B": np.zeros((4, 1))},
            inputs={"A": {"s": VALID[assumption]}, "B": {"s": value}},
        )


def test_an_input_inside_its_declared_sign_simulates_the_declared_model():
    model, _ = _signed_input_model(positive=True)
    X = ds.simulate(model, [1.0], 4000, inputs={"s": 1.0}, seed=0)
    assert abs(X.mean()) < 0.1  # the drift −x + |s| − 1 has its mean at 0


def test_a_nominal_value_outside_its_declared_sign_is_refused():
    x = sp.Symbol("x", real=True)
    b = sp.Symbol("b", positive=True)
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "nominal: value of 'b' is -1, but model 'pos_p' declares parameter b positive=True, "
            "under which SymPy has already simplified the drift and D written with it (Abs(b) is "
            "b, sqrt(b**2) is b)"
        ),
    ):
        ds.SDEModel([x], [b], [-sp.Abs(b) * x], diffusion=1, name="pos_p", nominal=[-1.0])


# --------------------------------------------------------------------------- environments
def test_a_streamed_environment_names_itself_in_the_overflow_error(tmp_path):
    """The data checks of an environment read from a file named X, not X['B']."""
    x, a, s = sp.symbols("x a s", real=True)
    m = ds.SDEModel([x], [a], [-a * x**3 + s], diffusion=1.0, inputs=[s], name="cubic_in")
    rng = np.random.default_rng(0)
    XA, XB = rng.normal(size=(400, 1)), rng.normal(size=(400, 1)) + 0.3
    XB[3, 0] = 1e300
    np.save(tmp_path / "B.npy", XB)
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            "X['B']: value 1e+300 in column 'x', row 3, is too large for model 'cubic_in': its "
            "term x**3"
        ),
    ):
        ds.fit_global(
            m,
            {"A": XA, "B": str(tmp_path / "B.npy")},
            inputs={"A": {"s": 0.0}, "B": {"s": 1.0}},
            features=ds.Features(n_features=16),
        )


# --------------------------------------------------------------------------- CIR below 0
@pytest.fixture(scope="module")
def cir():
    x = sp.Symbol("x", real=True)
    a, b = sp.symbols("a b", real=True)
    return ds.SDEModel([x], [a, b], [a - b * x], diffusion=[[x]], name="cir_r7", nominal=[1, 1])


def test_an_euler_step_below_zero_of_a_cir_model_is_named_not_called_divergence(cir):
    """D = x: an Euler step that takes x below 0 made the next step's √(2D) NaN, reported as
    "simulation diverged … the drift does not confine the state"."""
    theta, dt = [0.2, 1.0], 0.05
    with pytest.raises(ds.DataError) as info:
        ds.simulate(cir, theta, 2000, dt=dt, seed=1)
    msg = str(info.value)
    assert not isinstance(info.value, ds.StationarityError) and "diverged" not in msg
    found = re.match(
        r"simulate: chain (\d+) of model 'cir_r7' left the domain of its drift and D at step "
        r"(\d+) \(t = ([0-9.e+-]+), dt=0\.05\): an Euler step took it to x = \[(\S+)\], where "
        r"D\(x\) is not positive semi-definite \(smallest eigenvalue \S+; D\[0,0\] = x = (\S+)\), "
        r"and the noise √\(2D\) of the next step is not a number\. It did not diverge: the time "
        r"step is too coarse near the domain's edge; reduce dt \(e\.g\. to 0\.005\)",
        msg,
    )
    assert found, msg
    c, step = int(found[1]), int(found[2])
    assert float(found[3]) == pytest.approx(step * dt)
    # oracle: the chain run again alone, recorded at every step, from the same start and stream
    cm = ds.compile_model(cir)
    x0 = initial_states(cir, 2000, 1, theta=np.array(theta), dt=dt)
    keys = chain_keys(1, 2000)
    out, status = cm.run_chains(
        x0[c : c + 1], np.array(theta), np.zeros((1, 1)), dt, 0, 1, step + 1, keys[c : c + 1]
    )
    assert status[0] == step + 1  # the first non-finite step is the one after
    last = out[step - 1, 0, 0]
    assert last < 0 and np.isfinite(out[:step, 0, 0]).all() and (out[: step - 1, 0, 0] >= 0).all()
    assert float(found[4]) == pytest.approx(last, rel=1e-3)
