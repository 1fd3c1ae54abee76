"""Pins are content hashes; the report and the gate command read real eval files."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from shadowrl.commands import gate as gate_command
from shadowrl.commands.config import Config
from shadowrl.commands.eval import parse_suite
from shadowrl.eval.pins import config_sections, suite_hash
from shadowrl.eval.report import render_report, write_report
from shadowrl.tasks.task import Task

from .builders import make_result, rows


def _task(seed_dir: Path, problem: str = "add() subtracts") -> Task:
    record = {
        "instance_id": "demo-1",
        "repo": "demo/demo",
        "problem_statement": problem,
        "patch": "",
        "FAIL_TO_PASS": ["tests/test_a.py::test_add"],
        "seed": {"path": str(seed_dir)},
    }
    return Task.model_validate(record)


def test_suite_hash_follows_content_not_location(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    (a / "m.py").write_text("def add(x, y):\n    return x - y\n")
    b = tmp_path / "elsewhere"
    shutil.copytree(a, b)
    prompt = lambda t: t.problem_statement  # noqa: E731
    h = suite_hash([_task(a)], prompt)
    assert suite_hash([_task(b)], prompt) == h  # same files elsewhere: same suite
    assert suite_hash([_task(a, "other issue")], prompt) != h
    assert suite_hash([_task(a)], lambda t: "new prompt") != h
    (b / "m.py").write_text("def add(x, y):\n    return x + y\n")
    from shadowrl.eval.pins import tree_hash

    tree_hash.cache_clear()
    assert suite_hash([_task(b)], prompt) != h


def test_config_sections() -> None:
    base = config_sections(Config.model_validate({}))
    changed = config_sections(Config.model_validate({"tasks": {"cache_dir": "/elsewhere"}}))
    assert base["tasks"] != changed["tasks"]
    assert base["tasks.shaping"] == changed["tasks.shaping"]  # a cache path is not measured
    assert base["agent"] == changed["agent"]


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("easy", ("easy", None)),
        ("easy:heldout", ("easy", "heldout")),
        ("x/t.jsonl", ("x/t.jsonl", None)),
    ],
)
def test_parse_suite(spec: str, parsed: tuple[str, str | None]) -> None:
    assert parse_suite(spec) == parsed


def test_report_lists_scores_tasks_and_crashes(tmp_path: Path) -> None:
    r = make_result(rows(4, 2), crash=True)
    text = render_report(r)
    assert "| **all** | 4 | 16 |" in text
    assert "| task-0 | hard | 1/4 |" in text  # sample 0 crashed, sample 1 resolved
    assert "RuntimeError: boom" in text
    write_report(r, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"eval.json", "report.md", "pass_by_tier.png"}


def test_report_and_eval_json_say_why_a_sample_failed(tmp_path: Path) -> None:
    from shadowrl.eval.result import EvalResult, Grading

    r = make_result(rows(2, 1, samples=2))
    failed = Grading(
        status="ran",
        fail_to_pass={
            "tests/test_a.py::test_new[x y]": "failed",
            "tests/test_a.py::test_b": "passed",
        },
        pass_to_pass={"tests/test_c.py::test_old": "missing"},
        log_tail="FAILED tests/test_a.py::test_new[x y] - assert 1 == 2",
    )
    voided = Grading(status="tampered", fail_to_pass={"tests/test_a.py::test_b": "missing"},
                     pass_to_pass={}, tampered=["pkg/core.py: \\bos\\._exit\\b"],
                     voided_by="forbidden_text")  # fmt: skip
    r.tasks[0].samples[1] = r.tasks[0].samples[1].model_copy(update={"grading": failed})
    r.tasks[1].samples[1] = r.tasks[1].samples[1].model_copy(update={"grading": voided})
    text = render_report(r)
    assert "## Failing tests of unresolved tasks" in text
    assert "- **task-0** (1 unresolved; runs: ran)" in text
    assert (
        "  - `tests/test_a.py::test_new[x y]`: failed\n  - `tests/test_c.py::test_old`: missing"
        in text
    )
    assert "test_b`: " not in text.split("task-1")[0]  # a passing id is not at fault
    assert "  - tampering: pkg/core.py:" in text
    write_report(r, tmp_path)
    again = EvalResult.load(tmp_path)
    assert again.tasks[0].samples[1].grading == failed
    assert again.tasks[1].samples[1].grading is not None
    assert again.tasks[1].samples[1].grading.status == "tampered"
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert [t["tampered"] for t in saved["tasks"]] == [0, 1]  # eval.json counts them per task
    assert saved["tasks"][1]["samples"][1]["grading"]["voided_by"] == "forbidden_text"


def _gate(
    tmp_path: Path,
    cand: list[list[bool]],
    inc: list[list[bool]],
    config: dict[str, Any] | None = None,
    **pins: str,
) -> int:
    make_result(cand).save(tmp_path / "c.json")
    make_result(inc, pins=dict(pins)).save(tmp_path / "i.json")
    parser = argparse.ArgumentParser()
    gate_command.add_args(parser)
    args = parser.parse_args(
        ["--candidate", str(tmp_path / "c.json"), "--incumbent", str(tmp_path / "i.json")]
    )
    return gate_command.run(args, Config.model_validate(config or {}))


UNPOWERED = {"realtime": {"require_power": False}}


def test_gate_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the real-time loop's rule: 80 episodes at 25 % cannot see a drop of eval.margin
    # (0.02), so a better candidate is still refused while power is required
    assert _gate(tmp_path, rows(20, 4), rows(20, 1)) == 1
    out = capsys.readouterr().out
    assert "reject: the pinned suite is underpowered (smallest detectable drop 0.1" in out
    assert "not applied (they need the training run): kl_to_deployed, mtp_acceptance_drop" in out
    no_heads = {"train": {"mtp": {"every": 0}}}  # no component adds an alarm: none listed
    assert _gate(tmp_path, rows(20, 4), rows(20, 1), no_heads) == 1
    assert "not applied (they need the training run): kl_to_deployed\n" in capsys.readouterr().out
    assert _gate(tmp_path, rows(20, 4), rows(20, 1), UNPOWERED) == 0
    assert "promote: no significant regression" in capsys.readouterr().out
    assert _gate(tmp_path, rows(20, 0), rows(20, 4)) == 1
    assert "reject: significantly worse" in capsys.readouterr().out
    assert _gate(tmp_path, rows(20, 4), rows(20, 4), harness_version="v2") == 2
    assert "refused: results are not comparable: harness version" in capsys.readouterr().out
