"""Run a benchmark exactly as the policy is served: every task × sample through `run_episode`.

    tasks ─► prepare (once per task, in a thread) ─► root sandbox ─► snapshot
                                                                      │ fork per sample
             policy_factory(task, prepared) ─► run_episode(policy, fork, task_prompt(task))
                                                                      │
                                    verify(task, prepared, fork) ─► SampleResult
    all samples ─► pass@1 / pass@k with intervals, per tier, behaviour, pins ─► EvalResult

Episodes run concurrently under one semaphore (the engine batches their decode
steps); blocking sandbox and grading work runs in threads so the event loop keeps
generating. A sample whose preparation, episode or grading raises is recorded as a
crash with its traceback, counted as unresolved and reported loudly: never a silent 0.
Where the samples run is an `Episodes`: in this process by default, or on Ray
environment workers (`rl/cluster/evaluator.py`, `shadowrl eval --backend ray`), the
preparing, scoring and report staying here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from shadowrl.episode import EpisodeSpec, PolicyFactory, graded_episode
from shadowrl.eval.behaviour import episode_behaviour, summarize_behaviour
from shadowrl.eval.config import EvalConfig
from shadowrl.eval.pins import ConfigPins, harness_version, suite_hash
from shadowrl.eval.result import (
    EvalResult,
    Grading,
    Pins,
    SampleResult,
    TaskResult,
    score,
    score_by_tier,
)
from shadowrl.tasks import Task
from shadowrl.tasks.prepare import PreparedTask, prepare, task_prompt
from shadowrl.tasks.verify import Verdict
from shadowrl.tasks.versions import version_of
from shadowrl.types import Trajectory

log = logging.getLogger(__name__)

Advance = Callable[[bool], None]
Keep = Callable[[Task, int, Trajectory], None]  # (task, sample, graded episode): e.g. save it


@contextlib.contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Advance]:
    """A rich progress bar advanced once per graded sample, showing resolved so far.

    Without a terminal (nohup, CI, a log file) a live bar prints nothing until the end,
    so there the progress is a log line every tenth of the samples instead.
    """
    if not enabled:
        yield lambda _: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    if not Console().is_terminal:
        yield _log_lines(total)
        return

    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    resolved = 0
    with Progress(*columns, transient=False) as bar:
        job = bar.add_task("eval: 0 resolved", total=total)

        def advance(ok: bool) -> None:
            nonlocal resolved
            resolved += ok
            bar.update(job, advance=1, description=f"eval: {resolved} resolved")

        yield advance


def _log_lines(total: int) -> Advance:
    done, resolved, start = 0, 0, time.monotonic()
    every = max(total // 10, 1)

    def advance(ok: bool) -> None:
        nonlocal done, resolved
        done, resolved = done + 1, resolved + ok
        if done % every == 0 or done == total:
            minutes = (time.monotonic() - start) / 60
            log.info("eval: %d/%d samples, %d resolved, %.1f min", done, total, resolved, minutes)

    return advance


def _crash(sample: int, err: BaseException, wall_s: float) -> SampleResult:
    text = "".join(traceback.format_exception(err)).strip()
    return SampleResult(
        sample=sample, resolved=False, reward=0.0, wall_s=wall_s, end="crash", error=text
    )


def _graded(sample: int, traj: Trajectory, verdict: Verdict, wall_s: float) -> SampleResult:
    b = episode_behaviour(traj)
    error = (
        str(traj.info.get("error", "episode ended with an error")) if traj.end == "error" else None
    )
    return SampleResult(
        sample=sample,
        resolved=verdict.resolved,
        reward=verdict.reward,
        tokens=b.tokens,
        turns=b.turns,
        tool_calls=b.tool_calls,
        tool_errors=b.tool_errors,
        diff_lines=b.diff_lines,
        clarifying=b.clarifying,
        wall_s=wall_s,
        end=traj.end,
        error=error,
        grading=Grading(
            status=verdict.status,
            fail_to_pass=verdict.fail_to_pass,
            pass_to_pass=verdict.pass_to_pass,
            tampered=list(verdict.tampered),
            voided_by=verdict.voided_by,
            log_tail=verdict.log_tail,
        ),
    )


Sample = Callable[[], Awaitable[tuple[Trajectory, Verdict]]]


class Episodes(Protocol):
    """Where a task's samples run: `open(task, prepared)` yields what runs one graded
    sample. In this process (`LocalEpisodes`) or on Ray environment workers
    (`rl/cluster/evaluator.py`); the scoring around them is the same."""

    def open(self, task: Task, prepared: PreparedTask) -> AbstractAsyncContextManager[Sample]: ...


@dataclasses.dataclass
class LocalEpisodes:
    """Each task's root sandbox and snapshot here; each sample in a fork of it."""

    factory: PolicyFactory
    spec: EpisodeSpec

    @contextlib.asynccontextmanager
    async def open(self, task: Task, prepared: PreparedTask) -> AsyncIterator[Sample]:
        async with contextlib.AsyncExitStack() as cleanup:  # release the snapshot, close root
            root = await asyncio.to_thread(self.spec.open_sandbox, prepared)
            cleanup.push_async_callback(asyncio.to_thread, root.close)
            snap = await asyncio.to_thread(root.snapshot)
            cleanup.push_async_callback(asyncio.to_thread, snap.release)

            async def sample() -> tuple[Trajectory, Verdict]:
                sandbox = await asyncio.to_thread(snap.fork)
                try:
                    return await graded_episode(
                        self.factory(task, prepared), sandbox, prepared,
                        tokenizer=self.factory.tokenizer, spec=self.spec,
                    )  # fmt: skip
                finally:
                    await asyncio.to_thread(sandbox.close)

            yield sample


@dataclasses.dataclass
class _Run:
    """What every sample of one evaluation shares."""

    episodes: Episodes
    gate: asyncio.Semaphore
    advance: Advance
    graded: list[tuple[Trajectory, bool]]  # graded trajectory, resolved
    keep: Keep | None = None


async def _sample(run: _Run, task: Task, sample: Sample, i: int) -> SampleResult:
    start = time.perf_counter()
    async with run.gate:
        try:
            traj, verdict = await sample()
        except Exception as err:
            result = _crash(i, err, time.perf_counter() - start)
        else:
            run.graded.append((traj, verdict.resolved))
            result = _graded(i, traj, verdict, time.perf_counter() - start)
            if run.keep is not None:
                await asyncio.to_thread(run.keep, task, i, traj)
    run.advance(result.resolved)
    return result


async def _task(run: _Run, task: Task, samples: int, cache_dir: Path) -> TaskResult:
    """Prepare `task` once and run its samples (forks of one root, where they run)."""

    def result(rows: Sequence[SampleResult]) -> TaskResult:
        return TaskResult(
            instance_id=task.instance_id,
            tier=task.tier,
            group=task.repo,
            source=task.source,
            samples=list(rows),
        )

    start = time.perf_counter()
    async with contextlib.AsyncExitStack() as cleanup:
        try:
            async with run.gate:  # preparing is heavy (unpack, env build): it takes a slot
                prepared = await asyncio.to_thread(prepare, task, cache_dir)
                sample = await cleanup.enter_async_context(run.episodes.open(task, prepared))
        except Exception as err:
            for _ in range(samples):
                run.advance(False)
            return result([_crash(i, err, time.perf_counter() - start) for i in range(samples)])
        rows = await asyncio.gather(*(_sample(run, task, sample, i) for i in range(samples)))
    return result(rows)


async def evaluate(
    tasks: Sequence[Task],
    policy_factory: PolicyFactory,
    spec: EpisodeSpec,
    *,
    settings: EvalConfig,
    cache_dir: str | Path,
    config_pins: ConfigPins,
    seed: int = 0,
    suite: str = "",
    progress: bool = True,
    episodes: Episodes | None = None,
    keep: Keep | None = None,
) -> EvalResult:
    """Run `settings.samples` episodes of every task, at most `settings.concurrency` at once;
    score them. `config_pins` fingerprints the caller's whole config (a pin of the result).
    `episodes` says where they run (default: here, `LocalEpisodes`); `policy_factory` is
    then what they run, its tokenizer and description pinned either way. `keep` gets every
    graded episode (`shadowrl eval --save-dir` writes them for replay)."""
    samples, concurrency = settings.samples, settings.concurrency
    if not tasks or samples < 1 or concurrency < 1:
        raise ValueError("need at least one task, one sample and a concurrency of at least 1")
    start = time.perf_counter()
    with _progress(progress, len(tasks) * samples) as advance:
        where = episodes or LocalEpisodes(policy_factory, spec)
        run = _Run(where, asyncio.Semaphore(concurrency), advance, [], keep)
        results = await asyncio.gather(*(_task(run, t, samples, Path(cache_dir)) for t in tasks))
    trajs, resolved = [t for t, _ in run.graded], [r for _, r in run.graded]
    return EvalResult(
        pins=Pins(
            suite=suite,
            suite_hash=suite_hash(tasks, task_prompt),
            suite_version=version_of(suite),
            harness_version=await asyncio.to_thread(
                harness_version, policy_factory.tokenizer, spec.agent
            ),
            config_digest=config_pins.digest,
            config_sections=config_pins.sections,
            policy=policy_factory.description,
        ),
        samples=samples,
        tasks=list(results),
        overall=score(results, seed=seed, resamples=settings.resamples),
        by_tier=score_by_tier(results, seed=seed, resamples=settings.resamples),
        behaviour=summarize_behaviour(trajs, resolved),
        wall_s=time.perf_counter() - start,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )


class Evaluate(Protocol):
    """Runs one evaluation of the policy it was opened for: `evaluate`'s arguments, less
    the policy and the episode spec, which are bound (`commands/policies.open_evaluator`)."""

    async def __call__(
        self, tasks: Sequence[Task], *, settings: EvalConfig, cache_dir: str,
        config_pins: ConfigPins, seed: int = 0, suite: str = "", progress: bool = True,
    ) -> EvalResult: ...  # fmt: skip
