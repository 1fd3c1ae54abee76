"""Running a task's tests and reading back which of them passed.

The same command line and the same result parser serve validation (when a suite is
generated) and grading (after an episode), so "validated" means exactly what the
grader will later check. Results come from a JUnit XML report that pytest writes to
a path chosen per run with a random nonce: a file the agent wrote in advance cannot
be mistaken for it, and a test id only counts as passed if it is present in that
report with no failure, error or skip. Test ids may contain spaces and brackets, so
every argument is quoted with `shlex.quote`, never concatenated into a shell string.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shadowrl.tasks.task import Task

Outcome = Literal["passed", "failed", "error", "skipped", "missing"]

# Flags appended to every test command: deterministic, no caches the agent could plant,
# the project's own `addopts` ignored (they may need plugins we do not install).
PYTEST_FLAGS = (
    "-p", "no:cacheprovider",
    "-o", "addopts=",
    "-o", "pythonpath=.",
    "-o", "junit_family=xunit1",
    "-o", "junit_logging=no",
    "--tb=short",
    "-rN",
)  # fmt: skip


def test_argv(task: Task, python: str | Path, junit_path: str, ids: Sequence[str]) -> list[str]:
    """The argv of one test run: `task.test_cmd` with 'python' bound to the env's interpreter."""
    cmd = [str(python) if arg == "python" else arg for arg in task.test_cmd]
    return [*cmd, *PYTEST_FLAGS, f"--junitxml={junit_path}", *ids]


def shell_command(argv: Sequence[str]) -> str:
    """`argv` as one `/bin/sh -c` string, every argument quoted."""
    env = "env -u PYTHONPATH -u PYTHONSTARTUP PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0"
    return f"{env} {shlex.join(argv)}"


def junit_key(node_id: str) -> tuple[str, str]:
    """(classname, name) that pytest's junitxml writes for a node id (`mangle_test_address`)."""
    path, _, tail = node_id.partition("::")
    name_part, bracket, params = tail.partition("[")
    names = [re.sub(r"\.py$", "", path.replace("/", ".")), *name_part.split("::")]
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def _case_outcome(case: ET.Element) -> Outcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return "error"
    if "failure" in tags:
        return "failed"
    return "skipped" if "skipped" in tags else "passed"


def parse_junit(xml_text: str, ids: Sequence[str]) -> dict[str, Outcome]:
    """Outcome of each id; ids absent from the report (or a bad report) are 'missing'."""
    found: dict[tuple[str, str], Outcome] = {}
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return dict.fromkeys(ids, "missing")
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        outcome = _case_outcome(case)
        # A test reported twice (e.g. failing in teardown) counts at its worst.
        if found.get(key, "passed") == "passed":
            found[key] = outcome
    return {i: found.get(junit_key(i), "missing") for i in ids}


def junit_outcomes(xml_text: str) -> dict[str, Outcome]:
    """Every test case of an xunit1 report, keyed by its pytest node id (for discovery)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return {}
    out: dict[str, Outcome] = {}
    for case in root.iter("testcase"):
        path, classname, name = (
            case.get("file", ""),
            case.get("classname", ""),
            case.get("name", ""),
        )
        module = re.sub(r"\.py$", "", path.replace("/", "."))
        if not path.endswith(".py") or not (
            classname == module or classname.startswith(module + ".")
        ):
            continue  # collection errors and doctests have no clean node id
        classes = classname[len(module) + 1 :].split(".") if classname != module else []
        node_id = "::".join([path, *classes, name])
        if out.get(node_id, "passed") == "passed":
            out[node_id] = _case_outcome(case)
    return out


@dataclass(frozen=True)
class LocalRun:
    """Outcome of a test run on the host: per-id results and the captured output."""

    results: dict[str, Outcome]
    output: str
    timed_out: bool
    xml: str


def run_tests_local(
    task: Task, workdir: Path, python: str | Path, ids: Sequence[str], junit_dir: Path
) -> LocalRun:
    """Run tests in `workdir` on the host (suite validation), killing the whole
    process group at `task.timeout_s`: pytest-timeout cannot stop a C-level loop."""
    junit = junit_dir / f"junit-{os.urandom(8).hex()}.xml"
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell_command(test_argv(task, python, str(junit), ids))],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=task.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers the tests spawned
    xml = junit.read_text() if junit.exists() else ""
    junit.unlink(missing_ok=True)
    return LocalRun(parse_junit(xml, ids), out.decode(errors="replace"), timed_out, xml)
