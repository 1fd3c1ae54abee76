"""Which tasks each stage of `shadowrl train` gets: train (SFT's share, RL's share), dev
(SFT's early stopping) and held-out (every eval).

Each role reads a suite spec, `name` or `name:train|heldout` (a built-in suite, a JSONL
file, or a family part such as `family:heldout-templates@152`): `pipeline.train_suite`,
`dev_suite` and `eval_suite`, each defaulting to the matching split of `tasks.suite`.
A limit takes tasks round-robin over templates (`Task.repo`, `tasks.task.stratified`), so
it never keeps one template's tasks only; the held-out intervals cluster on that field.
"""

from __future__ import annotations

from shadowrl.pipeline.config import PipelineConfig, PipelineError, TrainRun
from shadowrl.tasks import Task, load_suite, stratified


def load_spec(spec: str) -> list[Task]:
    """The tasks of `name[:train|:heldout]` (a bare name: all of them)."""
    name, sep, split = spec.rpartition(":")
    if sep and split in ("train", "heldout"):
        return load_suite(name, split)  # type: ignore[arg-type]
    return load_suite(spec)


def _spec(own: str, run: TrainRun, split: str) -> str:
    return own or f"{run.tasks.suite}:{split}"


def heldout_spec(run: TrainRun) -> str:
    return _spec(run.pipeline.eval_suite, run, "heldout")


def heldout_tasks(run: TrainRun) -> list[Task]:
    """The held-out tasks every eval runs."""
    if not (found := load_spec(heldout_spec(run))):
        raise PipelineError(f"suite {heldout_spec(run)!r} has no tasks to evaluate on")
    return stratified(found, run.pipeline.eval_tasks)


def dev_tasks(run: TrainRun) -> list[Task]:
    """The dev tasks whose demos validate SFT: from `dev_suite`, or (none given) the last
    `sft_dev_tasks` of the train suite."""
    p = run.pipeline
    if not p.sft_dev_tasks:
        return []
    if p.dev_suite:
        return stratified(load_spec(p.dev_suite), p.sft_dev_tasks)
    return load_spec(_spec(p.train_suite, run, "train"))[-p.sft_dev_tasks :]


def train_tasks(run: TrainRun) -> list[Task]:
    """The train tasks SFT and RL share out, without any dev task taken from them."""
    p = run.pipeline
    dev: set[str] = set() if p.dev_suite else {t.instance_id for t in dev_tasks(run)}
    spec = _spec(p.train_suite, run, "train")
    pool = [t for t in load_spec(spec) if t.instance_id not in dev]
    if not pool:
        raise PipelineError(f"suite {spec!r} has no train tasks (besides dev's)")
    return stratified(pool, p.train_tasks)


def split_train_tasks(tasks: list[Task], pipeline: PipelineConfig) -> tuple[list[Task], list[Task]]:
    """(SFT's tasks, RL's tasks) out of the train tasks, as `pipeline` says."""
    sft = (tasks[: pipeline.sft_tasks] if pipeline.sft_tasks else tasks) if pipeline.sft else []
    rl = tasks[len(sft) :] if pipeline.rl_tasks == "unseen" else tasks
    if not rl and pipeline.needs_rl_share:
        raise PipelineError(f"no train task is left for RL: {len(tasks)} tasks, {len(sft)} for SFT")
    return sft, rl


def rl_share(run: TrainRun) -> list[Task]:
    """The train tasks the split gives RL, before any screen."""
    return split_train_tasks(train_tasks(run), run.pipeline)[1]
