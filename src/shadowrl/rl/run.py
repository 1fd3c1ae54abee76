"""One RL run: trainer, engine, weight store, rollouts and the orchestrator, wired.

Everything here is plumbing with the real components; the scheduling itself lives
in `orchestrator.py` and the math in `loss.py`. The components come as `Services`:
in this process (`local_services`) or as Ray actors behind proxies
(`cluster.backend.ray_services`); the loop below is the same for both. Progress is shown live (rich), every
step is logged (JSONL + TensorBoard), successful episodes are kept for rejection-
sampling SFT, and checkpoints are written every `train.save_every` steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from shadowrl import replay as replay_records
from shadowrl.atomic import write_json
from shadowrl.episode import EpisodeSpec
from shadowrl.inference import EngineAcceptance, build_engine
from shadowrl.inference.config import EngineConfig
from shadowrl.metrics import MetricsLogger
from shadowrl.rl.capabilities import build_episode_metrics, build_rollouts
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.companion import Companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.demos import append_trajectories
from shadowrl.rl.lora_sync import AdapterSync
from shadowrl.rl.orchestrator import (
    EpisodeMetrics,
    Orchestrator,
    OrchestratorConfig,
    RolloutFn,
    TaskSampler,
    TaskSource,
    TrainerLost,
)
from shadowrl.rl.rollout import Group
from shadowrl.rl.roots import SandboxRoots
from shadowrl.rl.services import Services
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore
from shadowrl.tasks import PreparedTask, Task

log = logging.getLogger(__name__)


def _progress_table(step: int, total: int, m: dict[str, Any]) -> Table:
    table = Table(title=f"RL step {step + 1}/{total}", show_header=False, box=None)
    for key, fmt in [
        ("reward", "{:.3f}"),
        ("pass_rate", "{:.1%}"),
        ("pass_rate_sampled", "{:.1%}"),
        ("hack_rate", "{:.1%}"),
        ("gen_tokens_per_s", "{:.1f}"),
        ("staleness_mean", "{:.2f}"),
        ("loss", "{:.4f}"),
        ("step_s", "{:.1f}"),
        ("wait_s", "{:.1f}"),
        ("train_s", "{:.1f}"),
        ("groups_stale", "{}"),
        ("groups_failed", "{}"),
        ("groups_set_aside", "{}"),
    ]:
        if key in m:
            table.add_row(key, fmt.format(m[key]))
    return table


@contextmanager
def local_services(
    model: Any,
    tokenizer: Any,
    ckpt: Path | None,
    run_dir: Path,
    *,
    train: TrainConfig,
    engine_config: EngineConfig,
    spec: EpisodeSpec,
    seed: int,
    companion: Companion | None = None,
) -> Iterator[Services]:
    """Trainer, weight store and engine in this process (the default backend); the
    `companion` is trained by the trainer and served by the engine, synced with the policy.
    With `train.loss.kl_coef` > 0 the KL term's reference is a frozen copy of `model`, the
    policy RL starts from, on a resume too."""
    ref = copy.deepcopy(model) if train.loss.kl_coef > 0 else None
    trainer = (
        Trainer.resume(ckpt, train, seed=seed, ref_model=ref)
        if ckpt
        else Trainer(model, train, companion=companion, seed=seed, ref_model=ref)
    )
    # on N data-parallel ranks, each rank writes the shards it owns
    store = trainer.publisher(
        WeightStore(
            train.weights.url or str(run_dir / "weights"),
            full_every=train.weights.full_every,
            shard_bytes=train.weights.shard_bytes,
            zstd_level=train.weights.zstd_level,
            dtype=None if engine_config.dtype == "auto" else engine_config.dtype,
        )
    )
    store.publish(trainer.state_dict(), trainer.version)
    # every tensor of the version (an adapter reader's `fetch` sends only what changed)
    full = store.whole if isinstance(store, AdapterSync) else store.fetch
    policy = trainer.policy_copy(lambda: full(trainer.version))
    served = trainer.companion.served() if trainer.companion is not None else None
    # with warm pools, each task's root and pool outlive its groups (`rl/roots.py`)
    roots = SandboxRoots(spec) if spec.sandbox.pool.enabled else None
    with (
        closing(trainer),  # stops the other data-parallel ranks, if any
        build_engine(
            policy, tokenizer, engine_config, heads=served, version=trainer.version, seed=seed
        ) as engine,
        closing(roots) if roots is not None else contextlib.nullcontext(),
    ):
        rollout = build_rollouts(engine, train, tokenizer, spec, roots)
        accepted = EngineAcceptance(engine.speculator)  # the engine's speculation, per step
        yield Services(
            trainer,
            store,
            engine,
            rollout,
            # prompt tokens not prefilled, and what speculation accepted per draft position
            lambda: {"prefix_hit_tokens": engine.prefix.hit_tokens, **accepted.read()},
            # a plain model: FSDP shards gathered, LoRA merged (a copy under `replicate`)
            lambda: trainer.policy_copy(lambda: full(trainer.version)),
        )


async def run_rl(
    model: Any,
    tokenizer: Any,
    tasks: list[tuple[Task, PreparedTask]] | TaskSource,
    run_dir: Path,
    *,
    train: TrainConfig,
    orchestrator: OrchestratorConfig,
    engine_config: EngineConfig,
    spec: EpisodeSpec,
    seed: int = 0,
    ray: RayConfig | None = None,
    rollout: RolloutFn | None = None,
    companion: Companion | None = None,
    model_path: str = "",
) -> Any:
    """Train `train.steps` RL steps on `tasks` (resuming from run_dir/checkpoints); return
    the model. `tasks` is a fixed list (reshuffled every epoch) or a `TaskSource` that
    resumes itself, such as a stream of fresh instances (one pass, none twice).

    `ray` runs the services as actors on a Ray cluster (`rl/cluster/`), the loop staying
    here; a lost trainer restarts from the last checkpoint up to `ray.trainer_restarts`
    times. `rollout` replaces the episodes (recorded groups replayed, to compare backends).
    `companion` (`rl/companion.py`): trained beside the policy and served by the engines,
    on either backend; a resumed run takes the one saved with its checkpoint.
    `model_path` (the base model's) goes into the records of `train.save_rollouts`.
    """
    # every running tool call and sandbox operation holds a worker thread: size the
    # pool for all in-flight episodes, or async rollouts serialise on the default pool
    workers = orchestrator.inflight_groups * train.group_size + 8
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers))
    restarts = ray.trainer_restarts if ray is not None else 0
    for attempt in range(restarts + 1):
        start, ckpt = _resume_point(run_dir)
        if start >= train.steps:
            return _checkpoint_model(ckpt, model, train)
        if ray is None:
            services = local_services(
                model, tokenizer, ckpt, run_dir,
                train=train, engine_config=engine_config, spec=spec, seed=seed, companion=companion,
            )  # fmt: skip
        else:
            from shadowrl.rl.cluster.backend import ray_services

            fixed = tasks if isinstance(tasks, list) else []
            services = ray_services(
                model, tokenizer, fixed, run_dir, ray, ckpt=ckpt,
                train=train, engine_config=engine_config, spec=spec, seed=seed, companion=companion,
            )  # fmt: skip
        try:
            with services as s:
                recorder = replay_records.build_recorder(
                    train.save_rollouts, run_dir, spec, model_path, train.weights.url
                )
                await _train(
                    s, tokenizer, tasks, run_dir, start, train, orchestrator, seed, rollout, recorder,
                    build_episode_metrics(spec.agent),
                )  # fmt: skip
                return s.final_model()
        except TrainerLost as e:
            if attempt == restarts:
                raise
            log.warning("trainer lost (%s): resuming from the last checkpoint", e)
    raise AssertionError("unreachable")


async def _train(
    services: Services,
    tokenizer: Any,
    tasks: list[tuple[Task, PreparedTask]] | TaskSource,
    run_dir: Path,
    start: int,
    cfg: TrainConfig,
    orchestrator: OrchestratorConfig,
    seed: int,
    replay: RolloutFn | None,
    recorder: replay_records.Recorder,
    episode_metrics: EpisodeMetrics = lambda trajectories: {},
) -> None:
    """The orchestrator over `services` from step `start`, with progress, metrics and saves."""
    trainer, ckpt_root = services.trainer, run_dir / "checkpoints"
    play = replay or services.rollout

    async def rollout(task: Any, prep: Any, version: int) -> Group:
        group = await play(task, prep, version)
        wins = [t for t in group.trajectories if group.ok and t.info.get("resolved")]
        append_trajectories(run_dir / "successes.jsonl", wins)  # for rejection-sampling SFT
        if group.ok:
            await recorder.keep(task, group, version)  # a kept group's records, when on
        return group

    with (
        MetricsLogger(run_dir) as metrics,
        Live(console=Console(), refresh_per_second=2) as live,
    ):

        def on_step(step: int, m: dict[str, Any]) -> None:
            m = {**m, **services.extra_metrics()}
            metrics.log("rl", step + 1, m)
            live.update(_progress_table(step, cfg.steps, m))
            if (cfg.save_every and (step + 1) % cfg.save_every == 0) or step + 1 == cfg.steps:
                _save_loop_state(run_dir, step + 1, trainer.save(ckpt_root, tokenizer))

        def on_error(group: Group) -> None:
            record = {"task": group.task_id, "errors": group.errors[:3]}
            metrics.log("rollout_error", trainer.step_count, record)

        if isinstance(tasks, list):  # after the split and screen
            metrics.log("rl_data", start, {"tasks": len(tasks)})
            source: TaskSource = TaskSampler(tasks, seed=seed, position=start * cfg.groups_per_step)
        else:  # a stream: every draw a fresh instance; it resumes from its own log
            metrics.log("rl_data", start, {"stream_position": tasks.position})
            source = tasks
        orch = Orchestrator(
            cfg=orchestrator,
            train=cfg,
            rollout=rollout,
            engine=services.engine,
            trainer=trainer,
            store=services.store,
            tasks=source,
            on_step=on_step,
            on_error=on_error,
            episode_metrics=episode_metrics,
        )
        try:
            stats = await orch.run(start_step=start)
        finally:
            source.close()
        metrics.log("rl_summary", cfg.steps, vars(stats))


def _checkpoint_model(ckpt: Path | None, model: Any, train: TrainConfig) -> Any:
    """The policy of a finished run: its last checkpoint (or `model` when there is none)."""
    if ckpt is None:
        return model
    from shadowrl.rl.fsdp import full_model, is_sharded

    if is_sharded(ckpt):  # read whole here: a resumed sharded trainer holds only shards
        return full_model(ckpt, train.dtype)
    # Its weights are the policy: no KL reference is needed to read them back.
    train = train.model_copy(update={"loss": train.loss.model_copy(update={"kl_coef": 0.0})})
    with closing(Trainer.resume(ckpt, train)) as trainer:  # no data-parallel ranks left behind
        return trainer.model


LOOP_STATE = "loop_state.json"


def _resume_point(run_dir: Path) -> tuple[int, Path | None]:
    """(RL steps done, their checkpoint) from the last completed save, or (0, None).

    Kept apart from the trainer's own counters because a step whose groups all had
    zero advantage changes no weights, yet it is a step of the run.
    """
    path = run_dir / LOOP_STATE
    if not path.exists():
        return 0, None
    state = json.loads(path.read_text())
    ckpt = run_dir / "checkpoints" / state["checkpoint"]
    if not ckpt.is_dir():
        raise SystemExit(f"{path} names a missing checkpoint {ckpt}; remove it to restart RL")
    return int(state["step"]), ckpt


def _save_loop_state(run_dir: Path, step: int, ckpt: Path) -> None:
    # atomic: a crash leaves the previous state
    write_json(run_dir / LOOP_STATE, {"step": step, "checkpoint": ckpt.name}, indent=None)
