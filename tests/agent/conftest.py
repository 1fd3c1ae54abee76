"""Shared fixtures: the real SmolLM2 tokenizer (cached), the demo repo in a real sandbox
and a scripted conversation that fixes it (the model side of the harness's tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shadowrl
from shadowrl.agent.prompt import format_tool_calls
from shadowrl.sandbox import create_sandbox
from shadowrl.types import ToolCall

DEMO_DIR = Path(shadowrl.__file__).parent / "data" / "demo"
DEMO_TEST_CMD = "python3 -m unittest -q test_stats"


def _reply(content: str, *calls: tuple[str, dict[str, object]]) -> str:
    return format_tool_calls(
        content, [ToolCall(f"c{i}", name, dict(args)) for i, (name, args) in enumerate(calls)]
    )


@pytest.fixture
def demo_test_cmd() -> str:
    """The demo repo's own test command (exit 0 once median() is fixed)."""
    return DEMO_TEST_CMD


@pytest.fixture
def demo_repo() -> Path:
    return DEMO_DIR / "repo"


@pytest.fixture
def demo_replies() -> list[str]:
    """What a competent agent says, turn by turn, to fix the demo repo (parallel reads,
    an edit, a test run, submit)."""
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
        _reply("Now run the tests.", ("run", {"command": DEMO_TEST_CMD})),
        _reply("The tests pass.", ("submit", {})),
    ]


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


@pytest.fixture
def demo_sandbox() -> Iterator[Any]:
    """The demo task's repo in the `local` backend (a private copy; fast everywhere)."""
    sb = create_sandbox(DEMO_DIR / "repo", backend="local")
    yield sb
    sb.close()
