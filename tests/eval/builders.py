"""Constructed eval results with known per-sample outcomes, for gate/report tests."""

from __future__ import annotations

from typing import Any

from shadowrl.eval.behaviour import summarize_behaviour
from shadowrl.eval.result import EvalResult, Pins, SampleResult, TaskResult, score, score_by_tier

SECTIONS = {"agent": "a1", "sandbox": "s1", "tasks": "t1", "tasks.shaping": "r1", "model": "m1"}


def make_result(
    outcomes: list[list[bool]],
    *,
    crash: bool = False,
    pins: dict[str, Any] | None = None,
    groups: list[str] | None = None,
) -> EvalResult:
    """A result whose task i has samples `outcomes[i]` (True = resolved), in `groups[i]`."""
    tasks = [
        TaskResult(
            instance_id=f"task-{i}",
            tier="easy" if i % 2 else "hard",
            group=groups[i] if groups else "",
            samples=[
                SampleResult(sample=j, resolved=r, reward=float(r), end="submitted")
                for j, r in enumerate(row)
            ],
        )
        for i, row in enumerate(outcomes)
    ]
    if crash:
        tasks[0].samples[0] = SampleResult(
            sample=0, resolved=False, reward=0.0, end="crash", error="RuntimeError: boom"
        )
    return from_tasks(tasks, **(pins or {}))


def from_tasks(tasks: list[TaskResult], **pins: Any) -> EvalResult:
    """A scored result of these per-task samples under default pins (`pins` override)."""
    fields: dict[str, Any] = {
        "suite": "easy",
        "suite_hash": "h1",
        "harness_version": "v1",
        "config_digest": "c",
        "config_sections": SECTIONS,
        "policy": "p",
    }
    fields.update(pins)
    return EvalResult(
        pins=Pins.model_validate(fields),
        samples=len(tasks[0].samples),
        tasks=tasks,
        overall=score(tasks),
        by_tier=score_by_tier(tasks),
        behaviour=summarize_behaviour([], []),
        wall_s=1.0,
        created="2025-01-01T00:00:00",
    )


def rows(n_tasks: int, passes: int, samples: int = 4) -> list[list[bool]]:
    """`n_tasks` tasks, each with `passes` of `samples` resolved."""
    return [[j < passes for j in range(samples)] for _ in range(n_tasks)]
