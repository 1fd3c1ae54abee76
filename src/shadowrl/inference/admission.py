"""Which waiting requests the engine admits next, and which running slot can lend its KV.

Identical prompts (a GRPO group) are taken together, so they take adjacent slots and
share one prefill; a prompt a running request already holds under the current weights
needs no prefill at all; a new prompt sharing a long head with a running one or another
admitted with it borrows that one's KV (`leads`). New prompts are admitted while the
padded prefill (new prompts x the longest new part) fits `engine.prefill_tokens_per_step`;
the first always fits.
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


def leads(
    prompts: Sequence[tuple[int, ...]],
    cached: Sequence[int],
    least: int,
    held: Sequence[tuple[int, ...]] = (),
) -> list[int]:
    """For each new prompt of one admission, the prompt whose KV it should borrow, or -1:
    an index into `[*held, *prompts]`.

    Distinct prompts often share a long head (the system prompt and tool schemas of every
    agent task), which the prefix cache only serves once a request holding it has
    finished. A prompt that shares at least `least` more tokens than the cache already
    gives it (`cached[i]`) with a prompt whose KV is in a slot (`held`: running requests
    under the current weights) or with an earlier new prompt that prefills now, borrows
    that head: the lender's prompt is parked in the cache (after its prefill, for a new
    one) and this prompt restores it (SGLang's in-batch prefix caching). At most
    len(prompt) - 1 positions are usable, as in the cache.
    """
    ids = [torch.tensor(p, dtype=torch.int64) for p in (*held, *prompts)]
    lenders = list(range(len(held)))
    borrows: list[int] = []
    for i, n in enumerate(cached):
        prompt = ids[len(held) + i]
        shared, lender = max(
            ((min(common_prefix(ids[j], prompt), len(prompt) - 1), j) for j in lenders),
            default=(0, -1),
        )
        borrows.append(lender if shared >= n + least else -1)
        if borrows[-1] < 0:
            lenders.append(len(held) + i)
    return borrows


def borrowed_heads(
    running: Sequence[Request],
    version: int,
    new: Sequence[tuple[int, Request]],
    prefix: PrefixCache,
    least: int,
) -> dict[int, tuple[int, Request]]:
    """`leads` over (slot, request) pairs, lending from `new` and from the `running` requests
    (slot = index) whose prompt KV is from weights `version`: for each new request that
    borrows a head, its index in `new` -> the lender's (slot, request). Empty when `least`
    or the prefix cache is 0."""
    if not least or prefix.max_tokens <= 0:
        return {}
    held = [(slot, r) for slot, r in enumerate(running) if r.prompt_version == version]
    prompts = [r.prompt for _, r in new]
    cached = [prefix.match(p)[1] for p in prompts]
    lenders = [*held, *new]
    borrows = leads(prompts, cached, least, [r.prompt for _, r in held])
    return {k: lenders[b] for k, b in enumerate(borrows) if b >= 0}
