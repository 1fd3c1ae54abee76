"""One hardened test run in a sandbox prepared for grading, and what the grader reads of it.

The workspace is made read-only and fingerprinted by the grader (`workspace.py`) before
pytest starts; the run's key and outcome file live under a directory named by a fresh
random nonce (`runner.py`); after the run the fingerprint is taken again and the signed
outcome file read. What changed under the tests comes back in `GradedRun.moved`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.pytest_args import Reader
from shadowrl.tasks.runner import (
    KEY_FILE,
    OUTCOMES_FILE,
    TestRun,
    new_key,
    read_outcomes,
    shell_command,
    test_argv,
)
from shadowrl.tasks.task import Task
from shadowrl.tasks.workspace import changed_entries, fingerprint, freeze, thaw

_MARKER = "started"  # made in the nonce dir as the run starts: newer ctimes changed during it


def sandbox_reader(sandbox: Sandbox) -> Reader:
    """A `Reader` over the sandbox's workspace (config files as the grader left them)."""

    def read(rel: str) -> str | None:
        try:
            return sandbox.read_file(rel).decode(errors="replace")
        except (OSError, ValueError):  # absent, a directory, or a link leading outside
            return None

    return read


@dataclass(frozen=True)
class GradedRun:
    """One test run in a hardened fork: what the tests reported, and what changed under them."""

    run: TestRun
    moved: tuple[str, ...] = ()  # workspace entries changed during the run (none if honest)


def run_graded_tests(
    task: Task,
    prepared: PreparedTask,
    sandbox: Sandbox,
    blame: Mapping[str, list[tuple[int, int]]] | None = None,
    *,
    canaried: bool = False,
) -> GradedRun:
    """Run every test id once in `sandbox`, made read-only; outcomes go to a fresh nonce
    directory. The guard holds the lines in `blame` to account (None: every non-test
    workspace line; `canaried`: every FAIL_TO_PASS id is a canary or checked outside,
    `runner.CANARIED`). The tree's fingerprint is compared before and after the run."""
    nonce_dir = f".shadowrl-grade-{os.urandom(16).hex()}"
    out = f"{nonce_dir}/{OUTCOMES_FILE}"
    key = new_key()
    sandbox.write_file(f"{nonce_dir}/{KEY_FILE}", key)  # the plugin reads and deletes it
    read = sandbox_reader(sandbox)
    argv, dropped = test_argv(
        task, prepared.python, read, out, task.test_ids, blame, canaried=canaried
    )
    before = freeze(sandbox, nonce_dir)
    marker = f"{nonce_dir}/{_MARKER}"
    sandbox.write_file(marker, "")
    res = sandbox.exec(shell_command(argv), timeout=task.timeout_s)
    after = fingerprint(sandbox, nonce_dir)
    moved = () if after == before else tuple(changed_entries(sandbox, nonce_dir, marker))
    try:
        text = sandbox.read_file(out).decode(errors="replace")
    except (OSError, ValueError):
        text = ""
    thaw(sandbox)
    log = res.stdout + res.stderr + ("\n[timed out]" if res.timed_out else "")
    found = read_outcomes(text, key, res.timed_out, res.exit_code)
    run = TestRun(found.outcomes, found.status, log, tuple(dropped), found.tampered)
    return GradedRun(run, moved or (("(the tree changed)",) if after != before else ()))
