"""Running a task's tests and reading back exactly what happened to each test id.

The same command line and the same reader serve validation (when a suite is
generated) and grading (after an episode), so "validated" means exactly what the
grader will later check. The command is the task's `test_cmd` with the maintainers'
pytest options kept (`tasks/pytest_args.py`) plus the grader's plugin
(`tasks/plugin/shadowrl_grader/`), which writes each node id's outcome to a file
under a directory named by a random nonce: a file the agent wrote in advance cannot
be mistaken for it, and a test id only counts as passed if pytest reported it passed
there. Every run also gets a status saying how it ended:

    ran               pytest finished its session (tests may have failed)
    collection_error  a module did not import, an id does not exist, or nothing was collected
    timeout           killed at `task.timeout_s`
    crashed           pytest never finished: the process died (a signal, a crash) or
                      pytest hit an internal error (a SystemExit escaping collection)
    tampered          the grader voided the episode before running anything (`verify.py`),
                      or the plugin's guard vetoed something the code under test did
                      (a `{"tamper": ...}` record; a line without the run key's MAC; pytest
                      exiting 0 without finishing its session; an id reported passed
                      whose call phase ran no test code): that beats every other

Test ids may contain spaces and brackets, so every argument is quoted with
`shlex.quote`, never concatenated into a shell string.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from shadowrl.tasks.pytest_args import (
    Reader,
    config_file_option,
    find_config,
    grading_args,
    pytest_split,
    read_project_config,
)
from shadowrl.tasks.task import Task

Outcome = Literal["passed", "failed", "error", "skipped", "missing"]
RunStatus = Literal["ran", "collection_error", "timeout", "crashed", "tampered"]
PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"  # holds only the plugin package
PLUGIN = "shadowrl_grader"
OUTCOMES_FILE = "outcomes.jsonl"
KEY_FILE = "key"  # beside it: the run's MAC key, which the plugin reads and deletes
# pytest exit codes: 2 interrupted (collection errors), 3 internal error, 4 usage error
# (an id that does not exist), 5 nothing collected.
_COLLECTION_EXITS = {2, 4, 5}
_INTERNAL_ERROR = 3
# Passed with the task's allowances when every FAIL_TO_PASS id is a canary (or every id's
# value is compared outside, `verify.py`): a comparison decided by a dunder the agent wrote
# is then theirs to judge, not the watch's
# (`plugin/shadowrl_grader/watch.py` spells it too: the plugin imports nothing of ours).
CANARIED = "canaried"
# The plugin's flag for a run of the generator's own code (`test_argv(watched=False)`).
UNWATCHED_OPTION = "--shadowrl-unwatched"


def test_argv(
    task: Task,
    python: str | Path,
    read: Reader,
    out_path: str,
    ids: Sequence[str],
    blame: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    *,
    canaried: bool = False,
    watched: bool = True,
) -> tuple[list[str], list[str]]:
    """(argv of one test run, the options it stripped): `task.test_cmd` with 'python'
    bound to the env's interpreter, the project config read through `read`. `blame`:
    the lines ({file: [(first, last)]}) the plugin's guard holds to account (None: every
    line of every non-test workspace file). `canaried`: every FAIL_TO_PASS id is a canary,
    or every id is checked outside. `watched=False` (the generator's own code only, never
    an episode's): no profile function, which costs up to 5x on generator-heavy suites."""
    cmd = [str(python) if arg == "python" else arg for arg in task.test_cmd]
    split = pytest_split(cmd)
    head, opts = cmd[:split], cmd[split:]
    project = read_project_config(read, find_config(read, ids, config_file_option(opts)))
    required = ["-p", PLUGIN, f"--shadowrl-outcomes={out_path}"]
    allowed = [*task.allowed_primitives, *([CANARIED] if canaried else [])]
    if allowed:  # what the gold patch needs, the guard allows too
        required.append(f"--shadowrl-allow={','.join(allowed)}")
    if blame is not None:
        ranges = {path: [list(r) for r in runs] for path, runs in sorted(blame.items())}
        required.append(f"--shadowrl-blame={json.dumps(ranges)}")
    if not watched:
        required.append(UNWATCHED_OPTION)
    args, dropped = grading_args(opts, project, required)
    return [*_plugin_on_path(head), *args, *ids], dropped


def _plugin_on_path(head: list[str]) -> list[str]:
    """A `PYTHONPATH=...` the command sets itself (`env PYTHONPATH=src python ...`) keeps
    the plugin's directory after its own entries, so the `-p` still finds it."""
    if not head or PurePosixPath(head[0]).name != "env":
        return head
    return [f"{tok}:{PLUGIN_DIR}" if tok.startswith("PYTHONPATH=") else tok for tok in head]


def shell_command(argv: Sequence[str]) -> str:
    """`argv` as one `/bin/sh -c` string, every argument quoted, in a clean environment.
    The workspace is read-only while the tests run (`verify.py`), so hypothesis keeps its
    example database in a fresh directory outside it (by default it writes `.hypothesis/`
    into the current directory, and warns when it cannot)."""
    unset = " ".join(f"-u {v}" for v in ("PYTHONSTARTUP", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"))
    env = f"env {unset} {shlex.quote(f'PYTHONPATH={PLUGIN_DIR}')}"
    storage = 'HYPOTHESIS_STORAGE_DIRECTORY="$(mktemp -d)"'
    return f"{env} {storage} PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 {shlex.join(argv)}"


@dataclass(frozen=True)
class TestRun:
    """What one test run left: each reported id's outcome, how it ended, its output."""

    __test__ = False  # not a pytest test class, whatever its name
    outcomes: dict[str, Outcome]  # every id pytest reported (ids never reported are absent)
    status: RunStatus
    log: str
    dropped: tuple[str, ...] = ()  # options stripped from addopts and test_cmd
    tampered: tuple[str, ...] = ()  # what the plugin's guard vetoed (status 'tampered')

    def results(self, ids: Sequence[str]) -> dict[str, Outcome]:
        """The outcome of each of `ids`; an id pytest never reported is 'missing'."""
        return {i: self.outcomes.get(i, "missing") for i in ids}


# A phase reported more than once (each subtest of a unittest `subTest` or a pytest
# `subtests` fixture reports its own `call`) counts at its worst: one failed subtest
# fails the test even though the test's own report says passed.
_RANK = {"skipped": 0, "passed": 1, "failed": 2}


def _fold(phases: Mapping[str, str]) -> Outcome:
    """One id's outcome from its phases: a setup or teardown failure is an error, a
    skip in setup is a skip, and a test whose call never reported is missing."""
    if phases.get("setup") == "failed":
        return "error"
    if "call" not in phases:
        return "skipped" if phases.get("setup") == "skipped" else "missing"
    if phases.get("teardown") == "failed" and phases["call"] == "passed":
        return "error"
    call = phases["call"]
    return call if call in ("passed", "failed", "skipped") else "missing"  # type: ignore[return-value]


def record_line(key: bytes, seq: int, record: Mapping[str, object]) -> str:
    """One line of the outcome file as the plugin signs it (`plugin/shadowrl_grader/records.py`)."""
    head = f"{seq} {json.dumps(record)}"
    return f"{hmac.new(key, head.encode(), hashlib.sha256).hexdigest()} {head}\n"


def authentic_records(text: str, key: bytes) -> tuple[list[dict[str, object]], list[str]]:
    """The records of the plugin's file whose MAC checks, in order, and what was wrong with
    the rest: a line without a valid MAC was not written by the plugin, a gap in the
    sequence means lines were cut out. Text after the last newline (a line torn by a
    process killed mid-write) is ignored."""
    records: list[dict[str, object]] = []
    forged, expected, problems = 0, 0, []
    for line in text.split("\n")[:-1]:
        mac, _, head = line.partition(" ")
        seq, _, payload = head.partition(" ")
        good = hmac.new(key, head.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac.encode(), good.encode()):
            forged += 1
            continue
        if seq != str(expected):
            problems.append(f"outcome record {seq} follows {expected - 1}: lines were removed")
        expected = int(seq) + 1
        record = json.loads(payload)
        records.append(record if isinstance(record, dict) else {})
    if forged:
        problems.append(
            f"{forged} outcome line(s) without the grader's MAC: written by the tests' code"
        )
    return records, problems


@dataclass(frozen=True)
class OutcomeFile:
    """What the plugin's file says: each reported id's outcome, the status, why it is void."""

    outcomes: dict[str, Outcome]
    status: RunStatus
    tampered: tuple[str, ...]


def read_outcomes(
    text: str, key: bytes, timed_out: bool, exit_code: int | None = None
) -> OutcomeFile:
    """Outcomes and status from the plugin's file (`text` is '' if it was never written);
    `exit_code` is pytest's, when known: 0 without a finished session is a hard exit."""
    records, tampered = authentic_records(text, key)
    phases: dict[str, dict[str, str]] = {}
    collect_errors, exitstatus, bodiless = False, None, set()
    for record in records:
        if "nodeid" in record:
            seen = phases.setdefault(str(record["nodeid"]), {})
            when, outcome = str(record.get("when")), str(record.get("outcome"))
            seen[when] = max(seen.get(when, outcome), outcome, key=lambda o: _RANK.get(o, 2))
            if when == "call" and outcome == "passed" and record.get("body") is not True:
                bodiless.add(str(record["nodeid"]))
        elif "collect_error" in record:
            collect_errors = True
        elif "exitstatus" in record:
            exitstatus = record["exitstatus"]
        elif "tamper" in record:
            tampered.append(str(record["tamper"]))
    if exitstatus is None and exit_code == 0 and not timed_out:
        tampered.append("pytest exited with status 0 without finishing its session: a hard exit")
    outcomes = {nodeid: _fold(p) for nodeid, p in phases.items()}
    tampered += [f"{i}: reported passed, but no test code ran in its call phase"
                 for i in sorted(bodiless) if outcomes[i] == "passed"]  # fmt: skip
    status: RunStatus
    if tampered:
        status = "tampered"
    elif timed_out:
        status = "timeout"
    elif exitstatus is None or exitstatus == _INTERNAL_ERROR:
        status = "crashed"
    elif collect_errors or exitstatus in _COLLECTION_EXITS:
        status = "collection_error"
    else:
        status = "ran"
    return OutcomeFile(outcomes, status, tuple(tampered))


def new_key() -> bytes:
    """A fresh key for one run's outcome file (hex: it travels as a file's text)."""
    return os.urandom(32).hex().encode()


def directory_reader(root: Path) -> Reader:
    """A `Reader` over a directory on the host."""

    def read(rel: str) -> str | None:
        path = root / rel
        return path.read_text(errors="replace") if path.is_file() else None

    return read


def run_tests_local(
    task: Task,
    workdir: Path,
    python: str | Path,
    ids: Sequence[str],
    out_dir: Path,
    *,
    watched: bool = True,
) -> TestRun:
    """Run tests in `workdir` on the host (suite validation), killing the whole
    process group at `task.timeout_s`: pytest-timeout cannot stop a C-level loop.
    `watched=False`: without the plugin's profile function (`test_argv`)."""
    nonce = out_dir / f"shadowrl-run-{os.urandom(8).hex()}"
    nonce.mkdir()
    out = nonce / OUTCOMES_FILE
    key = new_key()
    (nonce / KEY_FILE).write_bytes(key)
    # Suite validation runs the generator's own code (buggy or gold): no line is the agent's.
    read = directory_reader(workdir)
    argv, dropped = test_argv(task, python, read, str(out), ids, blame={}, watched=watched)
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell_command(argv)],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        log, _ = proc.communicate(timeout=task.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        log, _ = proc.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers the tests spawned
    text = out.read_text(errors="replace") if out.is_file() else ""
    shutil.rmtree(nonce, ignore_errors=True)
    found = read_outcomes(text, key, timed_out, proc.returncode)
    log_text = log.decode(errors="replace")
    return TestRun(found.outcomes, found.status, log_text, tuple(dropped), found.tampered)
