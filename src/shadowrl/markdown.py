"""Markdown tables for the reports (eval, run, real-time): one writer, so every report's
tables have the same shape and a cell can never shift a column."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A GitHub table as lines: the header, the rule, one line per row (cells `str`'d;
    `|` inside a cell is escaped)."""
    lines = [_line(header), "|" + "---|" * len(header)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under {len(header)} columns")
        lines.append(_line(row))
    return lines


def _line(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
