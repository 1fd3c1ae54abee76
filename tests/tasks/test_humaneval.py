"""The easy tier's hidden checks, and widening it: more bugs per problem, never across the
train/held-out line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.humaneval import (
    EXTRA_CHECKS,
    HIDDEN_TEST,
    build_wider,
    hidden_test,
    humaneval_problems,
)
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.patch import apply_patch


def test_wider_adds_distinct_validated_bugs_to_each_problem(cache_dir: Path) -> None:
    easy = [t for t in load_suite("easy") if t.split == "heldout"][:2]
    python = env_python(build_env(("pytest",), cache_dir))
    tasks = build_wider(easy, python, per_problem=2, split="heldout")
    ids = [t.instance_id for t in tasks]
    assert len(ids) == len(set(ids))
    assert {t.instance_id for t in easy} <= set(ids)  # the originals are kept as they are
    new = [t for t in tasks if t not in easy]
    assert new, "no extra bug was found for two HumanEval problems"
    assert {t.repo for t in new} <= {t.repo for t in easy}
    assert all(t.split == "heldout" and t.tier == "easy" for t in new)
    assert max(Counter(t.repo for t in new).values()) <= 2
    originals = {t.repo: t.bug_patch for t in easy}
    assert all(t.bug_patch != originals[t.repo] for t in new)  # a different bug each
    assert all(t.FAIL_TO_PASS for t in new)  # validated: the hidden check fails on the bug


def test_the_built_in_wide_suite_holds_only_held_out_problems() -> None:
    """easy-wide widens the held-out problems; none of its problems is trained on."""
    train_problems = {t.repo for t in load_suite("easy", "train")}
    wide = load_suite("easy-wide")
    assert {t.split for t in wide} == {"heldout"}
    assert not {t.repo for t in wide} & train_problems
    assert {t.instance_id for t in load_suite("easy", "heldout")} <= {t.instance_id for t in wide}


def test_task_making_without_a_terminal_logs_its_counts(caplog):
    from shadowrl.commands.tasks import _progress_callback

    caplog.set_level("INFO", logger="shadowrl.commands.tasks")
    bar, on_result = _progress_callback("adding bugs")
    with bar:
        for i in range(60):
            on_result(None if i % 3 else object())
    assert [r.getMessage() for r in caplog.records] == [
        "adding bugs: kept 9, rejected 16",
        "adding bugs: kept 17, rejected 33",
    ]


def test_a_check_that_is_only_its_example_gets_inputs_beyond_it() -> None:
    """The added inputs hold under the canonical solution, and the committed tasks carry them."""
    problems = {p["task_id"]: p for p in humaneval_problems()}
    tasks = {t.repo.split(":", 1)[1]: t for t in load_suite("easy")}
    for task_id, extra in EXTRA_CHECKS.items():
        problem = problems[task_id]
        text = hidden_test(problem)
        assert all(line in text for line in extra)
        namespace: dict[str, object] = {}
        exec(problem["prompt"] + problem["canonical_solution"], namespace)  # the reference
        exec(text.split("\n", 2)[2], namespace)  # past the two imports of the module
        namespace["check"](namespace[problem["entry_point"]])  # type: ignore[operator]
        if task_id in tasks:
            assert apply_patch({}, tasks[task_id].test_patch)[HIDDEN_TEST] == text
