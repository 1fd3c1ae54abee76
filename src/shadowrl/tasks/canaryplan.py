"""Which test ids are canaries of a task, shown at build time, once per task, cached.

`canary_files(prepared, salt)` is the canary run's test files (`canary.py`). A test id
is a canary when its canary fails (any outcome but passed) under the gold fix and under
the buggy code in each of `RUNS` runs: then honest code that passes the real test fails
its canary, and a canary that passes after an episode's real run passed says the tests
did not decide what they seemed to. If the buggy code passes some id's canary (its wrong
value is the perturbed one), the next salt perturbs by a larger step.

The plan is built with the grader's own test command (`runner.run_tests_local`, the
generator's code only, on the host, without the plugin's profile function: it would judge
no line there and costs up to 5x on generator-heavy suites) the first time a task is graded,
and kept as JSON under the prepare cache, keyed by everything it depends on. The episode's
canary run is watched like its real run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shadowrl.atomic import write_json
from shadowrl.tasks.canary import canary_source
from shadowrl.tasks.prepare import PreparedTask, apply_patch_to_dir
from shadowrl.tasks.runner import run_tests_local

RUNS = 3  # build-time runs under gold and under noop; a canary fails in every one
SALTS = 3  # perturbation steps tried before settling for the ids the first one gives
PLAN_VERSION = 5  # bump when `canary.py` changes what it perturbs
_VISIBLE_SUFFIXES = {".py", ".md", ".rst", ".txt", ".cfg", ".toml", ".ini"}
_VISIBLE_CAP = 4_000_000  # characters of visible text read (a large repo's tests are visible)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CanaryPlan:
    """The canary run's files and the ids whose canaries failed under gold and noop."""

    salt: int
    files: dict[str, str]  # path -> canary text, written over the real test file
    ids: tuple[str, ...]


def _id_file(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def _visible_text(prepared: PreparedTask) -> str:
    """What the agent can read: the issue and the pristine workspace's text files."""
    parts, size = [prepared.task.problem_statement], 0
    for path in sorted(prepared.workspace.rglob("*")):
        if path.suffix in _VISIBLE_SUFFIXES and path.is_file() and not path.is_symlink():
            text = path.read_text(errors="replace")
            size += len(text)
            if size > _VISIBLE_CAP:
                break
            parts.append(text)
    return "\n".join(parts)


def canary_files(prepared: PreparedTask, salt: int) -> dict[str, str]:
    """{path: canary text} for the test files of the task's ids: the hidden ones where there
    are any (visible tests stay as they are), else the visible ones."""
    id_files = {_id_file(i) for i in prepared.task.test_ids}
    hidden = {
        p: t
        for p, t in prepared.hidden_files().items()
        if t is not None and p in id_files and p.endswith(".py")
    }
    if hidden:
        visible: str | None = _visible_text(prepared)
        sources = hidden
    else:
        visible = None
        sources = {p: t for p in sorted(id_files) if (t := prepared.read(p)) is not None}
    out = {}
    for path, text in sources.items():
        try:
            canary, n = canary_source(text, salt, visible)
        except (SyntaxError, ValueError, UnicodeError) as e:
            log.warning("%s: no canary of %s (%s)", prepared.task.instance_id, path, e)
            continue
        if n:
            out[path] = canary
    return out


def workspace_copy(prepared: PreparedTask, work: Path, patch: str) -> Path:
    """A host copy of the workspace at `work` with the hidden tests and `patch` in."""
    shutil.copytree(prepared.workspace, work, symlinks=True)
    for path, text in prepared.hidden_files().items():
        if text is not None:
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text)
    if patch:
        apply_patch_to_dir(work, patch)
    return work


def _failing(
    prepared: PreparedTask, files: dict[str, str], patch: str, ids: Sequence[str]
) -> set[str] | None:
    """Ids of `ids` that did not pass with `patch` applied and the canaries in; None if the
    run did not finish (a canary that breaks collection proves nothing)."""
    task = prepared.task
    with tempfile.TemporaryDirectory(prefix="shadowrl-canary-") as tmp:
        work = workspace_copy(prepared, Path(tmp) / "ws", patch)
        for path, text in files.items():
            (work / path).write_text(text)
        run = run_tests_local(task, work, prepared.python, task.test_ids, Path(tmp), watched=False)
    if run.status != "ran":  # said aloud: a plan built of such runs has no canary
        log.warning("%s: a canary run did not finish (%s)", task.instance_id, run.status)
        return None
    results = run.results(task.test_ids)
    return {i for i in ids if results[i] != "passed"}


def _every_run(
    prepared: PreparedTask, files: dict[str, str], patch: str, ids: Sequence[str]
) -> set[str]:
    kept = set(ids)
    for _ in range(RUNS):
        failing = _failing(prepared, files, patch, sorted(kept))
        kept &= failing if failing is not None else set()
    return kept


def build_plan(prepared: PreparedTask) -> CanaryPlan:
    """Try salts until no id's canary fails under gold yet passes under the bug."""
    best: CanaryPlan | None = None
    for salt in range(SALTS):
        files = canary_files(prepared, salt)
        candidates = sorted(i for i in prepared.task.test_ids if _id_file(i) in files)
        gold = _every_run(prepared, files, prepared.task.patch, candidates)
        both = _every_run(prepared, files, "", sorted(gold))
        plan = CanaryPlan(salt, files, tuple(sorted(both)))
        if candidates and not plan.ids:
            log.warning(
                "%s: no canary failed under gold and noop (salt %d)",
                prepared.task.instance_id,
                salt,
            )
        if best is None or len(plan.ids) > len(best.ids):
            best = plan
        if both == gold:
            break
    assert best is not None
    return best


def _cache_path(prepared: PreparedTask) -> Path:
    t = prepared.task
    blob = json.dumps(
        [PLAN_VERSION, t.patch, t.bug_patch, t.test_patch, list(t.test_ids), list(t.test_cmd),
         list(t.env), t.problem_statement, prepared.workspace.name],
    ).encode()  # fmt: skip
    key = hashlib.sha256(blob).hexdigest()[:16]
    cache = prepared.workspace.parent.parent / "canaries"
    return cache / f"{PurePosixPath(t.instance_id).name}-{key}.json"


def _saved_or_built(prepared: PreparedTask) -> tuple[int, tuple[str, ...], CanaryPlan | None]:
    """The plan's salt and ids, built once (one builder at a time across threads and
    processes, under a lock file) and then read from the prepare cache; the built plan
    too when this call built it (its files are made already)."""
    path = _cache_path(prepared)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            saved = json.loads(path.read_text())
            return int(saved["salt"]), tuple(map(str, saved["ids"])), None
        plan = build_plan(prepared)
        write_json(path, {"salt": plan.salt, "ids": list(plan.ids)}, indent=None)
    return plan.salt, plan.ids, plan


def _perturbed_files(prepared: PreparedTask) -> set[str]:
    """The test files `canary_files` may perturb: the hidden ones, else the visible ones."""
    id_files = {_id_file(i) for i in prepared.task.test_ids}
    hidden = {p for p, t in prepared.hidden_files().items() if t is not None and p in id_files}
    return hidden or id_files


def canaried(prepared: PreparedTask) -> bool:
    """Whether every FAIL_TO_PASS id the canaries may perturb is a canary (and there is one):
    a lie that makes such a test pass then passes its canary. Visible tests of a task with
    hidden ones are never perturbed (the agent knows them); they do not count. The plan's
    files are not made (a cached plan's read is cheap)."""
    files = _perturbed_files(prepared)
    wanted = {i for i in prepared.task.FAIL_TO_PASS if _id_file(i) in files}
    return bool(wanted) and wanted <= set(_saved_or_built(prepared)[1])


def canary_plan(prepared: PreparedTask) -> CanaryPlan:
    """The task's plan: its canary files and ids."""
    salt, ids, built = _saved_or_built(prepared)
    return built or CanaryPlan(salt, canary_files(prepared, salt), ids)
