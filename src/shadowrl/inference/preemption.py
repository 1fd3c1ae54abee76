"""Preemption: what the engine does when the paged KV pool cannot hold the next step.

The paged pool is a fixed memory budget (`engine.kv_blocks`) that the running sequences
grow into, so a batch admitted while short can outgrow it. Rather than fail, the engine
frees blocks, cheapest first: the prefix cache's least recently used entry (parked KV,
only a speed-up), then the request in the last slot (the most recently admitted, give or
take the packing), whose KV is dropped and recomputed from its tokens when blocks free up
again (recompute, not swap: a CPU copy of the KV would cost as much host memory as it
frees). A preempted request keeps its tokens, logprobs and versions, and draws its next
token with the same seed and counter it would have used, so it continues as if never
stopped; the recomputed KV equals the old one to float rounding (a prefill instead of
decode steps), under the weights current at readmission.

Preempted requests return before any new request is admitted (first come, first served),
and new prompts are admitted only while the pool has room for their blocks, so a tight
pool does not admit a request only to preempt it at the next step. One sequence that
alone outgrows the pool fails with `PoolExhausted`; the others keep decoding. The
contiguous cache cannot run out (a slot per sequence), so it gets `NoPreemption`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from shadowrl.inference.forward import Decoder
from shadowrl.inference.kv import KVCache
from shadowrl.inference.paged import PagedKV
from shadowrl.inference.prefix import PrefixCache
from shadowrl.inference.requests import Request
from shadowrl.inference.route_log import RouteLog


class Preemption(Protocol):
    """The engine's one seam for a KV budget smaller than its batch can grow to."""

    waiting: list[Request]  # preempted, readmitted before any new request
    count: int  # requests preempted so far

    def make_room(self, running: list[Request]) -> bool:
        """Free some KV after the pool ran out; False when nothing is left to free."""
        ...

    def readmit(self, running: list[Request], slots: int) -> None:
        """Recompute preempted requests into free slots while the pool has room."""
        ...

    def fitting(self, groups: list[list[Request]], running: Sequence[Request]) -> int:
        """How many of the admitted `groups` (in order) the pool has room for."""
        ...


class NoPreemption:
    """A contiguous cache: a slot per sequence, which never runs out."""

    def __init__(self) -> None:
        self.waiting: list[Request] = []
        self.count = 0

    def make_room(self, running: list[Request]) -> bool:
        return False

    def readmit(self, running: list[Request], slots: int) -> None:
        return None

    def fitting(self, groups: list[list[Request]], running: Sequence[Request]) -> int:
        return len(groups)


class Recompute:
    """Preempt by dropping a request's KV; recompute it from its tokens on readmission."""

    def __init__(
        self, cache: PagedKV, prefix: PrefixCache, decoder: Decoder, routes: RouteLog
    ) -> None:
        self.cache, self.prefix, self.decoder, self.routes = cache, prefix, decoder, routes
        self.waiting: list[Request] = []
        self.count = 0

    def make_room(self, running: list[Request]) -> bool:
        if self.prefix.evict_oldest():
            return True
        if len(running) < 2:  # preempting the only sequence frees nothing it could use
            return False
        request = running.pop()
        self.cache.free(len(running))
        request.draft, request.draft_logq = (), None
        self.waiting.insert(0, request)  # the last preempted arrived first: it returns first
        self.count += 1
        return True

    def readmit(self, running: list[Request], slots: int) -> None:
        while self.waiting and len(running) < slots:
            request = self.waiting[0]
            if not self._room_for(self._blocks(request.cached + 1) + 1) and running:
                return  # wait for running requests to finish and free their blocks
            recompute(self.decoder, self.cache, [request], len(running), self.prefix)
            self.routes.discard()  # its tokens keep the routes they were sampled under
            running.append(self.waiting.pop(0))

    def fitting(self, groups: list[list[Request]], running: Sequence[Request]) -> int:
        need = 0
        for n, group in enumerate(groups):  # its prompt's blocks, one per row to copy or grow
            need += self._blocks(len(group[0].prompt)) + len(group)
            if not self._room_for(need) and (n or running):
                return n
        return len(groups)

    def _room_for(self, blocks: int) -> bool:
        """Whether `blocks` can be handed out, evicting parked prefixes where that helps."""
        while self.cache.room() < blocks:
            if not self.prefix.evict_oldest():
                return False
        return True

    def _blocks(self, positions: int) -> int:
        return math.ceil(positions / self.cache.block_size)


def recompute(
    decoder: Decoder, cache: KVCache, requests: Sequence[Request], first: int,
    prefix: PrefixCache | None = None,
) -> None:  # fmt: skip
    """Prefill each request's cached positions (all but its newest token) into slots
    first, first + 1, ... in one call; from the longest prefix `prefix` holds, if given."""
    slots = range(first, first + len(requests))
    ids = [(r.prompt + tuple(r.tokens))[: r.cached] for r in requests]
    starts = [
        prefix.restore_longest((*i, r.tokens[-1]), slot).length if prefix else 0
        for i, r, slot in zip(ids, requests, slots, strict=True)
    ]
    todo = [k for k, (i, start) in enumerate(zip(ids, starts, strict=True)) if start < len(i)]
    if todo:
        hits = [starts[k] for k in todo] if any(starts) else None
        decoder.prefill([ids[k][starts[k] :] for k in todo], [slots[k] for k in todo], cache, hits)


def build_preemption(
    cache: KVCache, prefix: PrefixCache, decoder: Decoder, routes: RouteLog
) -> Preemption:
    """`Recompute` for the paged pool, `NoPreemption` for the contiguous cache."""
    if isinstance(cache, PagedKV):
        return Recompute(cache, prefix, decoder, routes)
    return NoPreemption()
