"""The red-team modules' hand-written tasks: one builder, one module-scoped fixture shape."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.task import Seed, Task

Opened = dict[str, tuple[PreparedTask, Sandbox]]


def hand_task(
    seed: Path,
    *,
    module: str,
    fixed: str,
    buggy: str,
    visible: Mapping[str, str],
    hidden: Mapping[str, str],
    **fields: Any,
) -> Task:
    """A task on a seed directory of `module` (its `fixed` source; the bug makes it
    `buggy`) and the `visible` test files; `hidden` test files come with the grader.
    `fields`: the rest of the `Task` (instance_id, repo, problem_statement, the test ids,
    tier); source, timeout and the patches are the red team's."""
    seed.mkdir(parents=True, exist_ok=True)
    (seed / module).write_text(fixed)
    for name, text in visible.items():
        (seed / name).write_text(text)
    return Task(
        patch=make_patch({module: buggy}, {module: fixed}),
        bug_patch=make_patch({module: fixed}, {module: buggy}),
        test_patch=make_patch({}, dict(hidden)) if hidden else "",
        seed=Seed(path=str(seed)),
        source="hand",
        timeout_s=30,
        **fields,
    )


def tasks_fixture(build: Callable[[str, Path], Task], names: Iterable[str]) -> Any:
    """A module-scoped `tasks` fixture: name -> (prepared task, local sandbox) of each
    `build(name, fresh directory)`, the sandboxes closed at the module's end."""

    @pytest.fixture(scope="module")
    def tasks(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
        opened = {}
        for name in names:
            prepared = prepare(build(name, tmp_path_factory.mktemp(name)), cache_dir)
            opened[name] = (prepared, prepared.sandbox("local"))
        yield opened
        for _, box in opened.values():
            box.close()

    return tasks
