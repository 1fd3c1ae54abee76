"""`shadowrl bench grow`: failed production sessions become tasks of the pinned suite.

A session failed when its user's last decision was a reject or they reverted the
agent's work. It can become a task when its tests are known: the task the simulated
user brought (`task_id`, with its hidden tests and gold fix), or tests a person
supplies for that session id. The candidate is the session's workspace as it is now
(a rejected session's changes were never applied; the checks below catch a workspace
moved on since), the user's request as the problem statement (a simulated user
pastes the task's prompt; then it is the source task's statement, so the prompt the
agent is shown renders the same way), and those tests. It is kept only if validated
by the harness's reference policies: the tests fail on the snapshot as it is (`noop`)
and, where a fix is known, pass with it (`gold`); and only if it is new: a snapshot
whose bytes, request and tests equal its source task's (a simulated user's untouched
checkout) or an earlier grown task's is the same task.

No contamination, by construction: a grown task goes into the held-out split only if
the task its session was on is held out *and* not among the tasks training sees
(`visible`: the users' suite, whose sessions the cycle trains on, and every train
split); else it is a train task, which the pinned eval (`suite:heldout`) never loads.
Tests a person supplies carry their own split (train unless said otherwise).

The result is the next version of the grown suite (`tasks/versions.py`): a new file,
a new pin; the gate refuses to compare results across versions.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine

from shadowrl.episode import EpisodeSpec, run_reference
from shadowrl.eval import suite_hash
from shadowrl.serve.store.queries import SessionView, iter_sessions
from shadowrl.serve.store.signals import DECISIONS
from shadowrl.serve.workspaces import SKIPPED_DIRS
from shadowrl.tasks import Seed, Split, Task, load_tasks
from shadowrl.tasks.prepare import prepare, task_prompt
from shadowrl.tasks.versions import versions, write_version

GROWN = "bench-grow:"  # Task.source prefix of grown tasks, followed by the session id


class SuppliedTests(BaseModel):
    """Tests a person wrote for one failed session (a line of `--tests FILE`)."""

    model_config = ConfigDict(extra="forbid")
    session_id: str = Field(description="The session the tests are for.")
    test_patch: str = Field(description="The hidden tests, a diff against the workspace.")
    FAIL_TO_PASS: tuple[str, ...] = Field(description="Tests that fail on the workspace.")
    PASS_TO_PASS: tuple[str, ...] = Field(default=(), description="Tests that must keep passing.")
    patch: str = Field(default="", description="A known fix, if there is one ('' = none).")
    env: tuple[str, ...] = Field(default=("pytest",), description="pip requirements of the tests.")
    split: Split = Field(default="train", description="Where the task goes.")


@dataclass(frozen=True)
class Found:
    """What became of one failed session."""

    session_id: str
    task: Task | None
    why: str  # 'added (heldout)', or why it was left out


def failed(signals: Sequence[str]) -> bool:
    """The user's last decision was a reject, or they reverted the agent's work."""
    last = next((s for s in reversed(signals) if s in DECISIONS), None)
    return last == "reject" or "revert" in signals


def content_key(task: Task) -> str:
    """Two grown tasks with the same workspace bytes, statement and tests are one task."""
    root = Path(task.seed.path or "")
    h = hashlib.sha256(f"{task.problem_statement}\0{task.test_patch}\0".encode())
    for p in sorted(root.rglob("*")):
        if p.is_file() and not SKIPPED_DIRS.intersection(p.relative_to(root).parts):
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def candidate(
    view: SessionView,
    source: Task | None,
    supplied: SuppliedTests | None,
    visible: set[str],
    seeds: Path,
) -> Task | str:
    """The candidate task of a failed session, or why there is none."""
    s = view.session
    if s.kind != "agent" or not s.workspace or not Path(s.workspace).is_dir():
        return "no workspace to snapshot (not an agent session on a directory)"
    if source is None and supplied is None:
        return "no tests: its task is unknown and none were supplied"
    request = s.task or ""
    statement = source.problem_statement if source and request == task_prompt(source) else request
    if not statement.strip():
        return "no request to state the problem"
    iid = f"{source.instance_id if source else 'session'}--{s.id[-10:]}"
    seed = seeds / iid
    if not seed.exists():
        shutil.copytree(
            s.workspace, seed, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED_DIRS)
        )
    fields: dict[str, Any]
    if supplied is not None:
        fields = supplied.model_dump(exclude={"session_id"})
    else:
        assert source is not None
        fields = source.model_dump(include={
            "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "env", "test_cmd", "timeout_s",
            "allowed_primitives", "tier",
        })  # fmt: skip
        held = source.split == "heldout" and source.instance_id not in visible
        fields["split"] = "heldout" if held else "train"
    return Task(
        instance_id=iid, repo=source.repo if source else "production",
        problem_statement=statement, seed=Seed(path=str(seed)), bug_patch="",
        source=GROWN + s.id, **fields,
    )  # fmt: skip


def as_prepared(task: Task, cache_dir: Path) -> Task:
    """`task` seeded by its prepared (buggy) workspace, to compare with a snapshot."""
    return task.model_copy(update={"seed": Seed(path=str(prepare(task, cache_dir).workspace))})


async def validate(task: Task, cache_dir: Path, tokenizer: Any, spec: EpisodeSpec) -> str | None:
    """None when the tests fail on the snapshot and pass with the known fix; else why not."""
    prepared = prepare(task, cache_dir)
    if (await run_reference("noop", prepared, tokenizer, spec))[0]:
        return "the tests already pass on the snapshot"
    if task.patch.strip() and not (await run_reference("gold", prepared, tokenizer, spec))[0]:
        return "the known fix does not pass the tests"
    return None


async def grow_suite(
    engine: Engine,
    root: Path,
    base: Sequence[Task],
    sources: Mapping[str, Task],
    visible: set[str],
    supplied: Iterable[SuppliedTests] = (),
    *,
    cache_dir: Path,
    tokenizer: Any,
    spec: EpisodeSpec,
    since: datetime | None = None,
    on_found: Callable[[Found], None] | None = None,
    exclude_keys: Collection[str] = (),
) -> tuple[Path | None, list[Found]]:
    """Append the validated candidates of failed sessions as the next version of the grown
    suite at `root` (its first version is `base`); the new file (None: nothing added)."""
    if not versions(root):
        write_version(root, base, {"added": [], "heldout_hash": heldout_hash(base)})
    current = load_tasks(versions(root)[-1])
    grown = [t for t in current if t.source.startswith(GROWN)]
    done = {t.source[len(GROWN) :] for t in grown}
    keys = {content_key(t): t.instance_id for t in grown}
    tests = {t.session_id: t for t in supplied}
    found: list[Found] = []
    for view in iter_sessions(engine, since, exclude_keys):
        sid = view.session.id
        if sid in done or not failed([f.signal for f in view.feedback]):
            continue
        source = sources.get(view.session.task_id or "")
        made = candidate(view, source, tests.get(sid), visible, root / "seeds")
        if isinstance(made, Task):
            if source is not None and source.instance_id not in keys.values():
                keys[content_key(as_prepared(source, cache_dir))] = source.instance_id
            why = keys.get(key := content_key(made))
            why = (
                f"the same task as {why}"
                if why
                else await validate(made, cache_dir, tokenizer, spec)
            )
            if why:
                shutil.rmtree(made.seed.path or "", ignore_errors=True)
                made = why
            else:
                keys[key] = made.instance_id
        result = (
            Found(sid, made, f"added ({made.split})")
            if isinstance(made, Task)
            else Found(sid, None, made)
        )
        found.append(result)
        if on_found is not None:
            on_found(result)
    added = [f.task for f in found if f.task is not None]
    if not added:
        return None, found
    tasks = [*current, *added]
    info = {"added": [t.instance_id for t in added], "heldout_hash": heldout_hash(tasks)}
    return write_version(root, tasks, info), found


def heldout_hash(tasks: Sequence[Task]) -> str:
    """The pin an eval of the version's held-out split records (`eval.pins.suite_hash`)."""
    return suite_hash([t for t in tasks if t.split == "heldout"], task_prompt)
