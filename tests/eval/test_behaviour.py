"""Behaviour metrics on hand-built trajectories with known answers."""

from __future__ import annotations

from typing import Any

import pytest

from shadowrl.eval.behaviour import episode_behaviour, summarize_behaviour
from shadowrl.types import Segment, Step, ToolCall, ToolResult, Trajectory

_ids = iter(range(10_000))


def _step(*calls: tuple[str, dict[str, Any], bool]) -> Step:
    tcs, results = [], []
    for name, args, ok in calls:
        cid = f"c{next(_ids)}"
        tcs.append(ToolCall(cid, name, args))
        results.append(ToolResult(cid, name, "ok" if ok else "error: no match", is_error=not ok))
    return Step(text="", tool_calls=tuple(tcs), results=tuple(results))


def _traj(
    steps: list[Step], generated: int, tool_errors: int = 0, wall_s: float = 1.0
) -> Trajectory:
    seg = Segment(
        token_ids=tuple(range(generated + 3)),
        loss_mask=(False,) * 3 + (True,) * generated,
        logprobs=(0.0,) * (generated + 3),
        versions=(-1,) * 3 + (0,) * generated,
    )
    return Trajectory("t", (), tuple(steps), (seg,), "submitted", tool_errors, wall_s)


READ = ("read_file", {"path": "src/a.py"}, True)
EDIT_A = (
    "edit_file",
    {"path": "./src/a.py", "old": "x = 1\ny = 2", "new": "x = 3\ny = 2"},
    True,
)
EDIT_B = ("edit_file", {"path": "b.py", "old": "a", "new": "b\nc"}, True)
FAILED_EDIT = ("edit_file", {"path": "c.py", "old": "zz", "new": "q"}, False)
NEW_FILE = ("write_file", {"path": "new.py", "content": "1\n2\n3\n"}, True)


def test_read_then_edit_is_not_blind_and_diff_counts_changed_lines() -> None:
    e = episode_behaviour(_traj([_step(READ), _step(EDIT_A, ("run", {"cmd": "pytest"}, True))], 40))
    assert e.tool_counts == {"read_file": 1, "edit_file": 1, "run": 1}
    assert e.tool_calls == 3 and e.turns == 2 and e.tokens == 40
    assert not e.edit_before_read  # "./src/a.py" is the file read as "src/a.py"
    assert e.files_edited == {"src/a.py"}
    assert e.diff_lines == 2  # -"x = 1" +"x = 3"; "y = 2" unchanged


def test_blind_edit_new_file_and_failed_edit() -> None:
    e = episode_behaviour(_traj([_step(EDIT_B, NEW_FILE, FAILED_EDIT)], 10, tool_errors=1))
    assert e.edit_before_read  # edited b.py without reading it
    assert e.files_edited == {"b.py", "new.py"}  # the failed edit of c.py changed nothing
    assert e.diff_lines == 3 + 3  # b.py: -a +b +c ; new.py: three added lines
    assert e.tool_errors == 1


def test_creating_a_file_is_not_a_blind_edit() -> None:
    e = episode_behaviour(
        _traj([_step(NEW_FILE), _step(("edit_file", {**EDIT_B[1], "path": "new.py"}, True))], 5)
    )
    assert not e.edit_before_read


def test_summary_over_episodes() -> None:
    a = _traj([_step(READ), _step(EDIT_A)], 40, wall_s=2.0)  # 2 turns, 2 calls
    b = _traj([_step(EDIT_B, NEW_FILE, FAILED_EDIT)], 20, tool_errors=1, wall_s=4.0)  # 1 turn
    s = summarize_behaviour([a, b], [True, False])
    assert s.episodes == 2
    assert s.tool_mix == pytest.approx(
        {"edit_file": 3 / 5, "read_file": 1 / 5, "write_file": 1 / 5}
    )
    assert s.tool_calls_per_turn == pytest.approx(5 / 3)
    assert s.edit_before_read_rate == 0.5
    assert s.files_edited == 1.5  # {a.py} and {b.py, new.py}
    assert s.diff_lines == (2 + 6) / 2
    assert s.tokens_per_resolved == 60.0  # all tokens spent / one resolved episode
    assert (s.turns, s.tool_errors, s.wall_s) == (1.5, 0.5, 3.0)
    assert summarize_behaviour([b], [False]).tokens_per_resolved is None


def test_a_question_instead_of_work_is_clarifying_and_a_question_with_an_edit_is_not() -> None:
    ask = Step(text="Which file holds the bug? Could you tell me?", tool_calls=(), results=())
    assert episode_behaviour(_traj([ask], 10)).clarifying
    assert not episode_behaviour(_traj([ask, _step(EDIT_B)], 10)).clarifying
    assert not episode_behaviour(_traj([_step(READ)], 10)).clarifying  # no question
    broken = Step(text="Is it this? <tool_call>{", tool_calls=(), results=(),
                  parse_errors=("tool call 1: bad JSON",))  # fmt: skip
    assert not episode_behaviour(_traj([broken], 10)).clarifying  # a malformed call, not a question
