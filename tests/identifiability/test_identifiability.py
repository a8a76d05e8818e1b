"""Identifiability before data: the exact structural check and the check by simulation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dynosed_sym as ds
from dynosed_sym.identifiability import check_identifiability, function_null_space, structural_check
from dynosed_sym.simulation import Simulation

x, y, z = sp.symbols("x y z", real=True)
a, b, c, k = sp.symbols("a b c k", real=True)


def _no_simulation(monkeypatch):
    """Make any call of the simulator (or of the fill) fail: the structural check needs neither."""

    def boom(*args, **kwargs):
        raise AssertionError("the structural check must not simulate or assemble")

    import sys

    monkeypatch.setattr(ds, "simulate", boom)
    monkeypatch.setattr(sys.modules["dynosed_sym.simulation.simulate"], "simulate", boom)
    monkeypatch.setattr(
        sys.modules["dynosed_sym.identifiability.simulated_sampling"], "simulate", boom
    )
    monkeypatch.setattr(sys.modules["dynosed_sym.assembly.stein"], "assemble_global", boom)
    monkeypatch.setattr(sys.modules["dynosed_sym.assembly.stein"], "assemble_source", boom)


# ================================================================================ structural: zoo
def test_structural_ou_all_free_rank_3_of_4_combination_named(models, monkeypatch):
    _no_simulation(monkeypatch)
    rep = check_identifiability(models["ou2d"], simulate=False).structural
    assert rep.rank == 3 and rep.n_params == 4
    assert rep.rank_is_exact and rep.identifiable is False
    assert [c["combination"] for c in rep.combinations] == ["M12 − M21"]
    assert rep.combinations[0]["display"] == "0.707·M12 − 0.707·M21"
    assert rep.free_params == ["M12", "M21"]
    assert "Gaussian" in rep.density and rep.certificate == "exact"


def test_structural_ou_m12_only_identifiable(models, monkeypatch):
    _no_simulation(monkeypatch)
    rep = structural_check(models["ou2d_m12"])
    assert rep.rank == 1 and rep.identifiable is True and rep.rank_is_exact
    assert rep.free_params == [] and rep.combinations == []


@pytest.mark.parametrize("use_nominal", [True, False])
def test_structural_limit_cycle_omega_invisible_from_symbols(models, monkeypatch, use_nominal):
    """ω(−y, x) commutes with the generator for every θ: found without nominal values too."""
    _no_simulation(monkeypatch)
    rep = structural_check(models["limit_cycle"], use_nominal=use_nominal)
    assert rep.rank == 2 and rep.identifiable is False
    assert rep.free_params == ["omega"]
    assert rep.combinations[0]["combination"] == "omega"
    assert rep.combinations[0]["kind"] == "symmetry"
    if use_nominal:  # the density p ∝ exp((a r²/2 − c r⁴/4)/D) is then exact: a and c identifiable
        assert rep.rank_is_exact and "gradient" in rep.density


def test_structural_no_obstruction_for_lorenz_and_grn(models):
    for name, n in (("lorenz", 3), ("grn_bcell", 21)):
        rep = structural_check(models[name])
        assert rep.rank == n and rep.identifiable is None and not rep.rank_is_exact
        assert rep.free_params == [] and rep.absent == []
        assert "simulation check" in str(rep)


def test_structural_zoo_is_fast(models, model_name):
    """Timing is recorded, not asserted (docs/method.md §5): every zoo model goes through."""
    rep = structural_check(models[model_name])
    print(f"structural check {model_name}: {1e3 * rep.elapsed:.0f} ms")
    assert rep.n_params == models[model_name].n


# ================================================================================ structural:
# exactness
def test_two_parameters_on_one_basis_flagged_without_simulation(monkeypatch):
    _no_simulation(monkeypatch)
    model = ds.SDEModel(
        [x], [a, b, c], [a * x + b * x - c * x**3], diffusion=sp.Rational(1, 2), name="two"
    )
    chk = ds.check_identifiability(model, simulate=False)  # no nominal values needed
    rep = chk.structural
    assert rep.rank == 2 and rep.identifiable is False
    assert rep.combinations[0]["combination"] == "a − b"
    assert rep.combinations[0]["kind"] == "dependent"
    assert rep.free_params == ["a", "b"]
    assert chk.report is None and "a − b" in str(chk)


def test_absent_parameter():
    model = ds.SDEModel([x], [a, b], [-a * x], diffusion=1, name="absent")
    rep = structural_check(model)
    assert rep.absent == ["b"] and rep.free_params == ["b"] and rep.rank == 1
    assert rep.combinations == []  # an absent parameter is not also listed as a combination


@pytest.mark.parametrize(
    "drift, combo, certificate",
    [
        # distinct transcendental terms that are dependent: found numerically, proven by
        # simplify; the independence of the rest proven by interval arithmetic
        (a * sp.sin(x) ** 2 + b * sp.cos(x) ** 2 + c - x, "a + b − c", "interval"),
        (a * sp.exp(x) + b * sp.exp(2 * x) + c * sp.exp(x) ** 2 - x, "b − c", "interval"),
        # rational functions: dependency visible only over a common denominator
        (a * x**2 / (1 + x**2) + b / (1 + x**2) + c - x, "a + b − c", "exact"),
        # floats read as the decimals they show: 0.1 == 1/10 exactly
        (sp.Float(0.1) * a * x + b * x / 10 - x**3, "a − b", "exact"),
        # sin 2x = 2 sin x cos x, with a coefficient that is not a small rational
        (
            a * sp.sin(x) + b * sp.sin(2 * x) + c * sp.sin(x) * sp.cos(x) * sp.Float("2.0001") - x,
            "b − 20000/20001·c",
            "interval",
        ),
        # an algebraic coefficient: exact in Q(√2)
        (sp.sqrt(2) * a * x + b * x - x**3, "−sqrt(2)/2·a + b", "exact"),
    ],
)
def test_exact_dependencies(drift, combo, certificate):
    model = ds.SDEModel(
        [x], [a, b, c] if drift.has(c) else [a, b], [drift], diffusion=1, name="dep"
    )
    rep = structural_check(model)
    assert [cmb["combination"] for cmb in rep.combinations] == [combo]
    assert rep.certificate == certificate
    assert "proven" in str(rep) and "numerical" not in str(rep)


@pytest.mark.parametrize(
    "drift, certificate",
    [
        (a * x / (1 + x**2) + b / (1 + x**2) + c - x, "exact"),  # independent rational terms
        # nearly dependent, exactly independent (exact rational evaluation)
        (a * x + b * (x + sp.Rational(1, 10**12) * x**2) - x**3, "exact"),
        (a * x + b * (x + sp.Float(1e-12) * x**2) - x**3, "exact"),  # the same with a Float
        # sin x, sin 2x and sin 2x + 1e-9 sin³x: nearly dependent, exactly independent (sin³ holds
        # sin 3x); proven by a minor whose interval determinant excludes 0
        (
            a * sp.sin(x)
            + b * sp.sin(2 * x)
            + c * (2 * sp.sin(x) * sp.cos(x) + sp.Rational(1, 10**9) * sp.sin(x) ** 3)
            - x,
            "interval",
        ),
    ],
)
def test_exact_independence_no_floating_point_luck(drift, certificate):
    """A floating-point rank would call x and x + 1e-12 x² dependent; the exact check does not."""
    params = [p for p in (a, b, c) if drift.has(p)]
    model = ds.SDEModel([x], params, [drift], diffusion=1, name="indep")
    rep = structural_check(model)
    assert rep.combinations == [] and rep.rank == len(params), str(rep)
    assert rep.certificate == certificate


def test_independence_beyond_30_digits_is_reported_numerical():
    """sin x and sin x + 1e-40 eˣ are independent, but not at 30 digits: the dependency is
    reported as numerical (not proven), the verdict stays open, nothing is called proven."""
    drift = a * sp.sin(x) + b * (sp.sin(x) + sp.Rational(1, 10**40) * sp.exp(x)) - x
    rep = structural_check(ds.SDEModel([x], [a, b], [drift], diffusion=1, name="near"))
    assert [cmb["combination"] for cmb in rep.combinations] == ["a − b"]
    assert rep.combinations[0]["kind"] == "dependent (numerical)"
    assert rep.certificate == "numerical" and rep.identifiable is None
    text = str(rep)
    assert (
        "not proven" in text and "certificate: numerical" in text and "NOT identifiable" not in text
    )


def test_function_without_interval_enclosure_is_numerical():
    """atan has no interval enclosure here: independence seen at 30 digits only, so the
    certificate says numerical instead of proven."""
    rep = structural_check(
        ds.SDEModel([x], [a, b], [a * sp.atan(x) + b * x - x**3], diffusion=1, name="atan")
    )
    assert rep.rank == 2 and rep.combinations == [] and rep.identifiable is None
    assert rep.certificate == "numerical" and "proven" not in str(rep).replace("not proven", "")


def test_rigorous_evaluation_helpers():
    """proven_nonzero: exact for rational expressions, an interval excluding 0 otherwise, and
    never for an identity; the interval determinant test on singular and regular matrices."""
    from mpmath import iv

    from dynosed_sym.identifiability.exact import proven_nonzero
    from dynosed_sym.identifiability.rigorous import _det_excludes_zero

    assert proven_nonzero([x**2 - 1], [x]) and proven_nonzero([sp.sin(x)], [x])
    assert not proven_nonzero([sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1], [x])
    assert not proven_nonzero([(x + 1) ** 2 - x**2 - 2 * x - 1], [x])
    third = iv.mpf(1) / 3  # an enclosure of 1/3, not the exact value
    assert _det_excludes_zero([[iv.mpf(1), iv.mpf(2)], [iv.mpf(3), iv.mpf(4)]])
    assert not _det_excludes_zero([[iv.mpf(1), third], [iv.mpf(3), iv.mpf(1)]])  # det ∋ 0
    assert not _det_excludes_zero([[iv.mpf(1), iv.mpf(2)], [iv.mpf(2), iv.mpf(4)]])


def test_piecewise_denominators_use_the_product_as_common_denominator():
    """No polynomial lcm of Piecewise denominators (sympy raises PolynomialError): their product
    is used; the dependency is still proven, the independence only numerical (Piecewise has no
    interval enclosure here)."""
    pw = sp.Piecewise((x, x > 0), (1, True))
    ns = function_null_space([[1 / pw], [1 / (1 + x)], [(x + 1 + pw) / (pw * (1 + x))]], [x])
    assert ns.dim == 1 and ns.numerical == [] and ns.certificate == "numerical"
    v = np.array([float(t) for t in ns.basis[0]])
    np.testing.assert_allclose(v / v[0], [1, 1, -1])


_BASIS = [x, x**2, x**3, sp.sin(x), sp.exp(x), x / (1 + x**2), 1 / (1 + x**2), sp.cos(x) ** 2]


@settings(max_examples=30)
@given(data=st.data())
def test_structural_rank_equals_coefficient_rank(data):
    """Random integer combinations of independent basis functions: the structural null space is
    exactly the null space of the coefficient matrix (Hypothesis)."""
    n = data.draw(st.integers(2, 4), label="n")
    idx = data.draw(
        st.lists(st.integers(0, len(_BASIS) - 1), min_size=1, max_size=4, unique=True),
        label="basis",
    )
    C = sp.Matrix(
        data.draw(
            st.lists(
                st.lists(st.integers(-3, 3), min_size=n, max_size=n),
                min_size=len(idx),
                max_size=len(idx),
            ),
            label="C",
        )
    )
    params = sp.symbols(f"p0:{n}", real=True)
    drift = sum(C[l, j] * params[j] * _BASIS[i] for l, i in enumerate(idx) for j in range(n)) - x
    model = ds.SDEModel([x], list(params), [drift], diffusion=1, name="hyp")
    rep = structural_check(model)
    assert rep.rank == C.rank()
    used = [_BASIS[i] for row, i in enumerate(idx) if any(C[row, j] for j in range(n))]
    rational = all(f.is_rational_function(x) for f in used)
    assert rep.certificate == ("exact" if rational else "interval")
    Cn = np.array(C.tolist(), dtype=float)
    for vec in rep.null_vectors.T:
        np.testing.assert_allclose(Cn @ vec, 0.0, atol=1e-12)


def test_sqrt_atoms_and_several_states():
    r = sp.sqrt(x**2 + y**2)
    model = ds.SDEModel(
        [x, y], [a, b], [a * r * x + b * x * (x**2 + y**2) / r - x, -y], diffusion=1, name="sq"
    )
    assert [c["combination"] for c in structural_check(model).combinations] == ["a − b"]


def test_constants_are_not_independent_generators():
    """sin 1 and cos 1 are not independent (sin²1 + cos²1 = 1): f1 = sin²1 · f2 is found and
    proven, where a polynomial ring in sin 1, cos 1 would call the columns independent."""
    s1, c1 = sp.sin(1), sp.cos(1)
    ns = function_null_space([[s1**2 * x + (1 - c1**2) * x**2], [x + x**2]], [x])
    assert ns.dim == 1 and ns.numerical == [] and ns.proven
    v = np.array([float(t) for t in ns.basis[0]])
    np.testing.assert_allclose(v / v[1], [-1 / np.sin(1) ** 2, 1.0], rtol=1e-14)


def test_function_null_space_direct():
    ns = function_null_space([[x, 0], [0, y], [2 * x, 3 * y]], [x, y])
    assert ns.dim == 1 and ns.certificate == "exact"
    v = np.array([float(t) for t in ns.basis[0]])
    np.testing.assert_allclose(v / v[2], [-2, -3, 1])
    assert function_null_space([[sp.sin(x)], [sp.cos(x)]], [x]).dim == 0


def test_nonaffine_model_is_linearised_at_nominal():
    model = ds.SDEModel(
        [x], [k, a], [-(k**2) * x + a], diffusion=1, name="nonaff", nominal=[1.0, 0.5]
    )
    rep = structural_check(model)
    assert rep.rank == 2 and any("linearisation" in n for n in rep.notes)
    with pytest.raises(ds.DynosedError, match="nominal"):
        structural_check(ds.SDEModel([x], [k, a], [-(k**2) * x + a], diffusion=1, name="nonaff2"))


def test_ou_nonnormal_nominal_combination_is_omega_sigma_inverse():
    """For a general stable M the free combination is ΩΣ⁻¹ (Ω antisymmetric): exact rationals."""
    Ms = sp.symbols("M11 M12 M21 M22", real=True)
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    model = ds.SDEModel(
        [x, y],
        list(Ms),
        list(sp.Matrix(2, 2, Ms) * sp.Matrix([x, y])),
        diffusion=1,
        name="ou_nn",
        nominal=M.ravel(),
    )
    rep = structural_check(model)
    assert rep.rank == 3 and rep.rank_is_exact and rep.combinations[0]["kind"] == "density"
    S = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    C = np.array([[0.0, 1.0], [-1.0, 0.0]]) @ np.linalg.inv(S)
    v = rep.null_vectors[:, 0]
    cvec = C.ravel() / np.linalg.norm(C)
    assert abs(abs(v @ cvec) - 1.0) < 1e-12
    assert rep.combinations[0]["combination"] == "−1/7·M11 + M12 − 3/7·M21 + 1/7·M22"


def test_gradient_model_exactly_identifiable():
    model = ds.SDEModel(
        [x], [a, b], [a * x - b * x**3], diffusion=sp.Rational(1, 2), name="dw", nominal=[1.0, 1.0]
    )
    rep = structural_check(model)
    assert rep.identifiable is True and rep.rank_is_exact and "gradient" in rep.density


def test_anisotropic_noise_breaks_the_rotation_symmetry():
    """With D = diag(1/10, 1/5) the rotation is no symmetry: ω is not flagged structurally."""
    r2 = x**2 + y**2
    w = sp.Symbol("w", real=True)
    model = ds.SDEModel(
        [x, y],
        [a, c, w],
        [a * x - w * y - c * x * r2, a * y + w * x - c * y * r2],
        diffusion=[sp.Rational(1, 10), sp.Rational(1, 5)],
        name="lc_aniso",
    )
    rep = structural_check(model)
    assert rep.free_params == []


# ================================================================================ simulation check
def test_design_ou_all_free(models):
    chk = check_identifiability(models["ou2d"], study=ds.Study(n_samples=20_000, seed=3))
    assert chk.structural.rank == 3 and chk.rank == 3 and not chk.unique
    assert sorted(chk.free_params) == ["M12", "M21"]
    v = chk.report.null_vectors[:, 0] * np.sign(chk.report.null_vectors[1, 0])
    np.testing.assert_allclose(v, [0, 2**-0.5, -(2**-0.5), 0], atol=0.05)
    # the unresolved direction shrinks like N^-1/2, the others do not
    order = np.argsort(chk.direction_sv[-1])
    assert chk.direction_verdict[order[0]] == "unconstrained"
    assert chk.direction_exponent[order[0]] < -0.35
    assert all(chk.direction_verdict[i] == "resolved" for i in order[1:])
    assert np.all(np.abs(chk.direction_exponent[order[1:]]) < 0.15)
    se = chk.std_errors
    assert np.isinf(se[1]) and np.isinf(se[2]) and np.all(np.isfinite(se[[0, 3]]))
    assert np.isinf(chk.n_required[1]) and np.isfinite(chk.n_required[0])
    assert "structural ones" in " ".join(chk.notes)
    # structurally free: no N resolves M12 − M21, and the table says so (∞, not "> 20k")
    row = next(ln for ln in str(chk).splitlines() if ln.startswith("M12 "))
    assert " ∞ " in row and "> 20k" not in row


def test_design_unconstrained_without_a_structural_reason_is_not_infinite():
    """Sel'kov's oscillator (k, a, b, c) = (1, 0.08, 0.6, 1), D = I/100: its overall scale shows
    no curvature in 2,000 simulated samples (the direction shrinks like noise: "unconstrained"),
    but nothing in the symbols makes it free — the structural rank is 4 of 4 — and fits of 10,000
    resolve it in some data sets (benchmarks/data_factors.txt).  The check must not plan "∞":
    its "N for ±x %" says "> 2k" and its se@N beyond 2,000 "?"."""
    model = ds.SDEModel(
        [x, y],
        [k, a, b, c],
        [-k * x + a * y + c * x**2 * y, b - a * y - c * x**2 * y],
        sp.Rational(1, 100),
        name="selkov_design",
    )
    chk = check_identifiability(model, [1.0, 0.08, 0.6, 1.0], study=ds.Study(n_samples=2000))
    assert chk.structural.rank == 4 and chk.structural.free_params == []
    assert chk.rank == 3 and "unconstrained" in chk.direction_verdict
    assert np.isinf(chk.n_required).all()  # the API keeps inf: not reached at any N it can plan
    text = str(chk)
    assert "unconstrained at this N (no structural reason found" in text
    for name in ("k", "c"):  # the parameters carrying the scale
        row = next(ln for ln in text.splitlines() if ln.startswith(f"{name} "))
        cells = row.split()
        assert cells[2] == "inf" and cells[3:6] == ["?", "?", "?"], row  # se@1k, then beyond 2k
        assert "> 2k" in row and "∞" not in row


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda c: c.se_at(-1), r"se_at: N must be positive sample sizes, got -1\.0"),
        (lambda c: c.se_at([1000, 0]), r"se_at: N must be positive sample sizes, got 0\.0"),
        (lambda c: c.se_at(np.nan), r"se_at: N must be positive sample sizes, got nan"),
        (lambda c: c.se_at("1e4"), r"se_at: N: holds numbers stored as text"),
        (lambda c: c.samples_for(rel_error="x"), r"rel_error must be a number, got 'x'"),
        (lambda c: c.samples_for(rel_error=-0.1), r"rel_error must be positive, got -0\.1"),
    ],
)
def test_planning_methods_name_a_bad_sample_size_or_target(models, call, match):
    """se_at(-1) returned NaN standard errors and se_at(0) infinite ones without a word;
    se_at("1e4") and samples_for(rel_error="x") raised a bare ValueError from float()."""
    chk = check_identifiability(
        models["ou2d_m12"], study=ds.Study(n_samples=500), features=ds.Features(n_features=64)
    )
    with pytest.raises(ds.DataError, match=match):
        call(chk)


def test_design_ou_m12_identifiable_and_planning(models):
    chk = check_identifiability(models["ou2d_m12"], study=ds.Study(n_samples=20_000, seed=4))
    assert chk.unique and chk.free_params == [] and chk.direction_verdict == ["resolved"]
    se = chk.std_errors[0]
    np.testing.assert_allclose(chk.se_at(4 * chk.n_samples), se / 2)
    np.testing.assert_allclose(chk.se_at([chk.n_samples, 100 * chk.n_samples])[:, 0], [se, se / 10])
    need = chk.samples_for(rel_error=0.05)[0]
    # at the N required, the 95 % half-width is 5 % of |M12| = 0.025
    assert abs(1.959964 * chk.se_at(need)[0] - 0.025) < 1e-3 * 0.025
    assert chk.samples_for(rel_error=0.1)[0] == pytest.approx(need / 4, rel=1e-3)
    text = str(chk)
    assert "se@10k" in text and "N for ±10%" in text


def test_design_limit_cycle_omega_not_identifiable(models):
    chk = check_identifiability(
        models["limit_cycle"],
        study=ds.Study(n_samples=20_000, simulation=Simulation(burn_in=2000), seed=1),
    )
    assert chk.structural.free_params == ["omega"]
    assert chk.report.free_params == ["omega"] and chk.rank == 2
    i = int(np.argmin(chk.direction_sv[-1]))
    assert chk.direction_verdict[i] == "unconstrained"
    assert np.isinf(chk.std_errors[2]) and np.all(np.isfinite(chk.std_errors[:2]))


def test_design_with_given_samples_matches_structural_null_space():
    """Exact Gaussian samples of a non-normal OU: simulated null direction ≈ the exact ΩΣ⁻¹."""
    Ms = sp.symbols("M11 M12 M21 M22", real=True)
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    model = ds.SDEModel(
        [x, y],
        list(Ms),
        list(sp.Matrix(2, 2, Ms) * sp.Matrix([x, y])),
        diffusion=1,
        name="ou_nn",
        nominal=M.ravel(),
    )
    S = scipy.linalg.solve_continuous_lyapunov(M, -2.0 * np.eye(2))
    X = np.random.default_rng(0).multivariate_normal(np.zeros(2), S, 40_000)
    chk = check_identifiability(model, study=ds.Study(samples=X, seed=0))
    assert chk.rank == 3
    cos = abs(chk.report.null_vectors[:, 0] @ chk.structural.null_vectors[:, 0])
    assert cos > 0.99


def test_check_requires_nominal_to_simulate():
    model = ds.SDEModel([x], [a], [-a * x], diffusion=1, name="nonom")
    with pytest.raises(ds.ModelError, match="nominal"):
        check_identifiability(model)
    with pytest.raises(ds.DynosedError, match="route"):
        check_identifiability(model, route="nope", simulate=False)


def test_local_route_design(models):
    from dynosed_sym.routes.probes import Balls

    model = models["ou2d_m12"]
    P = np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 1.5], [-1.5, 0.0], [0.0, -1.5]])
    chk = check_identifiability(
        model,
        route="local",
        probes=Balls(P, 0.75),
        study=ds.Study(n_samples=40_000, seed=0),
        scores=ds.Scores(temperature=16.0),
    )
    assert chk.route == "local" and chk.report is not None
    assert chk.n_samples < 40_000 and "probe regions" in " ".join(chk.notes)


# ================================================================================ GRN, paper
# protocol
@pytest.mark.slow
def test_grn_pre_data_freeness_ordering_agrees_with_post_data(models):
    """Simulation check (simulated at nominal, seed 123) vs a fit to independent data (seed 0)."""
    model = models["grn_bcell"]
    protocol = dict(dt=0.01, burn_in=30_000, thin=10, n_chains=2048)
    chk = check_identifiability(  # (the fit's kernel: the paper's median length scale)
        model,
        study=ds.Study(n_samples=50_000, seed=123, simulation=Simulation(**protocol)),
        features=ds.Features(bandwidth="median"),
    )
    X = ds.simulate(model, model.nominal, 50_000, seed=0, **protocol)
    fit = ds.fit_global(
        model,
        X,
        features=ds.Features(n_features=2048, bandwidth="median", seed=0),
        solver=ds.Solver(lam=1e-6),
    )
    pre, post = chk.freeness_normalised, fit.report.freeness_normalised
    rho = stats.spearmanr(pre, post).statistic
    print(
        f"GRN freeness, pre-data vs post-data: Spearman {rho:.4f}, "
        f"Kendall {stats.kendalltau(pre, post).statistic:.4f}; simulation check "
        f"{chk.timings['total']:.1f} s"
    )
    assert rho > 0.95
    top_pre = set(np.argsort(-pre)[:8])
    top_post = set(np.argsort(-post)[:8])
    assert len(top_pre & top_post) >= 7
    assert "W[1,6]" in chk.free_params and "W[1,6]" in fit.report.free_params
    assert abs(chk.rank - fit.report.rank) <= 1
    # GRN has weak directions (resolvable with more data) and unconstrained ones
    assert "weak" in chk.direction_verdict and "unconstrained" in chk.direction_verdict


def test_model_with_inputs_needs_their_values():
    u = sp.Symbol("u", real=True)
    model = ds.SDEModel([x], [a, b], [a * u * x + b * x - x**3], diffusion=1, name="in", inputs=[u])
    with pytest.raises(ds.DynosedError, match="with_inputs"):
        structural_check(model)
    rep = structural_check(model.with_inputs({"u": 2.0}))
    # f = (2a + b)x − x³: U c = 0 for c = (−1/2, 1)
    assert [c["combination"] for c in rep.combinations] == ["−1/2·a + b"]


def _rotated_ou(n, seed):
    """The 2-D OU of models/ou2d.py at M = [[−1, 1], [0, −2]], D = I, and n exact draws of its
    stationary law: its free direction ≈ 0.90·M12 − 0.38·M21 + … rests on one parameter."""
    base = ds.load_model("models/ou2d.py")
    M = np.array([[-1.0, 1.0], [0.0, -2.0]])
    model = ds.SDEModel(base.state, base.params, base.drift, diffusion=1, name="ou2d_rotated")
    cov = scipy.linalg.solve_continuous_lyapunov(M, -2 * np.eye(2))
    X = np.random.default_rng(seed).multivariate_normal(np.zeros(2), cov, size=n)
    return model, M.ravel(), X


@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_predictions_follow_the_fits_lone_direction_rule():
    """A flat direction that rests on one or two parameters leaves their intervals the whole line
    in every fit with an estimated τ (docs/design-statistics.md §8); se_at predicted finite
    standard errors for M11, M21 and M22 at any N (0.20 for M11 at N = 10⁶).  The prediction at
    N now agrees with a fit to N fresh draws; with a τ given, as in the fit, the rule is off."""
    model, nominal, X = _rotated_ou(5000, 0)
    chk = check_identifiability(model, nominal, study=ds.Study(samples=X))
    assert chk.report.prior_scale_method == "ml"
    assert np.isinf(chk.se_at(1e6)).all() and np.isinf(chk.samples_for(0.1)).all()
    _, _, X_new = _rotated_ou(20_000, 1)
    fit = ds.fit_global(model, X_new)
    open_ = ~np.isfinite(fit.conf_int()).all(axis=1)
    assert open_.tolist() == np.isinf(chk.se_at(20_000)).tolist() == [True] * 4
    given = ds.Solver(prior_scale=1.0)
    chk_tau = check_identifiability(model, nominal, study=ds.Study(samples=X), solver=given)
    fit_tau = ds.fit_global(model, X_new, solver=given)
    finite = np.isfinite(fit_tau.conf_int()).all(axis=1)
    assert finite.tolist() == np.isfinite(chk_tau.se_at(20_000)).tolist() == [1, 0, 1, 1]
