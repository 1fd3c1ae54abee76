"""Supervised fine-tuning on demonstration trajectories, through the RL trainer.

Demonstrations come from a scripted expert driven through the real harness, so
they are ordinary `Trajectory` records: the same segments, the same loss mask
(only the assistant's own tokens are learned, never prompts or tool output), the
same packing. SFT is therefore just another objective plugged into `Trainer`.

A warm start for RL must not fit its demonstrations to the last token: a policy whose
every group agrees gives GRPO no advantage to learn from. So `run_sft` can hold out
demonstrations of other tasks (`Validation`), score their NLL every few steps, stop
once it no longer falls, and hand back the weights of the best check; `demo_scores`
also measures the policy's mean per-token entropy there, the exploration it keeps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch import Tensor

from shadowrl.rl.batch import build_sft_batches
from shadowrl.rl.trainer import Trainer
from shadowrl.types import Trajectory

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- scoring held-out demos


@dataclass(frozen=True)
class DemoScore:
    """Teacher-forced figures of a policy on demonstrations it was not trained on."""

    nll: float  # mean −log π(demo token) over the assistant's tokens (nats)
    entropy: float  # mean entropy of π's next-token distribution there (nats, temperature 1)
    tokens: int


def nll_and_entropy(logits: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """logits [N, V], targets [N] -> (summed −log p(target), summed entropy), float32."""
    logp = logits.float().log_softmax(-1)
    nll = -logp.gather(1, targets[:, None])[:, 0]
    entropy = -(logp.exp() * logp).sum(-1)
    return nll.sum(), entropy.sum()


@torch.no_grad()
def demo_scores(
    model: Any, demos: Sequence[Trajectory], *, microbatch_tokens: int = 4096, chunk: int = 256
) -> DemoScore:
    """Mean NLL and entropy of `model` over the generated tokens of `demos`."""
    was_training = model.training
    model.eval()
    decoder, head = model.get_decoder(), model.get_output_embeddings()
    nll = ent = torch.zeros(())
    tokens = 0
    for batch in build_sft_batches(
        demos, batch_tokens=1 << 62, microbatch_tokens=microbatch_tokens
    ):
        for mb in batch.microbatches:
            last = int(mb.loss_mask.any(0).nonzero()[-1])
            hidden = decoder(input_ids=mb.input_ids[:, :last], use_cache=False).last_hidden_state
            picked = mb.loss_mask[:, 1 : last + 1]  # hidden[:, j] predicts token j + 1
            h, targets = hidden[picked], mb.input_ids[:, 1 : last + 1][picked]
            for i in range(0, len(targets), chunk):
                a, b = nll_and_entropy(head(h[i : i + chunk]), targets[i : i + chunk])
                nll, ent = nll + a, ent + b
            tokens += len(targets)
    model.train(was_training)
    n = max(tokens, 1)
    return DemoScore(float(nll) / n, float(ent) / n, tokens)


# ---------------------------------------------------------------- the SFT loop


@dataclass(frozen=True)
class Validation:
    """Early stopping on demonstrations of tasks SFT does not train on."""

    demos: Sequence[Trajectory]
    every: int = 4  # optimizer steps between checks (a check also runs before the first)
    patience: int = 3  # checks without a new best NLL before stopping; 0 = never stop early


@dataclass(frozen=True)
class Check:
    """One validation: the held-out demos' score after `step` optimizer steps."""

    step: int
    score: DemoScore


@dataclass
class SFTRun:
    """What `run_sft` did: per-step metrics, the checks, and which weights it kept."""

    history: list[dict[str, float]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    best_step: int = (
        0  # the kept weights are those after this many steps (the last one without checks)
    )
    stopped: str = "data"  # why it ended: data (one pass done), patience, or budget (wall time)

    @property
    def best(self) -> Check | None:
        return next((c for c in self.checks if c.step == self.best_step), None)


class _Keeper:
    """The weights of the best check so far, in memory on every rank (restored at the end)."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer, self.nll = trainer, float("inf")

    def offer(self, nll: float) -> bool:
        if nll >= self.nll:
            return False
        self.nll = nll
        self.trainer.keep()
        return True

    def restore(self) -> None:
        self.trainer.restore_kept()


def run_sft(
    trainer: Trainer,
    demonstrations: Sequence[Trajectory],
    *,
    epochs: int,
    batch_tokens: int,
    validation: Validation | None = None,
    budget_s: float | None = None,
    on_step: Callable[[dict[str, float]], None] | None = None,
    on_check: Callable[[Check], None] | None = None,
) -> SFTRun:
    """Train `trainer` (built with objective="sft") for up to `epochs` passes.

    With `validation`, the held-out demos are scored before the first step and every
    `validation.every` steps; training stops after `patience` checks without a new best
    NLL, and the model is left with the best check's weights. `budget_s` stops it once
    that much wall time has passed (checked after each step)."""
    cfg = trainer.cfg
    batches = build_sft_batches(
        demonstrations,
        batch_tokens=batch_tokens,
        microbatch_tokens=cfg.batch.microbatch_tokens,
        pad_to_multiple=cfg.batch.pad_to_multiple,
    )
    run, keeper, started = SFTRun(), _Keeper(trainer), time.monotonic()
    score = partial(demo_scores, microbatch_tokens=cfg.batch.microbatch_tokens)
    steps = [(epoch, b) for epoch in range(epochs) for b in batches]

    def check(done: int) -> bool:
        """Score the held-out demos after `done` steps; True = stop (patience spent)."""
        assert validation is not None
        result = trainer.read(score, validation.demos)  # under FSDP, on every rank
        run.checks.append(Check(done, result))
        if keeper.offer(result.nll):
            run.best_step = done
        log.info(
            "sft check at step %d: held-out nll=%.4f entropy=%.3f", done, result.nll, result.entropy
        )
        if on_check is not None:
            on_check(run.checks[-1])
        stale = sum(1 for c in run.checks if c.step > run.best_step)
        return validation.patience > 0 and stale >= validation.patience

    if validation is not None:
        check(0)  # the starting point: SFT may only make the held-out demos worse
    for i, (epoch, batch) in enumerate(steps, start=1):
        metrics = {"epoch": float(epoch), **trainer.step(batch)}
        run.history.append(metrics)
        log.info("sft step %d nll=%.4f", trainer.step_count, metrics["nll"])
        if on_step is not None:
            on_step(metrics)
        over = budget_s is not None and time.monotonic() - started >= budget_s
        due = validation is not None and (i % validation.every == 0 or i == len(steps) or over)
        if due and check(i):
            run.stopped = "patience"
            break
        if over:
            run.stopped = "budget"
            break
    if validation is None:
        run.best_step = len(run.history)
    else:
        keeper.restore()
    return run
