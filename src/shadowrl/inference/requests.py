"""What the engine tracks per request, and how results travel back to callers.

The decode loop runs on its own thread; callers live on an asyncio loop (the agent
harness, the HTTP server) or a plain thread (benchmarks). A request therefore carries
two callbacks that the engine thread invokes, `on_delta` for each new token and
`on_done` once at the end; the caller decides how to hop threads (for asyncio:
`loop.call_soon_threadsafe`).

A callback that raises ends its own request, never the engine thread: the first error
from `on_delta` stops that request's deltas, retires it at once (reason 'abort' inside
the engine: its KV is not parked) and reaches its caller through `on_done`; an error
from `on_done` itself is logged. The other requests keep decoding.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from shadowrl.types import FinishReason, Generation, SamplingParams, TopLogprobs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenDelta:
    """New tokens of one streamed request; `finish_reason` is set on the last delta only."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    finish_reason: FinishReason | None = None
    top_logprobs: tuple[TopLogprobs, ...] = ()  # only for requests that asked for them


Done = Callable[[Generation | BaseException], None]
OnDelta = Callable[[TokenDelta], None]


@dataclass(eq=False)
class Request:
    """One generation in flight; mutated only by the engine thread (except `aborted`)."""

    prompt: tuple[int, ...]
    sampling: SamplingParams
    stop_ids: frozenset[int]
    seed: int  # with the token count, the key of this request's random draws
    on_done: Done
    on_delta: OnDelta | None = None
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    top: list[TopLogprobs] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    aborted: bool = False
    # The prompt's last-position logits and the weights version that made them, kept so a
    # later request with the same prompt can reuse this request's KV instead of prefilling.
    prompt_logits: torch.Tensor | None = None
    prompt_version: int = -1
    # Speculative decoding: the heads' guesses for the tokens after the newest one (made
    # for the counters they will be verified at) and, for rejection sampling, the
    # distributions [k, V] they were drawn from. Empty: the next verify has no real drafts.
    draft: tuple[int, ...] = ()
    draft_logq: torch.Tensor | None = None
    # Mixture of experts: [positions, layers, k] chunks of the experts that routed each
    # position fed so far (prompt first); together they cover `cached` positions.
    routes: list[torch.Tensor] = field(default_factory=list)
    # What a callback of this request raised: it ends the request and goes to `on_done`.
    error: Exception | None = None

    @property
    def cached(self) -> int:
        """Positions in the KV cache: everything but the newest token, which is fed next."""
        return len(self.prompt) + len(self.tokens) - 1

    def append(
        self,
        token: int,
        logprob: float,
        version: int,
        top: TopLogprobs | None = None,
        entropy: float = float("nan"),
    ) -> None:
        self.tokens.append(token)
        self.logprobs.append(logprob)
        self.versions.append(version)
        self.entropies.append(entropy)
        if top is not None:
            self.top.append(top)
        if self.on_delta is not None and self.error is None:
            tops = () if top is None else (top,)
            self._call(self.on_delta, TokenDelta((token,), (logprob,), (version,), None, tops))

    def finish_reason(self, max_seq_len: int, tokenizer: Any) -> FinishReason | None:
        """Why this request is done after its newest token, or None to keep decoding."""
        if self.error is not None:  # its caller's callback failed: stop spending steps on it
            return "abort"
        if self.tokens[-1] in self.stop_ids or self._hit_stop_string(tokenizer):
            return "stop"
        full = len(self.prompt) + len(self.tokens) >= max_seq_len
        if len(self.tokens) >= self.sampling.max_new_tokens or full:
            return "length"
        return None

    def _hit_stop_string(self, tokenizer: Any) -> bool:
        stops = self.sampling.stop
        if not stops:
            return False
        window = max(len(s) for s in stops) + 4  # a new match ends in the newest token
        tail = tokenizer.decode(self.tokens[-window:])
        return any(s in tail for s in stops if s)  # "" would match anywhere: no stop

    def finish(self, reason: FinishReason) -> None:
        if self.on_delta is not None and self.error is None:
            self._call(self.on_delta, TokenDelta((), (), (), reason))
        if self.error is not None:
            self.fail(self.error)
            return
        routes = torch.cat(self.routes).flatten(1).tolist() if self.routes else []
        gen = Generation(
            tuple(self.tokens), tuple(self.logprobs), tuple(self.versions), reason,
            tuple(self.top), tuple(self.entropies), tuple(map(tuple, routes)),
        )  # fmt: skip
        self._deliver(gen)

    def fail(self, error: BaseException) -> None:
        self._deliver(error)

    def _call(self, on_delta: OnDelta, delta: TokenDelta) -> None:
        try:
            on_delta(delta)
        except Exception as error:  # the caller's bug ends its request, not the engine
            self.error = error

    def _deliver(self, result: Generation | BaseException) -> None:
        try:
            self.on_done(result)
        except Exception:  # nobody left to tell but the log; the engine keeps serving
            log.exception("a request's on_done callback raised")


def resolve_future(fut: asyncio.Future[Generation], result: Generation | BaseException) -> None:
    if fut.done():
        return
    if isinstance(result, BaseException):
        fut.set_exception(result)
    else:
        fut.set_result(result)


def future_setter(fut: Future[Generation]) -> Done:
    def done(result: Generation | BaseException) -> None:
        if isinstance(result, BaseException):
            fut.set_exception(result)
        else:
            fut.set_result(result)

    return done
