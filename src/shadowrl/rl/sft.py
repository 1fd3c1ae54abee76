"""Supervised fine-tuning on demonstration trajectories, through the RL trainer.

Demonstrations come from a scripted expert driven through the real harness, so
they are ordinary `Trajectory` records: the same segments, the same loss mask
(only the assistant's own tokens are learned, never prompts or tool output), the
same packing. SFT is therefore just another objective plugged into `Trainer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from shadowrl.rl.batch import build_sft_batches
from shadowrl.rl.loss import LossStats
from shadowrl.types import Trajectory

if TYPE_CHECKING:
    from shadowrl.rl.trainer import Trainer

log = logging.getLogger(__name__)


def sft_loss(logprobs: Tensor, loss_mask: Tensor, *, token_budget: int) -> Tensor:
    """logprobs [B, T], loss_mask [B, T] -> −Σ_masked log p / token_budget (token-mean CE)."""
    return -(logprobs * loss_mask.to(logprobs.dtype)).sum() / token_budget


def sft_stats(logprobs: Tensor, loss_mask: Tensor) -> LossStats:
    """Token count and summed NLL of one microbatch; the RL fields stay neutral."""
    z = torch.zeros((), device=logprobs.device)
    nll = -(logprobs.detach() * loss_mask.to(logprobs.dtype)).sum()
    inf = torch.tensor(torch.inf, device=logprobs.device)
    return LossStats(loss_mask.sum().to(logprobs.dtype), z, -inf, inf, z, z, z, nll)


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
        microbatch_tokens=cfg.microbatch_tokens,
        pad_to_multiple=cfg.pad_to_multiple,
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
