"""`shadowrl tasks ...` through argparse, as the dispatcher calls it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from shadowrl.commands import tasks as tasks_command
from shadowrl.commands.config import Config
from shadowrl.tasks.task import load_suite


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
