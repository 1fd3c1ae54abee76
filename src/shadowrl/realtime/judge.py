"""Judging continuations of a branch point: the session's own tests, through the one grader.

A `Judge` is asked once per faithful point (`scorer`): either it can score that point's
continuations, and gives the function that does, or it says why not (`NotJudged`: the
point is then no branch point, counted; no continuation is run for it). A scorer sees
one `Attempt` (a continuation, or the recorded one re-run: its sandbox before it is
closed and its whole-session trajectory) and gives its reward, or None when the judge
gives it no label (a silent simulated user): it then stays out of the group. The judge
is never the policy's opinion of itself, and never the recorded session's user
feedback. The other judges, built on this one, are in `judges.py`.

`SessionTests`, the product loop's judge, grades with `tasks.verify`, the grader of RL
episodes and eval, on a task made of the session itself:

- the workspace is the point's starting copy (`rebuild.py` checked it against the
  session's recorded starting hash; a `path@commit` workspace is that commit's tree),
  kept once per content hash under the task cache (`branch-workspaces/`), so the grader
  restores test files from it and keeps canary plans beside the prepared tasks';
- its tests are the workspace's `test_*.py` / `*_test.py`; a workspace without any is
  not judged. Their node ids and how each fares on the pristine workspace come from one
  grader run there (`tasks.testrun.run_graded_tests`, no line held to account: it is the
  user's code as it was); a run that does not finish (collection error, crash, timeout)
  is not judged. FAIL_TO_PASS are the ids that failed there (all of them when none did),
  PASS_TO_PASS the rest;
- each continuation's final files (what changed in its sandbox; a deleted file deleted)
  are written into a fresh sandbox of that task, with the task env bound as in RL
  episodes (the served session's sandbox has none), and `verify` grades it: pristine test
  files restored first, tamper layers, canaries; the reward is the verdict's (1 or 0,
  no shaping by the episode: the judge scores the workspace).

A file the continuation turned into a link leading outside the workspace cannot be read
back and is left pristine.
"""

from __future__ import annotations

import functools
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from shadowrl.atomic import build_dir
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.sandbox import Sandbox, SandboxConfig
from shadowrl.serve.workspaces import ContentHasher
from shadowrl.tasks import PreparedTask, Seed, Task, Verdict, build_env, run_graded_tests, verify
from shadowrl.tasks.config import ShapingConfig
from shadowrl.types import Trajectory

TEST_GLOBS = ("test_*.py", "*_test.py")
WORKSPACES = "branch-workspaces"  # under the task cache, beside `workspaces/`
ENV = ("pytest",)  # the session's tests' env: what the tasks' default is


@dataclass(frozen=True)
class Attempt:
    """One continuation of a branch point as a judge sees it."""

    sandbox: Sandbox  # its files at the end (the judge reads them before it is closed)
    trajectory: Trajectory  # the whole session's: the recorded prefix's turns, then its own
    index: int  # which of the point's K continuations (RECORDED: the session's own)


RECORDED = -1  # `Attempt.index` of the recorded continuation, re-run and re-judged
Scorer = Callable[[Attempt], float | None]  # None: no label, left out of the group


@dataclass(frozen=True)
class NotJudged:
    """Why a faithful point's continuations cannot be judged (it is then no branch point)."""

    reason: str


class Judge(Protocol):
    """Scores the continuations of a branch point, each in the sandbox it ran in."""

    def scorer(self, point: Rebuilt) -> Scorer | NotJudged: ...


def test_files(root: Path) -> list[str]:
    """The workspace's test modules, relative, sorted."""
    found = {p for g in TEST_GLOBS for p in root.rglob(g) if p.is_file() and not p.is_symlink()}
    return sorted(str(p.relative_to(root)) for p in found)


def kept_workspace(point: Rebuilt, cache: Path) -> Path:
    """The point's starting workspace under the cache, keyed by its content hash."""

    def copy(tmp: Path) -> None:
        shutil.copytree(point.copy, tmp, symlinks=True)

    key = point.workspace_hash or ContentHasher(point.copy).start()
    return build_dir(cache / WORKSPACES / key[:16], copy)


def carry_over(src: Sandbox, dst: Sandbox) -> None:
    """Make `dst` (on the same pristine workspace) hold `src`'s changed files."""
    for path in src.changed_files():
        try:
            dst.write_file(path, src.read_file(path))
        except FileNotFoundError:
            dst.exec(f"rm -rf -- {shlex.quote(path)}")
        except (OSError, ValueError):  # a directory, a link leading outside: left pristine
            continue


@dataclass(frozen=True)
class SessionTests:
    """The session workspace's own tests, run by the grader (module docstring)."""

    cache_dir: Path
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    shaping: ShapingConfig = field(default_factory=ShapingConfig)
    timeout_s: float = 120.0

    def scorer(self, point: Rebuilt) -> Scorer | NotJudged:
        task = self.task(point)
        return task if isinstance(task, NotJudged) else functools.partial(self.score, task)

    def task(self, point: Rebuilt) -> PreparedTask | NotJudged:
        """The point's workspace as a task of its own tests (module docstring)."""
        files = test_files(point.copy)
        if not files:
            return NotJudged("the workspace has no tests")
        cache = self.cache_dir.expanduser().resolve()
        workspace = kept_workspace(point, cache)
        probe = Task(
            instance_id=f"session-{workspace.name}", repo="session",
            problem_statement="the session's own tests", patch="", FAIL_TO_PASS=tuple(files),
            seed=Seed(path=str(point.copy)), timeout_s=self.timeout_s, env=ENV,
        )  # fmt: skip
        prepared = PreparedTask(probe, workspace, build_env(ENV, cache))
        box = prepared.sandbox(self.sandbox.backend, self.sandbox.limits)
        try:
            run = run_graded_tests(probe, prepared, box, blame={}).run
        finally:
            box.close()
        if run.status != "ran" or not run.outcomes:
            return NotJudged(f"the workspace's tests do not run as they are ({run.status})")
        failing = tuple(i for i, o in sorted(run.outcomes.items()) if o != "passed")
        passing = tuple(i for i in sorted(run.outcomes) if i not in failing)
        task = probe.model_copy(
            update={"FAIL_TO_PASS": failing or passing, "PASS_TO_PASS": passing if failing else ()}
        )
        return PreparedTask(task, prepared.workspace, prepared.env)

    def score(self, prepared: PreparedTask, attempt: Attempt) -> float:
        """The grader's reward for the attempt's final files on `prepared`'s task."""
        return self.verdict(prepared, attempt.sandbox).reward

    def verdict(self, prepared: PreparedTask, sandbox: Sandbox) -> Verdict:
        """The grader's verdict on `sandbox`'s final files on `prepared`'s task."""
        box = prepared.sandbox(self.sandbox.backend, self.sandbox.limits)
        try:
            carry_over(sandbox, box)
            return verify(prepared.task, prepared, box, shaping=self.shaping)
        finally:
            box.close()
