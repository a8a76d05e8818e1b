"""Shift interventions with known targets: the model and the inputs of an interventional design.

An experiment that perturbs the system in a few environments — a drug on gene 3, a knock-in on
gene 1, an observational reference — is a *shift intervention*: in environment e the drift of
each target variable j gains a constant δ_{e,j},

    f_j(x; θ) → f_j(x; θ) + δ_{e,j}   for the targets j of e,

and nothing changes in a reference environment without targets.  The targets are known, the
magnitudes usually not.  :func:`shift_interventions` writes that down once: it adds one parameter
``shift_{j}[{e}]`` per unknown (environment, target) pair and one 0/1 indicator input ``env[{e}]``
per environment with targets,

    f_j(x; θ) + Σ_e env[e] · δ_{e,j},

so in the reference environment every indicator is 0 and no shift parameter enters its rows (the
shifts are *pinned to 0* there, exactly), and each shift is fitted only from the environment it
belongs to.  A known magnitude (a number instead of ``None``) enters as ``env[e] · value`` without
a parameter.  The model is an ordinary :class:`~dynosed_sym.model.declaration.SDEModel`; the
returned ``inputs`` are what :func:`dynosed_sym.fit_global`, :func:`dynosed_sym.fit_local` and
:func:`dynosed_sym.check_identifiability` take for the design (docs/designs.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from ..errors import ModelError
from .declaration import SDEModel

__all__ = ["ShiftDesign", "shift_interventions"]


@dataclass(frozen=True)
class ShiftDesign:
    """A model with shift interventions and the inputs of its environments.

    Attributes
    ----------
    model : SDEModel
        The base model's drift plus ``Σ_e env[e] · δ_{e,j}`` on every target j; its parameters are
        the base parameters followed by the unknown shifts, its inputs the base inputs followed by
        the indicators ``env[e]``.
    inputs : dict
        ``{environment: {input: value}}`` for every environment (indicator 1 in its own
        environment, 0 elsewhere; the base inputs as given), ready for ``inputs=`` of the fits.
    shifts : dict
        ``{environment: {target: parameter name or known value}}`` (empty for a reference
        environment).
    reference : tuple of str
        The environments without targets (observational).
    """

    model: SDEModel
    inputs: dict
    shifts: dict
    reference: tuple

    @property
    def shift_params(self) -> list[str]:
        """Names of the unknown shifts, in parameter order."""
        return [v for spec in self.shifts.values() for v in spec.values() if isinstance(v, str)]


def _indicator_name(env):
    return f"env[{env}]"


def _shift_name(target, env):
    return f"shift_{target}[{env}]"


def _normalise_targets(model, targets):
    """{env: {state name: None or float}} from the accepted forms, checked against the model."""
    if not isinstance(targets, dict) or not targets:
        raise ModelError(
            "targets: expected a non-empty dict {environment: targets}, e.g. "
            "{'obs': [], 'drug': ['x1']} (a list of intervened state variables, or a dict "
            "{variable: None (unknown shift) or a known value})"
        )
    out = {}
    for env, spec in targets.items():
        name = str(env)
        if name in out:
            raise ModelError(f"targets: environment {name!r} is given twice")
        where = f"targets[{name!r}]"
        if spec is None:
            spec = {}
        if isinstance(spec, str):
            raise ModelError(f"{where}: give a list of state variables, not the string {spec!r}")
        if isinstance(spec, dict):
            pairs = list(spec.items())
        else:
            try:
                pairs = [(var, None) for var in spec]
            except TypeError:
                raise ModelError(
                    f"{where}: expected a list of state variables or a dict "
                    f"{{variable: None or value}}, got {type(spec).__name__}"
                ) from None
        out[name] = {}
        for var, value in pairs:
            var_name = str(var)
            if var_name not in model.state_names:
                raise ModelError(
                    f"{where}: {var_name!r} is not a state variable of model {model.name!r} "
                    f"(state: {', '.join(model.state_names)})"
                )
            if var_name in out[name]:
                raise ModelError(f"{where}: target {var_name!r} is listed twice")
            out[name][var_name] = _known_value(value, f"{where}[{var_name!r}]")
    return out


def _known_value(value, where):
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ModelError(
            f"{where}: a known shift must be a number (or None for an unknown one), got {value!r}"
        ) from None
    if not math.isfinite(v):
        raise ModelError(f"{where}: the known shift {value!r} is not finite")
    return v


def _base_inputs(model, inputs, envs):
    """{env: {base input: value}} (checked by the model), or empty dicts without base inputs."""
    if not model.inputs:
        if inputs:
            raise ModelError(
                f"inputs: model {model.name!r} declares no inputs; the indicators of the "
                "interventions are added by shift_interventions"
            )
        return {e: {} for e in envs}
    if not isinstance(inputs, dict) or not all(isinstance(v, dict) for v in inputs.values()):
        raise ModelError(
            f"inputs: model {model.name!r} has inputs ({', '.join(model.input_names)}): give "
            "their values per environment, {environment: {input: value}}"
        )
    given = {str(k): v for k, v in inputs.items()}
    unknown = [e for e in given if e not in envs]
    if unknown:
        raise ModelError(
            f"inputs: environment {unknown[0]!r} is not in targets (environments: "
            f"{', '.join(envs)})"
        )
    out = {}
    for e in envs:
        if e not in given:
            raise ModelError(f"inputs: no values for environment {e!r}")
        u = model.input_vector(given[e], f"inputs[{e!r}]")
        out[e] = dict(zip(model.input_names, u.tolist()))
    return out


def shift_interventions(model, targets, *, inputs=None, name=None) -> ShiftDesign:
    """Shift interventions with known targets on ``model`` (module docstring).

    Parameters
    ----------
    model : SDEModel
        The system without interventions (drift f(x; θ), known D).
    targets : dict
        ``{environment: targets}`` for every environment of the data, in the order of the data:
        a list of intervened state variables (unknown shifts; ``[]`` for a reference,
        observational environment), or a dict ``{variable: None or value}`` where a number is a
        known shift.  Example: ``{"obs": [], "drug": ["x1"], "both": {"x1": None, "x3": -5.0}}``.
    inputs : dict, optional
        ``{environment: {input: value}}`` when ``model`` has inputs of its own.
    name : str, optional
        Name of the new model (default ``{model.name}_shifts``).

    Returns
    -------
    ShiftDesign
        ``.model`` and ``.inputs`` go to the fits:
        ``ds.fit_global(design.model, data, inputs=design.inputs)``.

    Notes
    -----
    Two environments with the same targets get separate shifts (each is estimated from its own
    samples); replicates of one condition are one environment (concatenate their samples).
    A variable shifted in *every* environment cannot be told apart from a constant term of its
    drift: keep a reference environment, or the fit reports the combination as unresolved.
    """
    if not isinstance(model, SDEModel):
        raise ModelError(f"model: expected an SDEModel, got {type(model).__name__}")
    spec = _normalise_targets(model, targets)
    envs = list(spec)
    base = _base_inputs(model, inputs, envs)
    taken = set(model.param_names) | set(model.input_names) | set(model.state_names)
    shifted = [e for e in envs if spec[e]]
    if not shifted:
        raise ModelError("targets: no environment has a target; there is nothing to intervene on")
    indicator, new_params, shifts = {}, [], {}
    drift = list(model.drift)
    index = {nm: j for j, nm in enumerate(model.state_names)}
    for e in envs:
        shifts[e] = {}
        if not spec[e]:
            continue
        ind = sp.Symbol(_indicator_name(e), real=True)
        indicator[e] = ind
        for var, value in spec[e].items():
            if value is None:
                p = sp.Symbol(_shift_name(var, e), real=True)
                new_params.append(p)
                term, shifts[e][var] = p, str(p)
            else:
                term, shifts[e][var] = sp.Float(value, 17), value
            drift[index[var]] = drift[index[var]] + ind * term
    clash = [str(s) for s in [*indicator.values(), *new_params] if str(s) in taken]
    if clash:
        raise ModelError(
            f"model {model.name!r} already has a symbol named {clash[0]!r}; rename it (the "
            "interventions add inputs env[...] and parameters shift_...[...])"
        )
    kw = dict(
        name=name or f"{model.name}_shifts",
        inputs=[*model.inputs, *indicator.values()],
        env_params=model.env_params,
        nominal=None,
    )
    params = [*model.params, *new_params]
    if model.G is not None:
        new = SDEModel(model.state, params, drift, noise=model.G, **kw)
    else:
        new = SDEModel(model.state, params, drift, model.D, **kw)
    env_inputs = {
        e: {**base[e], **{_indicator_name(f): float(f == e) for f in indicator}} for e in envs
    }
    reference = tuple(e for e in envs if not spec[e])
    return ShiftDesign(new, env_inputs, shifts, reference)
