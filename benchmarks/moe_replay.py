"""Routing replay (R3) on a random Qwen3-MoE: expert flips and the train-vs-rollout
logprob gap, engine in bf16 and trainer in fp32, with and without replay.

The engine samples completions in bf16 and records each position's experts; the fp32
trainer teacher-forces the same tokens letting its own routers choose, then replaying the
recorded experts (`shadowrl.rl.routing_gap`). Two shapes: `tiny-moe` (8 experts, top-2,
2 layers) and a 30B-A3B-like routing geometry cut down (128 experts, top-8, 4 layers),
so the flip rate reflects many near-tied experts.

    python benchmarks/moe_replay.py          # both shapes
    python benchmarks/moe_replay.py --quick  # tiny-moe only

Writes benchmarks/results/moe_replay.json (`--quick`: moe_replay_quick.json); the last
line is `flips=<share> mismatch=<mean |gap|> replayed=<mean |gap| with replay>` for the
last shape.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

from _machine import machine

RESULTS = Path(__file__).parent / "results"
SHAPES: dict[str, dict[str, Any]] = {
    "tiny-moe": {},
    "a3b-routing": dict(
        num_experts=128,
        num_experts_per_tok=8,
        num_hidden_layers=4,
        hidden_size=128,
        moe_intermediate_size=32,
    ),
}


def measure(overrides: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import random_qwen3_moe
    from shadowrl.rl.routing_gap import routing_gap
    from shadowrl.types import SamplingParams

    model = random_qwen3_moe(0, **overrides)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 49152, (n,), generator=g).tolist() for n in args.prompts]
    sampling = SamplingParams(max_new_tokens=args.new, temperature=1.0)
    seeded = [dataclasses.replace(sampling, seed=i) for i in range(len(prompts))]
    out = {}
    for dtype in ("float32", "bfloat16"):
        engine = Engine(copy.deepcopy(model), None, EngineConfig(dtype=dtype, max_batch=8))
        gens = engine.generate_batch(prompts, seeded)
        out[dtype] = dataclasses.asdict(routing_gap(model, prompts, gens))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny-moe only")
    p.add_argument("--prompts", type=int, nargs="+", default=[20, 35, 50, 12, 80, 64, 40, 28])
    p.add_argument("--new", type=int, default=32, help="tokens generated per prompt")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    shapes = ["tiny-moe"] if args.quick else list(SHAPES)
    result: dict[str, Any] = {name: measure(SHAPES[name], args) for name in shapes}
    result["machine"] = machine("transformers")
    out = args.out or RESULTS / ("moe_replay_quick.json" if args.quick else "moe_replay.json")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    last = result[shapes[-1]]["bfloat16"]
    print(f"flips={last['flips']:.4f} mismatch={last['mismatch']:.4f} "
          f"replayed={last['mismatch_replayed']:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
