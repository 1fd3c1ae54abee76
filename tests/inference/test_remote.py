"""`RemotePolicy` against a real `shadowrl serve` app: the tokens must round-trip exactly.

The served policy is the tiny random Llama; greedy decoding through HTTP must give the
same token ids, logprobs and versions as calling the policy directly.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from shadowrl.inference.remote import RemoteError, RemotePolicy, request_body
from shadowrl.inference.serve_cli import serve_in_thread
from shadowrl.inference.server import create_app
from shadowrl.models import tiny_model
from shadowrl.types import Generation, SamplingParams

MODEL = "tiny-test"


class GreedyTiny:
    """Greedy decoding of the tiny model, one full forward per token (slow but obviously right)."""

    def __init__(self, model: Any, version: int = 3) -> None:
        self.model, self.version = model, version

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        import torch

        ids, lps = list(prompt_ids), []
        finish = "length"
        with torch.no_grad():
            for _ in range(sampling.max_new_tokens):
                logits = self.model(torch.tensor([ids])).logits[0, -1].float()
                tok = int(logits.argmax())
                ids.append(tok)
                lps.append(float(torch.log_softmax(logits, -1)[tok]))
                if tok in sampling.stop_token_ids:
                    finish = "stop"
                    break
        new = tuple(ids[len(prompt_ids) :])
        return Generation(new, tuple(lps), (self.version,) * len(new), finish)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[GreedyTiny, Any, str]]:
    model, tokenizer = tiny_model(seed=0)
    policy = GreedyTiny(model)
    with serve_in_thread(create_app(policy, tokenizer, MODEL, max_context_tokens=512)) as url:
        yield policy, tokenizer, url


def test_greedy_tokens_logprobs_and_versions_round_trip(
    served: tuple[GreedyTiny, Any, str],
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


def test_concurrent_calls_share_one_client(served: tuple[GreedyTiny, Any, str]) -> None:
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


def test_client_errors_are_raised_not_retried(served: tuple[GreedyTiny, Any, str]) -> None:
    _, _, url = served
    remote = RemotePolicy(f"{url}/v1", "no-such-model", max_retries=5)
    with pytest.raises(RemoteError, match="404"):
        asyncio.run(remote.generate([1, 2, 3], SamplingParams(2, 0.0)))


def test_unreachable_server_fails_after_retries() -> None:
    remote = RemotePolicy("http://127.0.0.1:9/v1", MODEL, max_retries=1, timeout_s=1.0)
    with pytest.raises(RemoteError):
        asyncio.run(remote.generate([1], SamplingParams(1, 0.0)))


def test_vllm_style_choices_are_decoded_without_our_extra_fields(
    served: tuple[GreedyTiny, Any, str],
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
