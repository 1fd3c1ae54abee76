"""Rollouts on kept roots with warm pools: groups run from started forks of one root
per task, the root outlives its groups, and nothing is left mounted when closed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.episode import EpisodeSpec
from shadowrl.rl.rollout import rollout_group
from shadowrl.rl.roots import SandboxRoots
from shadowrl.sandbox import PoolConfig, SandboxConfig
from shadowrl.tasks import PreparedTask

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from shadowrl.models import load_tokenizer

    return load_tokenizer("smollm2")


def test_groups_fork_from_a_kept_root_and_its_warm_pool(tiny: PreparedTask, tokenizer: Any) -> None:
    prepared, task = tiny, tiny.task
    pool = PoolConfig(enabled=True, min_ready=2, max_ready=4)
    spec = EpisodeSpec(sandbox=SandboxConfig(backend="local", pool=pool))
    policy = ScriptedPolicy(tokenizer, lambda _prompt: SUBMIT)

    async def two_groups() -> list[Any]:
        roots = SandboxRoots(spec)
        try:
            groups = []
            for _ in range(2):
                groups.append(
                    await rollout_group(
                        policy,
                        task,
                        prepared,
                        group_size=3,
                        tokenizer=tokenizer,
                        spec=spec,
                        roots=roots,
                    )
                )
                (warm,) = roots.pools
                await asyncio.to_thread(lambda: _until(lambda: warm.ready >= 2))  # noqa: B023
            return [groups, warm.stats]
        finally:
            roots.close()

    groups, stats = asyncio.run(two_groups())
    for group in groups:
        assert group.ok and len(group.trajectories) == 3
        assert all(t.end == "submitted" and t.reward == 0.0 for t in group.trajectories)
    assert stats.hits >= 2  # the second group started from forks the pool had ready
    assert stats.hits + stats.misses == 6


def _until(cond: Any, limit_s: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + limit_s
    while not cond():
        assert time.monotonic() < deadline, "the pool did not refill"
        time.sleep(0.02)


def test_a_probed_group_that_never_solves_stops_at_its_probe(
    tiny: PreparedTask, tokenizer: Any
) -> None:
    from shadowrl.rl.capabilities import build_rollouts
    from shadowrl.rl.config import TrainConfig

    spec = EpisodeSpec(sandbox=SandboxConfig(backend="local"))
    policy = ScriptedPolicy(tokenizer, lambda _prompt: SUBMIT)  # submits the bug: reward 0
    sizes = {}
    for probe in (0, 2):
        rollout = build_rollouts(
            policy, TrainConfig(group_size=4, probe=probe), tokenizer, spec, None
        )
        group = asyncio.run(rollout(tiny.task, tiny, 0))
        assert group.ok and group.rewards == [0.0] * len(group.trajectories)
        sizes[probe] = len(group.trajectories)
    assert sizes == {0: 4, 2: 2}
