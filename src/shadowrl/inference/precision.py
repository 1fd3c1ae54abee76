"""Low-precision rollouts: the engine's Linear layers in int8 (CPU) or FP8 (GPU).

RL stacks roll out in lower precision than they train in (slime and NeMo-RL: FP8
rollouts beside a BF16 trainer) and let the trainer's truncated importance ratio
π_θ / π_behaviour absorb the gap: the engine records the logprobs of the distribution
it actually sampled from, the trainer recomputes them at full precision, and the
ratio corrects (and bounds) the difference. Nothing in the trainer changes.

Each quantised layer keeps the model's own full-precision `weight` Parameter (so
`apply_state` still writes weight swaps into it, under the same names) beside a packed
low-precision copy that `refresh` rebuilds from it after every swap.

- `int8` (CPU): weights int8 per output channel, activations quantised to int8 per row
  at each call, products by `torch._int_mm` (oneDNN, which picks VNNI / AMX / AVX2
  code for the CPU it runs on). Per-row scales keep a row's result independent of its
  batch (PyTorch's dynamic-quantisation Linear shares one activation scale per call, and
  on SmolLM2 its per-token log-ratio to fp32 was ~1.7x larger). int8 rollouts are checked
  for the importance ratios the trainer computes, not for tokens equal to fp32 decoding;
  nor does speculative decoding's exact rule promise tokens equal to int8 plain decoding
  (a verify's float rounding differs from a decode step's, and int8 rounding can turn
  that into a flipped near-tie).
- `fp8` (CUDA, compute capability >= 8.9): weights float8_e4m3 per output channel,
  activations scaled per row, `torch._scaled_mm`. Not run on this project's CPU boxes.

Dense fp32 on CPU may also run its decode-sized products in a C kernel
(`engine.cpu_products`, `native.NativeLinear`): the same maths in fp32, to float
tolerance, reading the live weights at each call, so nothing to refresh.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Protocol, TypeVar

import torch
from torch import Tensor, nn

from shadowrl.inference.native import NativeLinear, native_or

log = logging.getLogger(__name__)

# the CPU instructions bf16 products run on; without them oneDNN emulates bf16 in fp32 code
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})  # int8 dot-product instructions
L = TypeVar("L", bound=nn.Module)  # a layer that stands in for an nn.Linear


class Precision(Protocol):
    """How the engine's Linear layers compute; refreshed after every weight swap."""

    name: str

    def refresh(self, changed: Iterable[Tensor]) -> None:
        """Rebuild the low-precision copies of the layers whose weights are in `changed`."""


class Dense:
    """The model's own Linear layers, in `engine.dtype` (nothing to refresh)."""

    name = "dense"

    def refresh(self, changed: Iterable[Tensor]) -> None:
        pass


class Int8Linear(nn.Module):
    """An nn.Linear whose product runs int8 x int8 -> int32 (`torch._int_mm`).

    Weights: int8 per output channel. Activations: int8 per row (token), quantised at
    each call, so a row's result does not depend on the other rows of its batch.
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight  # the full-precision master copy swaps write into
        self.bias = linear.bias
        self.w8: Tensor
        self.w_scale: Tensor
        self.refresh()

    def refresh(self) -> None:
        w = self.weight.detach().float()
        self.w_scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-12)
        self.w8 = torch.round(w / self.w_scale[:, None]).to(torch.int8).t()  # [in, out] view

    def forward(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, self.in_features)
        scale = (flat.abs().amax(dim=1, keepdim=True) / 127.0).clamp_min(1e-12)
        x8 = (flat / scale).round_().to(torch.int8)
        out = torch._int_mm(x8, self.w8).float().mul_(scale).mul_(self.w_scale)
        if self.bias is not None:
            out = out + self.bias
        return out.view(*x.shape[:-1], self.out_features)


class Fp8Linear(nn.Module):
    """An nn.Linear whose product runs in float8_e4m3 on a GPU (`torch._scaled_mm`)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.w8: Tensor
        self.w_scale: Tensor
        self.refresh()

    def refresh(self) -> None:
        w = self.weight.detach().float()
        scale = (w.abs().amax(dim=1, keepdim=True) / 448.0).clamp_min(1e-12)
        self.w8 = (w / scale).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        self.w_scale = scale.t().contiguous()  # [1, out]

    def forward(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, self.in_features).float()
        scale = (flat.abs().amax(dim=1, keepdim=True) / 448.0).clamp_min(1e-12)
        x8 = (flat / scale).to(torch.float8_e4m3fn)
        out = torch._scaled_mm(  # row-wise scales want a bf16 result
            x8, self.w8, scale_a=scale, scale_b=self.w_scale, out_dtype=torch.bfloat16
        ).to(self.weight.dtype)
        if self.bias is not None:
            out = out + self.bias
        return out.view(*x.shape[:-1], self.out_features)


Quantised = Int8Linear | Fp8Linear


def swap_linears(model: nn.Module, layer: Callable[[nn.Linear], L]) -> list[L]:
    """Every Linear of the decoder (the LM head included) replaced by `layer(linear)`."""
    layers: list[L] = []
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                layers.append(layer(child))
                setattr(parent, child_name, layers[-1])
    return layers


class NativeDense:
    """fp32 CPU Linears as `native.NativeLinear` (the C kernel at decode-sized row
    counts, `F.linear` above); the kernel reads the live weights, so nothing to refresh."""

    name = "dense-native"

    def __init__(self, model: nn.Module) -> None:
        self.layers = swap_linears(model, NativeLinear)

    def refresh(self, changed: Iterable[Tensor]) -> None:
        pass


class Quantized:
    """Every Linear of the decoder (the LM head included) swapped for a quantised one."""

    def __init__(self, model: nn.Module, layer: type[Quantised], name: str) -> None:
        self.name = name
        self.layers: list[Quantised] = swap_linears(model, layer)

    def refresh(self, changed: Iterable[Tensor]) -> None:
        pointers = {t.data_ptr() for t in changed}  # tied weights share one storage
        for layer in self.layers:
            if layer.weight.data_ptr() in pointers:
                layer.refresh()


def build_precision(model: nn.Module, weights: str, cpu_products: str = "torch") -> Precision:
    """The engine's `weights` and `cpu_products` choices applied to `model` (which the
    engine owns)."""
    param = next(model.parameters())
    if weights == "dense":
        return dense(model, cpu_products)
    if weights == "int8":
        if param.device.type != "cpu" or param.dtype != torch.float32:
            raise ValueError("engine.weights 'int8' runs on CPU with float32 activations")
        warn_slow_int8(param.device)
        return Quantized(model, Int8Linear, "int8")
    if weights == "fp8":
        if param.device.type != "cuda" or torch.cuda.get_device_capability(param.device) < (8, 9):
            raise ValueError("engine.weights 'fp8' needs a CUDA GPU of compute capability >= 8.9")
        return Quantized(model, Fp8Linear, "fp8")
    raise ValueError(f"unknown engine.weights {weights!r}; known: dense, int8, fp8")


def dense(model: nn.Module, cpu_products: str) -> Precision:
    """`engine.cpu_products` for dense weights: the C kernel for fp32 on CPU ('native',
    or 'auto' where it builds), else the model's own Linears."""
    param = next(model.parameters())
    if param.device.type != "cpu" or param.dtype != torch.float32:
        return Dense()
    products: Callable[[], Precision] = lambda: NativeDense(model)  # noqa: E731
    return native_or("cpu_products", cpu_products, products, Dense)


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The flags /proc/cpuinfo lists (none where it cannot be read)."""
    try:
        return frozenset(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return frozenset()


def warn_emulated_bf16(device: torch.device, setting: str) -> None:
    """Warn when `setting` asks for bf16 products on a CPU without bf16 instructions: there
    they are emulated, far slower than fp32 (on an AVX2-only EPYC a 512x576 by 576x1536
    matmul took 777 ms in bf16 and 12.9 ms in fp32, one thread)."""
    flags = cpu_flags()
    if device.type == "cpu" and flags and not flags & BF16_FLAGS:
        log.warning(
            "%s: this CPU has no bf16 instructions (%s), so bf16 products are emulated and "
            "much slower than float32 here; use float32",
            setting,
            " or ".join(sorted(BF16_FLAGS)),
        )


def warn_slow_int8(device: torch.device) -> None:
    """Warn when int8 products are asked for on a CPU without int8 dot-product instructions:
    there `torch._int_mm` is far slower than float32 (on an AVX2-only EPYC, one thread, a
    32x576 by 576x1536 product took 39 ms in int8 and 0.81 ms in fp32; at 512 rows 672 vs
    9.6 ms), so int8 rollouts would be slower, not faster."""
    flags = cpu_flags()
    if device.type == "cpu" and flags and not flags & INT8_FLAGS:
        log.warning(
            "engine.weights int8: this CPU has no int8 dot-product instructions (%s), so int8 "
            "products are much slower than float32 here; use dense",
            " or ".join(sorted(INT8_FLAGS)),
        )
