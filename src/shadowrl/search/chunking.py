"""Split a workspace into the pieces semantic search returns.

An agent asks "where is the checksum validated?" and wants one function back, not
a whole file: so Python is cut along its syntax tree (each function, each method
with its class as context, each class header, and the module-level code between
them), and any other text file into fixed, overlapping line windows. A Python file
that does not parse (a syntax error, or nesting too deep for the parser) is cut into
line windows too, so one bad file costs its structure, never the index. Chunks keep
1-based inclusive line ranges so a hit can be opened with `read_file` directly.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from shadowrl import pyast

MODULE_SYMBOL = "<module>"
# The line breaks Python's tokenizer counts; str.splitlines() also splits on \f, \v, \u2028...
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class ChunkConfig(BaseModel):
    """How files are cut into chunks."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_lines: int = Field(
        default=80, ge=1, description="Longest chunk; longer definitions are split."
    )
    window_lines: int = Field(
        default=40, ge=1, description="Window size for non-Python text files."
    )
    window_overlap: int = Field(
        default=8, ge=0, description="Lines shared by consecutive text windows."
    )
    max_file_bytes: int = Field(default=512_000, ge=1, description="Larger files are not indexed.")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A contiguous line range of one file, named by the symbol it defines."""

    path: str
    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    symbol: str  # "func", "Class", "Class.method", "<module>", or "" for plain text
    text: str


def chunk_file(path: str, text: str, config: ChunkConfig | None = None) -> list[Chunk]:
    """All chunks of one file; none for binary-looking or oversized content."""
    config = config or ChunkConfig()
    if "\x00" in text or len(text.encode("utf-8", "replace")) > config.max_file_bytes:
        return []
    lines = _LINE_BREAK.split(text.removesuffix("\n").removesuffix("\r")) if text else []
    if path.endswith((".py", ".pyi")):
        spans = _python_spans(path, text, lines)
        if spans is not None:
            return _bounded(path, lines, spans, config.max_lines)
    return _windows(path, lines, config.window_lines, config.window_overlap)


# A span is (start_line, end_line, symbol) before its text is attached.
_Span = tuple[int, int, str]


def is_line_chunked(chunks: Sequence[Chunk]) -> bool:
    """A Python file's chunks are line windows: it did not parse (see `chunk_file`)."""
    return any(c.symbol == "" for c in chunks)


def _python_spans(path: str, source: str, lines: list[str]) -> list[_Span] | None:
    """Definition and gap spans of a module, or None if it does not parse."""
    try:
        tree = pyast.parse(source, path)
    # ValueError: NUL bytes, bad encodings; RecursionError/MemoryError: too deeply nested;
    # SystemError: what CPython 3.11 raised for concurrent parses (pyast serialises them).
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return None
    return sorted(_container_spans(tree.body, lines, 1, len(lines), "", MODULE_SYMBOL))


def _container_spans(
    body: Sequence[ast.stmt], lines: list[str], start: int, end: int, prefix: str, gap_symbol: str
) -> Iterator[_Span]:
    """Spans of a module or class body: one per definition, one per run of other code."""
    cursor = start
    for node in body:
        if not isinstance(node, _DEFS):
            continue
        first = _first_line(node, lines, floor=cursor)
        last = node.end_lineno or node.lineno
        yield from _gap(lines, cursor, first - 1, gap_symbol)
        symbol = f"{prefix}{node.name}"
        if isinstance(node, ast.ClassDef):
            yield from _container_spans(node.body, lines, first, last, f"{symbol}.", symbol)
        else:
            yield first, last, symbol
        cursor = last + 1
    yield from _gap(lines, cursor, end, gap_symbol)


def _first_line(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, lines: list[str], floor: int
) -> int:
    """First line of a definition: its decorators and the comment block right above it."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    while first - 1 >= floor and lines[first - 2].lstrip().startswith("#"):
        first -= 1
    return first


def _gap(lines: list[str], start: int, end: int, symbol: str) -> Iterator[_Span]:
    """The code between definitions, trimmed of blank lines; nothing if it is empty."""
    while start <= end and not lines[start - 1].strip():
        start += 1
    while end >= start and not lines[end - 1].strip():
        end -= 1
    if start <= end:
        yield start, end, symbol


def _bounded(path: str, lines: list[str], spans: list[_Span], max_lines: int) -> list[Chunk]:
    """Attach text to spans, splitting any span longer than `max_lines`."""
    chunks = []
    for start, end, symbol in spans:
        for lo in range(start, end + 1, max_lines):
            hi = min(lo + max_lines - 1, end)
            chunks.append(Chunk(path, lo, hi, symbol, "\n".join(lines[lo - 1 : hi])))
    return chunks


def _windows(path: str, lines: list[str], size: int, overlap: int) -> list[Chunk]:
    """Fixed, overlapping line windows over a text file, skipping blank ones."""
    step = max(1, size - overlap)
    chunks = []
    for lo in range(0, len(lines), step):
        window = lines[lo : lo + size]
        if any(line.strip() for line in window):
            chunks.append(Chunk(path, lo + 1, lo + len(window), "", "\n".join(window)))
        if lo + size >= len(lines):
            break
    return chunks
