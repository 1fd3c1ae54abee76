"""Policies: the scripted one is exact, the HF one reports true per-token logprobs."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from shadowrl.agent.policies import HFPolicy, ScriptedPolicy
from shadowrl.types import SamplingParams


def test_scripted_policy_tokenises_and_ends_the_turn(tokenizer: Any) -> None:
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    policy = ScriptedPolicy(tokenizer, ["hello world", "x " * 50], version=3)
    gen = asyncio.run(policy.generate([1, 2], SamplingParams(stop_token_ids=(end,))))
    assert tokenizer.decode(gen.token_ids) == "hello world<|im_end|>"
    assert gen.finish_reason == "stop" and set(gen.logprobs) == {0.0} and set(gen.versions) == {3}
    cut = asyncio.run(policy.generate([1], SamplingParams(max_new_tokens=5)))
    assert len(cut.token_ids) == 5 and cut.finish_reason == "length"
    with pytest.raises(RuntimeError, match="ran out of replies"):
        asyncio.run(policy.generate([1], SamplingParams()))


def test_scripted_policy_callable_sees_the_prompt(tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, lambda prompt: prompt.upper())
    gen = asyncio.run(policy.generate(tokenizer.encode("abc"), SamplingParams()))
    assert tokenizer.decode(gen.token_ids[:-1]) == "ABC"


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    from shadowrl.models import tiny_model

    return tiny_model(seed=0)


def _teacher_forced(model: Any, prompt: list[int], new: tuple[int, ...]) -> list[float]:
    import torch

    ids = torch.tensor([[*prompt, *new]])
    with torch.no_grad():
        logp = model(ids).logits[0].float().log_softmax(-1)
    return [logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(new)]


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_hf_policy_logprobs_match_a_teacher_forced_pass(
    tiny: tuple[Any, Any], temperature: float
) -> None:
    model, tokenizer = tiny
    prompt = tokenizer.encode("def add(a, b):")
    sampling = SamplingParams(
        max_new_tokens=12, temperature=temperature, seed=1, stop_token_ids=(2,)
    )
    gen = asyncio.run(HFPolicy(model, tokenizer, version=5).generate(prompt, sampling))
    assert 0 < len(gen.token_ids) <= 12 and set(gen.versions) == {5}
    assert all(math.isfinite(lp) and lp <= 0 for lp in gen.logprobs)
    assert gen.logprobs == pytest.approx(_teacher_forced(model, prompt, gen.token_ids), abs=1e-4)
    if temperature == 0:  # greedy picks the argmax of the same distribution
        again = asyncio.run(HFPolicy(model, tokenizer).generate(prompt, sampling))
        assert again.token_ids == gen.token_ids


def test_hf_policy_serves_concurrent_requests(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer)
    sampling = SamplingParams(max_new_tokens=4, temperature=0.0)

    async def both() -> list[Any]:
        return await asyncio.gather(
            *(policy.generate(tokenizer.encode(p), sampling) for p in ["a", "b"])
        )

    first, second = asyncio.run(both())
    alone = asyncio.run(policy.generate(tokenizer.encode("b"), sampling))
    assert second.token_ids == alone.token_ids and len(first.token_ids) == 4
