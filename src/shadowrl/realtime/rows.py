"""Production sessions → one RL batch, trained by the same objective as `shadowrl train`.

Each rewarded session is one trajectory whose segments carry the ids, logprobs and
policy versions the server recorded. They enter `rl.batch.build_rl_batch` exactly
like rollout groups: a *cohort* plays the part of a GRPO group, so advantages are
reward − cohort mean (never divided by std), the loss is summed over tokens and
divided by one batch constant (no length normalisation), and tokens from an older
policy are corrected by the truncated importance ratio π_θ / π_recorded.

The recorded logprobs are those of the *served* distribution, after the client's
temperature and top-p (a greedy request is a point mass). Rather than re-score π_θ
under every client's transform, only sessions served at the training temperature
with top-p 1 are trained on; the others are counted (`off_distribution`). Sessions
left out, and why, are counted too: unlabeled (silent), served by a checkpoint more
than `max_staleness` versions behind the one being trained (`stale`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from shadowrl.realtime.config import Cohort, RowsConfig
from shadowrl.realtime.rewards import Reward
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.rl import TrainBatch, build_rl_batch
from shadowrl.rl.config import TrainConfig
from shadowrl.types import Trajectory


@dataclass(frozen=True)
class RowCounts:
    """How many sessions were trained on, and why the others were left out."""

    sessions: int
    trained: int
    unlabeled: int
    off_distribution: int
    stale: int
    cohorts: int


def cohort_key(s: ProductionSession, cohort: Cohort) -> str:
    """The cohort a session's advantage is centred in: its checkpoint, or its task."""
    return (s.checkpoint or "") if cohort == "checkpoint" else (s.task_id or s.id)


def cohort_groups(
    sessions: Sequence[ProductionSession],
    rewards: Sequence[Reward],
    *,
    trainer_version: int,
    cfg: RowsConfig,
) -> tuple[list[list[Trajectory]], RowCounts]:
    """Rewarded trajectories grouped by cohort, and the counts of what was left out."""
    unlabeled = off = stale = 0
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for s, r in zip(sessions, rewards, strict=True):
        oldest = s.min_version
        if r.value is None:
            unlabeled += 1
        elif not s.served_at(cfg.temperature):
            off += 1
        elif oldest is None or trainer_version - oldest > cfg.max_staleness:
            stale += 1
        else:
            groups[cohort_key(s, cfg.cohort)].append(
                dataclasses.replace(s.trajectory, reward=r.value)
            )
    trained = sum(len(g) for g in groups.values())
    counts = RowCounts(len(sessions), trained, unlabeled, off, stale, len(groups))
    return list(groups.values()), counts


def production_batch(
    groups: Sequence[Sequence[Trajectory]],
    *,
    trainer_version: int,
    cfg: RowsConfig,
    train: TrainConfig,
) -> TrainBatch:
    """One optimizer step's batch from cohort groups, built by the one `build_rl_batch`."""
    return build_rl_batch(
        groups,
        trainer_version=trainer_version,
        max_staleness=cfg.max_staleness,
        microbatch_tokens=train.batch.microbatch_tokens,
        token_budget=train.batch.token_budget,
        pad_to_multiple=train.batch.pad_to_multiple,
    )
