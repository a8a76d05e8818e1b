"""Identifiability of designs before data (issue 16): structural verdicts (exact Lyapunov laws per
environment, Gaussian laws at snapshot times), the simulated check with exact samplers, and design
advice."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from conftest import OU_START, ou_noise_sampler, ou_stationary_samples

import dynosed_sym as ds
from dynosed_sym.data.designs import as_design
from dynosed_sym.errors import DataError, ModelError
from dynosed_sym.identifiability.designs_structural import design_structural, env_thetas
from dynosed_sym.routes.designs import environment_models


def _structural(model, inputs, times=None, initial=None, nominal=None):
    from dynosed_sym.identifiability.designs import design_spec

    design = design_spec(model, inputs, times)
    thetas = env_thetas(model, nominal, design.names)
    models = {e: m for e, (m, _) in environment_models(model, design).items()}
    init = {e: initial for e in design.names}
    return design_structural(model, design, thetas, models, init)


def test_structural_rank_of_noise_designs(aniso, iso):
    one = _structural(aniso, {"s": 1.0})
    assert (one.rank, one.certificate) == (3, "exact")
    assert [str(c) for c in one.combinations] == ["M12 − M21"]
    two = _structural(aniso, {"A": {"s": 1.0}, "B": {"s": 3.0}})
    assert (two.rank, two.certificate) == (4, "exact")
    assert two.per_env_rank == {"A": 3, "B": 3}
    flat = _structural(iso, {"A": {"s": 1.0}, "B": {"s": 3.0}})
    assert flat.rank == 3 and [str(c) for c in flat.combinations] == ["M12 − M21"]


def test_structural_known_forcing_and_env_params():
    x, y, u, k, s = sp.symbols("x y u k s", real=True)
    M = sp.Matrix(2, 2, sp.symbols("M11 M12 M21 M22", real=True))
    nominal = {"M11": -1, "M12": 0.5, "M21": -0.5, "M22": -1}
    forced = ds.SDEModel(
        [x, y],
        M,
        list(M * sp.Matrix([x, y]) + sp.Matrix([u, 0])),
        1,
        inputs=[u],
        nominal=nominal,
        name="ou_forced",
    )
    # a known forcing u ≠ 0 moves the mean: δM μ_u = 0 forces δM = 0 (one environment suffices)
    assert _structural(forced, {"u": 1.0}).rank == 4
    assert _structural(forced, {"u": 0.0}).rank == 3
    offset = ds.SDEModel(
        [x, y],
        list(M) + [k],
        list(M * sp.Matrix([x, y]) + sp.Matrix([k, 0])),
        [s, 1],
        inputs=[s],
        env_params=[k],
        name="ou_offset",
        nominal={**nominal, "k": 0.5},
    )
    rep = _structural(offset, {"A": {"s": 1.0}, "B": {"s": 3.0}})
    assert rep.param_names[-2:] == ["k[A]", "k[B]"] and (rep.rank, rep.n_params) == (6, 6)


def test_structural_time_courses(models):
    model = models["ou2d"]
    moving = _structural(model, None, times=[0.0, 0.4, 0.8], initial=OU_START)
    assert (moving.rank, moving.certificate) == (4, "numerical")
    # a rotation-invariant start: every law is rotation-invariant, the rotation stays free
    centred = _structural(
        model, None, times=[0.0, 0.4, 0.8], initial=(np.zeros(2), 0.3 * np.eye(2))
    )
    assert centred.rank == 3
    v = centred.null_vectors[:, 0]
    np.testing.assert_allclose(np.abs(v), [0, np.sqrt(0.5), np.sqrt(0.5), 0], atol=1e-6)


def test_pre_data_check_of_two_noise_environments(aniso):
    """The issue's design: structural rank 4 (exact) and rank 4 simulated at 2 × 100,000."""
    check = ds.check_identifiability(
        aniso,
        experiment=ds.Experiment(inputs={"A": {"s": 1.0}, "B": {"s": 3.0}}),
        study=ds.Study(sampler=ou_noise_sampler("aniso"), n_samples=100_000),
        features=ds.Features(n_features=1024),
    )
    assert check.structural.rank == 4 and check.structural.certificate == "exact"
    assert check.rank == 4 and check.unique and check.advice == []
    assert all(v == "resolved" for v in check.direction_verdict)
    text = str(check)
    assert "structural check of the design (exact" in text and "rank 4 of 4" in text
    rec = check.to_dict()
    assert rec["rank"] == 4 and rec["structural"]["per_env_rank"] == {"A": 3, "B": 3}


def test_unsimulated_design_check_reports_the_structural_null_space(aniso):
    """Without the simulated study the verdict is the structural one: the free combination of a
    single noise environment (M12 − M21, as in test_structural_rank_of_noise_designs)."""
    experiment = ds.Experiment(inputs={"A": {"s": 1.0}})
    check = ds.check_identifiability(aniso, experiment=experiment, simulate=False)
    assert check.report is None and check.rank == 3 and not check.unique
    assert [str(c) for c in check.null_space] == ["M12 − M21"] == check.to_dict()["null_space"]


@pytest.mark.parametrize(
    "N, text",
    [(999, "999"), (1000, "1k"), (12_345, "12.3k"), (2.5e6, "2.5M"), (3e9, "3G"), (np.inf, "∞")],
)
def test_short_count(N, text):
    from dynosed_sym.identifiability.designs import short_count

    assert short_count(N) == text


def test_advice_names_a_resolving_environment(aniso):
    sampler = ou_noise_sampler("aniso")
    check = ds.check_identifiability(
        aniso,
        experiment=ds.Experiment(inputs={"s": 1.0}),
        study=ds.Study(sampler=sampler, n_samples=50_000),
        features=ds.Features(n_features=1024),
    )
    assert check.rank == 3 and check.direction_verdict[-1] == "unconstrained"
    env = [a for a in check.advice if a.kind == "environment"]
    assert {a.inputs["s"] for a in env} == {0.1, 0.3, 3.0, 10.0}
    good = [a for a in env if a.resolves == 1]
    assert len(good) == 4 and all(a.extra["structural"] == (4, 4) for a in good)
    best = env[0]
    assert best.resolves == 1 and np.isfinite(best.n_needed) and best.recommended >= 1000
    assert f"→ add an environment with s = {best.inputs['s']:g}" in str(check)
    # following the advice: the recommended number of samples in that environment resolves it
    X = {
        "now": ou_stationary_samples(check.nominal.reshape(2, 2), np.eye(2), 50_000, 99),
        "new": ou_stationary_samples(
            check.nominal.reshape(2, 2),
            np.diag([best.inputs["s"], 1.0]),
            int(best.recommended),
            98,
        ),
    }
    fit = ds.fit_global(
        aniso,
        X,
        inputs={"now": {"s": 1.0}, "new": best.inputs},
        features=ds.Features(n_features=1024, seed=0),
    )
    assert fit.report.rank == 4


def test_advice_says_no_scalar_noise_scale_resolves_the_rotation(iso):
    check = ds.check_identifiability(
        iso,
        experiment=ds.Experiment(inputs={"s": 1.0}),
        study=ds.Study(sampler=ou_noise_sampler("iso"), n_samples=50_000),
        features=ds.Features(n_features=1024),
    )
    env = [a for a in check.advice if a.kind == "environment"]
    assert env and all(a.resolves == 0 for a in env)
    assert all(a.extra["structural"] == (3, 4) for a in env)
    assert "no candidate resolves" in str(check)


def test_time_course_design_check_and_time_advice(models):
    model = models["ou2d"]
    check = ds.check_identifiability(
        model,
        experiment=ds.Experiment(
            times=[0.0, 0.8, 1.6], initial=OU_START, candidate_times=[0.2, 0.4]
        ),
        study=ds.Study(sampler=ou_noise_sampler_fixed_noise(), n_samples=20_000),
        features=ds.Features(n_features=256),
    )
    assert check.structural.rank == 4 and check.rank == 4
    times = [a for a in check.advice if a.kind == "time"]
    assert [a.time for a in times if a.time is not None] and any(a.time is None for a in times)
    cur = next(a for a in times if a.time is None)
    best = min((a for a in times if a.time is not None), key=lambda a: a.score)
    # a snapshot early in the fast transient lowers the quadrature bias of the sparse design
    assert best.score < cur.score and "add a snapshot at t =" in str(check)


def test_time_course_design_check_with_the_compiled_simulator(models):
    """Without a sampler= the snapshots at each time come from the compiled simulator; its
    sampler asked simulate_time_course for one time, whose TimeCourse needs two, so every such
    check raised "TimeCourse: 1 snapshot(s); a time course needs at least 2 times"."""
    check = ds.check_identifiability(
        models["ou2d"],
        experiment=ds.Experiment(times=[0.0, 0.5, 1.0], initial=OU_START, advise=False),
        study=ds.Study(n_samples=400),
        features=ds.Features(n_features=64),
    )
    assert check.n_samples == 400 and check.report is not None
    assert "chains from the initial law" in str(check)


def ou_noise_sampler_fixed_noise():
    base = ou_noise_sampler("aniso")

    def sample(inputs, theta, n, seed, time=None, initial=None):
        return base({"s": 1.0}, theta, n, seed, time, initial)

    return sample


def test_design_check_errors(aniso, models):
    with pytest.raises(ModelError, match="has inputs"):
        ds.check_identifiability(aniso, simulate=False)
    with pytest.raises(DataError, match="needs initial="):
        ds.check_identifiability(models["ou2d"], experiment=ds.Experiment(times=[0, 1]))
    with pytest.raises(DataError, match="at least 2"):
        ds.check_identifiability(
            models["ou2d"], experiment=ds.Experiment(times=[0.5], initial=OU_START)
        )
    with pytest.raises(ds.DynosedError, match="initial= is the law at t = 0"):
        ds.check_identifiability(models["ou2d"], experiment=ds.Experiment(initial=OU_START))


def test_design_check_messages_name_the_users_model_and_the_environment(aniso):
    """An environment's model is the user's at its inputs: its error named a generated model
    'ou2d_aniso_u6c3c396e' (a digest of the values), and not the environment."""
    unstable = {"M11": 0.5, "M12": 0.5, "M21": -0.5, "M22": -1.0}  # (x grows: no stationary law)
    with pytest.raises(
        ds.StationarityError,
        match=r"^environment 'A', inputs s = 1: simulate: the chains of model 'ou2d_aniso' at "
        r"these parameters: diverging",
    ):
        ds.check_identifiability(
            aniso,
            unstable,
            experiment=ds.Experiment(inputs={"A": {"s": 1.0}, "B": {"s": 3.0}}, advise=False),
            study=ds.Study(n_samples=500),
        )
    assert aniso.with_inputs({"s": 2.0}).name == "ou2d_aniso"


@pytest.mark.parametrize(
    "initial, message",
    [
        (
            (np.zeros(3), np.eye(3)),
            r"initial: expected \(mean \(2,\), covariance \(2, 2\)\).*\(3,\)",
        ),
        ((np.zeros(2), np.eye(3)), r"got shapes \(2,\) and \(3, 3\)"),
        ((np.zeros(2), np.full((2, 2), np.nan)), "mean or covariance not finite"),
        (np.zeros((5, 3)), r"samples \(N, 2\), got \(5, 3\)"),
    ],
)
def test_design_check_names_an_unusable_initial_law(models, initial, message):
    """Experiment(initial=...) is checked before the structural check computes the law at each
    time from it: a mean of the wrong length was NumPy's "matmul: Input operand 1 has a mismatch
    in its core dimension", a NaN covariance "SVD did not converge"."""
    with pytest.raises(DataError, match=message):
        ds.check_identifiability(
            models["ou2d"],
            experiment=ds.Experiment(times=[0.0, 0.5, 1.0], initial=initial),
            simulate=False,
        )


def test_env_thetas_per_environment_values():
    x, k = sp.symbols("x k", real=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a, k], [-a * x + k], 1, env_params=[k], nominal=[1.0, 0.0])
    design = as_design({"A": np.zeros((2, 1)), "B": np.zeros((2, 1))}, model)
    th = env_thetas(model, {"a": 2.0, "k": {"A": 1.0, "B": -1.0}}, design.names)
    assert th["A"].tolist() == [2.0, 1.0] and th["B"].tolist() == [2.0, -1.0]
    th = env_thetas(model, {"a": 2.0, "k[B]": 3.0, "k": 0.5}, design.names)
    assert th["A"].tolist() == [2.0, 0.5] and th["B"].tolist() == [2.0, 3.0]
