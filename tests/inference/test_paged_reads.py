"""The paged cache's in-place reads: a row of consecutive blocks is a view of the pool,
equal to its gathered read; scattered or copied-on-write rows are gathered; the allocator
keeps growing rows consecutive and free runs whole."""

from __future__ import annotations

import torch

from shadowrl.inference.blocks import Blocks
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.kv import Shape
from shadowrl.inference.native import PER_ROW_SPAN
from shadowrl.inference.paged import PagedKV
from shadowrl.models import random_llama
from shadowrl.types import SamplingParams

SHAPE = Shape(layers=2, heads=4, kv_heads=2, head_dim=3)


def cache(slots: int, blocks: int, max_blocks: int | None = None) -> PagedKV:
    return PagedKV(SHAPE, slots=slots, block_size=4, max_seq_len=64, blocks=blocks,
                   max_blocks=max_blocks or blocks, dtype=torch.float32,
                   device=torch.device("cpu"))  # fmt: skip


def fill(c: PagedKV, slot: int, start: int, end: int, seed: int) -> torch.Tensor:
    """Write random keys (values: their negatives) at [start, end) of `slot` in every
    layer; returns them [layers, kv_heads, end - start, D]."""
    g = torch.Generator().manual_seed(seed)
    kv = torch.randn((SHAPE.layers, 1, end - start, SHAPE.kv_heads, SHAPE.head_dim), generator=g)
    positions = torch.arange(start, end)[None]
    for layer in range(SHAPE.layers):
        c.write(layer, torch.tensor([slot]), positions, kv[layer], -kv[layer])
    return kv[:, 0].transpose(1, 2)


def in_pool(t: torch.Tensor, c: PagedKV, layer: int) -> bool:
    return t.untyped_storage().data_ptr() == c.keys[layer].untyped_storage().data_ptr()


def test_rows_read_in_place_equal_their_gathered_reads_and_copy_nothing() -> None:
    c = cache(slots=3, blocks=40)
    ends = [13, 4, 22]
    c.prepare([0, 1, 2], [0, 0, 0], ends)
    written = [fill(c, slot, 0, end, seed=slot) for slot, end in enumerate(ends)]
    assert all(c.consecutive(s) == len(c.rows[s]) for s in range(3))
    for layer in range(SHAPE.layers):
        before = c.gathered_pieces
        rows = c.read_rows(layer, ends)
        assert c.gathered_pieces == before  # nothing copied
        for slot, (k, v) in enumerate(rows):
            assert in_pool(k, c, layer) and k.shape == (1, 2, ends[slot], 3)
            assert torch.equal(k[0], written[slot][layer]) and torch.equal(v[0], -k[0])
            gk, gv = c.read(layer, torch.tensor([slot]), ends[slot])  # the gathered read
            assert not in_pool(gk, c, layer)
            assert torch.equal(gk, k) and torch.equal(gv, v)


def test_a_row_that_copies_on_write_is_gathered_and_still_exact() -> None:
    c = cache(slots=3, blocks=40)
    c.prepare([0], [0], [10])
    prompt = fill(c, 0, 0, 10, seed=1)
    c.broadcast(0, [1], 10)  # slot 1 shares blocks 0-2; block 2 is partly filled
    c.prepare([1], [10], [12])  # writing into block 2: a copy elsewhere
    own = fill(c, 1, 10, 12, seed=2)
    assert c.consecutive(1) == 2 < len(c.rows[1]) == 3
    before = c.gathered_pieces
    (k0, _), (k1, v1) = c.read_rows(0, [10, 12])
    assert in_pool(k0, c, 0) and not in_pool(k1, c, 0)
    assert c.gathered_pieces - before == 2 * SHAPE.kv_heads * 3  # keys and values, 3 blocks
    assert torch.equal(k1[0], torch.cat((prompt[0], own[0]), dim=1)) and torch.equal(v1, -k1)
    assert torch.equal(k0[0], prompt[0])  # the shared prompt: kept
    gk, _ = c.read(1, torch.tensor([1]), 12)
    assert torch.equal(c.read_rows(1, [10, 12])[1][0], gk)


def test_rows_growing_in_lockstep_stay_consecutive() -> None:
    """Rows prefilled one after another, then decoded token by token together (each
    growing into its next block in turn), keep their blocks in one run each."""
    c = cache(slots=4, blocks=4 * 16 + 1)
    lengths = [9, 17, 5, 30]
    for slot, n in enumerate(lengths):
        c.prepare([slot], [0], [n])
    for _ in range(20):
        lengths = [n + 1 for n in lengths]
        c.prepare(range(4), [n - 1 for n in lengths], lengths)
    assert all(c.consecutive(s) == len(c.rows[s]) for s in range(4))
    assert c.blocks_used == sum(-(-n // 4) for n in lengths)


def test_a_prompt_split_in_a_tight_pool_is_gathered_and_the_others_read_in_place() -> None:
    c = cache(slots=3, blocks=1 + 3 * 4)  # exactly three prompts of four blocks
    c.prepare(range(3), [0] * 3, [16] * 3)  # the second leaves the first room to grow
    assert [c.consecutive(s) for s in range(3)] == [4, 4, 2] and c.blocks.free_count == 0
    written = [fill(c, slot, 0, 16, seed=slot) for slot in range(3)]
    before = c.gathered_pieces
    rows = c.read_rows(0, [16] * 3)
    assert c.gathered_pieces - before == 2 * SHAPE.kv_heads * 4  # the third row only
    assert [in_pool(k, c, 0) for k, _ in rows] == [True, True, False]
    for (k, v), w in zip(rows, written, strict=True):
        assert torch.equal(k[0], w[0]) and torch.equal(v, -k)


def test_free_runs_merge_and_a_row_grows_into_the_block_after_it() -> None:
    b = Blocks(9)
    first = b.take(None, {}, need=3)
    assert first == 1 and b.take(1, {1: 1}) == 2 and b.free_count == 6
    nxt = b.take(None, {2: 1}, need=2)  # after a growing tail: half the slack left to it
    assert nxt == 5  # the tail keeps half the slack of 4
    for block in (2, 1, nxt):
        b.release(block)
    assert b.free_count == 8 and b._runs == {1: 9}  # one run again
    assert b.take(None, {}, need=9, fit=True) is None  # no run fits: the pool should grow
    b.grow(12)
    assert b._runs == {1: 12} and b.take(None, {}, need=9, fit=True) == 1


def test_engine_decode_past_the_per_row_span_reads_in_place() -> None:
    """Long rows decoded by the engine (per-row attention) gather nothing once prefilled,
    across block boundaries and rows leaving, and match the contiguous cache."""
    model = random_llama(seed=0)
    g = torch.Generator().manual_seed(7)
    ps = [torch.randint(3, 49152, (PER_ROW_SPAN + n,), generator=g).tolist() for n in (9, 30, 2)]
    params = [SamplingParams(max_new_tokens=n, temperature=1.0, seed=n) for n in (12, 20, 7)]
    outs = {}
    for kv in ("contiguous", "paged"):
        config = EngineConfig(kv=kv, kv_block_size=4, max_batch=3, initial_kv_len=16)
        engine = Engine(model, None, config)
        with engine:
            outs[kv] = engine.generate_batch(ps, params)
    for x, y in zip(outs["contiguous"], outs["paged"], strict=True):
        assert x.token_ids == y.token_ids and x.logprobs == y.logprobs  # exact
    assert isinstance(engine.cache, PagedKV) and engine.cache.gathered_pieces == 0
