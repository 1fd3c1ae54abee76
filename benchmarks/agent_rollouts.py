"""Where an agent rollout's wall time goes, against the floor of its matrix products.

One eval of a policy in the serving harness, as `shadowrl eval` runs it (the eval runner,
its sandboxes, tools and grader, the batched engine), with the engine's prefill calls and
decode steps timed in place (`_phases.py`). The baseline is measured in the same run: the
floor of exactly those calls, the model's matrix products at their shapes timed alone on
this CPU (`_floor.py`). It reports

* wall time of the eval, and the engine's busy time split into prefill and decode, each
  as a multiple of its floor;
* the rest, wall minus engine busy: time the engine sat idle while the harness ran tools
  and grading in sandboxes, rendered prompts and parsed calls (on 2 cores these also
  compete with the engine for the CPU);
* the whole eval as a multiple of its floor: how far agent rollouts here are from what
  the CPU's matrix products alone would allow;
* the CPU time of its child processes (sandboxes, tools, tests, grading): on 2 cores what
  they run while the engine is busy slows the engine's threads too; with `--replay-prefill`
  every prefill call is run again alone at its shapes after the eval, and the eval's
  prefill time over that says what the harness's own work cost the engine.

With `--against KEY=VALUE ...` it measures a candidate setting beside the baseline in the
same run: the two evals alternate (baseline, candidate, then candidate, baseline for
`--rounds 2`, so a drift of the box's speed falls on both), and it prints baseline /
candidate ratios. Sampled episodes differ between the arms (other numerics, other
tokens), so the ratios that compare like with like are the decode and prefill multiples
of each arm's own floor; wall time per generated token is printed beside them.

The tasks are prepared (their environments built) before the clock starts.

    .venv/bin/python benchmarks/agent_rollouts.py [--policy smollm2 | <checkpoint dir>]
        [--suite family:heldout-templates@16] [--samples 1] [--concurrency 16]
        [--set agent.max_turns=4 ...] [--out benchmarks/results/agent_rollouts.json]
        [--against engine.cpu_decode=native ...] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from pathlib import Path
from typing import Any

from _floor import cpu_flags
from _machine import machine
from _phases import Phases

RESULTS = Path(__file__).parent / "results" / "agent_rollouts.json"


def rollout_eval(args: argparse.Namespace, overrides: list[str]) -> dict[str, Any]:
    from shadowrl.commands.config import episode_spec, load_config
    from shadowrl.commands.policies import open_engine
    from shadowrl.episode import SharedPolicy
    from shadowrl.eval import config_pins, evaluate
    from shadowrl.tasks import load_suite, prepare

    config = load_config((), overrides)
    settings = config.eval.model_copy(
        update={"samples": args.samples, "concurrency": args.concurrency}
    )
    tasks = load_suite(args.suite)
    for task in tasks:  # environments built before the clock starts
        prepare(task, config.tasks.cache_dir)
    with open_engine(args.policy, config) as (engine, tokenizer):
        phases = Phases(engine)
        children = _children_cpu_s()
        start = time.perf_counter()
        result = asyncio.run(
            evaluate(
                tasks, SharedPolicy(engine, tokenizer, f"model:{args.policy}"),
                episode_spec(config), settings=settings, cache_dir=config.tasks.cache_dir,
                config_pins=config_pins(config), seed=config.seed, suite=args.suite,
                progress=False,
            )
        )  # fmt: skip
        wall = time.perf_counter() - start
        children = _children_cpu_s() - children
        alone = phases.replay_prefills() if args.replay_prefill else None
    out = summary(result, phases, wall)
    out |= {"harness_cpu_s": children, "harness_cores": children / wall}
    if alone is not None:
        prefill = out["engine"]["prefill_s"]
        out |= {"prefill_alone_s": alone, "prefill_eval_over_alone": prefill / alone}
    return out


def _children_cpu_s() -> float:
    """User and system CPU seconds of this process's waited-for children, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(result: Any, phases: Phases, wall: float) -> dict[str, Any]:
    samples = [s for t in result.tasks for s in t.samples]
    spent, floors = phases.spent(), phases.floors()
    busy = spent["prefill_s"] + spent["decode_s"]
    floor = floors["prefill_floor_s"] + floors["decode_floor_s"]
    return {
        "episodes": len(samples),
        "resolved": sum(s.resolved for s in samples),
        "generated_tokens": sum(s.tokens for s in samples),
        "turns": sum(s.turns for s in samples),
        "wall_s": wall,
        "engine": spent | {"busy_s": busy, "busy_share": busy / wall},
        "idle_s": wall - busy,
        "floor": floors | {"floor_s": floor},
        "wall_multiple_of_floor": wall / floor,
        "busy_multiple_of_floor": busy / floor,
    }


def side_by_side(args: argparse.Namespace, candidate: list[str]) -> dict[str, Any]:
    """Baseline and candidate evals in alternation; per arm the sums over its rounds."""
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "candidate": []}
    for i in range(args.rounds):
        order = ("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")
        for arm in order:
            sets = args.set + candidate if arm == "candidate" else args.set
            runs[arm].append(rollout_eval(args, sets))
            print(f"round {i + 1} {arm}: {headline(runs[arm][-1])}", flush=True)
    arms = {arm: pooled(rs) for arm, rs in runs.items()}
    b, c = arms["baseline"], arms["candidate"]
    ratios = {
        key: b[key] / c[key]
        for key in (
            "decode_multiple",
            "prefill_multiple",
            "wall_ms_per_token",
            "ms_per_decode_step",
        )
    }
    return {"runs": runs, "arms": arms, "baseline_over_candidate": ratios}


def pooled(runs: list[dict[str, Any]]) -> dict[str, float]:
    """One arm's rounds summed, and its engine time as multiples of their summed floors."""
    total = {
        "wall_s": sum(r["wall_s"] for r in runs),
        "generated_tokens": sum(r["generated_tokens"] for r in runs),
        "resolved": sum(r["resolved"] for r in runs),
        "episodes": sum(r["episodes"] for r in runs),
        "decode_s": sum(r["engine"]["decode_s"] for r in runs),
        "decode_steps": sum(r["engine"]["decode_steps"] for r in runs),
        "prefill_s": sum(r["engine"]["prefill_s"] for r in runs),
        "decode_floor_s": sum(r["floor"]["decode_floor_s"] for r in runs),
        "prefill_floor_s": sum(r["floor"]["prefill_floor_s"] for r in runs),
        "harness_cpu_s": sum(r["harness_cpu_s"] for r in runs),
        "decode_floor_with_kv_s": sum(r["floor"]["decode_floor_with_kv_s"] for r in runs),
        "prefill_floor_with_attention_s": sum(
            r["floor"]["prefill_floor_with_attention_s"] for r in runs
        ),
    }
    return total | {
        "decode_multiple": total["decode_s"] / total["decode_floor_s"],
        "prefill_multiple": total["prefill_s"] / total["prefill_floor_s"],
        "decode_multiple_with_kv": total["decode_s"] / total["decode_floor_with_kv_s"],
        "prefill_multiple_with_attention": total["prefill_s"]
        / total["prefill_floor_with_attention_s"],
        "wall_ms_per_token": 1000 * total["wall_s"] / max(total["generated_tokens"], 1),
        "ms_per_decode_step": 1000 * total["decode_s"] / max(total["decode_steps"], 1),
    }


def headline(out: dict[str, Any]) -> str:
    e, f = out["engine"], out["floor"]
    return (
        f"{out['episodes']} episodes, {out['generated_tokens']} tokens in {out['wall_s']:.1f} s: "
        f"engine busy {e['busy_share']:.0%} (prefill {e['prefill_s']:.1f} s = "
        f"{f['prefill_multiple']:.2f}x floor, {f['prefill_multiple_with_attention']:.2f}x with "
        f"attention; decode {e['decode_s']:.1f} s = {f['decode_multiple']:.2f}x floor, "
        f"{f['decode_multiple_with_kv']:.2f}x with the KV read), idle {out['idle_s']:.1f} s; "
        f"child processes {out['harness_cpu_s']:.1f} CPU s ({out['harness_cores']:.2f} cores)"
        + (
            f"; prefill alone {out['prefill_alone_s']:.1f} s (eval/alone "
            f"{out['prefill_eval_over_alone']:.2f})"
            if "prefill_alone_s" in out
            else ""
        )
    )


def flags(pairs: list[str]) -> list[str]:
    return [s if s.startswith("--") else f"--{s}" for s in pairs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="smollm2", help="local weights: a name or a directory")
    ap.add_argument("--suite", default="family:heldout-templates@16")
    ap.add_argument("--samples", type=int, default=1, help="episodes per task")
    ap.add_argument("--concurrency", type=int, default=16, help="episodes at once")
    ap.add_argument("--set", nargs="*", default=[], help="config overrides, key=value")
    ap.add_argument(
        "--against", nargs="*", default=[], help="a candidate's overrides, run beside the baseline"
    )
    ap.add_argument("--rounds", type=int, default=2, help="with --against: evals per arm")
    ap.add_argument(
        "--replay-prefill", action="store_true", help="re-time each prefill call alone after"
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.set = flags(args.set)
    out: dict[str, Any] = {"settings": {k: str(v) for k, v in vars(args).items() if k != "out"}}
    if args.against:
        out |= side_by_side(args, flags(args.against))
    else:
        out |= rollout_eval(args, args.set)
    out["machine"] = machine() | cpu_flags()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    if args.against:
        ratios = " ".join(f"{k}={v:.2f}" for k, v in out["baseline_over_candidate"].items())
        print(f"baseline/candidate {ratios}")
    else:
        print(headline(out))
        print(
            f"wall_multiple_of_floor={out['wall_multiple_of_floor']:.2f} "
            f"busy_multiple_of_floor={out['busy_multiple_of_floor']:.2f}"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
