"""Read a workspace into the `{path: text}` mapping an index is built from.

Indexes only see text: binaries, oversized files and tool/VCS directories are
left out here, once, so the index and its cache key agree on what a workspace is.
Works on a sandbox (through its protocol) or on a plain directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from shadowrl.sandbox import Sandbox

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".tox", "build", "dist", ".eggs"}
)  # fmt: skip


def decode_text(data: bytes, max_bytes: int) -> str | None:
    """The file as text, or None when it is too big or looks binary."""
    if len(data) > max_bytes or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _wanted(path: str) -> bool:
    return not any(part in SKIP_DIRS or part.endswith(".egg-info") for part in path.split("/")[:-1])


def read_texts(
    paths: Iterable[str], read: Callable[[str], bytes], max_bytes: int = 512_000
) -> dict[str, str]:
    """`{path: text}` for the indexable files among `paths`, read with `read`."""
    files = {}
    for path in paths:
        if _wanted(path) and (text := decode_text(read(path), max_bytes)) is not None:
            files[path] = text
    return files


def sandbox_texts(sandbox: Sandbox, max_bytes: int = 512_000) -> dict[str, str]:
    """Every indexable file of a sandbox's workspace."""
    return read_texts(sandbox.list_files(), sandbox.read_file, max_bytes)


def directory_texts(root: str | Path, max_bytes: int = 512_000) -> dict[str, str]:
    """Every indexable file under `root`, keyed by its POSIX path relative to `root`."""
    root = Path(root)
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        rel = Path(dirpath).relative_to(root)
        paths += [(rel / name).as_posix() for name in sorted(filenames)]
    return read_texts(paths, lambda rel: (root / rel).read_bytes(), max_bytes)


def changed_texts(
    sandbox: Sandbox,
    indexed: Iterable[str],
    also_check: Iterable[str] = (),
    max_bytes: int = 512_000,
) -> dict[str, str | None]:
    """What `SemanticIndex.updated` needs for a fork: changed files' text, None for gone ones.

    `sandbox.changed_files()` is relative to the root workspace; if the index was built
    from a snapshot that had already changed files, pass that snapshot's changed files
    as `also_check` so a fork that reverts one is noticed. Unchanged texts cost nothing
    in `updated`. A file that became binary or too big counts as gone.
    """
    present = set(sandbox.list_files())
    changed: dict[str, str | None] = dict.fromkeys(set(indexed) - present)
    for path in {*sandbox.changed_files(), *also_check}:
        if path in present and _wanted(path):
            changed[path] = decode_text(sandbox.read_file(path), max_bytes)
    return changed
