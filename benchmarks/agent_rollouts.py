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
  the CPU's matrix products alone would allow.

The tasks are prepared (their environments built) before the clock starts.

    .venv/bin/python benchmarks/agent_rollouts.py [--policy smollm2 | <checkpoint dir>]
        [--suite family:heldout-templates@16] [--samples 1] [--concurrency 16]
        [--set agent.max_turns=4 ...] [--out benchmarks/results/agent_rollouts.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from _floor import cpu_flags
from _machine import machine
from _phases import Phases

RESULTS = Path(__file__).parent / "results" / "agent_rollouts.json"


def rollout_eval(args: argparse.Namespace) -> dict[str, Any]:
    from shadowrl.commands.config import episode_spec, load_config
    from shadowrl.commands.policies import open_engine
    from shadowrl.episode import SharedPolicy
    from shadowrl.eval import config_pins, evaluate
    from shadowrl.tasks import load_suite, prepare

    config = load_config((), args.set)
    settings = config.eval.model_copy(
        update={"samples": args.samples, "concurrency": args.concurrency}
    )
    tasks = load_suite(args.suite)
    for task in tasks:  # environments built before the clock starts
        prepare(task, config.tasks.cache_dir)
    with open_engine(args.policy, config) as (engine, tokenizer):
        phases = Phases(engine)
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
    return summary(result, phases, wall)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="smollm2", help="local weights: a name or a directory")
    ap.add_argument("--suite", default="family:heldout-templates@16")
    ap.add_argument("--samples", type=int, default=1, help="episodes per task")
    ap.add_argument("--concurrency", type=int, default=16, help="episodes at once")
    ap.add_argument("--set", nargs="*", default=[], help="config overrides, key=value")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.set = [s if s.startswith("--") else f"--{s}" for s in args.set]
    out = {"settings": {k: str(v) for k, v in vars(args).items() if k != "out"}}
    out |= rollout_eval(args) | {"machine": machine() | cpu_flags()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    e, f = out["engine"], out["floor"]
    print(
        f"{out['episodes']} episodes, {out['generated_tokens']} tokens in {out['wall_s']:.1f} s: "
        f"engine busy {e['busy_share']:.0%} (prefill {e['prefill_s']:.1f} s = "
        f"{f['prefill_multiple']:.2f}x floor, decode {e['decode_s']:.1f} s = "
        f"{f['decode_multiple']:.2f}x floor), idle {out['idle_s']:.1f} s"
    )
    print(
        f"wall_multiple_of_floor={out['wall_multiple_of_floor']:.2f} "
        f"busy_multiple_of_floor={out['busy_multiple_of_floor']:.2f}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
