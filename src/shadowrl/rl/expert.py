"""A scripted expert that demonstrates the harness on tasks whose fix is known.

SmolLM2-135M does not emit tool calls zero-shot, so RL alone gets no signal. As in
Cursor's pipeline we warm-start with SFT on demonstrations, and the demonstrations go
through the *real* harness (same prompt, tool schemas, tokenisation): the expert is
just a scripted policy that reads the buggy file, edits exactly the hunks of the gold
patch, runs the visible tests and submits. Its trajectories' segments are the SFT data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    """One replacement derived from a unified-diff hunk."""

    path: str
    old: str
    new: str


def parse_patch(patch: str) -> list[Hunk]:
    """Turn a unified diff into exact-string replacements (context kept for uniqueness)."""
    hunks: list[Hunk] = []
    path = ""
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if path and (old or new):
            hunks.append(Hunk(path, "".join(old), "".join(new)))
        old.clear()
        new.clear()

    for line in patch.splitlines(keepends=True):
        if line.startswith("+++ "):
            flush()
            target = line[4:].strip().split("\t")[0]
            path = target[2:] if target.startswith(("a/", "b/")) else target
        elif line.startswith(("--- ", "diff ", "index ")):
            flush()
        elif line.startswith("@@"):
            flush()
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file"
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith(" ") or line in ("\n", "\r\n"):
            text = line[1:] if line.startswith(" ") else line
            old.append(text)
            new.append(text)
    flush()
    return hunks


def _call(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def expert_replies(patch: str, test_cmd: str | None = None) -> list[str]:
    """The assistant turns of a demonstration: read, edit each hunk, test, submit."""
    hunks = parse_patch(patch)
    if not hunks:
        raise ValueError("gold patch has no hunks")
    replies = []
    for path in dict.fromkeys(h.path for h in hunks):
        replies.append(f"Let me read {path}.\n" + _call("read_file", path=path))
    for h in hunks:
        replies.append("I found the bug; fixing it.\n" + _call("edit_file", path=h.path, old=h.old, new=h.new))
    if test_cmd:
        replies.append("Running the tests.\n" + _call("run", command=test_cmd))
    replies.append("The fix is done.\n" + _call("submit"))
    return replies
