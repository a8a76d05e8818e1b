"""Bad arguments and degenerate models give a DynosedError naming the culprit, never a NaN
or a traceback from inside a kernel (review findings on the compiler spine)."""

import pickle

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds

x, y = sp.symbols("x y", real=True)
a, b, c = sp.symbols("a b c", real=True)


@pytest.fixture(scope="module")
def lorenz_data(models):
    model = models["lorenz"]
    return model, ds.simulate(model, model.nominal, 400, seed=2)


@pytest.mark.parametrize(
    "kw, word",
    [
        (dict(n_samples="abc"), "n_samples"),
        (dict(n_samples=2.5), "n_samples"),
        (dict(n_samples=10, dt=None), "dt"),
        (dict(n_samples=10, dt="0.01"), "dt"),
        (dict(n_samples=10, dt=-1.0), "dt"),
        (dict(n_samples=10, thin=2.7), "thin"),
        (dict(n_samples=10, burn_in=-1), "burn_in"),
        (dict(n_samples=10, n_chains=0), "n_chains"),
        (dict(n_samples=10, seed=-1), "seed"),
        (dict(n_samples=10, seed=1.5), "seed"),
        (dict(n_samples=10, x0=[np.nan, 0.0, 0.0]), "x0"),
        (dict(n_samples=10, x0=[0.0, 0.0]), "x0"),
    ],
)
def test_simulate_bad_arguments(models, kw, word):
    model = models["lorenz"]
    n = kw.pop("n_samples")
    with pytest.raises(ds.DataError, match=word):
        ds.simulate(model, model.nominal, n, **kw)


def test_lambda_zero_with_an_unconstrained_parameter():
    """A parameter absent from the drift: λ = 0 gives a finite θ̂ and infinite freeness."""
    model = ds.SDEModel([x], [a, b], [-a * x], diffusion=1, name="absent_param")
    X = np.random.default_rng(0).normal(0.0, np.sqrt(0.5), (4000, 1))  # exact law for a = 2
    fit = ds.fit_global(model, X, features=ds.Features(n_features=256), solver=ds.Solver(lam=0.0))
    assert np.isfinite(fit.theta).all()
    assert fit.theta[1] == 0.0  # minimum-norm component along the dead direction
    assert abs(fit.theta[0] - 2.0) < 0.2
    assert np.isinf(fit.report.freeness[1]) and np.isfinite(fit.report.freeness[0])
    assert fit.report.free_params == ["b"]
    assert fit.report.freeness_normalised[1] == 1.0


def test_zero_diffusion_is_refused_at_declaration():
    """D ≡ 0 (diffusion=0, a zero matrix, an expression that simplifies to 0, or noise G = 0)
    is a ModelError: snapshots of a deterministic system carry no information about f."""
    for kw in (
        {"diffusion": 0},
        {"diffusion": [0, 0.0]},
        {"diffusion": sp.zeros(2, 2)},
        {"diffusion": sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1},
        {"noise": sp.zeros(2, 1)},
    ):
        with pytest.raises(ds.ModelError, match="identically zero.*no information"):
            ds.SDEModel([x, y], [a], [-a * x, -y], name="no_noise", **kw)
    # noise in one coordinate only (degenerate, not zero) is a valid model
    ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=[0, 1], name="half_noise")


def test_tiny_bandwidth_is_a_data_error(lorenz_data):
    model, X = lorenz_data
    with pytest.raises(ds.DataError, match="bandwidth"):
        ds.fit_global(model, X, features=ds.Features(bandwidth=1e-300))


def test_compiled_model_checks_shapes(compiled, models):
    cm, model = compiled["lorenz"], models["lorenz"]
    with pytest.raises(ds.DataError, match=r"X: expected shape \(N, 3\)"):
        cm.drift(np.zeros((4, 2)), model.nominal)
    with pytest.raises(ds.DataError, match="X"):
        cm.stein_features(np.zeros(3))
    with pytest.raises(ds.ModelError, match="theta"):
        cm.drift(np.zeros((4, 3)), [1.0])


def test_model_is_immutable_and_pickles_without_caches(models):
    model = models["lorenz"]
    model.derivation  # noqa: B018 - fill the cache
    ds.compile_model(model)
    with pytest.raises(ds.ModelError, match="immutable"):
        model.name = "other"
    with pytest.raises(ValueError):
        model.nominal[0] = 1.0
    clone = pickle.loads(pickle.dumps(model))
    assert "_spec_hash" not in clone.__dict__ and "derivation" not in clone.__dict__
    assert ds.compile_model(clone).path == ds.compile_model(model).path


def test_report_without_noise_blocks_leaves_consistency_unknown(models):
    model = models["ou2d_m12"]
    X = np.random.default_rng(3).normal(size=(6, 2))
    fit = ds.fit_global(model, X, features=ds.Features(n_features=64))
    assert fit.report.consistent is None
    assert any("too few data blocks" in note for note in fit.report.notes)
