"""Low-precision rollouts vs fp32 rollouts: throughput side by side, and the mismatch the
trainer sees.

One run, one model (SmolLM2-135M fp32 by default): the same rollout batch (code prompts
of the `easy` suite's held-out split, G seeded samples each at temperature 1) is generated
by an fp32 engine, an `engine.weights: int8` engine, an fp32 engine over a bf16 KV cache
(`engine.kv_dtype: bfloat16`) and a bf16 engine (`engine.dtype: bfloat16`) on PyTorch's
layers (`bf16`) and on the C layers (`bf16_layers`, `engine.cpu_decode: native`: fp32
maths over the bf16 weights), each once warm, and timed;
each engine's decode steps are compared with the floor of its own products at the full
batch's rows (`_floor.py`). Then one `Trainer.step` (fp32, the trainer unchanged) on
each side's rollouts reports what the trainer computes: the per-token train-vs-rollout
log-ratio (mean, max |.|), the importance ratio's extremes and the fraction of tokens
whose ratio its truncation clips (> is_clip). fp32 rollouts are the baseline (log-ratio
~0: the engine records the trainer's own distribution).

    python benchmarks/int8_rollouts.py                 # SmolLM2 on CPU, ~3 min on 2 cores
    python benchmarks/int8_rollouts.py --quick         # tiny random model, smoke

Writes benchmarks/results/int8_rollouts.json; the last line is
`int8_over_fp32_tok_s=.. log_ratio_mean=.. log_ratio_max_abs=.. clip_frac=..`, then the
same for each other side (`bf16_kv_over_fp32_tok_s=..`, ...).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path
from typing import Any

import torch

from _floor import Floor, cpu_flags
from _machine import machine

RESULTS = Path(__file__).parent / "results"
SIDES: dict[str, dict[str, str]] = {  # each side's engine settings; dense is the baseline
    "dense": {},
    "int8": {"weights": "int8"},
    "bf16_kv": {"kv_dtype": "bfloat16"},
    "bf16": {"dtype": "bfloat16"},
    "bf16_layers": {"dtype": "bfloat16", "cpu_decode": "native"},
}


def rollouts(
    model: Any, tok: Any, settings: dict[str, str], prompts: list[list[int]], args: Any
) -> dict:
    """Generate G samples per prompt with one engine; time it and its full-batch steps."""
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.types import SamplingParams

    rows = len(prompts) * args.group
    config = EngineConfig(max_batch=rows, prefix_cache_tokens=0, **settings)
    engine = Engine(copy.deepcopy(model), tok, config, seed=0)
    engine.default_stop_ids = frozenset()  # every row generates its full budget
    batch = [p for p in prompts for _ in range(args.group)]
    params = [SamplingParams(max_new_tokens=args.new, temperature=1.0, seed=i) for i in range(rows)]
    steps: list[float] = []
    decode = engine.stepper.decode

    def timed_decode(requests: Any, span: int) -> Any:
        start = time.perf_counter()
        out = decode(requests, span)
        if len(requests) == rows:
            steps.append(time.perf_counter() - start)
        return out

    with engine:
        engine.generate_batch(batch[:2], params[:2])  # warm-up
        engine.stepper.decode = timed_decode  # type: ignore[method-assign]
        start = time.perf_counter()
        gens = engine.generate_batch(batch, params)
        seconds = time.perf_counter() - start
    tokens = sum(len(g.token_ids) for g in gens)
    step_ms = 1e3 * sum(steps) / len(steps)
    floor_ms = Floor(engine.model).ms(rows)
    return {
        "precision": engine.precision.name,
        "kv_dtype": str(engine.cache.dtype).removeprefix("torch."),
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 2),
        "full_batch_step_ms": round(step_ms, 2),
        "full_batch_floor_ms": round(floor_ms, 2),
        "full_batch_multiple_of_own_floor": round(step_ms / floor_ms, 3),
        "gens": gens,
        "batch": batch,
    }


def trainer_view(model: Any, side: dict, group: int) -> dict[str, float]:
    """One fp32 `Trainer.step` on a side's rollouts: what it logs about the mismatch."""
    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.types import Segment, Trajectory

    trajs = []
    for i, (prompt, gen) in enumerate(zip(side["batch"], side["gens"], strict=True)):
        seg = Segment(
            token_ids=tuple(prompt) + gen.token_ids,
            loss_mask=(False,) * len(prompt) + (True,) * len(gen.token_ids),
            logprobs=(0.0,) * len(prompt) + gen.logprobs,
            versions=(-1,) * len(prompt) + gen.versions,
        )
        trajs.append(Trajectory("t", (), (), (seg,), "submitted", reward=float(i % 2)))
    groups = [trajs[i : i + group] for i in range(0, len(trajs), group)]
    trainer = Trainer(
        copy.deepcopy(model), TrainConfig.model_validate({"batch": {"microbatch_tokens": 8192}})
    )
    metrics = trainer.train_groups(groups)
    keys = ("rollout_log_ratio_mean", "rollout_log_ratio_max_abs", "ratio_min", "ratio_max",
            "clip_frac", "tokens")  # fmt: skip
    return {k: round(metrics[k], 5) for k in keys}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny random model, small batch")
    p.add_argument("--prompts", type=int, default=8, help="held-out code prompts")
    p.add_argument("--group", type=int, default=4, help="samples per prompt (rows = product)")
    p.add_argument("--new", type=int, default=96, help="tokens generated per row")
    p.add_argument("--out", type=Path, help="result file (default: results/int8_rollouts.json)")
    args = p.parse_args()
    if args.quick:
        args.prompts, args.group, args.new = 2, 2, 8

    from shadowrl.models import ModelConfig, load_model, tiny_model
    from shadowrl.rl.mtp_distill import suite_prompts

    torch.manual_seed(0)
    model, tok = tiny_model(seed=0) if args.quick else load_model(ModelConfig())
    prompts = suite_prompts(tok, "easy", args.prompts, split="heldout")
    sides = {w: rollouts(model, tok, settings, prompts, args) for w, settings in SIDES.items()}
    views = {w: trainer_view(model, side, args.group) for w, side in sides.items()}
    ratios = {w: s["tokens_per_s"] / sides["dense"]["tokens_per_s"] for w, s in sides.items()}
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "workload": {
            "prompts": args.prompts,
            "group": args.group,
            "new": args.new,
            "rows": args.prompts * args.group,
            "prompt_tokens": [len(x) for x in prompts],
        },
        "rollouts": {
            w: {k: v for k, v in s.items() if k not in ("gens", "batch")} for w, s in sides.items()
        },
        **{f"{w}_over_fp32_tokens_per_s": round(r, 3) for w, r in ratios.items() if w != "dense"},
        "trainer_on_rollouts": views,
        "machine": machine() | cpu_flags(),
    }
    out = args.out or RESULTS / "int8_rollouts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    for side in [w for w in SIDES if w != "dense"]:
        v = views[side]
        print(
            f"{side}_over_fp32_tok_s={ratios[side]:.2f} "
            f"log_ratio_mean={v['rollout_log_ratio_mean']:.4f} "
            f"log_ratio_max_abs={v['rollout_log_ratio_max_abs']:.3f} clip_frac={v['clip_frac']:.4f}"
        )


if __name__ == "__main__":
    main()
