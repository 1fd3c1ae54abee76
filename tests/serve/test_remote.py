"""`RemotePolicy` against a real `shadowrl serve` app: the tokens must round-trip exactly.

The served policy is the tiny random Llama in the batching engine; greedy decoding
through HTTP must give the same token ids, logprobs and versions as the engine itself.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest

from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.serve.app import create_app
from shadowrl.serve.remote import RemoteError, RemotePolicy, request_body
from shadowrl.serve.threaded import serve_in_thread
from shadowrl.types import Generation, SamplingParams

MODEL = "tiny-test"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Engine, Any, str]]:
    model, tokenizer = tiny_model(seed=0)
    config = EngineConfig(max_batch=8, max_seq_len=1024, initial_kv_len=128)
    with Engine(model, tokenizer, config, version=3) as engine:
        app = create_app(engine, tokenizer, MODEL, max_context_tokens=512, version=3)
        with serve_in_thread(app) as url:
            yield engine, tokenizer, url


def test_greedy_tokens_logprobs_and_versions_round_trip(
    served: tuple[Engine, Any, str],
) -> None:
    policy, tokenizer, url = served
    prompt = tokenizer.encode("def add(a, b):", add_special_tokens=False)
    sp = SamplingParams(max_new_tokens=12, temperature=0.0)

    async def both() -> tuple[Generation, Generation]:
        remote = RemotePolicy(f"{url}/v1", MODEL, tokenizer=tokenizer)
        try:
            return await remote.generate(prompt, sp), await policy.generate(prompt, sp)
        finally:
            await remote.aclose()

    got, want = asyncio.run(both())
    assert got.token_ids == want.token_ids and len(got.token_ids) == 12
    assert got.logprobs == pytest.approx(want.logprobs, abs=1e-5)
    assert got.versions == (3,) * 12
    assert got.finish_reason == "length"


def test_concurrent_calls_share_one_client(served: tuple[Engine, Any, str]) -> None:
    _, tokenizer, url = served
    remote = RemotePolicy(f"{url}/v1", MODEL)
    prompts = [tokenizer.encode(t, add_special_tokens=False) for t in ("a", "b c", "d e f")]

    async def run() -> list[Generation]:
        try:
            return await asyncio.gather(
                *(remote.generate(p, SamplingParams(4, 0.0)) for p in prompts)
            )
        finally:
            await remote.aclose()

    assert [len(g.token_ids) for g in asyncio.run(run())] == [4, 4, 4]


def test_client_errors_are_raised_not_retried(served: tuple[Engine, Any, str]) -> None:
    _, _, url = served
    remote = RemotePolicy(f"{url}/v1", "no-such-model", max_retries=5)
    with pytest.raises(RemoteError, match="404"):
        asyncio.run(remote.generate([1, 2, 3], SamplingParams(2, 0.0)))


def test_unreachable_server_fails_after_retries() -> None:
    remote = RemotePolicy("http://127.0.0.1:9/v1", MODEL, max_retries=1, timeout_s=1.0)
    with pytest.raises(RemoteError):
        asyncio.run(remote.generate([1], SamplingParams(1, 0.0)))


def test_vllm_style_choices_are_decoded_without_our_extra_fields(
    served: tuple[Engine, Any, str],
) -> None:
    _, tokenizer, _ = served
    remote = RemotePolicy("http://unused/v1", MODEL, tokenizer=tokenizer, version=9)
    vllm = {
        "text": "hi",
        "finish_reason": "length",
        "logprobs": {"tokens": ["token_id:5", "token_id:7"], "token_logprobs": [-1.0, -2.0]},
    }
    assert remote.to_generation(vllm) == Generation((5, 7), (-1.0, -2.0), (9, 9), "length")
    text_only = remote.to_generation({"text": "hello world", "finish_reason": "stop"})
    assert text_only.token_ids == tuple(tokenizer.encode("hello world", add_special_tokens=False))
    assert all(math.isnan(x) for x in text_only.logprobs)


def test_request_body_carries_stop_ids_and_seed() -> None:
    sp = SamplingParams(5, 0.7, 0.9, 20, ("</s>",), (2,), 11)
    body = request_body("m", [1, 2], sp)
    assert body["prompt"] == [1, 2] and body["logprobs"] == 0 and body["return_token_ids"]
    assert (body["top_k"], body["stop"], body["stop_token_ids"], body["seed"]) == (
        20,
        ["</s>"],
        [2],
        11,
    )
