"""File tools: read with line numbers, exact-string edit, write, list.

`edit_file` is an exact, unique string replacement (as in Claude Code / Cursor):
it cannot silently edit the wrong place, and when it refuses it says why and where,
so a small model can correct itself in one more turn.
"""

from __future__ import annotations

import difflib
import re

from shadowrl.agent.tools.base import ToolContext, ToolError, tool

_SKIP = frozenset({".git", "__pycache__", ".pytest_cache"})


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i}\t{line}" for i, line in enumerate(lines))


@tool(
    "Show a file with line numbers.",
    read_only=True,
    start_line="1-based",
    end_line="inclusive",
)
def read_file(ctx: ToolContext, path: str, start_line: int = 1, end_line: int | None = None) -> str:
    lines = ctx.read_text(path).splitlines()
    if not lines:
        return f"{path} is empty."
    first = max(start_line, 1)
    if first > len(lines):
        raise ToolError(f"start_line {start_line} is past the end of {path} ({len(lines)} lines)")
    last = min(end_line or len(lines), len(lines), first + ctx.config.read_file_lines - 1)
    out = _numbered(lines[first - 1 : last], first)
    if first > 1 or last < len(lines):
        out += f"\n[lines {first}-{last} of {len(lines)}]"
    return out


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _not_found_hint(text: str, old: str) -> str:
    """Where the model probably meant: a whitespace-insensitive match or the closest line."""
    lines = text.splitlines()
    target = old.strip().splitlines()[0].strip() if old.strip() else ""
    stripped = [line.strip() for line in lines]
    if target in stripped:
        n = stripped.index(target) + 1
        return f" Line {n} matches ignoring indentation: {lines[n - 1]!r}; copy whitespace exactly."
    close = difflib.get_close_matches(target, stripped, n=1, cutoff=0.6)
    if close:
        n = stripped.index(close[0]) + 1
        return f" Closest line is {n}: {lines[n - 1]!r}."
    return " Read the file first and copy the text exactly."


@tool(
    "Replace the exact text `old`, which must occur once, with `new`.",
    read_only=False,
)
def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    if not old:
        raise ToolError("`old` is empty; use write_file to create or overwrite a file")
    if old == new:
        raise ToolError("`old` and `new` are identical; nothing to change")
    text = ctx.read_text(path)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"`old` not found in {path}." + _not_found_hint(text, old))
    if count > 1:
        lines = sorted({_line_of(text, m.start()) for m in re.finditer(re.escape(old), text)})
        raise ToolError(
            f"`old` occurs {count} times in {path} (lines {', '.join(map(str, lines))}); "
            "include more surrounding lines to make it unique"
        )
    at = text.index(old)
    ctx.sandbox.write_file(path, text[:at] + new + text[at + len(old) :])
    first = _line_of(text, at)
    new_lines = new.splitlines() or [""]
    shown = _numbered(new_lines[:8], first) + ("\n..." if len(new_lines) > 8 else "")
    return f"Edited {path}. Lines now:\n{shown}"


@tool("Create or overwrite a file.", read_only=False)
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    ctx.sandbox.write_file(path, content)
    return f"Wrote {len(content.splitlines())} lines to {path}."


@tool("List a directory.", read_only=True)
def list_dir(ctx: ToolContext, path: str = ".") -> str:
    prefix = path.strip("/").removeprefix("./").removeprefix(".")
    prefix = f"{prefix}/" if prefix else ""
    entries: set[str] = set()
    for f in ctx.sandbox.list_files():
        if not f.startswith(prefix) or any(part in _SKIP for part in f.split("/")[:-1]):
            continue
        head, sep, _ = f[len(prefix) :].partition("/")
        entries.add(head + sep)
    if not entries:
        raise ToolError(f"no such directory or it is empty: {path}")
    shown = sorted(entries)
    return "\n".join(shown[:200]) + (f"\n[{len(shown) - 200} more]" if len(shown) > 200 else "")
