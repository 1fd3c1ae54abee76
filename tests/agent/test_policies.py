"""Policies: the scripted one is exact, the HF one reports true per-token logprobs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shadowrl.agent.policies import ScriptedPolicy
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
