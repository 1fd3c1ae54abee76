"""One SFT optimizer step in fp32 and under bf16 autocast (`train.autocast`), side by side.

SFT and RL time on the CPU box goes into the trainer's forward and backward; on a CPU
with AVX-512 bf16 (or AMX) bf16 matmuls run faster than fp32. This times `Trainer.step`
on the same agent-shaped batch (rows of `--tokens` tokens, the last `--generated` of each
trained, as an expert demo is) for both settings, best of `--repeats` after a warm-up,
and the loss each computed. Each setting starts from the same weights.

Writes benchmarks/results/train_autocast.json (`--quick`: a tiny random Llama,
train_autocast_quick.json); the last line is `ratio=<bf16 step / fp32 step>`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from _floor import cpu_flags
from _machine import machine
from shadowrl.rl.batch import build_sft_batches
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Segment, Trajectory

RESULTS = Path(__file__).parent / "results"


def demos(rows: int, tokens: int, generated: int, vocab: int) -> list[Trajectory]:
    """Random demos of the given shape: the token values do not change the arithmetic."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for _ in range(rows):
        ids = torch.randint(3, vocab, (tokens,), generator=gen).tolist()
        mask = (False,) * (tokens - generated) + (True,) * generated
        seg = Segment(tuple(ids), mask, (0.0,) * tokens, (0,) * tokens)
        out.append(Trajectory("t", (), (), (seg,), "submitted", reward=1.0))
    return out


def model(quick: bool) -> Any:
    from shadowrl.models import ModelConfig, load_model

    return load_model(ModelConfig(path="tiny" if quick else "smollm2"))[0]


def step_time(autocast: str, args: argparse.Namespace) -> dict[str, Any]:
    cfg = TrainConfig.model_validate({"autocast": autocast, "sft": {"lr": 1e-5}})
    trainer = Trainer(model(args.quick), cfg, objective="sft")
    batch = build_sft_batches(
        demos(args.rows, args.tokens, args.generated, 49152),
        batch_tokens=args.rows * args.generated,
        microbatch_tokens=args.rows * args.tokens,
    )[0]
    times, losses = [], []
    for _ in range(args.repeats + 1):  # the first is the warm-up
        start = time.perf_counter()
        losses.append(trainer.step(batch)["loss"])
        times.append(time.perf_counter() - start)
    return {"step_s": min(times[1:]), "first_loss": losses[0], "steps": len(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tiny random Llama (CI smoke)")
    ap.add_argument("--rows", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--generated", type=int, default=192)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(torch.get_num_threads())
    fp32, bf16 = step_time("none", args), step_time("bfloat16", args)
    ratio = bf16["step_s"] / fp32["step_s"]
    result = {
        "model": "tiny" if args.quick else "smollm2",
        "shape": {"rows": args.rows, "tokens": args.tokens, "generated": args.generated},
        "fp32": fp32,
        "bf16_autocast": bf16,
        "ratio": ratio,
        "machine": {**machine("transformers"), **cpu_flags()},
    }
    name = "train_autocast_quick.json" if args.quick else "train_autocast.json"
    out = args.out or RESULTS / name
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"fp32 step {fp32['step_s']:.2f} s, bf16 autocast step {bf16['step_s']:.2f} s")
    print(f"ratio={ratio:.3f}")


if __name__ == "__main__":
    main()
