"""Versioned suites: a pinned benchmark that grows with its users (`shadowrl bench grow`).

A grown suite is a directory holding `manifest.json` and one task file per version,
`v0001.jsonl` (the base suite), `v0002.jsonl`, ..., each with every task of that
version (the previous version's and the new ones), and the workspace snapshots of
grown tasks under `seeds/`. A version is never rewritten: growing writes the next
file. An eval of `<dir>/v0002.jsonl:heldout` records `suite_version` "<dir>@v0002" in
its pins (`version_of`), and the gate refuses to compare results of different
versions, even where the tasks it loads happen to hash alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shadowrl.tasks.task import Task, save_tasks

MANIFEST = "manifest.json"


def _file_of(suite: str) -> Path:
    name, sep, split = suite.rpartition(":")
    return Path(name if sep and split in ("train", "heldout") else suite)


def version_of(suite: str) -> str | None:
    """'<dir name>@v0002' for a version file of a grown suite (with or without a
    ':split'); None for any other suite."""
    path = _file_of(suite)
    if path.suffix == ".jsonl" and path.stem.startswith("v") and (path.parent / MANIFEST).is_file():
        return f"{path.parent.name}@{path.stem}"
    return None


def versions(root: Path) -> list[Path]:
    """The version files of the grown suite at `root`, oldest first."""
    return sorted(p for p in root.glob("v[0-9][0-9][0-9][0-9].jsonl"))


def manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else {"versions": []}


def write_version(root: Path, tasks: Sequence[Task], info: dict[str, Any]) -> Path:
    """Write `tasks` as the next version of the suite at `root` and record `info` (what
    was added, from where, the pin) in the manifest; the new file."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"v{len(versions(root)) + 1:04d}.jsonl"
    save_tasks(tasks, path)  # atomically
    book = manifest(root)
    book["versions"].append({"version": path.stem, "tasks": len(tasks), **info})
    (root / MANIFEST).write_text(json.dumps(book, indent=1) + "\n")
    return path
