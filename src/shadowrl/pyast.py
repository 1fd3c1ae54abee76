"""Every `ast.parse` in the project, behind one process-wide lock.

CPython 3.11's parser keeps per-interpreter state that concurrent parses corrupt:
two threads parsing at once (the semantic index of one task being built while
another's is chunked, mutants being checked) can fail with `SystemError: AST
constructor recursion depth mismatch` on perfectly valid source. Parsing is a
small share of any caller's time, so serialising it costs little and makes the
result depend only on the source. This module imports nothing of the project, so
any layer can use it.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, one call at a time in this process."""
    with _LOCK:
        return ast.parse(source, filename)
