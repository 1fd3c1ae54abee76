"""Flat rollout groups vs tree rollouts at the same generated-token budget, side by side.

Both modes roll out the same tasks, in the same order, with the same policy, until each
has generated `--budget` tokens: flat groups of `roots x branches` episodes from the
prepared root, or trees of `roots` episodes each forked into `branches` continuations
at the branch rule (rl/tree.py; the shared prefix is generated once per subtree). It
reports resolved episodes and distinct resolved tasks per 1,000 generated tokens, and
the prompt tokens the engine's prefix cache served instead of prefilling.

    python benchmarks/branching.py --model runs/sft/final    # SmolLM2 after SFT
    python benchmarks/branching.py --quick                   # tiny random model (smoke)

Writes benchmarks/results/branching.json (`--quick`: branching_quick.json; `--out`
elsewhere); the last line is `flat=<resolved/1k> tree=<resolved/1k> ratio=<tree/flat>`.
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
    """Tokens actually generated: a tree's shared prefix counts once per subtree."""
    total = sum(t.num_generated for t in group.trajectories)
    for sub in getattr(group, "subtrees", ()):
        if sub.split is not None:
            seg_i, pos = sub.split
            segs = sub.branches[0].segments
            prefix = sum(s.num_generated for s in segs[:seg_i]) + sum(segs[seg_i].loss_mask[:pos])
            total -= prefix * (len(sub.branches) - 1)
    return total


async def one_mode(
    mode: str, engine: Any, tok: Any, tasks: list[Any], args: argparse.Namespace
) -> dict[str, Any]:
    from shadowrl.rl.config import BranchingConfig
    from shadowrl.rl.rollout import rollout_group
    from shadowrl.rl.tree import rollout_tree

    cfg = BranchingConfig(
        enabled=True, roots=args.roots, branches=args.branches, rule=args.rule, turn=args.turn
    )
    tokens = episodes = resolved = failed = 0
    solved: set[str] = set()
    hits0 = engine.prefix.hit_tokens
    i = 0
    while tokens < args.budget:
        task, prepared = tasks[i % len(tasks)]
        i += 1
        if mode == "flat":
            group = await rollout_group(
                engine,
                task,
                prepared,
                group_size=args.roots * args.branches,
                tokenizer=tok,
                spec=args.spec,
            )
        else:
            group = await rollout_tree(
                engine, task, prepared, branching=cfg, tokenizer=tok, spec=args.spec
            )
        tokens += generated(group)
        failed += not group.ok  # a group whose episodes crashed (a sandbox, a worker)
        episodes += len(group.trajectories)
        wins = [t for t in group.trajectories if t.info.get("resolved")]
        resolved += len(wins)
        solved |= {t.task_id for t in wins}
        print(
            f"{mode}: group {i} ({task.instance_id}) {tokens}/{args.budget} tokens, {resolved} resolved",
            flush=True,
        )
    per_k = 1000 / max(tokens, 1)
    return {
        "mode": mode, "groups": i, "episodes": episodes, "generated_tokens": tokens,
        "resolved": resolved, "distinct_resolved_tasks": len(solved),
        "resolved_per_1k_tokens": round(resolved * per_k, 4),
        "distinct_tasks_per_1k_tokens": round(len(solved) * per_k, 4),
        "prefix_hit_tokens": engine.prefix.hit_tokens - hits0, "failed_groups": failed,
    }  # fmt: skip


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
    p.add_argument("--rule", choices=["first_edit", "turn"], default="first_edit")
    p.add_argument("--turn", type=int, default=2, help="branch point of --rule turn")
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
    runs = []
    # the shared task cache: built environments are reused across runs and commands
    tasks = [
        (t, prepare(t, config.tasks.cache_dir)) for t in load_suite("easy", "train")[: args.tasks]
    ]
    for mode in ("flat", "tree"):  # a fresh engine each: no prefix shared across modes
        with Engine(
            model, tok, EngineConfig(max_batch=args.roots * args.branches), seed=0
        ) as engine:
            runs.append(asyncio.run(one_mode(mode, engine, tok, tasks, args)))
    flat, tree = (r["resolved_per_1k_tokens"] for r in runs)
    result = {
        "model": args.model, "settings": {k: v for k, v in vars(args).items() if k not in ("out", "spec", "quick")},
        "runs": runs, "ratio_resolved_per_1k": round(tree / flat, 3) if flat else None, "machine": machine(),
    }  # fmt: skip
    out = args.out or RESULTS / ("branching_quick.json" if args.quick else "branching.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"flat={flat} tree={tree} ratio={result['ratio_resolved_per_1k']}")


if __name__ == "__main__":
    main()
