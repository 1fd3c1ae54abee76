"""Supervised fine-tuning on demonstration trajectories, through the RL trainer.

Demonstrations come from a scripted expert driven through the real harness, so
they are ordinary `Trajectory` records: the same segments, the same loss mask
(only the assistant's own tokens are learned, never prompts or tool output), the
same packing. SFT is therefore just another objective plugged into `Trainer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from shadowrl.rl.batch import build_sft_batches
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Trajectory

log = logging.getLogger(__name__)


def run_sft(
    trainer: Trainer,
    demonstrations: Sequence[Trajectory],
    *,
    epochs: int,
    batch_tokens: int,
    on_step: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Train `trainer` (built with objective="sft") for `epochs` passes; returns step metrics."""
    cfg = trainer.cfg
    batches = build_sft_batches(
        demonstrations,
        batch_tokens=batch_tokens,
        microbatch_tokens=cfg.batch.microbatch_tokens,
        pad_to_multiple=cfg.batch.pad_to_multiple,
    )
    history = []
    for epoch in range(epochs):
        for batch in batches:
            metrics = {"epoch": float(epoch), **trainer.step(batch)}
            history.append(metrics)
            log.info("sft step %d nll=%.4f", trainer.step_count, metrics["nll"])
            if on_step is not None:
                on_step(metrics)
    return history
