"""`shadowrl eval` (run a pinned benchmark) and `shadowrl gate` (promote or reject).

    shadowrl eval --suite easy:heldout --policy runs/rl/ckpt-40 --samples 4 --out runs/eval/ckpt-40
    shadowrl gate --candidate runs/eval/ckpt-40/eval.json --incumbent runs/eval/prod/eval.json

`eval` exits 0, or 2 when some episode crashed (the result is written but incomplete);
`gate` exits 0 to promote, 1 to reject and 2 when the results are not comparable.
Heavy imports happen inside the commands so `shadowrl --help` stays instant.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowrl.config import Config
    from shadowrl.eval.result import EvalResult
    from shadowrl.tasks.task import Task


# Agent budgets the scripted reference policies need; prompt and tools stay as configured.
REFERENCE_BUDGETS = {"max_turns", "max_new_tokens", "max_context_tokens", "max_episode_tokens"}


def add_eval_args(p: argparse.ArgumentParser) -> None:
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


def add_gate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--candidate", required=True, help="eval.json of the candidate (or its directory)"
    )
    p.add_argument(
        "--incumbent", required=True, help="eval.json of the deployed policy (or its directory)"
    )
    p.add_argument("--margin", type=float, help="tolerated pass-rate drop (default: eval.margin)")
    p.add_argument("--alpha", type=float, help="significance level (default: eval.alpha)")
    p.add_argument("--test", choices=["bootstrap", "sign"], help="paired test (default: eval.test)")


def parse_suite(spec: str) -> tuple[str, str | None]:
    """'easy:heldout' -> ('easy', 'heldout'); a path or bare name selects all splits."""
    name, sep, split = spec.rpartition(":")
    if sep and split in ("train", "heldout"):
        return name, split
    return spec, None


def load_eval_tasks(spec: str, limit: int | None = None) -> list[Task]:
    from shadowrl.tasks.task import load_suite

    name, split = parse_suite(spec)
    tasks = load_suite(name, split)  # type: ignore[arg-type]  # split validated by parse_suite
    if not tasks:
        raise SystemExit(f"suite {spec!r} has no tasks")
    return tasks[:limit] if limit else tasks


def effective_config(config: Config, args: argparse.Namespace, suite: str, policy: str) -> Config:
    """The config actually used, so its digest (a pin) records what was run."""
    from shadowrl.eval.policies import policy_kind

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
        from shadowrl.tasks.reference import reference_agent_config

        budgets = reference_agent_config().model_dump(include=REFERENCE_BUDGETS)
        update["agent"] = config.agent.model_copy(update=budgets)
    return config.model_copy(update=update)


def print_summary(r: EvalResult) -> None:
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


def cmd_eval(args: argparse.Namespace, config: Config) -> int:
    import asyncio

    from shadowrl.eval.policies import open_policy
    from shadowrl.eval.report import write_report
    from shadowrl.eval.runner import evaluate

    suite = args.suite or config.tasks.suite
    policy = args.policy or config.model.path
    tasks = load_eval_tasks(suite, args.limit)
    config = effective_config(config, args, suite, policy)

    async def run() -> EvalResult:
        async with open_policy(policy, config) as factory:
            return await evaluate(
                tasks,
                factory,
                samples=config.eval.samples,
                concurrency=config.eval.concurrency,
                config=config,
                suite=suite,
                progress=not args.no_progress,
            )

    result = asyncio.run(run())
    out = Path(args.out or Path(config.run_dir) / "eval")
    write_report(result, out)
    print_summary(result)
    print(f"wrote {out / 'eval.json'} and {out / 'report.md'}")
    if result.errors:
        print(f"WARNING: {result.errors} episode(s) crashed; see {out / 'report.md'}")
        return 2
    return 0


def cmd_gate(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.eval.gate import PinMismatch, gate
    from shadowrl.eval.result import EvalResult

    try:
        candidate, incumbent = EvalResult.load(args.candidate), EvalResult.load(args.incumbent)
    except FileNotFoundError as e:
        raise SystemExit(f"shadowrl gate: {e}") from None
    try:
        d = gate(
            candidate,
            incumbent,
            margin=config.eval.margin if args.margin is None else args.margin,
            alpha=args.alpha or config.eval.alpha,
            test=args.test or config.eval.test,
            resamples=config.eval.resamples,
            seed=config.seed,
        )
    except PinMismatch as e:
        print(f"refused: {e}")
        return 2
    print(f"candidate {candidate.pins.policy}: mean pass rate {d.candidate_rate:.1%}")
    print(f"incumbent {incumbent.pins.policy}: mean pass rate {d.incumbent_rate:.1%}")
    print(
        f"Δ = {d.delta.mean:+.3f} (paired bootstrap {1 - 2 * d.alpha:.0%} CI "
        f"[{d.delta.low:+.3f}, {d.delta.high:+.3f}]); sign test: {d.sign.worse} worse, "
        f"{d.sign.better} better, p(worse) = {d.sign.p_worse:.3g}"
    )
    print(d.reason)
    return 0 if d.promote else 1
