"""`shadowrl tasks ...` through argparse, as the dispatcher calls it."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from shadowrl.commands import tasks as tasks_command
from shadowrl.commands.config import Config
from shadowrl.tasks.load import load_suite


def _run(argv: list[str], cache: Path) -> int:
    parser = argparse.ArgumentParser()
    tasks_command.add_args(parser)
    config = Config.model_validate({"tasks": {"cache_dir": str(cache)}})
    return tasks_command.run(parser.parse_args(argv), config)


def test_export_swebench(tmp_path: Path, cache_dir: Path) -> None:
    out = tmp_path / "easy.swebench.jsonl"
    assert _run(["export", "--suite", "easy", "--out", str(out)], cache_dir) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(load_suite("easy"))
    assert isinstance(rows[0]["FAIL_TO_PASS"], str) and json.loads(rows[0]["FAIL_TO_PASS"])


def test_make_from_a_directory(tmp_path: Path, cache_dir: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "lib.py").write_text("def inc(x):\n    return x + 1\n")
    (repo / "test_lib.py").write_text(
        "from lib import inc\n\n\ndef test_inc():\n    assert inc(1) == 2\n"
    )
    out = tmp_path / "made.jsonl"
    argv = [
        "make",
        "--seed",
        str(repo),
        "--n",
        "1",
        "--tier",
        "medium",
        "--out",
        str(out),
        "--workers",
        "1",
    ]
    assert _run(argv, cache_dir) == 0
    (task,) = load_suite(str(out))
    assert task.FAIL_TO_PASS == ("test_lib.py::test_inc",) and task.seed.path == str(repo)


def test_validate_names_the_ids_at_fault_and_the_log_tail(
    tmp_path: Path, cache_dir: Path, capsys, caplog
) -> None:
    from shadowrl.tasks.task import save_tasks

    from .conftest import tiny_task

    task = tiny_task(tmp_path)
    seed = Path(str(task.seed.path))
    (seed / "test_calc.py").write_text((seed / "test_calc.py").read_text() + BROKEN)
    bad = task.model_copy(update={"PASS_TO_PASS": ("test_calc.py::test_always_fails",)})
    save_tasks([bad], tmp_path / "bad.jsonl")
    caplog.set_level(logging.INFO, logger="shadowrl.commands.tasks")
    assert (
        _run(["validate", "--suite", str(tmp_path / "bad.jsonl"), "--backend", "local"], cache_dir)
        == 1
    )
    out = capsys.readouterr().out
    assert "tiny__add-1: gold fails (run: ran, reward 0.0)" in out
    assert "  test_calc.py::test_always_fails: failed" in out
    assert "test_add.py::test_add:" not in out  # gold fixes it: not at fault
    assert "  | FAILED test_calc.py::test_always_fails" in out  # the log's failure summary
    assert "noop passes" not in out
    # logged as each task is done, so a run stopped part-way leaves its verdicts
    assert "validated tiny__add-1: NOT valid" in caplog.text


BROKEN = "\n\ndef test_always_fails():\n    assert 1 == 2\n"
