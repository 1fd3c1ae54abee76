"""The warm start of `shadowrl train`, and the control arm that keeps RL's gain honest.

    dev demos ─────────────┐ (validate; entropy of every policy)
    SFT tasks' demos ─► SFT, one pass, early-stopped on dev NLL ─► sft/
                                            │
    RL tasks' demos ──► SFT-more: sft/ trained on for RL's wall time ─► sft_more/

SFT is stopped on the NLL of demonstrations of dev tasks no stage trains on, and keeps
the weights of its best check: a start fitted to its demos down to NLL 0.002 no longer
varies its answers, and GRPO learns nothing from a group whose attempts all agree.
SFT-more trains that start on expert demos of the very tasks RL trains on, for as long
as RL ran: if RL beats SFT but not SFT-more, the gain was more training, not RL.

Demonstrations are written next to the checkpoints (`*.demos.jsonl`), so a resumed run
scores the same dev demos. Every policy's score on them goes to metrics.jsonl as a
`demo_score` row; each check as an `sft_check` row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.progress import track

from shadowrl.metrics import MetricsLogger, read_metrics
from shadowrl.pipeline.config import PipelineError, TrainRun
from shadowrl.rl import (
    Check,
    DemoScore,
    SFTRun,
    Trainer,
    Validation,
    append_trajectories,
    dedupe,
    demo_scores,
    expert_demonstrations,
    latest_checkpoint,
    load_trajectories,
    policy_of,
    run_sft,
)
from shadowrl.tasks import Task, prepare
from shadowrl.types import Trajectory

log = logging.getLogger(__name__)
DEV_DEMOS = "dev.demos.jsonl"


def demos_of(tasks: Sequence[Task], tokenizer: Any, run: TrainRun, cache: Path) -> list[Trajectory]:
    """The expert's resolved demonstrations of `tasks`, read from `cache` when it holds them."""
    if cache.is_file():
        return load_trajectories(cache)
    prepared = [prepare(t, run.tasks.cache_dir) for t in track(tasks, description="preparing")]
    demos = asyncio.run(
        expert_demonstrations(
            prepared, tokenizer, run.episode, run.eval.concurrency, run.pipeline.experts
        )
    )
    cache.parent.mkdir(parents=True, exist_ok=True)
    append_trajectories(cache, demos)
    return demos


def validation(dev: Sequence[Trajectory], run: TrainRun) -> Validation | None:
    p = run.pipeline
    return Validation(dev, p.sft_check_every, p.sft_patience) if dev else None


def log_score(metrics: MetricsLogger, policy: str, score: DemoScore) -> None:
    values = {"policy": policy, "nll": score.nll, "entropy": score.entropy, "tokens": score.tokens}
    metrics.log("demo_score", 0, values)


def _log_check(metrics: MetricsLogger, arm: str, check: Check) -> None:
    s = check.score
    values = {"arm": arm, "nll": s.nll, "entropy": s.entropy, "tokens": s.tokens}
    metrics.log("sft_check", check.step, values)


def _train(
    model: Any, demos: list[Trajectory], dev: list[Trajectory], run: TrainRun, arm: str,
    dest: Path, tokenizer: Any, *, epochs: int, budget_s: float | None = None,
) -> tuple[Any, SFTRun]:  # fmt: skip
    """SFT of `model` on `demos`, logged under `arm` and saved under `dest`; returns the
    kept weights as a plain policy (LoRA merged) and what the run did. On `train.parallel`
    fsdp/hsdp every rank scores the dev demos and keeps its shards of the best weights,
    and the policy is read back whole from the sharded checkpoint."""
    trainer = Trainer(model, run.train, objective="sft", seed=run.seed)
    with closing(trainer), MetricsLogger(run.run_dir) as metrics:  # closing: stops DP ranks
        result = run_sft(
            trainer,
            demos,
            epochs=epochs,
            batch_tokens=run.train.sft.batch_tokens,
            validation=validation(dev, run),
            budget_s=budget_s,
            on_step=lambda m: metrics.log(arm, trainer.step_count, m),
            on_check=lambda c: _log_check(metrics, arm, c),
        )
        done = {"best_step": result.best_step, "steps": len(result.history)}
        metrics.log(f"{arm}_done", 0, {**done, "stopped": result.stopped})
        if result.checks and arm == "sft":
            log_score(metrics, "base", result.checks[0].score)
        if result.best is not None:
            log_score(metrics, arm, result.best.score)
        path = trainer.save(dest, tokenizer)  # under FSDP every rank writes its shards
        policy = None if trainer.parallel.sharded else trainer.policy_copy()  # LoRA: merged
    return (policy if policy is not None else policy_of(path, run.train.dtype)), result


def sft_stage(
    model: Any, tokenizer: Any, run: TrainRun, tasks: Sequence[Task], dev_tasks: Sequence[Task]
) -> Any:
    """Warm-start on expert demos of `tasks`, validated on those of `dev_tasks`; returns the
    fine-tuned model (cached in sft/)."""
    if (done := latest_checkpoint(run.run_dir / "sft")) is not None:
        return policy_of(done, run.train.dtype)  # saved by the trainer in that dtype
    demos = demos_of(tasks, tokenizer, run, run.run_dir / "sft.demos.jsonl")
    for path in run.pipeline.demos_from:
        demos += [t for t in load_trajectories(path) if (t.reward or 0) > 0]
    demos = dedupe(demos)
    if not demos:
        raise PipelineError("no demonstration was resolved; check the task suite and sandbox")
    dev = demos_of(dev_tasks, tokenizer, run, run.run_dir / DEV_DEMOS) if dev_tasks else []
    log.info("SFT on %d demonstrations of %d tasks, %d dev demos", len(demos), len(tasks), len(dev))
    with MetricsLogger(run.run_dir) as metrics:
        counts = {"demonstrations": len(demos), "tasks": len(tasks), "dev": len(dev)}
        metrics.log("sft_data", 0, counts)
    dest, epochs = run.run_dir / "sft", run.train.sft.epochs
    policy, _ = _train(model, demos, dev, run, "sft", dest, tokenizer, epochs=epochs)
    return policy


def rl_wall_s(run_dir: Path) -> float:
    """RL's wall time: the summed step times of its logged steps (the last log of each)."""
    steps = {r["step"]: r for r in read_metrics(run_dir / "metrics.jsonl", "rl")}
    return float(sum(r["step_s"] for r in steps.values()))


def sft_more_stage(tokenizer: Any, run: TrainRun, tasks: Sequence[Task]) -> Any:
    """The SFT checkpoint trained on expert demos of `tasks` (RL's, fresh to SFT) for RL's
    wall time, one pass at most; returns the model (cached in sft_more/)."""
    if (done := latest_checkpoint(run.run_dir / "sft_more")) is not None:
        return policy_of(done, run.train.dtype)  # saved by the trainer in that dtype
    if (start := latest_checkpoint(run.run_dir / "sft")) is None:
        raise PipelineError("SFT-more continues the SFT checkpoint, and there is none")
    budget = rl_wall_s(run.run_dir)
    demos = demos_of(tasks, tokenizer, run, run.run_dir / "sft_more.demos.jsonl")
    dev_path = run.run_dir / DEV_DEMOS
    dev = load_trajectories(dev_path) if dev_path.is_file() else []
    log.info("SFT-more on up to %d demonstrations for %.0f s (RL's wall time)", len(demos), budget)
    with MetricsLogger(run.run_dir) as metrics:
        counts = {"demonstrations": len(demos), "tasks": len(tasks), "budget_s": budget}
        metrics.log("sft_more_data", 0, counts)
    model = policy_of(start, run.train.dtype)
    dest = run.run_dir / "sft_more"
    policy, result = _train(
        model, demos, dev, run, "sft_more", dest, tokenizer, epochs=1, budget_s=budget
    )
    log.info("SFT-more: %d steps, ended by %s", len(result.history), result.stopped)
    return policy


def score_policy(model: Any, policy: str, run: TrainRun) -> None:
    """Log `model`'s score on the dev demos as policy `policy` (once; none without dev demos)."""
    path = run.run_dir / DEV_DEMOS
    logged = {r.get("policy") for r in read_metrics(run.run_dir / "metrics.jsonl", "demo_score")}
    if not path.is_file() or policy in logged:
        return
    score = demo_scores(
        model, load_trajectories(path), microbatch_tokens=run.train.batch.microbatch_tokens
    )
    with MetricsLogger(run.run_dir) as metrics:
        log_score(metrics, policy, score)
