"""How the data-parallel ranks hold the model: `train.parallel`, built once by `build_parallel`.

The trainer asks its strategy everything that depends on where the weights live: which
microbatches this rank runs, how gradients meet, how the global norm is clipped, how a
checkpoint is written and read back, and what model the engine starts from.

- `Replicate` (`replicate`, and every run on one rank): a full replica per rank; the
  gradients are all-reduced after backward (`dp.py`); rank 0 writes the checkpoint.
- `Sharded` (`fsdp`, `hsdp`, in `fsdp.py`): PyTorch FSDP2; parameters, gradients and
  AdamW state are split over the ranks, so every rank takes part in every forward,
  backward, gather and checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from shadowrl.models import load_checkpoint
from shadowrl.rl.batch import MicroBatch
from shadowrl.rl.checkpoint import TrainerState, load_training_state, save_checkpoint
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.dp import Ranks

# (input_ids [B, T], loss_mask [B, T]) -> token logprobs [B, T]: the trainer's forward
Forward = Callable[[Tensor, Tensor], Tensor]


class Parallel(Protocol):
    """One data-parallel layout of the trained model."""

    # every rank holds part of each tensor: all ranks run every forward/backward, gather
    # and checkpoint together (rank 0 sends the others the commands, `dp.py`)
    sharded: bool

    def shard(self, root: nn.Module, model: Any, ranks: Ranks | None) -> None:
        """Lay out `model` (already identical on every rank) inside `root`, the trainer's
        forward module, in place."""
        ...

    def share(self, ranks: Ranks | None, mbs: Sequence[MicroBatch]) -> list[MicroBatch | None]:
        """This rank's microbatches; None: take part in the collectives, add no gradient."""
        ...

    def idle(self, forward: Forward) -> None:
        """A forward and backward that adds nothing (for a None of `share`)."""
        ...

    def whole(self, root: nn.Module) -> AbstractContextManager[None]:
        """Inside it, every rank may run the model's own modules outside `root`'s forward
        (a companion reading the updated policy): under FSDP each rank enters it at once,
        and each forward inside it is a collective every rank runs."""
        ...

    def reduce_grads(self, ranks: Ranks | None, params: Sequence[Tensor]) -> None: ...

    def clip(self, params: Sequence[Tensor], max_norm: float) -> float:
        """Clip the global gradient norm; return it before clipping."""
        ...

    def save(
        self,
        root: Path,
        model: Any,
        optimizer: torch.optim.Optimizer,
        state: TrainerState,
        *,
        tokenizer: Any = None,
        keep: int = 2,
        extra: Callable[[Path], Any] | None = None,
        weights: Mapping[str, Tensor] | None = None,
    ) -> Path:
        """Checkpoint `state.step` under `root` (`checkpoint.py`'s layout); `extra` writes
        more files into it, `weights` replace the model's own (merged LoRA)."""
        ...

    def load(self, ckpt: Path, model: Any, optimizer: torch.optim.Optimizer) -> TrainerState:
        """Weights, optimizer moments, RNG and counters from `ckpt` (all ranks)."""
        ...

    def policy_copy(self, model: Any, fetch: Callable[[], Mapping[str, Tensor]] | None) -> Any:
        """A plain model of the current weights for the engine; `fetch` returns the
        published full state (`WeightStore.fetch` of the current version)."""
        ...


class Replicate:
    """A full replica per rank (one rank: no collectives at all)."""

    sharded = False

    def shard(self, root: nn.Module, model: Any, ranks: Ranks | None) -> None:
        return None

    def share(self, ranks: Ranks | None, mbs: Sequence[MicroBatch]) -> list[MicroBatch | None]:
        return list(ranks.share(mbs) if ranks is not None else mbs)

    def idle(self, forward: Forward) -> None:
        return None  # replicas run no collective in forward or backward

    def whole(self, root: nn.Module) -> AbstractContextManager[None]:
        return contextlib.nullcontext()  # each replica holds the whole model

    def reduce_grads(self, ranks: Ranks | None, params: Sequence[Tensor]) -> None:
        if ranks is not None:
            ranks.all_reduce_grads(params)

    def clip(self, params: Sequence[Tensor], max_norm: float) -> float:
        grads = [p for p in params if p.grad is not None]
        if not grads:
            return 0.0
        return float(torch.nn.utils.clip_grad_norm_(grads, max_norm or math.inf))

    def save(
        self,
        root: Path,
        model: Any,
        optimizer: torch.optim.Optimizer,
        state: TrainerState,
        *,
        tokenizer: Any = None,
        keep: int = 2,
        extra: Callable[[Path], Any] | None = None,
        weights: Mapping[str, Tensor] | None = None,
    ) -> Path:
        return save_checkpoint(
            root, model, optimizer, state, tokenizer=tokenizer, keep=keep, extra=extra,
            weights=weights,
        )  # fmt: skip

    def load(self, ckpt: Path, model: Any, optimizer: torch.optim.Optimizer) -> TrainerState:
        from safetensors.torch import load_model

        load_model(model, str(ckpt / "model.safetensors"), strict=False)
        return load_training_state(ckpt, optimizer)

    def policy_copy(self, model: Any, fetch: Callable[[], Mapping[str, Tensor]] | None) -> Any:
        return copy.deepcopy(model).eval()


def build_parallel(cfg: TrainConfig) -> Parallel:
    """The strategy `cfg.parallel` names."""
    if cfg.parallel == "replicate":
        return Replicate()
    from shadowrl.rl.fsdp import Sharded, mixed_precision

    shard_size = cfg.shard_size if cfg.parallel == "hsdp" else cfg.world_size
    return Sharded(cfg.world_size, shard_size, mixed_precision(cfg.autocast))


def starting_model(ckpt: str | Path, dtype: str) -> Any:
    """The model a checkpoint resumes from: its weights, or for a sharded checkpoint (no
    single weights file) its architecture, whose weights the strategy's `load` fills."""
    from shadowrl.rl.fsdp import empty_model, is_sharded

    if is_sharded(ckpt):
        return empty_model(ckpt, dtype)
    return load_checkpoint(ckpt, dtype)
