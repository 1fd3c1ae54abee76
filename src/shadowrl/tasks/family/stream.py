"""One pass: a stream of fresh instances, so training never sees one twice.

The orchestrator's `TaskSampler` reshuffles a fixed list every epoch; `FamilyStream`
is the same seam (`next()` gives a task and its prepared workspace, `position` counts
draws) over instances generated as they are needed. Draw k takes the train templates
round-robin and the first valid attempt whose bug (the buggy module, `bug_key`) no
earlier draw had; a template whose bugs are all used up passes its draws on to the next
template that has some. Every draw is appended to a JSONL log (task records), which is both
the audit of what training saw and what a resumed run reads back: its bugs stay used,
so a crash never makes a bug come back. A background thread keeps `prefetch` draws
generated ahead, off the event loop that runs the rollouts.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from shadowrl.tasks.family.catalog import templates
from shadowrl.tasks.family.generate import Instance, module_key
from shadowrl.tasks.family.splits import Part
from shadowrl.tasks.family.suite import draw
from shadowrl.tasks.family.template import Template
from shadowrl.tasks.mutate import ALL_OPERATORS, check_operators
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.task import Task, load_tasks

ATTEMPTS = 200  # per draw and template: then the template counts as used up, never repeats


def bug_key(task: Task) -> str:
    """The digest of the buggy module a family task's `bug_patch` writes."""
    files = apply_patch({}, task.bug_patch)
    module = next(p for p in sorted(files) if not p.startswith("test_"))
    return module_key(str(files[module]))


class FamilyStream:
    """Fresh instances of `part` (train by default) until its bugs run out, resumable from `log`."""

    def __init__(
        self,
        python: Path,
        cache_dir: str | Path,
        log: Path,
        *,
        part: Part = "train",
        seed: int = 0,
        prefetch: int = 2,
        pool: Sequence[Template] = (),
        attempts: int = ATTEMPTS,
        operators: Sequence[str] = (),
        skip: Iterable[Task] = (),
    ) -> None:
        """`pool`: the templates to draw from (default: every template of `part`);
        `attempts`: tries per draw before a template counts as used up; `operators`: the
        mutation operators (`tasks/mutate.py`'s names) its bugs come from (default: all);
        `skip`: family tasks whose bugs it never draws (another stage's, e.g. SFT's demos)."""
        self.python, self.cache_dir, self.log = python, cache_dir, log
        self.part, self.seed = part, seed
        self.pool = tuple(pool) or templates(part)
        if not self.pool:
            raise ValueError(f"the family has no template in part {part!r}")
        drawn = load_tasks(log) if log.exists() else []
        self.seen = {bug_key(t) for t in [*drawn, *skip]}
        self.spent: set[str] = set()  # templates with no unseen bug left
        self.position = len(drawn)  # draws so far, resumed ones included
        self._lock = threading.Lock()
        self._next_draw = self.position
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="family-stream")
        self._ahead: deque[Future[Instance]] = deque()
        self.prefetch = max(1, prefetch)
        self.attempts = attempts
        self.operators = tuple(operators) or ALL_OPERATORS
        check_operators(self.operators)

    def __iter__(self) -> Iterator[tuple[Task, PreparedTask]]:
        return self

    def __next__(self) -> tuple[Task, PreparedTask]:
        while len(self._ahead) < self.prefetch:
            self._ahead.append(self._pool.submit(self._draw))
        inst = self._ahead.popleft().result()
        self._ahead.append(self._pool.submit(self._draw))
        with self.log.open("a") as f:
            f.write(json.dumps(inst.task.model_dump(mode="json")) + "\n")
        self.position += 1
        return inst.task, prepare(inst.task, self.cache_dir)

    def _draw(self) -> Instance:
        """The next draw (one worker thread: draws are made in order)."""
        with self._lock:
            k = self._next_draw
            self._next_draw += 1
        key = f"stream:{self.seed}:{self.part}"
        found = draw(
            self.pool, self.part, k, key, self.attempts, self.python, self.seen, self.spent,
            operators=self.operators,
        )  # fmt: skip
        self.seen.add(found.bug_key)
        return found

    def close(self) -> None:
        for fut in self._ahead:
            fut.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
