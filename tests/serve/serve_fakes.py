"""The model side of the server tests: a scripted policy (a fake behind `Policy`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from shadowrl.inference.requests import TokenDelta
from shadowrl.types import Generation, SamplingParams

MODEL = "tiny-test"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


class ScriptedPolicy:
    """Replies with fixed text (plus the stop token), one token per stream chunk.

    It records every prompt and the peak number of generations in flight, so tests
    can see what the server rendered and that it did not serialise requests.
    """

    def __init__(self, tokenizer: Any, reply: str, delay_s: float = 0.0) -> None:
        self.tokenizer, self.reply, self.delay_s = tokenizer, reply, delay_s
        self.prompts: list[list[int]] = []
        self.samplings: list[SamplingParams] = []
        self.version = 0
        self.in_flight = self.peak = 0
        self.swaps: list[tuple[int, bool, set[str]]] = []
        self.yielded = self.cancelled = 0  # tokens handed out; generations cancelled

    def _tokens(self, sampling: SamplingParams) -> list[int]:
        ids = self.tokenizer.encode(self.reply, add_special_tokens=False)
        return [*ids[: sampling.max_new_tokens - 1], *sampling.stop_token_ids[:1]]

    async def generate_stream(
        self, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> AsyncIterator[TokenDelta]:
        self.prompts.append(list(prompt_ids))
        self.samplings.append(sampling)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            ids = self._tokens(sampling)
            for k, tid in enumerate(ids):
                await asyncio.sleep(self.delay_s)
                self.yielded += 1
                yield TokenDelta((tid,), (-0.5 - k / 100,), (self.version,))
            yield TokenDelta((), (), (), "stop")
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        parts = [p async for p in self.generate_stream(prompt_ids, sampling)]
        return Generation(
            tuple(t for p in parts for t in p.token_ids),
            tuple(x for p in parts for x in p.logprobs),
            tuple(v for p in parts for v in p.versions),
            "stop",
        )

    def update_weights(
        self, state: Mapping[str, Any], version: int, *, delta: bool = False
    ) -> None:
        self.swaps.append((version, delta, set(state)))
        self.version = version
