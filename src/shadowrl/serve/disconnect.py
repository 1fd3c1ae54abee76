"""Cancel a request's work when its client hangs up.

Starlette does not cancel a handler whose client left, so without this a dropped
non-streaming request would decode to `max_tokens` for nobody (a streaming one is
cancelled by its response's own disconnect listener).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response

T = TypeVar("T")


async def unless_disconnected(request: Request, work: Coroutine[Any, Any, T]) -> T | Response:
    """Await `work`, cancelling it if the client hangs up first.

    Once the body is read, the next ASGI message can only be the disconnect (vLLM
    listens for it the same way).
    """
    task = asyncio.ensure_future(work)

    async def hung_up() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.ensure_future(hung_up())
    try:
        await asyncio.wait((task, watch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        task.cancel()  # no-op when it finished; aborts the generation when it did not
    if task.cancelled():
        return Response(status_code=499)  # nobody is listening; nginx's "client closed"
    return task.result()
