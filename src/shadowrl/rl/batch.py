"""From rollout groups to padded, token-budgeted microbatches the trainer can eat.

A rollout group is G trajectories of one task; each trajectory is a chain of one or
more token segments (self-summarisation starts a new segment) and every segment of
a chain is trained with the chain's advantage. The steps, in order:

1. advantages per group (reward − group mean, see `loss.group_advantages`, or only its
   positive half under `advantage="positive"`; a group that is `row.OwnCredit`, such as a
   tree rollout's, assigns its own);
2. the loss denominator (`token_budget`) is fixed *before* anything is dropped, so
   skipping rows that cannot contribute is a pure compute saving;
3. chains whose oldest generated token is more than `max_staleness` versions behind
   the trainer are dropped *whole*: dropping stale segments one by one would drop the
   early, summary-bearing segment of a long async chain and so mask its summary by
   accident (the fresh chains left are importance-corrected per token by the loss);
   rows with zero advantage are skipped when there is no KL term (their gradient is
   exactly zero). Summary tokens are generated tokens: never masked;
4. rows are bin-packed (longest first, first fit) into microbatches whose padded size
   rows × length stays within `microbatch_tokens`; padding is on the right, so with
   causal attention no real token ever sees a pad and no attention mask is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from shadowrl.rl.loss import ADVANTAGES, zero_advantage_groups
from shadowrl.rl.row import OwnCredit, Row
from shadowrl.types import Segment, Trajectory

if TYPE_CHECKING:
    from shadowrl.rl.config import Advantage


@dataclass(frozen=True)
class MicroBatch:
    """One forward/backward worth of rows, right-padded to a common length T."""

    input_ids: Tensor  # [B, T] long
    loss_mask: Tensor  # [B, T] bool, True on generated tokens
    behaviour_logprobs: Tensor  # [B, T] float32, 0 where mask is False
    advantages: Tensor  # [B] float32
    versions: Tensor  # [B, T] long, -1 where mask is False
    # Mixture of experts: [B, T, MoE layers x k] rollout experts to replay, -1 = none.
    routes: Tensor | None = None

    def to(self, device: torch.device | str) -> MicroBatch:
        ids, mask, blp, adv, ver = (t.to(device, non_blocking=True) for t in self._tensors())
        routes = None if self.routes is None else self.routes.to(device, non_blocking=True)
        return MicroBatch(ids, mask, blp, adv, ver, routes)

    def _tensors(self) -> tuple[Tensor, ...]:
        return (
            self.input_ids,
            self.loss_mask,
            self.behaviour_logprobs,
            self.advantages,
            self.versions,
        )

    @property
    def num_tokens(self) -> int:
        return int(self.loss_mask.sum())


@dataclass(frozen=True)
class TrainBatch:
    """Everything one optimizer step consumes, plus what was filtered and why."""

    microbatches: list[MicroBatch]
    token_budget: int
    stats: dict[str, float] = field(default_factory=dict)


def rows_from_groups(
    groups: Sequence[Sequence[Trajectory]], advantage: Advantage = "centred"
) -> tuple[list[Row], int]:
    """Advantage per trajectory (`loss.ADVANTAGES[advantage]` of its group's rewards),
    copied to each of its segments; also counts flat groups. A group with its own credit
    (a tree) keeps it."""
    advantages = ADVANTAGES[advantage]
    rows: list[Row] = []
    flat = chain = 0
    for group in groups:
        if any(t.reward is None for t in group):
            raise ValueError(f"group of task {group[0].task_id!r} has an unscored trajectory")
        rewards = torch.tensor([t.reward for t in group], dtype=torch.float64)
        flat += zero_advantage_groups(rewards[None])
        if isinstance(group, OwnCredit):  # e.g. a tree rollout's leaves
            own, chains = group.rows(chain)
            rows, chain = rows + own, chain + chains
            continue
        for traj, adv in zip(group, advantages(rewards).tolist(), strict=True):
            rows.extend(Row(seg, adv, chain) for seg in traj.segments if seg.num_generated > 0)
            chain += 1
    return rows, flat


def stale_chains(rows: Sequence[Row], trainer_version: int, max_staleness: int) -> set[int]:
    """Chains whose oldest generated token, over all their segments, is too old."""
    oldest: dict[int, int] = {}
    for r in rows:
        if (v := r.segment.min_version()) is not None:
            oldest[r.chain] = min(v, oldest.get(r.chain, v))
    return {c for c, v in oldest.items() if trainer_version - v > max_staleness}


def pack(rows: Sequence[Row], microbatch_tokens: int, pad_to_multiple: int = 8) -> list[list[Row]]:
    """First-fit decreasing: each bin's rows × padded max length ≤ microbatch_tokens.

    A row longer than the budget gets a microbatch of its own (it cannot be split:
    every token needs its whole prefix in the same forward).
    """
    bins: list[list[Row]] = []
    widths: list[int] = []
    for row in sorted(rows, key=lambda r: len(r.segment.token_ids), reverse=True):
        width = _round_up(len(row.segment.token_ids), pad_to_multiple)
        for i, b in enumerate(bins):
            if (len(b) + 1) * widths[i] <= microbatch_tokens:  # widths[i] ≥ width (sorted)
                b.append(row)
                break
        else:
            bins.append([row])
            widths.append(width)
    return bins


def collate(rows: Sequence[Row], pad_id: int = 0, pad_to_multiple: int = 8) -> MicroBatch:
    """Right-pad rows into tensors; padded positions are masked out."""
    t = _round_up(max(len(r.segment.token_ids) for r in rows), pad_to_multiple)
    b = len(rows)
    ids = torch.full((b, t), pad_id, dtype=torch.long)
    mask = torch.zeros((b, t), dtype=torch.bool)
    blp = torch.zeros((b, t), dtype=torch.float32)
    ver = torch.full((b, t), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        s = row.segment
        n = len(s.token_ids)
        ids[i, :n] = torch.tensor(s.token_ids, dtype=torch.long)
        mask[i, :n] = torch.tensor(s.loss_mask, dtype=torch.bool)
        blp[i, :n] = torch.tensor(s.logprobs, dtype=torch.float32)
        ver[i, :n] = torch.tensor(s.versions, dtype=torch.long)
    mask[:, 0] = False  # the first token has no prefix to predict it from
    adv = torch.tensor([r.advantage for r in rows], dtype=torch.float32)
    blp, ver = torch.where(mask, blp, 0.0), torch.where(mask, ver, -1)
    return MicroBatch(ids, mask, blp, adv, ver, _routes([r.segment for r in rows], t))


def _routes(segments: Sequence[Segment], t: int) -> Tensor | None:
    """[B, t, MoE layers x k] of the segments' recorded routes (-1 where none), or None."""
    width = max((len(s.routes[0]) for s in segments if s.routes), default=0)
    if not width:
        return None
    out = torch.full((len(segments), t, width), -1, dtype=torch.int16)
    for i, s in enumerate(segments):
        if s.routes:
            out[i, : len(s.routes)] = torch.tensor(s.routes, dtype=torch.int16)
    return out


def build_rl_batch(
    groups: Sequence[Sequence[Trajectory]],
    *,
    trainer_version: int,
    max_staleness: int,
    microbatch_tokens: int,
    token_budget: int = 0,
    keep_zero_advantage: bool = False,
    advantage: Advantage = "centred",
    pad_id: int = 0,
    pad_to_multiple: int = 8,
) -> TrainBatch:
    """Scored rollout groups -> one optimizer step's microbatches (see module docstring)."""
    rows, flat_groups = rows_from_groups(groups, advantage)
    budget = token_budget or max(sum(r.segment.num_generated for r in rows), 1)
    stale = stale_chains(rows, trainer_version, max_staleness)
    fresh = [r for r in rows if r.chain not in stale]
    useful = fresh if keep_zero_advantage else [r for r in fresh if r.advantage != 0.0]
    stale_tokens = sum(r.segment.num_generated for r in rows if r.chain in stale)
    stats = {
        "groups": float(len(groups)),
        "zero_adv_groups": float(flat_groups),
        "segments": float(len(rows)),
        "stale_chains": float(len(stale)),
        "stale_segments": float(len(rows) - len(fresh)),
        "stale_tokens": float(stale_tokens),
        "skipped_zero_adv_segments": float(len(fresh) - len(useful)),
        "token_budget": float(budget),
    }
    bins = pack(useful, microbatch_tokens, pad_to_multiple)
    return TrainBatch([collate(b, pad_id, pad_to_multiple) for b in bins], budget, stats)


def build_sft_batches(
    trajectories: Sequence[Trajectory],
    *,
    batch_tokens: int,
    microbatch_tokens: int,
    pad_id: int = 0,
    pad_to_multiple: int = 8,
) -> list[TrainBatch]:
    """Demonstrations -> optimizer steps of ~batch_tokens generated tokens each.

    Advantage is 1 for every row (unused by the SFT loss); each step's budget is its
    own count of generated tokens, i.e. the plain token-mean cross-entropy.
    """
    rows = [Row(s, 1.0) for t in trajectories for s in t.segments if s.num_generated > 0]
    steps: list[list[Row]] = [[]]
    used = 0
    for row in rows:
        if used and used + row.segment.num_generated > batch_tokens:
            steps.append([])
            used = 0
        steps[-1].append(row)
        used += row.segment.num_generated
    out = []
    for step_rows in steps:
        if not step_rows:
            continue
        bins = pack(step_rows, microbatch_tokens, pad_to_multiple)
        mbs = [collate(b, pad_id, pad_to_multiple) for b in bins]
        budget = max(sum(m.num_tokens for m in mbs), 1)
        out.append(TrainBatch(mbs, budget, {"rows": float(len(step_rows))}))
    return out


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k
