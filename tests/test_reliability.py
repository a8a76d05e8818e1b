"""Reliability (issues 9 and 22): every bad input gives a DynosedError naming the problem, never
a NaN, a silently wrong number or a traceback from inside a kernel; same seed ⇒ same result
whatever the run, the number of threads and the chunking of the data.

One test (or parametrised case) per row of the tables in docs/reliability.md.
Cache robustness is in tests/codegen/test_caches.py and tests/codegen/test_trust.py, random models
and inputs (also every dtype and scale) in tests/test_fuzz.py, the command line's input files in
tests/apps/test_cli_inputs.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import warnings

import numba
import numpy as np
import pandas as pd
import pytest
import sympy as sp

import dynosed_sym as ds
from dynosed_sym.assembly.features import MAX_FEATURE_TURNS, feature_arguments
from dynosed_sym.data.checks import diffusion_psd

x, y, t = sp.symbols("x y t", real=True)
a, b = sp.symbols("a b", real=True)


@pytest.fixture(scope="module")
def lorenz(models):
    model = models["lorenz"]
    return model, ds.simulate(model, model.nominal, 2000, seed=5)


@pytest.fixture(scope="module")
def statediff(tmp_path_factory):
    """A compiled 2-D model with state-dependent D(x) = ½(1 + x²) on the diagonal."""
    m = ds.SDEModel(
        [x, y],
        [a],
        [-a * x, -y],
        diffusion=[(1 + x**2) / 2, sp.Rational(1, 2)],
        name="rel_statediff",
    )
    out = str(tmp_path_factory.mktemp("rel_statediff"))
    ds.compile_model(m, out)
    return m, out


def fits(model, X, features=None, scores=None, execution=None):
    """Every entry point that reads samples, as (label, call); ``features`` and ``scores`` default
    to 64 random features and the kernel score at T = 1."""
    probes = (
        np.asarray(ds.simulate(model, model.nominal, 5, seed=9)) if model.name == "lorenz" else None
    )
    return {
        "fit_global": lambda: ds.fit_global(
            model, X, features=features or ds.Features(n_features=64), execution=execution
        ),
        "fit_local": lambda: ds.fit_local(
            model, X, probes, scores=scores or ds.Scores(temperature=1.0), execution=execution
        ),
    }


# ============================================================================ bad data
@pytest.mark.parametrize("entry", ["fit_global", "fit_local"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_rows_are_named(lorenz, entry, bad):
    model, X = lorenz
    Xb = X.copy()
    Xb[[17, 1234], [1, 2]] = bad
    with pytest.raises(ds.DataError, match=r"X: 2 row\(s\) contain NaN or inf \(rows 17, 1234\)"):
        fits(model, Xb)[entry]()


@pytest.mark.parametrize("entry", ["fit_global", "fit_local"])
def test_nan_in_a_stream_names_the_global_row(lorenz, entry, tmp_path):
    model, X = lorenz
    Xb = X.copy()
    Xb[1500, 0] = np.nan
    path = tmp_path / "X.npy"
    np.save(path, Xb)
    with pytest.raises(ds.DataError, match=r"rows 1500\b"):
        fits(model, str(path), execution=ds.Execution(chunk_rows=256))[entry]()
    chunks = (Xb[i : i + 300] for i in range(0, len(Xb), 300))
    with pytest.raises(ds.DataError, match=r"chunk starting at row 1500\).*rows 1500\b"):
        fits(model, chunks)[entry]()


@pytest.mark.parametrize("entry", ["fit_global", "fit_local"])
@pytest.mark.parametrize(
    "shape, gist",
    [((100, 2), "has 2 columns"), ((100, 4), "has 4 columns"), ((300,), "2-D"), ((5, 3, 2), "2-D")],
)
def test_wrong_shape(lorenz, entry, shape, gist):
    model, _ = lorenz
    with pytest.raises(ds.DataError, match=gist):
        fits(model, np.ones(shape))[entry]()


@pytest.mark.parametrize("entry", ["fit_global", "fit_local"])
def test_dataframe_missing_a_state_column(lorenz, entry):
    model, X = lorenz
    df = pd.DataFrame(X, columns=["x", "y", "zz"])
    with pytest.raises(ds.DataError, match="no column 'z' for state variable 'z'"):
        fits(model, df)[entry]()
    with pytest.raises(ds.DataError, match="no column 'z'"):  # a stream of DataFrames
        fits(model, iter([df.iloc[:1000], df.iloc[1000:]]))[entry]()


def test_too_few_samples(lorenz):
    model, X = lorenz
    with pytest.raises(ds.DataError, match="1 sample.*at least 2"):
        ds.fit_global(model, X[:1], features=ds.Features(n_features=64))
    with pytest.raises(ds.DataError, match="0 sample"):
        ds.fit_global(model, X[:0], features=ds.Features(n_features=64))
    with pytest.raises(ds.DataError, match="effective data point"):  # kernel score at a probe
        ds.fit_local(model, X[:1], X[:3], scores=ds.Scores(temperature=49.0))
    with pytest.raises(ds.DataError, match="holds .* data point"):  # score matching in a ball
        ds.fit_local(model, X[:30], ds.Balls(X[:2], 0.5), scores=ds.Scores(score="score_matching"))
    with pytest.raises(ds.DataError, match="n_samples"):
        ds.check_identifiability(model, study=ds.Study(n_samples=3))


@pytest.mark.parametrize(
    "entry, kw",
    [
        ("fit_global", {}),
        ("fit_global", {"features": ds.Features(n_features=64, bandwidth=1.0)}),
        ("fit_local", {}),
        (
            "fit_local",
            {"scores": ds.Scores(score="score_matching", radius=2.0, temperature=1.0)},
        ),
    ],
)
def test_all_samples_identical(lorenz, entry, kw):
    model, _ = lorenz
    same = np.tile([1.0, 2.0, 3.0], (50, 1))
    with pytest.raises(ds.DataError, match="all 50 samples are the same point"):
        fits(model, same, **kw)[entry]()


def test_identical_first_rows_of_a_stream(lorenz, monkeypatch):
    """A stream whose first (bandwidth) rows are one point is judged on all its rows: with a
    given bandwidth it is fitted; with the median bandwidth (taken from those rows) the error
    says "the first N samples"; a stream that is one point throughout is rejected."""
    from dynosed_sym.routes import global_route

    model, X = lorenz
    monkeypatch.setattr(global_route, "BANDWIDTH_ROWS", 50)
    same = np.tile(X[0], (100, 1))
    fit = ds.fit_global(
        model,
        iter([same, X[:500]]),
        features=ds.Features(n_features=64, bandwidth=5.0),
        execution=ds.Execution(chunk_rows=64),
    )
    assert fit.n_samples == 600 and np.isfinite(fit.theta).all()
    with pytest.raises(ds.DataError, match="the first 50 samples are the same point .*bandwidth="):
        ds.fit_global(
            model,
            iter([same, X[:500]]),
            features=ds.Features(n_features=64),
            execution=ds.Execution(chunk_rows=64),
        )
    with pytest.raises(ds.DataError, match="all 200 samples are the same point"):
        ds.fit_global(
            model,
            iter([same, same]),
            features=ds.Features(n_features=64, bandwidth=5.0),
            execution=ds.Execution(chunk_rows=64),
        )
    dask_array = pytest.importorskip("dask.array")  # on workers: the rest is looked at here first
    with pytest.raises(ds.DataError, match="all 200 samples are the same point"):
        ds.fit_global(
            model,
            dask_array.from_array(np.vstack([same, same]), chunks=64),
            features=ds.Features(n_features=64, bandwidth=5.0),
            execution=ds.Execution(backend="dask"),
        )


def test_identical_samples_are_fine_for_a_callable_score(models):
    """A callable score need not read X: identical rows are not an error there."""
    model = models["ou2d_m12"]
    exact = lambda X, P: (-P, np.broadcast_to(-np.eye(2), (P.shape[0], 2, 2)))  # noqa: E731
    fit = ds.fit_local(
        model, np.zeros((64, 2)), np.array([[1.0, 2.0], [0.5, -1.0]]), scores=ds.Scores(score=exact)
    )
    assert abs(fit.theta[0] - 0.5) < 1e-5


def test_drift_overflow_is_detected(lorenz):
    """x·z overflows at 1e200: a DataError naming the sample, not a NaN θ."""
    model, X = lorenz
    with pytest.raises(ds.DataError, match="overflow"):
        ds.fit_global(model, X * 1e200, features=ds.Features(n_features=64, bandwidth=1e200))
    with pytest.raises(ds.DataError, match=r"spread over a scale of [\d.]+e\+20\d .* overflow"):
        ds.fit_global(model, X * 1e200, features=ds.Features(n_features=64))


#: "X: value … in column 'x', row 13, is too large for model 'limit_cycle': its term x**3 …"
_CUBE_OVERFLOWS = (
    r"^{name}: value {v} in column 'x', {label} {row}, is too large for model 'limit_cycle': "
    r"its term x\*\*3 would be about 1e{e} there, beyond double precision, and the features "
    r"overflow \(1 {label}\(s\) affected\); rescale the state variables"
)


@pytest.mark.parametrize("bandwidth", [1e300, "median", 1.0])
def test_a_value_whose_cube_overflows_is_named(models, bandwidth):
    """Regression (test_fuzz.py::test_entry_points_on_hostile_and_valid_input, limit_cycle,
    global route, bandwidth=1e300): one recording error of 1e300 in row 13 gave "a Stein
    feature (drift term) is not finite at sample 13" after assembly (and, with the median
    bandwidth, a message about sin/cos precision).  The cause is that the drift's x³ overflows
    there (10⁹⁰⁰ > 1.8·10³⁰⁸): refused before assembly, naming the value, row, column and
    term, whatever the bandwidth."""
    model = models["limit_cycle"]
    X = np.random.default_rng(1).standard_normal((40, 2))
    X[13, 0] = 1e300
    pattern = _CUBE_OVERFLOWS.format(name="X", v=r"1e\+300", label="row", row=13, e=900)
    with pytest.raises(ds.DataError, match=pattern):
        ds.fit_global(model, X, features=ds.Features(n_features=64, bandwidth=bandwidth))
    # streamed: the global row; 10¹⁰³ is just beyond the cube root of the largest double
    # (5.6·10¹⁰²), 10¹⁰² just within it (that row then fails the sin/cos bound instead)
    X[13, 0], X[31, 0] = 0.5, -1e103
    chunks = (X[i : i + 8] for i in range(0, 40, 8))
    pattern = _CUBE_OVERFLOWS.format(name="X", v=r"-1e\+103", label="row", row=31, e=309)
    with pytest.raises(ds.DataError, match=pattern):
        ds.fit_global(model, chunks, features=ds.Features(n_features=64, bandwidth=1.0))
    X[31, 0] = -1e102
    with pytest.raises(ds.DataError, match=r"lose all precision \(row 31,"):
        ds.fit_global(model, X, features=ds.Features(n_features=64, bandwidth=1.0))


def test_a_probe_whose_cube_overflows_is_named(models):
    """The local route evaluates the model at its probes, not at the samples: the same check
    and message there (a far sample carries no kernel weight at the probes and is no error)."""
    model = models["limit_cycle"]
    X = np.random.default_rng(1).standard_normal((200, 2))
    P = np.array([[0.5, 0.0], [1e200, 0.3], [0.0, -0.5]])
    pattern = _CUBE_OVERFLOWS.format(name="probes", v=r"1e\+200", label="probe", row=1, e=600)
    with pytest.raises(ds.DataError, match=pattern):
        ds.fit_local(model, X, P, scores=ds.Scores(score="kernel", temperature=4.0))


def test_state_overflow_bound_matches_the_evaluated_terms(models):
    """The bound of data.checks.state_overflow against the terms evaluated in NumPy: for
    each model in models/ and rows at 10^k (k = 0 … 300), a row is refused exactly when one of
    the model's drift or D terms, evaluated at it with every parameter set to 1, is not finite
    (a parameter-free product of the state: the bound is exact for monomials)."""
    from dynosed_sym.data.checks import state_overflow

    for name, model in models.items():
        ones = {p: 1 for p in model.params}
        terms = [
            sp.lambdify(model.state, term.xreplace(ones), "numpy")
            for expr in [*model.drift, *model.D]
            for term in sp.Add.make_args(sp.expand(expr))
            if term.free_symbols & set(model.state)
        ]
        for k in range(0, 301, 3):
            row = np.full((1, model.d), 10.0**k)
            with np.errstate(all="ignore"):
                finite = all(np.isfinite(float(f(*row[0]))) for f in terms)
            try:
                state_overflow(model, row)
                refused = False
            except ds.DataError:
                refused = True
            assert refused == (not finite), (name, k)


def test_system_too_large_for_the_report(lorenz):
    """Finite but enormous entries (1e150): the solve and the noise analysis would overflow."""
    model, X = lorenz
    with pytest.raises(ds.DataError, match="entries of size .*e\\+1"):
        ds.fit_global(model, X * 1e150, features=ds.Features(n_features=64))


def test_sin_cos_precision_loss_is_detected(lorenz):
    """Data 10¹² away from the origin with a spread of 10: sin/cos of ωᵀx would be noise.

    The fit used to return θ̂ ≈ 10¹² silently; the bound names the first offending row.
    """
    model, X = lorenz
    far = X + 1e12
    with pytest.raises(ds.DataError, match=r"lose all precision \(row 0"):
        ds.fit_global(model, far, features=ds.Features(n_features=64))
    Xs = X.copy()
    Xs[1700:] += 1e12  # only late rows of a stream: named by their global index
    chunks = (Xs[i : i + 250] for i in range(0, len(Xs), 250))
    with pytest.raises(ds.DataError, match=r"row\(s\) lie so far.*\(row 1700,"):
        ds.fit_global(model, chunks, features=ds.Features(n_features=64, bandwidth=10.0))


def test_feature_bound_accepts_ordinary_data(lorenz):
    """The precision bound does not trip on ordinary data (far below its limit)."""
    from dynosed_sym.assembly.features import draw_features

    _, X = lorenz
    feats = draw_features(3, 2048, 1.0, seed=0)
    feature_arguments(X * 1e3, feats)  # ‖x‖/ℓ ≈ 5·10⁴, still < 10⁶
    w = np.sqrt((feats.omega**2).sum(axis=1)).max()
    edge = MAX_FEATURE_TURNS * 2 * np.pi / w
    feature_arguments(np.array([[0.99 * edge - 2 * np.pi / w, 0, 0]]), feats)
    with pytest.raises(ds.DataError):
        feature_arguments(np.array([[1.01 * edge, 0, 0]]), feats)


@pytest.mark.parametrize("T", [0.0, -1.0, np.nan, np.inf, "hot"])
def test_bad_temperature(lorenz, T):
    model, X = lorenz
    with pytest.raises(ds.DataError, match="temperature"):
        ds.fit_local(model, X, X[:4], scores=ds.Scores(temperature=T))


@pytest.mark.parametrize(
    "kw, word",
    [
        ({"n_features": 0}, "n_features"),
        ({"n_features": -1}, "n_features"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": -2.0}, "bandwidth"),
        ({"lam": -1.0}, "lam"),
        ({"chunk_rows": 0}, "chunk_rows"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_global_arguments(lorenz, kw, word):
    model, X = lorenz
    with pytest.raises(ds.DataError, match=word):
        ds.fit_global(model, X, **kw)


# ---------------------------------------------------------------- state-dependent D(x)
def _indefinite_model(name):
    # D = diag(x, 1/2): a covariance only for x ≥ 0
    return ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=[x, sp.Rational(1, 2)], name=name)


# the D(x) check at the samples is tested: uniform draws are no stationary sample of this model,
# so the fit's stationarity check may flag its drift (a StationarityWarning, as it should)
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_state_dependent_diffusion_checked_at_the_samples(tmp_path):
    m = _indefinite_model("rel_indef_global")
    X = np.random.default_rng(0).uniform(0.5, 2.0, (200, 2))
    # D ≥ 0 on these samples
    fit = ds.fit_global(
        m, X, features=ds.Features(n_features=32), execution=ds.Execution(out_dir=str(tmp_path))
    )
    assert np.isfinite(fit.theta).all()
    X[37, 0] = -0.25
    with pytest.raises(
        ds.ModelError, match=r"not positive semi-definite at sample 37 of X .*-0\.25"
    ):
        ds.fit_global(
            m, X, features=ds.Features(n_features=32), execution=ds.Execution(out_dir=str(tmp_path))
        )


@pytest.fixture(scope="module")
def indefinite(tmp_path_factory):
    """The D = diag(x, 1/2) model, emitted once (its kernels are never called below)."""
    m = _indefinite_model("rel_indef_rows")
    out = str(tmp_path_factory.mktemp("rel_indef_rows"))
    ds.compile_model(m, out)
    return m, out


def test_state_dependent_diffusion_checked_at_every_row(indefinite, tmp_path):
    """D(x) is checked at every sample, not only the first 65,536 (bandwidth) rows: in memory,
    and in a stream chunk by chunk (naming the global row) before the chunk enters A, b."""
    m, out = indefinite
    X = np.random.default_rng(0).uniform(0.5, 2.0, (70000, 2))
    X[69000, 0] = -0.25
    with pytest.raises(ds.ModelError, match=r"not positive semi-definite at sample 69000 of X"):
        ds.fit_global(m, X, features=ds.Features(n_features=8), execution=ds.Execution(out_dir=out))
    path = str(tmp_path / "X.npy")
    np.save(path, X)
    with pytest.raises(ds.ModelError, match=r"not positive semi-definite at sample 69000 of X"):
        # (one chunk: no fill runs)
        ds.fit_global(
            m,
            path,
            features=ds.Features(n_features=8),
            execution=ds.Execution(out_dir=out, chunk_rows=70000),
        )


def test_state_dependent_diffusion_checked_at_the_probes(tmp_path):
    m = _indefinite_model("rel_indef_local")
    S = np.zeros((3, 2))
    J = np.broadcast_to(-np.eye(2), (3, 2, 2)).copy()
    P = np.array([[1.0, 0.0], [0.5, 1.0], [-1.0, 0.0]])
    with pytest.raises(ds.ModelError, match="probe 2 of probes"):
        ds.fit_local(
            m,
            None,
            P,
            scores=ds.Scores(score=(S, J)),
            execution=ds.Execution(out_dir=str(tmp_path)),
        )


def test_state_dependent_diffusion_checked_at_the_start_states(tmp_path):
    m = _indefinite_model("rel_indef_sim")
    with pytest.raises(ds.ModelError, match="start state 0 of x0"):
        ds.simulate(m, [1.0], 10, x0=[-1.0, 0.0], execution=ds.Execution(out_dir=str(tmp_path)))


def test_full_state_dependent_diffusion_indefinite(statediff):
    """Off-diagonal terms: D = [[1, x], [x, 1]] is indefinite for |x| > 1 (eigenvalue 1 − |x|)."""
    m = ds.SDEModel(
        [x, y], [a], [-a * x, -y], diffusion=sp.Matrix([[1, x], [x, 1]]), name="rel_full"
    )
    diffusion_psd(m, np.array([[0.5, 0.0], [-0.9, 3.0]]))
    with pytest.raises(ds.ModelError, match=r"sample 1 .*smallest eigenvalue -1"):
        diffusion_psd(m, np.array([[0.5, 0.0], [2.0, 3.0]]))
    with pytest.raises(ds.ModelError, match="not finite"):
        m2 = ds.SDEModel([x], [a], [-a * x], diffusion=1 / x, name="rel_pole")
        diffusion_psd(m2, np.array([[1.0], [0.0]]))


# normal draws, not samples of this model: the fitted drift may be flagged (StationarityWarning)
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_psd_diffusion_passes(statediff):
    m, out = statediff
    X = np.random.default_rng(1).normal(size=(300, 2))
    fit = ds.fit_global(
        m, X, features=ds.Features(n_features=32), execution=ds.Execution(out_dir=out)
    )
    assert np.isfinite(fit.theta).all()


def test_provably_negative_diffusion_rejected_at_declaration():
    with pytest.raises(ds.ModelError, match=r"D\[0,0\] = -x\*\*2 - 1 is negative"):
        ds.SDEModel([x], [a], [-a * x], diffusion=-1 - x**2)


# ============================================================================ bad models
@pytest.mark.parametrize(
    "build, gist",
    [
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x + b, -y], diffusion=1),
            "symbol b is neither a state variable, a parameter nor an input",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=a),
            "parameter a appears in the diffusion",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=sp.Matrix([[1, 0.5], [0, 1]])),
            "not symmetric",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=sp.Matrix([[1, x], [y, 1]])),
            "not symmetric",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=sp.Matrix([[1, 2], [2, 1]])),
            "not positive semi-definite",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * sp.Function("g")(x), -y], diffusion=1),
            r"undefined function g\(\)",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * sp.gamma(x), -y], diffusion=1),
            r"gamma\(\) cannot be compiled by Numba",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * sp.besselj(0, x), -y], diffusion=1),
            r"besselj\(\) cannot be compiled by Numba",
        ),
        (
            lambda: ds.SDEModel(
                [x, y], [a], [-a * sp.Piecewise((x, x > 0), (2 * x, True)), -y], diffusion=1
            ),
            r"Piecewise\(\) cannot be compiled.*Heaviside",
        ),
        (
            lambda: ds.fit_global(ds.SDEModel([x, y], [], [-x, -y], diffusion=1), np.eye(2)),
            "no unknown parameters",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x + sp.sin(t), -y], diffusion=1),
            r"drift\[0\] \(dx\): the drift depends on time t.*dlogp_dt=",
        ),
        (
            lambda: ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=1 + t**2),
            "diffusion depends on time t",
        ),
    ],
)
def test_bad_model_declarations(build, gist):
    with pytest.raises(ds.ModelError, match=gist):
        build()


def test_kinks_use_almost_everywhere_derivatives():
    """Abs/sign where the local route differentiates: derivatives a.e., no DiracDelta printed.

    f = −a·|x|·x, D = 1 + |x|/2 (1-D): ∇·U = −2|x|, ∇·D = sign(x)/2, ∇·∇·D = 0 (a.e.).
    """
    m = ds.SDEModel([x], [a], [-a * sp.Abs(x) * x], diffusion=1 + sp.Abs(x) / 2, name="rel_kinks")
    loc = m.derivation.local
    exprs = list(loc.a) + [loc.beta]
    assert not any(e.has(sp.DiracDelta) or e.has(sp.Derivative) for e in exprs)
    (s,) = loc.score
    (J,) = loc.jacobian
    assert sp.simplify(loc.a[0] - (-sp.Abs(x) * x * s - 2 * sp.Abs(x))) == 0
    D = 1 + sp.Abs(x) / 2
    beta = s * D * s + D * J + 2 * s * sp.sign(x) / 2 - loc.dlogp_dt
    assert sp.simplify(loc.beta - beta) == 0


def test_non_affine_without_start_is_named(tmp_path):
    m = ds.SDEModel([x], [a], [-sp.exp(a) * x], diffusion=1, name="rel_nonaffine")
    X = np.random.default_rng(0).normal(size=(100, 1))
    with pytest.raises(ds.NotAffineError, match="theta0"):
        ds.fit_global(
            m, X, features=ds.Features(n_features=32), execution=ds.Execution(out_dir=str(tmp_path))
        )


# normal draws, not samples of this model: the fitted drift may be flagged (StationarityWarning)
@pytest.mark.filterwarnings("ignore::dynosed_sym.errors.StationarityWarning")
def test_local_entry_checks_state_dependent_model(statediff):
    m, out = statediff
    X = np.random.default_rng(2).normal(size=(4000, 2)) * [1.0, 0.7]
    fit = ds.fit_local(
        m,
        X,
        np.array([[0.0, 0.0], [0.5, 0.2]]),
        scores=ds.Scores(temperature=4.0),
        execution=ds.Execution(out_dir=out),
    )
    assert np.isfinite(fit.theta).all()


# ============================================================================ determinism
@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def _max_threads():
    return numba.config.NUMBA_NUM_THREADS


def test_fits_identical_across_thread_counts(lorenz, restore_threads):
    if _max_threads() < 2:
        pytest.skip("needs 2 Numba threads")
    model, X = lorenz
    P = X[::400]
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        g = ds.fit_global(model, X, features=ds.Features(n_features=256, seed=3))
        loc = ds.fit_local(model, X, P, scores=ds.Scores(temperature=1.0))
        sm = ds.fit_local(model, X, ds.Balls(P, 8.0), scores=ds.Scores(score="score_matching"))
        sim = ds.simulate(model, model.nominal, 64, burn_in=2000, seed=4)  # (settled)
        runs.append([g.theta, g.A, g.b, g.report.std_errors, loc.theta, loc.A, sm.theta, sm.A, sim])
    for one, two in zip(*runs):
        assert np.array_equal(one, two), "result depends on the number of Numba threads"


@pytest.mark.parametrize("chunk_rows", [7, 97, 1000, 65536])
def test_fits_agree_across_chunkings(lorenz, chunk_rows):
    """Streams cut at any row: θ̂, A, b equal the in-memory fit to rounding (≤ 1e-14 relative).

    Not bitwise: the sums within a block are grouped by chunk.  For a fixed chunking the result
    is bitwise reproducible (next test).  θ̂ of the V-statistic: a stream of unknown length has
    other noise blocks than the array, and the default U-statistic's correction is estimated
    from them (tests/data/test_streaming.py bounds that difference by the standard error).
    """
    model, X = lorenz
    features, v = ds.Features(n_features=256, seed=3), ds.Solver(statistic="v")
    ref = ds.fit_global(model, X, features=features, solver=v)
    path_chunks = [X[i : i + chunk_rows] for i in range(0, len(X), chunk_rows)]
    fit = ds.fit_global(
        model,
        iter(path_chunks),
        features=features,
        solver=v,
        execution=ds.Execution(chunk_rows=max(chunk_rows, 64)),
    )
    for got, want in ((fit.A, ref.A), (fit.b, ref.b), (fit.theta, ref.theta)):
        assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()
    P = X[::400]
    scores = ds.Scores(temperature=1.0)
    lref = ds.fit_local(model, X, P, scores=scores, solver=v)
    execution = ds.Execution(chunk_rows=chunk_rows)
    loc = ds.fit_local(model, iter(path_chunks), P, scores=scores, solver=v, execution=execution)
    for got, want in ((loc.A, lref.A), (loc.b, lref.b), (loc.theta, lref.theta)):
        assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()


def test_same_chunking_is_bitwise_reproducible(lorenz):
    model, X = lorenz
    runs = [
        ds.fit_global(
            model,
            (X[i : i + 333] for i in range(0, len(X), 333)),
            features=ds.Features(n_features=128, seed=2),
        )
        for _ in range(2)
    ]
    assert np.array_equal(runs[0].A, runs[1].A) and np.array_equal(runs[0].theta, runs[1].theta)


_RUN = """
import json, sys, numpy as np, dynosed_sym as ds
model = ds.load_model(sys.argv[1])
X = ds.simulate(model, model.nominal, 1500, burn_in=2000, seed=11)
g = ds.fit_global(model, X, n_features=128, seed=7)
loc = ds.fit_local(model, X, X[::300], temperature="auto")
chk = ds.check_identifiability(model, n_samples=2000, seed=3, n_features=128)
print(json.dumps({k: np.asarray(v, dtype=float).tobytes().hex() for k, v in
                  dict(X=X, g=g.theta, A=g.A, loc=loc.theta, chk=chk.freeness).items()}))
"""


def _run_here(model):
    X = ds.simulate(model, model.nominal, 1500, burn_in=2000, seed=11)
    g = ds.fit_global(model, X, features=ds.Features(n_features=128, seed=7))
    loc = ds.fit_local(model, X, X[::300], scores=ds.Scores(temperature="auto"))
    chk = ds.check_identifiability(
        model, study=ds.Study(n_samples=2000, seed=3), features=ds.Features(n_features=128)
    )
    return {
        k: np.asarray(v, dtype=float).tobytes().hex()
        for k, v in dict(X=X, g=g.theta, A=g.A, loc=loc.theta, chk=chk.freeness).items()
    }


def test_same_seed_same_result_in_a_new_process(models, project_root):
    """Simulation, both fits and the simulation check: bitwise equal in a fresh interpreter
    (different hash seed, kernels loaded from Numba's cache)."""
    model = models["lorenz"]
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", _RUN, model.source_path],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(project_root),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    there = json.loads(out.stdout.strip().splitlines()[-1])
    here = _run_here(model)
    assert here == there


# ============================================================================ issue 22
# Each case of issue 22 "Data and arguments" ends in the DynosedError quoted in
# docs/reliability.md, or in the correct result.  (The CLI's --out and its tables:
# tests/apps/test_cli_inputs.py; dtypes and scales at random: tests/test_fuzz.py; caches:
# tests/codegen/test_trust.py.)
@pytest.fixture(scope="module")
def ou(models):
    """ou2d and exact N(0, I) samples of it (M = −I)."""
    return models["ou2d"], np.random.default_rng(22).standard_normal((3000, 2))


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda X: X.astype(object).__setitem__((3, 1), "abc") or None,
            r"^X: holds text in column 'y', row 3: 'abc'; numbers are expected",
        ),
        (
            lambda X: X + 0j,
            r"^X: holds complex numbers in column 'x', row 0: \(.*\+0j\); pass real",
        ),
        (lambda X: X > 0, r"^X: holds boolean values in column 'x', row 0: (True|False); convert"),
        (
            lambda X: np.round(X * 1e6).astype("int64").astype("datetime64[us]"),
            r"^X: holds dates/times in column 'x', row 0: datetime64\('.*'\); convert it to "
            r"numbers explicitly",
        ),
    ],
)
def test_non_numeric_arrays_are_refused_naming_column_and_row(ou, make, message):
    model, X = ou
    bad = make(X)
    if bad is None:  # (the text cell)
        bad = X.astype(object)
        bad[3, 1] = "abc"
    for call in (
        lambda: ds.fit_global(model, bad, features=ds.Features(n_features=32)),
        lambda: ds.fit_local(model, bad, X[:3]),
    ):
        with pytest.raises(ds.DataError, match=message):
            call()


@pytest.mark.parametrize(
    "column, message",
    [
        (lambda s: s.astype(object).where(s.index != 5, "12,5"), r"in column 'y', row 5: '12,5'"),
        (lambda s: s + 1j * (s.index == 7), r"holds complex numbers in column 'y', row 7"),
        (lambda s: s > 0, r"holds boolean values in column 'y', row 0"),
        (lambda s: pd.to_datetime(s * 1e9), r"holds dates/times in column 'y', row 0"),
        (lambda s: pd.to_timedelta(s, unit="s"), r"holds time spans in column 'y', row 0"),
        (lambda s: s.astype(str), r"holds numbers stored as text in column 'y', row 0"),
        (lambda s: s.astype("Float64").where(s.index != 9, pd.NA), r"rows 9\)"),
    ],
)
def test_dataframe_columns_are_never_cast(ou, column, message):
    """A DataFrame column of the wrong kind is named with its first bad row (the other column
    and an extra text column are fine); a nullable column's NA is a missing value."""
    model, X = ou
    df = pd.DataFrame({"label": "a", "y": X[:, 1], "x": X[:, 0]})
    df["y"] = column(df["y"])
    with pytest.raises(ds.DataError, match=message):
        ds.fit_global(model, df, features=ds.Features(n_features=32))


def test_header_with_spaces_shows_the_columns_as_read(ou):
    model, X = ou
    df = pd.DataFrame(X, columns=["x", " y"])
    with pytest.raises(
        ds.DataError,
        match=r"^X: DataFrame has no column 'y' for state variable 'y' \(columns: 'x', ' y'\); "
        r"column ' y' differs from 'y' only by spaces: strip them \(df.columns = "
        r"df.columns.str.strip\(\)\)",
    ):
        ds.fit_global(model, df, features=ds.Features(n_features=32))


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("k", [40, 60, 80])
def test_data_scaled_by_huge_factors(ou, k):
    """Data × 10^k with the same D: the estimate is M/c² (x ↦ cx maps Mx to itself), to
    rounding, and without NumPy's warnings.  (× 1e40 … 1e80 was a ZeroDivisionError in
    solve/misspecification.py; × 1e80 then printed NumPy's "overflow encountered in dot": the
    profile's eigenvector, scaled to xᵀDx = 1, was squared.)"""
    model, X = ou
    c = 10.0**k
    ref = ds.fit_global(model, X, features=ds.Features(n_features=64), solver=ds.Solver(lam=0.0))
    # the same D with data × c: the drift M/c² relaxes over ~c² time units, which the fit's
    # stationarity check reads, rightly, as the picture of a diverging process
    with pytest.warns(ds.StationarityWarning, match="confines the samples only over"):
        got = ds.fit_global(
            model, X * c, features=ds.Features(n_features=64), solver=ds.Solver(lam=0.0)
        )
    assert got.report.rank == ref.report.rank
    np.testing.assert_allclose(got.theta * c**2, ref.theta, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.report.p_value, ref.report.p_value, rtol=1e-6)


@pytest.mark.parametrize("k", [90, 120, 150])
def test_data_scaled_by_1e90_to_1e150(ou, k):
    """× 1e90 … 1e150: θ̂ ≈ 1e-180 … 1e-300 (the maximum-likelihood scale τ squared its values
    before scaling them to unit size: infinite search bounds)."""
    model, X = ou
    c = 10.0**k
    ref = ds.fit_global(model, X, features=ds.Features(n_features=64), solver=ds.Solver(lam=0.0))
    got = ds.fit_global(
        model, X * c, features=ds.Features(n_features=64), solver=ds.Solver(lam=0.0)
    )
    np.testing.assert_allclose(got.theta * c**2, ref.theta, rtol=0, atol=1e-9)


def test_fit_local_on_data_times_1e300(ou):
    """k-means probes on data × 1e300 (was "Probabilities contain NaN"): the probes are the
    k-means centres of the unscaled data, scaled; the kernel score then names the probe and the
    argument to change (T = 49 is a precision for data of unit scale), without a RuntimeWarning
    before it (the effective sample size was 0/0 where every weight underflowed)."""
    model, X = ou
    c = 2.0**996  # ≈ 6.7e299, a power of two: the scaling is exact
    P = ds.choose_probes(X, 10, seed=0)
    np.testing.assert_array_equal(ds.choose_probes(X * c, 10, seed=0), P * c)
    with (
        warnings.catch_warnings(),
        pytest.raises(
            ds.DataError,
            match=r"^kernel score: probe 0 \(x = .*e\+29\d.*\) is inf kernel widths .* lower "
            r"temperature= if the kernel width 1/√T = 0.143 is small for the data's scale",
        ),
    ):
        warnings.simplefilter("error", RuntimeWarning)
        ds.fit_local(model, X * 1e300, 10, scores=ds.Scores(temperature=49.0))
    # the default temperature follows the data's scale, which double precision cannot here
    with pytest.raises(ds.DataError, match=r"^temperature='auto': the data's scale .*rescale"):
        ds.fit_local(model, X * 1e300, 10)


def test_probe_at_a_singularity_of_the_drift_is_named(ou, tmp_path):
    """f = (−a x + 1/x, −y) at the probe x = 0 (was a Numba SystemError); also 1/x², which
    Numba raises on instead of returning inf."""
    model, X = ou
    P = np.array([[1.0, 1.0], [0.0, 0.5], [0.5, -0.5]])
    for k, term in enumerate([1 / x, 1 / x**2]):
        m = ds.SDEModel([x, y], [a], [-a * x + term, -y], diffusion=1, name=f"rel_singular{k}")
        with pytest.raises(
            ds.DataError,
            match=r"^probe 1 \(x = \[0.  0.5\]\): the local row of model 'rel_singular\d' cannot "
            r"be evaluated there .* singular or beyond double precision at that point; move or "
            r"drop the probe",
        ):
            ds.fit_local(
                m,
                X,
                P,
                scores=ds.Scores(temperature=2.0),
                execution=ds.Execution(out_dir=str(tmp_path)),
            )


def test_seeds_are_checked_everywhere(ou):
    model, X = ou
    fit = ds.fit_global(model, X, features=ds.Features(n_features=32))
    for call in (
        lambda: ds.check_identifiability(model, study=ds.Study(seed=-1)),
        lambda: ds.structural_check(model, seed=-1),
        lambda: fit.bootstrap(seed=-1),
        lambda: ds.choose_probes(X, 3, seed=-1),
        lambda: ds.choose_probes(X, 3, method="random", seed=-1),
        lambda: ds.simulate(model, model.nominal, 10, seed=-1),
    ):
        with pytest.raises(ds.DataError, match=r"^(Study\.)?seed must be at least 0, got -1$"):
            call()


def test_local_check_with_zero_probes(ou):
    model, _ = ou
    with pytest.raises(ds.DataError, match=r"^probes must be at least 1, got 0$"):
        ds.check_identifiability(model, route="local", probes=0)
    with pytest.raises(ds.DataError, match=r"^probes: no probe points$"):
        ds.check_identifiability(model, route="local", probes=np.zeros((0, 2)))


@pytest.mark.parametrize("score", ["kernel", "local_gaussian"])
@pytest.mark.parametrize("temperature", ["auto", 0.05])
def test_probes_outside_the_data_are_named(ou, score, temperature):
    """Probes 100 standard deviations from data of spread 1 were accepted: temperature='auto'
    widened every probe's kernel to reach them and the fit said only INCONSISTENT. They are
    refused, named with their distance in standard deviations; a probe 2.5 of them out of the
    data's edge is accepted."""
    model, X = ou
    P = np.array([[0.0, 0.0], [100.0, 0.0], [0.5, -100.0], [0.0, 1.0]])
    label = "kernel" if score == "kernel" else "local Gaussian"
    sd = X.std(axis=0)  # oracle: per-column standardised distance to the nearest row, by NumPy
    far = [np.sqrt((((X - p) / sd) ** 2).sum(axis=1)).min() for p in P[1:3]]
    widen = ", and temperature='auto' would widen every probe's kernel to reach them"
    message = (
        rf"^{label} score: 2 of 4 probe\(s\) lie outside the data: probe 1 \(x = \[100\.   0\.\]\) "
        rf"is {far[0]:.3g}, probe 2 \(x = \[   0\.5 -100\. \]\) {far[1]:.3g} standard deviations "
        r"from the nearest data point \(more than 3·√2 = 4\.24; each column in its own standard "
        rf"deviation: x {sd[0]:.3g}, y {sd[1]:.3g}\); the score there would extrapolate the "
        rf"nearest data{widen if temperature == 'auto' else ''}: move or drop those probes"
    )
    scores = ds.Scores(score=score, temperature=temperature)
    with pytest.raises(ds.DataError, match=message):
        ds.fit_local(model, X, P, scores=scores)
    edge = np.array([[0.0, 0.0], [X[:, 0].max() + 2.5 * X[:, 0].std(), 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.StationarityWarning)  # (2 probes: a rough fit)
        assert np.isfinite(ds.fit_local(model, X, edge, scores=scores).theta).all()


@pytest.mark.parametrize("score", ["kernel", "local_gaussian"])
@pytest.mark.parametrize("noise", [0.0, 1e-16])
def test_kernel_score_names_a_constant_column(ou, score, noise):
    """A constant column (or one varying at the rounding level) with temperature='auto': the
    automatic kernel became infinitely narrow (T ≈ 6e295) and the error named a probe "5.48e+144
    kernel widths from the nearest data point"; now it names the column."""
    model, X = ou
    Xc = X.copy()
    Xc[:, 1] = 3.0 * (1.0 + noise * np.sign(X[:, 1]))
    label = "kernel" if score == "kernel" else "local Gaussian"
    same = "is constant" if noise == 0 else "varies only at the rounding level"
    message = (
        rf"^{label} score: column 'y' of X {same} \(3 in all 3000 samples read\): "
        r"temperature='auto' follows the data's narrowest spread, which is zero along it"
    )
    for probes in (4, np.array([[0.0, 3.0], [0.5, 3.0]])):
        with pytest.raises(ds.DataError, match=message):
            ds.fit_local(model, Xc, probes, scores=ds.Scores(score=score))


@pytest.mark.parametrize("entry", ["fit_global", "fit_local"])
def test_theta0_beyond_the_square_root_of_the_largest_double(tmp_path, entry):
    """theta0 = 1e300 for a non-affine drift: SciPy's trust region squared it and printed 16
    RuntimeWarnings ("overflow encountered in dot") before the search went on from inf; now one
    error naming theta0 and the parameter, and no warning. 1e153 still starts the search."""
    m = ds.SDEModel(
        [x, y], [a, b], [sp.tanh(b * y) - a * x, -y], diffusion=1, name="rel_theta0_huge"
    )
    X = np.random.default_rng(3).standard_normal((400, 2))
    kw = dict(execution=ds.Execution(out_dir=str(tmp_path), n_blocks=8))

    def fit(theta0):
        solver = ds.Solver(theta0=theta0)
        if entry == "fit_global":
            return ds.fit_global(m, X, features=ds.Features(n_features=16), solver=solver, **kw)
        return ds.fit_local(m, X, 3, solver=solver, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(
            ds.ModelError,
            match=r"^theta0: value of 'b' is 1e\+300, beyond 1\.34e\+154 \(the square root of the "
            r"largest double\): the gradient solver squares θ",
        ):
            fit([1.0, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.StationarityWarning)  # (white-noise data, not its law)
        assert np.isfinite(fit([1.0, 1e153]).theta).all()


@pytest.mark.parametrize("shape", [(5, 3), (6,), (2, 2, 2)])
def test_structural_check_checks_the_probes_shape(ou, shape):
    """structural_check(route="local") only counted the rows: 3 columns for a 2-D model, or a
    flat list of 6 numbers, passed as 5 or 6 probes. They are checked as fit_local checks them."""
    model, _ = ou
    message = (
        r"^probes: expected an array of shape \(M, 2\), one column per state variable \(x, y\) "
        rf"of model 'ou2d', got shape {re.escape(str(shape))}$"
    )
    for call in (ds.structural_check, ds.check_identifiability):
        with pytest.raises(ds.DataError, match=message):
            call(model, route="local", probes=np.zeros(shape))
    with pytest.raises(ds.DataError, match=r"^probes: contain NaN or inf$"):
        ds.structural_check(model, route="local", probes=np.full((3, 2), np.nan))
    assert ds.structural_check(model, route="local", probes=np.zeros((3, 2))).rank == 3


@pytest.mark.parametrize(
    "constant, shown",
    [
        (sp.Float("1e400"), r"1.000E\+400 is beyond the double-precision range"),
        (-(sp.Integer(10) ** 400), r"-?1.000E\+400 is beyond"),
        (sp.exp(1000), r"exp\(1000\) ≈ 1.970E\+434 is beyond"),
        (sp.Float("1e-400"), r"1.000E-400 underflows to zero in double precision"),
    ],
)
def test_constants_beyond_double_precision_are_refused(constant, shown):
    """(sp.Float('1e400') was accepted, and its kernels failed: "name 'inf' is not defined")"""
    with pytest.raises(ds.ModelError, match=r"^drift\[1\] \(dy\): the constant " + shown):
        ds.SDEModel([x, y], [a], [-a * x, -y + constant * x], diffusion=1)
    with pytest.raises(ds.ModelError, match=r"^diffusion D\[0,0\]: the constant " + shown):
        ds.SDEModel([x, y], [a], [-a * x, -y], diffusion=abs(constant) * (1 + x**2))


@pytest.mark.parametrize("level", [1.5, 0, 1, -0.1, np.nan, 95])
def test_levels_outside_zero_one(ou, level):
    model, X = ou
    fit = ds.fit_global(model, X, features=ds.Features(n_features=32))
    pattern = r"^(Study\.)?level must be (between 0 and 1 \(exclusive\), e.g. 0.95|finite)"
    for call in (
        lambda: fit.conf_int(level),
        lambda: fit.conf_int(level, method="bootstrap"),
        lambda: fit.bootstrap(n_boot=20, level=level),
        lambda: ds.check_identifiability(model, study=ds.Study(level=level, n_samples=500)),
    ):
        with pytest.raises(ds.DataError, match=pattern):
            call()


@pytest.mark.parametrize("radius", [-1.0, 0.0, np.nan, [1.0, -1.0, 1.0]])
@pytest.mark.parametrize("score", ["kernel", "local_gaussian", "score_matching"])
def test_fit_local_radius(ou, radius, score):
    model, X = ou
    with pytest.raises(ds.DataError, match=r"radius must be a positive number or one per probe"):
        ds.fit_local(model, X, X[:3], scores=ds.Scores(radius=radius, score=score))


def test_n_features_beyond_memory_is_refused_before_allocating(ou):
    """n_features=10**9 was killed by the out-of-memory killer at 23 GB: now refused at once,
    with the estimate."""
    model, X = ou
    with pytest.raises(
        ds.DataError,
        match=r"^n_features=1,000,000,000 with n_blocks=32 would need about 2.7\d TB of memory for "
        r"the global system \(32 noise blocks × 1,000,000,000 features × 5 columns, kept as the "
        r"fill's sums, with the fit's n × n arrays\), more than the .* available; lower n_features",
    ):
        ds.fit_global(model, X, features=ds.Features(n_features=10**9))


def test_assembly_memory_estimate_covers_the_measured_peak(ou):
    """The estimate is an upper bound of the peak that tracemalloc measures (and not a wild
    one): the oracle is the allocator, not the formula."""
    from conftest import traced_peak

    from dynosed_sym.assembly.memory import assembly_bytes

    model, X = ou
    ds.fit_global(model, X, features=ds.Features(n_features=64))  # (compiled)
    for m, B in [(8192, 8), (8192, 32), (32768, 16)]:
        # one fit's peak (ou2d leaves a direction unresolved: "auto" would fit at several
        # length scales, holding the best fit while it fits the next)
        features = ds.Features(n_features=m, bandwidth="median")
        peak = traced_peak(
            lambda features=features, B=B: ds.fit_global(
                model, X, features=features, execution=ds.Execution(n_blocks=B)
            )
        )
        estimate = assembly_bytes(model.d, model.n, m, B)
        assert peak <= estimate <= 2.5 * peak, (m, B, peak, estimate)


def test_string_drift_uses_the_declared_symbols():
    """ "-a*x" with a, x declared real=True is the same model as -a*x (it was "symbol a is
    neither a state variable, a parameter nor an input"); also in D and G, and for names SymPy
    reads as its own (E, beta)."""
    E, beta = sp.symbols("E beta", real=True)
    ref = ds.SDEModel([x, y], [a, E], [-a * x + E * y, -y], diffusion=[(1 + x**2) / 2, 1])
    got = ds.SDEModel(
        [x, y], [a, E], ["-a*x + E*y", "-y"], diffusion=["(1 + x**2)/2", "1"], name=ref.name
    )
    assert got.drift == ref.drift and got.D == ref.D
    from dynosed_sym.codegen.spec import spec_hash

    assert spec_hash(got) == spec_hash(ref)
    m = ds.SDEModel([x], [beta], ["-beta*x"], noise=[["1 + x**2"]])
    assert m.drift[0] == -beta * x
    with pytest.raises(
        ds.ModelError,
        match=r"^drift\[0\] \(dx\): symbol a is not the declared a: it was made "
        r"with other assumptions \(none instead of real=True\)",
    ):
        ds.SDEModel([x], [a], [-sp.Symbol("a") * x], diffusion=1)


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("__import__('os').system('touch {flag}')", r"a call of \"__import__\('os'\)\.system\""),
        ("exp(x.__class__)", r"an attribute \(\.\) in 'x\.__class__'"),
        ("exp('{flag}')", r"the literal '{flag}' \(only numbers are allowed\)"),
        ("open('{flag}', 'w')", r"a call of open\(\), a Python builtin"),
        ("sympify('x')", r"a call of sympify\(\), which is not a SymPy function"),
        ("breakpoint()", r"a call of breakpoint\(\), a Python builtin"),
        ("(lambda: x)()", r"a call of 'lambda: x', not of a function name"),
        ("[x for x in ()]", r"a comprehension"),
        ("x[0]", r"a subscript"),
        ("__builtins__", r"the name '__builtins__'"),
        ("x == a", r"a comparison other than < <= > >="),
    ],
)
def test_drift_strings_are_formulas_not_code(tmp_path, text, part):
    """SymPy's parser evaluates Python: a drift string ran arbitrary code (it made the file and
    declared the drift 0). Only numbers, names, arithmetic and calls of SymPy functions by name
    pass; the rest is named before the parser runs."""
    flag = tmp_path / "ran"
    text = text.format(flag=flag)
    message = (
        rf"^drift\[0\]: {re.escape(repr(text))} holds {part.format(flag=re.escape(str(flag)))}"
    )
    with pytest.raises(ds.ModelError, match=message):
        ds.SDEModel([x, y], [a], [text, "-y"], diffusion=1)
    with pytest.raises(ds.ModelError, match=r"^diffusion\[1\]: "):
        ds.SDEModel([x, y], [a], ["-a*x", "-y"], diffusion=["1", text])
    assert not flag.exists()


def test_drift_strings_keep_sympy_functions():
    """What a formula needs still parses: SymPy's functions and constants, ^ for **, abs/min/max
    (SymPy's parser reads them as Abs/Min/Max); an unknown function or a condition gets the
    declaration's own message."""
    m = ds.SDEModel(
        [x, y],
        [a],
        ["-a*x + sqrt(1 + y^2) - tanh(x) + Abs(y) + Max(x, 0) + Heaviside(y)", "-E*pi*y + abs(x)"],
        diffusion=["Rational(1, 2) + exp(-x**2)", "1"],
    )
    assert m.drift[1] == -sp.E * sp.pi * y + sp.Abs(x)
    assert m.D[0, 0] == sp.Rational(1, 2) + sp.exp(-(x**2))
    with pytest.raises(ds.ModelError, match=r"undefined function g\(\)"):
        ds.SDEModel([x], [a], ["-a*g(x)"], diffusion=1)
    with pytest.raises(ds.ModelError, match=r"x < a is a condition"):
        ds.SDEModel([x], [a], ["x < a"], diffusion=1)
    with pytest.raises(ds.ModelError, match=r"Piecewise\(\) cannot be compiled"):
        ds.SDEModel([x], [a], ["Piecewise((-a*x, x < 0), (-x, True))"], diffusion=1)


@pytest.mark.parametrize(
    ("text", "part"),
    [
        (
            "-a*x*2**2**40",
            r"holds '2\*\*2\*\*40', a power of constants with the exponent 1\.1e\+12",
        ),
        ("-a*x*9**9**9", r"holds '9\*\*9\*\*9', a power of constants with the exponent 3\.87e\+08"),
        (
            "-a*x*factorial(10**7)",
            r"holds 'factorial\(10\*\*7\)', a call of factorial\(\), which SymPy evaluates "
            r"exactly, with the constant 1e\+07 \(beyond 100\)",
        ),
        ("-a*x*(10**999)**999", r"holds '\(10\*\*999\)\*\*999', a power of constants whose exact"),
        ("-a*x*exp(10**9*log(2))", r"holds 'exp\(10\*\*9\*log\(2\)\)', exp\(\) of a constant"),
        ("legendre(10**6, x)", r"is a call of legendre\(\), which SymPy evaluates exactly"),
    ],
)
def test_drift_strings_with_unbounded_exact_constants_are_refused(text, part):
    """SymPy computes exact integers: '-a*x*2**2**40' raised a bare MemoryError after 19 s,
    '-a*x*9**9**9' and '-a*x*factorial(10**7)' ran for minutes. They are refused from the
    syntax tree, before SymPy computes anything (well under a second each)."""
    start = time.perf_counter()
    with pytest.raises(
        ds.ModelError,
        match=rf"^drift\[0\]: {re.escape(repr(text))} {part}.*"
        r"digit by digit .* far beyond the double precision",
    ):
        ds.SDEModel([x, y], [a], [text, "-y"], diffusion=1)
    with pytest.raises(ds.ModelError, match=r"^diffusion\[1\]: .* digit by digit"):
        ds.SDEModel([x, y], [a], ["-a*x", "-y"], diffusion=["1", text.replace("-a*", "1 + ")])
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize(
    "text",
    [
        "-a*x**3",
        "2**0.5*x",
        "10**-3*x",
        "(1/2)**2*x",
        "x**Rational(1,3)",
        "1e-3*x",
        "exp(-x**2/2)",
        "tanh(x)",
        "Heaviside(x)",
        "Max(x, 0)",
        "x^2",
        "pi*x",
        "E**x",
        "2**10*x",
        "10**-6*x",
        "(1/2)**3*x",
        "-a*x*2**1000",
        "x**(10**6)",
        "factorial(5)*x - binomial(6, 3)",
        "sqrt(2)**10*x + exp(-3)",
    ],
)
def test_drift_strings_with_bounded_constants_still_declare(text):
    """What a model writes (small exponents, a symbol base, exact halves) is not refused: the
    drift is SymPy's own reading of the string."""
    m = ds.SDEModel([x, y], [a], [text, "-y"], diffusion=1)
    assert m.drift[0] == sp.sympify(text, locals={"x": x, "y": y, "a": a})


def test_drift_strings_that_sympy_cannot_hold_are_model_errors(monkeypatch):
    """The last line of defence: SymPy's parser running out of memory or recursion depth is a
    ModelError naming the entry and the string, not a bare MemoryError."""
    for error in (MemoryError, RecursionError, OverflowError):

        def fail(*args, error=error, **kwargs):
            raise error()

        monkeypatch.setattr(sp, "sympify", fail)
        with pytest.raises(
            ds.ModelError,
            match=rf"^drift\[0\]: SymPy could not read '-a\*x' "
            rf"\({error.__name__}",
        ):
            ds.SDEModel([x], [a], ["-a*x"], diffusion=1)


def test_other_numeric_inputs_are_never_cast(ou):
    """∂ₜlog p, given scores, a time column and TimeCourse times: the same refusals as X."""
    model, X = ou
    P = X[:4]
    S, J = -P, np.tile(-np.eye(2), (4, 1, 1))
    df = pd.DataFrame(X, columns=["x", "y"])
    df["t"] = pd.to_datetime(np.repeat([0, 1, 2], 1000), unit="s")
    cases = [
        (
            lambda: ds.fit_global(
                model, X, features=ds.Features(n_features=16), dlogp_dt=np.zeros(len(X)) + 0j
            ),
            r"^dlogp_dt: holds complex numbers at row 0",
        ),
        (
            lambda: ds.fit_local(model, None, P, scores=ds.Scores(score=(S > 0, J))),
            r"^score: scores: holds boolean values in column 0, row 0",
        ),
        (
            lambda: ds.fit_global(model, df, time_column="t", features=ds.Features(n_features=16)),
            r"^X: holds dates/times in column 't', row 0: datetime64\('1970-01-01T00:00:00",
        ),
        (
            lambda: ds.TimeCourse({"0": X[:100], "1": X[100:200]}),
            r"^TimeCourse: time '0': holds numbers stored as text",
        ),
        (
            lambda: ds.TimeCourse({False: X[:100], True: X[100:200]}),
            r"^TimeCourse: time False: holds boolean values",
        ),
    ]
    for call, message in cases:
        with pytest.raises(ds.DataError, match=message):
            call()
