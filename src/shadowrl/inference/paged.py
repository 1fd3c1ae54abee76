"""The paged KV cache: fixed-size blocks in one pool per layer, a block table per slot.

A contiguous cache gives every slot room for its longest sequence, so memory is
max_batch x the longest context even when most sequences are short: long agent contexts
at high batch run out of memory long before the weights do. Here a slot holds only the
blocks its positions fill (`engine.kv_block_size` positions each), listed in its row of
the block table.

Reading a slot's keys: the pools are laid out head-major, [kv_heads, blocks, block_size,
D], so a row whose blocks are consecutive in the pool is a strided view of it, as a
contiguous cache's row is of its buffer. The CPU decode step attends row by row
(`read_rows`) and reads such rows in place; the allocator (`blocks.Blocks`) keeps a
growing row's blocks consecutive where it can. Only a scattered row (one whose next block
was taken, or that shares a prompt's blocks and copied the partly filled one) is gathered,
block by block, into a buffer every layer reuses. Batched reads (`read`: short spans,
verify steps, CUDA graphs, which need one [B, ...] tensor) gather every row. The C decode
layer (`engine.cpu_decode`, `native_layer.py`) gathers nothing: it writes and reads the
pool through the block table, scattered rows included.

Blocks are reference-counted, so sharing is free: a GRPO group's members, a running
request whose prompt another one repeats, and the prefix cache's parked sequences all
point at the same blocks. A block is copied only when a slot is about to write into one
it shares (copy on write: `prepare`, before every forward), which for a shared prompt is
its last, partly filled block. Block 0 is scratch: free table entries point at it, so
padding rows (CUDA graphs) and a prefill's padding spill write there harmlessly.

The pool grows by doubling up to `engine.kv_blocks` (all at once under CUDA graphs,
whose captured reads bake in its address). Running out raises `PoolExhausted` before a
forward writes anything; the engine then frees blocks (`preemption.py`) and retries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from shadowrl.inference.blocks import Blocks
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.kv import Shape


class PoolExhausted(RuntimeError):
    """No free block, and the pool is at `engine.kv_blocks`."""


class _Plan(NamedTuple):
    """How `read_rows` reads each row of one forward (built at layer 0, reused after)."""

    ends: list[int]
    starts: list[int | None]  # the first block of a consecutive row, else None (gathered)
    offsets: list[int]  # where a gathered row's pieces begin in the gather buffer
    pieces: Tensor | None  # the (head, block) pieces of the gathered rows, gathered at once


class PagedKV:
    """Pools [kv_heads, blocks, block_size, head_dim] per layer, a [slots, max_blocks] table.

    Heads before blocks: a row of consecutive blocks is then a view [kv_heads, span, D]
    with each head's positions adjacent, and a gather of (head, block) pieces lands as
    [B, kv_heads, span, D] too (gathered position-major, attention ran ~2x slower at 1k).
    """

    def __init__(
        self, shape: Shape, *, slots: int, block_size: int, max_seq_len: int, blocks: int,
        max_blocks: int, dtype: torch.dtype, device: torch.device, gather_rows: int = 0,
    ) -> None:  # fmt: skip
        self.block_size, self.max_capacity, self.max_blocks = block_size, max_seq_len, max_blocks
        pool = (shape.kv_heads, blocks, block_size, shape.head_dim)
        self.kv_heads = shape.kv_heads
        self.keys = [torch.zeros(pool, dtype=dtype, device=device) for _ in range(shape.layers)]
        self.values = [torch.zeros(pool, dtype=dtype, device=device) for _ in range(shape.layers)]
        width = math.ceil(max_seq_len / block_size)
        self.table = torch.zeros((slots, width), dtype=torch.int64, device=device)
        self.rows: list[list[int]] = [[] for _ in range(slots)]  # host copy of the table
        self.blocks = Blocks(blocks)
        self._consecutive = [0] * slots  # how many of a row's first blocks are consecutive
        self._tail_of: list[int | None] = [None] * slots  # each row's last block
        self._tails: dict[int, int] = {}  # last block of a row -> rows ending there
        # Where reads gather blocks: one buffer for keys, one for values, reused by every
        # layer and step (a fresh 3 MB tensor per read cost 6x the copy itself: page faults).
        piece = (gather_rows * shape.kv_heads, block_size, shape.head_dim)  # (head, block)s
        self._gathered = [torch.empty(piece, dtype=dtype, device=device) for _ in range(2)]
        self._heads = torch.arange(shape.kv_heads, device=device)
        self._index: tuple[Tensor | int, int, Tensor] | None = None  # (slots, n, index)
        self._plan: _Plan | None = None
        self.gathered_pieces = 0  # (head, block) pieces copied by reads, for tests and benchmarks

    @classmethod
    def for_engine(
        cls,
        shape: Shape,
        config: EngineConfig,
        dtype: torch.dtype,
        device: torch.device,
        *,
        graphs: bool,
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
            dtype=dtype, device=device,
            gather_rows=config.max_batch * math.ceil(config.max_seq_len / size) if graphs else 0,
        )  # fmt: skip

    @property
    def device(self) -> torch.device:
        return self.table.device

    @property
    def dtype(self) -> torch.dtype:
        return self.keys[0].dtype

    @property
    def capacity(self) -> int:
        return self.max_capacity  # any slot may grow to max_seq_len while blocks last

    @property
    def refs(self) -> list[int]:
        return self.blocks.refs

    def room(self) -> int:
        """Blocks that can still be handed out: the free ones and those the pool may grow by."""
        return self.blocks.free_count + self.max_blocks - self.blocks.size

    @property
    def blocks_used(self) -> int:
        return self.blocks.size - 1 - self.blocks.free_count

    def held_positions(self) -> int:
        """Positions' worth of KV memory allocated (the pool, scratch block excluded)."""
        return (self.blocks.size - 1) * self.block_size

    def workspace_positions(self) -> int:
        """Positions' worth of memory in the gather buffers, which hold one layer's keys and
        values of a forward's gathered rows (so 1 / layers of a position per entry)."""
        pieces = self._gathered[0].shape[0]  # (head, block) pairs
        return math.ceil(pieces * self.block_size / self.kv_heads / len(self.keys))

    def consecutive(self, slot: int) -> int:
        """How many of the slot's first blocks lie consecutively in the pool (read in place)."""
        return self._consecutive[slot]

    def reserve(self, length: int) -> None:
        if length > self.max_capacity:
            raise ValueError(f"sequence of {length} tokens exceeds max_seq_len {self.max_capacity}")

    def prepare(self, slots: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> None:
        """Allocate the blocks [starts, ends) needs and unshare the ones it writes into."""
        for slot, start, end in zip(slots, starts, ends, strict=True):
            self.reserve(end)
            row, changed = self.rows[slot], False
            need = math.ceil(end / self.block_size)
            while len(row) < need:
                row.append(self._alloc(row[-1] if row else None, need - len(row)))
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
        # [B, T] indices after the head axis: the target is [kv_heads, B, T, D]
        self.keys[layer][:, blocks, offsets] = k.permute(2, 0, 1, 3).to(self.dtype)
        self.values[layer][:, blocks, offsets] = v.permute(2, 0, 1, 3).to(self.dtype)

    def read(self, layer: int, slots: Tensor | int, span: int) -> tuple[Tensor, Tensor]:
        """Each slot's blocks gathered in table order into the reused gather buffers: the
        result is valid until the next read (the forward uses it at once)."""
        n = math.ceil(span / self.block_size)
        index = self._gather_index(layer, slots, n)
        b = index.shape[0] // (n * self.kv_heads)
        keys, values = self._gather(layer, index)

        def rows(out: Tensor) -> Tensor:  # [B, kv_heads, span, D]
            return out.view(b, self.kv_heads, n * self.block_size, -1)[:, :, :span]

        return rows(keys), rows(values)

    def read_rows(self, layer: int, ends: Sequence[int]) -> list[tuple[Tensor, Tensor]]:
        """Slot i's first ends[i] positions, [1, kv_heads, ends[i], D] each: a view of the
        pool for a row whose blocks are consecutive, else gathered (valid until the next
        read). Reads only the host's copy of the table, so CPU steps only."""
        if layer == 0 or self._plan is None or self._plan.ends != list(ends):
            self._plan = self._plan_rows(list(ends))
        plan = self._plan
        pools = (self.keys[layer], self.values[layer])
        gathered = self._gather(layer, plan.pieces) if plan.pieces is not None else pools
        out = []
        for end, start, offset in zip(plan.ends, plan.starts, plan.offsets, strict=True):
            if start is not None:  # in place: the pool's blocks start..start+n
                at = start * self.block_size
                k, v = (p.view(self.kv_heads, -1, p.shape[-1])[None, :, at : at + end]
                        for p in pools)  # fmt: skip
            else:
                n = math.ceil(end / self.block_size)
                k, v = (g[offset : offset + n * self.kv_heads]
                        .view(1, self.kv_heads, n * self.block_size, -1)[:, :, :end]
                        for g in gathered)  # fmt: skip
            out.append((k, v))
        return out

    def _plan_rows(self, ends: list[int]) -> _Plan:
        """In place where a row's first blocks are consecutive; the rest's pieces listed."""
        starts: list[int | None] = []
        offsets: list[int] = []
        pieces: list[int] = []
        size = self.blocks.size
        for slot, end in enumerate(ends):
            n = math.ceil(end / self.block_size)
            row = self.rows[slot][:n]
            in_place = self._consecutive[slot] >= n
            starts.append((row[0] if row else 0) if in_place else None)
            offsets.append(len(pieces))
            if not in_place:  # (head, block) pieces, head-major as the pool
                pieces += [h * size + block for h in range(self.kv_heads) for block in row]
        index = torch.tensor(pieces, dtype=torch.int64, device=self.device) if pieces else None
        return _Plan(ends, starts, offsets, index)

    def _gather_index(self, layer: int, slots: Tensor | int, n: int) -> Tensor:
        """The (head, block) pieces `read` gathers, [B * kv_heads * n]: built at layer 0 (so
        every forward, and every captured CUDA graph, reads the table afresh) and reused by
        the layers after it."""
        if layer > 0 and self._index is not None:
            cached, width, index = self._index
            same = cached is slots or (isinstance(slots, int) and cached == slots)
            if same and width == n:
                return index
        table = self.table[:slots, :n] if isinstance(slots, int) else self.table[slots, :n]
        heads = self._heads[None, :, None] * self.blocks.size
        index = (heads + table[:, None, :]).reshape(-1)
        self._index = (slots, n, index)
        return index

    def _gather(self, layer: int, index: Tensor) -> tuple[Tensor, Tensor]:
        """The pools' (head, block) pieces at `index`, [len(index), block_size, D] each."""
        rows = index.shape[0]
        if self._gathered[0].shape[0] < rows:  # grown by doubling, as the pool is
            size = max(rows, 2 * self._gathered[0].shape[0])
            self._gathered = [t.new_empty((size, *t.shape[1:])) for t in self._gathered]
        self.gathered_pieces += 2 * rows

        def gather(pool: Tensor, into: Tensor) -> Tensor:
            pieces = pool.view(-1, *pool.shape[2:])  # [(head, block), block_size, D]
            return torch.index_select(pieces, 0, index, out=into[:rows])

        keys, values = self._gathered
        return gather(self.keys[layer], keys), gather(self.values[layer], values)

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
        self._sync(slot)

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

    def _alloc(self, after: int | None, need: int = 1) -> int:
        """A fresh block, right after block `after` where that one is free, else the first
        of a place with room for `need`."""
        while True:  # grown (by doubling) while no free run fits: a row stays in one piece
            fit = self.blocks.size < self.max_blocks
            if (block := self.blocks.take(after, self._tails, need, fit=fit)) is not None:
                return block
            self._grow()

    def _copy(self, block: int) -> int:
        new = self._alloc(None)  # the block after its predecessor is the shared one itself
        for pool in (*self.keys, *self.values):
            pool[:, new] = pool[:, block]
        self._release(block)
        return new

    def _release(self, block: int) -> None:
        self.blocks.release(block)

    def _grow(self) -> None:
        old = self.blocks.size
        new = min(2 * old, self.max_blocks)
        if new <= old:
            raise PoolExhausted(
                f"KV pool exhausted ({old - 1} blocks of {self.block_size} positions): "
                "raise engine.kv_blocks"
            )
        self.keys = [_grown(t, new) for t in self.keys]
        self.values = [_grown(t, new) for t in self.values]
        self.blocks.grow(new)

    def _sync(self, slot: int) -> None:
        """After the slot's row changed: its tail and consecutive run (host), then its table
        row (device)."""
        row, old = self.rows[slot], self._tail_of[slot]
        if old is not None:
            self._tails[old] -= 1
            if not self._tails[old]:
                del self._tails[old]
        tail = self._tail_of[slot] = row[-1] if row else None
        if tail is not None:
            self._tails[tail] = self._tails.get(tail, 0) + 1
        run = 1 if row else 0
        while run < len(row) and row[run] == row[0] + run:
            run += 1
        self._consecutive[slot] = run
        self._write_table(slot)

    def _write_table(self, slot: int) -> None:
        row = self.rows[slot]
        self.table[slot] = 0
        if row:
            self.table[slot, : len(row)] = torch.tensor(row, dtype=torch.int64)


def _grown(t: Tensor, blocks: int) -> Tensor:
    out = t.new_zeros((t.shape[0], blocks, *t.shape[2:]))
    out[:, : t.shape[1]] = t
    return out
