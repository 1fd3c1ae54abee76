"""Qwen3-MoE in the engine: HF's logprobs, and every position's experts recorded exactly."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.inference.routing import RouteRecorder, routers
from shadowrl.models import random_qwen3_moe
from shadowrl.types import Generation, SamplingParams


@pytest.fixture(scope="module")
def moe() -> torch.nn.Module:
    return random_qwen3_moe(seed=0)


def prompts(*lengths: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 49152, (n,), generator=g).tolist() for n in lengths]


def hf_truth(
    model: torch.nn.Module, prompt: list[int], gen: Generation
) -> tuple[torch.Tensor, ...]:
    """HF's logprobs of the generated tokens and the routes [positions, layers, k] of every
    position the engine fed (all but the last token), from one fresh forward."""
    ids = torch.tensor([prompt + list(gen.token_ids)])
    recorder = RouteRecorder(model)
    try:
        with torch.no_grad():
            logits = model(ids[:, :-1]).logits[0, len(prompt) - 1 :].float()
        routes = recorder.take()
    finally:
        recorder.close()
    lp = logits.log_softmax(-1).gather(1, ids[0, len(prompt) :, None])[:, 0]
    return lp, routes


def same_experts(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool((a.sort(-1).values == b.sort(-1).values).all())


def routes_of(gen: Generation, model: torch.nn.Module) -> torch.Tensor:
    k = model.config.num_experts_per_tok
    return torch.tensor(gen.routes).view(len(gen.routes), len(routers(model)), k)


def test_greedy_logprobs_and_routes_match_hf_with_requests_joining(moe) -> None:
    ps = prompts(5, 40, 17, 3)
    params = [SamplingParams(max_new_tokens=n, temperature=0.0) for n in (9, 3, 12, 6)]
    engine = Engine(moe, None, EngineConfig(max_batch=2, initial_kv_len=16))
    assert engine.speculator is None  # MoE engines decode plainly
    for p, out in zip(ps, engine.generate_batch(ps, params), strict=True):
        lp, routes = hf_truth(moe, p, out)
        assert torch.allclose(torch.tensor(out.logprobs), lp, atol=1e-4)
        assert len(out.routes) == len(p) + len(out.token_ids) - 1
        assert same_experts(routes_of(out, moe), routes)


def test_prefix_hit_and_group_members_carry_the_prompt_routes(moe) -> None:
    (p,) = prompts(30, seed=1)
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
    engine = Engine(moe, None, EngineConfig(max_batch=4, initial_kv_len=16))
    with engine:
        (first,) = engine.generate_batch([p], greedy)
        turn = p + list(first.token_ids) + prompts(7, seed=2)[0]  # the next turn extends it
        (second,) = engine.generate_batch([turn], greedy)
        hot = SamplingParams(max_new_tokens=5, temperature=1.0)
        seeded = [dataclasses.replace(hot, seed=s) for s in range(3)]
        group = engine.generate_batch([p] * 3, seeded)
    assert engine.prefix.hit_tokens >= len(p)  # the second turn reused the first's KV
    lp, routes = hf_truth(moe, turn, second)
    assert torch.allclose(torch.tensor(second.logprobs), lp, atol=1e-4)
    assert same_experts(routes_of(second, moe), routes)
    for out in group:  # prefilled once, the prompt's routes copied to every member
        assert same_experts(routes_of(out, moe), hf_truth(moe, p, out)[1])


def test_prompts_sharing_a_head_carry_its_routes(moe) -> None:
    least = EngineConfig().shared_head_tokens
    head, (a, b) = prompts(least + 6, seed=3)[0], prompts(5, 9, seed=4)
    ps = [head + a, head + b]  # admitted together: the second restores the first's head
    engine = Engine(moe, None, EngineConfig(max_batch=2, initial_kv_len=16))
    outs = engine.generate_batch(ps, SamplingParams(max_new_tokens=4, temperature=0.0))
    assert engine.prefix.hit_tokens >= len(head)
    for p, out in zip(ps, outs, strict=True):
        lp, routes = hf_truth(moe, p, out)
        assert torch.allclose(torch.tensor(out.logprobs), lp, atol=1e-4)
        assert same_experts(routes_of(out, moe), routes)
