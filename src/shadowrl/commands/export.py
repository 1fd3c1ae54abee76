"""`shadowrl export`: a training checkpoint -> a Hugging Face directory.

    shadowrl export --checkpoint runs/x/checkpoints/step_00000006 --out runs/x/hf [--dtype bfloat16]

A run with `train.parallel: fsdp | hsdp` checkpoints as a torch distributed checkpoint
(each rank's shards, `rl/fsdp.py`), which neither `from_pretrained`, the engine nor vLLM
read. This reassembles it in one process (no ranks) and writes `config.json`,
`model.safetensors` and the tokenizer saved with it. A replicated run's checkpoint already
is such a directory; it is refused with a line saying so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, help="a step_* directory of a sharded run")
    p.add_argument("--out", required=True, help="the Hugging Face directory to write")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="dtype of the exported weights (float32: exactly the trainer's fp32 shards)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.rl import export_checkpoint, is_sharded

    ckpt = Path(args.checkpoint)
    if (ckpt / "model.safetensors").is_file():
        raise UsageError(f"{ckpt} already is a Hugging Face directory (model.safetensors)")
    if not is_sharded(ckpt):
        raise UsageError(f"{ckpt} is not a training checkpoint (no dcp/ directory)")
    out = export_checkpoint(ckpt, args.out, args.dtype)
    print(f"Hugging Face directory: {out}")
    return 0
