"""fit_global on designs (issue 16): several environments with known inputs and env parameters,
time courses — against exact laws (stationary OU from the Lyapunov equation, the transient OU in
closed form, a state-dependent D with a closed-form stationary density)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from conftest import (
    OU_M,
    density_samples_1d,
    ou_noise_diffusion,
    ou_stationary_samples,
    ou_time_course,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.errors import DataError, ModelError

NOMINAL = OU_M.reshape(-1)


def _envs(kind, sizes, values=(1.0, 3.0), seed=0):
    data = {
        f"s{v:g}": ou_stationary_samples(OU_M, ou_noise_diffusion(kind, v), n, seed + 11 * k)
        for k, (v, n) in enumerate(zip(values, sizes))
    }
    inputs = {f"s{v:g}": {"s": v} for v in values}
    return data, inputs


def test_two_noise_environments_identify_the_rotation(aniso):
    """D = diag(s, 1): each environment alone rank 3 (M12 − M21 free), stacked rank 4."""
    data, inputs = _envs("aniso", (50_000, 50_000))
    for env in data:
        one = ds.fit_global(
            aniso, data[env], inputs=inputs[env], features=ds.Features(n_features=512, seed=0)
        )
        assert one.report.rank == 3
        assert any("M12" in str(c) and "M21" in str(c) for c in one.report.null_space)
    fit = ds.fit_global(aniso, data, inputs=inputs, features=ds.Features(n_features=512, seed=0))
    rep = fit.report
    assert rep.rank == 4 and rep.n_groups == 2 and rep.dof == 62
    assert np.abs(fit.theta - NOMINAL).max() < 0.08
    # the estimate is within its own intervals' reach (calibrated noise, not only small error)
    assert np.all(np.abs(fit.theta - NOMINAL) < 4 * rep.std_errors)
    assert rep.p_value > 1e-3
    res = fit.design.residuals
    assert set(res) == {"s1", "s3"} and all(0.2 < r["ratio"] < 3 for r in res.values())
    text = fit.summary(truth=NOMINAL)
    assert "design: s1 (stationary; s = 1), s3 (stationary; s = 3)" in text
    assert "62 d.o.f." in text and "2 independent groups" in text
    # the within-group block bootstrap agrees with the grouped sandwich
    boot = fit.bootstrap(n_boot=200, seed=1)
    assert np.all(np.abs(np.log(boot.se / rep.std_errors)) < np.log(1.6))
    ci = fit.conf_int()
    np.testing.assert_allclose(ci[:, 1] - fit.theta, rep.ci[:, 1] - fit.theta, rtol=1e-12)


def test_isotropic_noise_scale_cannot_resolve_the_rotation(iso):
    """D = s·I: Σ_e ∝ Σ_0, the invisible direction is the same in every environment."""
    data, inputs = _envs("iso", (50_000, 50_000))
    fit = ds.fit_global(iso, data, inputs=inputs, features=ds.Features(n_features=512, seed=0))
    assert fit.report.rank == 3
    assert set(fit.report.free_params) == {"M12", "M21"}


@pytest.mark.slow
def test_acceptance_two_environments_100k(aniso):
    """The issue's acceptance case: 2 × 100,000 exact samples, rank 4, max |error| < 0.06."""
    data, inputs = _envs("aniso", (100_000, 100_000), seed=1)
    fit = ds.fit_global(aniso, data, inputs=inputs, features=ds.Features(seed=0))
    assert fit.report.rank == 4
    assert np.abs(fit.theta - NOMINAL).max() < 0.06


@settings(max_examples=4)
@given(n=st.integers(200, 3000), seed=st.integers(0, 2**16), m=st.sampled_from([64, 128]))
def test_one_environment_is_the_plain_fit_bit_for_bit(aniso, n, seed, m):
    X = ou_stationary_samples(OU_M, np.diag([2.0, 1.0]), n, seed)
    plain = ds.fit_global(
        aniso.with_inputs({"s": 2.0}), X, features=ds.Features(n_features=m, seed=seed % 7)
    )
    design = ds.fit_global(
        aniso, {"A": X}, inputs={"A": {"s": 2.0}}, features=ds.Features(n_features=m, seed=seed % 7)
    )
    assert np.array_equal(plain.theta, design.theta)
    assert np.array_equal(plain.A, design.A) and np.array_equal(plain.b, design.b)
    assert np.array_equal(plain.report.std_errors, design.report.std_errors)
    assert plain.report.p_value == design.report.p_value
    assert plain.report.rank == design.report.rank


@settings(max_examples=4)
@given(perm=st.permutations([0, 1, 2]), seed=st.integers(0, 2**16))
def test_permuting_environments_does_not_change_the_estimate(aniso, perm, seed):
    values = (0.5, 1.0, 3.0)
    data = {
        f"e{k}": ou_stationary_samples(OU_M, np.diag([v, 1.0]), 1500 + 100 * k, seed + k)
        for k, v in enumerate(values)
    }
    inputs = {f"e{k}": {"s": v} for k, v in enumerate(values)}
    ref = ds.fit_global(
        aniso, data, inputs=inputs, features=ds.Features(n_features=128, bandwidth=1.5, seed=1)
    )
    keys = [f"e{k}" for k in perm]
    fit = ds.fit_global(
        aniso,
        {k: data[k] for k in keys},
        inputs={k: inputs[k] for k in keys},
        features=ds.Features(n_features=128, bandwidth=1.5, seed=1),
    )
    np.testing.assert_allclose(fit.theta, ref.theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fit.report.std_errors, ref.report.std_errors, rtol=1e-8)


# --------------------------------------------------------------------------- env parameters
def _offset_model():
    """dx = (M x + k e₁) dt + √(2 diag(s, 1)) dW: k unknown per environment, s known."""
    x, y, s, k = sp.symbols("x y s k", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    f = M * sp.Matrix([x, y]) + sp.Matrix([k, 0])
    return ds.SDEModel(
        [x, y], list(M) + [k], list(f), [s, 1], inputs=[s], env_params=[k], name="ou2d_offset"
    )


def test_env_params_one_value_per_environment():
    model = _offset_model()
    ks = {"A": (1.0, 0.7), "B": (3.0, -0.4)}
    data = {}
    for j, (e, (s, k)) in enumerate(ks.items()):
        mu = -np.linalg.solve(OU_M, [k, 0.0])
        data[e] = ou_stationary_samples(OU_M, np.diag([s, 1.0]), 60_000, 40 + j) + mu
    fit = ds.fit_global(
        model, data, inputs={e: {"s": v[0]} for e, v in ks.items()}, features=ds.Features(seed=0)
    )
    assert fit.param_names == ["M11", "M12", "M21", "M22", "k[A]", "k[B]"]
    assert fit.report.rank == 6
    truth = {"M11": -1, "M12": 0.5, "M21": -0.5, "M22": -1, "k": {"A": 0.7, "B": -0.4}}
    tv = fit.design.theta_vector(truth)
    assert np.abs(fit.theta - tv).max() < 0.1
    assert np.all(np.abs(fit.theta - tv) < 4 * fit.report.std_errors)
    df = fit.to_dataframe(truth=truth)
    assert list(df.index) == fit.param_names and df.loc["k[B]", "truth"] == -0.4
    rec = json.loads(fit.to_json())
    assert [p["name"] for p in rec["parameters"]][-2:] == ["k[A]", "k[B]"]
    assert [e["name"] for e in rec["design"]["environments"]] == ["A", "B"]
    assert "k[A]" in fit.summary(truth={**truth, "k[A]": 0.7})


# --------------------------------------------------------------------------- data forms
def test_environment_column_dataframe_and_anndata(aniso):
    pd = pytest.importorskip("pandas")
    data, inputs = _envs("aniso", (3000, 2500))
    ref = ds.fit_global(aniso, data, inputs=inputs, features=ds.Features(n_features=128, seed=0))
    frame = pd.concat(
        [pd.DataFrame(X, columns=["x", "y"]).assign(cond=e) for e, X in data.items()],
        ignore_index=True,
    )
    frame["other"] = 1.0
    fit = ds.fit_global(
        aniso, frame, env_column="cond", inputs=inputs, features=ds.Features(n_features=128, seed=0)
    )
    np.testing.assert_array_equal(fit.theta, ref.theta)
    anndata = pytest.importorskip("anndata")
    adata = anndata.AnnData(
        X=frame[["y", "x"]].to_numpy(),
        obs=pd.DataFrame({"cond": frame["cond"].to_numpy()}, index=[str(i) for i in frame.index]),
        var=pd.DataFrame(index=["y", "x"]),
    )
    fit2 = ds.fit_global(
        aniso, adata, env_column="cond", inputs=inputs, features=ds.Features(n_features=128, seed=0)
    )
    np.testing.assert_array_equal(fit2.theta, ref.theta)
    with pytest.raises(DataError, match="no column 'condition'"):
        ds.fit_global(aniso, frame, env_column="condition", inputs=inputs)


def test_design_input_errors(aniso):
    data, inputs = _envs("aniso", (200, 200))
    with pytest.raises(ModelError, match="has inputs"):
        ds.fit_global(aniso, data)
    with pytest.raises(ModelError, match="no values for environment 's3'"):
        ds.fit_global(aniso, data, inputs={"s1": {"s": 1.0}})
    with pytest.raises(ModelError, match="environment 'z' has no data"):
        ds.fit_global(aniso, data, inputs={**inputs, "z": {"s": 2}})
    with pytest.raises(ModelError, match="one dict per environment"):
        ds.fit_global(aniso, data, inputs={"s": 1.0})
    with pytest.raises(ModelError, match="'u' is not an input"):
        ds.fit_global(aniso, data["s1"], inputs={"u": 1.0})
    with pytest.raises(DataError, match="dlogp_dt"):
        ds.fit_global(aniso, data, inputs=inputs, dlogp_dt=np.zeros(200))
    with pytest.raises(ModelError, match="declares no inputs"):
        ds.fit_global(ds.load_model("models/ou2d.py"), data["s1"], inputs={"s": 1.0})
    # an input value at which D is not positive semi-definite: the environment, the model and
    # the values (was only "diffusion D is not positive semi-definite (eigenvalue -1)")
    bad = {**inputs, "s3": {"s": -1.0}}
    with pytest.raises(
        ModelError,
        match=r"^environment 's3': model 'ou2d_aniso' at inputs s = -1: diffusion D is not "
        r"positive semi-definite \(eigenvalue -1\)$",
    ):
        ds.fit_global(aniso, data, inputs=bad)
    with pytest.raises(ModelError, match=r"^model 'ou2d_aniso' at inputs s = -1: diffusion D"):
        ds.fit_global(aniso, data["s1"], inputs={"s": -1.0})
    with pytest.raises(ModelError, match=r"^environment 'B': model 'ou2d_aniso' at inputs s = -2"):
        ds.check_identifiability(
            aniso,
            experiment=ds.Experiment(inputs={"A": {"s": 1.0}, "B": {"s": -2.0}}),
            simulate=False,
        )


# --------------------------------------------------------------------------- time courses
def test_time_course_recovers_all_of_M():
    """Nine snapshots × 20,000 exact transient-OU samples, Δt = 0.2 (the issue's case), both
    quadrature orders; order 4 is calibrated and the trapezoid's bias shows in the check."""
    model = ds.load_model("models/ou2d.py")
    tc = ds.TimeCourse(ou_time_course(np.arange(9) * 0.2, 20_000, seed=5))
    fits = {
        p: ds.fit_global(model, tc, order=p, features=ds.Features(n_features=512, seed=0))
        for p in (2, 4)
    }
    for p, fit in fits.items():
        assert fit.report.rank == 4
        assert np.abs(fit.theta - NOMINAL).max() < 0.06, p
    f4 = fits[4]
    assert np.all(np.abs(f4.theta - NOMINAL) < 4 * f4.report.std_errors)
    assert f4.design.environments[0]["order"] == 4 and f4.report.n_groups == 9
    q = f4.design.quadrature
    np.testing.assert_allclose(q["theta_trapezoid"], fits[2].theta, rtol=1e-10)
    assert q["max_z"] > 1.0 and "quadrature check" in f4.summary()
    assert fits[2].design.quadrature is None


def test_time_course_uneven_spacing_and_mixed_design():
    """Uneven times in one environment, a stationary second environment (another noise level)."""
    x, y, s = sp.symbols("x y s", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    model = ds.SDEModel([x, y], M, list(M * sp.Matrix([x, y])), [s, 1], inputs=[s], name="ou2s")
    times = [0.0, 0.05, 0.12, 0.22, 0.36, 0.56, 0.84, 1.2, 1.6]
    tc = ds.TimeCourse(ou_time_course(times, 15_000, seed=9))
    fit = ds.fit_global(model, tc, inputs={"s": 1.0}, features=ds.Features(n_features=512, seed=1))
    assert fit.report.rank == 4 and np.abs(fit.theta - NOMINAL).max() < 0.06
    stat = ou_stationary_samples(OU_M, np.diag([3.0, 1.0]), 50_000, 10)
    mixed = ds.fit_global(
        model,
        {"course": tc, "steady": stat},
        inputs={"course": {"s": 1.0}, "steady": {"s": 3.0}},
        features=ds.Features(n_features=512, seed=1),
    )
    assert mixed.report.rank == 4 and np.abs(mixed.theta - NOMINAL).max() < 0.06
    assert mixed.report.n_groups == len(times) + 1
    assert set(mixed.design.residuals) == {"course", "steady"}


@pytest.mark.slow
def test_acceptance_time_course_full_features():
    """Nine snapshots × 20,000 at Δt = 0.2 with the default m = 2048: max |error| < 0.06."""
    model = ds.load_model("models/ou2d.py")
    tc = ds.TimeCourse(ou_time_course(np.arange(9) * 0.2, 20_000, seed=21))
    fit = ds.fit_global(model, tc, features=ds.Features(seed=0))
    assert fit.report.rank == 4 and np.abs(fit.theta - NOMINAL).max() < 0.06


def test_time_course_from_a_time_column():
    pd = pytest.importorskip("pandas")
    model = ds.load_model("models/ou2d.py")
    snaps = ou_time_course([0.0, 0.3, 0.6, 0.9], 2000, seed=2)
    ref = ds.fit_global(model, ds.TimeCourse(snaps), features=ds.Features(n_features=128, seed=0))
    frame = pd.concat(
        [
            pd.DataFrame(X, columns=["x", "y"]).assign(hours=t, order=np.arange(len(X)))
            for t, X in snaps.items()
        ]
    )
    # times interleaved row by row (each time keeps its own row order)
    frame = frame.sort_values(["order", "hours"], kind="stable")
    fit = ds.fit_global(
        model, frame, time_column="hours", features=ds.Features(n_features=128, seed=0)
    )
    np.testing.assert_array_equal(fit.theta, ref.theta)


def test_time_course_validation():
    with pytest.raises(DataError, match="at least 2"):
        ds.TimeCourse({0.0: np.zeros((5, 2))})
    with pytest.raises(DataError, match="not finite"):
        ds.TimeCourse({0.0: np.zeros((5, 2)), np.inf: np.zeros((5, 2))})
    with pytest.raises(
        DataError, match=r"^TimeCourse: time 'a': holds text: 'a'; numbers are expected"
    ):
        ds.TimeCourse({"a": np.zeros((5, 2)), 1.0: np.zeros((5, 2))})
    tc = ds.TimeCourse({0.4: 1, 0.1: 2, 0.2: 3})
    assert tc.times.tolist() == [0.1, 0.2, 0.4] and tc.snapshots == [2, 3, 1]


# --------------------------------------------------------------------------- state-dependent D
def test_state_dependent_diffusion_environments():
    """1-D: dx = (−a x + k)dt + √(2 s (1 + x²)) dW, k per environment, s known.

    Stationary density p ∝ (1 + x²)^(−1 − a/(2s)) exp((k/s) atan x) (zero flux), sampled by
    inverse CDF; both environments share a."""
    x, a, k, s = sp.symbols("x a k s", real=True)
    model = ds.SDEModel(
        [x], [a, k], [-a * x + k], s * (1 + x**2), inputs=[s], env_params=[k], name="sdd1"
    )
    truth = {"A": (0.5, 1.0), "B": (1.5, -0.5)}  # (s, k)
    a0 = 2.0
    data = {}
    for j, (e, (sv, kv)) in enumerate(truth.items()):

        def logp(xx, sv=sv, kv=kv):
            return (-1 - a0 / (2 * sv)) * np.log1p(xx * xx) + (kv / sv) * np.arctan(xx)

        data[e] = density_samples_1d(logp, 80_000, 50 + j, lo=-30, hi=30)
    fit = ds.fit_global(
        model, data, inputs={e: {"s": v[0]} for e, v in truth.items()}, features=ds.Features(seed=0)
    )
    assert fit.param_names == ["a", "k[A]", "k[B]"] and fit.report.rank == 3
    tv = np.array([a0, 1.0, -0.5])
    assert np.all(np.abs(fit.theta - tv) < 4 * fit.report.std_errors + 0.02)
    assert fit.report.p_value > 1e-3
