"""Unified diffs, made and applied in pure Python.

Tasks carry three diffs (`bug_patch`, `patch`, `test_patch`). Applying them in
process, on a dict of file contents, keeps preparation and grading independent of
`git`/`patch` being installed in a sandbox and makes every step testable without
touching disk. Every text diff `git diff` writes is read: `---`/`+++` headers with
`a/` `b/` prefixes (quoted when git quotes a name), `/dev/null` for created or
deleted files, the extended headers (`new file mode`, `deleted file mode`, renames
and copies with their similarity index, `old mode`/`new mode`), sections with no
hunk at all (an empty file created, a pure rename or mode change) and the
`\\ No newline at end of file` marker on either side. File modes are parsed but not
applied: a workspace here is file contents. Binary patches are refused with the
line they start at. Hunk context must match exactly (a stale patch is an error,
never a fuzz).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
# Extended header lines of a `diff --git` section that carry nothing we apply.
_IGNORED = ("index ", "similarity index ", "dissimilarity index ", "old mode ", "new mode ")


class PatchError(ValueError):
    """The patch is malformed or does not apply to the given files."""


@dataclass(frozen=True)
class FilePatch:
    """The hunks for one file; `old`/`new` are None for a created/deleted file.

    `old != new` is a rename, or a copy when `copy` is set (the old file stays).
    """

    old: str | None
    new: str | None
    hunks: tuple[tuple[int, tuple[str, ...]], ...]  # (old start line, body lines)
    copy: bool = False

    @property
    def path(self) -> str:
        return self.new if self.new is not None else str(self.old)


def _split_lines(text: str) -> list[str]:
    """Lines with their '\\n' kept; only '\\n' ends a line (a form feed is content)."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(name: str) -> str:
    """A name as git writes it: C-quoted (`"a/t\\303\\251st"`) when it has odd bytes."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    raw, body, k = bytearray(), name[1:-1], 0
    while k < len(body):  # octal escapes are the bytes of UTF-8
        if body[k] == "\\" and re.match(r"[0-7]{3}", body[k + 1 : k + 4]):
            raw.append(int(body[k + 1 : k + 4], 8))
            k += 4
        elif body[k] == "\\" and body[k + 1 : k + 2] in _ESCAPES:
            raw.append(_ESCAPES[body[k + 1]])
            k += 2
        else:
            raw += body[k].encode()
            k += 1
    return raw.decode("utf-8", errors="surrogateescape")


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def _strip(name: str) -> str | None:
    """The path of a `---`/`+++` name: unquoted, without its tab-separated tail or prefix."""
    quoted = _QUOTED.match(name)
    name = _unquote(quoted.group(0)) if quoted else name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _git_names(line: str) -> tuple[str | None, str | None]:
    """Both names of a `diff --git a/X b/Y` line when they can be told apart."""
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):
        m = _QUOTED.match(rest)
        return (_strip(m.group(0)), _strip(rest[m.end() :].strip())) if m else (None, None)
    half = (len(rest) - 1) // 2  # same name on both sides: 'a/P b/P'
    if rest[half : half + 3] == " b/" and rest[2:half] == rest[half + 3 :]:
        return rest[2:half], rest[half + 3 :]
    parts = rest.split(" b/")
    return (_strip(parts[0]), _strip("b/" + parts[1])) if len(parts) == 2 else (None, None)


def parse_patch(text: str) -> list[FilePatch]:
    """Split a unified diff into per-file patches (text outside file sections is skipped)."""
    lines = [line.removesuffix("\n") for line in _split_lines(text)]
    out: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("diff --git "):
            fp, i = _git_section(lines, i)
            out.append(fp)
        elif lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip(lines[i][4:]), _strip(lines[i + 1][4:])
            hunks, end = _hunks(lines, i + 2)
            out.append(_checked(FilePatch(old, new, hunks), i + 1))
            i = end
        else:
            i += 1
    return out


def _checked(fp: FilePatch, lineno: int) -> FilePatch:
    if fp.old is None and fp.new is None:
        raise PatchError(f"patch line {lineno}: both sides are /dev/null")
    return fp


def _git_section(lines: list[str], i: int) -> tuple[FilePatch, int]:
    """One `diff --git` section: its extended headers, then `---`/`+++` and hunks if any."""
    start = i
    old, new = _git_names(lines[i])
    created = deleted = copy = False
    i += 1
    while i < len(lines) and not lines[i].startswith(("diff --git ", "--- ", "@@ ")):
        line = lines[i]
        if line.startswith(("Binary files ", "GIT binary patch")):
            raise PatchError(f"patch line {i + 1}: binary patch for {new or old}; only text diffs")
        if line.startswith("new file mode "):
            created = True
        elif line.startswith("deleted file mode "):
            deleted = True
        elif line.startswith(("rename from ", "copy from ")):
            old, copy = _unquote(line.split(" ", 2)[2]), line.startswith("copy")
        elif line.startswith(("rename to ", "copy to ")):
            new = _unquote(line.split(" ", 2)[2])
        elif not line.startswith(_IGNORED):
            break  # the section has ended (e.g. a mail signature after the last file)
        i += 1
    old, new = (None if created else old), (None if deleted else new)
    hunks: tuple[tuple[int, tuple[str, ...]], ...] = ()
    if i + 1 < len(lines) and lines[i].startswith("--- ") and lines[i + 1].startswith("+++ "):
        old, new = _strip(lines[i][4:]), _strip(lines[i + 1][4:])
        hunks, i = _hunks(lines, i + 2)
    elif old is None and new is None:
        raise PatchError(f"patch line {start + 1}: cannot tell the file names of {lines[start]!r}")
    return _checked(FilePatch(old, new, hunks, copy), start + 1), i


def _hunks(lines: list[str], i: int) -> tuple[tuple[tuple[int, tuple[str, ...]], ...], int]:
    hunks: list[tuple[int, tuple[str, ...]]] = []
    while i < len(lines) and (m := _HUNK.match(lines[i])):
        n_old = 1 if m.group(2) is None else int(m.group(2))
        n_new = 1 if m.group(4) is None else int(m.group(4))
        body, i = _hunk_body(lines, i + 1, n_old, n_new)
        hunks.append((int(m.group(1)), body))
    if i < len(lines) and lines[i].startswith("@@"):
        raise PatchError(f"patch line {i + 1}: bad hunk header {lines[i]!r}")
    return tuple(hunks), i


def _hunk_body(lines: list[str], i: int, n_old: int, n_new: int) -> tuple[tuple[str, ...], int]:
    """The body lines of one hunk; a no-newline marker follows the line it is about."""
    body: list[str] = []
    while n_old > 0 or n_new > 0 or (i < len(lines) and lines[i].startswith("\\ ")):
        if i >= len(lines):
            raise PatchError(f"patch line {i}: patch ends inside a hunk")
        line = lines[i] or " "  # some tools strip the space of empty context lines
        tag = line[0]
        if tag == "\\" and body:
            body.append(_NO_NEWLINE)
        elif tag in " +-":
            n_old -= tag in " -"
            n_new -= tag in " +"
            if n_old < 0 or n_new < 0:
                raise PatchError(f"patch line {i + 1}: hunk longer than its header says")
            body.append(line)
        else:
            raise PatchError(f"patch line {i + 1}: bad hunk line {line!r}")
        i += 1
    return tuple(body), i


def _apply_one(fp: FilePatch, text: str) -> str | None:
    if fp.new is None:
        return None
    src = _split_lines(text)
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
                if pos >= len(src) or src[pos].removesuffix("\n") != line[1:]:
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
        if fp.old is not None and fp.new is not None and fp.old != fp.new and not fp.copy:
            changes[fp.old] = None  # a rename
    return changes


def touched_paths(patch: str) -> list[str]:
    """Paths a patch creates, modifies or deletes (a rename's both sides), in order."""
    paths: dict[str, None] = {}
    for fp in parse_patch(patch):
        paths.update(dict.fromkeys(p for p in (fp.old, fp.new) if p is not None))
    return list(paths)


def created_paths(patch: str) -> list[str]:
    """Paths a patch creates: from /dev/null, or as a rename's or copy's target."""
    return [fp.path for fp in parse_patch(patch) if fp.new is not None and fp.old != fp.new]


def make_patch(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> str:
    """A git-style unified diff turning `before` into `after` (None = file absent)."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        a = "/dev/null" if old is None else f"a/{path}"
        b = "/dev/null" if new is None else f"b/{path}"
        diff = difflib.unified_diff(_split_lines(old or ""), _split_lines(new or ""), a, b)
        chunks.append(f"diff --git a/{path} b/{path}\n")
        for line in diff:
            chunks.append(line if line.endswith("\n") else line + "\n" + _NO_NEWLINE + "\n")
    return "".join(chunks)
