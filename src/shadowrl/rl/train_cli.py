"""`shadowrl sft` and `shadowrl train`: warm start, asynchronous RL, held-out eval.

`train` is the main job and runs the whole pipeline, each stage resumable:

    base eval ─► SFT on expert demos ─► eval ─► [screen] ─► async GRPO ─► eval ─► report
    (eval_base/)  (sft/ checkpoint)   (eval_sft/) (screen/)  (checkpoints/) (eval_rl_stepN/)

The optional screen samples the starting policy on RL's train tasks and keeps those
it solves sometimes but not always (`pipeline.screen_samples`).

A stage whose output already exists in `run_dir` is skipped, and RL continues from
its newest checkpoint, so after a crash or `kill -9` rerunning the same command (or
passing `--resume`) loses at most the step in progress.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from shadowrl.config import Config
    from shadowrl.eval.result import EvalResult
    from shadowrl.tasks import PreparedTask, Task

log = logging.getLogger(__name__)


class PipelineConfig(BaseModel):
    """Sizes of the stages of `shadowrl train` (`pipeline:` in the config tree)."""

    model_config = ConfigDict(extra="forbid")
    train_tasks: int = Field(24, ge=0, description="Train-split tasks used (0 = all).")
    sft_tasks: int = Field(
        0,
        ge=0,
        description="How many of those tasks (from the front) give SFT its expert demos (0 = all).",
    )
    rl_tasks: Literal["all", "unseen"] = Field(
        "all",
        description="RL on every train task, or only on those SFT had no demo of ('unseen'): "
        "then the RL reward is not the recall of a gold patch SFT was fitted on.",
    )
    eval_tasks: int = Field(8, ge=0, description="Held-out tasks evaluated (0 = all).")
    eval_samples: int = Field(2, ge=1, description="Episodes per held-out task (k of pass@k).")
    eval_base: bool = Field(
        False,
        description="Also evaluate the starting model (slow on CPU: it rambles to every budget).",
    )
    base_samples: int = Field(
        0,
        ge=0,
        description="Episodes per held-out task in the base model's eval (0 = eval_samples); "
        "fewer keep it affordable, since the base model uses every turn and token budget.",
    )
    screen_samples: int = Field(
        0,
        ge=0,
        description="Before RL, run the starting policy this many times on each RL task and "
        "train only on the tasks it solves sometimes but not always (0 = off): a group that "
        "all fails or all passes has no outcome advantage, so it costs rollouts and teaches "
        "nothing about solving. Written to run_dir/screen/.",
    )
    sft: bool = Field(True, description="Warm-start with SFT on expert demonstrations.")
    demos_from: list[str] = Field(
        default_factory=list, description="Extra demonstration JSONL files (e.g. successes.jsonl)."
    )

    @model_validator(mode="after")
    def _rl_has_tasks(self) -> PipelineConfig:
        if self.rl_tasks == "unseen" and not (self.sft and self.sft_tasks):
            raise ValueError("rl_tasks='unseen' needs sft on a subset: set sft_tasks > 0")
        if self.rl_tasks == "unseen" and self.train_tasks and self.sft_tasks >= self.train_tasks:
            raise ValueError(f"sft_tasks={self.sft_tasks} leaves none of {self.train_tasks} for RL")
        return self


def split_train_tasks(tasks: list[Task], pipeline: PipelineConfig) -> tuple[list[Task], list[Task]]:
    """(SFT's tasks, RL's tasks) out of the train split, as `pipeline` says."""
    sft = tasks[: pipeline.sft_tasks] if pipeline.sft_tasks else tasks
    rl = tasks[len(sft) :] if pipeline.rl_tasks == "unseen" else tasks
    if not rl:
        raise SystemExit(f"no train task is left for RL: {len(tasks)} tasks, {len(sft)} for SFT")
    return sft, rl


SCREEN_DIR = "screen"  # not eval_*: the run report reads those as held-out evals


def learnable(tasks: list[Task], screen: EvalResult) -> list[Task]:
    """The `tasks` that `screen` solved in some but not all of their samples, in order."""
    keep = {t.instance_id for t in screen.tasks if 0 < t.counts[1] < t.counts[0]}
    return [t for t in tasks if t.instance_id in keep]


def rl_share(config: Config) -> list[Task]:
    """The train tasks the split gives RL, before any screen."""
    tasks = _tasks(config, "train", config.pipeline.train_tasks)
    return split_train_tasks(tasks, config.pipeline)[1]


def rl_task_list(config: Config, run_dir: Path) -> list[Task]:
    """RL's train tasks: the split's RL share, narrowed by the screen when there is one."""
    rl = rl_share(config)
    if not config.pipeline.screen_samples:
        return rl
    from shadowrl.eval.result import EvalResult

    kept = learnable(rl, EvalResult.load(run_dir / SCREEN_DIR))
    if not kept:
        raise SystemExit(
            f"the screen in {run_dir / SCREEN_DIR} found no RL task that the starting policy "
            "solves sometimes but not always: raise pipeline.screen_samples or set it to 0"
        )
    log.info("RL on %d of %d tasks that the screen found learnable", len(kept), len(rl))
    return kept


def add_train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in run_dir (default: also when it exists)",
    )
    p.add_argument("--fresh", action="store_true", help="delete run_dir first")


def add_sft_args(p: argparse.ArgumentParser) -> None:
    add_train_args(p)


def _prepare(tasks: list[Task], config: Config) -> list[tuple[Task, PreparedTask]]:
    from rich.progress import track

    from shadowrl.tasks import prepare

    return [
        (t, prepare(t, config.tasks.cache_dir)) for t in track(tasks, description="preparing tasks")
    ]


def _tasks(config: Config, split: str, limit: int) -> list[Task]:
    from shadowrl.tasks import load_suite

    tasks = load_suite(config.tasks.suite, split)  # type: ignore[arg-type]
    if not tasks:
        raise SystemExit(f"suite {config.tasks.suite!r} has no {split} tasks")
    return tasks[:limit] if limit else tasks


def _load_policy_model(config: Config, path: str | None) -> tuple[Any, Any]:
    from shadowrl.models import load_model

    cfg = config.model if path is None else config.model.model_copy(update={"path": path})
    return load_model(cfg)


async def _evaluate(
    model: Any,
    tokenizer: Any,
    config: Config,
    label: str,
    out: Path,
    samples: int = 0,
    train_tasks: list[Task] | None = None,
) -> None:
    """Held-out eval (or, given `train_tasks`, an eval on those) of `model` through the
    exact serving harness, on the engine, into `out` (skipped when `out` holds one: the
    report reads every eval back from disk)."""
    from shadowrl.eval.policies import SharedPolicy
    from shadowrl.eval.runner import evaluate
    from shadowrl.inference.engine import Engine

    if (out / "eval.json").exists():
        return
    if train_tasks is None:
        split, tasks = "heldout", _tasks(config, "heldout", config.pipeline.eval_tasks)
    else:  # an empty list stays empty: never a silent swap to the held-out split
        split, tasks = "train", train_tasks
    with Engine(copy.deepcopy(model), tokenizer, config.engine, seed=config.seed) as engine:
        factory = SharedPolicy(engine, tokenizer, f"{label}:{config.model.path}")
        result = await evaluate(
            tasks,
            factory,
            samples=samples or config.pipeline.eval_samples,
            concurrency=config.eval.concurrency,
            config=config,
            suite=f"{config.tasks.suite}:{split}",
        )
    keep_eval(result, out, label)


def keep_eval(result: EvalResult, out: Path, label: str) -> None:
    """Write `result` to `out`, unless every episode crashed.

    That is a broken setup (a seed path that does not resolve, a missing environment),
    not a policy that scores 0: the run stops with the first error, and the report goes
    to `<out>.crashed/`, so a rerun evaluates again instead of reusing it.
    """
    from shadowrl.eval.report import write_report

    overall = result.overall
    if overall.episodes and overall.errors == overall.episodes:
        dest = out.with_name(out.name + ".crashed")
        write_report(result, dest)
        first = next(s.error for t in result.tasks for s in t.samples if s.error)
        raise RuntimeError(
            f"{label} eval: all {overall.episodes} episodes crashed (report: {dest}); "
            f"the first error:\n{first}"
        )
    write_report(result, out)
    log.info(
        "%s eval: pass@1 %.3f (%d of %d episodes crashed)",
        label,
        overall.pass1.value,
        overall.errors,
        overall.episodes,
    )


def _sft(model: Any, tokenizer: Any, config: Config, run_dir: Path) -> Any:
    """Warm-start on expert demonstrations; returns the fine-tuned model (cached in sft/)."""
    from transformers import AutoModelForCausalLM

    from shadowrl.metrics import MetricsLogger
    from shadowrl.rl.checkpoint import latest_checkpoint
    from shadowrl.rl.demos import dedupe, expert_demonstrations, load_trajectories
    from shadowrl.rl.sft import run_sft
    from shadowrl.rl.trainer import Trainer

    if (done := latest_checkpoint(run_dir / "sft")) is not None:
        return AutoModelForCausalLM.from_pretrained(done)
    tasks = _tasks(config, "train", config.pipeline.train_tasks)
    prepared = _prepare(split_train_tasks(tasks, config.pipeline)[0], config)
    demos = asyncio.run(expert_demonstrations(prepared, tokenizer, config, config.eval.concurrency))
    for path in config.pipeline.demos_from:
        demos += [t for t in load_trajectories(path) if (t.reward or 0) > 0]
    demos = dedupe(demos)
    if not demos:
        raise SystemExit("no demonstration was resolved; check the task suite and sandbox")
    log.info("SFT on %d demonstrations", len(demos))
    trainer = Trainer(model, config.train, objective="sft")
    with MetricsLogger(run_dir) as metrics:
        run_sft(
            trainer,
            demos,
            epochs=config.train.sft_epochs,
            batch_tokens=config.train.sft_batch_tokens,
            on_step=lambda m: metrics.log("sft", trainer.step_count, m),
        )
    trainer.save(run_dir / "sft", tokenizer)
    return trainer.model


def _rl(model: Any, tokenizer: Any, config: Config, run_dir: Path) -> Any:
    """Asynchronous GRPO from `model` (or from the newest RL checkpoint); returns the policy."""
    from shadowrl.rl.loop import run_rl

    return asyncio.run(run_rl(model, tokenizer, config, run_dir))


def _start(args: argparse.Namespace, config: Config) -> Path:
    run_dir = Path(config.run_dir)
    if args.fresh and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(_dump(config))
    return run_dir


def _dump(config: Config) -> str:
    import yaml

    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


def cmd_sft(args: argparse.Namespace, config: Config) -> int:
    run_dir = _start(args, config)
    model, tokenizer = _load_policy_model(config, None)
    _sft(model, tokenizer, config, run_dir)
    print(f"SFT checkpoint: {run_dir / 'sft'}")
    return 0


def cmd_train(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.rl.report import write_run_report

    run_dir = _start(args, config)
    model, tokenizer = _load_policy_model(config, None)
    if config.pipeline.eval_base:
        base_samples = config.pipeline.base_samples
        asyncio.run(
            _evaluate(model, tokenizer, config, "base", run_dir / "eval_base", base_samples)
        )
    if config.pipeline.sft:
        model = _sft(model, tokenizer, config, run_dir)
        asyncio.run(_evaluate(model, tokenizer, config, "sft", run_dir / "eval_sft"))
    if samples := config.pipeline.screen_samples:  # on RL's starting policy
        screen = run_dir / SCREEN_DIR
        asyncio.run(
            _evaluate(model, tokenizer, config, "screen", screen, samples, rl_share(config))
        )
    model = _rl(model, tokenizer, config, run_dir)
    final = run_dir / f"eval_rl_step{config.train.steps}"  # a longer rerun evaluates anew
    asyncio.run(_evaluate(model, tokenizer, config, "rl", final))
    report = write_run_report(run_dir)  # every eval in run_dir: a resumed run's whole history
    print(f"report: {report}")
    return 0
