"""The code style is part of the suite: ruff's linter and formatter (configured in pyproject.toml)
find nothing to change."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _ruff():
    exe = shutil.which("ruff") or str(pathlib.Path(sys.executable).with_name("ruff"))
    if not pathlib.Path(exe).exists():
        pytest.fail("ruff is not installed: pip install -e '.[test]' (make test does)")
    return exe


@pytest.mark.parametrize(
    "args", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"]
)
def test_ruff_is_clean(args):
    res = subprocess.run([_ruff(), *args], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, f"ruff {' '.join(args)} found problems:\n{res.stdout}{res.stderr}"
