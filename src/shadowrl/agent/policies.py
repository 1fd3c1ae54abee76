"""`ScriptedPolicy`: a model-free `Policy` for tests, reference policies and the expert.

It makes the whole loop deterministic (cf. mini-swe-agent's `DeterministicModel`): it
"generates" the tokenisation of a fixed reply. Real models are served by the batched
engine (`shadowrl.inference.engine.Engine`), which implements the same protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shadowrl.types import FinishReason, Generation, SamplingParams


def _end_token(tokenizer: Any, sampling: SamplingParams) -> int:
    """The end-of-turn token the loop asked for, else the tokenizer's EOS."""
    return sampling.stop_token_ids[0] if sampling.stop_token_ids else int(tokenizer.eos_token_id)


class ScriptedPolicy:
    """Replies with fixed texts, in order, or with `replies(decoded_prompt)`.

    Each reply is tokenised and followed by the end-of-turn token; logprobs are 0.0.
    A reply longer than `max_new_tokens` is cut there (finish_reason "length").
    """

    def __init__(
        self,
        tokenizer: Any,
        replies: Sequence[str] | Callable[[str], str],
        version: int = 0,
    ):
        self.tokenizer = tokenizer
        self.replies = replies
        self.version = version
        self.calls = 0

    def _next_reply(self, prompt_ids: Sequence[int]) -> str:
        if callable(self.replies):
            return self.replies(self.tokenizer.decode(list(prompt_ids)))
        if self.calls >= len(self.replies):
            raise RuntimeError(f"ScriptedPolicy ran out of replies after {len(self.replies)}")
        return self.replies[self.calls]

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        reply = self._next_reply(prompt_ids)
        self.calls += 1
        ids = [
            *self.tokenizer.encode(reply, add_special_tokens=False),
            _end_token(self.tokenizer, sampling),
        ]
        finish: FinishReason = "stop"
        if len(ids) > sampling.max_new_tokens:
            ids, finish = ids[: sampling.max_new_tokens], "length"
        return Generation(tuple(ids), (0.0,) * len(ids), (self.version,) * len(ids), finish)
