"""Sharded training with PyTorch FSDP2 (`fully_shard`): `train.parallel: fsdp | hsdp`.

Each decoder layer is one FSDP unit, and so is an untied input embedding; the
trainer's forward module (the root) holds the rest: the final norm and the LM head
(with the embedding when tied), so `token_logprobs`, which reads `lm_head.weight`
outside any layer, runs inside the root's forward, where FSDP has gathered them. Outside a forward every parameter is a
DTensor shard, so everything that wants plain tensors gets them here: each rank
publishes the rows it holds to the weight store (`dp.held_rows`, no gather) and readers
assemble full tensors, checkpoints are torch distributed checkpoints (each rank writes
its shards), the engine starts from the published full state.

FSDP's collectives run inside forward and backward, so every rank runs the same
number of them: a rank short of microbatches (or handed one with no trainable token)
runs a two-token forward/backward whose loss is multiplied by 0. The shared-prefix KV
repeat of `decoder_hidden` would run the layers a data-dependent number of times, so
it is off here. Gradients are reduced as a sum (divide factor 1), as `dp.py` does:
each microbatch's loss is already divided by the batch-wide token budget.

Mixed precision (`train.autocast: bfloat16`) is FSDP2's `MixedPrecisionPolicy` here, on
top of the trainer's autocast: shards (the AdamW master weights) stay in `train.dtype`,
each unit is all-gathered and computes in bf16 (half the gather bytes and unsharded
memory), and gradients are reduce-scattered in float32, so the sum over ranks is not
rounded to bf16 before AdamW reads it.

`hsdp` shards over groups of `shard_size` ranks and replicates across groups (a 2-D
device mesh: replicate x shard); FSDP all-reduces the shard-group gradients across
the replicas.
"""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import Tensor, nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from shadowrl.rl.batch import MicroBatch
from shadowrl.rl.checkpoint import (
    TrainerState,
    begin,
    checkpoint_path,
    commit,
    load_counters,
    tmp_path,
    write_counters,
)
from shadowrl.rl.dp import Ranks
from shadowrl.rl.lora import ADAPTERS, merge_saved

DCP_DIR = "dcp"  # the sharded model and optimizer state inside a checkpoint directory
# beside the shards, what only a resume reads (the rest -- config, tokenizer -- is exported)
TRAINING_ONLY = frozenset({DCP_DIR, "rng.pt", "trainer_state.json", "optimizer.pt"})


class Sharded:
    """FSDP2 over all ranks (`shard_size == world_size`) or HSDP over groups of them."""

    sharded = True

    def __init__(
        self, world_size: int, shard_size: int, mp: MixedPrecisionPolicy | None = None
    ) -> None:
        self.world_size, self.shard_size = world_size, shard_size
        self.mp = mp or MixedPrecisionPolicy()  # the default: every dtype as the shards'
        self.template: tuple[type, Any] | None = None  # the unsharded model's class, config

    def mesh(self, device: str) -> DeviceMesh:
        if self.shard_size == self.world_size:
            return init_device_mesh(device, (self.world_size,), mesh_dim_names=("shard",))
        shape = (self.world_size // self.shard_size, self.shard_size)
        return init_device_mesh(device, shape, mesh_dim_names=("replicate", "shard"))

    def shard(self, root: nn.Module, model: Any, ranks: Ranks | None) -> None:
        self.template = (type(model), model.config)
        mesh, mp = self.mesh(next(model.parameters()).device.type), self.mp
        for layer in model.get_decoder().layers:
            fully_shard(layer, mesh=mesh, mp_policy=mp)
        embed = model.get_input_embeddings()
        if embed.weight is not model.get_output_embeddings().weight:  # tied: in the root
            fully_shard(embed, mesh=mesh, mp_policy=mp)  # gathered only while the decoder embeds
        fully_shard(root, mesh=mesh, mp_policy=mp)
        for m in root.modules():
            if isinstance(m, FSDPModule):  # a sum over ranks, as the replicas' all-reduce
                m.set_gradient_divide_factor(1.0)
                m.set_force_sum_reduction_for_comms(True)  # gloo has no PREMUL_SUM

    def share(self, ranks: Ranks | None, mbs: Sequence[MicroBatch]) -> list[MicroBatch | None]:
        n = ranks.world_size if ranks is not None else 1
        mine = list(ranks.share(mbs) if ranks is not None else mbs)
        padded: list[MicroBatch | None] = [m if _trainable(m) else None for m in mine]
        return padded + [None] * (math.ceil(len(mbs) / n) - len(mine))

    def idle(self, forward: Callable[[Tensor, Tensor], Tensor]) -> None:
        ids = torch.zeros(1, 2, dtype=torch.long)
        lp = forward(ids, torch.tensor([[False, True]]))
        (lp.sum() * 0).backward()

    @contextlib.contextmanager
    def whole(self, root: nn.Module) -> Iterator[None]:
        # the root's own parameters (final norm, a tied embedding) are gathered only by its
        # forward's hook: gather them for the span; the layers' hooks gather their own
        assert isinstance(root, FSDPModule)
        # before any training forward (SFT's first check), FSDP has not yet marked the root
        # as the root: do it now, as the root's first forward would (a no-op after one)
        root._get_fsdp_state()._lazy_init()
        root.unshard()
        try:
            yield
        finally:
            root.reshard()

    def reduce_grads(self, ranks: Ranks | None, params: Sequence[Tensor]) -> None:
        return None  # FSDP reduce-scattered them in backward

    def clip(self, params: Sequence[Tensor], max_norm: float) -> float:
        live = [p for p in params if p.grad is not None]
        if not live:
            return 0.0
        norm = torch.nn.utils.get_total_norm([g for p in live if (g := p.grad) is not None])
        if isinstance(norm, DTensor):  # this rank's partial norm -> the global one
            norm = norm.full_tensor()
        torch.nn.utils.clip_grads_with_norm_(live, max_norm or math.inf, norm)
        return float(norm)

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
        """All ranks: rank 0 prepares the directory and writes the config, RNG and
        counters; every rank writes its shards and runs `extra` (LoRA's adapters: a
        gather, written by rank 0); rank 0 commits it (`checkpoint.py`). The model is
        saved as it is held, so under LoRA the shards are the frozen base and the
        adapters, merged by `full_model`."""
        if weights is not None:
            raise ValueError("a sharded checkpoint holds the model's own tensors, not `weights`")
        rank = dist.get_rank()
        if rank == 0:
            tmp = begin(root, state.step)
            model.config.save_pretrained(tmp)
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            write_counters(tmp, state)
        dist.barrier()
        tmp = tmp_path(root, state.step)
        if extra is not None:
            extra(tmp)
        msd, osd = get_state_dict(model, optimizer)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(tmp / DCP_DIR))
        dist.barrier()
        path = commit(root, state.step, keep) if rank == 0 else checkpoint_path(root, state.step)
        dist.barrier()  # no rank returns before the checkpoint is in place
        return path

    def load(self, ckpt: Path, model: Any, optimizer: torch.optim.Optimizer) -> TrainerState:
        msd, osd = get_state_dict(model, optimizer)
        sd: dict[str, Any] = {"model": msd, "optim": osd}
        dcp.load(sd, checkpoint_id=str(Path(ckpt) / DCP_DIR))
        set_state_dict(model, optimizer, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
        return load_counters(ckpt)

    def policy_copy(self, model: Any, fetch: Callable[[], Mapping[str, Tensor]] | None) -> Any:
        assert self.template is not None and fetch is not None, "a sharded copy needs fetch"
        cls, config = self.template
        state = dict(fetch())
        copy = cls(config).to(next(iter(state.values())).dtype)
        copy.load_state_dict(state, strict=False)  # tied tensors are published once
        return copy.eval()


def mixed_precision(autocast: str) -> MixedPrecisionPolicy:
    """FSDP2's policy for `train.autocast`: 'bfloat16' gathers and computes in bf16 and
    reduces gradients in float32; 'none' keeps every dtype as the shards' (`train.dtype`)."""
    if autocast == "bfloat16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    return MixedPrecisionPolicy()


def _trainable(mb: MicroBatch) -> bool:
    """Does `token_logprobs` run the decoder for `mb` (a masked token after position 0)?"""
    return bool(mb.loss_mask[:, 1:].any())


def is_sharded(ckpt: str | Path) -> bool:
    """Is `ckpt` a sharded checkpoint (a torch distributed checkpoint, no weights file)?"""
    return not (Path(ckpt) / "model.safetensors").exists() and (Path(ckpt) / DCP_DIR).is_dir()


def full_model(ckpt: str | Path, dtype: str = "float32") -> Any:
    """The plain model of a sharded checkpoint, read whole in this process (no process
    group: DCP reassembles every tensor from the ranks' shards), in `dtype`, eval mode;
    a LoRA run's adapters merged into it."""
    model = empty_model(ckpt, dtype)
    state = model.state_dict()  # the model's own tensors: DCP loads into them in place
    # no_dist: this process alone, even one that is rank 0 of a live group
    dcp.load({"model": state}, checkpoint_id=str(Path(ckpt) / DCP_DIR), no_dist=True)
    if (Path(ckpt) / ADAPTERS).exists():  # a LoRA run: the shards hold the frozen base
        merge_saved(model, Path(ckpt))
    return model.eval()


def policy_of(ckpt: str | Path, dtype: str = "float32") -> Any:
    """The plain policy any trainer checkpoint holds: a sharded one read whole
    (`full_model`), else its weights file."""
    from shadowrl.models import load_checkpoint

    return full_model(ckpt, dtype) if is_sharded(ckpt) else load_checkpoint(ckpt, dtype)


def export_checkpoint(ckpt: str | Path, out: str | Path, dtype: str = "float32") -> Path:
    """A sharded checkpoint -> a Hugging Face directory (`config.json`, `model.safetensors`,
    the tokenizer saved with it) that `from_pretrained`, the engine and vLLM load."""
    ckpt, out = Path(ckpt), Path(out)
    model = full_model(ckpt, dtype)
    out.mkdir(parents=True, exist_ok=True)
    for f in ckpt.iterdir():
        if f.is_file() and f.name not in TRAINING_ONLY:
            shutil.copy2(f, out / f.name)
    model.save_pretrained(out)
    return out


def empty_model(ckpt: str | Path, dtype: str) -> Any:
    """The architecture saved in `ckpt` with random weights, for a sharded load to fill."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(Path(ckpt), local_files_only=True)
    return AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
