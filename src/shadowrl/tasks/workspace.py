"""A workspace that cannot change under the tests, and source whose lines are what they look like.

The guard in the test interpreter blames code by file and line, so anything that makes a
file's lines differ from what the grader diffed, or makes code appear that the grader
never saw, escapes it. Before the run the grader (its own process, through the sandbox's
exec, never the agent's code) checks and hardens the fork:

- no symlink the pristine workspace did not have (a module replaced by a link to a data
  file, or to a file outside, is not what the diff saw);
- every source file the agent changed declares an ASCII-compatible encoding (a
  `# coding: utf-7` file's bytes are not its lines; `# -*- coding: utf-8 -*-` is fine);
- every file and directory is made read-only, and a fingerprint of the tree (type, mode,
  size, ctime, link target of every entry) is taken; after the run it must be the same.
  A module written at import time and then imported, a test file rewritten, a file
  created and deleted again (its directory's ctime moves) or a `chmod` back to writable
  all change it. `ctime` cannot be set from user space.

Only the run's nonce directory (the outcome file) is exempt.

`decoded` and `agent_lines` read a source as the import system does (its coding cookie
honoured, lines split where the tokenizer splits them): the lines the guard blames.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from importlib.util import decode_source
from io import BytesIO
from pathlib import Path
from tokenize import detect_encoding

from shadowrl.sandbox import Sandbox

# Encodings whose bytes 0-127 are ASCII and never start a multi-byte sequence: a line
# break in the bytes is a line break in the text.
_ASCII_COMPATIBLE = {"utf-8", "utf-8-sig", "ascii", "iso8859-1", "iso8859-15", "cp1252"}


def source_encoding(data: bytes) -> str:
    """The codec Python would decode `data` with (its coding cookie, else utf-8)."""
    try:
        found, _ = detect_encoding(BytesIO(data).readline)
    except SyntaxError:
        return "unknown"
    try:
        return codecs.lookup(found).name
    except LookupError:
        return "unknown"


def bad_encodings(sources: Mapping[str, tuple[bytes, bytes | None]]) -> list[str]:
    """`path: encoding` for each changed source whose encoding is not ASCII-compatible."""
    hits = []
    for path, (_, new) in sorted(sources.items()):
        if new is not None and (enc := source_encoding(new)) not in _ASCII_COMPATIBLE:
            hits.append(f"{path}: source encoding {enc} is not ASCII-compatible")
    return hits


def _links(sandbox: Sandbox) -> dict[str, str]:
    res = sandbox.exec("find . -type l -printf '%P\\0%l\\0'", timeout=60)
    parts = res.stdout.split("\0")
    return dict(zip(parts[0:-1:2], parts[1::2], strict=True))


def new_links(sandbox: Sandbox, pristine: Iterable[tuple[str, str]]) -> list[str]:
    """Symlinks in `sandbox` that the pristine workspace (`pristine`: (path, target)) lacks."""
    before = dict(pristine)
    return [
        f"{path}: a symlink to {target!r} the pristine workspace does not have"
        for path, target in sorted(_links(sandbox).items())
        if before.get(path) != target
    ]


def _outside(nonce_dir: str) -> str:
    return f"find . -path {shlex.quote('./' + nonce_dir)} -prune -o"


def freeze(sandbox: Sandbox, nonce_dir: str) -> str:
    """Make every file and directory but `nonce_dir` read-only; the tree's fingerprint."""
    find = _outside(nonce_dir)
    sandbox.exec(f"{find} \\( -type f -o -type d \\) -exec chmod a-w {{}} + ", timeout=120)
    return fingerprint(sandbox, nonce_dir)


def fingerprint(sandbox: Sandbox, nonce_dir: str) -> str:
    """A digest of every entry's type, mode, size, ctime and link target (`nonce_dir` aside)."""
    listing = f"{_outside(nonce_dir)} -printf '%y %m %s %C@ %P\\0%l\\0'"
    res = sandbox.exec(f"{listing} | LC_ALL=C sort -z | sha256sum", timeout=120)
    return res.stdout.split(" ", 1)[0] if res.exit_code == 0 else f"error: {res.stderr[-200:]}"


def changed_entries(sandbox: Sandbox, nonce_dir: str, marker: str) -> list[str]:
    """Entries whose inode changed after `marker` (a file in `nonce_dir` made before the run)."""
    cmd = f"{_outside(nonce_dir)} -cnewer {shlex.quote(marker)} -printf '%P\\0'"
    names = sandbox.exec(cmd, timeout=120).stdout.split("\0")
    return [n or "." for n in names[:-1]][:20]


def thaw(sandbox: Sandbox) -> None:
    """Writable again, so the fork can be removed."""
    sandbox.exec("chmod -R u+w . 2>/dev/null; true", timeout=120)


def pristine_links(root: Path) -> list[tuple[str, str]]:
    """(path, target) of every symlink of the pristine workspace `root`."""
    return [
        (str(p.relative_to(root)), os.readlink(p))
        for p in sorted(root.rglob("*"))
        if p.is_symlink()
    ]


def decoded(data: bytes) -> str | None:
    """Source text as the import system reads it (coding cookie honoured: a utf-7 file is not
    what its bytes look like), None if it cannot be decoded."""
    try:
        return decode_source(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Python's tokenizer counts as a new line


def _lines(data: bytes) -> list[str]:
    """The lines of a source as the import system numbers them: of its decoded text."""
    text = decoded(data)
    return _LINE_BREAK.split(text if text is not None else data.decode(errors="replace"))


def agent_lines(
    sources: Mapping[str, tuple[bytes, bytes | None]],
) -> dict[str, list[tuple[int, int]]]:
    """{path: [(first, last)]}: the runs of lines of each (pristine, current) source that
    the agent added or changed, numbered as in the current file (its decoded text)."""
    lines = {}
    for path, (old, new) in sources.items():
        if new is None:
            continue
        before, after = _lines(old), _lines(new)
        ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        lines[path] = [(j1 + 1, j2) for tag, _, _, j1, j2 in ops if tag in ("replace", "insert")]
    return lines
