"""The KV cache: one fixed slot per running sequence, kept packed at the front.

Slot i holds the keys/values of the i-th running sequence, so a decode step reads the
first B slots as a plain view, with no gather. When a sequence leaves, the last slot is
moved into its hole (one copy of one sequence) to keep the batch packed. Capacity along
the time axis starts small and doubles on demand, so a CPU run with short prompts does
not reserve `max_batch * max_seq_len` of memory up front. CUDA graphs bake in addresses,
so with graphs the engine allocates the full capacity at once and the cache never moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig


@dataclass(frozen=True)
class Shape:
    """The attention geometry of a decoder (`forward.Decoder.shape`), which sizes the cache."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int


class KVCache:
    """Per-layer key and value buffers of shape [slots, kv_heads, capacity, head_dim]."""

    def __init__(
        self,
        *,
        layers: int,
        slots: int,
        kv_heads: int,
        head_dim: int,
        capacity: int,
        max_capacity: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        shape = (slots, kv_heads, min(capacity, max_capacity), head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(layers)]
        self.max_capacity = max_capacity

    @classmethod
    def for_engine(
        cls, shape: Shape, config: EngineConfig, param: Tensor, *, graphs: bool
    ) -> KVCache:
        """`config.max_batch` slots for a model of `shape` on `param`'s
        dtype and device; all of `max_seq_len` at once under CUDA graphs."""
        return cls(
            layers=shape.layers, slots=config.max_batch, kv_heads=shape.kv_heads,
            head_dim=shape.head_dim, max_capacity=config.max_seq_len,
            capacity=config.max_seq_len if graphs else config.initial_kv_len,
            dtype=param.dtype, device=param.device,
        )  # fmt: skip

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[2]

    def reserve(self, length: int) -> None:
        """Make room for `length` positions per slot (doubling; never above the maximum)."""
        if length <= self.capacity:
            return
        if length > self.max_capacity:
            raise ValueError(f"sequence of {length} tokens exceeds max_seq_len {self.max_capacity}")
        new = self.capacity
        while new < length:
            new *= 2
        new = min(new, self.max_capacity)
        self.keys = [_grow(t, new) for t in self.keys]
        self.values = [_grow(t, new) for t in self.values]

    def move(self, src: int, dst: int, length: int) -> None:
        """Copy the first `length` positions of slot `src` into slot `dst`."""
        for buf in (*self.keys, *self.values):
            buf[dst, :, :length] = buf[src, :, :length]

    def broadcast(self, src: int, dsts: list[int], length: int) -> None:
        """Share one prefilled prompt with other slots (the GRPO group case)."""
        if not dsts:
            return
        index = torch.tensor(dsts, device=self.keys[0].device)
        for buf in (*self.keys, *self.values):
            buf[index, :, :length] = buf[src, :, :length].unsqueeze(0)


def _grow(t: Tensor, capacity: int) -> Tensor:
    out = t.new_zeros((t.shape[0], t.shape[1], capacity, t.shape[3]))
    out[:, :, : t.shape[2]] = t
    return out
