"""The trainer: one optimizer step per batch, each sample seen exactly once.

`Trainer.step(batch)` is the whole algorithm: for every microbatch, one forward to
recompute log π_θ of the tokens, the objective (RL or SFT, chosen once at setup),
backward; then clip the global gradient norm, take one full-parameter AdamW step
and bump `version` — the number the engine stamps on tokens it generates with the
new weights, which is what staleness and importance ratios are measured against.

Gradients are *accumulated* across microbatches without rescaling: every
microbatch's loss is already divided by the batch-wide `token_budget`, so the sum
of microbatch gradients is exactly the gradient of the batch loss. The same holds
across data-parallel ranks (`train.world_size`, see `dp.py`): each rank runs its
share of the microbatches and the ranks sum their gradients before the step. Whether
ranks hold replicas or FSDP shards is `train.parallel`'s strategy (`parallel.py`).
A model trained beside the policy, never into it, is a `Companion` (`companion.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import torch
from torch import Tensor
from torch.distributed.tensor import DTensor

from shadowrl.inference import replaying, routers, warn_emulated_bf16
from shadowrl.rl.batch import MicroBatch, TrainBatch, build_rl_batch
from shadowrl.rl.checkpoint import TrainerState, checkpoint_path
from shadowrl.rl.companion import Companion, build_companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.dp import Leader, Ranks, ShardedPublisher, Spawn
from shadowrl.rl.forward import PolicyLogprobs, enable_checkpointing, token_logprobs
from shadowrl.rl.lora import Adapters
from shadowrl.rl.lora_sync import AdapterSync
from shadowrl.rl.loss import (
    LossStats,
    RolloutGap,
    policy_loss,
    sft_loss,
    sft_stats,
)
from shadowrl.rl.parallel import build_parallel, starting_model
from shadowrl.rl.weights import WeightStore
from shadowrl.seeds import stream_seed
from shadowrl.types import Trajectory

R = TypeVar("R")

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
        is_clip=cfg.loss.is_clip,
        ref_logprobs=ref,
        kl_coef=cfg.loss.kl_coef,
    )


def sft_objective(
    lp: Tensor, ref: Tensor | None, mb: MicroBatch, budget: int, cfg: TrainConfig
) -> tuple[Tensor, LossStats]:
    return sft_loss(lp, mb.loss_mask, token_budget=budget), sft_stats(lp, mb.loss_mask)


OBJECTIVES: dict[str, Objective] = {"rl": rl_objective, "sft": sft_objective}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
HYPER = ("lr", "betas", "eps", "weight_decay")  # AdamW settings that come from the config


class Trainer:
    """Full-parameter AdamW on a Hugging Face causal LM (bf16 mode has no fp32 master copy)."""

    def __init__(
        self,
        model: Any,
        cfg: TrainConfig,
        *,
        objective: Literal["rl", "sft"] = "rl",
        ref_model: Any = None,
        ranks: Ranks | None = None,
        companion: Companion | None = None,
        seed: int = 0,
        spawn: Spawn | None = None,
    ) -> None:
        """`ranks`: set only on ranks 1..N-1 by `dp.py`; rank 0 starts them itself when
        `cfg.world_size > 1` (FSDP makes a group even of one), through `spawn` (default:
        local processes; Ray actors on the Ray backend). `companion` (`build_companion`)
        learns after each update and is published and checkpointed with the weights.
        `seed`: the run seed, whose "trainer" stream (`seeds.py`) seeds the torch RNG."""
        if cfg.loss.kl_coef > 0 and objective == "rl" and ref_model is None:
            raise ValueError("kl_coef > 0 needs a ref_model")
        if cfg.world_size > 1 and ref_model is not None:
            raise ValueError("train.world_size > 1 does not support a reference model yet")
        self.parallel = build_parallel(cfg)
        self.cfg = cfg
        self.model = model.to(DTYPES[cfg.dtype])
        self.lora = Adapters(self.model, cfg.lora) if cfg.lora.enabled else None
        if ranks is None and (cfg.world_size > 1 or self.parallel.sharded):  # FSDP: a group
            # the other ranks of a sharded model join the companion's reads of it
            peer = companion.peer() if companion is not None and self.parallel.sharded else None
            ranks = Leader.start(self.model, cfg, objective, type(self), seed, peer, spawn)
        self.ranks = ranks
        if ranks is not None:
            ranks.sync_params(self.model)
        self.ref_model = ref_model.eval().requires_grad_(False) if ref_model is not None else None
        self.objective = OBJECTIVES[objective]
        self.device = next(model.parameters()).device
        for setting, value in (("train.dtype", cfg.dtype), ("train.autocast", cfg.autocast)):
            if value == "bfloat16":
                warn_emulated_bf16(self.device, f"{setting} bfloat16")
        self.moe_layers = len(routers(model))
        if cfg.activation_checkpointing:
            enable_checkpointing(model)
        # the shared prefix runs the layers a data-dependent number of times: not under FSDP
        self.logprobs = PolicyLogprobs(
            self.model, cfg.logprob_chunk, not self.parallel.sharded, self._temperature(objective)
        )
        self.parallel.shard(self.logprobs, self.model, ranks)
        self.params = [p for p in model.parameters() if p.requires_grad]  # LoRA: adapters only
        lr = cfg.sft.lr if objective == "sft" else cfg.optimizer.lr
        self.optimizer = torch.optim.AdamW(
            self.params,
            lr=lr,
            betas=cfg.optimizer.betas,
            eps=cfg.optimizer.eps,
            weight_decay=cfg.optimizer.weight_decay,
            fused=True,  # one kernel over all tensors: ~5x faster than the per-tensor loop on CPU
        )
        self.companion = companion
        self.step_count = self.version = 0
        self._saved: tuple[Path, int] | None = None  # (root, step) of the last checkpoint written
        self._kept: dict[str, Tensor] | None = None  # `keep`'s weights (this rank's shards)
        torch.manual_seed(stream_seed(seed, "trainer"))  # checkpoints save and restore it

    def step(self, batch: TrainBatch) -> dict[str, float]:
        """Forward/backward every microbatch, clip, one AdamW step, bump `version`."""
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        if isinstance(self.ranks, Leader):
            self.ranks.command("step", batch)
        mine = self.parallel.share(self.ranks, batch.microbatches)
        stats, loss_sum = LossStats.zero(), torch.zeros((), device=self.device)
        gap = RolloutGap()
        for mb in mine:
            if mb is None:  # nothing to learn here, but the other shards' collectives need us
                self.parallel.idle(self.logprobs)
                continue
            mb = mb.to(self.device)
            routes, ref = self._routes(mb), self._ref_logprobs(mb)
            with replaying(self.model, routes):  # MoE: the rollout's experts, backward too
                with self._autocast():
                    lp = self.logprobs(mb.input_ids, mb.loss_mask, share=routes is None)
                loss, s = self.objective(lp, ref, mb, batch.token_budget, self.cfg)
                if self.objective is rl_objective:  # SFT rows have no behaviour policy
                    gap.add(lp, mb.behaviour_logprobs, mb.loss_mask)
                if loss.requires_grad:  # False when no row of the microbatch has a trainable token
                    loss.backward()  # (checkpointed layers re-run their routers here)
            stats, loss_sum = stats + s, loss_sum + loss.detach()
        self.parallel.reduce_grads(self.ranks, self.params)
        if self.ranks is not None:
            stats, loss_sum = self.ranks.all_reduce_stats(stats, loss_sum)
        has_grads = any(p.grad is not None for p in self.params)  # some token was trainable
        grad_norm = self.parallel.clip(self.params, self.cfg.optimizer.grad_clip)
        applied = has_grads and math.isfinite(grad_norm)
        if applied:  # never let one non-finite batch poison the weights
            self.optimizer.step()
            self.step_count += 1
            self.version += 1
        self.optimizer.zero_grad(set_to_none=True)
        aside: dict[str, float] = {}  # after the step, detached: the policy never sees it
        if applied and self.companion is not None:
            with self.parallel.whole(self.logprobs):
                aside = self.companion.after_update(self.model, batch, self.step_count)
        return {
            **batch.stats,
            **aside,
            **stats.to_metrics(),
            **gap.to_metrics(),
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
            max_staleness=self.cfg.batch.max_staleness,
            microbatch_tokens=self.cfg.batch.microbatch_tokens,
            token_budget=self.cfg.batch.token_budget,
            keep_zero_advantage=self.cfg.loss.kl_coef > 0,
            advantage=self.cfg.loss.advantage,
            pad_to_multiple=self.cfg.batch.pad_to_multiple,
        )
        return self.step(batch)

    def state_dict(self) -> dict[str, Tensor]:
        """The weights to publish to the engine (live tensors; the store copies them).

        Tied tensors (lm_head = embed_tokens) appear once: loading one name updates both.
        Under LoRA, the frozen base under the base names and the adapters (`*.lora_a`,
        `*.lora_b`): what `AdapterSync` publishes; `lora.merge` of it is the policy.
        A companion's tensors, if any, come along under its own names.
        Under FSDP the tensors are DTensor shards; each rank publishes its rows (`dp.owned`).
        """
        out, seen = {}, set()
        for name, t in self.model.state_dict().items():
            local = t.to_local() if isinstance(t, DTensor) else t
            key = (local.untyped_storage().data_ptr(), local.storage_offset(), tuple(t.shape))
            if key not in seen:
                seen.add(key)
                out[name] = t
        return out | (self.companion.state_dict() if self.companion is not None else {})

    def publisher(self, store: WeightStore) -> WeightStore | ShardedPublisher | AdapterSync:
        """What publishes this trainer's weights to `store`: under LoRA, the adapters alone
        after a first full base (`lora_sync.py`, rank 0: they are small); else the store
        itself on one rank, and on N ranks one that has every rank write its share."""
        aside = frozenset(self.companion.state_dict() if self.companion is not None else {})
        if not isinstance(self.ranks, Leader):
            return AdapterSync(store, self.lora.scale, aside) if self.lora is not None else store
        shared = ShardedPublisher(self.ranks, store, alone=aside)
        if self.lora is None:
            return shared
        # under FSDP every rank writes its rows of the adapters; replicas: rank 0 alone
        writer = shared if self.parallel.sharded else None
        return AdapterSync(store, self.lora.scale, aside, writer)

    def policy_copy(self, fetch: Callable[[], Mapping[str, Tensor]] | None = None) -> Any:
        """A plain copy of the policy (LoRA merged) for the engine or a later stage; `fetch`
        returns the published state of this version, which a sharded trainer needs."""
        if self.lora is not None and not self.parallel.sharded:
            return self.lora.plain_copy(self.model)
        return self.parallel.policy_copy(self.model, fetch)  # LoRA: `fetch` merges

    # -- reads of the whole model and a kept copy (SFT's validation) ---------------
    def read(self, fn: Callable[..., R], *args: Any) -> R:
        """`fn(model, *args)` outside the training forward, without grad (scoring held-out
        data). Under FSDP every rank runs it, so its forwards are collectives; replicas
        leave it to rank 0. `fn` and `args` travel to the other ranks pickled."""
        if isinstance(self.ranks, Leader) and self.parallel.sharded:
            self.ranks.command("read", fn, args)
        with torch.no_grad(), self.parallel.whole(self.logprobs):
            return fn(self.model, *args)

    def keep(self) -> None:
        """Remember the weights as they are now, on every rank (its shards, under FSDP)."""
        if isinstance(self.ranks, Leader):
            self.ranks.command("keep")
        self._kept = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def restore_kept(self) -> None:
        """Go back to the weights of the last `keep`, on every rank (nothing if none)."""
        if isinstance(self.ranks, Leader):
            self.ranks.command("restore")
        if self._kept is not None:
            self.model.load_state_dict(self._kept)

    def close(self) -> None:
        """Stop the other data-parallel ranks (nothing to do on one rank)."""
        if isinstance(self.ranks, Leader):
            self.ranks.close()
            self.ranks = None

    def _temperature(self, objective: str) -> float:
        """RL scores the rollouts' own distribution; SFT fits the plain softmax."""
        return self.cfg.temperature if objective == "rl" else 1.0

    def _autocast(self) -> Any:
        """bf16 matmuls for `train.autocast` (backward follows the forward's casts)."""
        on = self.cfg.autocast == "bfloat16"
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=on)

    def _routes(self, mb: MicroBatch) -> Tensor | None:
        """[B, T, MoE layers, k] routes to replay (`train.routing_replay`), or None."""
        if mb.routes is None or not self.cfg.routing_replay or not self.moe_layers:
            return None
        return mb.routes.view(*mb.routes.shape[:2], self.moe_layers, -1).long()

    def _ref_logprobs(self, mb: MicroBatch) -> Tensor | None:
        if self.ref_model is None or self.cfg.loss.kl_coef == 0:
            return None
        with torch.inference_mode(), self._autocast():  # the policy's precision: KL 0 at start
            return token_logprobs(
                self.ref_model,
                mb.input_ids,
                mb.loss_mask,
                self.cfg.logprob_chunk,
                temperature=self.logprobs.temperature,
            )

    # -- checkpoints -------------------------------------------------------------
    def save(self, root: str | Path, tokenizer: Any = None) -> Path:
        """Atomic checkpoint of weights (HF dir), optimizer, RNG and counters under `root`."""
        if self._saved == (Path(root), self.step_count):
            # Nothing trained since (e.g. an RL step whose groups all had zero advantage):
            # rewriting the same directory would leave a window where a kill -9 finds it
            # half-deleted while loop_state.json still names it.
            return checkpoint_path(root, self.step_count)
        if isinstance(self.ranks, Leader) and self.parallel.sharded:
            self.ranks.command("save", str(root))  # every rank writes its shards
        state = TrainerState(step=self.step_count, version=self.version)
        path = self.parallel.save(
            Path(root),
            self.model,
            self.optimizer,
            state,
            tokenizer=tokenizer,
            keep=self.cfg.keep_checkpoints,
            extra=self._extra(),
            weights=self._merged(),
        )
        self._saved = (Path(root), self.step_count)
        return path

    def _merged(self) -> dict[str, Tensor] | None:
        """The weights a replicated LoRA checkpoint stores (merged); else the model's own
        (a sharded one stores the frozen base and adapters, `Sharded.save`)."""
        if self.lora is None or self.parallel.sharded:
            return None
        return self.lora.merge(self.model.state_dict())

    def _extra(self) -> Callable[[Path], Any] | None:
        """What is saved beside the weights: the LoRA adapters, the companion's files."""
        writers: list[Callable[[Path], Any]] = [self.lora.save] if self.lora is not None else []
        writers += [self.companion.save] if self.companion is not None else []
        return (lambda d: [w(d) for w in writers]) if writers else None

    def load_state(self, ckpt: str | Path) -> None:
        """Restore weights, optimizer, RNG and counters from a checkpoint directory."""
        if isinstance(self.ranks, Leader):
            self.ranks.command("load", str(ckpt))
        hyper = [{k: g[k] for k in HYPER} for g in self.optimizer.param_groups]
        state = self.parallel.load(Path(ckpt), self.model, self.optimizer)
        if self.lora is not None and not self.parallel.sharded:  # sharded: adapters in DCP
            self.lora.load(Path(ckpt))
        # The moments carry over; the hyper-parameters are this run's config (a resumed run
        # may lower the lr), not the ones pickled with the optimizer.
        for group, own in zip(self.optimizer.param_groups, hyper, strict=True):
            group.update(own)
        self.step_count, self.version = state.step, state.version
        self._saved = (Path(ckpt).parent, state.step)  # that checkpoint is this exact state

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
        model = starting_model(ckpt, cfg.dtype)
        seed = kw.get("seed", 0)
        kw.setdefault("companion", build_companion(cfg, ckpt, resumed=True, seed=seed))
        trainer = cls(model, cfg, objective=objective, **kw)
        trainer.load_state(ckpt)
        return trainer
