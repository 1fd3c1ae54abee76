"""Reference policies through the real harness: gold resolves every task, noop none."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.episode import EpisodeSpec, run_reference
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.reference import file_edits, gold_replies, minimal_hunk
from shadowrl.tasks.task import SUITES_DIR


def _spec(backend: str) -> EpisodeSpec:
    return EpisodeSpec(sandbox=SandboxConfig(backend=backend))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


def _check(prepared: PreparedTask, tokenizer: Any, backend: str = "local") -> None:
    assert asyncio.run(run_reference("gold", prepared, tokenizer, _spec(backend))) == (True, 1.0)
    assert asyncio.run(run_reference("noop", prepared, tokenizer, _spec(backend))) == (False, 0.0)


def test_gold_uses_targeted_edits(tiny: PreparedTask) -> None:
    replies = gold_replies(tiny.task, tiny)
    assert '"edit_file"' in replies[0] and '"submit"' in replies[-1] and len(replies) == 2


@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_tiny_task(backend: str, tiny: PreparedTask, tokenizer: Any) -> None:
    from .conftest import overlay_available

    if backend == "overlay" and not overlay_available():
        pytest.skip("overlay sandbox unavailable")
    _check(tiny, tokenizer, backend)


SUITES = [s for s in ("easy", "medium", "hard") if (SUITES_DIR / f"{s}.jsonl").exists()]


@pytest.mark.parametrize("suite", SUITES)
def test_builtin_suite_sample(suite: str, cache_dir: Path, tokenizer: Any) -> None:
    tasks = load_suite(suite)
    for task in tasks[:: max(1, len(tasks) // 2)][:2]:
        _check(prepare(task, cache_dir), tokenizer)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # medium alone takes 7.5 min on a quiet 2-core box; over 15 loaded
@pytest.mark.parametrize("suite", SUITES)
def test_builtin_suite_all(suite: str, cache_dir: Path, tokenizer: Any) -> None:
    failures = []
    for task in load_suite(suite):
        prepared = prepare(task, cache_dir)
        gold = asyncio.run(run_reference("gold", prepared, tokenizer, _spec("local")))
        noop = asyncio.run(run_reference("noop", prepared, tokenizer, _spec("local")))
        if gold != (True, 1.0) or noop != (False, 0.0):
            failures.append(task.instance_id)
    assert not failures


@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_agent_can_run_visible_tests_as_prompted(
    backend: str, tiny: PreparedTask, tokenizer: Any, sandbox_for: Any
) -> None:
    from shadowrl.agent.loop import run_episode
    from shadowrl.agent.policies import ScriptedPolicy
    from shadowrl.tasks.prepare import task_prompt, visible_test_command
    from shadowrl.tasks.reference import reference_agent_config

    prompt = task_prompt(tiny.task)
    command = visible_test_command(tiny.task)
    assert f"`{command}`" in prompt and tiny.task.problem_statement in prompt
    assert command.startswith("python ") and command.endswith(" -m pytest -q")
    run = json.dumps({"name": "run", "arguments": {"command": f"{command} test_calc.py"}})
    replies = [
        f"<tool_call>{run}</tool_call>",
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>',
    ]
    box = sandbox_for(tiny, backend)
    traj = asyncio.run(
        run_episode(
            ScriptedPolicy(tokenizer, replies),
            box,
            prompt,
            tokenizer=tokenizer,
            config=reference_agent_config(),
        )
    )
    assert "1 passed" in traj.steps[0].results[0].output


def test_minimal_hunk_keeps_only_the_changed_line() -> None:
    text = "def f(x):\n    y = x + 1\n    return y\n"
    old = "def f(x):\n    y = x + 1\n    return y\n"
    new = "def f(x):\n    y = x - 1\n    return y\n"
    assert minimal_hunk(text, old, new) == ("    y = x + 1\n", "    y = x - 1\n")


def test_minimal_hunk_grows_context_until_unique() -> None:
    text = "a = 1\nb = 0\nc = 2\nb = 0\nd = 3\n"
    old, new = "c = 2\nb = 0\nd = 3\n", "c = 2\nb = 5\nd = 3\n"
    small_old, small_new = minimal_hunk(text, old, new)
    assert text.count(small_old) == 1 and "b = 0" in small_old
    assert text.replace(small_old, small_new) == "a = 1\nb = 0\nc = 2\nb = 5\nd = 3\n"


def test_minimal_hunk_of_a_pure_insertion_keeps_an_anchor() -> None:
    text = "x = 1\ny = 2\n"
    small_old, small_new = minimal_hunk(text, "x = 1\ny = 2\n", "x = 1\nz = 9\ny = 2\n")
    assert small_old.strip() and text.count(small_old) == 1
    assert text.replace(small_old, small_new) == "x = 1\nz = 9\ny = 2\n"


def _edit_args(replies: list[str]) -> list[dict[str, str]]:
    calls = [parse_tool_calls(r).calls[0] for r in replies]
    assert all(c.name == "edit_file" for c in calls), calls
    return [c.arguments for c in calls]


def test_nearby_changes_are_separate_short_edits() -> None:
    before = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    return c\n"
    after = before.replace("x + 1", "x - 1").replace("b - 3", "b + 3")
    edits = _edit_args(file_edits("m.py", before, after))
    assert [(e["old"], e["new"]) for e in edits] == [
        ("    a = x + 1\n", "    a = x - 1\n"),
        ("    c = b - 3\n", "    c = b + 3\n"),
    ]


def test_edits_after_an_insertion_match_the_text_as_left() -> None:
    before = "x = 1\ny = 2\nx = 1\nz = 3\n"
    after = "x = 1\nw = 0\ny = 2\nx = 1\nz = 4\n"
    text = before
    for e in _edit_args(file_edits("m.py", before, after)):
        assert text.count(e["old"]) == 1
        text = text.replace(e["old"], e["new"])
    assert text == after
