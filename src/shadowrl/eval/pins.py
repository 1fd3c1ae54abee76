"""Fingerprints of what an evaluation measured: the tasks, the harness and the config.

A pass rate means nothing without knowing which tasks, which prompt and which tool
behaviour produced it. These hashes are content hashes, independent of where the
checkout lives: a task's seed directory is hashed by its files, not by its path, and
the harness by what it does (the token ids of a scripted episode on a fixture
workspace, the tool schemas and the tools' outputs), not by its source text. Change
what a tool returns, what the model is shown, or one byte of a task, and results
stop being comparable (see `gate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from shadowrl.agent import ScriptedPolicy, ToolContext, ToolSet, format_tool_calls, run_episode
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.summary import SUMMARY_REQUEST
from shadowrl.sandbox import create_sandbox
from shadowrl.tasks import Task
from shadowrl.types import ToolCall, ToolResult, Trajectory

SKIP_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def _digest(chunks: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))  # length-prefixed: no ambiguous joins
        h.update(chunk)
    return h.hexdigest()[:16]


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(root).parts)
    )


@cache
def tree_hash(root: Path) -> str:
    """Hash of the relative paths and bytes of every file under `root` (caches skipped)."""
    files = _files(root)
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


# -- harness version: a fingerprint of behaviour ----------------------------------------

# The fixture workspace and one fixed call per tool. Chosen so every output is
# deterministic: no timings, no absolute paths, no scores of a float model.
FIXTURE_FILES = {
    "calc.py": "import os\n\n\ndef add(x, y):\n    return x - y\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "README.md": "# calc\n",
}
FIXTURE_TASK = "add() in calc.py subtracts. Fix it."
FIXTURE_CALLS: dict[str, dict[str, Any]] = {
    "read_file": {"path": "calc.py", "start_line": 4},
    "edit_file": {"path": "calc.py", "old": "x - y", "new": "x + y"},
    "write_file": {"path": "notes.txt", "content": "one\ntwo\n"},
    "list_dir": {"path": "."},
    "grep": {"pattern": r"def \w+", "glob": "*.py"},
    # Refused before any index is touched: loading the real embedder costs ~2.5 s here
    # and its float scores may differ across machines, so only this path is pinned.
    "semantic_search": {"query": "where are numbers added", "k": 0},
    "lint": {"paths": ["calc.py"]},
    "run": {"command": "cat notes.txt; echo oops >&2; exit 3"},
    "summarize": {},  # followed by the fixture's summary (`_fixture_replies`)
    "submit": {},
}
_FIXTURE_SUMMARY = "Summary: calc.py now adds; notes.txt written."
_TEMP_PATH = re.compile(re.escape(tempfile.gettempdir()) + r"/[^\s/'\"]+")


class _PathFreeTools(ToolSet):
    """The configured tools, their outputs with any temp-dir path replaced by `<tmp>`."""

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        result = super().execute(ctx, call)
        return dataclasses.replace(result, output=_TEMP_PATH.sub("<tmp>", result.output))


def _fixture_replies(tools: Sequence[str]) -> list[str]:
    """One Hermes reply per configured tool that has a fixture call, `submit` last."""
    names = sorted((n for n in tools if n in FIXTURE_CALLS), key=lambda n: n == "submit")
    replies = [
        format_tool_calls("", [ToolCall(f"fixture_{i}", n, FIXTURE_CALLS[n])])
        for i, n in enumerate(names)
    ]
    if replies:
        replies[0] = "I will look around first.\n" + replies[0]
    if "summarize" in names:  # the loop asks for the summary right after the call
        replies.insert(names.index("summarize") + 1, _FIXTURE_SUMMARY)
    return replies


@contextlib.contextmanager
def _quiet_local_sandbox() -> Iterator[None]:
    """The fixture runs fixed, trusted commands: its 'local isolates nothing' warning is noise."""
    logger = logging.getLogger("shadowrl.sandbox.local")
    before, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = before


def _fixture_episode(tokenizer: Any, agent: AgentConfig) -> Trajectory:
    replies = _fixture_replies(agent.tools)
    # Budgets large enough for the whole script; everything the model sees stays as configured.
    budgets = {"max_turns": max(len(replies), 1), "max_new_tokens": 1 << 16,
               "max_context_tokens": 1 << 20, "max_episode_tokens": 1 << 20,
               "episode_timeout_s": 120.0}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="shadowrl-pin-") as root:
        for rel, text in FIXTURE_FILES.items():
            (Path(root) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(root) / rel).write_text(text)
        with _quiet_local_sandbox():
            sandbox = create_sandbox(root, backend="local")
        try:
            return asyncio.run(
                run_episode(
                    ScriptedPolicy(tokenizer, replies), sandbox, FIXTURE_TASK,
                    tokenizer=tokenizer, config=agent.model_copy(update=budgets),
                    tools=_PathFreeTools(ToolSet.from_names(agent.tools).tools.values()),
                )
            )  # fmt: skip
        finally:
            sandbox.close()


def compute_harness_version(tokenizer: Any, agent: AgentConfig) -> str:
    """Uncached `harness_version`: runs the fixture episode (0.05-0.1 s here) and hashes it."""
    traj = _fixture_episode(tokenizer, agent)
    outputs = [[r.name, r.output, r.is_error] for s in traj.steps for r in s.results]
    return _digest(
        json.dumps(part, sort_keys=True).encode()
        for part in (
            [list(seg.token_ids) for seg in traj.segments],
            ToolSet.from_names(agent.tools).schemas(),
            outputs,
            [list(s.parse_errors) for s in traj.steps],
            traj.end,
            [SUMMARY_REQUEST, agent.summary.model_dump(mode="json")],
        )
    )


_HARNESS_VERSIONS: dict[tuple[str, str, int, str], str] = {}


def harness_version(tokenizer: Any, agent: AgentConfig) -> str:
    """Fingerprint of what the harness does, whatever file the code lives in.

    A scripted episode on a fixture workspace runs through the real loop with the
    configured system prompt and tools: each tool that has a `FIXTURE_CALLS` entry is
    called once, written with the canonical Hermes writer, parsed, dispatched and its
    result rendered exactly as in any episode. The hash covers the episode's token
    ids (chat template, system prompt, tool schemas, calls and results), the tool
    schemas, each tool's output and any parse errors. So a comment edit or a moved
    file changes nothing, while any change to what the model sees or what a tool
    returns changes the pin. `semantic_search` is pinned by its schema and its
    argument check only (see `FIXTURE_CALLS`); where `summarize` is offered, the fixture
    calls it and answers the summary request, and the hash also covers the request text
    and `agent.summary`.

    Cached in-process per tokenizer (name, chat template, vocabulary size) and agent
    config. Blocking (it runs its own event loop): from async code call it in a thread.
    """
    key = (
        str(tokenizer.name_or_path),
        str(tokenizer.chat_template),
        len(tokenizer),
        agent.model_dump_json(),
    )
    if key not in _HARNESS_VERSIONS:
        _HARNESS_VERSIONS[key] = compute_harness_version(tokenizer, agent)
    return _HARNESS_VERSIONS[key]
