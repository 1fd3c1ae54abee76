"""`shadowrl run --model scripted` solves the demo task and prints a readable transcript."""

from __future__ import annotations

import argparse

import pytest

from shadowrl.commands.config import load_config
from shadowrl.commands.run import add_args, run


def test_run_scripted_demo_prints_transcript_diff_and_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_args(parser)
    args = parser.parse_args(["--task", "demo", "--model", "scripted"])
    config = load_config(overrides=["--sandbox.backend=local"])
    assert run(args, config) == 0
    out = capsys.readouterr().out
    assert "demo-median" in out and "turn 1" in out and "→ read_file" in out
    assert "→ edit_file" in out and "exit code 0" in out
    assert "+    values = sorted(values)" in out
    assert "submitted" in out and "PASS" in out
    assert ".pytest_cache" not in out  # the tests the expert ran leave a cache: not its diff
