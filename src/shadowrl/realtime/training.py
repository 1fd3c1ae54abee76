"""One training arm: a cycle's rewarded sessions → one candidate checkpoint.

The cycle trains the candidate here (`stages.train`); a measurement may train a second
arm from the same parent on the same `TrainInput` (the permuted-feedback control of
`experiments/control.py`): the same rows, the same optimizer steps, so the two arms
spend the same compute and differ only in the rewards.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from shadowrl.eval import Alarm
from shadowrl.eval.gate import Training
from shadowrl.models import ModelConfig, load_model
from shadowrl.realtime.config import RowsConfig
from shadowrl.realtime.rewards import Reward
from shadowrl.realtime.rows import RowCounts, cohort_groups, production_batch
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.rl import (
    Companion,
    Moved,
    StepCheck,
    TrainBatch,
    Trainer,
    build_companion,
    token_logprobs,
)
from shadowrl.rl.config import TrainConfig
from shadowrl.types import Trajectory


def divergence(model: Any, batch: TrainBatch, temperature: float = 1.0) -> float:
    """Mean log π_served − log π_model over the batch's trained tokens (≈ KL per token),
    π_model at the temperature the sessions were served at."""
    total, n = 0.0, 0
    with torch.no_grad():
        for mb in batch.microbatches:
            lp = token_logprobs(model, mb.input_ids, mb.loss_mask, temperature=temperature)
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
    checks: tuple[StepCheck, ...] = ()  # of the companion (`contributions.build_step_checks`)
    seed: int = 0  # the run seed (`seeds.py` derives the trainer's streams from it)


@dataclass(frozen=True)
class TrainInput:
    """What an arm trains on: the cycle's sessions, their rewards, rollout groups on
    pinned train tasks (`realtime.mix`) and branch continuation groups (`realtime.branching`)."""

    sessions: Sequence[ProductionSession]
    rewards: Sequence[Reward]
    mixed: Sequence[Sequence[Trajectory]] = ()
    branched: Sequence[Sequence[Trajectory]] = ()  # continuation groups (`continuations.py`)


@dataclass(frozen=True)
class ArmResult:
    """One trained arm, or why there is none (`candidate` None)."""

    rows: RowCounts
    parent: str
    candidate: str | None
    reason: str | None = None  # why no candidate
    version: int | None = None
    kl: float | None = None  # nats per token from the serving weights (`divergence`)
    metrics: dict[str, float] = field(default_factory=dict)
    tokens: int | None = None  # tokens trained on
    steps: int | None = None
    checks: tuple[Moved, ...] = ()  # the arm's checks, where the parent has a companion

    def evidence(self) -> Training:
        """What the deploy gate learns from the trainer about this candidate."""
        return Training(self.kl, tuple(Alarm(m.alarm, m.value, m.limit) for m in self.checks))

    def to_json(self) -> dict[str, Any]:
        """As `cycles.jsonl` records it (the fields an arm without a candidate lacks left out)."""
        out: dict[str, Any] = {"rows": dataclasses.asdict(self.rows), "parent": self.parent}
        if self.candidate is None:
            return out | {"candidate": None, "reason": self.reason}
        for m in self.checks:
            out[m.key] = {"parent": list(m.parent), "candidate": list(m.candidate)}
        return out | {
            "candidate": self.candidate, "version": self.version, "kl": self.kl,
            "metrics": self.metrics, "tokens": self.tokens, "steps": self.steps,
        }  # fmt: skip


def train_arm(arm: Arm, data: TrainInput, dest: Path) -> ArmResult:
    """Train from `arm.parent` on the rewarded sessions and mixed groups of `data`; save to
    `dest` (or say why not)."""
    groups, counts = cohort_groups(
        data.sessions, data.rewards, trainer_version=arm.parent_version, cfg=arm.rows
    )
    batch = production_batch(
        [*groups, *data.mixed, *data.branched],
        trainer_version=arm.parent_version,
        cfg=arm.rows,
        train=arm.train,
    )
    if not batch.microbatches:
        return ArmResult(counts, arm.parent, None, "no signal: no cohort has unequal rewards")
    where = arm.model.model_copy(update={"path": arm.parent})
    model, tokenizer = load_model(where, arm.train.dtype, arm.seed)
    companion = build_companion(arm.train, arm.parent, seed=arm.seed)  # beside the policy, if any
    # the rows are sessions served at `rows.temperature`: the trainer scores that distribution
    train = arm.train.model_copy(update={"temperature": arm.rows.temperature})
    trainer = Trainer(model, train, companion=companion, seed=arm.seed)
    trainer.version = arm.parent_version
    checks = arm.checks if companion is not None else ()
    parent = _measured(checks, model, companion, batch)
    metrics: dict[str, float] = {}
    for _ in range(arm.steps):
        metrics = trainer.step(batch)  # trains the companion too, saved beside
    kl = divergence(trainer.model, batch, arm.rows.temperature)
    after = _measured(checks, model, companion, batch)
    moved = tuple(c.compare(p, a) for c, p, a in zip(checks, parent, after, strict=True))
    trainer.version = arm.version
    path = str(trainer.save(dest, tokenizer))
    finite = {k: v for k, v in metrics.items() if isinstance(v, float) and math.isfinite(v)}
    tokens = sum(mb.num_tokens for mb in batch.microbatches)
    return ArmResult(
        counts, arm.parent, path, version=arm.version, kl=kl, metrics=finite, tokens=tokens,
        steps=arm.steps, checks=moved,
    )  # fmt: skip


def _measured(
    checks: Sequence[StepCheck], model: Any, companion: Companion | None, batch: TrainBatch
) -> list[Sequence[float]]:
    """Each check's figures of the companion under `model` on `batch` (none without one)."""
    return [] if companion is None else [c.measure(model, companion, batch) for c in checks]
