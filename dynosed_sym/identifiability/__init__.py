"""Identifiability before data: an exact structural check and a check by simulation.

What snapshots can see
----------------------
Both routes see a parameter direction c (drift change ``Y = U(x) c``) only through

    a(x)ᵀc = ∇·(p Y) / p = Yᵀ∇log p + ∇·Y,

the change of the stationary Fokker–Planck residual: the local route evaluates it at probe points,
the global route integrates it against every test function φ (``E_p[Yᵀ∇φ] = −∫ φ ∇·(pY)``).  In the
infinite-data limit both routes therefore identify exactly the directions c with ``∇·(p U c) ≢ 0``
on the support of p, and the rank of the population system equals the rank of the functions
``a_1 … a_n``.  A direction with ``∇·(p U c) ≡ 0`` changes the dynamics but not the stationary law
(a divergence-free probability current, ``pY``).

* :mod:`.structural` — :func:`structural_check`, exact, from the symbols alone;
* :mod:`.simulated_check` — :func:`check_identifiability`, the structural check plus a simulated
  study (rank against noise, standard errors as a function of N, samples needed);
* :mod:`.exact` — exact null spaces of families of functions (the certificates);
* :mod:`.rigorous` — exact-rational and interval evaluation at rational points (proven rank bounds);
* :mod:`.symmetry` — fields that commute with the generator (directions no snapshot can see);
* :mod:`.stationary` — closed-form stationary scores (Gaussian, gradient drifts).
"""

from .designs import DesignCheck
from .exact import NullSpace, function_null_space
from .options import Experiment, Study
from .simulated_check import IdentifiabilityCheck, check_identifiability
from .structural import StructuralReport, structural_check

__all__ = [
    "check_identifiability",
    "IdentifiabilityCheck",
    "DesignCheck",
    "Study",
    "Experiment",
    "structural_check",
    "StructuralReport",
    "function_null_space",
    "NullSpace",
]
