"""One run seed, one random stream per component.

A run is reproduced by one number, the config's top-level `seed`. A component that draws
random numbers of its own takes its seed from `stream_seed(seed, stream)` instead of a
config field of its own, so no two components share draws by accident and none can be
re-seeded apart from the run. Imports nothing of the project: every layer may use it.

A tiny model's initial weights are the run seed itself, so the default run seed 0 gives
the weights `model.seed: 0` gave (tests pin tokens of them). Every other stream is a
32-bit hash of its name and the run seed, the same in every process and version
(`tests/test_seeds.py`: no two streams of the first 50 run seeds coincide). Components that read the run seed directly (the engine's sampling, the eval bootstrap,
the task stream) key their draws by their own mechanism and are not listed here.
"""

from __future__ import annotations

import hashlib
from typing import Literal

Stream = Literal["model", "trainer", "heads", "distill"]

# stream -> what draws from it (the run seed, or a hash of the name and the run seed)
STREAMS: dict[Stream, str] = {
    "model": "a tiny model's initial weights (`models.load_model`); the run seed itself",
    "trainer": "the torch RNG the trainer seeds at start and saves in checkpoints",
    "heads": "which windows the MTP heads' re-distillation during RL samples (rl/mtp_rl.py)",
    "distill": "`shadowrl mtp distill`: its generations, its heads' init and its batches",
}


def stream_seed(seed: int, stream: Stream) -> int:
    """The seed of `stream` in a run seeded `seed`: stable across processes and versions."""
    if stream not in STREAMS:
        raise ValueError(f"unknown random stream {stream!r}; known: {', '.join(STREAMS)}")
    if stream == "model":  # pinned: the tiny models' weights are those of the run seed
        return seed
    # 32 bits: a valid torch and numpy seed that can still be scaled (mtp_distill.py)
    return int.from_bytes(hashlib.blake2b(f"{stream}:{seed}".encode(), digest_size=4).digest())
