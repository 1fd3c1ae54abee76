"""Preemption: a paged pool the batch outgrows preempts and recomputes, with the ample
pool's tokens; one sequence longer than the pool fails alone; no block leaks."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future

import pytest
import torch

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.paged import PagedKV, PoolExhausted
from shadowrl.inference.preemption import NoPreemption, Recompute
from shadowrl.inference.requests import future_setter
from shadowrl.models import random_llama, random_qwen3_moe
from shadowrl.types import Generation, SamplingParams

# A recomputed KV comes from a prefill instead of decode steps: equal to float rounding.
ATOL = 1e-4


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def seeded(n: int, new_tokens: int) -> list[SamplingParams]:
    base = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, stop_token_ids=())
    return [dataclasses.replace(base, seed=i) for i in range(n)]


def run(model: torch.nn.Module, blocks: int, ps: list[list[int]], params: list[SamplingParams]):  # type: ignore[no-untyped-def]
    config = EngineConfig(kv="paged", kv_block_size=4, kv_blocks=blocks, max_batch=4)
    engine = Engine(model, None, config)
    engine.default_stop_ids = frozenset()  # every row runs to its length: a known peak
    return engine.generate_batch(ps, params), engine


def same(a: list[Generation], b: list[Generation]) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.token_ids == y.token_ids
        assert x.versions == y.versions
        torch.testing.assert_close(
            torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=ATOL, rtol=0
        )


def no_leak(engine: Engine) -> None:
    cache = engine.cache
    assert isinstance(cache, PagedKV)
    engine.prefix.clear()
    assert cache.blocks_used == 0 and sum(cache.refs) == 0


def test_a_pool_the_batch_outgrows_preempts_and_keeps_the_ample_pools_tokens() -> None:
    model = random_llama(seed=0)
    ps = prompts(21, 30, 9, 26, 17, 33)
    params = seeded(len(ps), 28)
    ample, roomy = run(model, 0, ps, params)
    # 4 rows of up to 61 positions need 64 blocks of 4; 30 make the newest rows wait
    tight, engine = run(model, 31, ps, params)
    assert isinstance(roomy.preemption, Recompute) and roomy.preemption.count == 0
    assert isinstance(engine.preemption, Recompute) and engine.preemption.count > 0
    same(ample, tight)
    assert all(len(g.token_ids) == 28 and g.finish_reason == "length" for g in tight)
    no_leak(engine)


def test_preempted_moe_rows_keep_their_routes() -> None:
    model = random_qwen3_moe(seed=0)
    ps = prompts(14, 22, 11, seed=1)
    params = seeded(len(ps), 20)
    ample, _ = run(model, 0, ps, params)
    tight, engine = run(model, 21, ps, params)
    assert engine.preemption.count > 0
    same(ample, tight)
    for p, a, b in zip(ps, ample, tight, strict=True):  # a route per fed position, as sampled
        assert len(b.routes) == len(p) + len(b.token_ids) - 1
        assert a.routes == b.routes


def test_one_sequence_longer_than_the_pool_fails_alone() -> None:
    model = random_llama(seed=0)
    config = EngineConfig(kv="paged", kv_block_size=4, kv_blocks=9, max_batch=4)  # 32 positions
    engine = Engine(model, None, config)
    engine.default_stop_ids = frozenset()
    long_prompt, grows, short = prompts(40, 10, 5)
    specs = [
        (long_prompt, seeded(1, 4)[0]),  # its prefill alone needs 11 blocks
        (grows, seeded(1, 40)[0]),  # outgrows the pool while decoding
        (short, seeded(1, 4)[0]),
    ]
    futures: list[Future[Generation]] = [Future() for _ in specs]
    with engine:
        engine.submit_all(
            [(p, s, future_setter(f), None) for (p, s), f in zip(specs, futures, strict=True)]
        )
        for future in futures[:2]:
            with pytest.raises(PoolExhausted, match=r"raise engine\.kv_blocks"):
                future.result(timeout=120)
        assert len(futures[2].result(timeout=120).token_ids) == 4
        again = engine.generate_batch([short], seeded(1, 4))  # the engine still serves
    assert again[0].token_ids == futures[2].result().token_ids
    no_leak(engine)


def test_the_contiguous_cache_never_preempts() -> None:
    engine = Engine(random_llama(seed=0), None, EngineConfig(max_batch=2))
    assert isinstance(engine.preemption, NoPreemption)
