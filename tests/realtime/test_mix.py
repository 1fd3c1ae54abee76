"""Rollouts on pinned train tasks mixed into production rows: which tasks may enter (never
a pinned or held-out one), how many groups a ratio buys, and real gold rollouts stamped
with the deployed version."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from shadowrl.agent.config import AgentConfig
from shadowrl.episode import EpisodeSpec, PolicyFactory, ReferencePolicy
from shadowrl.models import load_tokenizer
from shadowrl.realtime.mix import mix_plan, mix_tasks, rollouts
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.load import load_suite

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)


def test_held_out_and_pinned_tasks_never_enter_the_mix() -> None:
    everything = load_suite("easy")
    heldout = load_suite("easy", "heldout")
    allowed = mix_tasks(everything, heldout)
    assert allowed and all(t.split == "train" for t in allowed)
    assert not {t.instance_id for t in allowed} & {t.instance_id for t in heldout}
    assert len(allowed) == len(everything) - len(heldout)
    # a pinned suite drawn from the train split is just as off limits
    pinned = load_suite("easy", "train")[:3]
    assert not {t.instance_id for t in mix_tasks(everything, pinned)} & {
        t.instance_id for t in pinned
    }


@pytest.mark.parametrize(
    ("trained", "ratio", "groups"),
    [(8, 0.0, 0), (0, 1.0, 0), (8, 0.5, 1), (8, 1.0, 2), (8, 2.0, 4), (3, 0.25, 1), (10, 1.0, 2)],
)
def test_the_ratio_buys_round_of_ratio_times_sessions_over_group_size_groups(
    trained: int, ratio: float, groups: int
) -> None:
    tasks = load_suite("easy", "train")
    assert len(mix_plan(trained, ratio, 4, tasks, seed="0:1")) == groups


def test_the_plan_is_seeded_and_cycles_through_few_tasks() -> None:
    tasks = load_suite("easy", "train")[:2]
    plan = mix_plan(8, 2.0, 2, tasks, seed="0:1")  # 8 groups over 2 tasks
    assert len(plan) == 8 and {t.instance_id for t in plan} == {t.instance_id for t in tasks}
    assert plan == mix_plan(8, 2.0, 2, tasks, seed="0:1")
    orders = {tuple(t.instance_id for t in mix_plan(2, 1.0, 1, load_suite("easy", "train"),
                                                    seed=f"0:{c}")) for c in range(6)}  # fmt: skip
    assert len(orders) > 1  # another cycle, another draw


def test_gold_rollouts_come_back_graded_and_stamped_with_the_deployed_version() -> None:
    tok = load_tokenizer("tiny")

    @asynccontextmanager
    async def gold(path: str) -> AsyncIterator[PolicyFactory]:
        assert path == "ckpt/v7"
        yield ReferencePolicy("gold", tok)

    spec = EpisodeSpec(agent=AgentConfig(max_turns=8, max_new_tokens=4096),
                       sandbox=SandboxConfig(backend="local")).for_reference()  # fmt: skip
    plan = load_suite("easy", "train")[:2]  # gold scripts one episode: groups of 1
    groups, spoiled = asyncio.run(
        rollouts(gold, "ckpt/v7", 7, plan, group_size=1, spec=spec, cache_dir=CACHE)
    )
    assert spoiled == 0 and [len(g) for g in groups] == [1, 1]
    for (traj,), task in zip(groups, plan, strict=True):
        assert traj.reward == 1.0 and traj.task_id == task.instance_id
        generated = [
            v for s in traj.segments for v, m in zip(s.versions, s.loss_mask, strict=True) if m
        ]
        assert generated and set(generated) == {7}
