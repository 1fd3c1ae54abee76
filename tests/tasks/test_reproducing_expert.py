"""The experts with a check (`reproduce`, `recover`) through the real harness and grader:
the check of the reported call fails before the edit and passes after it; a recovering
demo's mistake (an edit the tool refuses, or a wrong one its check catches) is followed by
the fix, and SFT's loss skips the mistake's tokens."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from shadowrl.episode import EpisodeSpec, episode_in_new_sandbox
from shadowrl.pipeline.config import PipelineConfig
from shadowrl.rl.demos import expert_for, without_loss_on
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.family.adversary import reported
from shadowrl.tasks.family.generate import Instance, call_outcomes
from shadowrl.tasks.family.mistakes import expected, wrong_edit
from shadowrl.tasks.family.suite import attempts
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.reference import mistaken_steps, reference_policy
from shadowrl.types import Trajectory

SPEC = EpisodeSpec(sandbox=SandboxConfig(backend="local"))


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
    """The outputs of the runs of the check of the reported call, in order."""
    ids = {c.id for m in traj.messages for c in m.tool_calls if "<<'EOF'" in str(c.arguments)}
    return [m.content for m in traj.messages if m.role == "tool" and m.tool_call_id in ids]


def _got(prepared: PreparedTask) -> str:
    """The line the report shows under its `>>>` call (a value, or the exception's type)."""
    statement = prepared.task.problem_statement.split("```")[1]
    return statement.strip().splitlines()[-1]


def test_reproducing_expert_sees_its_check_fail_then_pass(
    instances: list[Instance], cache_dir: Path, tokenizer: Any
) -> None:
    for instance in instances:
        prepared = prepare(instance.task, cache_dir)
        traj, resolved = _play("reproduce", prepared, tokenizer)
        first, after = _checks(traj)
        assert resolved and mistaken_steps(traj.steps) == set()
        assert first.startswith("exit code 1") and _got(prepared) in first, first
        assert after.startswith("exit code 0"), after
        if not reported(prepared).raises:  # the value is shown as well as checked
            assert after == f"exit code 0\n{reported(prepared).returns}"


def test_recovering_expert_recovers_and_its_mistake_is_not_trained_on(
    instances: list[Instance], cache_dir: Path, tokenizer: Any
) -> None:
    kinds = set()
    for instance in instances:
        prepared = prepare(instance.task, cache_dir)
        traj, resolved = _play("recover", prepared, tokenizer)
        checks = _checks(traj)
        assert resolved and checks[0].startswith("exit code 1")
        assert checks[-1].startswith("exit code 0")
        (mistake,) = mistaken_steps(traj.steps)
        step = traj.steps[mistake]
        assert [c.name for c in step.tool_calls] == ["edit_file"]
        refused = "identical" in step.results[0].output
        kinds.add("no-op" if refused else "wrong")
        if not refused:  # the wrong edit's check failed
            assert len(checks) == 3 and checks[1].startswith("exit code 1")
        kept = without_loss_on(traj, {mistake})
        runs = _generated_runs(traj)
        assert len(runs) == len(traj.steps)
        assert _generated_runs(kept) == runs[:mistake] + runs[mistake + 1 :]
        assert '"edit_file"' in tokenizer.decode(runs[mistake])
    assert kinds == {"no-op", "wrong"}, kinds  # both kinds, seeded by the instance id


def _generated_runs(traj: Trajectory) -> list[list[int]]:
    """The token ids of each run of trained-on tokens, in order."""
    runs: list[list[int]] = []
    for seg in traj.segments:
        for i, (tok, on) in enumerate(zip(seg.token_ids, seg.loss_mask, strict=True)):
            if on and (i == 0 or not seg.loss_mask[i - 1]):
                runs.append([])
            if on:
                runs[-1].append(tok)
    return runs


def test_a_wrong_edit_is_not_the_fix_and_leaves_the_call_wrong(
    instances: list[Instance], cache_dir: Path
) -> None:
    prepared = prepare(instances[0].task, cache_dir)
    rep = reported(prepared)
    path = f"{rep.module}.py"
    bug = prepared.read(path) or ""
    gold = apply_patch({path: bug}, prepared.task.patch)[path] or ""
    wrong = wrong_edit(bug, gold, rep, "seed")
    assert wrong is not None and wrong not in (bug, gold)
    got = call_outcomes(wrong, [(rep.function, rep.args)])
    assert got is not None and got[0] != expected(rep)
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
