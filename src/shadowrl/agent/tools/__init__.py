"""The agent's tools: a name → tool registry and the `ToolSet` one episode offers.

Add a tool by writing a function with `@tool(...)` in one of the modules here and
listing it in `TOOLS`; its JSON schema comes from its signature.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shadowrl.agent.tools.base import FunctionTool, Tool, ToolContext, ToolError, bound, tool
from shadowrl.agent.tools.files import edit_file, list_dir, read_file, write_file
from shadowrl.agent.tools.search import grep, semantic_search
from shadowrl.agent.tools.shell import lint, run, submit, summarize
from shadowrl.types import ToolCall, ToolResult

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        read_file, edit_file, write_file, list_dir, grep, semantic_search, lint, run, submit,
        summarize,
    )
}  # fmt: skip


class ToolSet:
    """The tools offered in one episode, in the order the model sees them."""

    def __init__(self, tools: Iterable[Tool]):
        self.tools = {t.name: t for t in tools}

    @classmethod
    def from_names(cls, names: Sequence[str]) -> ToolSet:
        unknown = [n for n in names if n not in TOOLS]
        if unknown:
            raise ValueError(f"unknown tool(s) {unknown}; available: {sorted(TOOLS)}")
        return cls(TOOLS[n] for n in names)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style schemas, for the chat template and for argument validation."""
        return [t.schema for t in self.tools.values()]

    def is_read_only(self, name: str) -> bool:
        return self.tools[name].read_only

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        """Run one (already validated) call; failures come back as error text, never raise."""
        try:
            output, is_error = self.tools[call.name](ctx, **call.arguments), False
        except ToolError as e:
            output, is_error = f"Error: {e}", True
        except FileNotFoundError as e:
            output, is_error = f"Error: no such file: {e.filename or e}", True
        except Exception as e:  # a tool bug must not kill a whole rollout group
            output, is_error = f"Error: {type(e).__name__}: {e}", True
        return ToolResult(call.id, call.name, bound(output, ctx.config.tool_output_chars), is_error)


__all__ = [
    "TOOLS",
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolSet",
    "bound",
    "tool",
]
