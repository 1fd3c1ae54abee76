"""The Ray backend on a real two-node cluster: placement, the same update as one process.

Rollouts are recorded groups replayed into both backends (the other side of the
rollout interface), so the only difference between the two runs is where the
trainer, the weight store's writer and the engines live.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import random
import signal
import time
from pathlib import Path

import pytest
import torch

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.metrics import read_metrics
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.backend import cluster_actors, run_id
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.orchestrator import OrchestratorConfig
from shadowrl.rl.rollout import Group
from shadowrl.rl.run import run_rl
from shadowrl.rl.weights import WeightStore
from shadowrl.types import Segment, Trajectory

TRAIN = dict(
    steps=2, group_size=2, groups_per_step=2, save_every=1,
    optimizer={"lr": 1e-3}, weights={"full_every": 10},
)  # fmt: skip
ENGINE = EngineConfig(max_batch=4, max_seq_len=512, initial_kv_len=128)


def ray_config(cluster, **kw) -> RayConfig:
    """Tiny reservations; the trainer pinned to the head, everything else to the worker."""
    base = dict(
        address=cluster.address,
        engines=1,
        env_workers=1,
        trainer_cpus=0.5,
        engine_cpus=0.5,
        env_cpus=0.25,
        trainer_resources={"trainer": 1},
        engine_resources={"rollout": 1},
        env_resources={"rollout": 1},
        torch_threads=1,
    )
    return RayConfig(**{**base, **kw})


def recorded_groups(n: int, size: int, seed: int = 0) -> list[list[Trajectory]]:
    """Fixed trajectories of random tokens with mixed rewards (every group trains)."""
    rng = random.Random(seed)
    out = []
    for g in range(n):
        prompt = [rng.randrange(3, 49152) for _ in range(12)]
        group = []
        for i in range(size):
            gen = [rng.randrange(3, 49152) for _ in range(rng.randrange(6, 20))]
            seg = Segment(
                tuple(prompt + gen),
                (False,) * len(prompt) + (True,) * len(gen),
                (0.0,) * len(prompt) + tuple(-rng.uniform(5, 12) for _ in gen),
                (-1,) * len(prompt) + (0,) * len(gen),
            )
            group.append(Trajectory(f"t{g}", (), (), (seg,), "submitted", reward=float(i % 2)))
        out.append(group)
    return out


class Replay:
    """A `RolloutFn` replaying the recorded group of (policy version, task), stamped with
    that version: a step redone after a resume gets the same groups as the first time."""

    def __init__(self, groups: list[list[Trajectory]]) -> None:
        self.groups = groups

    async def __call__(self, task: str, prepared, version: int) -> Group:
        trajs = self.groups[(2 * version + int(task[1:])) % len(self.groups)]
        return Group(trajs[0].task_id, [_stamp(t, version) for t in trajs], [], version)


def _stamp(t: Trajectory, version: int) -> Trajectory:
    seg = t.segments[0]
    versions = tuple(version if m else -1 for m in seg.loss_mask)
    return Trajectory(
        t.task_id,
        (),
        (),
        (Segment(seg.token_ids, seg.loss_mask, seg.logprobs, versions),),
        t.end,
        reward=t.reward,
    )


def _train(
    run_dir: Path, ray: RayConfig | None, rollout=None, steps: int = 2, **train: object
) -> dict[str, torch.Tensor]:
    model, tokenizer = tiny_model(seed=3)
    tasks = [("t0", None), ("t1", None)]  # names only: the replay plays their groups
    trained = asyncio.run(
        run_rl(
            model,
            tokenizer,
            tasks,  # type: ignore[arg-type]
            run_dir,
            train=TrainConfig.model_validate({**TRAIN, "steps": steps, **train}),
            orchestrator=OrchestratorConfig(mode="sync"),
            engine_config=ENGINE,
            spec=EpisodeSpec(),
            seed=0,
            ray=ray,
            rollout=rollout or Replay(recorded_groups(8, 2)),
        )
    )
    return {k: v.detach().clone() for k, v in trained.state_dict().items()}


@pytest.mark.slow
def test_two_step_ray_train_matches_in_process_update(ray_cluster, tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the trainer actor runs with torch_threads=1 too
    try:
        local = _train(tmp_path / "local", None)
    finally:
        torch.set_num_threads(threads)
    remote = _train(tmp_path / "ray", ray_config(ray_cluster))
    prefix = f"shadowrl-{run_id(tmp_path / 'ray')}"
    deadline = time.monotonic() + 60  # ray.kill is asynchronous: wait for the GCS to see it
    while cluster_actors(prefix) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster_actors(prefix) == []  # the run tore down every actor it started
    start = tiny_model(seed=3)[0].state_dict()
    moved = max((local[k] - start[k]).abs().max().item() for k in local)
    assert moved > 1e-4  # two real updates happened
    diff = max((local[k] - remote[k]).abs().max().item() for k in local)
    assert diff <= 1e-6, f"ray and in-process updates differ by {diff}"
    # the checkpoints and weight-store versions are the trainer actor's, in the run dir
    assert (tmp_path / "ray" / "loop_state.json").exists()
    assert sorted(p.name for p in (tmp_path / "ray" / "weights").glob("v*")) == [
        "v00000000",
        "v00000001",
        "v00000002",
    ]


class SeesRanks(Replay):
    """Replay that lists, at the first rollout, the run's live trainer rank actors."""

    def __init__(self, groups, run_dir: Path) -> None:
        super().__init__(groups)
        self.prefix, self.ranks = f"shadowrl-{run_id(run_dir)}", None

    async def __call__(self, task, prepared, version: int) -> Group:
        if self.ranks is None:
            self.ranks = [a for a in cluster_actors(self.prefix) if "-rank-" in a["role"]]
        return await super().__call__(task, prepared, version)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", ["replicate", "fsdp"])
def test_trainer_ranks_are_ray_actors_and_take_the_one_rank_steps(ray_cluster, tmp_path, parallel):
    """`train.world_size: 2` on Ray: rank 1 is an actor of its own (not a process the
    trainer actor forks), and the two ranks, replicas or FSDP shards, take the steps one
    in-process rank takes; the trained model comes back whole. The gradients are summed
    in another order, so weights differ by float32 rounding (`tests/rl/test_dp.py` and
    `test_fsdp.py`: a few ulps; 1e-6 here as in the test above)."""
    small = {"batch": {"microbatch_tokens": 16}}  # several microbatches a step: both ranks get some
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the trainer actor and its ranks run one thread each too
    try:
        local = _train(tmp_path / "local", None, **small)
    finally:
        torch.set_num_threads(threads)
    seen = SeesRanks(recorded_groups(8, 2), tmp_path / "ray")
    ray_cfg = ray_config(ray_cluster, trainer_resources={})  # the head's one `trainer` slot
    remote = _train(
        tmp_path / "ray", ray_cfg, rollout=seen, world_size=2, parallel=parallel, **small
    )
    assert seen.ranks is not None and [a["role"].rsplit("-", 1)[-1] for a in seen.ranks] == ["1"]
    assert seen.ranks[0]["class"] == "RankActor"
    diff = max((local[k] - remote[k]).abs().max().item() for k in local)
    assert diff <= 1e-6, f"two ranks on Ray and one in process differ by {diff}"
    start = tiny_model(seed=3)[0].state_dict()
    assert max((local[k] - start[k]).abs().max().item() for k in local) > 1e-4  # it trained
    prefix = f"shadowrl-{run_id(tmp_path / 'ray')}"
    deadline = time.monotonic() + 60  # ray.kill is asynchronous: wait for the GCS to see it
    while cluster_actors(prefix) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster_actors(prefix) == []  # the rank actor went with the run


class KillTrainerOnce(Replay):
    """Replay that SIGKILLs the trainer actor while step `at`'s rollouts are collected."""

    def __init__(self, groups, run_dir: Path, at: int) -> None:
        super().__init__(groups)
        self.prefix, self.at, self.killed = f"shadowrl-{run_id(run_dir)}", at, None

    async def __call__(self, task, prepared, version: int) -> Group:
        if version == self.at and self.killed is None:
            trainer = next(a for a in cluster_actors(self.prefix) if a["role"] == "trainer")
            os.kill(trainer["pid"], signal.SIGKILL)
            self.killed = trainer["pid"]
        return await super().__call__(task, prepared, version)


@pytest.mark.slow
def test_killed_trainer_resumes_from_checkpoint_and_store_version(ray_cluster, tmp_path):
    groups = recorded_groups(8, 2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        straight = _train(tmp_path / "local", None, Replay(groups), steps=3)
    finally:
        torch.set_num_threads(threads)
    kill = KillTrainerOnce(groups, tmp_path / "ray", at=1)  # after step 1's checkpoint
    resumed = _train(tmp_path / "ray", ray_config(ray_cluster), kill, steps=3)
    assert kill.killed is not None
    steps = [r["step"] for r in read_metrics(tmp_path / "ray" / "metrics.jsonl", "rl")]
    assert steps == [1, 2, 3]  # step 2 died with the trainer and was redone once
    # the restarted trainer resumed at the checkpoint's version and published onward
    assert json.loads((tmp_path / "ray" / "loop_state.json").read_text())["step"] == 3
    assert WeightStore(str(tmp_path / "ray" / "weights")).latest_version() == 3
    diff = max((straight[k] - resumed[k]).abs().max().item() for k in straight)
    assert diff <= 1e-6, f"the resumed run differs from an uninterrupted one by {diff}"


@pytest.fixture(autouse=True)
def _node_addresses_are_loopback(ray_cluster):
    import ray

    for node in ray.nodes():
        assert ipaddress.ip_address(node["NodeManagerAddress"]).is_loopback
