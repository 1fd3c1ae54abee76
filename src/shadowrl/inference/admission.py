"""Which waiting requests the engine admits next, and which running slot can lend its KV.

Identical prompts (a GRPO group) are taken together, so they take adjacent slots and
share one prefill; a prompt a running request already holds under the current weights
needs no prefill at all; a new prompt sharing a long head with another admitted with it
waits for that one's KV (`leads`). New prompts are admitted while the padded prefill (new
prompts x the longest new part) fits `engine.prefill_tokens_per_step`; the first always
fits.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from shadowrl.inference.prefix import PrefixCache, common_prefix
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


def leads(prompts: Sequence[tuple[int, ...]], cached: Sequence[int], least: int) -> list[int]:
    """For each new prompt of one admission, the earlier prompt it should wait for, or -1.

    Distinct prompts admitted together often share a long head (the system prompt and tool
    schemas of every agent task), which the prefix cache only serves once a request holding
    it has finished. A prompt that shares at least `least` more tokens with an earlier
    prompt that prefills now than the cache already gives it (`cached[i]`) waits: the
    earlier one is prefilled and parked first, and it restores that head (SGLang's
    in-batch prefix caching). At most len(prompt) - 1 positions are usable, as in the cache.
    """
    ids = [torch.tensor(p, dtype=torch.int64) for p in prompts]
    waiting_for: list[int] = []
    for i, prompt in enumerate(ids):
        usable = [
            (min(common_prefix(ids[j], prompt), len(prompt) - 1), j)
            for j in range(i)
            if waiting_for[j] < 0
        ]
        shared, lead = max(usable, default=(0, -1))
        waiting_for.append(lead if shared >= cached[i] + least else -1)
    return waiting_for
