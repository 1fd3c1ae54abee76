"""What a tool is, what it may touch, and how its schema is derived.

A tool is a plain function `fn(ctx, **args) -> str`. Its OpenAI-style JSON schema
is derived from the function's signature (names, types, defaults) plus one short
description per parameter, so the schema the model sees can never drift from the
code that runs. Tools talk to the workspace only through `ctx.sandbox`.
"""

from __future__ import annotations

import inspect
import threading
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from shadowrl.agent.config import AgentConfig
from shadowrl.sandbox import Sandbox
from shadowrl.search import SemanticIndex


class ToolError(Exception):
    """A problem the model caused and can fix (bad path, ambiguous edit...)."""


@dataclass
class ToolContext:
    """Per-episode state the tools share. `index` is replaced as the workspace changes."""

    sandbox: Sandbox
    config: AgentConfig
    index: SemanticIndex | None = None
    deadline: float = float("inf")  # time.monotonic() at which the episode ends
    submitted: bool = False
    summary_requested: bool = False  # set by `summarize`; the loop clears it
    lock: threading.Lock = field(default_factory=threading.Lock)

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def read_text(self, path: str) -> str:
        """A workspace file as text; refuses binary files with a clear error."""
        data = self.sandbox.read_file(path)
        if b"\0" in data[:1024]:
            raise ToolError(f"{path} is a binary file")
        return data.decode("utf-8", errors="replace")


class Tool(Protocol):
    """One thing the model can do. `read_only` tools may run concurrently."""

    @property
    def name(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def schema(self) -> dict[str, Any]:
        """OpenAI-style `{"type": "function", "function": {...}}`."""
        ...

    def __call__(self, ctx: ToolContext, **args: Any) -> str: ...


_JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}


def _json_type(annotation: Any) -> dict[str, Any]:
    """`str`, `int | None`, `list[str]`... → JSON schema type."""
    if isinstance(annotation, types.UnionType):
        (annotation,) = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation) or annotation
    out: dict[str, Any] = {"type": _JSON_TYPE[origin]}
    if origin is list:
        out["items"] = _json_type(typing.get_args(annotation)[0])
    return out


@dataclass(frozen=True)
class FunctionTool:
    """A `Tool` made from a function and its docstring-free schema pieces."""

    name: str
    description: str
    read_only: bool
    fn: Callable[..., str]
    params: dict[str, str]  # parameter -> short description (optional)

    @property
    def schema(self) -> dict[str, Any]:
        hints = typing.get_type_hints(self.fn)
        sig = inspect.signature(self.fn)
        props, required = {}, []
        for p in list(sig.parameters.values())[1:]:  # skip ctx
            props[p.name] = _json_type(hints[p.name])
            if p.name in self.params:  # only where the name and type do not say it all
                props[p.name]["description"] = self.params[p.name]
            if p.default is inspect.Parameter.empty:
                required.append(p.name)
        parameters = {"type": "object", "properties": props, "required": required}
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def __call__(self, ctx: ToolContext, **args: Any) -> str:
        return self.fn(ctx, **args)


def tool(
    description: str, *, read_only: bool, **params: str
) -> Callable[[Callable[..., str]], FunctionTool]:
    """Decorator: `@tool("Show a file.", read_only=True, start_line="1-based")`."""

    def wrap(fn: Callable[..., str]) -> FunctionTool:
        return FunctionTool(fn.__name__, description, read_only, fn, params)

    return wrap


def bound(text: str, limit: int) -> str:
    """Cap `text` at about `limit` chars, keeping head and tail (errors tend to be last)."""
    if len(text) <= limit:
        return text
    head, tail = int(limit * 0.6), int(limit * 0.4)
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} chars truncated ...]\n{text[len(text) - tail :]}"
