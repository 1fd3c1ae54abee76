"""Flat rollout groups vs tree rollouts at the same generated-token budget, side by side.

Both modes roll out the same tasks, in the same order, with the same policy, until each
has generated `--budget` tokens: flat groups of `roots x branches` episodes from the
prepared root, or trees of `roots` episodes each forked into `branches` continuations
at the branch rule (rl/tree.py; the shared prefix is generated once per subtree). They
go in rounds (each round, every mode below its budget rolls out one group of the same
task), and the result file is rewritten after every round (`"partial": true` until both
modes reach the budget), so a run cut short on a loaded box still holds paired rounds.
It reports resolved episodes and distinct resolved tasks per 1,000 generated tokens,
the ratio's 95 % bootstrap interval over each mode's groups, the branch points taken,
and the prompt tokens the engine's prefix cache served instead of prefilling.

    python benchmarks/branching.py --model runs/sft/final    # SmolLM2 after SFT
    python benchmarks/branching.py --quick                   # tiny random model (smoke)

Writes benchmarks/results/branching.json (`--quick`: branching_quick.json; `--out`
elsewhere); the last line is
`flat=<resolved/1k> tree=<resolved/1k> ratio=<tree/flat> ci95=[<low>, <high>]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from _machine import machine

RESULTS = Path(__file__).parent / "results"


def generated(group: Any) -> int:
    """Tokens actually generated: a tree's shared prefixes count once (nested ones too)."""
    subtrees = getattr(group, "subtrees", ())
    if subtrees:
        return sum(sub.generated for sub in subtrees)
    return sum(t.num_generated for t in group.trajectories)


def branch_points(node: Any) -> int:
    """Splits in a tree group (or a subtree), nested ones included; 0 for a flat group."""
    subs = getattr(node, "subtrees", None)
    if subs is not None:
        return sum(branch_points(s) for s in subs)
    if not hasattr(node, "split"):
        return 0  # a trajectory
    return (node.split is not None) + sum(branch_points(b) for b in node.branches)


def ratio_interval(
    flat: list[tuple[int, int]], tree: list[tuple[int, int]], resamples: int = 4000
) -> list[float] | None:
    """95 % percentile-bootstrap interval of tree/flat resolved-per-token, drawing each
    mode's groups (tokens, resolved) with replacement (seeded)."""
    import numpy as np

    if not any(r for _, r in flat) or not tree:
        return None  # flat resolved nothing: no ratio
    rng, rates = np.random.default_rng(0), []
    for arm in (np.array(flat, float), np.array(tree, float)):
        draw = arm[rng.integers(0, len(arm), size=(resamples, len(arm)))]
        rates.append(draw[..., 1].sum(1) / np.maximum(draw[..., 0].sum(1), 1))
    ratio = rates[1] / np.where(rates[0] > 0, rates[0], np.nan)  # a draw flat solved none of
    low, high = np.nanquantile(ratio, [0.025, 0.975])
    return [round(float(low), 3), round(float(high), 3)]


class Arm:
    """One mode's running totals; `play` rolls out one more group (flat) or tree."""

    def __init__(self, mode: str, engine: Any, tok: Any, args: argparse.Namespace):
        from shadowrl.rl.config import BranchingConfig

        self.mode, self.engine, self.tok, self.args = mode, engine, tok, args
        self.cfg = BranchingConfig(
            enabled=True, roots=args.roots, branches=args.branches, rule=args.rule,
            turn=args.turn, entropy_threshold=args.entropy_threshold,
            max_branch_points=args.max_branch_points,
        )  # fmt: skip
        self.tokens = self.episodes = self.resolved = self.failed = self.groups = 0
        self.splits = 0
        self.per_group: list[tuple[int, int]] = []  # (generated tokens, resolved)
        self.solved: set[str] = set()
        self.hits0 = engine.prefix.hit_tokens

    @property
    def done(self) -> bool:
        return self.tokens >= self.args.budget

    async def play(self, task: Any, prepared: Any) -> None:
        from shadowrl.rl.rollout import rollout_group
        from shadowrl.rl.tree import rollout_tree

        a = self.args
        if self.mode == "flat":
            group = await rollout_group(
                self.engine, task, prepared, group_size=a.roots * a.branches,
                tokenizer=self.tok, spec=a.spec,
            )  # fmt: skip
        else:
            group = await rollout_tree(
                self.engine, task, prepared, branching=self.cfg, tokenizer=self.tok, spec=a.spec
            )
        self.groups += 1
        tokens, before = generated(group), self.resolved
        self.tokens += tokens
        self.splits += branch_points(group)
        self.failed += not group.ok  # a group whose episodes crashed (a sandbox, a worker)
        self.episodes += len(group.trajectories)
        wins = [t for t in group.trajectories if t.info.get("resolved")]
        self.resolved += len(wins)
        self.solved |= {t.task_id for t in wins}
        self.per_group.append((tokens, self.resolved - before))
        ends = ",".join(sorted({t.end for t in group.trajectories}))
        print(
            f"{self.mode}: group {self.groups} ({task.instance_id}) {self.tokens}/{a.budget} "
            f"tokens, {self.resolved} resolved, ends {ends}",
            flush=True,
        )

    def result(self) -> dict[str, Any]:
        per_k = 1000 / max(self.tokens, 1)
        return {
            "mode": self.mode, "groups": self.groups, "episodes": self.episodes,
            "generated_tokens": self.tokens, "resolved": self.resolved,
            "distinct_resolved_tasks": len(self.solved),
            "resolved_per_1k_tokens": round(self.resolved * per_k, 4),
            "distinct_tasks_per_1k_tokens": round(len(self.solved) * per_k, 4),
            "prefix_hit_tokens": self.engine.prefix.hit_tokens - self.hits0,
            "failed_groups": self.failed, "branch_points": self.splits,
            "per_group": self.per_group,
        }  # fmt: skip


async def rounds(arms: list[Arm], tasks: list[Any], write: Any) -> int:
    """Round-robin over the tasks: each round, every arm below its budget rolls out one
    group of the same task, then the result file is rewritten (marked partial until every
    arm is done), so a run stopped early still holds paired, complete rounds."""
    i = 0
    while not all(arm.done for arm in arms):
        task, prepared = tasks[i % len(tasks)]
        i += 1
        for arm in arms:
            if not arm.done:
                await arm.play(task, prepared)
        write(partial=not all(arm.done for arm in arms), rounds=i)
    return i


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model, 2 tasks, small budget")
    p.add_argument(
        "--model", default="smollm2", help="policy weights (SmolLM2 after SFT: its run dir)"
    )
    p.add_argument("--tasks", type=int, default=8, help="easy:train tasks, taken in order")
    p.add_argument("--budget", type=int, default=20000, help="generated tokens per mode")
    p.add_argument("--roots", type=int, default=2, help="G1")
    p.add_argument("--branches", type=int, default=3, help="G2")
    p.add_argument("--rule", choices=["first_edit", "turn", "entropy"], default="first_edit")
    p.add_argument("--turn", type=int, default=2, help="branch point of --rule turn")
    p.add_argument(
        "--entropy-threshold", type=float, default=0.05,
        help="--rule entropy: mean entropy (nats) over the first 16 tokens after a tool result",
    )  # fmt: skip
    p.add_argument("--max-branch-points", type=int, default=1, help="--rule entropy: per root")
    p.add_argument("--max-turns", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument(
        "--episode-timeout",
        type=float,
        default=600.0,
        help="agent.episode_timeout_s: raise it on a loaded box, or slow episodes time out "
        "unresolved and the comparison measures the load",
    )
    p.add_argument("--out", type=Path, help="result file (default: results/branching.json)")
    args = p.parse_args()
    if args.quick:
        args.model, args.tasks, args.budget, args.max_turns, args.max_new_tokens = (
            "tiny",
            2,
            200,
            2,
            24,
        )
        args.rule, args.turn = "turn", 1  # a random model never edits

    from shadowrl.commands.config import episode_spec, load_config
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model
    from shadowrl.tasks import load_suite, prepare

    config = load_config(
        overrides=[
            f"--agent.max_turns={args.max_turns}",
            f"--agent.max_new_tokens={args.max_new_tokens}",
            f"--agent.episode_timeout_s={args.episode_timeout}",
        ]
    )
    args.spec = episode_spec(config)
    model, tok = load_model(ModelConfig(path=args.model))
    # the shared task cache: built environments are reused across runs and commands
    tasks = [
        (t, prepare(t, config.tasks.cache_dir)) for t in load_suite("easy", "train")[: args.tasks]
    ]
    out = args.out or RESULTS / ("branching_quick.json" if args.quick else "branching.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "spec", "quick")}

    def write(partial: bool, rounds: int) -> dict[str, Any]:
        runs = [arm.result() for arm in arms]
        flat, tree = (r["resolved_per_1k_tokens"] for r in runs)
        result = {
            "model": args.model, "settings": settings, "partial": partial, "rounds": rounds,
            "runs": runs, "ratio_resolved_per_1k": round(tree / flat, 3) if flat else None,
            "ratio_interval_95": ratio_interval(arms[0].per_group, arms[1].per_group),
            "machine": machine(),
        }  # fmt: skip
        out.write_text(json.dumps(result, indent=2) + "\n")
        return result

    # an engine per mode: no prefix is shared across modes
    cfg = EngineConfig(max_batch=args.roots * args.branches)
    with (
        Engine(model, tok, cfg, seed=0) as flat_engine,
        Engine(model, tok, cfg, seed=0) as tree_engine,
    ):
        arms = [Arm("flat", flat_engine, tok, args), Arm("tree", tree_engine, tok, args)]
        result = write(partial=False, rounds=asyncio.run(rounds(arms, tasks, write)))
    print(json.dumps(result, indent=2))
    flat_k, tree_k = (r["resolved_per_1k_tokens"] for r in result["runs"])
    interval = result["ratio_interval_95"]
    print(f"flat={flat_k} tree={tree_k} ratio={result['ratio_resolved_per_1k']} ci95={interval}")


if __name__ == "__main__":
    main()
