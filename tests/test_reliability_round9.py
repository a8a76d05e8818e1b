"""Reliability round nine: unusual SymPy in model declarations, result writers, the command
line's number options — each refused with a message naming the entry, the symbol or the option
(docs/reliability.md, one row each).

Oracles: the same model declared with ``real=True`` (or written without the wrapper) and fitted
on the same data, NumPy's float of an integer constant, and the file a path names.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import sympy as sp

import dynosed_sym as ds

X_, A_ = sp.symbols("x a", real=True)
FEATURES = ds.Features(n_features=64)


@pytest.mark.parametrize(
    "extra, shown, kind",
    [
        (sp.O(X_), "O(x)", "Order"),
        (sp.Subs(A_ * X_, X_, 2 * X_), "Subs(a*x, x, 2*x)", "Subs"),
        (sp.AccumBounds(-1, 1) * X_, "AccumBounds(-1, 1)", "AccumulationBounds"),
        (sp.UnevaluatedExpr(-A_ * X_), "UnevaluatedExpr(-a*x)", "UnevaluatedExpr"),
    ],
)
def test_sympy_objects_no_kernel_computes_are_refused_at_declaration(extra, shown, kind):
    """``Subs``, ``O(x)``, ``AccumBounds``, ``UnevaluatedExpr`` in a drift passed the declaration
    and failed in the printer ("Unsupported by NumPyPrinter: Order"), in Numba ("name 'Subs' is
    not defined") or in SymPy ("Can't calculate derivative wrt 0")."""
    with pytest.raises(
        ds.ModelError,
        match=re.escape(f"drift[0] (dx): {shown} is a SymPy {kind}, which no kernel can compute"),
    ):
        ds.SDEModel([X_], [A_], [-A_ * X_ + extra], diffusion=1, name="unevaluated_r9")


def test_a_lambda_as_drift_or_diffusion_is_refused_at_declaration():
    """``sp.Lambda(x, -a*x)`` (a function) as a drift passed the declaration; ``simulate`` then
    failed with "NameError: name 'Lambda' is not defined" from the generated module."""
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "drift[0] (dx): Lambda(x, -a*x) is a function (Lambda), not an expression: write its "
            "value, e.g. -a*x, or call it on the state variables"
        ),
    ):
        ds.SDEModel([X_], [A_], [sp.Lambda(X_, -A_ * X_)], diffusion=1, name="lambda_r9")
    with pytest.raises(ds.ModelError, match=r"^diffusion D\[0,0\]: Lambda\(x, x\*\*2 \+ 1\)"):
        ds.SDEModel([X_], [A_], [-A_ * X_], sp.Lambda(X_, 1 + X_**2), name="lambda_r9")
    # called, it is its value: the model of the plain drift
    called = ds.SDEModel([X_], [A_], [sp.Lambda(X_, -A_ * X_)(X_)], diffusion=1, name="l_r9")
    assert called.drift[0] == -A_ * X_


@pytest.mark.parametrize(
    "kw, kind, shown",
    [
        ({"imaginary": True}, "state variable", "re(z) is 0"),
        ({"infinite": True}, "state variable", "floor(z) is z"),
    ],
)
def test_a_symbol_declared_not_real_is_refused(kw, kind, shown):
    """``sp.Symbol("z", imaginary=True)`` as a state was accepted, and SymPy had already used it:
    ``-a*z + re(z)`` was declared as ``-a*z``; ``infinite=True`` made ``floor(z)`` into ``z``."""
    z = sp.Symbol("z", **kw)
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            f"{kind} z is declared with {next(iter(kw))}=True, not a real number: a state of an "
            f"SDE moves on the real line, and SymPy has already used the assumption to simplify "
            f"the expressions written with it ({shown})"
        ),
    ):
        ds.SDEModel([z], [A_], [-A_ * z + sp.re(z) + sp.floor(z)], diffusion=1, name="im_r9")
    b = sp.Symbol("b", imaginary=True)
    with pytest.raises(ds.ModelError, match=r"^parameter b is declared with imaginary=True"):
        ds.SDEModel([X_], [b], [-b * X_], diffusion=1, name="im_r9")


def test_extended_sign_assumptions_are_checked_like_the_plain_ones():
    """``sp.Symbol("x", extended_positive=True)`` simplifies ``Abs(x)`` to ``x`` as
    ``positive=True`` does, but ``x.is_positive`` is None (x might be ∞), so the data's sign was
    not checked: ``1/x - a*Abs(x)`` became ``1/x - a*x`` and a fit on data of both signs
    returned an estimate without a word.  Positive data (exact draws of the Rayleigh law of
    p ∝ x·exp(-a·x²/2), a = 1) fit as the same drift written for x > 0."""
    x = sp.Symbol("x", extended_positive=True)
    model = ds.SDEModel([x], [A_], [1 / x - A_ * sp.Abs(x)], diffusion=1, name="ext_pos_r9")
    rng = np.random.default_rng(0)
    positive = rng.rayleigh(size=(2000, 1))
    signs = np.where(np.arange(2000) % 4 == 1, -1.0, 1.0)[:, None]
    with pytest.raises(
        ds.DataError,
        match=re.escape(
            f"X: column 'x' holds 500 value(s) ≤ 0 (row 1: {-positive[1, 0]:.3g}), but model "
            "'ext_pos_r9' declares x extended_positive=True, under which SymPy has already "
            "simplified its drift and D (Abs(x) is x)"
        ),
    ):
        ds.fit_global(model, positive * signs, features=FEATURES)
    oracle = ds.SDEModel([X_], [A_], [1 / X_ - A_ * X_], diffusion=1, name="pos_oracle_r9")
    fit = ds.fit_global(model, positive, features=FEATURES)
    np.testing.assert_allclose(
        fit.theta, ds.fit_global(oracle, positive, features=FEATURES).theta, rtol=1e-12
    )
    assert abs(fit.theta[0] - 1.0) < 0.15
    s = sp.Symbol("s", extended_nonnegative=True)
    with_input = ds.SDEModel(
        [X_], [A_], [-A_ * X_ + sp.Abs(s)], diffusion=1, inputs=[s], name="ext_in_r9"
    )
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "inputs: value of 's' is -1, but model 'ext_in_r9' declares input s "
            "extended_nonnegative=True"
        ),
    ):
        ds.simulate(with_input, [1.0], 100, inputs={"s": -1.0})


def test_an_integer_constant_beyond_int64_is_named_before_the_kernels_are_written(tmp_path):
    """``-a*x*10**30`` (SymPy keeps it an exact integer) was printed as an integer literal, and
    Numba refused the kernel in ``simulate``: "TypingError: Int value is too large:
    1000000000000000000000000000000" (so was the 2·10²⁰ of D = 10²⁰(1 + x²)), with the module
    left on disk.  The declaration still passes (SymPy's reading of the drift, as
    ``test_drift_strings_with_bounded_constants_still_declare`` asks); compiling names the entry
    and the fix before a file is written.  The same constant as a float simulates, and its
    samples are those of the drift with the constant folded by hand."""
    big = ds.SDEModel([X_], [A_], [-A_ * X_ * sp.Integer(10) ** 30], diffusion=1, name="big_r9")
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "model 'big_r9': its kernels would hold the integer constant "
            "10000000…00000000 (31 digits) (from drift[0] (dx) = "
            "-1000000000000000000000000000000*a*x), beyond the 64-bit integers Numba compiles"
        ),
    ):
        ds.simulate(big, [1e-30], 100, execution=ds.Execution(out_dir=tmp_path))
    assert not list(tmp_path.glob("*.py"))  # nothing written
    wide_d = ds.SDEModel([X_], [A_], [-A_ * X_], 10**20 * (1 + X_**2), name="bigd_r9")
    with pytest.raises(ds.ModelError, match=re.escape("(from diffusion D[0,0] = ")):
        ds.compile_model(wide_d, out_dir=tmp_path)
    # a constant D = 10**20 passed simulate and fit_global, and failed in fit_local's kernels
    with pytest.raises(ds.ModelError, match=r"\(from diffusion D\[0,0\] = 100000000000000000000\)"):
        ds.compile_model(ds.SDEModel([X_], [A_], [-A_ * X_], diffusion=10**20, name="bd_r9"))
    # constants the kernels hold: a float, 2**63 - 1
    floated = ds.SDEModel([X_], [A_], [-A_ * X_ * 1e30], diffusion=1, name="float_r9")
    plain = ds.SDEModel([X_], [A_], [-A_ * X_], diffusion=1, name="plain_r9")
    np.testing.assert_allclose(
        ds.simulate(floated, [1e-30], 300, seed=3),
        ds.simulate(plain, [1e-30 * 1e30], 300, seed=3),
        rtol=1e-9,
        atol=1e-12,
    )
    ds.compile_model(ds.SDEModel([X_], [A_], [-A_ * X_], diffusion=1e20, name="bdf_r9"))
    edge = ds.SDEModel([X_], [A_], [-A_ * X_ * (2**63 - 1)], diffusion=1, name="edge_r9")
    assert ds.simulate(edge, [2.0**-63], 50, seed=1).shape == (50, 1)


def test_to_json_refuses_a_file_descriptor_and_expands_the_home_folder(tmp_path, monkeypatch):
    """``fit.to_json(1)`` (or ``True``) passed the integer to ``open()``, which took it as a file
    descriptor: the JSON went to standard output and the descriptor was closed after writing —
    every later ``print`` of the process failed with "Bad file descriptor".  ``"~/fit.json"``
    said "No such file or directory" (``load_model`` and ``out_dir=`` expand "~")."""
    import os

    rng = np.random.default_rng(1)
    model = ds.SDEModel([X_], [A_], [-A_ * X_], diffusion=1, name="ou1_r9")
    fit = ds.fit_global(model, rng.normal(size=(400, 1)), features=FEATURES)
    before = os.fstat(1)
    for bad in (1, True, np.int64(7)):
        with pytest.raises(
            ds.DataError,
            match=re.escape(
                f"to_json: path must be a file path (str or os.PathLike), got "
                f"{type(bad).__name__} {bad!r}: open() would take an integer as a file "
                "descriptor and close it after writing"
            ),
        ):
            fit.to_json(bad)
    assert os.fstat(1).st_ino == before.st_ino  # standard output is still open
    with pytest.raises(ds.DataError, match=r"^to_json: path must be a file path .*got list"):
        fit.to_json(["fit.json"])
    monkeypatch.setenv("HOME", str(tmp_path))
    text = fit.to_json("~/fit.json")
    assert json.loads((tmp_path / "fit.json").read_text()) == json.loads(text)


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_cli_bandwidth_and_n_blocks_are_refused_as_options(value, tmp_path, project_root):
    """``dynosed fit --bandwidth -1`` (0, nan, inf) said "Features.bandwidth must be positive"
    and ``--n-blocks 0`` on the global route "Execution.n_blocks must be at least 1 for
    fit_global", both exit 1 after the model was loaded: names the terminal user never typed.
    Now click's usage error names the option (exit 2), before the model is loaded; a positive
    bandwidth fits as ``Features(bandwidth=...)`` does."""
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(2).normal(size=(300, 2)))
    model = str(project_root / "models" / "ou2d_m12.py")
    runner = CliRunner()
    for command in ("fit", "check"):
        args = [command, model] + ([str(data)] if command == "fit" else ["--structural-only"])
        res = runner.invoke(main, [*args, f"--bandwidth={value}"])
        assert res.exit_code == 2, res.output
        assert (
            "Invalid value for --bandwidth: expected 'auto', 'median' or a positive finite "
            f"number, got '{value}'"
        ) in res.output, res.output
    res = runner.invoke(main, ["fit", model, str(data), "--n-blocks", "0"])
    assert res.exit_code == 2, res.output
    assert (
        "Invalid value for --n-blocks: 0 noise blocks is an option of the local route"
    ) in res.output, res.output
    if value == "-1":  # the local route takes 0 blocks; a positive bandwidth is the library's
        res = runner.invoke(main, ["fit", model, str(data), "--route", "local", "--n-blocks=0"])
        assert res.exit_code == 0, res.output
        res = runner.invoke(main, ["fit", model, str(data), "--bandwidth=1.5", "--json"])
        assert res.exit_code == 0, res.output
        record = json.loads(res.stdout[res.stdout.index("{") : res.stdout.rindex("}") + 1])
        fit = ds.fit_global(
            ds.load_model(model), np.load(data), features=ds.Features(bandwidth=1.5)
        )
        assert record["settings"]["bandwidth"] == 1.5
        assert record["parameters"][0]["estimate"] == fit.theta[0]


def test_bad_arguments_of_the_identifiability_checks_are_value_errors(models):
    """``check_identifiability(model, θ, route="globl")`` (and ``structural_check``), a model
    with inputs given to ``structural_check``, ``initial=`` without times and the local route
    without probes raised the bare base class ``DynosedError``: ``except ValueError`` — which
    catches every other bad value, ``DataError`` and ``ModelError`` — let them through."""
    ou = models["ou2d_m12"]
    cases = [
        (lambda: ds.check_identifiability(ou, ou.nominal, route="globl"), ds.DataError),
        (lambda: ds.structural_check(ou, route="globl"), ds.DataError),
        (lambda: ds.check_identifiability(ou, ou.nominal, route="local"), ds.DataError),
    ]
    s = sp.Symbol("s", real=True)
    with_input = ds.SDEModel([X_], [A_], [-A_ * X_ + s], diffusion=1, inputs=[s], name="in_r9")
    cases.append((lambda: ds.structural_check(with_input), ds.ModelError))
    initial = ds.Experiment(initial=(np.zeros(2), np.eye(2)))
    cases.append(
        (lambda: ds.check_identifiability(ou, ou.nominal, experiment=initial), ds.DataError)
    )
    messages = [
        "route must be 'global' or 'local', got 'globl'",
        "route must be 'global' or 'local', got 'globl'",
        "route='local' needs probes=",
        "the model has inputs (s): the structural check needs their values",
        "initial= is the law at t = 0 of a time course: pass times= as well",
    ]
    for (call, kind), message in zip(cases, messages):
        with pytest.raises(kind, match=re.escape(message)) as info:
            call()
        assert isinstance(info.value, ValueError)


def test_an_env_or_time_column_that_is_a_state_variable_is_refused(tmp_path, project_root):
    """``fit_global(model, frame, env_column="x")`` with x a state variable split the rows into
    one environment per distinct value of x and said "inputs: environment 'A' has no data
    (environments: 2.46…, -0.16…, …)" with all 2000 values; ``dynosed fit … --env-column x``
    said "X['0.1257302210933933']: 1 sample(s); at least 2 are needed", ``--time-column y``
    "X[t=-3.89942]: 1 sample(s)".  The environment column itself fits as before."""
    import pandas as pd
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    s = sp.Symbol("s", real=True)
    model = ds.SDEModel([X_], [A_], [-A_ * X_ + s], diffusion=1, inputs=[s], name="in_r9")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {"x": np.r_[rng.normal(1, 1, 500), rng.normal(3, 1, 500)], "env": ["A"] * 500 + ["B"] * 500}
    )
    inputs = {"A": {"s": 1.0}, "B": {"s": 3.0}}
    for role in ("env_column", "time_column"):
        with pytest.raises(
            ds.DataError,
            match=re.escape(
                f"{role}='x' is state variable x of model 'in_r9', whose values the fit reads "
                f"as data: {role} names the column that holds each row's"
            ),
        ):
            ds.fit_global(model, frame, inputs=inputs, features=FEATURES, **{role: "x"})
    with pytest.raises(ds.DataError, match=r"^env_column='x' is state variable x"):
        ds.fit_local(model, frame, [[1.0], [2.0]], inputs=inputs, env_column="x")
    by_column = ds.fit_global(model, frame, inputs=inputs, env_column="env", features=FEATURES)
    by_dict = ds.fit_global(
        model,
        {"A": frame.x.to_numpy()[:500, None], "B": frame.x.to_numpy()[500:, None]},
        inputs=inputs,
        features=FEATURES,
    )
    np.testing.assert_array_equal(by_column.theta, by_dict.theta)
    path = tmp_path / "envs.csv"
    two = pd.DataFrame({"x": frame.x, "y": frame.x[::-1].to_numpy(), "env": frame.env})
    two.to_csv(path, index=False)
    ou = str(project_root / "models" / "ou2d_m12.py")
    for option in ("--env-column", "--time-column"):
        res = CliRunner().invoke(main, ["fit", ou, str(path), option, "y"])
        assert res.exit_code == 2, res.output
        assert f"{option}='y' is state variable y of model 'ou2d_m12'" in res.output, res.output
    # an unknown environment among many: the known ones shown up to ten
    many = {f"e{i}": frame.x.to_numpy()[i * 50 : (i + 1) * 50, None] for i in range(12)}
    with pytest.raises(
        ds.ModelError,
        match=re.escape(
            "inputs: environment 'Z' has no data (environments: e0, e1, e2, e3, e4, e5, e6, e7, "
            "e8, e9, … (12 in all))"
        ),
    ):
        ds.fit_global(model, many, inputs={"Z": {"s": 1.0}}, features=FEATURES)


def test_a_csv_file_without_a_header_row_is_named_as_such(tmp_path, project_root):
    """A CSV file without a header row (``np.savetxt(path, X, delimiter=",")``) said only
    "DataFrame has no column 'x' for state variable 'x' (columns: '1.2502725102360923',
    '-1.509450593009372')"; now it says that the first row was read as the names, and how to
    fix it.  With the header row written, the command fits the file as the array."""
    import pandas as pd
    from click.testing import CliRunner

    from dynosed_sym.apps.cli import main

    data = np.random.default_rng(5).normal(size=(400, 2))
    path = tmp_path / "nohdr.csv"
    np.savetxt(path, data, delimiter=",", fmt="%.17g")
    ou = str(project_root / "models" / "ou2d_m12.py")
    hint = (
        "its column names are all numbers: a file without a header row has its first row of "
        "data read as the names (and lost as data): give the file a header row naming the "
        "state variables (x,y), or read it with header=None and name the columns"
    )
    res = CliRunner().invoke(main, ["fit", ou, str(path), "--features", "64"])
    assert res.exit_code == 1 and hint in res.output, res.output
    assert f"(columns: '{data[0, 0]:.17g}', '{data[0, 1]:.17g}')" in res.output, res.output
    with pytest.raises(ds.DataError, match=re.escape(hint)):
        ds.fit_global(ds.load_model(ou), pd.read_csv(path), features=FEATURES)
    fixed = tmp_path / "hdr.csv"
    np.savetxt(fixed, data, delimiter=",", fmt="%.17g", header="x,y", comments="")
    res = CliRunner().invoke(main, ["fit", ou, str(fixed), "--features", "64", "--json"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.stdout[res.stdout.index("{") : res.stdout.rindex("}") + 1])
    fit = ds.fit_global(ds.load_model(ou), data, features=FEATURES)
    assert record["parameters"][0]["estimate"] == fit.theta[0]
