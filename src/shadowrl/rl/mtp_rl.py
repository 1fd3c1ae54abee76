"""MTP heads in RL: re-distilled on each step's own rollout tokens, never touching the policy.

After a policy update (every `train.mtp.every`-th), the trainer hands the step's batch to
`HeadsTrainer.update`:

    the updated policy's final hidden states over (up to `rows`) batch rows, no_grad
        ->  windows whose k+1 predicted tokens were all generated (loss_mask)
        ->  acceptance of the heads as they served this step, per draft position, on
            `batch_windows` of them (against the full LM head)
        ->  `steps` distillation steps on those windows (`mtp_distill`'s loss and logits)

Cost: one no-grad forward per row (a training step spends about four per row: forward,
the checkpointed recompute and backward), the scoring, and `steps` small steps over the
heads' draft vocabulary; `every`, `rows` and `steps` bound it.

Under a sharded trainer (`train.parallel` fsdp/hsdp) those reads are collectives: rank 0
holds the heads, the other ranks a `Reading` of them (`HeadsTrainer.peer`) that runs the
same forward and gathers after each update and discards what it read.

The backbone is detached three ways: its states are computed under `no_grad`, the LM
head enters `head_and_teacher_logits` as a detached weight, and only the heads are in
this optimizer, so the MTP loss can never reach the policy (tested bit for bit). The
acceptance is scored before the heads see these windows, so it is held out: what the
engine's exact rule would accept at greedy (`mtp_accept_j`, the chain agreement of
positions 1..j) and at temperature 1 (`mtp_overlap_j`) on the policy's own tokens. The
heads' tensors join the trainer's published state as `mtp.*`, the names the engine
registers them under (`inference/spec_step.speculator`), so every weight delta carries
them and the engine swaps them with the policy, under the same version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from shadowrl.inference import PREFIX, MTPHeads, heads_path, load_heads, save_heads
from shadowrl.rl.batch import TrainBatch
from shadowrl.rl.mtp_config import RLDistillConfig
from shadowrl.rl.mtp_distill import (
    Frozen,
    States,
    evaluate,
    frozen,
    head_and_teacher_logits,
)
from shadowrl.rl.mtp_loss import mtp_distill_loss


def starting_heads(
    cfg: RLDistillConfig, checkpoint: str | Path | None, *, resumed: bool = False
) -> MTPHeads | None:
    """The heads an RL run starts from: `cfg.heads`, else `mtp.safetensors` beside
    `checkpoint` (first, when `resumed`: the run's own checkpoint); None when there are
    none or re-distillation is off."""
    if cfg.every == 0:
        return None
    beside = checkpoint is not None and heads_path(checkpoint).is_file()
    if beside and (resumed or not cfg.heads):
        assert checkpoint is not None
        return load_heads(checkpoint)
    return load_heads(cfg.heads) if cfg.heads else None


@torch.no_grad()
def batch_states(model: Any, batch: TrainBatch, k: int, rows: int) -> States:
    """Detached final hidden states of the first `rows` batch rows, and the windows t
    whose tokens t+1..t+k+1 were all generated (the main head's and the k heads' targets)."""
    hidden: list[Tensor] = []
    tokens: list[Tensor] = []
    starts: list[Tensor] = []
    offset, left = 0, rows
    device = next(model.parameters()).device
    decoder = model.get_decoder()
    for mb in batch.microbatches:
        ids, mask = mb.input_ids[:left].to(device), mb.loss_mask[:left]
        if not len(ids):
            break
        left -= len(ids)
        t = ids.shape[1]
        if t < k + 2:  # too short for one window
            continue
        h = decoder(input_ids=ids, use_cache=False).last_hidden_state.float().cpu()
        ahead = mask.unfold(1, k + 1, 1)[:, 1:].all(-1)  # [B, T-k-1]: t+1..t+k+1 generated
        for row in range(len(ids)):
            hidden.append(h[row])
            tokens.append(ids[row].cpu())
            starts.append(offset + ahead[row].nonzero()[:, 0])
            offset += t
    if not hidden:
        empty = torch.zeros(0, dtype=torch.long)
        return States(torch.zeros(0, 1), empty, empty)
    return States(torch.cat(hidden), torch.cat(tokens), torch.cat(starts))


def acceptance(
    model: Any, heads: MTPHeads, batch: TrainBatch, cfg: RLDistillConfig, windows: int = 512
) -> list[float]:
    """Greedy acceptance per draft position (chain agreement) of `heads` under `model` on
    a seeded sample of the batch's windows, the same for any model and heads: what the
    deploy gate compares (`eval/alarms.py`)."""
    states = batch_states(model, batch, heads.k, cfg.rows)
    n = len(states.starts)
    if not n:
        return [0.0] * heads.k
    sample = torch.randperm(n, generator=torch.Generator().manual_seed(0))[:windows]
    picked = States(states.hidden, states.tokens, states.starts[sample])
    return evaluate(heads.eval(), frozen(model), picked)["chain"]


@dataclass(frozen=True)
class Reading:
    """What a re-distillation reads of the updated policy: its states over the batch and
    its LM head. Under FSDP both are collectives, so every rank reads, each after the same
    update; rank 0's heads learn from it and the other ranks' `Reading` is all they hold
    of the companion (`HeadsTrainer.peer`)."""

    k: int
    rows: int
    every: int

    def due(self, updates: int) -> bool:
        """Whether the `updates`-th policy update is followed by a re-distillation."""
        return self.every > 0 and updates % self.every == 0

    def read(self, model: Any, batch: TrainBatch) -> tuple[States, Frozen]:
        return batch_states(model, batch, self.k, self.rows), frozen(model)

    # the Companion Protocol, for a rank that only takes part in the reads
    def after_update(self, model: Any, batch: TrainBatch, updates: int) -> dict[str, float]:
        if self.due(updates):
            self.read(model, batch)
        return {}

    def state_dict(self) -> dict[str, Tensor]:
        return {}  # rank 0 publishes the heads (`ShardedPublisher(alone=...)`)

    def save(self, directory: Path) -> None:
        return None  # rank 0 writes mtp.safetensors

    def served(self) -> None:
        return None

    def peer(self) -> Reading:
        return self


class HeadsTrainer:
    """The draft heads, their own optimizer, and the cadence they are re-distilled at:
    the trainer's `Companion` (`rl/companion.py`)."""

    def __init__(self, heads: MTPHeads, cfg: RLDistillConfig, seed: int = 0) -> None:
        self.heads = heads.float().train()
        self.cfg = cfg
        self.reading = Reading(heads.k, cfg.rows, cfg.every)
        self.optimizer = torch.optim.AdamW(heads.parameters(), lr=cfg.lr, weight_decay=0.0)
        self.generator = torch.Generator().manual_seed(seed)  # never the policy's RNG

    def after_update(self, model: Any, batch: TrainBatch, updates: int) -> dict[str, float]:
        """Re-distil after the `updates`-th policy update, if due (`every`)."""
        return self.update(model, batch) if self.reading.due(updates) else {}

    def peer(self) -> Reading:
        """What the other ranks of a sharded trainer hold: the reads, not the heads."""
        return self.reading

    def update(self, model: Any, batch: TrainBatch) -> dict[str, float]:
        """Score the heads on the batch under `model` (the updated policy), then distil."""
        return self.learn(*self.reading.read(model, batch))

    def learn(self, states: States, lm: Frozen) -> dict[str, float]:
        """Score the heads on the read windows, then distil them there."""
        n = len(states.starts)
        if n == 0:  # no generated span of k+1 tokens: nothing to learn from or score
            return {"mtp_windows": 0.0}
        self.heads.eval()  # scored on a sample: the full LM head costs 49k rows per position
        sample = torch.randperm(n, generator=self.generator)[: self.cfg.batch_windows]
        picked = States(states.hidden, states.tokens, states.starts[sample])
        scored = evaluate(self.heads, lm, picked)
        self.heads.train()
        loss = float("nan")
        for _ in range(self.cfg.steps):
            index = torch.randint(n, (min(self.cfg.batch_windows, n),), generator=self.generator)
            value, _ = mtp_distill_loss(*head_and_teacher_logits(self.heads, lm, states, index))
            self.optimizer.zero_grad(set_to_none=True)
            value.backward()
            self.optimizer.step()
            loss = value.item()
        self.optimizer.zero_grad(set_to_none=True)
        self.heads.eval()
        out = {"mtp_windows": float(n), "mtp_loss": loss}
        for j in range(self.heads.k):
            out[f"mtp_accept_{j + 1}"] = scored["chain"][j]
            out[f"mtp_overlap_{j + 1}"] = scored["overlap"][j]
        return out

    def state_dict(self) -> dict[str, Tensor]:
        """The heads' tensors under their published names (`mtp.*`)."""
        return {PREFIX + k: v for k, v in self.heads.state_dict().items()}

    def save(self, directory: Path) -> None:
        """`mtp.safetensors` in a checkpoint: what a resumed run starts from."""
        save_heads(self.heads, directory)

    def served(self) -> MTPHeads:
        """The live heads: the engine builder copies them and drafts with the copy."""
        return self.heads
