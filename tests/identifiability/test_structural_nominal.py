"""The structural check of a drift that is not affine in θ linearises it at the nominal θ; where
the drift (or ∂f/∂θ) is not finite and real there, the error names the parameter values and the
component — not a KeyError from SymPy's printer or "Cannot convert complex to float"."""

from __future__ import annotations

import pytest
import sympy as sp

import dynosed_sym as ds

x = sp.symbols("x", real=True)
a = sp.symbols("a", real=True)


@pytest.mark.parametrize(
    "drift, nominal, shown",
    [
        (-x / a, 0.0, r"a = 0: drift\[0\] \(dx\) = zoo\*x, where zoo \(a division by zero\)"),
        (sp.log(a) * x - x, 0.0, r"a = 0: drift\[0\] \(dx\) = -x \+ zoo\*x"),
        (-sp.sqrt(a) * x, -1.0, r"a = -1: drift\[0\] \(dx\) = -I\*x, where I \(√−1\)"),
        (sp.log(a) * x - x, -1.0, r"a = -1: drift\[0\] \(dx\) = -x \+ I\*pi\*x"),
        (-sp.sqrt(a) * x, 0.0, r"a = 0: ∂\(drift\[0\]\)/∂a = zoo\*x"),
        (-sp.asin(a) * x, 2.0, r"a = 2: drift\[0\] \(dx\) = -x\*asin\(2\), where asin\(2\)"),
        (-sp.exp(a) * x, 800.0, r"a = 800: .* where exp\(800\) is not a finite real number"),
    ],
)
def test_structural_check_at_a_nominal_theta_outside_the_drifts_domain(drift, nominal, shown):
    """(x/a and log a at a = 0: KeyError 'ComplexInfinity'; √a and log a at a = −1: TypeError
    "Cannot convert complex to float"; exp(a) at a = 800: LinAlgError)"""
    m = ds.SDEModel([x], [a], [drift], diffusion=1)
    pattern = r"^the drift of model 'model' is not finite and real at the nominal parameters "
    with pytest.raises(ds.ModelError, match=pattern + shown + r".*\(nominal=\)$"):
        ds.check_identifiability(m, [nominal], simulate=False)


def test_structural_check_inside_the_domain_is_unchanged():
    m = ds.SDEModel([x], [a], [-x / a], diffusion=1)
    rep = ds.check_identifiability(m, [2.0], simulate=False).structural
    assert rep.rank == 1
