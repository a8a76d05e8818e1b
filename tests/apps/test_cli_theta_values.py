"""``NAME=VALUE`` options of the CLI with values that are not finite numbers."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dynosed_sym.apps.cli import main


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
@pytest.mark.parametrize("option", ["--theta", "--nominal"])
def test_non_finite_values_are_usage_errors_naming_the_option(value, option, project_root):
    """``--theta M12=inf`` failed after the model was loaded, as an error of the command (exit 1,
    "theta: value of 'M12' is not finite"); now a usage error (exit 2) naming the option."""
    model = str(project_root / "models" / "ou2d.py")
    command = ["simulate", model, "-n", "10", "-o", "unused.csv"]
    if option == "--nominal":
        command = ["check", model, "--structural-only"]
    res = CliRunner().invoke(main, [*command, option, f"M12={value}"])
    assert res.exit_code == 2, res.output
    assert f"Invalid value for {option}: value of 'M12' is not finite: '{value}'" in res.output
