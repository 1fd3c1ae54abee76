"""Tree rollouts on the real two-node cluster: each subtree runs on one environment
worker (its root episode in a fork of the worker's kept root, its branches forked from
the checkpoint where that snapshot lives), against the engine actors.

The policy is a tiny random model (the other side of the interface); tasks, sandboxes,
harness, verifier, engines and actors are real. A random model makes no tool call, so
the branch point is rule 'turn' at turn 1.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from shadowrl.inference.config import EngineConfig
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.backend import ray_services
from shadowrl.rl.config import BranchingConfig, TrainConfig
from shadowrl.rl.credit_tree import tree_rows
from shadowrl.rl.tree import TreeGroup
from shadowrl.tasks import load_suite, prepare

from .test_faults import SPEC
from .test_ray_backend import ray_config

BRANCHING = BranchingConfig(enabled=True, roots=2, branches=2, rule="turn", turn=1)


@pytest.mark.slow
def test_tree_rollouts_run_on_environment_workers(ray_cluster, tmp_path: Path) -> None:
    task = load_suite("easy", "train")[0]
    cache = Path(os.environ.get("SHADOWRL_TEST_CACHE", "/tmp/shadowrl-test-cache"))
    prepared = prepare(task, cache)
    model, tokenizer = tiny_model(seed=0)
    with ray_services(
        model, tokenizer, [(task, prepared)], tmp_path / "run",
        ray_config(ray_cluster, engines=1, env_workers=2), ckpt=None,
        train=TrainConfig(branching=BRANCHING),
        engine_config=EngineConfig(max_batch=8, max_seq_len=4096, initial_kv_len=256),
        spec=SPEC, seed=0,
    ) as services:  # fmt: skip
        group = asyncio.run(services.rollout(task, prepared, 0))
        workers = services.rollout.workers
        started = [w["episodes"] for w in asyncio.run(_where(workers))]
    assert isinstance(group, TreeGroup) and group.ok, group.errors
    assert len(group.subtrees) == 2 and len(group.trajectories) == 4
    for sub in group.subtrees:
        assert sub.split is not None and len(sub.branches) == 2
        assert all(t.reward is not None and t.num_generated > 0 for t in sub.leaves)
    assert sorted(started) == [1, 1]  # one subtree per worker, forks included
    rows = tree_rows(group.subtrees)  # raises unless each subtree shares its prefix
    assert sum(r.segment.num_generated for r in rows) == sum(s.generated for s in group.subtrees)


async def _where(workers):
    return await asyncio.gather(*(w.where.remote() for w in workers))
