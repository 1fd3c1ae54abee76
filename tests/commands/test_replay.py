"""`shadowrl run --save` then `shadowrl replay --from-turn K`: the continuation from the
rebuilt state regenerates the recorded tail (greedy tiny model, recorded tool outputs),
and the recorded tail teacher-forced through the same weights gives the recorded
logprobs within 1e-4; bad input is a one-line usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowrl.commands.main import main
from shadowrl.replay import record

BUDGET = ["--sandbox.backend=local", "--agent.max_turns=3", "--agent.max_new_tokens=24"]


def test_run_save_then_replay_regenerates_the_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "t.json"
    assert main(["run", "--model", "tiny", "--greedy", "--save", str(saved), *BUDGET]) == 0
    rec = record.load(saved)
    assert len(rec.trajectory.steps) == len(rec.files_after) == 3
    assert rec.meta["agent"]["temperature"] == 0.0
    capsys.readouterr()
    assert main(["replay", str(saved), "--from-turn", "2", "--sandbox.backend=local"]) == 0
    out = capsys.readouterr().out
    assert "turn 2" in out and "turn 1 " not in out
    assert "regenerated the recorded tail token for token" in out
    gap = float(out.split("max |Δ logprob| = ")[1].split()[0])
    assert gap < 1e-4 and "over 48 tokens" in out  # turns 2 and 3, 24 tokens each


def test_replay_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert main(["replay", str(bad), "--from-turn", "1"]) == 2
    assert "not a saved trajectory" in capsys.readouterr().err
