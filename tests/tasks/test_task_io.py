"""Task records, JSONL files, SWE-bench export and unified diffs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowrl.tasks.load import load_suite
from shadowrl.tasks.patch import PatchError, apply_patch, created_paths, make_patch
from shadowrl.tasks.task import (
    Task,
    TaskFileError,
    export_swebench,
    hash_split,
    load_tasks,
    save_tasks,
)

RECORD = {
    "instance_id": "x__y-1",
    "repo": "x/y",
    "problem_statement": "broken",
    "patch": "",
    "FAIL_TO_PASS": '["tests/test_a.py::test_b[1 2]"]',  # SWE-bench's JSON-encoded form
    "PASS_TO_PASS": [],
    "seed": {"path": "seed"},
}


def test_swebench_strings_are_decoded_and_seed_paths_resolved(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(RECORD) + "\n\n")
    (task,) = load_tasks(path)
    assert task.FAIL_TO_PASS == ("tests/test_a.py::test_b[1 2]",)
    assert task.seed.path == str(tmp_path / "seed")
    save_tasks([task], tmp_path / "u.jsonl")
    assert json.loads((tmp_path / "u.jsonl").read_text())["seed"]["path"] == "seed"
    export_swebench([task], tmp_path / "s.jsonl")
    exported = json.loads((tmp_path / "s.jsonl").read_text())
    assert json.loads(exported["FAIL_TO_PASS"]) == ["tests/test_a.py::test_b[1 2]"]


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"FAIL_TO_PASS": []}, "FAIL_TO_PASS"),
        ({"seed": {"sdist": "toolz==1.0.0"}}, "seed"),
        ({"tier": 3}, "tier"),
        ({"bogus": 1}, "bogus"),
        ({"patch": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n?b\n"}, "'patch'.*patch line 5"),
        (
            {"test_patch": "diff --git a/b b/b\nBinary files a/b and b/b differ\n"},
            "test_patch.*binary",
        ),
        ({"bug_patch": "not a diff"}, "bug_patch.*no file diff"),
    ],
)
def test_malformed_line_names_line_and_field(tmp_path: Path, change: dict, where: str) -> None:
    path = tmp_path / "t.jsonl"
    bad = {**RECORD, "instance_id": "x__y-2", **change}
    path.write_text(json.dumps(RECORD) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskFileError, match=rf"t\.jsonl:2: .*{where}"):
        load_tasks(path)


def test_not_json_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("{nope\n")
    with pytest.raises(TaskFileError, match=":1: not JSON"):
        load_tasks(path)
    path.write_text(json.dumps(RECORD) + "\n" + json.dumps(RECORD) + "\n")
    with pytest.raises(TaskFileError, match=":2: duplicate"):
        load_tasks(path)


def test_hash_split_is_deterministic_and_roughly_sized() -> None:
    splits = [hash_split(f"t-{i}") for i in range(2000)]
    assert splits == [hash_split(f"t-{i}") for i in range(2000)]
    assert 0.15 < splits.count("heldout") / 2000 < 0.25


def test_builtin_easy_suite_loads_with_both_splits() -> None:
    tasks = load_suite("easy")
    assert len(tasks) >= 150
    assert {t.split for t in tasks} == {"train", "heldout"}
    assert all(t.test_patch and t.bug_patch and Path(str(t.seed.path)).is_dir() for t in tasks)
    assert len(load_suite("easy", "heldout")) + len(load_suite("easy", "train")) == len(tasks)


def test_patch_roundtrip_create_modify_delete() -> None:
    before: dict[str, str | None] = {"a.py": "x = 1\ny = 2\n", "gone.py": "z\n", "new.txt": None}
    after: dict[str, str | None] = {"a.py": "x = 1\ny = 3\n", "gone.py": None, "new.txt": "hi"}
    patch = make_patch(before, after)
    files = {k: v for k, v in before.items() if v is not None}
    assert apply_patch(files, patch) == after
    assert created_paths(patch) == ["new.txt"]


def test_stale_patch_is_an_error() -> None:
    patch = make_patch({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    with pytest.raises(PatchError, match="does not apply"):
        apply_patch({"a.py": "x = 5\n"}, patch)
    with pytest.raises(PatchError, match="does not exist"):
        apply_patch({}, patch)


def test_swebench_extra_fields_are_accepted() -> None:
    record = {**RECORD, "version": "1.0", "hints_text": "", "base_commit": "abc123"}
    task = Task.model_validate(record)
    assert task.seed.base_commit == "abc123"


def test_test_cmd_may_be_a_shell_string_or_an_argv() -> None:
    shell = Task.model_validate({**RECORD, "test_cmd": "python -m pytest -o 'pythonpath=src lib'"})
    argv = Task.model_validate({**RECORD, "test_cmd": ["python", "-m", "pytest", "-q"]})
    encoded = Task.model_validate({**RECORD, "test_cmd": '["python", "-m", "pytest"]'})
    assert shell.test_cmd == ("python", "-m", "pytest", "-o", "pythonpath=src lib")
    assert argv.test_cmd == ("python", "-m", "pytest", "-q")
    assert encoded.test_cmd == ("python", "-m", "pytest")


def test_task_test_ids_dedupe() -> None:
    task = Task.model_validate(
        {**RECORD, "PASS_TO_PASS": ["tests/test_a.py::test_b[1 2]", "t.py::c"]}
    )
    assert task.test_ids == ("tests/test_a.py::test_b[1 2]", "t.py::c")


def test_a_missing_seed_directory_is_named_with_how_to_move_a_task_file(tmp_path: Path) -> None:
    from shadowrl.tasks.prepare import seed_dir

    path = tmp_path / "moved" / "t.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(RECORD) + "\n")  # its seed, "seed", is not beside it
    (task,) = load_tasks(path)
    with pytest.raises(FileNotFoundError, match=r"moved/seed does not exist.*tasks export"):
        seed_dir(task.seed, tmp_path / "cache")
    (path.parent / "seed").mkdir()
    (path.parent / "seed" / "m.py").write_text("x = 1\n")
    assert (seed_dir(task.seed, tmp_path / "cache") / "m.py").read_text() == "x = 1\n"
