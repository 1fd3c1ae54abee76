"""Tokens from the policy, as text.

A policy that streams (`Engine.generate_stream`) hands out token deltas as they are
decoded; one that does not is wrapped into a single delta, so the server has one path.
The detokenizer spells a stream and a whole reply the same way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Protocol, runtime_checkable

from shadowrl.inference import TokenDelta
from shadowrl.types import FinishReason, Generation, Policy, SamplingParams


@runtime_checkable
class StreamingPolicy(Protocol):
    """A policy that hands out tokens as they are decoded (`Engine.generate_stream`)."""

    def generate_stream(
        self, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> AsyncIterator[TokenDelta]:
        """New tokens as they come; the last delta carries the finish_reason."""
        ...


async def stream_generate(
    policy: Policy, prompt: Sequence[int], sp: SamplingParams, head: TokenDelta | None = None
) -> AsyncGenerator[TokenDelta, None]:
    """`head` (forced tokens) if any, then token deltas as they are decoded if the policy
    streams, or one delta otherwise."""
    if head is not None:
        yield head
    if isinstance(policy, StreamingPolicy):
        async for delta in policy.generate_stream(prompt, sp):
            yield delta
    else:
        yield as_delta(await policy.generate(prompt, sp))


def as_delta(gen: Generation) -> TokenDelta:
    return TokenDelta(
        gen.token_ids, gen.logprobs, gen.versions, gen.finish_reason, gen.top_logprobs
    )


def concat(parts: Sequence[TokenDelta]) -> Generation:
    ids = tuple(t for p in parts for t in p.token_ids)
    lps = tuple(x for p in parts for x in p.logprobs)
    versions = tuple(v for p in parts for v in p.versions)
    tops = tuple(top for p in parts for top in p.top_logprobs)
    if len(tops) != len(ids):  # a policy that records no alternatives: then none at all
        tops = ()
    finish: FinishReason = next(
        (p.finish_reason for p in reversed(parts) if p.finish_reason), "abort"
    )
    return Generation(ids, lps, versions, finish, tops)


def detokenize(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[int]]:
    """The text of `ids` and each token's end offset in it, spelled exactly as a stream
    of them is (pushed one at a time, so O(len)): one spelling, streamed or not."""
    detok, text, ends = IncrementalDetokenizer(tokenizer), "", []
    for tid in ids:
        text += detok.push([tid])
        ends.append(len(text))
    if tail := detok.flush():
        text += tail
        ends[-1] = len(text)
    return text, ends


class IncrementalDetokenizer:
    """Text deltas from a growing token list without re-decoding all of it (vLLM's trick).

    A window that starts one emission back keeps leading-space merges right; a trailing
    U+FFFD means a multi-byte character is still incomplete, so nothing is emitted yet.
    `flush` hands out what is held back once no token follows: the text then ends as
    the tokenizer decodes it whole (U+FFFD for a character cut off by `max_tokens`).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = self.read = 0

    def push(self, new_ids: Sequence[int]) -> str:
        self.ids.extend(new_ids)
        before = self.tokenizer.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tokenizer.decode(self.ids[self.prefix :], skip_special_tokens=True)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]

    def flush(self) -> str:
        """What `push` is still holding back (an incomplete character)."""
        if self.read == len(self.ids):
            return ""
        before = self.tokenizer.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tokenizer.decode(self.ids[self.prefix :], skip_special_tokens=True)
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]
