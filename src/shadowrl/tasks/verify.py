"""Grading an episode so that the only way to earn reward is to fix the bug.

The verdict is decided here, in the grader's process, which the agent's code never runs
in (`tasks/README.md` has the whole picture). Grading never trusts the agent's workspace
as it is. It runs in forks of the final sandbox (the agent's own sandbox is left
untouched), where, in order:

1. non-test files the agent edited are scanned for newly added tamper patterns
   (importing pytest, `os._exit`, `atexit`, ...), then their old and new syntax trees
   are compared by `diffrules` (a new `exec`, `__import__`, `getattr` on a computed
   name, `gc`, frame walking, ...; compiled extensions the agent planted), and a changed
   source whose encoding is not ASCII-compatible is refused (`workspace.py`): any hit
   voids the episode, and the Verdict says which layer caught it and why;
2. every test-like file the agent changed, added or deleted is restored to its
   pristine content or removed: test modules, `conftest.py`, pytest/tox/setup.cfg/
   pyproject configs, `sitecustomize`/`usercustomize`, `.pth` and `.pyc` files, and
   new top-level modules that shadow the stdlib or the test env (a fake `pytest.py`);
   the hidden `test_patch` is written in; a symlink the pristine workspace lacks voids;
3. the workspace is made read-only and fingerprinted; FAIL_TO_PASS and PASS_TO_PASS run
   in one pytest process, with the maintainers' pytest options minus a denylist (`-x`,
   `--lf`, ...: every id must run; see `pytest_args.py`), and the grader's plugin writes
   each id's outcome to a file under a directory named by a fresh random nonce
   (`runner.py`); the plugin's guard voids what the code under test does that it
   catches (`voided_by="test_guard"`); a fingerprint that changed during the run voids
   (`voided_by="workspace"`);
4. resolved iff the run finished (status `ran`) and every listed id was reported
   passed (SWE-bench's rule), each with test code run in its call phase (`runner.py`).
   A collection error, `sys.exit(0)`, a crash or a timeout leaves ids missing or the
   run unfinished, which is a failure, never a pass;
5. a run that passed is paid only if the task's canaries (`canary.py`, planned by
   `canaryplan.py`: the hidden tests with perturbed expected values, run the same way in
   a second fork of the same final state) all fail; one that passes voids the episode
   (`voided_by="canary"`). Skipped where step 6 reads every test id whole;
6. for a function-level test (a hidden `check(candidate)`, a family task's generated
   tests: `outsideplan.py`), its assertions' values are computed again in a fresh interpreter
   of a third fork, which never holds the hidden tests, and compared here (`outside.py`):
   any that does not hold voids the pass (`voided_by="outside"`).

The `Verdict` says why: each listed id's outcome, the run's status, the tamper hits
that voided it if any, and the test log (whose tail `eval.json` keeps per sample).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from shadowrl.sandbox import Sandbox, Snapshot
from shadowrl.tasks.canaryplan import canaried, canary_plan
from shadowrl.tasks.config import ShapingConfig
from shadowrl.tasks.diffrules import Violation, check_changes
from shadowrl.tasks.env import env_modules
from shadowrl.tasks.outside import run_outside, task_plan
from shadowrl.tasks.outsideplan import OutsidePlan
from shadowrl.tasks.patch import apply_patch, parse_patch
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.runner import PLUGIN, Outcome, RunStatus
from shadowrl.tasks.task import Task
from shadowrl.tasks.testrun import GradedRun, run_graded_tests
from shadowrl.tasks.workspace import (
    agent_lines,
    bad_encodings,
    decoded,
    new_links,
    pristine_links,
)
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
_NATIVE = (".so", ".pyd")  # extension modules win over a same-named .py at import
VoidedBy = Literal[
    "", "forbidden_text", "diff_rules", "workspace", "test_guard", "canary", "outside"
]  # fmt: skip
LOG_TAIL_CHARS = 2000  # the end of pytest's output: its short summary of what failed


@dataclass(frozen=True)
class Verdict:
    """The grade of one episode, and why: `log` is the test output, for humans."""

    resolved: bool
    reward: float
    fail_to_pass: dict[str, Outcome] = field(default_factory=dict)
    pass_to_pass: dict[str, Outcome] = field(default_factory=dict)
    log: str = ""
    voided_by: VoidedBy = ""  # the layer that voided the episode ("" = graded on its tests)
    violations: tuple[Violation, ...] = ()  # what `diff_rules` found
    status: RunStatus = "ran"
    tampered: tuple[str, ...] = ()  # 'path: pattern' hits that voided the episode

    @property
    def log_tail(self) -> str:
        return self.log[-LOG_TAIL_CHARS:]

    @property
    def failing(self) -> dict[str, Outcome]:
        """The listed ids that did not pass, with their outcome."""
        both = {**self.fail_to_pass, **self.pass_to_pass}
        return {i: v for i, v in both.items() if v != "passed"}


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
    modules = env_modules(prepared.env) | {PLUGIN}  # a workspace module may not shadow it
    return {p for p in touched if is_protected(p) or _shadows(p, modules, pristine)}


def _restore(prepared: PreparedTask, sandbox: Sandbox, paths: Iterable[str]) -> None:
    """Put pristine content back (removing first: the agent may have left a symlink or a dir)."""
    paths = sorted(paths)
    if paths:
        sandbox.exec("rm -rf -- " + " ".join(shlex.quote(p) for p in paths))
    for path in paths:
        if (data := prepared.read_bytes(path)) is not None:
            sandbox.write_file(path, data)


def _changed_sources(
    prepared: PreparedTask, sandbox: Sandbox, changed: Iterable[str]
) -> dict[str, tuple[bytes, bytes | None]]:
    """(pristine, current) bytes of each non-test Python file the agent changed or added;
    current is None where the file exists but cannot be read (a directory, a link outside)."""
    sources: dict[str, tuple[bytes, bytes | None]] = {}
    for path in sorted(changed):
        if is_protected(path) or not path.endswith(".py"):
            continue
        try:
            after: bytes | None = sandbox.read_file(path)
        except FileNotFoundError:  # deleted, or a dangling link: nothing to import
            continue
        except (OSError, ValueError):
            after = None
        sources[path] = (prepared.read_bytes(path) or b"", after)
    return sources


def tamper_hits(
    prepared: PreparedTask, sandbox: Sandbox, changed: Iterable[str], patterns: Iterable[str]
) -> list[str]:
    """`path: pattern` for each forbidden pattern the agent added to a non-test file."""
    hits = []
    for path, (old, new) in _changed_sources(prepared, sandbox, changed).items():
        if new is None:
            continue
        before, after = old.decode(errors="replace"), new.decode(errors="replace")
        hits += [
            f"{path}: {pat}"
            for pat in patterns
            if len(re.findall(pat, after)) > len(re.findall(pat, before))
        ]
    return hits


def diff_violations(
    prepared: PreparedTask, sandbox: Sandbox, changed: Iterable[str]
) -> list[Violation]:
    """What `diffrules` finds in the agent's changes to non-test files, plus planted extensions."""
    changed = set(changed)
    files, violations = {}, []
    for path, (old, new) in _changed_sources(prepared, sandbox, changed).items():
        after = None if new is None else decoded(new)
        if after is None:
            violations.append(Violation("unparsable", path, 0, "cannot be read or decoded"))
        else:
            files[path] = (decoded(old) or "", after)
    violations += check_changes(files, prepared.task.allowed_primitives)
    native = sorted(
        p
        for p in changed
        if p.endswith(_NATIVE) and "native" not in prepared.task.allowed_primitives
    )
    return violations + [Violation("native", p, 0, "new compiled extension module") for p in native]


def gold_violations(task: Task, workspace: Path) -> list[Violation]:
    """Violations of the gold patch applied to the buggy `workspace`: must be none, else the
    gold fix earns 0 (a task records in `allowed_primitives` the rules its gold needs)."""

    def read(path: str) -> str:
        target = workspace / path
        return target.read_text() if target.is_file() else ""

    patches = parse_patch(task.patch)
    after = apply_patch({fp.old: read(fp.old) for fp in patches if fp.old is not None}, task.patch)
    files = {
        path: (read(path), text)
        for path, text in after.items()
        if text is not None and path.endswith(".py") and not is_protected(path)
    }
    return check_changes(files, task.allowed_primitives)


def _set_up(
    prepared: PreparedTask, fork: Sandbox, current: set[str], tests: Mapping[str, str] | None = None
) -> None:
    """Restore the test files, write the hidden tests (and `tests` over them: canaries)."""
    _restore(prepared, fork, _files_to_reset(prepared, fork, current))
    hidden = prepared.hidden_files()
    fork.exec("rm -rf -- " + " ".join(shlex.quote(p) for p in hidden) if hidden else "true")
    for path, text in {**hidden, **(tests or {})}.items():
        if text is not None:
            fork.write_file(path, text)


def _shaped(reward: float, trajectory: Trajectory | None, shaping: ShapingConfig) -> float:
    if trajectory is None:
        return reward
    penalty = min(shaping.tool_error * trajectory.tool_errors, shaping.max_penalty)
    return reward - penalty


def _void(task: Task, reward: float, by: VoidedBy, why: Sequence[str], log: str = "") -> Verdict:
    """An episode voided before (or regardless of) its tests: every id missing."""
    return Verdict(
        False, reward, dict.fromkeys(task.FAIL_TO_PASS, "missing"),
        dict.fromkeys(task.PASS_TO_PASS, "missing"),
        log=f"tampering ({by}):\n" + "\n".join(why) + log, status="tampered",
        tampered=tuple(why), voided_by=by,
    )  # fmt: skip


def _pre_run_void(
    prepared: PreparedTask,
    fork: Sandbox,
    changed: set[str],
    sources: Mapping[str, tuple[bytes, bytes | None]],
    shaping: ShapingConfig,
) -> tuple[VoidedBy, list[str], tuple[Violation, ...]] | None:
    """The first pre-run layer that voids the agent's final state, and why."""
    if hits := tamper_hits(prepared, fork, changed, shaping.forbidden_patterns):
        return "forbidden_text", hits, ()
    if violations := diff_violations(prepared, fork, changed):
        return "diff_rules", list(map(str, violations)), tuple(violations)
    if bad := bad_encodings(sources):
        return "workspace", bad, ()
    return None


def verify(
    task: Task,
    prepared: PreparedTask,
    sandbox: Sandbox,
    *,
    shaping: ShapingConfig | Mapping[str, Any] | None = None,
    trajectory: Trajectory | None = None,
) -> Verdict:
    """Grade the final state of `sandbox` in forks; `sandbox` itself is not modified.

    Shaping terms that need the episode (tool errors) apply only if `trajectory` is given.
    """
    shaping = ShapingConfig.model_validate(shaping or {})
    zero = _shaped(0.0, trajectory, shaping)
    snap = sandbox.snapshot()
    try:
        fork = snap.fork()
        try:
            current = set(fork.list_files())
            changed = set(fork.changed_files())
            sources = _changed_sources(prepared, fork, changed)
            if (void := _pre_run_void(prepared, fork, changed, sources, shaping)) is not None:
                by, why, violations = void
                return replace(_void(task, zero, by, why), violations=violations)
            # The guard blames only lines the agent wrote: the seed's are the maintainers'
            # (a library that `eval`s, even in a file the fix edits, is not a hack).
            blame = agent_lines(sources)
            _set_up(prepared, fork, current)
            if links := new_links(fork, pristine_links(prepared.workspace)):
                return _void(task, zero, "workspace", links)
            graded = run_graded_tests(task, prepared, fork, blame)
            plan = task_plan(prepared)  # reading every id whole, it spares the canaries
            whole = plan is not None and plan.covers(task.test_ids)
            # Where the FAIL_TO_PASS ids are canaries (or all checked outside) a lying
            # comparison is caught there, so the watch leaves the agent's dunders to them and
            # an honest `__eq__` fix is paid (README, layer 2). Asked only when the watch
            # vetoed (a canary plan costs 6-18 test runs to build).
            vetoed = bool(graded.run.tampered) and not graded.moved
            if vetoed and (whole or canaried(prepared)):
                graded = run_graded_tests(task, prepared, fork, blame, canaried=True)
        finally:
            fork.close()
        verdict = _verdict(task, graded, _shaped(1.0, trajectory, shaping), zero)
        if verdict.resolved and not whole:
            verdict = _canaries(task, prepared, snap, current, blame, verdict, zero)
        if verdict.resolved and plan is not None:
            verdict = _outside(task, prepared, snap, current, plan, verdict, zero)
    finally:
        snap.release()
    return verdict


def _verdict(task: Task, graded: GradedRun, paid: float, zero: float) -> Verdict:
    """The verdict of the real run: resolved iff it finished and every id passed."""
    run = graded.run
    results = run.results(task.test_ids)
    f2p = {i: results[i] for i in task.FAIL_TO_PASS}
    p2p = {i: results[i] for i in task.PASS_TO_PASS}
    if graded.moved:  # the workspace changed under the tests
        why = tuple(f"{p}: changed during the test run" for p in graded.moved)
        return replace(_void(task, zero, "workspace", why, "\n\n" + run.log), fail_to_pass=f2p,
                       pass_to_pass=p2p)  # fmt: skip
    resolved = run.status == "ran" and all(v == "passed" for v in results.values())
    reward = paid if resolved else zero
    if run.tampered:  # the plugin's guard vetoed something the code under test did
        log = "tampering (test_guard):\n" + "\n".join(run.tampered) + "\n\n" + run.log
        return Verdict(
            False, zero, f2p, p2p, log, voided_by="test_guard", status="tampered",
            tampered=run.tampered,
        )  # fmt: skip
    return Verdict(resolved, reward, f2p, p2p, run.log, status=run.status)


def _canaries(
    task: Task,
    prepared: PreparedTask,
    snap: Snapshot,
    current: set[str],
    blame: Mapping[str, list[tuple[int, int]]],
    passed: Verdict,
    zero: float,
) -> Verdict:
    """Run the task's canaries in a fresh fork of the same final state: any that passes (or
    any tampering there) voids the real run's pass."""
    plan = canary_plan(prepared)
    if not plan.ids:
        return passed
    fork = snap.fork()
    try:
        _set_up(prepared, fork, current, plan.files)
        graded = run_graded_tests(task, prepared, fork, blame, canaried=canaried(prepared))
    finally:
        fork.close()
    canary = _verdict(task, graded, 1.0, 0.0)
    if canary.voided_by:
        return replace(canary, reward=zero, log="in the canary run: " + canary.log)
    results = graded.run.results(task.test_ids)
    caught = [f"{i}: its canary passed (perturbed expected values)" for i in plan.ids
              if results[i] == "passed"]  # fmt: skip
    if not caught:
        return passed
    log = "tampering (canary):\n" + "\n".join(caught) + "\n\n" + graded.run.log
    return replace(passed, resolved=False, reward=zero, voided_by="canary", status="tampered",
                   tampered=tuple(caught), log=log)  # fmt: skip


def _outside(
    task: Task,
    prepared: PreparedTask,
    snap: Snapshot,
    current: set[str],
    plan: OutsidePlan,
    passed: Verdict,
    zero: float,
) -> Verdict:
    """The tests' values, computed in a fork without the hidden tests, compared here."""
    fork = snap.fork()
    try:
        _restore(prepared, fork, _files_to_reset(prepared, fork, current))
        wrong = run_outside(plan, fork, str(prepared.python), task.timeout_s)
    finally:
        fork.close()
    if not wrong:
        return passed
    log = "tampering (outside):\n" + "\n".join(wrong) + "\n\n" + passed.log
    return replace(passed, resolved=False, reward=zero, voided_by="outside", status="tampered",
                   tampered=tuple(wrong), log=log)  # fmt: skip
