"""A missing real component skips a test here and fails it under CI (`required.py`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from required import require, unavailable


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_under_ci_a_missing_component_fails(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="overlay sandbox: no bwrap"):
        require("no bwrap", "overlay sandbox")


def test_elsewhere_it_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium"):
        unavailable("no chromium")
    require(None, "overlay sandbox")  # present: nothing happens


def test_the_sandbox_suites_marker_goes_through_the_rule(tmp_path: Path) -> None:
    """A test marked `needs_overlay` errors, not skips, under CI where the overlay sandbox
    is unavailable (forced here by an empty PATH: no bwrap)."""
    tests = Path(__file__).parent
    shutil.copy(tests / "sandbox" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_isolated.py").write_text(
        "import pytest\n\n@pytest.mark.needs_overlay\ndef test_isolated():\n    pass\n"
    )
    src = tests.parent / "src"
    env = {"PATH": "", "PYTHONPATH": os.pathsep.join([str(tests), str(src)])}
    for ci, outcome in (("true", "1 error"), ("", "1 skipped")):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
            env={**env, "CI": ci}, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert outcome in run.stdout, run.stdout[-2000:]
