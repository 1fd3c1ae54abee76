"""The trainer: one optimizer step per batch, each sample seen exactly once.

`Trainer.step(batch)` is the whole algorithm: for every microbatch, one forward to
recompute log π_θ of the tokens, the objective (RL or SFT, chosen once at setup),
backward; then clip the global gradient norm, take one full-parameter AdamW step
and bump `version` — the number the engine stamps on tokens it generates with the
new weights, which is what staleness and importance ratios are measured against.

Gradients are *accumulated* across microbatches without rescaling: every
microbatch's loss is already divided by the batch-wide `token_budget`, so the sum
of microbatch gradients is exactly the gradient of the batch loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor

from shadowrl.rl.batch import MicroBatch, TrainBatch, build_rl_batch
from shadowrl.rl.checkpoint import TrainerState, load_training_state, save_checkpoint
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.loss import LossStats, policy_loss, sequence_token_logprobs
from shadowrl.rl.sft import sft_loss, sft_stats
from shadowrl.types import Trajectory

# (logprobs [B,T], ref_logprobs [B,T] | None, microbatch, token_budget, cfg) -> (loss, stats)
Objective = Callable[
    [Tensor, Tensor | None, MicroBatch, int, TrainConfig], tuple[Tensor, LossStats]
]


def rl_objective(
    lp: Tensor, ref: Tensor | None, mb: MicroBatch, budget: int, cfg: TrainConfig
) -> tuple[Tensor, LossStats]:
    return policy_loss(
        lp,
        mb.behaviour_logprobs,
        mb.advantages,
        mb.loss_mask,
        token_budget=budget,
        is_clip=cfg.is_clip,
        ref_logprobs=ref,
        kl_coef=cfg.kl_coef,
    )


def sft_objective(
    lp: Tensor, ref: Tensor | None, mb: MicroBatch, budget: int, cfg: TrainConfig
) -> tuple[Tensor, LossStats]:
    return sft_loss(lp, mb.loss_mask, token_budget=budget), sft_stats(lp, mb.loss_mask)


OBJECTIVES: dict[str, Objective] = {"rl": rl_objective, "sft": sft_objective}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def token_logprobs(model: Any, input_ids: Tensor, chunk: int = 1024) -> Tensor:
    """One forward: input_ids [B, T] -> log π(token_t | tokens_<t) [B, T] (0 at t = 0)."""
    logits = model(input_ids=input_ids, use_cache=False).logits
    return sequence_token_logprobs(logits, input_ids, chunk)


class Trainer:
    """Full-parameter AdamW on a Hugging Face causal LM (bf16 mode has no fp32 master copy)."""

    def __init__(
        self,
        model: Any,
        cfg: TrainConfig,
        *,
        objective: Literal["rl", "sft"] = "rl",
        ref_model: Any = None,
    ) -> None:
        if cfg.kl_coef > 0 and objective == "rl" and ref_model is None:
            raise ValueError("kl_coef > 0 needs a ref_model")
        self.cfg = cfg
        self.model = model.to(DTYPES[cfg.dtype])
        self.ref_model = ref_model.eval().requires_grad_(False) if ref_model is not None else None
        self.objective = OBJECTIVES[objective]
        self.device = next(model.parameters()).device
        self.params = [p for p in model.parameters() if p.requires_grad]
        lr = cfg.sft_lr if objective == "sft" else cfg.lr
        self.optimizer = torch.optim.AdamW(
            self.params, lr=lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
        self.step_count = 0
        self.version = 0
        torch.manual_seed(cfg.seed)

    def step(self, batch: TrainBatch) -> dict[str, float]:
        """Forward/backward every microbatch, clip, one AdamW step, bump `version`."""
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        stats, loss_sum = LossStats.zero(), torch.zeros((), device=self.device)
        for mb in batch.microbatches:
            mb = mb.to(self.device)
            lp = token_logprobs(self.model, mb.input_ids, self.cfg.logprob_chunk)
            loss, s = self.objective(lp, self._ref_logprobs(mb), mb, batch.token_budget, self.cfg)
            loss.backward()
            stats, loss_sum = stats + s, loss_sum + loss.detach()
        grad_norm = self._clip()
        applied = bool(batch.microbatches) and math.isfinite(grad_norm)
        if applied:  # never let one non-finite batch poison the weights
            self.optimizer.step()
            self.step_count += 1
            self.version += 1
        self.optimizer.zero_grad(set_to_none=True)
        return {
            **batch.stats,
            **stats.to_metrics(),
            "loss": float(loss_sum),
            "grad_norm": grad_norm,
            "skipped": float(not applied),
            "microbatches": float(len(batch.microbatches)),
            "lr": float(self.optimizer.param_groups[0]["lr"]),
            "step": float(self.step_count),
            "version": float(self.version),
        }

    def train_groups(self, groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
        """Scored rollout groups -> one RL step (staleness filter and packing from `cfg`)."""
        batch = build_rl_batch(
            groups,
            trainer_version=self.version,
            max_staleness=self.cfg.max_staleness,
            microbatch_tokens=self.cfg.microbatch_tokens,
            token_budget=self.cfg.token_budget,
            keep_zero_advantage=self.cfg.kl_coef > 0,
            pad_to_multiple=self.cfg.pad_to_multiple,
        )
        return self.step(batch)

    def state_dict(self) -> dict[str, Tensor]:
        """The weights to publish to the engine (live tensors; the store copies them).

        Tied tensors (lm_head = embed_tokens) appear once: loading one name updates both.
        """
        out, seen = {}, set()
        for name, t in self.model.state_dict().items():
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
            if key not in seen:
                seen.add(key)
                out[name] = t
        return out

    def _ref_logprobs(self, mb: MicroBatch) -> Tensor | None:
        if self.ref_model is None or self.cfg.kl_coef == 0:
            return None
        with torch.no_grad():
            return token_logprobs(self.ref_model, mb.input_ids, self.cfg.logprob_chunk)

    def _clip(self) -> float:
        grads = [p for p in self.params if p.grad is not None]
        if not grads:
            return 0.0
        max_norm = self.cfg.grad_clip if self.cfg.grad_clip > 0 else math.inf
        return float(torch.nn.utils.clip_grad_norm_(grads, max_norm))

    # -- checkpoints -------------------------------------------------------------
    def save(self, root: str | Path, tokenizer: Any = None) -> Path:
        """Atomic checkpoint of weights (HF dir), optimizer, RNG and counters under `root`."""
        state = TrainerState(step=self.step_count, version=self.version)
        return save_checkpoint(
            root,
            self.model,
            self.optimizer,
            state,
            tokenizer=tokenizer,
            keep=self.cfg.keep_checkpoints,
        )

    def load_state(self, ckpt: str | Path) -> None:
        """Restore weights, optimizer, RNG and counters from a checkpoint directory."""
        from safetensors.torch import load_model

        load_model(self.model, str(Path(ckpt) / "model.safetensors"), strict=False)
        state = load_training_state(ckpt, self.optimizer)
        self.step_count, self.version = state.step, state.version

    @classmethod
    def resume(
        cls,
        ckpt: str | Path,
        cfg: TrainConfig,
        *,
        objective: Literal["rl", "sft"] = "rl",
        **kw: Any,
    ) -> Trainer:
        """Rebuild model and trainer from a checkpoint written by `save`."""
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=DTYPES[cfg.dtype])
        trainer = cls(model, cfg, objective=objective, **kw)
        trainer.load_state(ckpt)
        return trainer
