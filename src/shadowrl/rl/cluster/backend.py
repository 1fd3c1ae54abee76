"""Start the RL services as Ray actors and hand the loop its usual interfaces.

    driver (this process)             Ray cluster
    ───────────────────────           ─────────────────────────────────────────────
    Orchestrator ── train_groups ──►  TrainerActor: Trainer ── publish ──► WeightStore
      │  (the same loop as              └─ RankActor × (world_size − 1)            │
      │   in one process)             EngineActor × N: Engine ◄── fetch(version) ──┘
      │                                    ▲ generate(prompt ids)
      └─ rollout(task) ── episode ──► EnvWorker × M: own root sandboxes, forks, verifier

`ray_services` yields a `services.Services` of proxies (`proxies.py`) and kills every
actor it started on the way out. Actors are named `shadowrl-<run>-j<job>-<role>` in
the `shadowrl` namespace, so `cluster_actors()` (and a test that kills one) can find
a run's actors, and a rerun after a killed driver never collides with the dying ones.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.rl.cluster.actors import EngineActor, EnvWorker, RankActor, TrainerActor
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.cluster.proxies import (
    ClusterRollouts,
    EngineGroup,
    RemotePublisher,
    RemoteTrainer,
    WeightsAt,
)
from shadowrl.rl.cluster.workers import WorkerPool
from shadowrl.rl.companion import Companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.services import Services
from shadowrl.tasks import PreparedTask, Task

log = logging.getLogger(__name__)
NAMESPACE = "shadowrl"


def connect(cfg: RayConfig) -> None:
    """Join (or, with address 'local', start) the Ray cluster; a no-op when connected."""
    import ray

    if ray.is_initialized():
        return
    address = None if cfg.address == "local" else cfg.address
    ray.init(address=address, namespace=NAMESPACE, logging_level=logging.WARNING)
    log.info("ray: %d nodes, %s", len(ray.nodes()), ray.cluster_resources())


def run_id(run_dir: Path) -> str:
    """A short name for the run's actors, stable across restarts of the same run_dir."""
    return hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:8]


def cluster_actors(prefix: str = "") -> list[dict[str, Any]]:
    """Live shadowrl actors (name, class, node address, pid), from the cluster's GCS."""
    from ray._private import state  # the GCS actor table; the public state API needs a dashboard

    rows = []
    for info in state.actors().values():
        name = info.get("Name") or ""
        if info["State"] == "ALIVE" and name.startswith(prefix or "shadowrl"):
            rows.append(
                {
                    "name": name,
                    "role": name.split("-", 3)[-1],  # trainer, engine-0, env-1, ...
                    "class": info.get("ActorClassName", ""),
                    "node": info["Address"]["IPAddress"],
                    "pid": info.get("Pid"),
                }
            )
    return sorted(rows, key=lambda r: r["name"])


def _drop_versions_after(url: str, version: int) -> None:
    """Remove store versions newer than `version` (published after the checkpoint a
    restarted trainer resumed from), so every engine's "latest" is the trainer's."""
    from shadowrl.rl.weights import WeightStore

    store = WeightStore(url)
    for v in store.versions():
        if v > version:
            log.info("dropping weight-store v%d: newer than the resumed trainer", v)
            store.fs.rm(f"{store.root}/v{v:08d}", recursive=True)


def actor_class(
    cls: type, prefix: str, name: str, cpus: float, gpus: float, res: dict[str, float],
    **kw: Any,
) -> Any:  # fmt: skip
    """The actor class `cls`, named `<prefix>-<name>` with its reservations (call
    `.remote(...)` on it)."""
    import ray

    opts = dict(name=f"{prefix}-{name}", num_cpus=cpus, num_gpus=gpus, resources=res)
    return ray.remote(cls).options(**opts, **kw)


class RankActors:
    """`dp.Spawn` on Ray: ranks 1..N-1 of the trainer as actors with the trainer's
    reservations, joining rank 0's process group at the trainer actor's node address.
    Created by the trainer actor, they die with it (Ray kills an owner's actors)."""

    def __init__(self, prefix: str, cfg: RayConfig) -> None:
        self.prefix, self.cfg = prefix, cfg
        self.actors: list[Any] = []
        self.runs: list[Any] = []

    def host(self) -> str:
        import ray

        return str(ray.util.get_node_ip_address())

    def start(self, rank: int, args: tuple[Any, ...]) -> None:
        # the pid keeps a restarted trainer's ranks from colliding with the dying ones' names
        name = f"trainer-{os.getpid()}-rank-{rank}"
        cfg = self.cfg
        actor = actor_class(
            RankActor, self.prefix, name, cfg.trainer_cpus, cfg.trainer_gpus,
            cfg.trainer_resources,
        ).remote()  # fmt: skip
        self.actors.append(actor)
        self.runs.append(actor.follow.remote(rank, args))

    def join(self, timeout: float) -> None:
        import ray

        ray.wait(self.runs, num_returns=len(self.runs), timeout=timeout)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)


def start_engines(
    prefix: str, cfg: RayConfig, model_ref: Any, tok_ref: Any, engine_config: EngineConfig,
    seed: int, train: TrainConfig | None = None, url: str | None = None, heads_ref: Any = None,
) -> list[Any]:  # fmt: skip
    """`cfg.engines` engine actors serving `model_ref` (following the store at `url`, if any),
    with the draft heads `heads_ref` (None: by `inference/build.py`'s rule)."""
    restarts = dict(max_restarts=cfg.actor_restarts, max_task_retries=0)
    return [
        actor_class(
            EngineActor, prefix, f"engine-{i}", cfg.engine_cpus, cfg.engine_gpus,
            cfg.engine_resources, max_concurrency=1000, **restarts,
        ).remote(
            model_ref, tok_ref, engine_config, train, url, seed + i, cfg.torch_threads, heads_ref
        )
        for i in range(cfg.engines)
    ]  # fmt: skip


def start_env_pool(
    prefix: str, cfg: RayConfig, engines: list[Any], tok_ref: Any, spec: EpisodeSpec
) -> WorkerPool:
    """The environment workers (fixed or elastic, `cfg.elastic`) on `engines`; the pool
    starts its first workers at once (`wait_ready` blocks until they answer)."""
    restarts = dict(max_restarts=cfg.actor_restarts, max_task_retries=0)

    def env_worker(i: int) -> Any:
        return actor_class(
            EnvWorker, prefix, f"env-{i}", cfg.env_cpus, 0.0, cfg.env_resources,
            max_concurrency=1000, **restarts,
        ).remote(engines, tok_ref, spec)  # fmt: skip

    return WorkerPool(env_worker, cfg.env_workers, cfg.elastic)


def _rollouts(pool: WorkerPool, train: TrainConfig, retries: int) -> ClusterRollouts:
    """Flat groups, or subtrees with `train.branching` (`cluster/trees.py`, imported only then)."""
    if not train.branching.enabled:
        return ClusterRollouts(pool, train.group_size, retries)
    from shadowrl.rl.cluster.trees import ClusterTreeRollouts

    return ClusterTreeRollouts(pool, train.branching, retries)


@contextmanager
def ray_services(
    model: Any,
    tokenizer: Any,
    tasks: list[tuple[Task, PreparedTask]],
    run_dir: Path,
    cfg: RayConfig,
    *,
    ckpt: Path | None,
    train: TrainConfig,
    engine_config: EngineConfig,
    spec: EpisodeSpec,
    seed: int,
    companion: Companion | None = None,
) -> Iterator[Services]:
    """The trainer, `cfg.engines` engines and a pool of environment workers (`cfg.env_workers`,
    or elastic between `cfg.elastic.min_workers` and `max_workers`) as actors, behind the
    orchestrator's interfaces; every actor is killed on exit. `companion` as in
    `local_services`: the trainer actor trains it, the engines serve it."""
    import ray

    connect(cfg)
    prefix = f"shadowrl-{run_id(run_dir)}-j{ray.get_runtime_context().get_job_id()}"
    url = train.weights.url or str(run_dir / "weights")
    dtype = None if engine_config.dtype == "auto" else engine_config.dtype
    started: list[Any] = []
    pools: list[WorkerPool] = []
    try:
        # Put once and held until the end: the trainer (on a fresh start) and every engine
        # start from `model_ref`, and an actor Ray restarts is built again from these very
        # arguments (ones Ray put itself are freed after the first construction).
        model_ref, tok_ref = ray.put(model), ray.put(tokenizer)
        # the engines serve what the trainer's companion serves: as in the in-process backend
        heads_ref = ray.put(companion.served() if companion is not None else None)
        trainer_actor = actor_class(
            TrainerActor, prefix, "trainer", cfg.trainer_cpus, cfg.trainer_gpus,
            cfg.trainer_resources,
        ).remote(
            model_ref, tok_ref, str(ckpt) if ckpt else None, train, url, dtype, cfg.torch_threads,
            ray.put(companion), seed, RankActors(prefix, cfg) if train.world_size > 1 else None,
        )  # fmt: skip
        started.append(trainer_actor)
        trainer = RemoteTrainer(trainer_actor)
        _drop_versions_after(url, trainer.version)  # a lost trainer's future: engines load latest
        publisher = RemotePublisher(trainer)
        publisher.publish(WeightsAt(trainer.version), trainer.version)  # the engines' start
        engines = start_engines(
            prefix, cfg, model_ref, tok_ref, engine_config, seed, train, url, heads_ref
        )
        started += engines
        pool = start_env_pool(prefix, cfg, engines, tok_ref, spec)
        pools.append(pool)
        placed = ray.get([a.where.remote() for a in started]) + pool.wait_ready()
        log.info("ray actors: %s", [(p["ip"], p["pid"]) for p in placed])  # all up before step 0
        sink = EngineGroup(engines)
        rollouts = _rollouts(pool, train, cfg.episode_retries)

        def extra_metrics() -> dict[str, Any]:
            return {
                "prefix_hit_tokens": sink.prefix_hit_tokens(),
                "episodes_retried": rollouts.retried,
                "engine_syncs_missed": sink.skipped,
                **pool.metrics(),
            }

        def final_model() -> Any:
            model.load_state_dict(trainer.weights(), strict=False)
            return model

        yield Services(trainer, publisher, sink, rollouts, extra_metrics, final_model)
    finally:
        for pool in pools:
            pool.close()
        for actor in reversed(started):
            ray.kill(actor, no_restart=True)
