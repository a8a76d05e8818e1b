"""Structural check — exact, from the symbols alone, no simulation.

1. *Parameters absent from the drift*: zero columns of U.
2. *Linearly dependent columns of U* (two parameters on the same basis function, ``a x + b x``,
   ``a·x/(1+x) + b/(1+x) + c``): the combinations c with ``U(x) c ≡ 0``.  Each row of U is brought
   over a common denominator and expanded; the coefficients of the distinct x-dependent terms form
   a matrix with exact (rational or algebraic) entries, whose null space is computed in exact
   arithmetic: every combination found is a proven identity.  Independence of the remaining
   columns is proven either by the terms being distinct monomials (all rational-function drifts:
   the whole zoo), or by a lower bound on the rank of U evaluated at random rational points —
   exactly, in rationals, when the entries are rational functions; otherwise with interval
   arithmetic (``mpmath.iv``, 30 digits, outward rounding), where a minor whose interval
   determinant excludes 0 proves the rank.  Distinct transcendental terms can be dependent
   (``sin²x + cos²x = 1``): such a rank drop seen in the evaluation is rationalised and proven with
   ``simplify``; a dependency that cannot be proven, or an independence seen only numerically
   (a function without an interval enclosure here), is reported as numerical, never silently
   (``certificate``).
3. *Directions no snapshot route can see, from the symbols alone*: a field ``Y = U c`` that commutes
   with the generator, ``[Y, 𝓛] = 0`` with ``𝓛 = f·∇ + D:∇²``, i.e.

       L_Y D = Y·∇D − (∇Y)D − D(∇Y)ᵀ ≡ 0          and
       (Y·∇)f − (f·∇)Y − D:∇²Y ≡ 0,

   maps stationary laws to stationary laws; when the stationary law is unique it is invariant
   under the flow of Y, so ``∇·(pY) = 0``: the combination c is invisible to both routes.  Both
   conditions are linear in c and solved exactly like step 2.  Checked for every θ (the drift
   replaced by v and by each column of U) and, when nominal values are known, at the nominal θ.
   Example: the rotation term ω(−y, x) of a Stuart–Landau oscillator.
4. *With nominal values, when the stationary density has a closed form*: a drift that is linear in
   x with constant D (Gaussian law, covariance from the Lyapunov equation, solved exactly), or a
   gradient drift ``D⁻¹f = ∇ψ`` with constant D (possibly after removing the invisible directions
   of step 3, which do not change p).  Then the score s is exact and the functions ``a_k = U_kᵀs +
   ∇·U_k`` are analysed as in step 2: the rank is the exact population rank of both routes.
   Example: the 2-D OU with all four entries of M free, rank 3 with free combination ``ΩΣ⁻¹``
   (``M12 − M21`` at the bundled nominal).

What it cannot detect: directions annihilated by a stationary density without a closed form that
are not symmetries (e.g. an OU-like current inside a nonlinear model), near-dependencies (two
columns that differ only where data are rare) and weak directions — the simulation check sees
these by simulation; blind spots of the local route caused by where the probes are (a column
vanishing on every probe region), which depend on probe placement and are measured by the
simulation check with ``route="local"``.  Floating-point constants of the model are read as the
rational numbers they display (``2.6 → 13/5``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .. import arguments
from ..data.arrays import is_frame
from ..errors import DataError, ModelError
from ..model.validation import declared_signs, numeric_parts
from ..routes.probes import as_probes
from ..solve.combinations import Combination, exact_combination, format_combination
from .exact import exact, exact_rank, function_null_space, orthonormal, rat
from .stationary import gaussian_score, gradient_score
from .symmetry import symmetry_space

__all__ = ["StructuralReport", "structural_check", "nominal_vector", "CERTIFICATES"]

#: What each ``certificate`` means, as shown by ``str(report)``.
CERTIFICATES = {
    "exact": "proven in exact arithmetic",
    "interval": "proven (exact identities; independence by interval arithmetic)",
    "numerical": "numerical — some dependency or independence was seen in a 30-digit "
    "evaluation only, not proven",
}


@dataclass
class StructuralReport:
    """Result of :func:`structural_check`.

    Attributes
    ----------
    model_name : str
    param_names : list of str
    n_params : int
    route : str
    rank : int
        ``n_params`` minus the number of unidentifiable directions found.  An upper bound on the
        rank any snapshot data can give, exact (the population rank of both routes) when
        ``rank_is_exact``.
    rank_is_exact : bool
        True when the stationary density at the nominal θ has a closed form (``density``).
    identifiable : bool or None
        False when a proven direction was found; True when ``rank_is_exact`` and the rank is
        full; None ("no obstruction in the symbols", or only numerical directions) otherwise —
        the simulation check decides.
    absent : list of str
        Parameters that do not occur in the drift.
    combinations : list of dict
        One per unidentifiable direction (beyond absent parameters): ``combination`` (exact,
        e.g. ``"M12 − M21"``), ``display`` (unit vector, as in
        :class:`~dynosed_sym.solve.report.IdentifiabilityReport`), ``kind`` (``"dependent"``,
        ``"symmetry"``, ``"symmetry at nominal"``, ``"density"``) and ``reason``.
    null_vectors : (n, k) array
        Orthonormal basis of all directions found (absent parameters included).
    free_params : list of str
        Parameters with a nonzero entry in some exact null direction.
    density : str or None
        The closed-form stationary density used, if any.
    certificate : str
        How the rank was established (see :class:`~.exact.NullSpace`), the weakest of the steps:
        ``"exact"`` (exact arithmetic), ``"interval"`` (proven with interval arithmetic) or
        ``"numerical"`` (some dependency or independence seen in a 30-digit evaluation only).
    notes : list of str
    elapsed : float
        Seconds.
    """

    model_name: str
    param_names: list
    n_params: int
    route: str
    rank: int
    rank_is_exact: bool
    identifiable: bool | None
    absent: list
    combinations: list
    null_vectors: np.ndarray
    free_params: list
    density: str | None
    nominal: np.ndarray | None
    certificate: str
    notes: list = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def null_space(self):
        """Unidentifiable directions as :class:`~dynosed_sym.solve.combinations.Combination`
        objects (absent parameters first, as unit vectors); ``str`` gives the display text."""
        n = len(self.param_names)
        absent = [
            Combination.from_exact(
                np.eye(n, dtype=int)[self.param_names.index(p)], self.param_names
            )
            for p in self.absent
        ]
        return absent + [Combination(c["vector"], self.param_names) for c in self.combinations]

    def __str__(self):
        exact = "exact" if self.rank_is_exact else "upper bound"
        verdict = {
            True: "identifiable",
            False: "NOT identifiable",
            None: "numerical directions only, not proven"
            if self.combinations
            else "no structural obstruction found",
        }[self.identifiable]
        lines = [
            f"structural check ({self.route} route, {self.elapsed * 1e3:.0f} ms, no simulation): "
            f"rank {self.rank} of {self.n_params} ({exact}) — {verdict}"
        ]
        for p in self.absent:
            lines.append(f"  parameter {p} does not occur in the drift")
        for c in self.combinations:
            lines.append(f"  free combination: {c['combination']}   [{c['kind']}: {c['reason']}]")
        if self.free_params:
            lines.append(f"  not identifiable: {', '.join(self.free_params)}")
        if self.density:
            lines.append(f"  stationary density at the nominal θ: {self.density}")
        lines.append(f"  certificate: {CERTIFICATES[self.certificate]}")
        lines.extend("  " + n for n in self.notes)
        return "\n".join(lines)


def nominal_vector(model, nominal):
    if nominal is not None:
        theta = model.theta_vector(nominal, "nominal")
        declared_signs(model.params, theta, "nominal", "parameter", model.name)
        return theta
    return None if model.nominal is None else np.asarray(model.nominal, dtype=float)


def _probe_count(probes, model) -> int:
    """Number of probe points: ``probes`` is a count (an integer ≥ 1, e.g. k-means centres to
    choose) or the points, checked as fit_local checks them (an (M, d) array with one column per
    state variable, a DataFrame read by the state names, Balls; finite, M ≥ 1)."""
    P = getattr(probes, "centres", probes)
    if np.ndim(P) == 0 and not is_frame(P):
        return arguments.integer(np.asarray(P).item(), "probes", minimum=1)
    return int(as_probes(probes, model)[0].shape[0])


def structural_check(
    model, nominal=None, route="global", *, probes=None, use_nominal=True, seed=0
) -> StructuralReport:
    """Exact identifiability analysis from the symbols alone (module docstring, steps 1–4).

    Parameters
    ----------
    model : SDEModel
    nominal : array or dict, optional
        Nominal parameters (default ``model.nominal``); enables the checks at the nominal θ.
    route : {"global", "local"}
        Both routes see the same functions a_k; for ``"local"`` a note is added when fewer
        probe points than parameters are given.
    probes : (M, d) array, optional
        Probe points of the local route (only their number is used here), or their number;
        points are checked as :func:`fit_local` checks them (d columns, finite).
    use_nominal : bool
        Set False for the θ-independent part only.
    seed : int
        Evaluation points of numerical certificates (non-polynomial models only).

    Returns
    -------
    StructuralReport
    """
    t0 = time.perf_counter()
    if route not in ("global", "local"):
        raise DataError(f"route must be 'global' or 'local', got {route!r}")
    seed = arguments.seed(seed)
    use_nominal = arguments.flag(use_nominal, "use_nominal")  # "no" was read as True
    if probes is not None and route != "local":  # (they were ignored without a word)
        raise DataError("probes= are the local route's probe points: pass route='local' as well")
    if route == "local" and probes is not None:
        _probe_count(probes, model)  # (checked before the symbolic work)
    if model.inputs:
        raise ModelError(
            f"the model has inputs ({', '.join(model.input_names)}): the structural check "
            "needs their values; specialise it first with model.with_inputs(values)"
        )
    state = tuple(model.state)
    names = model.param_names
    n = model.n
    theta0 = nominal_vector(model, nominal) if use_nominal else None
    theta0_exact = None if theta0 is None else [rat(t) for t in theta0]
    notes = []
    U, v, D, linearised = _affine_parts(model, theta0_exact, notes)
    cols = [[U[j, k] for j in range(model.d)] for k in range(n)]
    absent = [names[k] for k in range(n) if all(e == 0 for e in cols[k])]
    if linearised:
        absent = [
            nm
            for nm in absent
            if not any(model.params[names.index(nm)] in e.free_symbols for e in model.drift)
        ]
    dirs = _Directions(n, [sp.Matrix(sp.eye(n)[:, names.index(nm)]) for nm in absent], notes)
    # (2) linear dependence of the columns of U
    dirs.add(
        function_null_space(cols, state, seed),
        "dependent",
        "columns of U linearly dependent: U(x)·c ≡ 0, the drift does not change",
    )
    # (3) symmetries for every θ, then at the nominal θ
    if not linearised:
        drifts = [(v, True)] + [(sp.Matrix(cols[k]), False) for k in range(n)]
        dirs.add(
            symmetry_space(U, D, state, drifts, seed),
            "symmetry",
            "U·c commutes with the generator for every θ, so ∇·(p U c) = 0",
            complete=False,
        )
    if theta0_exact is not None:
        f0 = U * sp.Matrix(theta0_exact) + v
        dirs.add(
            symmetry_space(U, D, state, [(f0, True)], seed),
            "symmetry at nominal",
            "U·c commutes with the generator at the nominal θ, so ∇·(p U c) = 0",
            complete=False,
        )
    # (4) exact stationary density at the nominal θ
    density, rank_is_exact = None, False
    if theta0_exact is not None and model.diffusion_is_constant:
        density, rank_is_exact = _density_step(model, U, v, D, theta0_exact, dirs, seed)
    elif theta0_exact is not None:
        notes.append("state-dependent diffusion: no closed-form stationary density is attempted")
    rank = n - exact_rank(dirs.found, n)
    identifiable = _verdict(dirs, len(absent), rank, rank_is_exact, n)
    if route == "local" and probes is not None:
        M = _probe_count(probes, model)
        if M < rank:
            notes.append(
                f"only {M} probe points for {rank} identifiable directions: the local system "
                f"has rank at most {M}"
            )
    return StructuralReport(
        model_name=model.name,
        param_names=list(names),
        n_params=n,
        route=route,
        rank=rank,
        rank_is_exact=rank_is_exact,
        identifiable=identifiable,
        absent=absent,
        combinations=_combinations(dirs.combos, names, absent),
        null_vectors=orthonormal(dirs.found, n),
        free_params=[names[k] for k in range(n) if any(vec[k] != 0 for vec in dirs.found)],
        density=density,
        nominal=theta0,
        certificate=max(dirs.certificates, key=list(CERTIFICATES).index, default="exact"),
        notes=notes,
        elapsed=time.perf_counter() - t0,
    )


def _affine_parts(model, theta0_exact, notes):
    """(U, v, D, linearised): the drift as U(x)θ + v(x) — or its linearisation U = ∂f/∂θ at the
    nominal θ for a drift not affine in θ (with a note) — and D, in exact arithmetic."""
    der = model.derivation
    D = model.D.applyfunc(exact)
    if der.is_affine:
        return der.U.applyfunc(exact), der.v.applyfunc(exact), D, False
    if theta0_exact is None:
        p, j, term = der.offending
        raise ModelError(
            f"the drift is not affine in {p} (term {sp.sstr(term)}); the structural "
            "check of a non-affine model needs nominal values to linearise at"
        )
    sub = dict(zip(model.params, theta0_exact))
    f = model.drift.applyfunc(exact)
    U = sp.Matrix(model.d, model.n, lambda j, k: sp.diff(f[j], model.params[k]).xreplace(sub))
    _finite_at_nominal(model, f.xreplace(sub), U, theta0_exact)
    v = f.xreplace(sub) - U * sp.Matrix(theta0_exact)
    notes.append(
        "the drift is not affine in θ: this is local identifiability of the "
        "linearisation U = ∂f/∂θ at the nominal θ"
    )
    return U, v, D, True


def _not_a_double(expr):
    """The first numeric subexpression of ``expr`` that is no finite real double (zoo, nan, I,
    asin(2), exp(800)), or None."""
    for sub in numeric_parts(expr):
        if sub.is_Rational:
            continue
        value = sub.evalf(30)
        if not (value.is_real and value.is_finite) or math.isinf(float(value)):
            return sub
    return None


_SHOWN = {sp.zoo: "zoo (a division by zero)", sp.I: "I (√−1)"}


def _finite_at_nominal(model, f0, U, theta0_exact):
    """ModelError when the drift f0 or its linearisation U = ∂f/∂θ at the nominal θ is not
    finite and real (x/a at a = 0, log a at a = 0, √a at a = −1): there is nothing to linearise."""
    state = model.state_names
    entries = [(f"drift[{j}] (d{state[j]}) = {sp.sstr(f0[j])}", f0[j]) for j in range(model.d)]
    entries += [
        (f"∂(drift[{j}])/∂{p} = {sp.sstr(U[j, k])}", U[j, k])
        for k, p in enumerate(model.param_names)
        for j in range(model.d)
    ]
    for text, e in entries:
        bad = _not_a_double(e)
        if bad is not None:
            values = ", ".join(
                f"{p} = {sp.sstr(t)}" for p, t in zip(model.param_names, theta0_exact)
            )
            raise ModelError(
                f"the drift of model {model.name!r} is not finite and real at the nominal "
                f"parameters {values}: {text}, where {_SHOWN.get(bad, sp.sstr(bad))} is not a "
                "finite real number in double precision; the structural check linearises the "
                "drift there (it is not affine in θ): give nominal values at which the drift is "
                "defined (nominal=)"
            )


class _Directions:
    """The parameter directions found so far (``found``: absent parameters first), with the
    combination records, certificates and notes of the steps that found them."""

    def __init__(self, n, absent_vectors, notes):
        self.n, self.found, self.notes = n, list(absent_vectors), notes
        self.combos, self.certificates = [], []

    def add(self, ns, kind, reason, complete=True):
        """Add the new directions of null space ``ns``.  ``complete``: the step claims to find
        every direction (the rank of U, the population rank), so the independence of the rest
        must be proven too; the symmetry search claims only that what it finds is a symmetry."""
        n = self.n
        self.certificates.append(
            ns.certificate if complete else ("numerical" if ns.numerical else "exact")
        )
        for i, vec in enumerate(ns.basis):
            if exact_rank(self.found + [vec], n) > exact_rank(self.found, n):
                self.found.append(vec)
                unproven = i in ns.numerical
                self.combos.append(
                    {
                        "vector": vec,
                        "kind": kind + (" (numerical)" if unproven else ""),
                        "reason": reason + ("; seen at 30 digits, not proven" if unproven else ""),
                    }
                )
        if ns.numerical:
            self.notes.append(
                f"{len(ns.numerical)} {kind} direction(s) found by a 30-digit evaluation could "
                "not be proven symbolically"
            )


def _density_step(model, U, v, D, theta0_exact, dirs, seed):
    """Step 4: the directions with ∇·(p U c) ≡ 0 for a closed-form stationary density at the
    nominal θ (Gaussian, or gradient drift) → (density or None, whether the rank is exact)."""
    state, d, n = tuple(model.state), model.d, model.n
    f0 = U * sp.Matrix(theta0_exact) + v
    score = gaussian_score(f0, D, state)
    if score is None:
        symmetries = [
            c["vector"] for c in dirs.combos if c["kind"] in ("symmetry", "symmetry at nominal")
        ]
        g = gradient_score(U, v, D, theta0_exact, symmetries, state, seed)
        if g is not None:
            score = (g[0], g[1])
    if score is None:
        return None, False
    s, density = score
    a_cols = [
        [sum(U[j, k] * s[j] for j in range(d)) + sum(sp.diff(U[j, k], state[j]) for j in range(d))]
        for k in range(n)
    ]
    pop = function_null_space(a_cols, state, seed)
    dirs.add(pop, "density", "∇·(p U c) ≡ 0 for the stationary density at the nominal θ")
    rank_is_exact = pop.proven and not any(c["kind"].endswith("(numerical)") for c in dirs.combos)
    if exact_rank(dirs.found, n) != pop.dim:
        dirs.notes.append(
            "warning: the exact density analysis does not contain every direction "
            "found by the symmetry check (is the stationary law unique?)"
        )
    return density, rank_is_exact


def _combinations(combos, names, absent):
    """The report's combination records (normalised vectors, exact and displayed forms); a
    single absent parameter is named in ``absent`` instead."""
    n = len(names)
    out = []
    for c in combos:
        vec = c["vector"]
        if (
            sum(1 for x in vec if x != 0) == 1
            and names[[i for i in range(n) if vec[i] != 0][0]] in absent
        ):
            continue
        fv = np.array([float(x) for x in vec])
        out.append(
            {
                "combination": exact_combination(list(vec), names),
                "display": format_combination(fv / np.linalg.norm(fv), names),
                "kind": c["kind"],
                "reason": c["reason"],
                "vector": fv / np.linalg.norm(fv),
            }
        )
    return out


def _verdict(dirs, n_absent, rank, rank_is_exact, n):
    """True (proven identifiable), False (a proven free direction) or None (open), with a note
    saying why it is open."""
    found, combos = dirs.found, dirs.combos
    proven = [vec for vec, c in zip(found[n_absent:], combos) if "(numerical)" not in c["kind"]]
    if n - exact_rank(found[:n_absent] + proven, n) < n:
        return False
    if rank < n:  # only directions seen at 30 digits: not a proof either way
        dirs.notes.append(
            "the directions found are numerical (not proven): whether they are real "
            "dependencies or near-dependencies beyond 30 digits is open; the simulation "
            "check measures them"
        )
        return None
    if rank_is_exact:
        return True
    dirs.notes.append(
        "no dependency or symmetry in the symbols; whether the stationary density "
        "separates every parameter is decided by the simulation check "
        "(ds.check_identifiability)"
    )
    return None
