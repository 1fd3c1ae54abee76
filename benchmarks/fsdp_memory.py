"""Per-rank peak memory of FSDP on 2 ranks against a full replica (`train.parallel`).

    .venv/bin/python benchmarks/fsdp_memory.py [--size 1b|20m] [--quick] [--steps 2] [--out FILE]

A replica's per-rank peak does not depend on the world size (each rank holds the whole
model, its gradients and AdamW state), so replicate is measured at world size 1; FSDP
at 2 ranks (gloo, CPU). Each side runs in a fresh process that builds a random Llama
of the chosen size and takes `--steps` RL steps on the same synthetic batch. Memory is
peak RSS (`ru_maxrss`) minus the process's RSS after its imports, before the model is
built: rank 0 measures both itself; rank 1 (spawned by the trainer) is read as the
largest finished child's peak minus rank 0's baseline (it imports the same modules).
The default size is ~1.1B parameters (fp32 with AdamW: ~18 GB for a replica; not run
on the 2-core, 24 GB dev box); `--size 20m` a 20M-parameter one; `--quick` a ~1M one
for the smoke test (its figures mean nothing).
Beside the peaks, `rank0_state_mb` counts the weights and AdamW moments rank 0 holds
after the steps (its shards under FSDP). Ends with
`ratio=<FSDP's largest rank peak / replicate's peak>`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _machine import machine

SIZES: dict[str, dict[str, Any]] = {  # Llama shapes: TinyLlama's (~1.1B) and two small ones
    "1b": {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
           "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000},
    "20m": {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 8192},
    "quick": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024},
}  # fmt: skip
OUT = Path(__file__).parent / "results" / "fsdp_memory.json"


def _mb(kb: int) -> float:
    return kb / 1024  # Linux reports ru_maxrss in KiB


def _state_mb(trainer: Any) -> float:
    """MB of parameters and optimizer state rank 0 holds (its shards under FSDP)."""
    import torch
    from torch.distributed.tensor import DTensor

    def local(t: Any) -> int:
        return int((t.to_local() if isinstance(t, DTensor) else t).nbytes)

    tensors = [*trainer.model.parameters()]
    tensors += [v for st in trainer.optimizer.state.values() for v in st.values()]
    return sum(local(t) for t in tensors if isinstance(t, torch.Tensor)) / 2**20


def worker(parallel: str, size: str, steps: int) -> dict[str, Any]:
    """One side, in this process: build, step, measure; prints its JSON."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from shadowrl.rl.config import TrainConfig
    from shadowrl.rl.trainer import Trainer
    from shadowrl.types import Segment, Trajectory

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SIZES[size], tie_word_embeddings=False))
    params = sum(p.numel() for p in model.parameters())
    world = 2 if parallel == "fsdp" else 1
    cfg = TrainConfig.model_validate(
        {"world_size": world, "parallel": parallel, "batch": {"microbatch_tokens": 256}}
    )
    vocab = SIZES[size]["vocab_size"]

    def traj(reward: float, seed: int) -> Trajectory:
        ids = torch.randint(1, vocab, (128,), generator=torch.Generator().manual_seed(seed))
        n = len(ids)
        seg = Segment(tuple(ids.tolist()), (False,) * 32 + (True,) * (n - 32),
                      (0.0,) * n, (-1,) * 32 + (0,) * (n - 32))  # fmt: skip
        return Trajectory("t", (), (), (seg,), "submitted", reward=reward)

    groups = [[traj(1.0, 2 * g), traj(0.0, 2 * g + 1)] for g in range(2)]
    trainer = Trainer(model, cfg)
    del model  # the trainer holds it (sharded under FSDP)
    built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # rank 0's peak so far
    times = []
    try:
        for _ in range(steps):
            t0 = time.perf_counter()
            metrics = trainer.train_groups(groups)
            times.append(time.perf_counter() - t0)
        held = _state_mb(trainer)
    finally:
        trainer.close()
    peaks = [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]
    if world > 1:
        peaks.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return {
        "parallel": parallel,
        "world_size": world,
        "params": params,
        "baseline_mb": _mb(base),
        "peak_mb_per_rank": [_mb(p - base) for p in peaks],
        "rank0_peak_mb_before_training": _mb(built - base),
        "rank0_state_mb": held,  # weights + AdamW moments this rank holds after the steps
        "step_s": times,
        "microbatches": metrics["microbatches"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["1b", "20m"], default="1b")
    ap.add_argument("--quick", action="store_true", help="A ~1M-parameter Llama (smoke test).")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--worker", choices=["replicate", "fsdp"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    size = "quick" if args.quick else args.size
    if args.worker:
        print(json.dumps(worker(args.worker, size, args.steps)))
        return 0
    sides = {}
    for parallel in ("replicate", "fsdp"):
        cmd = [sys.executable, __file__, "--worker", parallel, "--steps", str(args.steps)]
        cmd += ["--quick"] if args.quick else ["--size", args.size]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode:
            print(proc.stderr[-4000:], file=sys.stderr)
            return proc.returncode
        sides[parallel] = json.loads(proc.stdout.strip().splitlines()[-1])
        s = sides[parallel]
        print(f"{parallel:9s} world {s['world_size']}: peak per rank "
              f"{', '.join(f'{m:.0f}' for m in s['peak_mb_per_rank'])} MB, "
              f"steps {', '.join(f'{t:.2f}' for t in s['step_s'])} s", flush=True)  # fmt: skip
    ratio = max(sides["fsdp"]["peak_mb_per_rank"]) / sides["replicate"]["peak_mb_per_rank"][0]
    result = {"size": size, "model": SIZES[size], "steps": args.steps, **sides, "ratio": ratio,
              "machine": machine("transformers")}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"ratio={ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
