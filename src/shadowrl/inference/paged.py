"""The paged KV cache: fixed-size blocks in one pool per layer, a block table per slot.

A contiguous cache gives every slot room for its longest sequence, so memory is
max_batch x the longest context even when most sequences are short: long agent contexts
at high batch run out of memory long before the weights do. Here a slot holds only the
blocks its positions fill (`engine.kv_block_size` positions each), listed in its row of
the block table; a forward reads a slot's keys by gathering its blocks in table order into
one buffer that every layer reuses (one layer's keys and values for the batch's span, so
1 / layers of a contiguous copy). That gather is the paged step's extra cost: a block-wise
attention kernel reading the pool in place would avoid it and is not written.

Blocks are reference-counted, so sharing is free: a GRPO group's members, a running
request whose prompt another one repeats, and the prefix cache's parked sequences all
point at the same blocks. A block is copied only when a slot is about to write into one
it shares (copy on write: `prepare`, before every forward), which for a shared prompt is
its last, partly filled block. Block 0 is scratch: free table entries point at it, so
padding rows (CUDA graphs) and a prefill's padding spill write there harmlessly.

The pool grows by doubling up to `engine.kv_blocks` (all at once under CUDA graphs,
whose captured reads bake in its address). Running out is an error: there is no
preemption or swapping of sequences yet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.kv import Shape


class PagedKV:
    """Pools [blocks, kv_heads, block_size, head_dim] per layer, a [slots, max_blocks] table.

    Heads before positions, as in the contiguous cache: a gather of (block, head) pieces
    lands as [B, kv_heads, span, D] with each head's positions adjacent, which attention
    streams through (gathered position-major, the step's attention ran ~2x slower at 1k).
    """

    def __init__(
        self, shape: Shape, *, slots: int, block_size: int, max_seq_len: int, blocks: int,
        max_blocks: int, dtype: torch.dtype, device: torch.device, gather_rows: int = 0,
    ) -> None:  # fmt: skip
        self.block_size, self.max_capacity, self.max_blocks = block_size, max_seq_len, max_blocks
        pool = (blocks, shape.kv_heads, block_size, shape.head_dim)
        self.kv_heads = shape.kv_heads
        self.keys = [torch.zeros(pool, dtype=dtype, device=device) for _ in range(shape.layers)]
        self.values = [torch.zeros(pool, dtype=dtype, device=device) for _ in range(shape.layers)]
        width = math.ceil(max_seq_len / block_size)
        self.table = torch.zeros((slots, width), dtype=torch.int64, device=device)
        self.rows: list[list[int]] = [[] for _ in range(slots)]  # host copy of the table
        self.refs = [0] * blocks
        self._free = list(range(blocks - 1, 0, -1))  # block 0 is scratch, never handed out
        # Where `read` gathers blocks: one buffer for keys, one for values, reused by every
        # layer and step (a fresh 3 MB tensor per read cost 6x the copy itself: page faults).
        piece = (gather_rows * shape.kv_heads, block_size, shape.head_dim)  # (block, head)s
        self._gathered = [torch.empty(piece, dtype=dtype, device=device) for _ in range(2)]
        self._heads = torch.arange(shape.kv_heads, device=device)
        self._index: tuple[Tensor | int, int, Tensor] | None = None  # (slots, n, index)

    @classmethod
    def for_engine(
        cls, shape: Shape, config: EngineConfig, param: Tensor, *, graphs: bool
    ) -> PagedKV:
        """A pool of `config.kv_blocks` blocks (0: every slot at max_seq_len plus the prefix
        cache's budget), allocated in full under CUDA graphs, else grown from
        initial_kv_len per slot."""
        size = config.kv_block_size
        per_slot = math.ceil(config.max_seq_len / size) + 1
        auto = config.max_batch * per_slot + math.ceil(config.prefix_cache_tokens / size) + 1
        most = config.kv_blocks or auto
        start = config.max_batch * math.ceil(config.initial_kv_len / size) + 1
        return cls(
            shape, slots=config.max_batch, block_size=size, max_seq_len=config.max_seq_len,
            blocks=most if graphs else min(start, most), max_blocks=most,
            dtype=param.dtype, device=param.device,
            gather_rows=config.max_batch * math.ceil(config.max_seq_len / size) if graphs else 0,
        )  # fmt: skip

    @property
    def device(self) -> torch.device:
        return self.table.device

    @property
    def capacity(self) -> int:
        return self.max_capacity  # any slot may grow to max_seq_len while blocks last

    @property
    def blocks_used(self) -> int:
        return len(self.refs) - 1 - len(self._free)

    def held_positions(self) -> int:
        """Positions' worth of KV memory allocated (the pool, scratch block excluded)."""
        return (len(self.refs) - 1) * self.block_size

    def workspace_positions(self) -> int:
        """Positions' worth of memory in the gather buffers, which hold one layer's keys and
        values of a forward's batch x span (so 1 / layers of a position per entry)."""
        pieces = self._gathered[0].shape[0]  # (block, head) pairs
        return math.ceil(pieces * self.block_size / self.kv_heads / len(self.keys))

    def reserve(self, length: int) -> None:
        if length > self.max_capacity:
            raise ValueError(f"sequence of {length} tokens exceeds max_seq_len {self.max_capacity}")

    def prepare(self, slots: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> None:
        """Allocate the blocks [starts, ends) needs and unshare the ones it writes into."""
        for slot, start, end in zip(slots, starts, ends, strict=True):
            self.reserve(end)
            row, changed = self.rows[slot], False
            while len(row) * self.block_size < end:
                row.append(self._alloc())
                changed = True
            for i in range(start // self.block_size, math.ceil(end / self.block_size)):
                if self.refs[row[i]] > 1:  # copy on write
                    row[i] = self._copy(row[i])
                    changed = True
            if changed:
                self._sync(slot)

    def write(self, layer: int, slots: Tensor, positions: Tensor, k: Tensor, v: Tensor) -> None:
        blocks = self.table[slots[:, None], positions // self.block_size]
        offsets = positions % self.block_size
        self.keys[layer][blocks, :, offsets] = k  # [B, T] indices around the head axis
        self.values[layer][blocks, :, offsets] = v

    def read(self, layer: int, slots: Tensor | int, span: int) -> tuple[Tensor, Tensor]:
        """Each slot's blocks gathered in table order into the reused gather buffers: the
        result is valid until the next `read` (the forward uses it at once)."""
        n = math.ceil(span / self.block_size)
        index = self._gather_index(layer, slots, n)
        rows = index.shape[0]
        b = rows // (n * self.kv_heads)

        def gather(pool: Tensor, into: Tensor) -> Tensor:  # [B, kv_heads, span, D]
            pieces = pool.view(-1, *pool.shape[2:])  # [(block, head), block_size, D]
            out = torch.index_select(pieces, 0, index, out=into[:rows])
            return out.view(b, self.kv_heads, n * self.block_size, -1)[:, :, :span]

        keys, values = self._buffers(rows)
        return gather(self.keys[layer], keys), gather(self.values[layer], values)

    def _gather_index(self, layer: int, slots: Tensor | int, n: int) -> Tensor:
        """The (block, head) pieces `read` gathers, [B * kv_heads * n]: built at layer 0 (so
        every forward, and every captured CUDA graph, reads the table afresh) and reused by
        the layers after it."""
        if layer > 0 and self._index is not None:
            cached, width, index = self._index
            same = cached is slots or (isinstance(slots, int) and cached == slots)
            if same and width == n:
                return index
        table = self.table[:slots, :n] if isinstance(slots, int) else self.table[slots, :n]
        index = (table[:, None, :] * self.kv_heads + self._heads[None, :, None]).reshape(-1)
        self._index = (slots, n, index)
        return index

    def _buffers(self, rows: int) -> list[Tensor]:
        if self._gathered[0].shape[0] < rows:  # grown by doubling, as the pool is
            size = max(rows, 2 * self._gathered[0].shape[0])
            self._gathered = [t.new_empty((size, *t.shape[1:])) for t in self._gathered]
        return self._gathered

    def move(self, src: int, dst: int, length: int) -> None:
        """Slot `dst` (empty) shares the blocks of `src`'s first `length` positions."""
        self._share(self.rows[src][: math.ceil(length / self.block_size)], dst)

    def broadcast(self, src: int, dsts: list[int], length: int) -> None:
        for dst in dsts:
            self.move(src, dst, length)

    def free(self, slot: int) -> None:
        for block in self.rows[slot]:
            self._release(block)
        self.rows[slot] = []
        self.table[slot] = 0

    def park(self, slot: int, length: int) -> list[int]:
        """The slot's blocks for `length` positions, shared (no copy)."""
        blocks = self.rows[slot][: math.ceil(length / self.block_size)]
        for block in blocks:
            self.refs[block] += 1
        return blocks

    def restore(self, parked: list[int], length: int, slot: int) -> None:
        self._share(parked[: math.ceil(length / self.block_size)], slot)

    def drop(self, parked: list[int]) -> None:
        for block in parked:
            self._release(block)

    def _share(self, blocks: list[int], slot: int) -> None:
        self.free(slot)
        for block in blocks:
            self.refs[block] += 1
        self.rows[slot] = list(blocks)
        self._sync(slot)

    def _alloc(self) -> int:
        if not self._free:
            self._grow()
        block = self._free.pop()
        self.refs[block] = 1
        return block

    def _copy(self, block: int) -> int:
        new = self._alloc()
        for pool in (*self.keys, *self.values):
            pool[new] = pool[block]
        self._release(block)
        return new

    def _release(self, block: int) -> None:
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self._free.append(block)

    def _grow(self) -> None:
        old = len(self.refs)
        new = min(2 * old, self.max_blocks)
        if new <= old:
            raise RuntimeError(
                f"KV pool exhausted ({old - 1} blocks of {self.block_size}): raise engine.kv_blocks "
                "or lower max_batch (sequences are not preempted)"
            )
        self.keys = [_grown(t, new) for t in self.keys]
        self.values = [_grown(t, new) for t in self.values]
        self.refs += [0] * (new - old)
        self._free = list(range(new - 1, old - 1, -1)) + self._free

    def _sync(self, slot: int) -> None:
        row = self.rows[slot]
        self.table[slot] = 0
        if row:
            self.table[slot, : len(row)] = torch.tensor(row, dtype=torch.int64)


def _grown(t: Tensor, blocks: int) -> Tensor:
    out = t.new_zeros((blocks, *t.shape[1:]))
    out[: t.shape[0]] = t
    return out
