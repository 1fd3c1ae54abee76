"""Multi-turn agent rollouts with and without the engine's prefix cache, side by side.

An agent episode is a chain of requests whose prompts extend each other (prompt +
completion + tool result). Without a prefix cache every turn re-prefills the whole
conversation; with it, a turn prefills only what was added since the last one, and all
episodes share the KV of the common system prompt: once an episode holding it has
finished, or, with in-batch head sharing (`engine.shared_head_tokens`, the default), as
soon as the first episode's prompt is prefilled. Three arms (`--arms`): `uncached`,
`cached_no_head` (the cache alone) and `cached` (the engine's default); `--rounds N` runs
each N times in alternating order and reports medians. Workload: `--episodes` concurrent
chains of `--turns` turns on SmolLM2, a shared system prompt (the harness's is ~560
tokens), a per-task statement, sampled completions and random "tool results". Every
arm sees identical requests (same seeds), so the outputs are the same; only the prefill
work differs.

    python benchmarks/prefix_cache.py            # SmolLM2, 8 episodes x 4 turns
    python benchmarks/prefix_cache.py --arms cached_no_head cached --rounds 2
    python benchmarks/prefix_cache.py --quick    # tiny random model

Writes benchmarks/results/prefix_cache.json (`--quick`: prefix_cache_quick.json; `--out`
elsewhere); the last line is each arm's median seconds and
`uncached_over_cached=<ratio> cached_no_head_over_cached=<ratio>`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

from _floor import cpu_flags
from _machine import machine

RESULTS = Path(__file__).parent / "results"


def rand(n: int, seed: int) -> list[int]:
    import torch

    return torch.randint(3, 49152, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


async def episode(engine: Any, index: int, args: argparse.Namespace) -> int:
    from shadowrl.types import SamplingParams

    prompt = rand(args.system, 0) + rand(args.task, 1000 + index)
    for turn in range(args.turns):
        sampling = SamplingParams(max_new_tokens=args.new, temperature=1.0, seed=index * 97 + turn)
        out = await engine.generate(prompt, sampling)
        prompt = prompt + list(out.token_ids) + rand(args.tool, 2000 + index * 31 + turn)
    return len(prompt)


# The arms: the engine with no prefix cache, the cache alone (a head is shared only once a
# request holding it has finished), and the cache with in-batch head sharing (the default).
ARMS: dict[str, dict[str, int]] = {
    "uncached": {"prefix_cache_tokens": 0},
    "cached_no_head": {"prefix_cache_tokens": 1 << 20, "shared_head_tokens": 0},
    "cached": {"prefix_cache_tokens": 1 << 20},
}


def run(model: Any, tok: Any, arm: dict[str, int], args: argparse.Namespace) -> tuple[float, int]:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine

    config = EngineConfig(max_batch=args.episodes, **arm)

    async def all_episodes(engine: Engine) -> list[int]:
        return await asyncio.gather(*(episode(engine, i, args) for i in range(args.episodes)))

    with Engine(model, tok, config) as engine:
        start = time.perf_counter()
        asyncio.run(all_episodes(engine))
        return time.perf_counter() - start, engine.prefix.hit_tokens


def alternate(arms: list[str], rounds: int) -> list[str]:
    """Round r runs the arms forward when r is even, backward when odd (A B C, C B A, ...),
    so a drift of the box's speed falls on every arm alike."""
    return [a for r in range(rounds) for a in (arms if r % 2 == 0 else arms[::-1])]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model")
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--system", type=int, default=560, help="shared system prompt tokens")
    p.add_argument("--task", type=int, default=200, help="per-episode task statement tokens")
    p.add_argument("--new", type=int, default=64, help="tokens generated per turn")
    p.add_argument("--tool", type=int, default=150, help="tool-result tokens per turn")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    p.add_argument("--rounds", type=int, default=1, help="runs of each arm, alternating order")
    p.add_argument("--out", type=Path, help="result file (default: results/prefix_cache.json)")
    args = p.parse_args()

    from shadowrl.models import ModelConfig, load_model, tiny_model

    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    times: dict[str, list[float]] = {a: [] for a in args.arms}
    hits: dict[str, int] = {}
    for arm in alternate(args.arms, args.rounds):
        seconds, hits[arm] = run(model, tok, ARMS[arm], args)
        times[arm].append(round(seconds, 3))
        print(f"{arm}: {seconds:.2f} s, {hits[arm]} prompt tokens from the cache", flush=True)
    median = {a: statistics.median(t) for a, t in times.items()}
    ratios = {
        f"{slow}_over_{fast}": round(median[slow] / median[fast], 3)
        for slow, fast in (("uncached", "cached"), ("cached_no_head", "cached"))
        if slow in median and fast in median
    }
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "workload": {k: v for k, v in vars(args).items() if k not in ("quick", "out", "arms")},
        "seconds": times,
        "median_s": median,
        "prefix_hit_tokens": hits,
        "ratios": ratios,
        "machine": machine() | cpu_flags(),
    }
    out = args.out or RESULTS / ("prefix_cache_quick.json" if args.quick else "prefix_cache.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(" ".join(f"{a}_s={m:.2f}" for a, m in median.items()), end=" ")
    print(" ".join(f"{k}={v:.2f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
