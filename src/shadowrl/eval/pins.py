"""Fingerprints of what an evaluation measured: the tasks, the harness and the config.

A pass rate means nothing without knowing which tasks, which prompt and which tool
code produced it. These hashes are content hashes, independent of where the
checkout lives: a task's seed directory is hashed by its files, not by its path, and
the harness by the agent package's source files plus the system prompt. Change one
byte of a tool or of a task and results stop being comparable (see `gate`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from shadowrl.tasks.task import Task

SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def _digest(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))  # length-prefixed: no ambiguous joins
        h.update(chunk)
    return h.hexdigest()[:16]


def _files(root: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not SKIP_DIRS.intersection(p.relative_to(root).parts)
        and (suffixes is None or p.suffix in suffixes)
    )


@cache
def tree_hash(root: Path, suffixes: tuple[str, ...] | None = None) -> str:
    """Hash of the relative paths and bytes of every file under `root` (caches skipped)."""
    files = _files(root, suffixes)
    return _digest(
        c for p in files for c in (p.relative_to(root).as_posix().encode(), p.read_bytes())
    )


def task_fingerprint(task: Task) -> dict[str, object]:
    """The task's record with its seed directory replaced by that directory's content hash."""
    record = task.model_dump(mode="json")
    if task.seed.path is not None:
        record["seed"]["path"] = "tree:" + tree_hash(Path(task.seed.path))
    return record


def suite_hash(tasks: Sequence[Task], prompt: Callable[[Task], str]) -> str:
    """Hash of the tasks' content and of the prompt each one is rendered to, order-free."""
    items = sorted(
        json.dumps([task_fingerprint(t), prompt(t)], sort_keys=True).encode() for t in tasks
    )
    return _digest(items)


def harness_version(system_prompt: str) -> str:
    """Hash of the agent package's source (loop, tools, parsing, rendering) plus the prompt."""
    import shadowrl.agent

    (root,) = shadowrl.agent.__path__
    return _digest(
        [tree_hash(Path(root), (".py", ".md", ".txt", ".j2")).encode(), system_prompt.encode()]
    )


class ConfigPins(NamedTuple):
    """The digest of a whole config tree and of each of its sections."""

    digest: str
    sections: dict[str, str]


def config_pins(config: BaseModel) -> ConfigPins:
    """Pins of `config` (any pydantic model; the command's whole config tree)."""
    blob = json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()
    return ConfigPins(hashlib.sha256(blob).hexdigest()[:16], config_sections(config))


def config_sections(config: BaseModel) -> dict[str, str]:
    """Digest of each config section and sub-section ('tasks', 'tasks.shaping', ...).

    Sub-sections let the gate require equality of exactly what shapes a measurement
    (e.g. reward shaping) while ignoring bookkeeping next to it (e.g. a cache path).
    """
    out = {}
    for name, value in config.model_dump(mode="json").items():
        out[name] = _digest([json.dumps(value, sort_keys=True).encode()])
        if isinstance(value, dict):
            for sub, inner in value.items():
                if isinstance(inner, dict):
                    out[f"{name}.{sub}"] = _digest([json.dumps(inner, sort_keys=True).encode()])
    return out
