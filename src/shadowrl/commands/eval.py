"""`shadowrl eval`: run a pinned benchmark, write eval.json + report.md.

    shadowrl eval --suite easy:heldout --policy runs/rl/ckpt-40 --samples 4 --out runs/eval/ckpt-40
    shadowrl eval --suite easy:heldout --policy tiny --backend ray --ray.address=HOST:PORT

Exits 0, or 2 when some episode crashed (the result is written but incomplete) or on a
usage mistake. Heavy imports happen inside `run` so `shadowrl --help` stays
instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shadowrl.commands.config import Config, episode_spec
from shadowrl.commands.errors import UsageError
from shadowrl.commands.policies import open_evaluator, policy_kind
from shadowrl.episode import EpisodeSpec
from shadowrl.eval import EvalResult
from shadowrl.tasks import Task, load_suite, stratified

EXIT_CRASHED = 2  # like a usage error, a result that cannot be trusted as is


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite",
        help="built-in suite (easy|medium|hard) or a JSONL path, optionally ':train' or "
        "':heldout' for one split (default: all tasks of config tasks.suite)",
    )
    p.add_argument(
        "--policy",
        help="model path | smollm2 | tiny | tiny-moe | gold | noop | http(s)://server/v1 (default: model.path)",
    )
    p.add_argument("--samples", type=int, help="episodes per task (default: eval.samples)")
    p.add_argument("--concurrency", type=int, help="episodes at once (default: eval.concurrency)")
    p.add_argument("--limit", type=int, help="evaluate only the first N tasks")
    p.add_argument("--out", help="output directory (default: <run_dir>/eval)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--save-dir",
        type=Path,
        help="write every graded episode to DIR/<task>-s<sample>.json for `shadowrl replay`",
    )
    p.add_argument(
        "--ablate",
        metavar="FIELD=VALUE",
        help="also run an arm with one config field changed (a list field takes -item or "
        "+item, e.g. agent.tools=-semantic_search) and report the paired difference",
    )
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        help="where the episodes run (the config's `backend`): 'ray' runs them on the Ray "
        "cluster at --ray.address, through an evaluator actor and its environment workers",
    )


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
    return stratified(tasks, limit)  # round-robin over sources, not the first ones


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


def ablated_config(config: Config, spec: str) -> Config:
    """`config` with the one field `--ablate FIELD=VALUE` names changed."""
    import yaml

    from shadowrl.commands.config import _set_path

    key, sep, raw = spec.partition("=")
    if not sep or not key:
        raise UsageError(f"--ablate {spec!r}: expected FIELD=VALUE, e.g. agent.tools=-grep")
    tree = config.model_dump(mode="json")
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise UsageError(f"--ablate: no config field {key!r}")
        node = node[part]
    value: Any = yaml.safe_load(raw)
    if isinstance(node, list) and isinstance(value, str) and value[:1] in ("-", "+"):
        item = value[1:]
        if value[0] == "-" and item not in node:
            raise UsageError(f"--ablate: {item!r} is not in {key} = {node}")
        value = [x for x in node if x != item] if value[0] == "-" else [*node, item]
    _set_path(tree, key, value)
    return Config.model_validate(tree)


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


async def evaluate_arm(
    config: Config,
    tasks: list[Task],
    suite: str,
    policy: str,
    progress: bool,
    save_dir: Path | None = None,
) -> EvalResult:
    """One evaluation of `policy` on `tasks` under `config` (episodes kept in `save_dir`)."""
    from shadowrl.eval import config_pins
    from shadowrl.replay.record import episode_saver

    saving = {}
    if save_dir is not None:  # the episodes stay where they ran: only here, for now
        if config.backend == "ray":
            raise UsageError(
                "--save-dir keeps episodes of the local backend only, not --backend=ray"
            )
        saving = {"keep": episode_saver(save_dir, policy, episode_spec(config))}
    async with open_evaluator(policy, config) as run_eval:
        return await run_eval(
            tasks, settings=config.eval, cache_dir=config.tasks.cache_dir,
            config_pins=config_pins(config), seed=config.seed, suite=suite, progress=progress,
            **saving,
        )  # fmt: skip


def run_ablation(
    args: argparse.Namespace, config: Config, tasks: list[Task], suite: str, policy: str,
    out: Path,
) -> int:  # fmt: skip
    """Both arms on the same tasks and seed, one after the other; the paired difference."""
    import asyncio

    from shadowrl.eval import compare, write_report

    other = ablated_config(config, args.ablate)
    arms = {}
    for name, cfg in (("base", config), ("ablated", other)):
        arms[name] = asyncio.run(evaluate_arm(cfg, tasks, suite, policy, not args.no_progress))
        write_report(arms[name], out / name)
    key, _, value = args.ablate.partition("=")
    ev = config.eval
    r = compare(arms["base"], arms["ablated"], key, value, alpha=ev.alpha,
                resamples=ev.resamples, seed=config.seed)  # fmt: skip
    (out / "ablation.json").write_text(r.model_dump_json(indent=1))
    print(
        f"{key}={value}: pass rate {r.base_rate:.3f} -> {r.ablated_rate:.3f}, "
        f"Δ = {r.delta.mean:+.3f} (paired bootstrap {1 - 2 * ev.alpha:.0%} CI "
        f"[{r.delta.low:+.3f}, {r.delta.high:+.3f}]); sign test: {r.sign.worse} worse, "
        f"{r.sign.better} better over {r.tasks} tasks x {r.samples}"
    )
    print(f"wrote {out / 'ablation.json'} and both arms' eval.json under {out}")
    crashed = arms["base"].errors + arms["ablated"].errors
    return EXIT_CRASHED if crashed else 0


def run(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.eval import write_report

    if args.backend:
        config = config.model_copy(update={"backend": args.backend})
    suite = args.suite or config.tasks.suite
    policy = args.policy or config.model.path
    tasks = load_eval_tasks(suite, args.limit)
    config = effective_config(config, args, suite, policy)

    out = Path(args.out or Path(config.run_dir) / "eval")
    if args.ablate:
        return run_ablation(args, config, tasks, suite, policy, out)
    result = asyncio.run(
        evaluate_arm(config, tasks, suite, policy, not args.no_progress, args.save_dir)
    )
    write_report(result, out)
    print_summary(result)
    print(f"wrote {out / 'eval.json'} and {out / 'report.md'}")
    if result.errors:
        print(f"WARNING: {result.errors} episode(s) crashed; see {out / 'report.md'}")
        return EXIT_CRASHED
    return 0
