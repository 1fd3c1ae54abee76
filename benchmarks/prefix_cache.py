"""Multi-turn agent rollouts with and without the engine's prefix cache, side by side.

An agent episode is a chain of requests whose prompts extend each other (prompt +
completion + tool result). Without a prefix cache every turn re-prefills the whole
conversation; with it, a turn prefills only what was added since the last one, and all
episodes share the KV of the common system prompt. Workload: `--episodes` concurrent
chains of `--turns` turns on SmolLM2, a shared system prompt (the harness's is ~560
tokens), a per-task statement, sampled completions and random "tool results". Both
engines see identical requests (same seeds), so the outputs are the same; only the
prefill work differs.

    python benchmarks/prefix_cache.py            # SmolLM2, 8 episodes x 4 turns
    python benchmarks/prefix_cache.py --quick    # tiny random model

Writes benchmarks/results/prefix_cache.json (`--quick`: prefix_cache_quick.json; `--out`
elsewhere); the last line is
`cached_s=<a> uncached_s=<b> speedup=<b/a>`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

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


def run(model: Any, tok: Any, cache_tokens: int, args: argparse.Namespace) -> tuple[float, int]:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine

    config = EngineConfig(prefix_cache_tokens=cache_tokens, max_batch=args.episodes)

    async def all_episodes(engine: Engine) -> list[int]:
        return await asyncio.gather(*(episode(engine, i, args) for i in range(args.episodes)))

    with Engine(model, tok, config) as engine:
        start = time.perf_counter()
        asyncio.run(all_episodes(engine))
        return time.perf_counter() - start, engine.prefix.hit_tokens


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model")
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--system", type=int, default=560, help="shared system prompt tokens")
    p.add_argument("--task", type=int, default=200, help="per-episode task statement tokens")
    p.add_argument("--new", type=int, default=64, help="tokens generated per turn")
    p.add_argument("--tool", type=int, default=150, help="tool-result tokens per turn")
    p.add_argument("--out", type=Path, help="result file (default: results/prefix_cache.json)")
    args = p.parse_args()

    from shadowrl.models import ModelConfig, load_model, tiny_model

    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    cached_s, hits = run(model, tok, 1 << 20, args)
    uncached_s, _ = run(model, tok, 0, args)
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "workload": {k: v for k, v in vars(args).items() if k not in ("quick", "out")},
        "cached_s": round(cached_s, 3),
        "uncached_s": round(uncached_s, 3),
        "prefix_hit_tokens": hits,
        "speedup": round(uncached_s / cached_s, 3),
        "machine": machine(),
    }
    out = args.out or RESULTS / ("prefix_cache_quick.json" if args.quick else "prefix_cache.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(
        f"cached_s={cached_s:.2f} uncached_s={uncached_s:.2f} speedup={uncached_s / cached_s:.2f}"
    )


if __name__ == "__main__":
    main()
