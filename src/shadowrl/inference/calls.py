"""How callers reach the engine thread: awaitable, streamed and blocking generation.

The engine thread (`engine.py`) only knows requests and their two callbacks; the methods
here turn those callbacks into an awaited result, an async stream of deltas, or a list
of results for a blocking caller, and abort a request whose caller went away.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import Future
from typing import Protocol

from shadowrl.inference.requests import (
    Done,
    OnDelta,
    Request,
    TokenDelta,
    future_setter,
    resolve_future,
)
from shadowrl.types import Generation, SamplingParams

Spec = tuple[Sequence[int], SamplingParams, Done, OnDelta | None]


class _Thread(Protocol):
    @property
    def started(self) -> bool: ...
    def start(self) -> object: ...
    def stop(self) -> None: ...
    def submit(
        self, prompt_ids: Sequence[int], sampling: SamplingParams, on_done: Done,
        on_delta: OnDelta | None = None,
    ) -> Request: ...  # fmt: skip
    def abort(self, request: Request) -> None: ...
    def submit_all(self, specs: Sequence[Spec]) -> list[Request]: ...


class Calls:
    """The engine's caller-side methods, built on its `submit`, `abort`, `start`, `stop`."""

    async def generate(
        self: _Thread, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> Generation:
        """Continue `prompt_ids` (the `Policy` protocol); cancelling the task aborts it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Generation] = loop.create_future()

        def done(result: Generation | BaseException) -> None:
            loop.call_soon_threadsafe(resolve_future, fut, result)

        request = self.submit(prompt_ids, sampling, done)
        try:
            return await fut
        finally:
            self.abort(request)

    async def generate_stream(
        self: _Thread, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> AsyncIterator[TokenDelta]:
        """Yield one `TokenDelta` per new token, then an empty one carrying finish_reason."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[TokenDelta | BaseException] = asyncio.Queue()

        def put(item: TokenDelta | BaseException) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def done(result: Generation | BaseException) -> None:
            if isinstance(result, BaseException):
                put(result)

        request = self.submit(prompt_ids, sampling, done, put)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if item.finish_reason is not None:
                    return
        finally:
            self.abort(request)

    def generate_batch(
        self: _Thread,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingParams | Sequence[SamplingParams],
    ) -> list[Generation]:
        """Blocking: run all prompts together (starting the engine for the call if needed)."""
        params = [sampling] * len(prompts) if isinstance(sampling, SamplingParams) else sampling
        futures: list[Future[Generation]] = [Future() for _ in prompts]
        specs = [
            (p, s, future_setter(f), None) for p, s, f in zip(prompts, params, futures, strict=True)
        ]
        owns_thread = not self.started
        self.start()
        try:
            self.submit_all(specs)
            return [f.result() for f in futures]
        finally:
            if owns_thread:
                self.stop()
