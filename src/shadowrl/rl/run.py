"""One RL run: trainer, engine, weight store, rollouts and the orchestrator, wired.

Everything here is plumbing with the real components; the scheduling itself lives
in `orchestrator.py` and the math in `loss.py`. Progress is shown live (rich), every
step is logged (JSONL + TensorBoard), successful episodes are kept for rejection-
sampling SFT, and checkpoints are written every `train.save_every` steps.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.metrics import MetricsLogger
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.demos import append_trajectories
from shadowrl.rl.orchestrator import Orchestrator, OrchestratorConfig, TaskSampler
from shadowrl.rl.rollout import Group, rollout_group
from shadowrl.rl.trainer import Trainer
from shadowrl.rl.weights import WeightStore
from shadowrl.tasks import PreparedTask, Task


def _progress_table(step: int, total: int, m: dict[str, Any]) -> Table:
    table = Table(title=f"RL step {step + 1}/{total}", show_header=False, box=None)
    for key, fmt in [
        ("reward", "{:.3f}"),
        ("pass_rate", "{:.1%}"),
        ("hack_rate", "{:.1%}"),
        ("gen_tokens_per_s", "{:.1f}"),
        ("staleness_mean", "{:.2f}"),
        ("loss", "{:.4f}"),
        ("step_s", "{:.1f}"),
        ("groups_stale", "{}"),
        ("groups_failed", "{}"),
    ]:
        if key in m:
            table.add_row(key, fmt.format(m[key]))
    return table


async def run_rl(
    model: Any,
    tokenizer: Any,
    tasks: list[tuple[Task, PreparedTask]],
    run_dir: Path,
    *,
    train: TrainConfig,
    orchestrator: OrchestratorConfig,
    engine_config: EngineConfig,
    spec: EpisodeSpec,
    seed: int = 0,
) -> Any:
    """Train `train.steps` RL steps on `tasks` (resuming from run_dir/checkpoints); return
    the model."""
    cfg = train
    # every running tool call and sandbox operation holds a worker thread: size the
    # pool for all in-flight episodes, or async rollouts serialise on the default pool
    workers = orchestrator.inflight_groups * cfg.group_size + 8
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(workers))
    ckpt_root = run_dir / "checkpoints"
    start, ckpt = _resume_point(run_dir)
    trainer = Trainer.resume(ckpt, cfg) if ckpt else Trainer(model, cfg)
    if start >= cfg.steps:
        return trainer.model
    store = WeightStore(
        cfg.weights_url or str(run_dir / "weights"),
        full_every=cfg.full_every,
        dtype=None if engine_config.dtype == "auto" else engine_config.dtype,
    )
    store.publish(trainer.state_dict(), trainer.version)
    console = Console()
    with (
        Engine(
            copy.deepcopy(trainer.model).eval(),
            tokenizer,
            engine_config,
            version=trainer.version,
            seed=seed,
        ) as engine,
        MetricsLogger(run_dir) as metrics,
        Live(console=console, refresh_per_second=2) as live,
    ):

        async def rollout(task: Any, prep: Any, version: int) -> Group:
            if cfg.branching.enabled:  # tree rollouts (rl/tree.py)
                from shadowrl.rl.tree import rollout_tree

                return await rollout_tree(
                    engine, task, prep, branching=cfg.branching, tokenizer=tokenizer, spec=spec,
                    version=version,
                )  # fmt: skip
            group = await rollout_group(
                engine,
                task,
                prep,
                group_size=cfg.group_size,
                tokenizer=tokenizer,
                spec=spec,
                version=version,
            )
            wins = [t for t in group.trajectories if group.ok and t.info.get("resolved")]
            append_trajectories(run_dir / "successes.jsonl", wins)  # for rejection-sampling SFT
            return group

        def on_step(step: int, m: dict[str, Any]) -> None:
            m = {**m, "prefix_hit_tokens": engine.prefix.hit_tokens}  # prompt tokens not prefilled
            metrics.log("rl", step + 1, m)
            live.update(_progress_table(step, cfg.steps, m))
            if (cfg.save_every and (step + 1) % cfg.save_every == 0) or step + 1 == cfg.steps:
                _save_loop_state(run_dir, step + 1, trainer.save(ckpt_root, tokenizer))

        def on_error(group: Group) -> None:
            record = {"task": group.task_id, "errors": group.errors[:3]}
            metrics.log("rollout_error", trainer.step_count, record)

        metrics.log("rl_data", start, {"tasks": len(tasks)})  # after the split and screen
        orch = Orchestrator(
            cfg=orchestrator,
            train=cfg,
            rollout=rollout,
            engine=engine,
            trainer=trainer,
            store=store,
            tasks=TaskSampler(tasks, seed=seed, position=start * cfg.groups_per_step),
            on_step=on_step,
            on_error=on_error,
        )
        stats = await orch.run(start_step=start)
        metrics.log("rl_summary", cfg.steps, vars(stats))
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
    tmp = run_dir / f".{LOOP_STATE}.tmp"
    tmp.write_text(json.dumps({"step": step, "checkpoint": ckpt.name}))
    os.replace(tmp, run_dir / LOOP_STATE)  # atomic: a crash leaves the previous state
