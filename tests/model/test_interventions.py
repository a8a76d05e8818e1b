"""shift_interventions: the model and inputs of a design with known intervention targets.

Oracle: the drift of every environment's model (``model.with_inputs(inputs[e])``) minus the base
drift is exactly the declared shift vector, symbol by symbol — zero in a reference environment.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.errors import ModelError

x, y, z = sp.symbols("x y z", real=True)
a, b, c, k = sp.symbols("a b c k", real=True)
s = sp.Symbol("s", real=True)


def _base(**kw):
    return ds.SDEModel([x, y, z], [a, b, c], [a * y - x, b * x - y + c, -z], 0.5, name="tri", **kw)


def _env_shift(design, base, env):
    """Drift of environment ``env`` minus the base drift (base inputs substituted in both)."""
    u = design.inputs[env]
    m_e = design.model.with_inputs(u)
    base_u = base.with_inputs({n: u[n] for n in base.input_names}) if base.inputs else base
    return [sp.nsimplify(sp.expand(f - g)) for f, g in zip(m_e.drift, base_u.drift)]


def test_shifts_enter_only_their_environment():
    base = _base()
    design = ds.shift_interventions(base, {"obs": [], "dx": ["x"], "both": {"x": None, "z": -5.0}})
    m = design.model
    assert m.param_names == ["a", "b", "c", "shift_x[dx]", "shift_x[both]"]
    assert m.input_names == ["env[dx]", "env[both]"]
    assert design.shift_params == ["shift_x[dx]", "shift_x[both]"]
    assert design.reference == ("obs",)
    assert design.shifts == {
        "obs": {},
        "dx": {"x": "shift_x[dx]"},
        "both": {"x": "shift_x[both]", "z": -5.0},
    }
    assert design.inputs == {
        "obs": {"env[dx]": 0.0, "env[both]": 0.0},
        "dx": {"env[dx]": 1.0, "env[both]": 0.0},
        "both": {"env[dx]": 0.0, "env[both]": 1.0},
    }
    sx_dx, sx_both = sp.Symbol("shift_x[dx]", real=True), sp.Symbol("shift_x[both]", real=True)
    assert _env_shift(design, base, "obs") == [0, 0, 0]
    assert _env_shift(design, base, "dx") == [sx_dx, 0, 0]
    assert _env_shift(design, base, "both") == [sx_both, 0, -5]
    # the reference environment's model has no shift parameter in its drift at all (pinned to 0)
    obs_drift = design.model.with_inputs(design.inputs["obs"]).drift
    assert not obs_drift.free_symbols & {sx_dx, sx_both}
    assert m.D == base.D and m.state == base.state


@settings(max_examples=25)
@given(
    st.lists(
        st.lists(st.sampled_from([None, 1.5, -2.0, "skip"]), min_size=3, max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_every_environment_shift_matches_its_declaration(spec):
    """Random targets (unknown or known shifts) in up to four environments plus a reference."""
    base = _base()
    names = ["x", "y", "z"]
    targets = {"ref": {}}
    for i, row in enumerate(spec):
        targets[f"e{i}"] = {nm: v for nm, v in zip(names, row) if v != "skip"}
    if not any(targets.values()):
        with pytest.raises(ModelError, match="no environment has a target"):
            ds.shift_interventions(base, targets)
        return
    design = ds.shift_interventions(base, targets)
    unknown = [f"shift_{v}[{e}]" for e, t in targets.items() for v, val in t.items() if val is None]
    assert design.model.param_names == ["a", "b", "c", *unknown]
    for e, t in targets.items():
        expected = []
        for nm in names:
            if nm not in t:
                expected.append(0)
            elif t[nm] is None:
                expected.append(sp.Symbol(f"shift_{nm}[{e}]", real=True))
            else:
                expected.append(sp.Float(t[nm]))
        got = _env_shift(design, base, e)
        assert all(sp.simplify(g - w) == 0 for g, w in zip(got, expected)), (e, got, expected)


def test_base_inputs_env_params_and_noise_matrix_are_kept():
    base = ds.SDEModel(
        [x, y],
        [a, b, k],
        [a * y - x + k, b * x - s * y],
        noise=[[1, 0], [0, s]],
        inputs=[s],
        env_params=[k],
        name="kept",
    )
    design = ds.shift_interventions(
        base, {"A": [], "B": ["y"]}, inputs={"A": {"s": 1.0}, "B": {"s": 2.0}}
    )
    m = design.model
    assert m.env_params == (k,)
    assert m.input_names == ["s", "env[B]"]
    assert design.inputs == {"A": {"s": 1.0, "env[B]": 0.0}, "B": {"s": 2.0, "env[B]": 1.0}}
    assert m.G == base.G
    shift = sp.Symbol("shift_y[B]", real=True)
    assert _env_shift(design, base, "A") == [0, 0]
    assert _env_shift(design, base, "B") == [0, shift]
    assert m.name == "kept_shifts"


@pytest.mark.parametrize(
    "targets, match",
    [
        ({}, "non-empty dict"),
        ([["x"]], "non-empty dict"),
        ({"obs": [], "A": ["w"]}, r"targets\['A'\]: 'w' is not a state variable"),
        ({"obs": [], "A": "x"}, "not the string 'x'"),
        ({"obs": [], "A": ["x", "x"]}, "listed twice"),
        ({"obs": [], "A": 3}, "expected a list of state variables"),
        ({"obs": [], "A": {"x": "big"}}, "must be a number"),
        ({"obs": [], "A": {"x": float("inf")}}, "not finite"),
        ({"obs": [], "A": []}, "no environment has a target"),
    ],
)
def test_bad_targets_are_named(targets, match):
    with pytest.raises(ModelError, match=match):
        ds.shift_interventions(_base(), targets)


def test_bad_inputs_and_clashes_are_named():
    with pytest.raises(ModelError, match="declares no inputs"):
        ds.shift_interventions(_base(), {"o": [], "A": ["x"]}, inputs={"o": {"s": 1}})
    with_s = ds.SDEModel([x], [a], [a * x], s, inputs=[s], name="with_s")
    with pytest.raises(ModelError, match="give their values per environment"):
        ds.shift_interventions(with_s, {"o": [], "A": ["x"]})
    with pytest.raises(ModelError, match="no values for environment 'A'"):
        ds.shift_interventions(with_s, {"o": [], "A": ["x"]}, inputs={"o": {"s": 1.0}})
    with pytest.raises(ModelError, match="environment 'C' is not in targets"):
        ds.shift_interventions(
            with_s, {"o": [], "A": ["x"]}, inputs={"o": {"s": 1}, "A": {"s": 2}, "C": {"s": 3}}
        )
    clash = ds.SDEModel([x], [sp.Symbol("shift_x[A]", real=True)], [-x], 1.0, name="clash")
    with pytest.raises(ModelError, match="already has a symbol named 'shift_x\\[A\\]'"):
        ds.shift_interventions(clash, {"o": [], "A": ["x"]})
    with pytest.raises(ModelError, match="expected an SDEModel"):
        ds.shift_interventions("model.py", {"o": [], "A": ["x"]})


def test_known_shift_only_adds_no_parameter():
    design = ds.shift_interventions(_base(), {"obs": [], "up": {"y": 2.5}})
    assert design.model.param_names == ["a", "b", "c"]
    assert design.shift_params == []
    assert np.isclose(
        float(design.model.with_inputs(design.inputs["up"]).drift[1].subs({x: 0, y: 0, c: 0})),
        2.5,
    )
