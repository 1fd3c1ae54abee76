"""Prefix cache: the KV of finished requests, kept so the next turn prefills only its suffix.

An agent episode is a chain of requests whose prompts extend each other token for token:
turn k+1's prompt is turn k's prompt, the tokens generated in turn k and the tool
results. Without a cache every turn re-prefills the whole conversation, which on a CPU
is most of the rollout time (prefill of a 2k-token context costs ~4 s on SmolLM2 where a
decode step costs ~0.1 s). So when a request finishes, its KV is parked here (a copy out
of its slot in the contiguous cache, its shared blocks in the paged one); an admitted
request looks for the parked sequence sharing the longest token prefix with its prompt,
restores that much KV and prefills only the rest. The system prompt and tool schemas,
identical across tasks, are shared the same way.

Exactness: an entry is reused only under the weights version that computed all of it,
and a weight swap clears the cache, so a cache hit changes no logprob beyond float noise.
Entries are evicted least recently used to stay under a token budget. A mixture of
experts parks each position's routes with its KV, and a hit hands them back (`Hit`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from shadowrl.inference.kv import KVCache


@dataclass(eq=False)
class _Entry:
    tokens: Tensor  # [L] int64 (CPU): the token ids whose KV is held
    kv: Any  # the cache's handle on the L positions (`KVCache.park`: a copy, or shared blocks)
    routes: Tensor | None = None  # [L, moe layers, k] (CPU) for a mixture of experts


@dataclass(frozen=True)
class Hit:
    """A prompt's cached prefix: `length` positions restored, and their routes (MoE)."""

    length: int
    routes: Tensor | None = None


def common_prefix(a: Tensor, b: Tensor) -> int:
    """Length of the longest common prefix of two 1-D int tensors."""
    n = min(a.numel(), b.numel())
    differ = torch.nonzero(a[:n] != b[:n])
    return int(differ[0, 0]) if differ.numel() else n


class PrefixCache:
    """Parked KV of finished sequences, matched by longest common token prefix."""

    def __init__(self, cache: KVCache, max_tokens: int) -> None:
        self.cache = cache
        self.max_tokens = max_tokens
        self._entries: OrderedDict[int, _Entry] = OrderedDict()  # LRU order, oldest first
        self._next_id = 0
        self.tokens_held = 0
        self.hit_tokens = 0  # prompt tokens served from the cache instead of prefilled

    def clear(self) -> None:
        """Drop everything (after a weight swap the parked KV is from old weights)."""
        for key in list(self._entries):
            self._drop(key)

    def park(
        self, slot: int, tokens: list[int] | tuple[int, ...], routes: Tensor | None = None
    ) -> None:
        """Copy slot `slot`'s KV for `tokens` (its first len(tokens) positions) into the cache,
        with their `routes` if the model routes."""
        n = len(tokens)
        if self.max_tokens <= 0 or n == 0 or n > self.max_tokens:
            return
        ids = torch.tensor(tokens, dtype=torch.int64)
        for key, entry in list(self._entries.items()):  # a superseded prefix is dead weight
            if (
                entry.tokens.numel() <= n
                and common_prefix(entry.tokens, ids) == entry.tokens.numel()
            ):
                self._drop(key)
        self._entries[self._next_id] = _Entry(ids, self.cache.park(slot, n), routes)
        self._next_id += 1
        self.tokens_held += n
        while self.tokens_held > self.max_tokens:
            self._drop(next(iter(self._entries)))

    def match(self, prompt: tuple[int, ...]) -> tuple[int, int]:
        """(entry key, usable length) of the best entry for `prompt`, or (-1, 0).

        At most len(prompt) - 1 positions are usable: the last prompt token must run
        through the model to give the logits of the first new token.
        """
        if not self._entries:
            return -1, 0
        ids = torch.tensor(prompt, dtype=torch.int64)
        best, best_len = -1, 0
        for key, entry in self._entries.items():
            length = min(common_prefix(entry.tokens, ids), len(prompt) - 1)
            if length > best_len:
                best, best_len = key, length
        return best, best_len

    def restore(self, key: int, length: int, slot: int) -> Hit:
        """Copy the first `length` positions of entry `key` into `slot`.

        An entry restored in full is dropped: the request that extends it parks the longer
        sequence when it finishes.
        """
        entry = self._entries[key]
        self.cache.restore(entry.kv, length, slot)
        self.hit_tokens += length
        if length >= entry.tokens.numel() - 1:
            self._drop(key)
        else:
            self._entries.move_to_end(key)
        return Hit(length, None if entry.routes is None else entry.routes[:length])

    def restore_longest(self, prompt: tuple[int, ...], slot: int) -> Hit:
        """Copy the longest cached prefix of `prompt` into `slot` (length 0: none)."""
        key, length = self.match(prompt)
        return self.restore(key, length, slot) if length else Hit(0)

    def evict_oldest(self) -> bool:
        """Drop the least recently used entry (the pool needs its blocks); False if none."""
        if not self._entries:
            return False
        self._drop(next(iter(self._entries)))
        return True

    def _drop(self, key: int) -> None:
        entry = self._entries.pop(key)
        self.tokens_held -= entry.tokens.numel()
        self.cache.drop(entry.kv)
