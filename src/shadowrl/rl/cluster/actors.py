"""The Ray actors: each one owns one real component of the in-process backend.

They are plain classes (`backend.py` wraps them with `ray.remote` when it starts them),
so nothing here is a second implementation: the trainer actor holds a `Trainer` and a
publishing `WeightStore` (`Trainer.publisher`), a rank actor runs rank r > 0 of a
multi-rank trainer (`dp.follow`), an engine actor an `Engine` and a reader of that store
(`lora_sync.AdapterSync`: a LoRA run's adapters merged, else as stored), an environment
worker its own root sandboxes and runs `rollout.forked_episode`, the very episode the
in-process group runs. What crosses the network is small: trajectories (token ids),
prompts and generations, version numbers; weights go through the store.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from shadowrl.episode import EpisodeSpec, graded_episode
from shadowrl.inference.config import EngineConfig
from shadowrl.rl.companion import Companion
from shadowrl.rl.config import BranchingConfig, TrainConfig
from shadowrl.rl.dp import Spawn, follow
from shadowrl.rl.lora_sync import AdapterSync
from shadowrl.rl.rollout import forked_episode
from shadowrl.rl.roots import SandboxRoots
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore
from shadowrl.tasks import PreparedTask, Task
from shadowrl.tasks.reference import reference_policy
from shadowrl.tasks.verify import Verdict
from shadowrl.types import Generation, SamplingParams, Trajectory

if TYPE_CHECKING:  # tree rollouts are imported only when a worker runs one
    from shadowrl.rl.credit_tree import Subtree


class EnginesUnavailable(RuntimeError):
    """Every engine an episode could ask is dead or restarting: retry the episode later."""


def placement() -> dict[str, Any]:
    """Where the calling actor runs: its node's address and its pid."""
    import ray

    return {"ip": ray.util.get_node_ip_address(), "pid": os.getpid()}


def _threads(n: int) -> None:
    if n:
        import torch

        torch.set_num_threads(n)


def weight_store(url: str, train: TrainConfig, dtype: str | None) -> WeightStore:
    """The store as both backends open it (trainer side publishes, engines fetch)."""
    return WeightStore(
        url,
        full_every=train.weights.full_every,
        shard_bytes=train.weights.shard_bytes,
        zstd_level=train.weights.zstd_level,
        dtype=dtype,
    )


class TrainerActor:
    """The `Trainer`, publishing each version to the weight store and checkpointing."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        ckpt: str | None,
        train: TrainConfig,
        store_url: str,
        store_dtype: str | None,
        threads: int = 0,
        companion: Companion | None = None,
        seed: int = 0,
        spawn: Spawn | None = None,
    ) -> None:
        """`spawn`: where ranks 1..N-1 run when `train.world_size > 1` (`backend.RankActors`)."""
        _threads(threads)
        self.tokenizer = tokenizer
        self.trainer = (
            Trainer.resume(ckpt, train, seed=seed, spawn=spawn)
            if ckpt
            else Trainer(model, train, companion=companion, seed=seed, spawn=spawn)
        )
        # under LoRA the adapters alone after one full base (`lora_sync.py`)
        self.store = self.trainer.publisher(weight_store(store_url, train, store_dtype))

    def counters(self) -> tuple[int, int]:
        """(version, optimizer steps)."""
        return self.trainer.version, self.trainer.step_count

    def train_groups(self, groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
        return self.trainer.train_groups(groups)

    def publish(self, version: int) -> dict[str, Any]:
        if version != self.trainer.version:
            raise ValueError(
                f"asked to publish v{version}, the trainer is at v{self.trainer.version}"
            )
        return self.store.publish(self.trainer.state_dict(), version)

    def save(self, root: str) -> str:
        return str(self.trainer.save(root, self.tokenizer))

    def weights(self) -> dict[str, Any]:
        """The policy's weights (LoRA merged) under the base names, whole even when the
        ranks hold shards: read back from the published version, as `local_services` does."""
        full = self.store.whole if isinstance(self.store, AdapterSync) else self.store.fetch
        policy = self.trainer.policy_copy(lambda: full(self.trainer.version))
        return {k: v.detach().clone() for k, v in policy.state_dict().items()}

    def where(self) -> dict[str, Any]:
        return placement()


class RankActor:
    """Rank r > 0 of a multi-rank trainer: the same `dp.follow` loop a local rank process
    runs, driven by the trainer actor (rank 0) over their process group."""

    def follow(self, rank: int, args: tuple[Any, ...]) -> None:
        follow(rank, *args)

    def where(self) -> dict[str, Any]:
        return placement()


class EngineActor:
    """One `Engine`, generating for any environment worker and loading versions by number.

    Without a store (`store_url` None: an evaluation) it serves the weights it was built
    with and nothing else."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        config: EngineConfig,
        train: TrainConfig | None,
        store_url: str | None,
        seed: int,
        threads: int = 0,
        heads: Any = None,
    ) -> None:
        from shadowrl.inference import build_engine

        _threads(threads)
        version = -1 if store_url else 0
        self.engine = build_engine(
            model.eval(), tokenizer, config, heads=heads, version=version, seed=seed
        ).start()
        self.store = None
        if store_url:
            # a LoRA run's versions are adapters: merged here onto the base (`lora_sync.py`)
            self.store = store = AdapterSync(weight_store(store_url, train or TrainConfig(), None))
            # the newest published version: also what a restarted engine must catch up to
            latest = store.latest_version()
            if latest is not None:
                self.engine.update_weights(store.fetch(latest), latest)

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        return await self.engine.generate(prompt_ids, sampling)

    async def load(self, version: int) -> float:
        """Fetch `version` (only the deltas since the last one) and swap it in flight."""
        if self.store is None:
            raise RuntimeError("this engine serves fixed weights: it has no weight store")
        state = await asyncio.to_thread(self.store.fetch, version)
        return await asyncio.to_thread(self.engine.update_weights, state, version)

    def version(self) -> int:
        return self.engine.version

    def prefix_hit_tokens(self) -> int:
        return int(self.engine.prefix.hit_tokens)

    def draft_heads(self) -> dict[str, Any]:
        """The draft heads this engine speculates with, as tensors ({} without heads)."""
        spec = self.engine.speculator
        heads = None if spec is None else spec.heads  # an n-gram drafter has no heads
        return {} if heads is None else {k: v.clone() for k, v in heads.state_dict().items()}

    def where(self) -> dict[str, Any]:
        return placement()


class EngineClient:
    """The `Policy` an episode on a worker sees: one engine actor, failing over to the next.

    An episode sticks to its first engine (its prompt prefix is cached there) until that
    engine dies; a request in flight on a dead engine is sent again to the next one.
    """

    def __init__(self, engines: Sequence[Any], first: int) -> None:
        self.engines, self.at = list(engines), first % len(engines)
        self.failovers = 0  # requests sent again after their engine died

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        from ray.exceptions import RayActorError

        for _ in range(len(self.engines)):
            try:
                gen: Generation = await self.engines[self.at].generate.remote(prompt_ids, sampling)
                return gen
            except RayActorError:
                self.at = (self.at + 1) % len(self.engines)
                self.failovers += 1
        raise EnginesUnavailable(f"all {len(self.engines)} engines are dead or restarting")


class EnvWorker:
    """Runs graded episodes in forks of its own root sandboxes (one per task, kept open):
    training rollouts (`episode`) and eval samples (`graded`, with the verdict)."""

    def __init__(self, engines: Sequence[Any], tokenizer: Any, spec: EpisodeSpec) -> None:
        self.engines, self.tokenizer, self.spec = list(engines), tokenizer, spec
        self.roots = SandboxRoots(spec)
        self.started = 0
        self.failovers = 0

    async def episode(self, task: Task, prepared: PreparedTask) -> Trajectory:
        """One episode of `task` against the engines, graded by the verifier."""
        fork = await self.roots.forker(prepared)
        self.started += 1
        policy = EngineClient(self.engines, first=self.started)
        try:
            return await forked_episode(policy, fork, prepared, self.tokenizer, self.spec)
        finally:
            self.failovers += policy.failovers

    async def subtree(
        self, task: Task, prepared: PreparedTask, branching: BranchingConfig
    ) -> Subtree:
        """One tree-rollout subtree (`rl/tree.py`): its root episode and every fork of its
        checkpoints run here, where the snapshots are, against one engine (whose prefix
        cache then holds the shared prefix)."""
        from shadowrl.rl.tree import run_subtree

        fork = await self.roots.forker(prepared)
        self.started += 1
        policy = EngineClient(self.engines, first=self.started)
        try:
            return await run_subtree(policy, fork, prepared, self.tokenizer, self.spec, branching)
        finally:
            self.failovers += policy.failovers

    async def graded(
        self, reference: str | None, task: Task, prepared: PreparedTask
    ) -> tuple[Trajectory, Verdict]:
        """One graded eval sample: scripted policy `reference`, or (None) the engines."""
        fork = await self.roots.forker(prepared)
        self.started += 1
        client = EngineClient(self.engines, first=self.started) if reference is None else None
        policy = client or reference_policy(str(reference), task, prepared, self.tokenizer)
        sandbox = await asyncio.to_thread(fork)
        try:
            return await graded_episode(
                policy, sandbox, prepared, tokenizer=self.tokenizer, spec=self.spec
            )
        finally:
            await asyncio.to_thread(sandbox.close)
            self.failovers += client.failovers if client is not None else 0

    def close(self) -> int:
        """Close every root sandbox (and pool); the episodes this worker ran."""
        self.roots.close()
        return self.started

    def where(self) -> dict[str, Any]:
        return {**placement(), "episodes": self.started, "engine_failovers": self.failovers}
