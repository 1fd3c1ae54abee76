"""Unified diffs, made and applied in pure Python.

Tasks carry three diffs (`bug_patch`, `patch`, `test_patch`). Applying them in
process, on a dict of file contents, keeps preparation and grading independent of
`git`/`patch` being installed in a sandbox and makes every step testable without
touching disk. Only what SWE-bench diffs use is supported: text files, `---`/`+++`
headers with `a/` `b/` prefixes, `/dev/null` for created or deleted files, and
hunks whose context must match exactly (a stale patch is an error, never a fuzz).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(ValueError):
    """The patch is malformed or does not apply to the given files."""


@dataclass(frozen=True)
class FilePatch:
    """The hunks for one file; `old`/`new` are None for a created/deleted file."""

    old: str | None
    new: str | None
    hunks: tuple[tuple[int, tuple[str, ...]], ...]  # (old start line, body lines)

    @property
    def path(self) -> str:
        return self.new if self.new is not None else str(self.old)


def _strip(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_patch(text: str) -> list[FilePatch]:
    """Split a unified diff into per-file patches (headers like `diff --git` are skipped)."""
    lines = text.splitlines()
    out: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (
            lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            i += 1
            continue
        old, new = _strip(lines[i][4:]), _strip(lines[i + 1][4:])
        i += 2
        hunks: list[tuple[int, tuple[str, ...]]] = []
        while i < len(lines) and (m := _HUNK.match(lines[i])):
            n_old = 1 if m.group(2) is None else int(m.group(2))
            n_new = 1 if m.group(4) is None else int(m.group(4))
            body, i = _hunk_body(lines, i + 1, n_old, n_new)
            hunks.append((int(m.group(1)), body))
        if old is None and new is None:
            raise PatchError(f"patch line {i}: both sides are /dev/null")
        out.append(FilePatch(old, new, tuple(hunks)))
    return out


def _hunk_body(lines: list[str], i: int, n_old: int, n_new: int) -> tuple[tuple[str, ...], int]:
    body: list[str] = []
    while n_old > 0 or n_new > 0:
        if i >= len(lines):
            raise PatchError("patch ends inside a hunk")
        line = lines[i] or " "  # some tools strip the space of empty context lines
        tag = line[0]
        if tag not in " +-":
            raise PatchError(f"bad hunk line {line!r}")
        n_old -= tag in " -"
        n_new -= tag in " +"
        body.append(line)
        i += 1
    if i < len(lines) and lines[i].startswith(_NO_NEWLINE):
        body.append(_NO_NEWLINE)
        i += 1
    return tuple(body), i


def _apply_one(fp: FilePatch, text: str) -> str | None:
    if fp.new is None:
        return None
    src = text.splitlines(keepends=True)
    dst: list[str] = []
    pos = 0
    for start, body in fp.hunks:
        at = max(start - 1, 0) if any(b[0] in " -" for b in body if b != _NO_NEWLINE) else start
        if at < pos:
            raise PatchError(f"{fp.path}: overlapping hunks")
        dst.extend(src[pos:at])
        pos = at
        for k, line in enumerate(body):
            if line == _NO_NEWLINE:
                continue
            eol = "" if k + 1 < len(body) and body[k + 1] == _NO_NEWLINE else "\n"
            if line[0] in " -":
                if pos >= len(src) or src[pos].rstrip("\n") != line[1:]:
                    raise PatchError(f"{fp.path}: hunk at line {start} does not apply")
                pos += 1
            if line[0] in " +":
                dst.append(line[1:] + eol)
    dst.extend(src[pos:])
    return "".join(dst)


def apply_patch(files: Mapping[str, str], patch: str) -> dict[str, str | None]:
    """The new contents of every file the patch touches (None = deleted).

    `files` maps relative paths to current text; files the patch creates must be absent.
    """
    changes: dict[str, str | None] = {}
    for fp in parse_patch(patch):
        if fp.old is None:
            if fp.path in files and files[fp.path] != "":
                raise PatchError(f"{fp.path}: patch creates a file that exists")
            current: str | None = ""
        else:
            current = changes[fp.old] if fp.old in changes else files.get(fp.old)
            if current is None:
                raise PatchError(f"{fp.old}: patch modifies a file that does not exist")
        changes[fp.path] = _apply_one(fp, current or "")
        if fp.old is not None and fp.new is not None and fp.old != fp.new:
            changes[fp.old] = None  # a rename
    return changes


def touched_paths(patch: str) -> list[str]:
    """Paths a patch creates, modifies or deletes, in order of appearance."""
    return [fp.path for fp in parse_patch(patch)]


def created_paths(patch: str) -> list[str]:
    """Paths a patch creates from /dev/null."""
    return [fp.path for fp in parse_patch(patch) if fp.old is None]


def make_patch(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> str:
    """A git-style unified diff turning `before` into `after` (None = file absent)."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        a = "/dev/null" if old is None else f"a/{path}"
        b = "/dev/null" if new is None else f"b/{path}"
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True), a, b
        )
        chunks.append(f"diff --git a/{path} b/{path}\n")
        for line in diff:
            chunks.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE + "\n")
    return "".join(chunks)
