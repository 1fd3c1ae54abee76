"""Demonstrations for the SFT warm start, rendered by the real harness.

Two sources, as in Cursor's pipeline: a scripted expert that knows the gold patch
(read the file, make the gold edits, run the visible tests, submit) and successful
RL/eval rollouts (rejection sampling). Either way the data is a `Trajectory` whose
segments hold exactly the token ids the harness produced, so SFT and RL see the
same prompt, tool schemas and tokenisation. Only verified (resolved) episodes are
kept, and duplicates (same token ids) are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.types import Segment, Trajectory

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from shadowrl.config import Config
    from shadowrl.tasks import PreparedTask, Task


def expert_replies(task: Task, prepared: PreparedTask) -> list[str]:
    """Read every file the gold patch touches, apply it, run the visible tests, submit."""
    from shadowrl.tasks.patch import parse_patch
    from shadowrl.tasks.prepare import visible_test_command
    from shadowrl.tasks.reference import gold_replies

    def call(text: str, name: str, **args: Any) -> str:
        return f"{text}\n<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"

    reads = [
        call(f"Let me read {fp.path}.", "read_file", path=fp.path) for fp in parse_patch(task.patch)
    ]
    edits = gold_replies(task, prepared)[:-1]  # drop its submit
    return [
        *reads,
        *edits,
        call("Let me run the tests.", "run", command=visible_test_command(task)),
        call("Done.", "submit"),
    ]


async def _demo(
    task: Task, prepared: PreparedTask, tokenizer: Any, config: Config
) -> Trajectory | None:
    from shadowrl.agent.policies import ScriptedPolicy
    from shadowrl.episode import graded_episode

    sandbox = await asyncio.to_thread(
        prepared.sandbox, config.sandbox.backend, config.sandbox.limits
    )
    try:
        policy = ScriptedPolicy(tokenizer, expert_replies(task, prepared))
        traj, verdict = await graded_episode(
            policy, sandbox, prepared, tokenizer=tokenizer, agent=config.agent,
            search=config.search,
        )  # fmt: skip
    finally:
        await asyncio.to_thread(sandbox.close)
    return traj if verdict.resolved and traj.end == "submitted" else None


async def expert_demonstrations(
    prepared: Sequence[tuple[Task, PreparedTask]],
    tokenizer: Any,
    config: Config,
    concurrency: int = 4,
) -> list[Trajectory]:
    """Run the expert on each task through the real harness; keep resolved episodes."""
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task, prep: PreparedTask) -> Trajectory | None:
        async with gate:
            return await _demo(task, prep, tokenizer, config)

    results = await asyncio.gather(*(one(t, p) for t, p in prepared))
    return dedupe(r for r in results if r is not None)


def dedupe(trajectories: Iterable[Trajectory]) -> list[Trajectory]:
    """Drop trajectories whose token ids repeat an earlier one's."""
    seen: set[int] = set()
    out = []
    for traj in trajectories:
        key = hash(tuple(s.token_ids for s in traj.segments))
        if key not in seen:
            seen.add(key)
            out.append(traj)
    return out


# -- storage: successful rollouts are appended here and reused as demonstrations ----------


def trajectory_to_json(traj: Trajectory) -> dict[str, Any]:
    """The token-level part of a trajectory (what SFT needs), as plain JSON."""
    return {
        "task_id": traj.task_id,
        "reward": traj.reward,
        "end": traj.end,
        "segments": [dataclasses.asdict(s) for s in traj.segments],
    }


def trajectory_from_json(blob: dict[str, Any]) -> Trajectory:
    segments = tuple(
        Segment(
            tuple(s["token_ids"]), tuple(s["loss_mask"]), tuple(s["logprobs"]), tuple(s["versions"])
        )
        for s in blob["segments"]
    )
    return Trajectory(blob["task_id"], (), (), segments, blob["end"], reward=blob["reward"])


def append_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> int:
    """Append to a JSONL file (one line per trajectory, flushed); returns how many."""
    n = 0
    with Path(path).open("a") as f:
        for traj in trajectories:
            f.write(json.dumps(trajectory_to_json(traj)) + "\n")
            n += 1
    return n


def load_trajectories(path: str | Path) -> list[Trajectory]:
    """Read a JSONL of trajectories, skipping a torn last line."""
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(trajectory_from_json(json.loads(line)))
        except (json.JSONDecodeError, KeyError):
            continue
    return out
