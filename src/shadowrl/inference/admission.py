"""Which waiting requests the engine admits next, and which running slot can lend its KV.

Identical prompts (a GRPO group) are taken together, so they take adjacent slots and
share one prefill; a prompt a running request already holds under the current weights
needs no prefill at all. New prompts are admitted while the padded prefill (new prompts x
the longest new part) fits `engine.prefill_tokens_per_step`; the first always fits.
"""

from __future__ import annotations

from collections.abc import Sequence

from shadowrl.inference.prefix import PrefixCache
from shadowrl.inference.requests import Request


def shared_prompt(running: Sequence[Request], prompt: tuple[int, ...], version: int) -> int:
    """The slot of a request holding `prompt`'s KV under weights `version`, or -1."""
    for slot, request in enumerate(running):
        if request.prompt_version == version and request.prompt == prompt:
            return slot
    return -1


def take_groups(
    pending: list[Request], running: Sequence[Request], free: int, version: int,
    prefix: PrefixCache, budget: int,
) -> list[list[Request]]:  # fmt: skip
    """Remove from `pending` and return the groups of requests that fill `free` slots."""
    groups: list[list[Request]] = []
    fresh, longest = 0, 0
    while pending and free > 0:
        prompt = pending[0].prompt
        if shared_prompt(running, prompt, version) < 0:
            new_tokens = len(prompt) - prefix.match(prompt)[1]
            fresh, longest = fresh + 1, max(longest, new_tokens)
            if fresh > 1 and fresh * longest > budget:
                break
        group = [r for r in pending if r.prompt == prompt][:free]
        for request in group:
            pending.remove(request)
        groups.append(group)
        free -= len(group)
    return groups
