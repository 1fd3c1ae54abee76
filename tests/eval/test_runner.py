"""The runner records failures as crashes with their traceback, never as silent zeros."""

from __future__ import annotations

from pathlib import Path

from shadowrl.config import Config
from shadowrl.eval.policies import ReferencePolicy
from shadowrl.eval.runner import evaluate
from shadowrl.tasks.task import Task


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
    result = await evaluate(
        [missing],
        ReferencePolicy("noop", tokenizer=None),
        samples=3,
        concurrency=2,
        config=config,
        suite="inline",
        progress=False,
    )
    (task,) = result.tasks
    assert [s.end for s in task.samples] == ["crash"] * 3
    assert all("does-not-exist" in (s.error or "") for s in task.samples)
    assert result.overall.errors == 3 and result.overall.episodes == 3
    assert result.overall.pass1.value == 0.0
    assert result.by_tier["easy"].errors == 3
    assert result.pins.policy == "reference:noop"
    assert result.pins.config_digest == config.digest()
    assert result.behaviour.episodes == 0  # no trajectory to describe
