"""`shadowrl eval`: run a pinned benchmark, write eval.json + report.md.

    shadowrl eval --suite easy:heldout --policy runs/rl/ckpt-40 --samples 4 --out runs/eval/ckpt-40

Exits 0, or 2 when some episode crashed (the result is written but incomplete) or on a
usage mistake. Heavy imports happen inside `run` so `shadowrl --help` stays
instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError
from shadowrl.commands.policies import open_policy, policy_kind
from shadowrl.episode import EpisodeSpec
from shadowrl.eval.result import EvalResult
from shadowrl.tasks.task import Task, load_suite

EXIT_CRASHED = 2  # like a usage error, a result that cannot be trusted as is


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite",
        help="built-in suite (easy|medium|hard) or a JSONL path, optionally ':train' or "
        "':heldout' for one split (default: all tasks of config tasks.suite)",
    )
    p.add_argument(
        "--policy",
        help="model path | smollm2 | tiny | gold | noop | http(s)://server/v1 (default: model.path)",
    )
    p.add_argument("--samples", type=int, help="episodes per task (default: eval.samples)")
    p.add_argument("--concurrency", type=int, help="episodes at once (default: eval.concurrency)")
    p.add_argument("--limit", type=int, help="evaluate only the first N tasks")
    p.add_argument("--out", help="output directory (default: <run_dir>/eval)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def parse_suite(spec: str) -> tuple[str, str | None]:
    """'easy:heldout' -> ('easy', 'heldout'); a path or bare name selects all splits."""
    name, sep, split = spec.rpartition(":")
    if sep and split in ("train", "heldout"):
        return name, split
    return spec, None


def load_eval_tasks(spec: str, limit: int | None = None) -> list[Task]:
    """The tasks `--suite` names; an unknown suite or an empty split is a UsageError."""
    name, split = parse_suite(spec)
    tasks = load_suite(name, split)  # type: ignore[arg-type]  # split checked by parse_suite
    if not tasks:
        raise UsageError(f"suite {spec!r} has no tasks")
    return tasks[:limit] if limit else tasks


def effective_config(config: Config, args: argparse.Namespace, suite: str, policy: str) -> Config:
    """The config actually used, so its digest (a pin) records what was run."""
    name, split = parse_suite(suite)
    ev = config.eval.model_copy(
        update={
            "samples": args.samples or config.eval.samples,
            "concurrency": args.concurrency or config.eval.concurrency,
        }
    )
    tasks = config.tasks.model_copy(update={"suite": name, "split": split or "all"})
    update = {"eval": ev, "tasks": tasks}
    kind = policy_kind(policy)
    if kind == "local":
        update["model"] = config.model.model_copy(update={"path": policy})
    if kind == "reference":  # gold types whole files in one turn: give it room (pinned)
        update["agent"] = EpisodeSpec(agent=config.agent).for_reference().agent
    return config.model_copy(update=update)


def print_summary(r: EvalResult) -> None:
    """The pass rates of `r` per tier, as a table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{r.pins.policy} on {r.pins.suite} ({r.samples} samples/task)")
    for col in ("tier", "tasks", "pass@1 [95% CI]", f"pass@{r.samples} [95% CI]", "crashed"):
        table.add_column(col)
    for tier, s in {"all": r.overall, **r.by_tier}.items():
        k = s.pass_k[max(s.pass_k)]
        table.add_row(
            tier,
            str(s.tasks),
            f"{s.pass1.value:.1%} [{s.pass1.low:.1%}, {s.pass1.high:.1%}]",
            f"{k.value:.1%} [{k.low:.1%}, {k.high:.1%}]",
            str(s.errors),
        )
    Console().print(table)


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.eval.pins import config_pins
    from shadowrl.eval.report import write_report
    from shadowrl.eval.runner import evaluate

    suite = args.suite or config.tasks.suite
    policy = args.policy or config.model.path
    tasks = load_eval_tasks(suite, args.limit)
    config = effective_config(config, args, suite, policy)

    async def evaluate_policy() -> EvalResult:
        async with open_policy(policy, config) as factory:
            return await evaluate(
                tasks,
                factory,
                episode_spec(config),
                settings=config.eval,
                cache_dir=config.tasks.cache_dir,
                config_pins=config_pins(config),
                seed=config.seed,
                suite=suite,
                progress=not args.no_progress,
            )

    result = asyncio.run(evaluate_policy())
    out = Path(args.out or Path(config.run_dir) / "eval")
    write_report(result, out)
    print_summary(result)
    print(f"wrote {out / 'eval.json'} and {out / 'report.md'}")
    if result.errors:
        print(f"WARNING: {result.errors} episode(s) crashed; see {out / 'report.md'}")
        return EXIT_CRASHED
    return 0
