"""The training pipeline of `shadowrl train`: warm start, asynchronous RL, held-out eval.

Each stage is resumable:

    base eval ─► SFT on expert demos ─► eval ─► [screen] ─► async GRPO ─► eval ─►
    (eval_base/)  (sft/ checkpoint)   (eval_sft/) (screen/)  (checkpoints/) (eval_rl_stepN/)
        ─► [SFT-more for RL's wall time ─► eval] ─► report
            (sft_more/)                 (eval_sft_more/)

SFT is one pass, early-stopped on the NLL of dev tasks' demos, and SFT-more is its
control arm (`pipeline/warmstart.py`). The optional screen samples the starting policy
on RL's train tasks and keeps those it solves sometimes but not always
(`pipeline.screen_samples`). Evals and train subsets take tasks round-robin over
their templates (`Task.repo`), so a limit never keeps one template's tasks only.

A stage whose output already exists in `run_dir` is skipped, and RL continues from
its newest checkpoint, so after a crash or `kill -9` rerunning the same command loses
at most the step in progress. The stages get a `TrainRun` (the config sections they
use, typed) rather than the whole config tree, which is the command layer's.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from pathlib import Path
from typing import Any

from rich.progress import track

from shadowrl.episode import SharedPolicy
from shadowrl.eval import EvalResult, evaluate, write_report
from shadowrl.inference import build_engine
from shadowrl.models import checkpoint_dir
from shadowrl.pipeline.config import PipelineError, TrainRun
from shadowrl.pipeline.report import write_run_report
from shadowrl.pipeline.tasksets import (
    dev_tasks,
    heldout_spec,
    heldout_tasks,
    rl_share,
    split_train_tasks,
    train_tasks,
)
from shadowrl.pipeline.warmstart import score_policy, sft_more_stage, sft_stage
from shadowrl.rl import build_companion, run_rl
from shadowrl.tasks import PreparedTask, Task, prepare

log = logging.getLogger(__name__)

SCREEN_DIR = "screen"  # not eval_*: the run report reads those as held-out evals


def learnable(tasks: list[Task], screen: EvalResult) -> list[Task]:
    """The `tasks` that `screen` solved in some but not all of their samples, in order."""
    keep = {t.instance_id for t in screen.tasks if 0 < t.counts[1] < t.counts[0]}
    return [t for t in tasks if t.instance_id in keep]


def rl_task_list(run: TrainRun) -> list[Task]:
    """RL's train tasks: the split's RL share, narrowed by the screen when there is one."""
    rl = rl_share(run)
    if not run.pipeline.screen_samples:
        return rl
    screen = run.run_dir / SCREEN_DIR
    kept = learnable(rl, EvalResult.load(screen))
    if not kept:
        raise PipelineError(
            f"the screen in {screen} found no RL task that the starting policy "
            "solves sometimes but not always: raise pipeline.screen_samples or set it to 0"
        )
    log.info("RL on %d of %d tasks that the screen found learnable", len(kept), len(rl))
    return kept


def prepare_all(tasks: list[Task], cache_dir: str) -> list[tuple[Task, PreparedTask]]:
    """Build (or reuse from the cache) every task's workspace and env, with progress."""
    return [(t, prepare(t, cache_dir)) for t in track(tasks, description="preparing tasks")]


async def evaluate_stage(
    model: Any,
    tokenizer: Any,
    run: TrainRun,
    label: str,
    out: Path,
    samples: int = 0,
    train_tasks: list[Task] | None = None,
) -> None:
    """Held-out eval (or, given `train_tasks`, an eval on those) of `model` through the
    exact serving harness, on the engine, into `out` (skipped when `out` holds one: the
    report reads every eval back from disk)."""
    if (out / "eval.json").exists():
        return
    if train_tasks is None:
        where, tasks = heldout_spec(run), heldout_tasks(run)
    else:  # an empty list stays empty: never a silent swap to the held-out split
        where, tasks = f"{run.pipeline.train_suite or run.tasks.suite}:train", train_tasks
    settings = run.eval.model_copy(update={"samples": samples or run.pipeline.eval_samples})
    with build_engine(copy.deepcopy(model), tokenizer, run.engine, seed=run.seed) as engine:
        factory = SharedPolicy(engine, tokenizer, f"{label}:{run.model_path}")
        result = await evaluate(
            tasks,
            factory,
            run.episode,
            settings=settings,
            cache_dir=run.tasks.cache_dir,
            config_pins=run.pins,
            seed=run.seed,
            suite=where,
        )
    keep_eval(result, out, label)


def keep_eval(result: EvalResult, out: Path, label: str) -> None:
    """Write `result` to `out`, unless every episode crashed.

    That is a broken setup (a seed path that does not resolve, a missing environment),
    not a policy that scores 0: the run stops with the first error, and the report goes
    to `<out>.crashed/`, so a rerun evaluates again instead of reusing it.
    """
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


def warm_start(model: Any, tokenizer: Any, run: TrainRun) -> Any:
    """SFT on the SFT share of the train tasks, validated on the dev tasks (cached in sft/)."""
    tasks = split_train_tasks(train_tasks(run), run.pipeline)[0]
    return sft_stage(model, tokenizer, run, tasks, dev_tasks(run))


def rl_stage(model: Any, tokenizer: Any, run: TrainRun) -> Any:
    """Asynchronous GRPO from `model` (or from the newest RL checkpoint); returns the policy.

    With `run.ray` the trainer, engines and environment workers are Ray actors;
    `pipeline.rl_stream` trains on fresh family instances instead (`rl_source.py`)."""
    from shadowrl.pipeline.rl_source import family_stream  # the family loads for a stream only

    stream = run.pipeline.rl_stream
    tasks = family_stream(run) if stream else prepare_all(rl_task_list(run), run.tasks.cache_dir)
    return asyncio.run(
        run_rl(
            model,
            tokenizer,
            tasks,
            run.run_dir,
            train=run.train,
            orchestrator=run.orchestrator,
            engine_config=run.engine,
            spec=run.episode,
            seed=run.seed,
            ray=run.ray,
            companion=build_companion(run.train, checkpoint_dir(run.model_path), seed=run.seed),
            model_path=run.model_path,
        )
    )


def train_pipeline(model: Any, tokenizer: Any, run: TrainRun) -> Path:
    """Every stage in order (each skipped when its output exists); returns the report path."""
    p = run.pipeline
    if p.eval_base:
        asyncio.run(
            evaluate_stage(model, tokenizer, run, "base", run.run_dir / "eval_base", p.base_samples)
        )
    if p.sft:
        model = warm_start(model, tokenizer, run)
        asyncio.run(evaluate_stage(model, tokenizer, run, "sft", run.run_dir / "eval_sft"))
    if p.screen_samples:  # on RL's starting policy
        screen = run.run_dir / SCREEN_DIR
        asyncio.run(
            evaluate_stage(model, tokenizer, run, "screen", screen, p.screen_samples, rl_share(run))
        )
    model = rl_stage(model, tokenizer, run)
    final = run.run_dir / f"eval_rl_step{run.train.steps}"  # a longer rerun evaluates anew
    asyncio.run(evaluate_stage(model, tokenizer, run, "rl", final))
    score_policy(model, final.name.removeprefix("eval_"), run)  # rl_step<N>: per checkpoint
    if p.sft_more:
        more = sft_more_stage(tokenizer, run, rl_share(run))
        asyncio.run(evaluate_stage(more, tokenizer, run, "sft_more", run.run_dir / "eval_sft_more"))
    return write_run_report(run.run_dir)  # every eval in run_dir: a resumed run's whole history
