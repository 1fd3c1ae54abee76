"""The experts with a check (`reproduce`, `recover`) through the real harness and grader:
the reported call's output before the edit is the report's, after it the expected value;
a recovering demo's wrong edit leaves the call wrong, says so, and is followed by the fix."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from shadowrl.episode import EpisodeSpec, episode_in_new_sandbox
from shadowrl.pipeline.config import PipelineConfig
from shadowrl.rl.demos import expert_for
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.family.adversary import reported
from shadowrl.tasks.family.generate import Instance, call_outcomes
from shadowrl.tasks.family.mistakes import expected, wrong_edit
from shadowrl.tasks.family.suite import attempts
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.reference import reference_policy
from shadowrl.types import Trajectory

SPEC = EpisodeSpec(sandbox=SandboxConfig(backend="local"))
AGAIN = "Let me run the reported call again."


@pytest.fixture(scope="module")
def instances(cache_dir: Path) -> list[Instance]:
    python = env_python(build_env(("pytest",), cache_dir))
    return list(itertools.islice(attempts("train", 0, 0, python), 3))


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


def _play(name: str, prepared: PreparedTask, tokenizer: Any) -> tuple[Trajectory, bool]:
    policy = reference_policy(name, prepared.task, prepared, tokenizer)
    traj, verdict = asyncio.run(
        episode_in_new_sandbox(policy, prepared, tokenizer=tokenizer, spec=SPEC.for_reference())
    )
    assert traj.end == "submitted" and traj.tool_errors == 0
    return traj, verdict.resolved


def _checks(traj: Trajectory) -> list[str]:
    """The outputs of the runs of the reported call, in order."""
    ids = {c.id for m in traj.messages for c in m.tool_calls if "<<'EOF'" in str(c.arguments)}
    return [m.content for m in traj.messages if m.role == "tool" and m.tool_call_id in ids]


def _shows(output: str, outcome: Any) -> bool:
    if outcome.raises:
        return output.startswith("exit code 1") and f"\n{outcome.raises}" in output
    return output == f"exit code 0\n{outcome.value}"


def _got(prepared: PreparedTask) -> str:
    """The line the report shows under its `>>>` call (a value, or the exception's type)."""
    statement = prepared.task.problem_statement.split("```")[1]
    return statement.strip().splitlines()[-1]


def test_reproducing_expert_sees_the_bug_then_the_fix(
    instances: list[Instance], cache_dir: Path, tokenizer: Any
) -> None:
    for instance in instances:
        prepared = prepare(instance.task, cache_dir)
        traj, resolved = _play("reproduce", prepared, tokenizer)
        first, after = _checks(traj)
        assert resolved
        assert first.endswith(_got(prepared)), (first, _got(prepared))
        assert _shows(after, expected(reported(prepared))), after


def test_recovering_expert_sees_its_wrong_edit_fail_then_fixes_it(
    instances: list[Instance], cache_dir: Path, tokenizer: Any
) -> None:
    recovered = 0
    for instance in instances:
        prepared = prepare(instance.task, cache_dir)
        traj, resolved = _play("recover", prepared, tokenizer)
        assert resolved
        checks, want = _checks(traj), expected(reported(prepared))
        assert _shows(checks[-1], want)
        if len(checks) == 3:  # a wrong edit was found: its check failed, and the text says so
            recovered += 1
            assert not _shows(checks[1], want)
            said = [m.content for m in traj.messages if m.role == "assistant"]
            assert any("but it should" in text for text in said)
    assert recovered >= 2


def test_a_wrong_edit_is_not_the_fix_and_its_outcome_is_what_the_call_gives(
    instances: list[Instance], cache_dir: Path
) -> None:
    prepared = prepare(instances[0].task, cache_dir)
    rep = reported(prepared)
    path = f"{rep.module}.py"
    bug = prepared.read(path) or ""
    gold = apply_patch({path: bug}, prepared.task.patch)[path] or ""
    wrong = wrong_edit(bug, gold, rep, "seed")
    assert wrong is not None and wrong.source not in (bug, gold)
    args = f"({rep.call[len(rep.function) + 1 : -1]},)"
    assert call_outcomes(wrong.source, [(rep.function, args)]) == [wrong.outcome]
    assert wrong.outcome != expected(rep)
    assert wrong_edit(bug, gold, rep, "seed") == wrong  # seeded


def test_expert_for_splits_tasks_by_weight_and_always_alike() -> None:
    ids = [f"family__t-{i}" for i in range(3000)]
    picks = [expert_for(i, {"reproduce": 2.0, "recover": 1.0}) for i in ids]
    assert picks == [expert_for(i, {"recover": 1.0, "reproduce": 2.0}) for i in ids]
    assert 0.28 < picks.count("recover") / len(ids) < 0.39
    assert {expert_for(i, {"scripted": 1.0}) for i in ids[:50]} == {"scripted"}


def test_experts_must_be_known_and_weighted() -> None:
    assert PipelineConfig().experts == {"scripted": 1.0}
    with pytest.raises(ValidationError, match="unknown experts"):
        PipelineConfig(experts={"oracle": 1.0})
    with pytest.raises(ValidationError, match="weight > 0"):
        PipelineConfig(experts={"reproduce": 0.0})
