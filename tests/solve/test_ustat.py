"""The unbiased (U-statistic) global fit (dynosed_sym.solve.ustat, issue 13).

Oracles: the explicit double sum over pairs of samples in different blocks (an exact identity), the
Tikhonov solve of the same system (the V-statistic option, bit for bit), exact stationary laws
(bias over many data sets), and the affine solve (the corrected Gauss–Newton loop).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy import stats

import dynosed_sym as ds
from dynosed_sym.assembly.features import draw_features
from dynosed_sym.assembly.stein import assemble_array
from dynosed_sym.reference import lambdified, stein_system_reference
from dynosed_sym.solve import uncertainty as unc
from dynosed_sym.solve.gauss_newton import corrected_gauss_newton
from dynosed_sym.solve.linear import hinv, solve_tikhonov
from dynosed_sym.solve.ustat import block_covariance, solve_system

x = sp.Symbol("x", real=True)
a_ = sp.Symbol("a", real=True)

#: dx = −a x dt + √(1 + x²) dW: D(x) = ½(1 + x²), stationary law x ~ t_(2a+1)/√(2a+1) exactly
SDD = ds.SDEModel([x], [a_], [-a_ * x], diffusion=(1 + x**2) / 2, name="sdd_t", nominal=[2.0])


def _sdd_samples(a, n, seed):
    nu = 2 * a + 1
    return (stats.t.rvs(nu, size=int(n), random_state=seed) / math.sqrt(nu))[:, None]


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("gen_ustat"))


def _per_sample(model, X, feats):
    """a_i (N, m, n), β_i (N, m): the per-sample Stein rows of the NumPy reference."""
    L = lambdified(model)
    rows = [
        stein_system_reference(model, X[i : i + 1], feats.omega, feats.phase, L)
        for i in range(X.shape[0])
    ]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def _pair_sums(a, beta, labels):
    """Gram and right-hand side of Σ_{i,j in different blocks} ψ_iᵀψ_j / #pairs, explicitly."""
    N = a.shape[0]
    G = np.zeros((a.shape[2], a.shape[2]))
    g = np.zeros(a.shape[2])
    pairs = 0
    for i in range(N):
        for j in range(N):
            if labels[i] != labels[j]:
                G += a[i].T @ a[j]
                g += a[i].T @ beta[j]
                pairs += 1
    return G / pairs, g / pairs


@pytest.mark.parametrize("n_blocks", [4, 24])
def test_u_statistic_normal_equations_equal_the_pair_sum(gen_dir, n_blocks):
    """(AᵀA − S, Aᵀb − s) from the block means equals the explicit double sum over pairs of samples
    in different blocks (exact for equal blocks; 24 blocks of one sample: the i ≠ j U-statistic),
    for a state-dependent D(x); the assembly's blocks are the reference's block means."""
    X = _sdd_samples(2.0, 24, 0)
    feats = draw_features(1, 64, 0.8, seed=1)
    a, beta = _per_sample(SDD, X, feats)
    edges = np.linspace(0, 24, n_blocks + 1).astype(np.int64)
    labels = np.repeat(np.arange(n_blocks), np.diff(edges))
    cm = ds.compile_model(SDD, gen_dir)
    A, b, A_blocks, b_blocks, counts = assemble_array(cm, X, edges, feats)
    np.testing.assert_allclose(A, a.mean(0), rtol=1e-10, atol=1e-14)
    ref_blocks = np.array([a[labels == k].mean(0) for k in range(n_blocks)])
    np.testing.assert_allclose(A_blocks, ref_blocks, rtol=1e-10, atol=1e-14)
    S, s = block_covariance(A, b, A_blocks, b_blocks, counts)
    G, g = _pair_sums(a, beta, labels)
    np.testing.assert_allclose(A.T @ A - S, G, rtol=1e-9)
    np.testing.assert_allclose(A.T @ b - s, g, rtol=1e-9)
    # the solve, correcting every direction (threshold −∞), no second-order term: the pair-sum
    # normal equations
    est = solve_system(
        A, b, A_blocks, b_blocks, counts, 0.0, second_order=False, rank_threshold=-np.inf
    )
    assert est.alpha == 1.0 and est.subspace.shape == (1, 1)
    np.testing.assert_allclose(est.theta, np.linalg.solve(G, g), rtol=1e-8)


def test_v_statistic_is_the_tikhonov_fit_bit_for_bit(models):
    """statistic="v": θ̂ is solve_tikhonov of the same system and the standard errors the sandwich
    with bread H_λ⁻¹ — exactly, as before the U-statistic became the default."""
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 1000, seed=5)
    fit = ds.fit_global(m, X, features=ds.Features(seed=0), solver=ds.Solver(statistic="v"))
    assert fit.info["statistic"] == "v" and fit.info["estimator"] == "ridge"
    assert np.array_equal(fit.theta, solve_tikhonov(fit.A, fit.b, 1e-6))
    Ab, bb, counts = fit.report._blocks
    along = np.linalg.svd(fit.A, full_matrices=False)[2].T  # every direction resolved
    u = unc.analyse_uncertainty(fit.A, fit.b, fit.theta, 1e-6, Ab, bb, counts, rank=3, along=along)
    assert np.array_equal(fit.std_errors, u.se) and np.array_equal(fit.report.ci, u.ci)
    assert fit.report.p_value == u.p_value
    np.testing.assert_array_equal(
        unc.sandwich_covariance(fit.A, fit.b, fit.theta, 1e-6, Ab, bb, counts, hinv(fit.A, 1e-6)),
        fit.report.covariance,
    )
    # the default fits the same system with the U-statistic: same A, different θ̂
    u_fit = ds.fit_global(m, X, features=ds.Features(seed=0))
    assert np.array_equal(u_fit.A, fit.A) and not np.array_equal(u_fit.theta, fit.theta)
    # the test starts at the Tikhonov solution and is profiled along the same resolved directions
    assert u_fit.report.p_value == fit.report.p_value


def test_default_is_the_resolved_u_statistic_formula(models):
    """The default estimate equals the formulas written out: V_R (σ_R² − V_RᵀSV_R)⁻¹ V_Rᵀ(Aᵀb − s)
    minus the delete-one-block jackknife's bias (B − 1)(Σ_k w_k θ̂_(−k) − θ̂), each θ̂_(−k) the same
    formula on the other B − 1 blocks (their mean, S and s recomputed from scratch)."""
    m = models["lorenz"]
    fit = ds.fit_global(m, ds.simulate(m, m.nominal, 1000, seed=21), features=ds.Features(seed=0))
    A, b = fit.A, fit.b
    Ab, bb, counts = fit.report._blocks
    w = counts / counts.sum()
    B = w.size

    def u_solve(A, b, Ab, bb, w):  # Lorenz: full rank, R is everything
        dA, db = Ab - A, bb - b
        nb = w.size
        S = sum(w[k] * dA[k].T @ dA[k] for k in range(nb)) / (nb - 1)
        s = sum(w[k] * dA[k].T @ db[k] for k in range(nb)) / (nb - 1)
        return np.linalg.solve(A.T @ A - S, A.T @ b - s), A.T @ A - S

    th, H = u_solve(A, b, Ab, bb, w)
    deleted = []
    for k in range(B):
        keep = np.arange(B) != k
        wk = w[keep] / w[keep].sum()
        Ak, bk = np.tensordot(wk, Ab[keep], axes=1), wk @ bb[keep]
        deleted.append(u_solve(Ak, bk, Ab[keep], bb[keep], wk)[0])
    bias = (B - 1) * (w @ np.array(deleted) - th)
    assert fit.report.jackknife.gain == 1.0
    np.testing.assert_allclose(fit.theta, th - bias, rtol=1e-8)
    np.testing.assert_allclose(fit.report.second_order, bias, rtol=1e-6)
    Hi = np.linalg.inv(H)
    # and its sandwich uses the corrected Gram as bread
    np.testing.assert_allclose(
        fit.report.covariance,
        unc.sandwich_covariance(A, b, fit.theta, 0.0, Ab, bb, counts, Hi),
        rtol=1e-8,
    )


def test_corrected_gram_is_positive_definite_on_the_resolved_subspace(models, ou_samples):
    """All-free OU at N = 300: the raw corrected Gram AᵀA − S is indefinite in most fits; restricted
    to the resolved subspace it never needs the guard (α = 1)."""
    M = np.array([[-1.0, 0.5], [-0.5, -1.0]])
    raw_indefinite = 0
    for seed in range(20):
        fit = ds.fit_global(
            models["ou2d"], ou_samples(M, 1.0, 300, 300 + seed), features=ds.Features(seed=seed)
        )
        Ab, bb, counts = fit.report._blocks
        S, _ = block_covariance(fit.A, fit.b, Ab, bb, counts)
        raw_indefinite += np.linalg.eigvalsh(fit.A.T @ fit.A - S).min() < 0
        est = solve_system(fit.A, fit.b, Ab, bb, counts, 1e-6)
        assert est.alpha == 1.0 and np.array_equal(est.theta, fit.theta)
        VR = est.subspace
        assert np.linalg.eigvalsh(VR.T @ (fit.A.T @ fit.A - S) @ VR).min() > 0
    assert raw_indefinite >= 10, raw_indefinite


def test_without_noise_blocks_the_v_statistic_is_used_with_a_note(models):
    m = models["lorenz"]
    fit = ds.fit_global(
        m,
        ds.simulate(m, m.nominal, 500, seed=2),
        features=ds.Features(seed=0),
        execution=ds.Execution(n_blocks=1),
    )
    assert fit.info["statistic"] == "u"
    assert fit.report.statistic == "v" and fit.report.estimator == "ridge"
    assert np.array_equal(fit.theta, solve_tikhonov(fit.A, fit.b, 1e-6))
    assert any("too few data blocks" in n for n in fit.report.notes)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"statistic": "w"}, "statistic"), ({"estimator": "lasso"}, "estimator")],
)
def test_bad_options_name_the_argument(models, kwargs, name):
    X = np.random.default_rng(0).standard_normal((100, 3))
    with pytest.raises(ds.DataError, match=name):
        ds.fit_global(models["lorenz"], X, **kwargs)


# ================================================================================ non-affine
def test_corrected_gauss_newton_on_an_affine_model_is_one_affine_solve(models):
    """An affine model in the gradient solver: the corrected Gauss–Newton loop converges at once
    to the affine U-statistic estimate (same θ̂, same report)."""
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 2000, seed=9)
    lin = ds.fit_global(m, X, features=ds.Features(seed=0))
    grad = ds.fit_global(m, X, features=ds.Features(seed=0), solver=ds.Solver(method="gradient"))
    assert grad.info["gn_converged"] is True and grad.info["gn_steps"] <= 3
    np.testing.assert_allclose(grad.theta, lin.theta, rtol=1e-9)
    np.testing.assert_allclose(grad.std_errors, lin.std_errors, rtol=1e-6)


def test_corrected_gauss_newton_non_affine_matches_the_affine_parametrisation(gen_dir, models):
    """Lorenz with σ = exp(s): the non-affine U-statistic fit converges in a few steps and exp(ŝ)
    equals the affine fit's σ̂ up to the second-order term's parametrisation dependence."""
    xs, ys, zs = models["lorenz"].state
    s, rho, beta = sp.symbols("s rho beta", real=True)
    logm = ds.SDEModel(
        [xs, ys, zs],
        [s, rho, beta],
        [sp.exp(s) * (ys - xs), xs * (rho - zs) - ys, xs * ys - beta * zs],
        diffusion=sp.Rational(3, 10),
        name="lorenz_log_sigma",
        nominal=[math.log(10.0), 28.0, 8 / 3],
    )
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 5000, seed=4)
    aff = ds.fit_global(m, X, features=ds.Features(seed=0))
    non = ds.fit_global(
        logm, X, features=ds.Features(seed=0), execution=ds.Execution(out_dir=gen_dir)
    )
    assert non.info["solver"] == "gradient" and non.info["gn_converged"] is True
    assert non.info["gn_steps"] <= 10
    est = np.array([math.exp(non.theta[0]), non.theta[1], non.theta[2]])
    np.testing.assert_allclose(est, aff.theta, rtol=2e-3)
    # the V-statistic optimum differs from the U one by far more than that
    v = ds.fit_global(
        logm,
        X,
        features=ds.Features(seed=0),
        execution=ds.Execution(out_dir=gen_dir),
        solver=ds.Solver(statistic="v"),
    )
    assert abs(math.exp(v.theta[0]) / aff.theta[0] - 1) > 5 * abs(est[0] / aff.theta[0] - 1)


def test_corrected_gauss_newton_reports_non_convergence(models):
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 1000, seed=1)
    v = ds.fit_global(m, X, features=ds.Features(seed=0), solver=ds.Solver(statistic="v"))
    Ab, bb, counts = v.report._blocks
    shifted = v.theta * 1.5  # a start far from the fixed point; the loop gets one step only

    def linearisation(theta):  # an affine system whose linearisation ignores θ
        return v.A, v.b, Ab, bb, counts

    with pytest.warns(ds.ConvergenceWarning, match="Gauss–Newton"):
        est, _, info = corrected_gauss_newton(linearisation, shifted, 1e-6, max_steps=1)
    assert info["steps"] == 1 and info["converged"] is False
    assert "stopped after 1 steps without converging" in info["message"]
    assert any("provisional" in n for n in est.notes)


def test_an_unconverged_gauss_newton_loop_flags_the_fit(models, monkeypatch):
    """The corrected Gauss–Newton loop after the gradient search is an iterative solver of its
    own: when it stops unconverged (here: one step allowed and a tolerance of 0, so the loop
    cannot confirm its fixed point), the fit says so — converged False, the reason in
    info["message"] and the summary — as it does for the search.  (Both routes build these
    entries with routes.result.gradient_info, tested below.)"""
    import functools

    from dynosed_sym.routes import global_route

    short = functools.partial(corrected_gauss_newton, max_steps=1, tol=0.0)
    monkeypatch.setattr(global_route, "corrected_gauss_newton", short)
    m = models["lorenz"]
    X = ds.simulate(m, m.nominal, 2000, seed=9)
    with pytest.warns(ds.ConvergenceWarning, match="Gauss–Newton"):
        fit = ds.fit_global(m, X, features=ds.Features(seed=0), solver=ds.Solver(method="gradient"))
    assert fit.info["gn_converged"] is False and fit.converged is False
    assert "Gauss–Newton" in fit.info["message"]
    assert "NOT CONVERGED" in fit.summary()


def test_gradient_info_is_unconverged_when_either_solver_is():
    from dynosed_sym.routes.result import gradient_info

    search = {"nfev": 7, "status": 1, "converged": True, "message": "", "projected": []}
    failed = dict(search, converged=False, message="search stopped")
    loop_ok = {"steps": 2, "converged": True, "message": "", "stop": "converged"}
    loop_bad = {"steps": 50, "converged": False, "message": "loop stopped", "stop": "max_steps"}
    assert gradient_info(search)["converged"] is True
    assert gradient_info(search, loop_ok)["converged"] is True
    assert gradient_info(search, loop_bad)["message"] == "loop stopped"
    both = gradient_info(failed, loop_bad)
    assert both["converged"] is False and both["message"] == "search stopped; loop stopped"
    assert gradient_info(failed, loop_ok)["message"] == "search stopped"


# ================================================================================ small-N bias
@pytest.mark.slow
def test_lorenz_n300_unbiased_over_200_data_sets(models):
    """Issue 13: Lorenz at N = 300, 200 simulated data sets: |mean relative bias| ≤ 3 % for every
    parameter with the default U-statistic (Monte-Carlo standard error of the mean ≈ 1 % for σ),
    while the V-statistic shrinks σ by several per cent (first 50 sets)."""
    m = models["lorenz"]
    truth = np.array(m.nominal)
    est_u, est_v = [], []
    for k in range(200):
        X = ds.simulate(m, truth, 300, seed=10_000 + k)
        est_u.append(ds.fit_global(m, X, features=ds.Features(seed=k)).theta)
        if k < 50:
            est_v.append(
                ds.fit_global(
                    m, X, features=ds.Features(seed=k), solver=ds.Solver(statistic="v")
                ).theta
            )
    bias_u = np.mean(est_u, axis=0) / truth - 1
    se_u = np.std(est_u, axis=0, ddof=1) / truth / np.sqrt(200)
    shrink = np.mean(np.array(est_v)[:, 0] - np.array(est_u)[:50, 0]) / truth[0]
    print(
        f"\nLorenz N = 300, 200 sets: bias U {bias_u.round(4)} ± {se_u.round(4)}; "
        f"V − U (σ) {shrink:.4f}"
    )
    assert np.all(np.abs(bias_u) <= 0.03), bias_u
    assert shrink < -0.04  # the V-statistic's shrinkage of σ, paired on the same data


@pytest.mark.slow
def test_state_dependent_diffusion_unbiased(gen_dir):
    """D(x) = ½(1 + x²), exact t-distributed samples, N = 300, 200 data sets: the U-statistic
    estimate of a = 2 is unbiased within 3 % (standard error of the mean ≈ 1 %)."""
    est = [
        ds.fit_global(
            SDD,
            _sdd_samples(2.0, 300, 500 + k),
            features=ds.Features(seed=k),
            execution=ds.Execution(out_dir=gen_dir),
        ).theta[0]
        for k in range(200)
    ]
    bias = np.mean(est) / 2.0 - 1
    print(
        f"\nstate-dependent D, N = 300: bias {bias:.4f} ± {np.std(est, ddof=1) / 2 / 200**0.5:.4f}"
    )
    assert abs(bias) < 0.03
