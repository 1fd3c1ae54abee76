"""The paged KV cache: the contiguous cache's tokens and logprobs, blocks shared and
copied on write, no block leaked, memory that follows the tokens held."""

from __future__ import annotations

import copy
import dataclasses
from concurrent.futures import Future

import pytest
import torch
from transformers import LlamaForCausalLM

from shadowrl.inference.config import EngineConfig, SpeculativeConfig
from shadowrl.inference.cuda_graphs import BucketedStep
from shadowrl.inference.engine import Engine
from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import Shape
from shadowrl.inference.paged import PagedKV
from shadowrl.inference.requests import future_setter
from shadowrl.inference.step import StepBuffers, decode_and_sample
from shadowrl.models import random_llama, tiny_config
from shadowrl.types import Generation, SamplingParams

SAMPLED = SamplingParams(max_new_tokens=9, temperature=1.0)


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    return random_llama(seed=0)


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def seeded(n: int, base: SamplingParams = SAMPLED) -> list[SamplingParams]:
    return [dataclasses.replace(base, seed=i, max_new_tokens=4 + 3 * i) for i in range(n)]


def same(a: list[Generation], b: list[Generation]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.token_ids == y.token_ids
        torch.testing.assert_close(
            torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=1e-5, rtol=0
        )


def both(model: torch.nn.Module, run, **config) -> tuple[list[Generation], Engine]:  # type: ignore[no-untyped-def]
    """`run(engine)` under each layout; asserts equal outputs, returns the paged engine."""
    outs = {}
    for kv in ("contiguous", "paged"):
        served = copy.deepcopy(model)  # a swap writes into the engine's model
        engine = Engine(served, None, EngineConfig(kv=kv, kv_block_size=4, **config))
        with engine:
            outs[kv] = run(engine)
    same(outs["contiguous"], outs["paged"])
    return outs["paged"], engine


def test_rows_joining_groups_and_a_prefix_chain_match_the_contiguous_cache(model) -> None:
    ps = prompts(5, 40, 17, 3, 64, 300)  # 300: a span past PER_ROW_SPAN, attended row by row

    def run(engine: Engine) -> list[Generation]:
        outs = engine.generate_batch(ps, seeded(len(ps)))  # max_batch 3: rows join and leave
        group = engine.generate_batch([ps[1]] * 4, seeded(4))  # one prefill, shared blocks
        turn = ps[1] + list(outs[1].token_ids) + [7, 8, 9]  # a prefix-cache hit
        return outs + group + engine.generate_batch([turn], seeded(1))

    _, engine = both(model, run, max_batch=3, initial_kv_len=16)
    assert engine.prefix.hit_tokens > 40
    cache = engine.cache
    assert isinstance(cache, PagedKV)
    engine.prefix.clear()  # every block was either parked or freed: none leaks
    assert cache.blocks_used == 0 and sum(cache.refs) == 0


def test_ngram_speculation_swaps_and_fixed_spans_match_the_contiguous_cache(model) -> None:
    ps = prompts(12, 30, seed=3)
    looped = [p + p for p in ps]  # repeats: the n-gram drafter finds drafts
    spec = SpeculativeConfig(drafter="ngram", k=3, auto=False)
    both(model, lambda e: e.generate_batch(looped, seeded(2)), speculative=spec, max_batch=2)

    scaled = {k: v * 1.01 for k, v in model.state_dict().items()}

    def swapped(engine: Engine) -> list[Generation]:
        first = engine.generate_batch(ps, seeded(2))
        engine.update_weights(scaled, version=1)
        return first + engine.generate_batch(ps, seeded(2))

    both(model, swapped, recompute_kv_on_swap=True)

    def bucketed(engine: Engine) -> list[Generation]:
        engine.stepper = BucketedStep(engine.decoder, engine.cache, engine.config)
        return engine.generate_batch(ps, seeded(2))

    graphs = dict(max_batch=4, max_seq_len=160, initial_kv_len=160)
    both(model, bucketed, cuda_graph_batch_sizes=[1, 2], cuda_graph_spans=[32, 96], **graphs)


def test_copy_on_write_keeps_the_shared_prompt_and_the_pool_grows() -> None:
    shape = Shape(layers=1, heads=2, kv_heads=1, head_dim=2)
    cache = PagedKV(shape, slots=3, block_size=4, max_seq_len=32, blocks=3, max_blocks=9,
                    dtype=torch.float32, device=torch.device("cpu"))  # fmt: skip
    cache.prepare([0], [0], [6])  # 2 blocks: the pool (2 usable) is full
    slots, pos = torch.tensor([0]), torch.arange(6)[None]
    kv = torch.arange(12.0).view(1, 6, 1, 2)
    cache.write(0, slots, pos, kv, kv)
    cache.broadcast(0, [1, 2], 6)
    assert cache.blocks_used == 2 and cache.refs[cache.rows[0][1]] == 3
    cache.prepare([1], [6], [7])  # slot 1 writes into the shared second block: a copy
    cache.write(0, torch.tensor([1]), torch.tensor([[6]]), -kv[:, :1], -kv[:, :1])
    assert cache.rows[1][1] != cache.rows[0][1] and cache.blocks_used == 3  # grown to 5
    keys0 = cache.read(0, torch.tensor([0]), 6)[0].clone()  # a read is valid until the next
    keys1, _ = cache.read(0, torch.tensor([1]), 7)
    assert torch.equal(keys0[0, 0], kv[0, :, 0]) and torch.equal(keys1[0, 0, :6], kv[0, :, 0])
    assert torch.equal(keys1[0, 0, 6], -kv[0, 0, 0])
    for slot in range(3):
        cache.free(slot)
    assert cache.blocks_used == 0


def test_a_full_pool_is_an_error_not_a_silent_overwrite() -> None:
    shape = Shape(layers=1, heads=1, kv_heads=1, head_dim=2)
    cache = PagedKV(shape, slots=2, block_size=4, max_seq_len=32, blocks=3, max_blocks=3,
                    dtype=torch.float32, device=torch.device("cpu"))  # fmt: skip
    cache.prepare([0], [0], [8])
    with pytest.raises(RuntimeError, match="KV pool exhausted"):
        cache.prepare([1], [0], [1])


def test_paged_decode_step_never_reads_the_device() -> None:
    """As the contiguous cache's graph test: on the meta device any host read would raise."""
    with torch.device("meta"):
        model = LlamaForCausalLM(tiny_config()).eval()
    decoder = Decoder(model)
    cache = PagedKV(decoder.shape, slots=4, block_size=16, max_seq_len=64, blocks=17,
                    max_blocks=17, dtype=torch.float32, device=torch.device("meta"))  # fmt: skip
    buffers = StepBuffers.allocate(4, torch.device("meta"))
    with torch.inference_mode():
        out = decode_and_sample(decoder, cache, buffers, 4, 64, True, True)
    assert out.shape == (3, 4) and out.device.type == "meta"


def test_memory_follows_the_tokens_held(model) -> None:
    """Mixed lengths: contiguous holds every slot at the longest row's capacity."""
    ps = prompts(8, 8, 8, 200)
    held = {}
    for kv in ("contiguous", "paged"):
        engine = Engine(model, None, EngineConfig(kv=kv, max_batch=4, initial_kv_len=16))
        engine.generate_batch(ps, SamplingParams(max_new_tokens=2, temperature=0.0))
        held[kv] = engine.cache.held_positions()
    assert held["paged"] < held["contiguous"] / 2


Snap = tuple[list[list[int]], list[int], list[list[int]]]


def submit_together(engine: Engine, ps: list[list[int]], sampling: SamplingParams, snaps: list[Snap]) -> list[Generation]:  # fmt: skip
    """Run `ps` admitted together, recording (paged only) the block table, reference counts
    and parked entries' blocks once every row has decoded twice (so has written its own)."""

    def on_delta(delta: object) -> None:  # on the engine thread, between two steps
        cache, running = engine.cache, engine._running
        both_decoded = len(running) == len(ps) and all(len(r.tokens) >= 2 for r in running)
        if not snaps and isinstance(cache, PagedKV) and both_decoded:
            parked = [list(e.kv) for e in engine.prefix._entries.values()]
            snaps.append(([list(r) for r in cache.rows[: len(ps)]], list(cache.refs), parked))

    futures: list[Future[Generation]] = [Future() for _ in ps]
    engine.submit_all([(p, sampling, future_setter(f), on_delta) for p, f in zip(ps, futures, strict=True)])  # fmt: skip
    return [f.result(timeout=120) for f in futures]


def test_forks_of_a_parked_prefix_and_a_group_share_blocks_and_copy_on_write(model) -> None:
    """Two forks of one parked conversation restore its blocks (no copy), each copying only
    the partly filled block it writes into, so the parked KV stays intact for a later hit;
    an n > 1 group shares its prompt's blocks the same way. Tokens and logprobs: as the
    contiguous cache's."""
    base, other = prompts(10, 10, seed=5)
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
    forks: list[Snap] = []
    group: list[Snap] = []

    def run(engine: Engine) -> list[Generation]:
        first = engine.generate_batch([base], greedy)  # parks 15 positions, blocks of 4
        entry = base + list(first[0].token_ids)[:5]
        # 11 positions shared: blocks 0, 1 full, block 2 partly filled (positions 8-10).
        outs = first + submit_together(engine, [[*entry[:11], 7, 8, 9], [*entry[:11], 4, 5]],
                                       greedy, forks)  # fmt: skip
        outs += engine.generate_batch([[*entry, 3]], greedy)  # the whole parked entry
        sampled = dataclasses.replace(greedy, temperature=1.0, seed=1)
        return outs + submit_together(engine, [other] * 3, sampled, group)

    _, engine = both(model, run, max_batch=3, initial_kv_len=16)
    assert engine.prefix.hit_tokens >= 2 * 11 + 15
    ((rows, refs, parked),) = forks
    assert len(parked) == 1 and rows[0][:2] == rows[1][:2] == parked[0][:2]
    assert all(refs[b] == 3 for b in parked[0][:2])  # both forks and the parked entry
    assert len({rows[0][2], rows[1][2], parked[0][2]}) == 3  # each fork copied block 2
    ((rows, refs, _),) = group
    assert rows[0][:2] == rows[1][:2] == rows[2][:2] and all(refs[b] == 3 for b in rows[0][:2])
    assert len({r[2] for r in rows}) == 3  # the prompt's partly filled block: copied on write
    engine.prefix.clear()
    cache = engine.cache
    assert isinstance(cache, PagedKV) and cache.blocks_used == 0
