"""A prepared task's sandbox runs a plain `python -m pytest` with the task env's pytest.

The prompt tells the agent exactly that command (no host paths), so it must work on
every backend: the env is bound read-only and its bin dir is first on PATH.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.patch import apply_patch, touched_paths
from shadowrl.tasks.prepare import PreparedTask, prepare, task_prompt


@pytest.fixture(scope="module")
def easy(cache_dir: Path) -> PreparedTask:
    return prepare(load_suite("easy")[0], cache_dir)


@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_plain_python_is_the_task_env(
    backend: str, easy: PreparedTask, sandbox_for: Callable[..., Sandbox]
) -> None:
    box = sandbox_for(easy, backend)
    probe = box.exec("python -c 'import sys, pytest; print(sys.prefix, pytest.__file__)'")
    assert probe.exit_code == 0, probe.stderr
    prefix, pytest_file = probe.stdout.split()
    assert prefix == str(easy.env) and pytest_file.startswith(f"{easy.env}/")

    buggy = box.exec("python -m pytest -q", timeout=60)
    assert buggy.exit_code == 1 and "1 failed" in buggy.stdout, buggy.stdout + buggy.stderr
    task = easy.task
    before = {p: text for p in touched_paths(task.patch) if (text := easy.read(p)) is not None}
    for path, text in apply_patch(before, task.patch).items():
        assert text is not None
        box.write_file(path, text)
    fixed = box.exec("python -m pytest -q", timeout=60)
    assert fixed.exit_code == 0 and "1 passed" in fixed.stdout, fixed.stdout + fixed.stderr


def test_prompt_names_no_host_path(easy: PreparedTask) -> None:
    prompt = task_prompt(easy.task)
    assert "`python -P -m pytest -q`" in prompt and easy.task.problem_statement.strip() in prompt
    assert str(easy.env) not in prompt and str(easy.workspace) not in prompt
