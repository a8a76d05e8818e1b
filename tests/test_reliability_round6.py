"""Reliability round six: mistakes a careful new user makes, each refused with a message that
names the argument, the option, the symbol or the file (docs/reliability.md, one row each).

Oracles: the plain products of the stationarity check's variance rate (bit for bit on ordinary
data), the documented meaning of each argument (a level is a coverage, a relative error a
fraction), and the option table of ``dynosed fit --help`` ([global] / [local]).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import dynosed_sym as ds
from dynosed_sym.apps.cli import main
from dynosed_sym.simulation.stationarity import _group_mean_se, _variance_rate, _z

OU_M = np.array([[-1.0, 0.5], [-0.5, -1.0]])  # ou2d's nominal drift; D = I: Σ = I


@pytest.fixture(scope="module")
def ou_data(ou_samples):
    return ou_samples(OU_M, 1.0, 2000, seed=5)


@pytest.fixture(scope="module")
def ou_fit(models, ou_data):
    return ds.fit_global(models["ou2d"], ou_data, features=ds.Features(n_features=64))


@pytest.fixture
def runner():
    return CliRunner()


# --------------------------------------------------------------------------- level = alpha
@pytest.mark.parametrize("level", [0.05, 0.1, 0.01, 0.25])
def test_a_level_below_one_half_is_an_alpha_and_is_refused(ou_fit, level):
    """``fit.conf_int(0.05)`` (statsmodels' ``alpha=0.05``) printed a 5 % interval."""
    message = re.escape(
        f"level={level:g} asks for a {100 * level:g} % interval: level is the coverage, not "
        f"the error rate alpha; for a {100 * (1 - level):g} % interval (alpha = {level:g}) pass "
        f"level={1 - level:g}"
    )
    with pytest.raises(ds.DataError, match="^" + message):
        ou_fit.conf_int(level)
    with pytest.raises(ds.DataError, match=message):
        ou_fit.bootstrap(n_boot=10, level=level)
    with pytest.raises(ds.DataError, match=r"^Study\.level=.* asks for a"):
        ds.Study(level=level)


def test_levels_from_one_half_up_are_intervals(ou_fit):
    half, most = ou_fit.conf_int(0.5), ou_fit.conf_int(0.95)
    finite = np.isfinite(most).all(axis=1)
    assert finite.any()
    assert (half[finite, 0] > most[finite, 0]).all() and (half[finite, 1] < most[finite, 1]).all()


# --------------------------------------------------------------------------- rel_error in %
@pytest.mark.parametrize("rel_error, hint", [(5, " (for ±5 % pass 0.05)"), (1000, "")])
def test_a_relative_error_above_one_is_a_percentage_and_is_refused(
    models, runner, project_root, rel_error, hint
):
    """``Study(rel_error=5)`` (meant as ±5 %) planned the samples of a ±500 % interval."""
    message = (
        f"rel_error is a fraction of |θ| (0.1 for an interval of half-width ±10 %), at most 1; "
        f"got {rel_error:g}, i.e. ±{100 * rel_error:g} %{hint}"
    )
    with pytest.raises(ds.DataError, match="^Study." + re.escape(message) + "$"):
        ds.Study(rel_error=rel_error)
    ou = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["check", ou, "--rel-error", str(rel_error), "--structural-only"])
    assert res.exit_code == 1 and message in " ".join(res.output.split()), res.output
    assert ds.Study(rel_error=1).rel_error == 1.0


def test_samples_for_checks_its_relative_error(models):
    check = ds.check_identifiability(models["ou2d"], study=ds.Study(n_samples=400, seed=1))
    with pytest.raises(ds.DataError, match=r"^rel_error is a fraction .* got 5, i\.e\. ±500 %"):
        check.samples_for(rel_error=5)
    assert np.array_equal(check.samples_for(rel_error=0.1), check.samples_for())


# --------------------------------------------------------------------------- integer symbols
def _integer_declarations():
    x, a = sp.symbols("x a", real=True)
    xi = sp.Symbol("x", integer=True)
    n = sp.Symbol("n", integer=True, positive=True)
    xe = sp.Symbol("x", even=True)
    return {
        "floor of an integer state": (
            lambda: ds.SDEModel([xi], [a], [-a * sp.floor(xi)], diffusion=1, name="r6_int"),
            "state variable x is declared with integer=True, an integer: a state of an SDE "
            "moves on the real line",
        ),
        "Hill coefficient": (
            lambda: ds.SDEModel([x], [a, n], [a * x**n / (1 + x**n) - x], 1, name="r6_hill"),
            "parameter n is declared with integer=True, positive=True, an integer: a fit "
            "estimates it on the real line",
        ),
        "even state": (
            lambda: ds.SDEModel([xe], [a], [-a * sp.sin(sp.pi * xe) - xe], 1, name="r6_even"),
            "state variable x is declared with even=True, an integer",
        ),
    }


@pytest.mark.parametrize("case", list(_integer_declarations()))
def test_symbols_declared_integer_are_refused(case):
    """SymPy simplifies with the assumption before the model sees the drift: ``floor(x)`` of an
    integer x was x, ``sin(pi*x)`` 0, and the model was declared with that drift."""
    build, start = _integer_declarations()[case]
    with pytest.raises(ds.ModelError, match="^" + re.escape(start)) as info:
        build()
    assert "declare it real: sp.Symbol(" in str(info.value)


# --------------------------------------------------------------------------- CLI options
@pytest.mark.parametrize(
    "extra, flag, owner",
    [
        (["--score", "local_gaussian"], "--score", "local"),
        (["--temperature", "4"], "--temperature", "local"),
        (["--probes", "5"], "--probes", "local"),
        (["--probe-method", "kmeans"], "--probe-method", "local"),
        (["--radius", "1"], "--radius", "local"),
        (["--route", "local", "--features", "64"], "--features", "global"),
        (["--route", "local", "--bandwidth", "2"], "--bandwidth", "global"),
    ],
)
def test_fit_refuses_options_of_the_other_route(runner, project_root, tmp_path, extra, flag, owner):
    """``dynosed fit M data.csv --score local_gaussian`` (no ``--route local``) fitted the
    global route and never said the score was ignored."""
    data = tmp_path / "data.csv"
    data.write_text("x,y\n0.1,0.2\n0.3,-0.1\n", encoding="utf-8")
    ou = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["fit", ou, str(data), *extra])
    assert res.exit_code == 2, res.output
    other = "global" if owner == "local" else "local"
    assert (
        f"{flag} is an option of the {owner} route ([{owner}] in --help), and this fit takes the "
        f"{other} route, which would ignore it: add --route {owner}, or drop {flag}"
    ) in " ".join(res.output.split())


def test_fit_order_and_check_initial_law_need_their_design(runner, project_root, tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n0.1,0.2\n0.3,-0.1\n", encoding="utf-8")
    ou = str(project_root / "models" / "ou2d.py")
    res = runner.invoke(main, ["fit", ou, str(data), "--order", "2"])
    assert res.exit_code == 2 and "--order is the quadrature order of time courses" in res.output
    for flag, value in (("--initial-mean", "1,2"), ("--initial-var", "0.5")):
        res = runner.invoke(main, ["check", ou, flag, value, "--structural-only"])
        assert res.exit_code == 2, res.output
        assert f"{flag} is the law at t = 0 of a time-course design, and without --times" in (
            " ".join(res.output.split())
        )


# --------------------------------------------------------------------------- model files
MODEL_TEXT = """import sympy as sp
import dynosed_sym as ds

x, a, b = sp.symbols("x a b", real=True)
model = ds.SDEModel([x], [a], [-a * x{extra}], diffusion=1, name="r6_file")
"""


def test_load_model_reads_home_names_the_file_and_suggests_py(tmp_path, monkeypatch):
    """``load_model("~/m.py")`` said "does not exist" for a file that exists; a model file's
    bad declaration did not say which file (nor line) declared it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "m.py").write_text(MODEL_TEXT.format(extra=""), encoding="utf-8")
    assert ds.load_model("~/m.py").name == "r6_file"
    with pytest.raises(ds.ModelError, match=r"does not exist; did you mean '.*m\.py'\?$"):
        ds.load_model(tmp_path / "m")
    (tmp_path / "bad.py").write_text(MODEL_TEXT.format(extra=" + b"), encoding="utf-8")
    with pytest.raises(ds.ModelError) as info:
        ds.load_model(tmp_path / "bad.py")
    assert str(info.value).startswith(
        f"model file {str(tmp_path / 'bad.py')!r}, line 5: drift[0] (dx): symbol b is neither"
    )


# --------------------------------------------------------------------------- dict of columns
def test_a_dict_of_state_columns_is_not_read_as_environments(models, ou_data):
    """``fit_global(model, {"x": xs, "y": ys})`` said "X['x']: expected a 2-D array (N, 2)"."""
    ou = models["ou2d"]
    columns = {"x": ou_data[:, 0], "y": ou_data[:, 1]}
    message = (
        "X: a dict with keys 'x', 'y', state variables of model 'ou2d', each holding one column: "
        "a dict is read as the environments of a design"
    )
    with pytest.raises(ds.DataError, match="^" + re.escape(message)):
        ds.fit_global(ou, columns, features=ds.Features(n_features=32))
    with pytest.raises(ds.DataError, match=re.escape("pass pandas.DataFrame(X)")):
        ds.fit_local(ou, columns, probes=3)


# --------------------------------------------------------------------------- stationarity
@pytest.mark.parametrize("scale", [1e160, 1e200])
def test_stationarity_of_samples_far_beyond_double_products(models, ou_data, scale):
    """Samples 1e160 times the law's spread: x·f overflowed, every z-score was NaN, NumPy
    printed "overflow encountered in multiply", and the verdict was "stationary"."""
    ou = models["ou2d"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        check = ds.check_stationarity(ou, ou.nominal, ou_data * scale)
        small = ds.check_stationarity(ou, ou.nominal, ou_data * 1e100)
    assert check.verdict == small.verdict == "borderline"
    assert "the variance along x still shrinks" in check.reasons[0]
    np.testing.assert_allclose(check.imbalance, small.imbalance, rtol=1e-12)


@given(
    seed=st.integers(0, 2**32 - 1),
    exponents=st.tuples(*[st.integers(-150, 150)] * 3),
    n_groups=st.integers(2, 40),
)
def test_variance_rate_is_the_plain_products_bit_for_bit(seed, exponents, n_groups):
    """Where 2·f·x + 2·D is finite the scaled products are the plain ones, bit for bit."""
    rng = np.random.default_rng(seed)
    fv, xv = (rng.standard_normal((300, 2)) * 10.0**e for e in exponents[:2])
    dv = np.abs(rng.standard_normal((300, 2))) * 10.0 ** exponents[2]
    inv = np.arange(300) % n_groups
    with np.errstate(all="ignore"):
        plain = 2 * fv * xv + 2 * dv
        size = 2 * np.abs(fv * xv) + 2 * np.abs(dv)
    if not (np.isfinite(plain).all() and (np.abs(fv * xv) > 1e-290).all()):
        return  # the plain products over- or underflow: nothing to agree with
    rate, se = _group_mean_se(plain, inv, n_groups)
    scale, _ = _group_mean_se(size, inv, n_groups)
    got = _variance_rate(fv, xv, dv, inv, n_groups)
    for a, b in zip(got, (rate, se, _z(rate, se), rate / scale)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "args, flag, shown",
    [
        (["simulate", "{ou}", "-n", "10", "-o", "{out}", "--theta", "M11=-1"], "--theta", "-1"),
        (["check", "{ou}", "--structural-only", "--nominal", "M11=-1"], "--nominal", "-1"),
        (["fit", "{ou}", "{data}", "--theta0", "M11=-1"], "--theta0", "-1"),
    ],
)
def test_a_parameter_given_twice_on_the_command_line_is_refused(
    runner, project_root, tmp_path, args, flag, shown
):
    """``--theta M11=-1 --theta M11=-2``: the last one won without a word."""
    data = tmp_path / "data.csv"
    data.write_text("x,y\n0.1,0.2\n0.3,-0.1\n", encoding="utf-8")
    names = {"ou": str(project_root / "models" / "ou2d.py"), "out": str(tmp_path / "x.npy")}
    argv = [a.format(data=str(data), **names) for a in args] + [flag, "M11=-2"]
    res = runner.invoke(main, argv)
    assert res.exit_code == 2, res.output
    assert f"Invalid value for {flag}: 'M11' is given twice ({shown} and -2); give each " in (
        " ".join(res.output.split())
    )
    assert not (tmp_path / "x.npy").exists()


def test_data_outside_a_states_declared_sign_are_refused_naming_the_column(tmp_path):
    """A state declared positive=True had its drift simplified by SymPy (Abs(x) is x): data
    with x ≤ 0 were fitted with the simplified drift without a word (reliability round six's
    report).  fit_global and fit_local's probes refuse them; positive data fit as before."""
    x = sp.Symbol("x", positive=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a], [1 - a * x * sp.Abs(x)], sp.Rational(1, 10), name="pos_abs")
    assert model.drift[0] == 1 - a * x**2  # what SymPy made of it
    ex = ds.Execution(out_dir=str(tmp_path))
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(1.0, 0.3, (400, 1))) + 0.05
    fit = ds.fit_global(model, X, features=ds.Features(n_features=64), execution=ex)
    assert np.isfinite(fit.theta).all()
    bad = X.copy()
    bad[[7, 9], 0] = [-0.2, 0.0]
    with pytest.raises(ds.DataError, match=r"column 'x' holds 2 value\(s\) ≤ 0 \(row 7: -0.2\)"):
        ds.fit_global(model, bad, features=ds.Features(n_features=64), execution=ex)
    with pytest.raises(ds.DataError, match="declares x positive=True"):
        ds.fit_local(model, X, np.array([[1.0], [-0.5]]), execution=ex)


def test_kmeans_probes_on_fewer_distinct_points_than_asked_are_refused():
    """choose_probes(method='kmeans') on data with 3 distinct points and k = 5 returned repeated
    probes, and fit_local counted their data twice without a word (reliability round six's
    report); now a DataError names how many distinct points there are."""
    X = np.tile(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), (100, 1))
    with pytest.raises(ds.DataError, match=r"only 3 distinct point\(s\), fewer than the k = 5"):
        ds.choose_probes(X, 5, method="kmeans")
    P = ds.choose_probes(X, 3, method="kmeans")
    assert len({tuple(p) for p in P}) == 3


def test_a_transposed_sample_array_is_named_as_such(models):
    """X of shape (d, N) said 'has 2000 columns' without the likely cause (round six's report)."""
    X = np.random.default_rng(1).normal(size=(2000, 3))
    with pytest.raises(ds.DataError, match=r"has 2000 columns .* looks transposed .* pass X\.T"):
        ds.fit_global(models["lorenz"], X.T)
    with pytest.raises(ds.DataError, match="has 2 columns") as err:
        ds.fit_global(models["lorenz"], X[:, :2])
    assert "transposed" not in str(err.value)


def test_a_declared_sign_is_checked_by_simulate_and_check_stationarity_too(tmp_path):
    """The sign check reaches every place the model is evaluated on states (the review of the
    first version: check_stationarity gave a verdict and simulate returned chains that crossed
    0, both with SymPy's simplified drift), and names the simplification for a negative state."""
    x = sp.Symbol("x", negative=True)
    a = sp.Symbol("a", real=True)
    model = ds.SDEModel([x], [a], [-1 - a * x * sp.Abs(x)], sp.Rational(1, 10), name="neg_abs")
    assert model.drift[0] == -1 + a * x**2
    ex = ds.Execution(out_dir=str(tmp_path))
    X = -np.abs(np.random.default_rng(2).normal(1.0, 0.3, (300, 1))) - 0.05
    assert ds.check_stationarity(model, [1.0], X) is not None
    with pytest.raises(ds.DataError, match=r"≥ 0 .* negative=True.*\(Abs\(x\) is -x\)"):
        ds.check_stationarity(model, [1.0], -X)
    with pytest.raises(ds.DataError, match="simulate: the samples: column 'x'"):
        ds.simulate(model, [1.0], 200, x0=[0.5], burn_in=0, seed=0, execution=ex)


def test_inputs_declared_integer_are_refused():
    """Inputs were left out of the integer check (review of round six): ``floor(s) - s`` of an
    integer input s vanished from the drift at declaration."""
    x, a = sp.symbols("x a", real=True)
    s = sp.Symbol("s", integer=True)
    with pytest.raises(ds.ModelError, match="input s is declared with integer=True"):
        ds.SDEModel([x], [a], [-a * x + sp.floor(s) - s], 1, inputs=[s], name="int_input")


def test_an_input_given_twice_in_separate_items_is_refused():
    """``--input A:s=1 --input A:s=3`` (or ``s=1 s=3`` for the design check) kept the last value
    without a word: the first version refused repeats inside one item only (the review)."""
    import click

    from dynosed_sym.apps.cli.designs import parse_inputs

    with pytest.raises(click.BadParameter, match=r"'s' is given twice for A \(1 and 3\)"):
        parse_inputs(("A:s=1", "A:s=3"), ["A", "B"])
    with pytest.raises(click.BadParameter, match=r"'s' is given twice \(1 and 3\)"):
        parse_inputs(("s=1", "s=3"), None)
    assert parse_inputs(("A:s=1", "B:s=3"), ["A", "B"]) == {"A": {"s": 1.0}, "B": {"s": 3.0}}
    assert parse_inputs(("s=1", "s=1"), None) == {"s": 1.0}
