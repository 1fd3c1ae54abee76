"""Generating validated tasks from real code by AST bug injection (SWE-smith style).

    seed tree ──baseline run──► tests that pass on the original
        │
        └─ mutants (mutate.py), shuffled by seed ─► process pool, one job per candidate:
              copy tree, apply mutation(s), run the module's tests (file mode)
              F2P = passed before, fail now     P2P = passed before, pass now
              re-run exactly F2P+P2P by id, the way the grader will, on the bug
              (F2P fail, P2P pass) and on the original (all pass) ─► Task

A candidate is kept only if that last check holds, so every emitted task is known
to be solvable by its gold patch and unsolved by doing nothing. Test runs are killed
as a whole process group at the task's timeout (an injected infinite loop in C code
ignores pytest-timeout). The problem statement is written from the failing output.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from shadowrl.tasks.diffrules import check_file, inside_dunders
from shadowrl.tasks.mutate import (
    ALL_OPERATORS,
    Mutation,
    apply_mutations,
    candidate_mutations,
    is_effective,
)
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.runner import TestRun, run_tests_local
from shadowrl.tasks.task import Seed, Task, hash_split


@dataclass(frozen=True)
class MakeSpec:
    """What to generate: from which tree, how many, how hard."""

    seed: Seed
    repo: str
    tier: str = "medium"
    n: int = 10
    mutations: int = 1  # per task: 1 = medium, 2-3 = hard
    modules: tuple[str, ...] = ()  # source files to mutate ('' = all non-test .py files)
    tests: tuple[str, ...] = ()  # test files to run ('' = all test_*.py)
    env: tuple[str, ...] = ("pytest",)
    test_cmd: tuple[str, ...] = ("python", "-P", "-m", "pytest")  # -> Task.test_cmd
    rng_seed: int = 0
    heldout: float = 0.2
    timeout_s: float = 60.0
    max_fail: int = 20  # more failures than this = a bug too blunt to be a task
    max_pass: int = 150  # P2P subset cap, to keep grading fast
    operators: tuple[str, ...] = ALL_OPERATORS
    statement: str = "medium"  # 'easy' | 'medium' | 'hard': how much the issue reveals
    hidden: dict[str, str] = field(default_factory=dict)  # extra test files -> test_patch
    source: str = "ast-mutation"


@dataclass(frozen=True)
class Job:
    """One candidate bug, shipped to a worker process."""

    spec: MakeSpec
    base: Path
    python: Path
    module: str
    mutations: tuple[Mutation, ...]
    tests: tuple[str, ...]
    baseline: frozenset[str]  # test ids that pass on the original
    probe_timeout: float  # a few times the baseline run: injected infinite loops die fast


def _is_test(path: str) -> bool:
    name = Path(path).name
    return name.startswith("test_") or name.endswith("_test.py") or "tests" in Path(path).parts


def discover(base: Path, spec: MakeSpec) -> tuple[list[str], list[str]]:
    """(source modules, test files) relative to `base`."""
    files = sorted(str(p.relative_to(base)) for p in base.rglob("*.py") if ".tox" not in p.parts)
    modules = list(spec.modules) or [
        f for f in files if not _is_test(f) and "setup.py" not in f and "docs" not in f
    ]
    tests = list(spec.tests) or [f for f in files if Path(f).name.startswith("test_")]
    return modules, tests


def tests_for(module: str, tests: Sequence[str]) -> tuple[str, ...]:
    """Test files named after the module (test_itertoolz.py for itertoolz.py).

    With a single test file (or a package's `__init__.py`) every test applies; a module
    with no test of its own gets none and is skipped, which keeps grading fast.
    """
    stem = Path(module).stem
    if len(tests) == 1 or (stem == "__init__" and len(Path(module).parts) == 2):
        return tuple(tests)
    return tuple(t for t in tests if stem.strip("_") in Path(t).stem)


def _with_hidden(base: Path, spec: MakeSpec, dest: Path) -> None:
    shutil.copytree(base, dest, symlinks=True, dirs_exist_ok=True)
    for path, text in spec.hidden.items():
        (dest / path).write_text(text)


def _failure_excerpt(output: str, lines: int = 14) -> str:
    """The assertion lines of pytest's short tracebacks: what a user would paste in an issue."""
    keep = [
        re.sub(r" at 0x[0-9a-f]+", "", ln)  # addresses differ run to run
        for ln in output.splitlines()
        if ln.startswith(("E ", "FAILED", "ERROR"))
    ]
    return "\n".join(list(dict.fromkeys(keep))[:lines]).strip()


def problem_statement(
    spec: MakeSpec, module: str, fn_names: Sequence[str], f2p: Sequence[str], output: str
) -> str:
    excerpt = _failure_excerpt(output)
    if spec.statement == "easy":
        where = f"The function `{fn_names[0]}` in `{module}` has a bug"
        return f"{where}: it does not do what its docstring says.\n\nA test fails:\n```\n{excerpt}\n```"
    if spec.statement == "hard":
        return f"Something in this library misbehaves after a recent change:\n```\n{excerpt}\n```"
    names = "\n".join(f"- {t}" for t in f2p[:8])
    return f"These tests fail after a recent change:\n{names}\n\nOutput:\n```\n{excerpt}\n```"


def validate(job: Job) -> Task | None:
    """Run one candidate end to end; the task if it is a real, solvable bug."""
    spec = job.spec
    original = (job.base / job.module).read_text()
    mutated = apply_mutations(original, job.mutations)
    with tempfile.TemporaryDirectory(prefix="shadowrl-make-") as tmp:
        work, out = Path(tmp) / "ws", Path(tmp)
        _with_hidden(job.base, spec, work)
        (work / job.module).write_text(mutated)
        probe = _run(job, work, job.tests, out)
        outcomes = probe.outcomes
        f2p = sorted(i for i in job.baseline if i in outcomes and outcomes[i] != "passed")
        if probe.status == "timeout" or not f2p or len(f2p) > spec.max_fail:
            return None
        p2p = sorted(i for i in job.baseline if outcomes.get(i) == "passed")[: spec.max_pass]
        task = _task(spec, job, original, mutated, f2p, p2p, probe.log)
        return task if holds(job, task, work, out, original) else None


def holds(job: Job, task: Task, work: Path, out: Path, original: str) -> bool:
    """The check every generated task passes, its tests run by id the way the grader runs
    them: on the bug in `work`, FAIL_TO_PASS fail and PASS_TO_PASS pass; with `job.module`
    put back to `original`, every test passes."""
    bug = _run(job, work, task.test_ids, out, task).results(task.test_ids)
    if any(bug[i] == "passed" for i in task.FAIL_TO_PASS):
        return False
    if any(bug[i] != "passed" for i in task.PASS_TO_PASS):
        return False
    (work / job.module).write_text(original)
    gold = _run(job, work, task.test_ids, out, task)
    return gold.status == "ran" and all(v == "passed" for v in gold.results(task.test_ids).values())


def _run(job: Job, work: Path, ids: Sequence[str], out: Path, task: Task | None = None) -> TestRun:
    probe = (task or _probe_task(job.spec)).model_copy(update={"timeout_s": job.probe_timeout})
    return run_tests_local(probe, work, job.python, ids, out)


def _probe_task(spec: MakeSpec) -> Task:
    return Task(
        instance_id="probe", repo=spec.repo, problem_statement="", patch="", FAIL_TO_PASS=("-",),
        seed=spec.seed, timeout_s=spec.timeout_s, env=spec.env, test_cmd=spec.test_cmd,
    )  # fmt: skip


def _task(
    spec: MakeSpec,
    job: Job,
    original: str,
    mutated: str,
    f2p: list[str],
    p2p: list[str],
    output: str,
) -> Task:
    digest = hashlib.sha256(mutated.encode()).hexdigest()[:8]
    name = spec.repo.rsplit("/", 1)[-1]
    instance_id = f"{name}__{Path(job.module).stem}-{digest}"
    hidden = spec.hidden
    return Task(
        instance_id=instance_id,
        repo=spec.repo,
        problem_statement=problem_statement(
            spec, job.module, [m.function for m in job.mutations], f2p, output
        ),
        patch=make_patch({job.module: mutated}, {job.module: original}),
        test_patch=make_patch(dict.fromkeys(hidden), dict(hidden)) if hidden else "",
        FAIL_TO_PASS=tuple(f2p),
        PASS_TO_PASS=tuple(p2p),
        bug_patch=make_patch({job.module: original}, {job.module: mutated}),
        seed=spec.seed,
        tier=spec.tier,
        source=f"{spec.source}:" + "+".join(m.operator.replace(" ", "_") for m in job.mutations),
        split=hash_split(instance_id, spec.heldout),
        timeout_s=spec.timeout_s,
        env=spec.env,
        test_cmd=spec.test_cmd,
        # The gold fix is our own revert of the mutation: what it must use, the agent may
        # (and a fix inside an existing `__eq__` is one a test's comparison calls).
        allowed_primitives=tuple(
            sorted(
                {v.rule for v in check_file(job.module, mutated, original)}
                | inside_dunders(mutated, original)
            )
        ),
    )


def _combos(
    mutations: list[Mutation], k: int, rng: random.Random
) -> Iterator[tuple[Mutation, ...]]:
    """Groups of k mutations in k different functions of one module (k=1: each mutation)."""
    if k == 1:
        yield from ((m,) for m in mutations)
        return
    for _ in range(len(mutations)):
        by_fn: dict[str, Mutation] = {}
        for m in rng.sample(mutations, len(mutations)):
            by_fn.setdefault(m.function, m)
        if len(by_fn) >= k:
            yield tuple(rng.sample(sorted(by_fn.values(), key=lambda m: m.start), k))


def _module_jobs(
    base: Path,
    spec: MakeSpec,
    module: str,
    tests: Sequence[str],
    baseline: Baseline,
    python: Path,
    rng: random.Random,
) -> Iterator[Job]:
    source = (base / module).read_text()
    muts = candidate_mutations(source, spec.operators)
    rng.shuffle(muts)
    for combo in _combos(muts, spec.mutations, rng):
        try:
            mutated = apply_mutations(source, combo)
        except ValueError:  # overlapping spans (a guard around a nested def)
            continue
        if is_effective(source, mutated):  # checked lazily: parsing a big module is not free
            yield Job(
                spec, base, python, module, combo, tuple(tests), baseline.passing, baseline.timeout
            )


def candidates(
    base: Path, spec: MakeSpec, tests: Sequence[str], baseline: Baseline, python: Path
) -> Iterator[Job]:
    """Jobs in a seed-determined random order, round-robin over modules that have tests."""
    rng = random.Random(spec.rng_seed)
    modules, _ = discover(base, spec)
    per_module = [
        _module_jobs(base, spec, module, mod_tests, baseline, python, rng)
        for module in modules
        if (mod_tests := tests_for(module, tests))
    ]
    while per_module:
        for it in list(per_module):
            job = next(it, None)
            if job is None:
                per_module.remove(it)
            else:
                yield job


@dataclass(frozen=True)
class Baseline:
    """Tests passing on the original tree, and a probe timeout scaled to their run time."""

    passing: frozenset[str]
    timeout: float


def baseline(base: Path, spec: MakeSpec, tests: Sequence[str], python: Path) -> Baseline:
    with tempfile.TemporaryDirectory(prefix="shadowrl-base-") as tmp:
        work = Path(tmp) / "ws"
        _with_hidden(base, spec, work)
        start = time.monotonic()
        run = run_tests_local(_probe_task(spec), work, python, tests, Path(tmp))
        took = time.monotonic() - start
    passing = frozenset(i for i, v in run.outcomes.items() if v == "passed")
    return Baseline(passing, min(spec.timeout_s, 10.0 + 4 * took))


def run_jobs(
    jobs: Iterator[Job],
    n: int,
    key: Callable[[Job], Hashable],
    *,
    workers: int = 2,
    max_candidates: int = 500,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """Validate jobs in a process pool until `n` tasks are accepted, at most one per key."""
    accepted: dict[Hashable, Task] = {}
    submitted = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        running: dict[Future[Task | None], Hashable] = {}
        while len(accepted) < n:
            while len(running) < 2 * workers and submitted < max_candidates:
                job = next(jobs, None)
                if job is None:
                    break
                if key(job) not in accepted:
                    running[pool.submit(validate, job)] = key(job)
                    submitted += 1
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                k, task = running.pop(fut), fut.result()
                on_result(task)
                if task is not None and k not in accepted and len(accepted) < n:
                    accepted[k] = task
        for fut in running:
            fut.cancel()
    return sorted(accepted.values(), key=lambda t: t.instance_id)


def make_tasks(
    spec: MakeSpec,
    base: Path,
    python: Path,
    *,
    workers: int = 2,
    max_candidates: int = 500,
    on_result: Callable[[Task | None], None] = lambda _: None,
) -> list[Task]:
    """Up to `spec.n` validated tasks from `base`, at most one per mutated function."""
    _, tests = discover(base, spec)
    base_run = baseline(base, spec, tests, python)
    if not base_run.passing:
        raise RuntimeError(f"no test passes on the original tree {base}; check the env {spec.env}")
    jobs = candidates(base, spec, tests, base_run, python)
    return run_jobs(
        jobs,
        spec.n,
        lambda j: (j.module, j.mutations[0].function),
        workers=workers,
        max_candidates=max_candidates,
        on_result=on_result,
    )
