"""The engine's seam for mixture-of-experts routes: which experts each request's positions
went to, kept beside its logprobs (`routing.py` says why).

Built once per engine: `NoRoutes` for a dense model (every call is a no-op), `Recording`
for a model with routers. The engine tells it what each forward ran (a prefill, a decode
step) and which requests share a prompt's KV (a GRPO group, a running request's prompt),
and parks a finished request's routes with its KV in the prefix cache, so a later hit
knows the routes of the positions it did not recompute. MoE engines decode eagerly and
without speculation: HF's experts loop reads the routing back to the host (data-dependent
shapes), which a CUDA graph cannot capture, and verify steps do not record routes yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import Tensor

from shadowrl.inference.requests import Request
from shadowrl.inference.routing import RouteRecorder, routers


class RouteLog(Protocol):
    """Attaches routes to requests; `active` is False for a dense model."""

    active: bool

    def prefilled(
        self, leads: Sequence[Request], hits: Sequence[Tensor | None], lengths: Sequence[int]
    ) -> None:
        """The prefill just run covered `lengths[i]` new positions of `leads[i]`, after the
        prefix-cache hit whose routes are `hits[i]`."""

    def shared(self, source: Request, group: Sequence[Request], length: int) -> None:
        """`group` holds the KV of `source`'s first `length` positions: and its routes."""

    def decoded(self, requests: Sequence[Request]) -> None:
        """A decode step just fed one position of each request, in row order."""

    def discard(self) -> None:
        """Forget what the last forward routed (a KV recompute after a swap: the tokens
        keep the routes they were sampled under)."""

    def of(self, request: Request) -> Tensor | None:
        """[cached, layers, k] routes of a request's cached positions, to park with its KV."""


class NoRoutes:
    """A dense model: nothing to record."""

    active = False

    def prefilled(
        self, leads: Sequence[Request], hits: Sequence[Tensor | None], lengths: Sequence[int]
    ) -> None:
        pass

    def shared(self, source: Request, group: Sequence[Request], length: int) -> None:
        pass

    def decoded(self, requests: Sequence[Request]) -> None:
        pass

    def discard(self) -> None:
        pass

    def of(self, request: Request) -> Tensor | None:
        return None


class Recording:
    """Routes from the model's routers, attached to requests as `Request.routes` chunks."""

    active = True

    def __init__(self, model: Any) -> None:
        self.recorder = RouteRecorder(model)

    def prefilled(
        self, leads: Sequence[Request], hits: Sequence[Tensor | None], lengths: Sequence[int]
    ) -> None:
        routes = self.recorder.take()
        if routes.shape[0] == sum(lengths):  # prompts ran one by one (CPU), or all one length
            chunks = list(routes.split(list(lengths)))
        else:  # one padded batch: row i's first lengths[i] positions are real
            padded = routes.view(len(lengths), -1, *routes.shape[1:])
            chunks = [padded[i, :n] for i, n in enumerate(lengths)]
        for lead, hit, chunk in zip(leads, hits, chunks, strict=True):
            lead.routes = [chunk] if hit is None or not len(hit) else [hit, chunk]

    def shared(self, source: Request, group: Sequence[Request], length: int) -> None:
        prefix = torch.cat(source.routes)[:length]
        for request in group:
            if request is not source:
                request.routes = [prefix]

    def decoded(self, requests: Sequence[Request]) -> None:
        routes = self.recorder.take()
        for row, request in enumerate(requests):
            request.routes.append(routes[row : row + 1])

    def discard(self) -> None:
        self.recorder.take()

    def of(self, request: Request) -> Tensor | None:
        return torch.cat(request.routes) if request.routes else None


def route_log(model: Any) -> RouteLog:
    """`Recording` for a model with MoE routers, else `NoRoutes`."""
    return Recording(model) if routers(model) else NoRoutes()
