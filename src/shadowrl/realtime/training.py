"""One training arm: a cycle's rewarded sessions → one candidate checkpoint.

The cycle trains the candidate here (`stages.train`), and, when `realtime.control` is
on, a control from the same parent on the same sessions with their rewards permuted
(`control.py`): the same rows, the same optimizer steps, so the two arms spend the
same compute and differ only in what the feedback said.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from shadowrl.models import ModelConfig, load_model
from shadowrl.realtime.config import RowsConfig
from shadowrl.realtime.rewards import Reward
from shadowrl.realtime.rows import cohort_groups, production_batch
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.rl.batch import TrainBatch
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.mtp_rl import acceptance as mtp_acceptance
from shadowrl.rl.mtp_rl import starting_heads
from shadowrl.rl.trainer import Trainer, token_logprobs


def divergence(model: Any, batch: TrainBatch) -> float:
    """Mean log π_served − log π_model over the batch's trained tokens (≈ KL per token)."""
    total, n = 0.0, 0
    with torch.no_grad():
        for mb in batch.microbatches:
            lp = token_logprobs(model, mb.input_ids, mb.loss_mask)
            total += float(((mb.behaviour_logprobs - lp) * mb.loss_mask).sum())
            n += mb.num_tokens
    return total / n if n else 0.0


@dataclasses.dataclass(frozen=True)
class Arm:
    """Where an arm starts and what it trains with."""

    parent: str  # HF directory of the serving checkpoint
    parent_version: int
    version: int  # the version the trained weights carry
    model: ModelConfig
    train: TrainConfig
    rows: RowsConfig
    steps: int = 1  # optimizer steps on the cycle's one batch


def train_arm(
    arm: Arm,
    sessions: Sequence[ProductionSession],
    rewards: Sequence[Reward],
    dest: Path,
    mixed: Sequence[Any] = (),
) -> dict[str, Any]:
    """Train from `arm.parent` on the rewarded `sessions` (plus `mixed` rollout groups on
    pinned train tasks, `realtime.mix`); save to `dest` (or say why not)."""
    groups, counts = cohort_groups(
        sessions, rewards, trainer_version=arm.parent_version, cfg=arm.rows
    )
    batch = production_batch(
        [*groups, *mixed], trainer_version=arm.parent_version, cfg=arm.rows, train=arm.train
    )
    out: dict[str, Any] = {"rows": dataclasses.asdict(counts), "parent": arm.parent}
    if not batch.microbatches:
        return out | {"candidate": None, "reason": "no signal: no cohort has unequal rewards"}
    model, tokenizer = load_model(arm.model.model_copy(update={"path": arm.parent}))
    trainer = Trainer(model, arm.train, heads=starting_heads(arm.train.mtp, arm.parent))
    trainer.version = arm.parent_version
    heads = trainer.mtp.heads if trainer.mtp is not None else None
    parent = None if heads is None else mtp_acceptance(model, heads, batch, arm.train.mtp)
    metrics: dict[str, float] = {}
    for _ in range(arm.steps):
        metrics = trainer.step(batch)  # re-distils the heads too (train.mtp), saved beside
    kl = divergence(trainer.model, batch)
    if heads is not None:
        out["mtp"] = {"parent": parent,
                      "candidate": mtp_acceptance(model, heads, batch, arm.train.mtp)}  # fmt: skip
    trainer.version = arm.version
    path = str(trainer.save(dest, tokenizer))
    finite = {k: v for k, v in metrics.items() if isinstance(v, float) and math.isfinite(v)}
    tokens = sum(mb.num_tokens for mb in batch.microbatches)
    return out | {
        "candidate": path, "version": arm.version, "kl": kl, "metrics": finite,
        "tokens": tokens, "steps": arm.steps,
    }  # fmt: skip
