"""LoRA RL: `train.lora`. The base weights stay frozen; only low-rank adapters train.

Each targeted `nn.Linear` (by the last part of its name: `q_proj`, `down_proj`, …)
becomes a `LoRALinear` that keeps its frozen `weight` and `bias` under the same names
and adds `lora_a` [r, in] (Kaiming-uniform, as PEFT) and `lora_b` [out, r] (zeros, so
step 0 is the base model): y = x Wᵀ + b + (α/r)·x Aᵀ Bᵀ. The trainer's optimizer takes
the parameters that require a gradient, which are then the adapters alone.

Everything outside the trainer sees the merged model, W + (α/r)·B A, under the base
names: the engine's starting copy (`plain_copy`), a checkpoint's `model.safetensors`,
which Hugging Face and vLLM load as is, and what the engine loads at each sync. The
sync itself carries the adapters, not merged weights: the base once, then A and B per
version, merged on the engine's side (`lora_sync.py`). The adapters are saved beside it (`lora.safetensors`); a resumed run
recovers the frozen base as merged − (α/r)·B A, exact up to float32 rounding.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.distributed.tensor import DTensor

from shadowrl.rl.config import LoRAConfig

ADAPTERS = "lora.safetensors"


class LoRALinear(nn.Linear):
    """A frozen linear layer plus a trainable rank-`r` update scaled by α/r."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        nn.Module.__init__(self)  # take the base's tensors as they are, no re-initialisation
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight = nn.Parameter(base.weight.detach(), requires_grad=False)
        if base.bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = nn.Parameter(base.bias.detach(), requires_grad=False)
        dtype, device = base.weight.dtype, base.weight.device
        self.lora_a = nn.Parameter(torch.empty(rank, self.in_features, dtype=dtype, device=device))
        self.lora_b = nn.Parameter(torch.zeros(self.out_features, rank, dtype=dtype, device=device))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale

    def delta(self) -> Tensor:
        """(α/r)·B A [out, in]: what the adapter adds to the weight."""
        return delta(self.lora_a, self.lora_b, self.scale)


ADAPTER_KEYS = ("lora_a", "lora_b")


def is_adapter(name: str) -> bool:
    """Whether a state key is an adapter's (`<layer>.lora_a` / `.lora_b`)."""
    return name.rsplit(".", 1)[-1] in ADAPTER_KEYS


def delta(a: Tensor, b: Tensor, scale: float) -> Tensor:
    """(α/r)·B A [out, in] from A [r, in] and B [out, r]: the one merge formula (the
    trainer's layers and the weight readers, `lora_sync.py`)."""
    return (b @ a) * scale


class Adapters:
    """The LoRA layers of one model: apply, merge, save and restore them."""

    def __init__(self, model: nn.Module, cfg: LoRAConfig) -> None:
        targets = set(cfg.target_modules)
        names = [
            n
            for n, m in model.named_modules()
            if type(m) is nn.Linear and n.rsplit(".", 1)[-1] in targets
        ]
        if not names:
            raise ValueError(f"train.lora.target_modules {sorted(targets)} match no nn.Linear")
        model.requires_grad_(False)
        self.scale = cfg.alpha / cfg.rank
        self.layers: dict[str, LoRALinear] = {}
        for name in names:
            parent, _, leaf = name.rpartition(".")
            owner = model.get_submodule(parent)
            layer = LoRALinear(getattr(owner, leaf), cfg.rank, cfg.alpha)
            setattr(owner, leaf, layer)
            self.layers[name] = layer

    def merge(self, state: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """A model state (with `lora_*` entries) -> the merged weights under the base names."""
        out = {k: v for k, v in state.items() if not is_adapter(k)}
        with torch.no_grad():
            for name, layer in self.layers.items():
                out[f"{name}.weight"] = layer.weight + layer.delta()
        return out

    def save(self, directory: Path) -> None:
        """Write the adapters, with α/r, to `directory` (rank 0). Under FSDP every rank
        calls this: each adapter is gathered whole (a collective), r·(in + out) per layer,
        small beside the base, which stays sharded in the torch distributed checkpoint."""
        from safetensors.torch import save_file

        tensors = {
            f"{name}.{p}": _whole(getattr(layer, p)).contiguous()
            for name, layer in self.layers.items()
            for p in ADAPTER_KEYS
        }
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_file(tensors, str(directory / ADAPTERS), metadata={"scale": repr(self.scale)})

    def load(self, directory: Path) -> None:
        """Adapters from `directory`, after its merged weights were loaded into the frozen
        ones: take the adapters' share back out of them."""
        from safetensors.torch import load_file

        tensors = load_file(str(directory / ADAPTERS))
        with torch.no_grad():
            for name, layer in self.layers.items():
                layer.lora_a.copy_(tensors[f"{name}.lora_a"])
                layer.lora_b.copy_(tensors[f"{name}.lora_b"])
                layer.weight.sub_(layer.delta())

    def plain_copy(self, model: nn.Module) -> Any:
        """A copy of `model` with every adapter merged into a plain `nn.Linear`."""
        out = copy.deepcopy(model)
        with torch.no_grad():
            for name, layer in self.layers.items():
                parent, _, leaf = name.rpartition(".")
                plain = nn.Linear(layer.in_features, layer.out_features, layer.bias is not None)
                plain = plain.to(layer.weight.dtype)
                plain.weight.copy_(layer.weight + layer.delta())
                if layer.bias is not None:
                    plain.bias.copy_(layer.bias)
                setattr(out.get_submodule(parent), leaf, plain)
        return out.eval()


def _whole(t: Tensor) -> Tensor:
    return (t.full_tensor() if isinstance(t, DTensor) else t).detach()


def merge_saved(model: nn.Module, directory: Path) -> None:
    """Add the adapters saved in `directory` (`Adapters.save`) onto `model`'s plain
    Linear weights in place: a sharded checkpoint holds the frozen base, and its
    readers (`fsdp.full_model`, export) want the policy, base + (α/r)·B A."""
    from safetensors import safe_open

    with safe_open(str(directory / ADAPTERS), "pt") as f:
        scale = float((f.metadata() or {})["scale"])
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
    with torch.no_grad():
        for name in (k.removesuffix(".lora_a") for k in tensors if k.endswith(".lora_a")):
            w: Tensor = model.get_submodule(name).weight  # type: ignore[assignment]
            a, b = tensors[f"{name}.lora_a"].float(), tensors[f"{name}.lora_b"].float()
            w.copy_((w.float() + delta(a, b, scale)).to(w.dtype))
