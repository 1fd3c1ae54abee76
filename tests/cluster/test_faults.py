"""Faults on the real cluster: killed environment workers and engines cost no step.

Each test SIGKILLs a real actor process (found by pid in the cluster's actor table)
while a group's episodes run on it. The group must still come back whole: the dead
worker's episodes retried on another worker, the dead engine's requests sent to the
other engine; only episodes whose every try dies are lost, masked out and counted.
The policy is a tiny random model (the other side of the interface); tasks,
sandboxes, harness, verifier, engines and actors are real.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import time
from pathlib import Path

import pytest

from shadowrl.agent.config import DEFAULT_TOOLS, AgentConfig
from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.backend import cluster_actors, ray_services, run_id
from shadowrl.rl.cluster.proxies import ClusterRollouts
from shadowrl.rl.config import TrainConfig
from shadowrl.tasks import load_suite, prepare

from .test_ray_backend import ray_config

G = 4
# short episodes without the semantic index (its embedder would load in every worker)
SPEC = EpisodeSpec(
    agent=AgentConfig(
        max_turns=3,
        max_new_tokens=64,
        tools=tuple(t for t in DEFAULT_TOOLS if t != "semantic_search"),
    )
)


def _task():
    """The first easy training task, prepared in the test cache."""
    task = load_suite("easy", "train")[0]
    cache = Path(os.environ.get("SHADOWRL_TEST_CACHE", "/tmp/shadowrl-test-cache"))
    return task, prepare(task, cache)


@pytest.fixture(scope="module")
def cluster_run(ray_cluster, tmp_path_factory):
    """Two engines and two environment workers on the worker node, one real task."""
    task, prepared = _task()
    run_dir = tmp_path_factory.mktemp("faults")
    model, tokenizer = tiny_model(seed=0)
    with ray_services(
        model,
        tokenizer,
        [(task, prepared)],
        run_dir,
        ray_config(ray_cluster, engines=2, env_workers=2),
        ckpt=None,
        train=TrainConfig(group_size=G),
        engine_config=EngineConfig(max_batch=8, max_seq_len=4096, initial_kv_len=256),
        spec=SPEC,
        seed=0,
    ) as services:
        yield services, task, prepared, f"shadowrl-{run_id(run_dir)}"


def _actor(prefix: str, role: str) -> dict:
    return next(a for a in cluster_actors(prefix) if a["role"] == role)


def _kill(prefix: str, name: str) -> None:
    os.kill(_actor(prefix, name)["pid"], signal.SIGKILL)


async def _up(actors) -> None:
    """Wait until every actor answers (one an earlier test killed may still be restarting)."""
    from ray.exceptions import RayActorError

    deadline = time.monotonic() + 180
    for actor in actors:
        while True:
            try:
                await actor.where.remote()
                break
            except RayActorError:
                assert time.monotonic() < deadline, "an actor never came back"
                await asyncio.sleep(0.2)


async def _started(workers) -> int:
    """Episodes the environment workers have started (since each one's last restart)."""
    return sum(w["episodes"] for w in await asyncio.gather(*(w.where.remote() for w in workers)))


async def _kill_once_running(prefix: str, name: str, workers, n: int = 1) -> None:
    """SIGKILL actor `name` once `n` more episodes run on `workers`, inside their first turn."""
    await _up(workers)
    base, deadline = await _started(workers), time.monotonic() + 120
    while await _started(workers) < base + n:
        assert time.monotonic() < deadline, "no episode started"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # an episode of 3 turns takes seconds: this is mid-episode
    _kill(prefix, name)


async def _group_with_kill(rollouts, task, prepared, kill):
    group, _ = await asyncio.gather(rollouts(task, prepared, 0), kill)
    return group


def test_actors_are_placed_on_the_nodes_their_resources_name(cluster_run):
    _, _, _, prefix = cluster_run
    actors = {a["role"]: a for a in cluster_actors(prefix)}
    assert sorted(actors) == ["engine-0", "engine-1", "env-0", "env-1", "trainer"]
    for a in actors.values():
        assert ipaddress.ip_address(a["node"]) in ipaddress.ip_network("127.0.0.0/8")
    assert actors["trainer"]["node"] == "127.0.0.2"  # the head advertises `trainer`
    assert {a["node"] for n, a in actors.items() if n != "trainer"} == {"127.0.0.3"}


def test_killed_env_worker_mid_episode_costs_no_episode(cluster_run):
    services, task, prepared, prefix = cluster_run
    rollouts = services.rollout
    before = rollouts.retried
    kill = _kill_once_running(prefix, "env-0", rollouts.workers[:1])
    group = asyncio.run(_group_with_kill(rollouts, task, prepared, kill))
    assert rollouts.retried > before  # an episode in flight died with the worker ...
    assert group.ok and len(group.trajectories) == G and group.lost == 0  # ... and ran elsewhere
    assert all(t.reward is not None and t.num_generated > 0 for t in group.trajectories)


@pytest.mark.slow
def test_killed_engine_mid_episode_fails_over_to_the_other(cluster_run):
    services, task, prepared, prefix = cluster_run
    workers = services.rollout.workers

    async def failovers() -> int:
        found = await asyncio.gather(*(w.where.remote() for w in workers))
        return sum(w["engine_failovers"] for w in found)

    async def run():
        await _up([*workers, *services.engine.engines])
        before = await failovers()
        kill = _kill_once_running(prefix, "engine-0", workers, n=2)
        group = await _group_with_kill(services.rollout, task, prepared, kill)
        return group, await failovers() - before

    group, moved = asyncio.run(run())
    assert moved > 0  # requests in flight on the dead engine were sent to the other one
    assert group.ok and len(group.trajectories) == G and group.lost == 0


@pytest.mark.slow
def test_episodes_lost_for_good_are_masked_and_counted_not_scored(cluster_run):
    services, task, prepared, prefix = cluster_run
    rollouts = ClusterRollouts(services.rollout.pool, G, retries=0)  # no second try
    kill = _kill_once_running(prefix, "env-0", rollouts.workers[:1])
    group = asyncio.run(_group_with_kill(rollouts, task, prepared, kill))
    assert group.lost > 0 and rollouts.lost == group.lost
    assert len(group.trajectories) == G - group.lost  # masked: no stand-in trajectory
    assert group.ok  # the survivors still train, their advantages over survivors only
