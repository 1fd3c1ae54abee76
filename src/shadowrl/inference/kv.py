"""The KV cache seam, and the contiguous cache: one fixed slot per running sequence.

The engine and the decoder see a `KVCache`: they say which slot positions a forward will
write (`prepare`), write and read keys/values per layer, and move, share, park and restore
a slot's positions. Two layouts implement it (`engine.kv`): `ContiguousKV` here and
`paged.PagedKV` (fixed-size blocks and block tables, shared blocks, copy on write).

Contiguous: slot i holds the keys/values of the i-th running sequence, so a decode step
reads the first B slots as a plain view, with no gather. When a sequence leaves, the last
slot is moved into its hole (one copy of one sequence) to keep the batch packed. Capacity
along the time axis starts small and doubles on demand, so a CPU run with short prompts
does not reserve `max_batch * max_seq_len` of memory up front. CUDA graphs bake in
addresses, so with graphs the engine allocates the full capacity at once and the cache
never moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


class KVCache(Protocol):
    """Keys and values of the running sequences, slot i = the engine's running[i]."""

    max_capacity: int  # max_seq_len: no slot ever holds more positions

    @property
    def device(self) -> torch.device: ...

    @property
    def dtype(self) -> torch.dtype:
        """What it stores (`engine.kv_dtype`); reads return this dtype."""
        ...

    @property
    def capacity(self) -> int:
        """Positions a slot can hold without `reserve` (fixed spans need max_capacity)."""
        ...

    def held_positions(self) -> int:
        """How many positions' worth of KV memory is allocated now."""
        ...

    def reserve(self, length: int) -> None:
        """Room for `length` positions per slot; more than max_capacity is a ValueError."""

    def prepare(self, slots: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> None:
        """Slot slots[i] is about to be written at positions [starts[i], ends[i])."""

    def write(self, layer: int, slots: Tensor, positions: Tensor, k: Tensor, v: Tensor) -> None:
        """Store k, v [B, T, kv_heads, D] at `positions` [B, T] of `slots` [B]."""

    def read(self, layer: int, slots: Tensor | int, span: int) -> tuple[Tensor, Tensor]:
        """Keys, values [B, kv_heads, span, D] of `slots` [B] (an int b: slots 0..b-1); valid
        until the next `read` (the paged cache gathers into buffers it reuses)."""

    def read_rows(self, layer: int, ends: Sequence[int]) -> list[tuple[Tensor, Tensor]]:
        """Keys, values [1, kv_heads, ends[i], D] of each slot i < len(ends), for attention
        row by row (CPU); valid until the next read. The paged cache reads a row whose
        blocks are consecutive in place, as the contiguous cache reads every row."""
        ...

    def move(self, src: int, dst: int, length: int) -> None:
        """Slot `dst` gets slot `src`'s first `length` positions (src keeps them)."""

    def broadcast(self, src: int, dsts: list[int], length: int) -> None:
        """Share one prefilled prompt with other slots (the GRPO group case)."""

    def free(self, slot: int) -> None:
        """Slot `slot`'s sequence has left (what it held may be parked first)."""

    def park(self, slot: int, length: int) -> Any:
        """A handle on slot `slot`'s first `length` positions that outlives the slot."""

    def restore(self, parked: Any, length: int, slot: int) -> None:
        """Put the first `length` positions of `parked` into `slot`."""

    def drop(self, parked: Any) -> None:
        """Forget a parked handle."""


class ContiguousKV:
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
        cls,
        shape: Shape,
        config: EngineConfig,
        dtype: torch.dtype,
        device: torch.device,
        *,
        graphs: bool,
    ) -> ContiguousKV:
        """`config.max_batch` slots for a model of `shape`, storing `dtype` on `device`;
        all of `max_seq_len` at once under CUDA graphs."""
        return cls(
            layers=shape.layers, slots=config.max_batch, kv_heads=shape.kv_heads,
            head_dim=shape.head_dim, max_capacity=config.max_seq_len,
            capacity=config.max_seq_len if graphs else config.initial_kv_len,
            dtype=dtype, device=device,
        )  # fmt: skip

    @property
    def device(self) -> torch.device:
        return self.keys[0].device

    @property
    def dtype(self) -> torch.dtype:
        return self.keys[0].dtype

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[2]

    def held_positions(self) -> int:
        return self.keys[0].shape[0] * self.capacity

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

    def prepare(self, slots: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> None:
        self.reserve(max(ends, default=0))

    def write(self, layer: int, slots: Tensor, positions: Tensor, k: Tensor, v: Tensor) -> None:
        self.keys[layer][slots[:, None], :, positions] = k.to(self.dtype)  # rounded if bf16
        self.values[layer][slots[:, None], :, positions] = v.to(self.dtype)

    def read(self, layer: int, slots: Tensor | int, span: int) -> tuple[Tensor, Tensor]:
        if isinstance(slots, int):  # the first B slots: a view, no copy
            return self.keys[layer][:slots, :, :span], self.values[layer][:slots, :, :span]
        return self.keys[layer][slots, :, :span], self.values[layer][slots, :, :span]

    def read_rows(self, layer: int, ends: Sequence[int]) -> list[tuple[Tensor, Tensor]]:
        k, v = self.keys[layer], self.values[layer]
        return [(k[i : i + 1, :, :end], v[i : i + 1, :, :end]) for i, end in enumerate(ends)]

    def move(self, src: int, dst: int, length: int) -> None:
        """Copy the first `length` positions of slot `src` into slot `dst`."""
        for buf in (*self.keys, *self.values):
            buf[dst, :, :length] = buf[src, :, :length]

    def broadcast(self, src: int, dsts: list[int], length: int) -> None:
        if not dsts:
            return
        index = torch.tensor(dsts, device=self.device)
        for buf in (*self.keys, *self.values):
            buf[index, :, :length] = buf[src, :, :length].unsqueeze(0)

    def free(self, slot: int) -> None:
        pass  # the next sequence in this slot overwrites it

    def park(self, slot: int, length: int) -> Tensor:
        """A copy: [layers, 2, kv_heads, length, head_dim]."""
        return torch.stack([
            torch.stack((k[slot, :, :length], v[slot, :, :length]))
            for k, v in zip(self.keys, self.values, strict=True)
        ])  # fmt: skip

    def restore(self, parked: Tensor, length: int, slot: int) -> None:
        self.reserve(length + 1)
        for layer, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
            k[slot, :, :length] = parked[layer, 0, :, :length]
            v[slot, :, :length] = parked[layer, 1, :, :length]

    def drop(self, parked: Tensor) -> None:
        pass


def _grow(t: Tensor, capacity: int) -> Tensor:
    out = t.new_zeros((t.shape[0], t.shape[1], capacity, t.shape[3]))
    out[:, :, : t.shape[2]] = t
    return out
