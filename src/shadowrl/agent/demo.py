"""The built-in demo task and a scripted expert that solves it.

A task directory holds `problem.md` (what the agent is told), `repo/` (the starting
workspace) and `task.json` (`id` and the `test_cmd` that decides success). The demo
(`data/demo`) is a tiny stats module whose `median` forgets to sort. The expert
replies in the canonical Hermes format, so `shadowrl run --model scripted` shows
the whole loop (parallel reads, an edit, a test run, submit) without any model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shadowrl.agent.prompt import format_tool_calls
from shadowrl.types import ToolCall

DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"


@dataclass(frozen=True)
class DirTask:
    """A task read from a directory (see the module docstring for the layout)."""

    id: str
    problem: str
    repo: Path
    test_cmd: str


def load_dir_task(path: str | Path) -> DirTask:
    """Read a task directory; `"demo"` names the built-in one."""
    root = DEMO_DIR if str(path) == "demo" else Path(path)
    meta = json.loads((root / "task.json").read_text())
    return DirTask(
        id=meta.get("id", root.name),
        problem=(root / "problem.md").read_text().strip(),
        repo=root / "repo",
        test_cmd=meta["test_cmd"],
    )


def _reply(content: str, *calls: tuple[str, dict[str, object]]) -> str:
    return format_tool_calls(
        content, [ToolCall(f"c{i}", name, dict(args)) for i, (name, args) in enumerate(calls)]
    )


def demo_expert_replies() -> list[str]:
    """What a competent agent says, turn by turn, to fix the demo task."""
    return [
        _reply(
            "Let me read the code and its test.",
            ("read_file", {"path": "stats.py"}),
            ("read_file", {"path": "test_stats.py"}),
        ),
        _reply(
            "median() indexes the list without sorting it first. Sorting a copy fixes it.",
            (
                "edit_file",
                {
                    "path": "stats.py",
                    "old": "    n = len(values)\n    mid",
                    "new": "    values = sorted(values)\n    n = len(values)\n    mid",
                },
            ),
        ),
        _reply("Now run the tests.", ("run", {"command": "python3 -m unittest -q test_stats"})),
        _reply("The tests pass.", ("submit", {})),
    ]
