"""Generation glue shared by the routes: streaming or not, forced heads, weight files.

A policy that streams (`Engine.generate_stream`) hands out token deltas as they are
decoded; one that does not is wrapped into a single delta, so the server has one path.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from shadowrl.inference.requests import TokenDelta
from shadowrl.serve.openai_api import APIError
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


def read_safetensors(path: str) -> dict[str, Any]:
    """A safetensors file, or every `*.safetensors` shard of a checkpoint directory; the
    draft heads beside it (`drafts.HEADS_FILE`) under the engine's names for them."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from shadowrl.inference.drafts import DRAFTS, HEADS_FILE

    p = Path(path)
    files = sorted(p.glob("*.safetensors")) if p.is_dir() else [p]
    if not files or not files[0].is_file():
        raise APIError(400, f"no safetensors weights at {path}", "path", "not_found")
    state: dict[str, Any] = {}
    for f in files:
        try:
            tensors = load_file(str(f))
        except (OSError, SafetensorError) as e:  # unreadable, or not a safetensors file
            raise APIError(400, f"cannot read {f} as safetensors: {e}", "path") from e
        prefix = DRAFTS if f.name == HEADS_FILE else ""
        state.update({prefix + k: v for k, v in tensors.items()})
    return state
