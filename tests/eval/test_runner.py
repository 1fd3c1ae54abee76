"""The runner grades episodes through the real harness and records crashes, never silent zeros."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shadowrl.commands.config import Config, episode_spec
from shadowrl.episode import PolicyFactory, ReferencePolicy
from shadowrl.eval.pins import config_pins
from shadowrl.eval.result import EvalResult
from shadowrl.eval.runner import evaluate
from shadowrl.models import load_tokenizer
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.task import Task
from shadowrl.types import Policy

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)


async def _evaluate(
    tasks: list[Task], factory: PolicyFactory, config: Config, samples: int, concurrency: int
) -> EvalResult:
    """`evaluate` wired from a config tree, as `shadowrl eval` wires it."""
    settings = config.eval.model_copy(update={"samples": samples, "concurrency": concurrency})
    return await evaluate(
        tasks,
        factory,
        episode_spec(config),
        settings=settings,
        cache_dir=config.tasks.cache_dir,
        config_pins=config_pins(config),
        seed=config.seed,
        suite="inline",
        progress=False,
    )


async def test_unpreparable_task_is_recorded_as_crashed_samples(tmp_path: Path) -> None:
    missing = Task.model_validate(
        {
            "instance_id": "gone-1",
            "repo": "demo/gone",
            "problem_statement": "x",
            "patch": "",
            "FAIL_TO_PASS": ["test_x.py::test_x"],
            "seed": {"path": str(tmp_path / "does-not-exist")},
            "tier": "easy",
        }
    )
    config = Config.model_validate({"tasks": {"cache_dir": str(tmp_path / "cache")}})
    noop = ReferencePolicy("noop", tokenizer=load_tokenizer())  # the harness pin renders
    result = await _evaluate([missing], noop, config, 3, 2)
    (task,) = result.tasks
    assert [s.end for s in task.samples] == ["crash"] * 3
    assert all("does-not-exist" in (s.error or "") for s in task.samples)
    assert result.overall.errors == 3 and result.overall.episodes == 3
    assert result.overall.pass1.value == 0.0
    assert result.by_tier["easy"].errors == 3
    assert result.pins.policy == "reference:noop"
    assert result.pins.config_digest == config.digest()
    assert result.behaviour.episodes == 0  # no trajectory to describe


CALC = "def add(a, b):\n    return a + b\n"
HIDDEN = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = {"name": "edit_file", "arguments": {"path": "calc.py", "old": "a - b", "new": "a + b"}}
SUBMIT = {"name": "submit", "arguments": {}}


def _call(call: Mapping[str, object]) -> str:
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def tiny_task(root: Path) -> Task:
    from shadowrl.tasks.patch import make_patch

    (root / "calc.py").write_text(CALC)
    buggy = CALC.replace("a + b", "a - b")
    record = {
        "instance_id": "tiny__add-1",
        "repo": "local/tiny",
        "problem_statement": "`calc.add(2, 3)` returns -1 instead of 5.",
        "patch": make_patch({"calc.py": buggy}, {"calc.py": CALC}),
        "bug_patch": make_patch({"calc.py": CALC}, {"calc.py": buggy}),
        "test_patch": make_patch({}, {"test_add.py": HIDDEN}),
        "FAIL_TO_PASS": ["test_add.py::test_add"],
        "seed": {"path": str(root)},
        "tier": "easy",
        "timeout_s": 60,
    }
    return Task.model_validate(record)


@dataclass
class Scripted:
    """Per-episode scripted policies: sample i follows `scripts[i % len(scripts)]`."""

    scripts: list[list[str]]
    tokenizer: Any
    made: int = 0
    description: str = "scripted"

    def __call__(self, task: Task, prepared: PreparedTask) -> Policy:
        from shadowrl.agent.policies import ScriptedPolicy

        script = self.scripts[self.made % len(self.scripts)]
        self.made += 1
        return ScriptedPolicy(self.tokenizer, script)


@pytest.mark.slow
async def test_real_harness_grades_fix_and_no_fix(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    config = Config.model_validate(
        {"tasks": {"cache_dir": str(CACHE)}, "sandbox": {"backend": "local"}}
    )
    fixer = [_call(FIX), _call(SUBMIT)]
    quitter = [_call(SUBMIT)]
    factory = Scripted(
        [fixer, quitter, fixer, ["<tool_call>\n{oops\n</tool_call>", _call(SUBMIT)]],
        load_tokenizer(),
    )
    result = await _evaluate([tiny_task(seed)], factory, config, 4, 4)
    (task,) = result.tasks
    assert task.group == tiny_task(seed).repo  # tasks of one source are resampled together
    assert [s.error for s in task.samples] == [None] * 4
    assert sorted(s.resolved for s in task.samples) == [False, False, True, True]
    assert result.overall.pass1.value == 0.5
    assert result.overall.pass_k[4].value == 1.0  # some sample of 4 passes
    assert result.overall.pass_k[2].value == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert result.behaviour.episodes == 4
    assert result.behaviour.tool_mix["edit_file"] == pytest.approx(2 / 6)
    assert result.behaviour.edit_before_read_rate == 0.5  # the fixers never read calc.py
    assert sum(s.tool_errors for s in task.samples) >= 1  # the malformed call
    for s in task.samples:  # eval.json says why each sample was (not) resolved
        assert s.grading is not None and s.grading.status == "ran"
        want = "passed" if s.resolved else "failed"
        assert s.grading.fail_to_pass == {"test_add.py::test_add": want}
        failed_line = "FAILED test_add.py::test_add" in s.grading.log_tail  # pytest's summary
        assert failed_line != s.resolved


def test_without_a_terminal_progress_is_a_log_line_per_tenth(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from shadowrl.eval.runner import _progress

    caplog.set_level("INFO", logger="shadowrl.eval.runner")
    with _progress(True, 25) as advance:  # pytest captures stdout: no terminal
        for i in range(25):
            advance(i % 5 == 0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 13  # every 2 samples (25 // 10), and the last
    assert lines[0].startswith("eval: 2/25 samples, 1 resolved")
    assert lines[-1].startswith("eval: 25/25 samples, 5 resolved")
