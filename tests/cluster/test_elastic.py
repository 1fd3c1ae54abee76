"""Elastic environment workers on the real cluster: a burst grows the pool, idle shrinks it.

A real engine actor (tiny random model: the other side of the policy interface) and a
pool of real `EnvWorker` actors running real episodes of a real task in real
sandboxes. Under a burst the pool grows to `max_workers`, the new actors placed on the
worker node; idle, it drains back to `min_workers`, killing the drained actors; and
every episode is run exactly once: the workers' own counts, drained ones included,
add up to the episodes asked for, and every group comes back whole.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.backend import cluster_actors, connect, start_engines, start_env_pool
from shadowrl.rl.cluster.config import ElasticConfig
from shadowrl.rl.cluster.proxies import ClusterRollouts

from .test_faults import SPEC as FAULTS_SPEC
from .test_faults import _task
from .test_ray_backend import ray_config

G, GROUPS = 4, 2
# short episodes: the pool is under test, not the policy
SPEC = EpisodeSpec(
    agent=FAULTS_SPEC.agent.model_copy(update={"max_turns": 2, "max_new_tokens": 32})
)
# no shrink while the test looks at the grown pool (its actors may take a while to
# start on a loaded box); then the idle time is cut to 1 s to watch it drain
ELASTIC = ElasticConfig(
    mode="elastic", min_workers=1, max_workers=3, slots=2, idle_s=600, down_cooldown_s=0.5,
    tick_s=0.2,
)  # fmt: skip
PREFIX = "shadowrl-elastic-jtest"  # shadowrl-<run>-j<job>-<role>, as the backend names them


@pytest.fixture(scope="module")
def pool(ray_cluster):
    import ray

    cfg = ray_config(ray_cluster, env_cpus=0.1, elastic=ELASTIC)
    connect(cfg)
    model, tokenizer = tiny_model(seed=0)
    tok_ref = ray.put(tokenizer)
    engine_cfg = EngineConfig(max_batch=8, max_seq_len=4096, initial_kv_len=256)
    engines = start_engines(PREFIX, cfg, ray.put(model), tok_ref, engine_cfg, seed=0)
    pool = start_env_pool(PREFIX, cfg, engines, tok_ref, SPEC)
    try:
        ray.get([e.where.remote() for e in engines])
        pool.wait_ready()
        yield pool
    finally:
        pool.close()
        for e in engines:
            ray.kill(e, no_restart=True)


async def _burst(pool, task, prepared):
    """GROUPS groups of G episodes at once, as a sync RL step sends them."""
    rollouts = ClusterRollouts(pool, G, retries=0)
    groups = await asyncio.gather(*(rollouts(task, prepared, 0) for _ in range(GROUPS)))
    return groups, rollouts


async def _until(what, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "the pool never got there"
        await asyncio.sleep(0.2)


async def _counts(pool) -> list[int]:
    return [w["episodes"] for w in await asyncio.gather(*(h.where.remote() for h in pool.handles))]


def _envs() -> list[dict]:
    return [a for a in cluster_actors(PREFIX) if a["role"].startswith("env-")]


def test_burst_grows_to_max_idle_drains_to_min_and_no_episode_is_lost(pool):
    task, prepared = _task()
    assert pool.size == ELASTIC.min_workers

    async def first_burst():
        groups, _ = await _burst(pool, task, prepared)
        await _until(lambda: all(w.ready for w in pool._workers))  # the new actors came up
        return groups

    groups = asyncio.run(first_burst())
    m = pool.metrics()
    assert m["env_workers_peak"] == ELASTIC.max_workers  # 8 episodes / 2 slots, capped at 3
    assert m["episodes_queued_peak"] > 0 and m["env_workers_started"] == 3
    assert {a["node"] for a in _envs()} == {"127.0.0.3"}  # placed where `rollout` is
    assert len(_envs()) == 3

    async def second_burst_then_idle():
        groups, rollouts = await _burst(pool, task, prepared)  # every worker up: all get some
        counts = await _counts(pool)
        pool.cfg = ELASTIC.model_copy(update={"idle_s": 1.0})
        await _until(lambda: pool.size == ELASTIC.min_workers)  # idle: drained back to min
        await _until(lambda: pool.drained == 2)
        return groups, rollouts, counts

    more, rollouts, counts = asyncio.run(second_burst_then_idle())
    assert len(counts) == 3 and all(c > 0 for c in counts)  # the burst spread over 3 workers
    for g in groups + more:  # whole groups, each episode graded
        assert g.ok and g.lost == 0 and len(g.trajectories) == G
        assert all(t.reward is not None for t in g.trajectories)
    assert rollouts.retried == 0
    # exactly once: what the live worker ran plus what the drained ones ran before leaving
    assert sum(asyncio.run(_counts(pool))) + pool.drained_episodes == 2 * GROUPS * G
    deadline = time.monotonic() + 60  # ray.kill is asynchronous: wait for the GCS to see it
    while len(_envs()) > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [a["role"] for a in _envs()] == ["env-0"]  # the drained actors are gone
    assert pool.metrics()["env_workers_drained"] == 2
