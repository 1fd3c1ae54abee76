"""Per-rank peak memory of a training step: FSDP on 2 ranks and LoRA against a full replica.

    nice -n 19 .venv/bin/python benchmarks/fsdp_memory.py [--sizes 20m 1b 200m]
        [--dtype bfloat16] [--arms replicate fsdp lora] [--steps 1] [--tokens 16]
        [--device cpu] [--autocast none] [--fsdp-ranks 2] [--quick] [--out FILE]

On one GPU (`benchmarks/gpu/run_gpu.sh`, part `fsdp_memory`): `--device cuda
--fsdp-ranks 1 --dtype float32 --autocast bfloat16 --sizes 1.5b 3b`, where FSDP on one
rank shards nothing and shows its mixed precision (bf16 gathers and compute over fp32
masters) against a replica under autocast, and LoRA's memory; peaks are then the CUDA
allocator's.

A replica's per-rank peak does not depend on the world size (each rank holds the whole
model, its gradients and AdamW state), so `replicate` runs at world size 1; `fsdp` on
`--fsdp-ranks` gloo ranks (2 on CPU); `lora` (`train.lora`, rank 16 on every projection)
on 1 replica, LoRA's own saving beside FSDP's. Every arm of every size runs in a fresh
process (`_memory_rank.py`), one at a time, that builds a Llama of that size (TinyLlama's
shape at 1b, untied embeddings; constant weights: values change no byte, and random
ones cost minutes of the shared CPU; nothing is downloaded) in `train.dtype` and takes
`--steps` RL steps on one synthetic batch (4 trajectories of `--tokens` tokens, 2
microbatches, activation checkpointing on): the states, not activations, are measured.

What is measured, and why RSS: each rank process's peak resident set during a step,
Linux's high-water mark `VmHWM`, reset (`/proc/self/clear_refs`) after `malloc_trim`
at the start of each step, so building the full model before sharding it does not
count. torch keeps no allocator statistics on CPU, and RSS is what the machine must
provide: tensors, gloo buffers, the allocator's freed-but-kept heap. Figures are that
peak minus the rank-0 process's RSS after its imports, before the model was built
(`baseline_mb`: Python, torch, transformers). Counted exactly beside it: `state_mb`,
the bytes of weights and AdamW moments the rank holds after the steps (its shards under
FSDP), and `grad_mb`, those of its gradients. Memory figures are not timings; the load
(`uptime` before and after each arm) and the step time are recorded all the same.

Each size's figures are written as soon as they are measured (`"partial": true` until
the last). Ends with `ratio=<FSDP's largest rank peak / replicate's peak>` and
`lora_ratio=<LoRA's peak / replicate's>` at the largest size. `--quick`: a ~0.6M
Llama, a smoke test (its figures mean nothing). The fit and the table of what fits
where: `fsdp_fit.py`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SIZES: dict[str, dict[str, Any]] = {  # Llama shapes: TinyLlama's (~1.1B) and smaller ones
    "1b": {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
           "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000},
    "200m": {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 12,
             "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000},
    "20m": {"hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 8192},
    # Qwen2.5-1.5B's and -3B's shapes as Llamas (no attention bias), for the GPU
    "1.5b": {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
             "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936},
    "3b": {"hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
           "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936},
    "quick": {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024},
}  # fmt: skip
ARMS = ("replicate", "fsdp", "lora")
OUT = Path(__file__).parent / "results" / "fsdp_memory.json"
BYTES = {"bfloat16": 2, "float32": 4}


def _params(size: str) -> int:
    """Parameters of a `SIZES` Llama (untied), counted from its shape."""
    c = SIZES[size]
    h, kv = (
        c["hidden_size"],
        c["hidden_size"] // c["num_attention_heads"] * c["num_key_value_heads"],
    )
    layer = 2 * h * h + 2 * h * kv + 3 * h * c["intermediate_size"] + 2 * h
    return int(c["num_hidden_layers"] * layer + 2 * c["vocab_size"] * h + h)


def _check_memory(size: str, dtype: str) -> None:
    """Refuse to start an arm the machine cannot hold now (the box is shared: an OOM kill
    would fall on someone else's job): a replica needs ~4 copies of the weights."""
    need = 4 * _params(size) * BYTES[dtype] * 1.25
    with open("/proc/meminfo") as f:
        avail = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable:"))
    if avail < need:
        raise RuntimeError(f"{size}: needs ~{need / 2**30:.1f} GiB, {avail / 2**30:.1f} available")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _run_arm(arm: str, size: str, args: argparse.Namespace) -> dict[str, Any]:
    if args.device == "cpu":  # a GPU is this job's alone
        _check_memory(size, args.dtype)
    worker = Path(__file__).with_name("_memory_rank.py")
    spec = {"arm": arm, "shape": SIZES[size], "dtype": args.dtype, "steps": args.steps,
            "tokens": args.tokens, "device": args.device, "autocast": args.autocast,
            "world": args.fsdp_ranks}  # fmt: skip
    cmd = [sys.executable, str(worker), json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"{arm} at {size} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    side: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if any(side["skipped"]):  # a non-finite step allocates no AdamW moments: not measured
        raise RuntimeError(f"{arm} at {size}: a step was skipped, its peak means nothing")
    return side


def measure(size: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every arm of one size, one after the other; ratios against the replica."""
    arms = {}
    for arm in args.arms:
        before = _uptime()
        arms[arm] = _run_arm(arm, size, args)
        arms[arm]["uptime"] = [before, _uptime()]
        a = arms[arm]
        key = "cuda_peak_mb" if args.device == "cuda" else "peak_mb"
        print(f"{size:5s} {arm:9s} world {a['world_size']}: peak per rank "
              + ", ".join(f"{max(s[key] for s in r['steps']):.0f}" for r in a["ranks"])
              + f" MB ({args.device}), state {a['ranks'][0]['state_mb']:.0f} MB, steps "
              + ", ".join(f"{s['step_s']:.2f}" for s in a["ranks"][0]["steps"]) + " s",
              flush=True)  # fmt: skip
    base = arms["replicate"]["peak_mb"] if "replicate" in arms else None
    ratios = {f"{a}_ratio": arms[a]["peak_mb"] / base for a in arms if base and a != "replicate"}
    return {"model": SIZES[size], "params": next(iter(arms.values()))["params"], **arms, **ratios}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", choices=list(SIZES), default=["20m", "1b", "200m"])
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16",
                    help="train.dtype: bf16 weights and AdamW (what fits 1B twice on 24 GB)")  # fmt: skip
    ap.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    ap.add_argument("--quick", action="store_true", help="A ~1M-parameter Llama (smoke test).")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=16, help="Tokens per trajectory (4 of them).")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument(
        "--autocast",
        choices=["none", "bfloat16"],
        default="none",
        help="train.autocast (under FSDP, its mixed-precision policy)",
    )
    ap.add_argument(
        "--fsdp-ranks",
        type=int,
        default=2,
        help="FSDP's world size (1 on one GPU: mixed precision, no sharding)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    sizes = ["quick"] if args.quick else args.sizes
    result: dict[str, Any] = {"dtype": args.dtype, "steps": args.steps, "tokens": args.tokens,
                              "device": args.device, "autocast": args.autocast}  # fmt: skip
    result["sizes"] = {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        result["sizes"][size] = measure(size, args)
        result["machine"] = next(a for a in result["sizes"][size].values()
                                 if isinstance(a, dict) and "machine" in a)["machine"]  # fmt: skip
        result["partial"] = size != sizes[-1]
        result["uptime_end"] = _uptime()
        args.out.write_text(json.dumps(result, indent=2))
    last = max(result["sizes"].values(), key=lambda r: r["params"])  # the largest size
    names = {"fsdp_ratio": "ratio", "lora_ratio": "lora_ratio"}
    print(" ".join(f"{names[k]}={last[k]:.3f}" for k in names if k in last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
