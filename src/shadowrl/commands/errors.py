"""User mistakes on the command line: one line naming the problem and the fix, exit 2.

Commands raise `UsageError` for anything the user can fix (a missing file, a bad value,
an unknown name); `main` prints it without a traceback (`--debug` shows one). Config
validation errors are rewritten to name the key, the value and what is allowed, without
pydantic's documentation URLs.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


class UsageError(ValueError):
    """A mistake the user can fix; its message says what and how."""


def _value(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_validation(err: ValidationError) -> str:
    """`key: value (problem)` for each error of a config validation, joined by '; '."""
    parts = []
    for e in err.errors(include_url=False):
        key = ".".join(str(p) for p in e["loc"]) or "<config>"
        ctx = e.get("ctx") or {}
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown key {key!r}")
        elif e["type"] == "literal_error" and "expected" in ctx:
            parts.append(f"{key} = {_value(e['input'])}: allowed values are {ctx['expected']}")
        elif e["type"] == "missing":
            parts.append(f"{key}: required, but not set")
        else:
            parts.append(f"{key} = {_value(e['input'])}: {e['msg']}")
    return "; ".join(parts)
