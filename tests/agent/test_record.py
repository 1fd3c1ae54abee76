"""Saved episodes: the file round-trips, and the checkpoint rebuilt at any turn from the
record (tokens cut from the segments, workspace from the saved files) continues into the
recorded episode token for token, summarised chains included."""

from __future__ import annotations

import asyncio
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from test_checkpoint import CFG, DEMO_REPO, Recording, assert_same_episode

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.summary import SummarisingScript
from shadowrl.agent.tools import ToolSet
from shadowrl.replay import record
from shadowrl.replay.record import RecordedOutputs
from shadowrl.sandbox import create_sandbox
from shadowrl.types import Trajectory


def summary_config() -> AgentConfig:
    s = {"enabled": True, "trigger_tokens": 1300, "max_tokens": 64, "carried_result_tokens": 32}
    return AgentConfig.model_validate(
        {"max_new_tokens": 128, "max_turns": 12, "tools": (*CFG.tools, "summarize"),
         "summary": {**s, "prompt_reserve_tokens": 700}}
    )  # fmt: skip


def recorded(tmp_path: Path, tokenizer: Any, script: Any, config: AgentConfig) -> Path:
    files: list[dict[str, str | None]] = []
    with closing(create_sandbox(DEMO_REPO, backend="local")) as sb:
        traj = asyncio.run(
            run_episode(
                ScriptedPolicy(tokenizer, script),
                sb,
                "Fix it.",
                tokenizer=tokenizer,
                config=config,
                on_step=lambda step: files.append(record.changed_files(sb)),
            )
        )
    path = tmp_path / "t.json"
    record.save(path, traj, files, task="demo")
    return path


def replay(
    rec: record.Record, turn: int, script: Recording, tokenizer: Any, config: AgentConfig
) -> Trajectory:
    with closing(create_sandbox(DEMO_REPO, backend="local")) as fresh:
        cp = record.checkpoint_at(rec, turn, fresh, config)
        with closing(cp.fork()) as sb:
            tools = RecordedOutputs(ToolSet.from_names(config.tools), rec.trajectory.steps)
            policy = ScriptedPolicy(tokenizer, lambda prompt: script.seen[prompt])
            traj = asyncio.run(
                run_episode(
                    policy, sb, "", tokenizer=tokenizer, config=config, tools=tools, start=cp
                )
            )
        cp.release()
    return traj


@pytest.mark.parametrize("summarised", [False, True])
def test_replay_from_every_turn_reproduces_the_record(
    tmp_path: Path, tokenizer: Any, demo_replies: list[str], summarised: bool
) -> None:
    config = summary_config() if summarised else CFG
    replies = iter(demo_replies)
    script = Recording(
        SummarisingScript(demo_replies, "median() does not sort. Sort a copy.")
        if summarised
        else lambda prompt: next(replies)
    )
    rec = record.load(recorded(tmp_path, tokenizer, script, config))
    original = rec.trajectory
    assert original.end == "submitted" and len(original.segments) == (2 if summarised else 1)
    assert "sorted" in (rec.files_after[1]["stats.py"] or "") and rec.files_after[0] == {}
    summaries = [k for k, s in enumerate(original.steps) if summarised and not s.tool_calls]
    for turn in range(1, len(original.steps)):
        if turn in summaries:
            with pytest.raises(ValueError, match="is a summary"):
                replay(rec, turn, script, tokenizer, config)
            continue
        assert_same_episode(replay(rec, turn, script, tokenizer, config), original)
    assert len(summaries) == summarised


def test_bad_turn_and_bad_file(tmp_path: Path, tokenizer: Any, demo_replies: list[str]) -> None:
    replies = iter(demo_replies)
    rec = record.load(recorded(tmp_path, tokenizer, Recording(lambda p: next(replies)), CFG))
    with (
        closing(create_sandbox(DEMO_REPO, backend="local")) as sb,
        pytest.raises(ValueError, match=r"1\.\.3"),
    ):
        record.checkpoint_at(rec, 4, sb)
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="not a shadowrl trajectory"):
        record.load(tmp_path / "x.json")


def test_a_record_without_files_rebuilds_the_workspace_by_rerunning_edits(
    tmp_path: Path, tokenizer: Any, demo_replies: list[str]
) -> None:
    """Rollouts, eval episodes and served sessions keep no per-turn files: the recorded
    edit is re-run on the fresh workspace, so turn 3 on sees the fixed file and the
    continuation (recorded test output included) is the recorded episode."""
    replies = iter(demo_replies)
    script = Recording(lambda prompt: next(replies))
    rec = record.load(recorded(tmp_path, tokenizer, script, CFG))
    bare = record.Record(rec.trajectory, (), rec.meta)
    edit = next(
        k for k, s in enumerate(rec.trajectory.steps) if s.tool_calls[0].name == "edit_file"
    )
    for turn in range(1, len(rec.trajectory.steps)):
        assert_same_episode(replay(bare, turn, script, tokenizer, CFG), rec.trajectory)
    with closing(create_sandbox(DEMO_REPO, backend="local")) as fresh:
        cp = record.checkpoint_at(bare, edit + 1, fresh, CFG)
        with closing(cp.fork()) as sb:
            assert b"sorted" in sb.read_file("stats.py")
        cp.release()
        with pytest.raises(ValueError, match="needs the agent config"):
            record.checkpoint_at(bare, 1, fresh)
    # an edit that no longer applies (the workspace is not the recorded one) is refused
    with closing(create_sandbox(DEMO_REPO, backend="local")) as fresh:
        fresh.write_file("stats.py", "def median(values):\n    return 0\n")
        with pytest.raises(ValueError, match="not the recorded one"):
            record.checkpoint_at(bare, edit + 1, fresh, CFG)
