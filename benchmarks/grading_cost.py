"""What grading one episode costs, per task, beside one plain pytest run of its tests.

The grader (issue 33, `src/shadowrl/tasks/README.md`) runs a task's tests under its
pytest plugin, whose watch (a profile function) sees every Python call, in an overlay
fork; a run that passes then pays a canary run (none on the cheap path) and, for
function-level tests, the values checked outside. With each task's gold patch applied
(the honest case: every layer runs), one run times per task, in alternation:

- plain: the maintainers' own command (`task.test_cmd`, `python` bound to the task env's,
  with the pytest options the grader runs it with) on a host copy of the gold workspace,
  without the grader's plugin;
- unwatched, watched: `runner.run_tests_local` on the same copy, the plugin on, without
  and with its profile function (`watched=False` is what canary plans are built with);
- verdict: `episode.reference_verdict("gold", ...)` on the overlay sandbox, what an
  episode's grading costs end to end (sandbox, the scripted gold episode, `verify`), after
  a first call that builds the task's canary plan (unless cached) and is reported alone.

Each figure is the median of R repeats; ratios divide by plain in the same run. The
default tasks span the tiers: `easy` (a hidden `check(candidate)`), the family (the cheap
path), toolz and more-itertools (generator-heavy: the watch's worst case) from `medium`.
Run as root (the overlay sandbox): `.venv/bin/python benchmarks/grading_cost.py [--quick]
[--repeats R] [--tasks SUITE:INDEX ...] [--out FILE]`; writes
benchmarks/results/grading_cost.json by default.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from _floor import cpu_flags
from _machine import machine
from shadowrl.episode import EpisodeSpec, prepared_index, reference_verdict
from shadowrl.models import load_tokenizer
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks import PreparedTask, Verdict, load_suite, prepare
from shadowrl.tasks.canaryplan import _cache_path, canary_plan, workspace_copy
from shadowrl.tasks.config import TasksConfig
from shadowrl.tasks.outside import task_plan
from shadowrl.tasks.runner import (
    PLUGIN,
    TestRun,
    directory_reader,
    run_tests_local,
    shell_command,
    test_argv,
)

RESULTS = Path(__file__).parent / "results" / "grading_cost.json"
# SUITE:INDEX; the last colon splits, so family names (`family:dev@8`) keep theirs
# medium:3 is toolz's itertoolz, medium:6 more-itertools' more.py (153 ids, timeout_s 180)
TASKS = ["easy:0", "family:dev@8:0", "medium:3", "medium:6"]
QUICK_TASKS = ["easy:0", "family:dev@8:0"]  # the cheapest: a canaried task, the cheap path
REPEATS, QUICK_REPEATS = 3, 1
ARMS = ("plain", "unwatched", "watched", "verdict")
T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def load(pick: str, cache: Path) -> PreparedTask:
    suite, _, index = pick.rpartition(":")
    return prepare(load_suite(suite)[int(index)], cache)


def plain_argv(prepared: PreparedTask) -> list[str]:
    """The grader's argv (`test_argv`: `task.test_cmd` with `python` bound and the
    maintainers' options, plus the `pythonpath` the grader adds, without which some
    suites do not import under `python -P`) with the plugin's arguments taken out."""
    task = prepared.task
    read = directory_reader(prepared.workspace)
    argv, _ = test_argv(task, prepared.python, read, "unused", task.test_ids, blame={})
    plugin = [i for i, a in enumerate(argv) if a == "-p" and argv[i + 1 : i + 2] == [PLUGIN]]
    drop = {j for i in plugin for j in (i, i + 1)}
    return [a for i, a in enumerate(argv) if i not in drop and not a.startswith("--shadowrl-")]


def plain_run(prepared: PreparedTask, work: Path) -> int:
    """One run of `plain_argv`; its exit status. It runs in the grader's clean environment
    (bytecode not written, as in every graded run): the plugin is the only difference."""
    proc = subprocess.Popen(
        ["/bin/sh", "-c", shell_command(plain_argv(prepared))], cwd=work,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        return proc.wait(timeout=prepared.task.timeout_s)
    except subprocess.TimeoutExpired:
        return -1
    finally:  # the same kill as `run_tests_local`: nothing outlives a run
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def graded_run(prepared: PreparedTask, work: Path, watched: bool) -> TestRun:
    task = prepared.task
    with tempfile.TemporaryDirectory(prefix="grading-cost-") as out:
        return run_tests_local(task, work, prepared.python, task.test_ids, Path(out),
                               watched=watched)  # fmt: skip


def verdict(prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec) -> Verdict:
    return asyncio.run(reference_verdict("gold", prepared, tokenizer, spec))


def passed(run: TestRun, prepared: PreparedTask) -> bool:
    results = run.results(prepared.task.test_ids)
    return run.status == "ran" and all(v == "passed" for v in results.values())


def layers(prepared: PreparedTask) -> dict[str, Any]:
    """Which layers a passing episode of this task pays for (`verify.verify`)."""
    plan = task_plan(prepared)
    cheap = plan is not None and plan.covers(prepared.task.test_ids)
    return {"outside_checks": plan is not None, "cheap_path": cheap}


def bench_task(
    prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec, repeats: int, tmp: Path
) -> dict[str, Any]:
    """Every arm `repeats` times, interleaved so that a change of load hits all alike."""
    work = workspace_copy(prepared, tmp / "gold", prepared.task.patch)
    found = layers(prepared)
    # the semantic index is the agent's tool, not grading: built (or loaded) untimed
    prepared_index(prepared, spec.search)
    # a plan cached by an earlier run (of this script or `tasks validate`) is not rebuilt:
    # the first call then pays no plan build, which the result must say (private path)
    plan_cached = found["cheap_path"] or _cache_path(prepared).is_file()
    first_s, first = timed(lambda: verdict(prepared, tokenizer, spec))
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    paid = first.resolved and first.reward == 1.0
    ok = {"plain": True, "unwatched": True, "watched": True, "verdict": paid}
    for _ in range(repeats):
        s, rc = timed(lambda: plain_run(prepared, work))
        times["plain"].append(s)
        ok["plain"] &= rc == 0
        for arm, watched in (("unwatched", False), ("watched", True)):
            s, run = timed(lambda: graded_run(prepared, work, watched))  # noqa: B023
            times[arm].append(s)
            ok[arm] &= passed(run, prepared)
        s, v = timed(lambda: verdict(prepared, tokenizer, spec))
        times["verdict"].append(s)
        ok["verdict"] &= v.resolved and v.reward == 1.0
    shutil.rmtree(work)
    med = {f"{arm}_s": statistics.median(ts) for arm, ts in times.items()}
    canaries = 0 if found["cheap_path"] else len(canary_plan(prepared).ids)
    return {
        "task": prepared.task.instance_id, "tier": prepared.task.tier,
        "test_ids": len(prepared.task.test_ids), **found, "canary_ids": canaries,
        **med, "first_verdict_s": first_s, "first_built_plan": not plan_cached,
        "ratios": {f"{arm}/plain": med[f"{arm}_s"] / med["plain_s"] for arm in ARMS[1:]},
        "runs_s": times, "all_passed": ok,
    }  # fmt: skip


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ("task", "ids", "plain s", "unwatched", "watched", "verdict", "first", "plan",
            "unw/pl", "wat/pl", "ver/pl")  # fmt: skip
    print(f"{head[0]:<36}" + "".join(f"{h:>10}" for h in head[1:]))
    for r in rows:
        plan = "none" if r["cheap_path"] else "built" if r["first_built_plan"] else "cached"
        times = (r["plain_s"], r["unwatched_s"], r["watched_s"], r["verdict_s"],
                 r["first_verdict_s"])  # fmt: skip
        cells = [f"{c:>10.2f}" for c in times] + [f"{plan:>10}"]
        cells += [f"{c:>10.2f}" for c in r["ratios"].values()]
        print(f"{r['task'][:36]:<36}{r['test_ids']:>10}" + "".join(cells))
        if not all(r["all_passed"].values()):
            print(f"  WARNING: gold did not pass every arm: {r['all_passed']}")
        if not r["cheap_path"] and not r["canary_ids"]:
            print("  note: no canary id planned, so its verdict runs no canary run")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"Tasks {QUICK_TASKS}, 1 repeat.")
    ap.add_argument("--tasks", nargs="+", metavar="SUITE:INDEX", help=f"Default {TASKS}.")
    ap.add_argument("--repeats", type=int, help=f"Timed runs per arm (default {REPEATS}).")
    ap.add_argument("--cache", type=Path, default=Path(TasksConfig().cache_dir).expanduser())
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    picks = args.tasks or (QUICK_TASKS if args.quick else TASKS)
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)
    started = machine() | cpu_flags()  # the load as the run starts
    tokenizer = load_tokenizer("smollm2")
    spec = EpisodeSpec(sandbox=SandboxConfig(backend="overlay"))  # as `tasks validate`
    rows: list[dict[str, Any]] = []
    for pick in picks:
        prepared = load(pick, args.cache)
        with tempfile.TemporaryDirectory(prefix="grading-cost-") as tmp:
            rows.append({"pick": pick, **bench_task(prepared, tokenizer, spec, repeats, Path(tmp))})
    print_table(rows)
    result = {"settings": {"tasks": picks, "repeats": repeats, "backend": "overlay"},
              "tasks": rows, "machine": started,
              "load_avg_1m_end": os.getloadavg()[0]}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    ratios = (f"{r['task']}:{r['ratios']['verdict/plain']:.2f}" for r in rows)
    print(f"verdict_over_plain={','.join(ratios)}")


if __name__ == "__main__":
    main()
