"""Grading an episode so that the only way to earn reward is to fix the bug.

Grading never trusts the agent's workspace as it is. It runs in a fork of the final
sandbox (the agent's own sandbox is left untouched), where, in order:

1. every test-like file the agent changed, added or deleted is restored to its
   pristine content or removed: test modules, `conftest.py`, pytest/tox/setup.cfg/
   pyproject configs, `sitecustomize`/`usercustomize`, `.pth` and `.pyc` files, and
   new top-level modules that shadow the stdlib or the test env (a fake `pytest.py`);
2. non-test files the agent edited are scanned for newly added tamper patterns
   (importing pytest, `os._exit`, `atexit`, ...): any hit voids the episode;
3. the hidden `test_patch` is written in;
4. FAIL_TO_PASS and PASS_TO_PASS run in one pytest process (no `-x`: every id must
   run), which writes JUnit XML to a directory named by a fresh random nonce;
5. resolved iff every listed id is present in that report and passed (SWE-bench's
   rule). A collection error, `sys.exit(0)`, a crash or a timeout leaves ids
   missing, which is a failure, never a pass.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.config import ShapingConfig
from shadowrl.tasks.env import env_modules
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.runner import Outcome, parse_junit, shell_command, test_argv
from shadowrl.tasks.task import Task
from shadowrl.types import Trajectory

_CONFIG_FILES = {
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
}
_CUSTOMIZE = {"sitecustomize.py", "usercustomize.py"}
_TEST_DIRS = {"tests", "test", "testing"}


@dataclass(frozen=True)
class Verdict:
    """The grade of one episode; `log` is the test output, for humans."""

    resolved: bool
    reward: float
    fail_to_pass: dict[str, Outcome] = field(default_factory=dict)
    pass_to_pass: dict[str, Outcome] = field(default_factory=dict)
    log: str = ""


def is_protected(path: str) -> bool:
    """Files that decide how tests are collected or run; the agent may not change them."""
    p = PurePosixPath(path)
    name = p.name
    if name in _CONFIG_FILES or name in _CUSTOMIZE or p.suffix in (".pth", ".pyc"):
        return True
    if p.suffix == ".py" and (name.startswith("test_") or name.endswith("_test.py")):
        return True
    return any(part in _TEST_DIRS for part in p.parts[:-1])


def _shadows(path: str, modules: frozenset[str], pristine: set[str]) -> bool:
    """A new top-level module (or package) named like something the tests import."""
    top = PurePosixPath(path).parts[0]
    is_module = top != path or top.endswith(".py")
    return is_module and top not in pristine and top.removesuffix(".py") in modules


def _files_to_reset(prepared: PreparedTask, sandbox: Sandbox, current: set[str]) -> set[str]:
    pristine = {str(p.relative_to(prepared.workspace)) for p in prepared.workspace.rglob("*")}
    deleted = {p for p in pristine if p not in current and (prepared.workspace / p).is_file()}
    id_files = {i.split("::", 1)[0] for i in prepared.task.test_ids}
    touched = set(sandbox.changed_files()) | deleted | id_files
    modules = env_modules(prepared.env)
    return {p for p in touched if is_protected(p) or _shadows(p, modules, pristine)}


def _restore(prepared: PreparedTask, sandbox: Sandbox, paths: Iterable[str]) -> None:
    """Put pristine content back (removing first: the agent may have left a symlink or a dir)."""
    paths = sorted(paths)
    if paths:
        sandbox.exec("rm -rf -- " + " ".join(shlex.quote(p) for p in paths))
    for path in paths:
        if (data := prepared.read_bytes(path)) is not None:
            sandbox.write_file(path, data)


def tamper_hits(
    prepared: PreparedTask, sandbox: Sandbox, changed: Iterable[str], patterns: Iterable[str]
) -> list[str]:
    """`path: pattern` for each forbidden pattern the agent added to a non-test file."""
    hits = []
    for path in changed:
        if is_protected(path) or not path.endswith(".py"):
            continue
        try:
            after = sandbox.read_file(path).decode(errors="replace")
        except (OSError, ValueError):  # gone, a directory, or a link leading outside
            continue
        before = (prepared.read_bytes(path) or b"").decode(errors="replace")
        hits += [
            f"{path}: {pat}"
            for pat in patterns
            if len(re.findall(pat, after)) > len(re.findall(pat, before))
        ]
    return hits


def run_graded_tests(
    task: Task, prepared: PreparedTask, sandbox: Sandbox
) -> tuple[dict[str, Outcome], str]:
    """Run every test id once in `sandbox`; JUnit goes to a fresh nonce directory."""
    nonce_dir = f".shadowrl-grade-{os.urandom(16).hex()}"
    junit = f"{nonce_dir}/junit.xml"
    argv = test_argv(task, prepared.python, junit, task.test_ids)
    res = sandbox.exec(f"mkdir {nonce_dir} && {shell_command(argv)}", timeout=task.timeout_s)
    try:
        xml = sandbox.read_file(junit).decode(errors="replace")
    except (FileNotFoundError, OSError):
        xml = ""
    log = res.stdout + res.stderr + ("\n[timed out]" if res.timed_out else "")
    return parse_junit(xml, task.test_ids), log


def _shaped(reward: float, trajectory: Trajectory | None, shaping: ShapingConfig) -> float:
    if trajectory is None:
        return reward
    penalty = min(shaping.tool_error * trajectory.tool_errors, shaping.max_penalty)
    return reward - penalty


def verify(
    task: Task,
    prepared: PreparedTask,
    sandbox: Sandbox,
    *,
    shaping: ShapingConfig | Mapping[str, Any] | None = None,
    trajectory: Trajectory | None = None,
) -> Verdict:
    """Grade the final state of `sandbox` in a fork; `sandbox` itself is not modified.

    Shaping terms that need the episode (tool errors) apply only if `trajectory` is given.
    """
    shaping = ShapingConfig.model_validate(shaping or {})
    snap = sandbox.snapshot()
    fork = snap.fork()
    try:
        current = set(fork.list_files())
        changed = set(fork.changed_files())
        hits = tamper_hits(prepared, fork, changed, shaping.forbidden_patterns)
        if hits:
            return Verdict(
                False, _shaped(0.0, trajectory, shaping), log="tampering:\n" + "\n".join(hits)
            )
        _restore(prepared, fork, _files_to_reset(prepared, fork, current))
        hidden = prepared.hidden_files()
        fork.exec("rm -rf -- " + " ".join(shlex.quote(p) for p in hidden) if hidden else "true")
        for path, text in hidden.items():
            if text is not None:
                fork.write_file(path, text)
        results, log = run_graded_tests(task, prepared, fork)
    finally:
        fork.close()
        snap.release()
    f2p = {i: results[i] for i in task.FAIL_TO_PASS}
    p2p = {i: results[i] for i in task.PASS_TO_PASS}
    resolved = all(v == "passed" for v in results.values())
    return Verdict(resolved, _shaped(float(resolved), trajectory, shaping), f2p, p2p, log)
