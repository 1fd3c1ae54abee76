"""Demonstrations for the SFT warm start, rendered by the real harness.

Two sources, as in Cursor's pipeline: scripted experts that know the gold patch
(read the file, make the gold edits, check them, submit; `tasks/reference.py`) and successful
RL/eval rollouts (rejection sampling). Either way the data is a `Trajectory` whose
segments hold exactly the token ids the harness produced, so SFT and RL see the
same prompt, tool schemas and tokenisation. Only verified (resolved) episodes are
kept, and duplicates (same token ids) are dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from shadowrl.episode import EpisodeSpec, episode_in_new_sandbox
from shadowrl.tasks import PreparedTask
from shadowrl.tasks.reference import mistaken_steps, reference_policy
from shadowrl.types import Segment, Trajectory

log = logging.getLogger(__name__)


def expert_for(task_id: str, experts: Mapping[str, float]) -> str:
    """The expert of `experts` (name -> weight) that demonstrates `task_id`: a hash of the
    id picks it, so the choice is the same in every run and for every resume."""
    digest = hashlib.sha256(task_id.encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64 * sum(experts.values())
    for name, weight in sorted(experts.items()):
        point -= weight
        if point < 0:
            return name
    return max(experts)


async def expert_demonstrations(
    prepared: Sequence[PreparedTask],
    tokenizer: Any,
    spec: EpisodeSpec,
    concurrency: int = 4,
    experts: Mapping[str, float] = MappingProxyType({"scripted": 1.0}),
) -> list[Trajectory]:
    """Run an expert (`expert_for`) on each task through the real harness; keep resolved,
    submitted episodes (graded with the run's own spec, reward shaping included)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(prep: PreparedTask) -> Trajectory | None:
        name = expert_for(prep.task.instance_id, experts)
        policy = await asyncio.to_thread(reference_policy, name, prep.task, prep, tokenizer)
        async with gate:
            traj, verdict = await episode_in_new_sandbox(
                policy, prep, tokenizer=tokenizer, spec=spec
            )
        kept = verdict.resolved and traj.end == "submitted"
        return without_loss_on(traj, mistaken_steps(traj.steps)) if kept else None

    results = await asyncio.gather(*(one(p) for p in prepared))
    return dedupe(r for r in results if r is not None)


def without_loss_on(traj: Trajectory, turns: set[int]) -> Trajectory:
    """`traj` with no loss on the generated tokens of assistant turns `turns`: a recovering
    expert's mistake is context for its recovery, never a target. Turn k is the k-th run of
    generated tokens across the segments."""
    if not turns:
        return traj
    segments, run = [], -1
    for seg in traj.segments:
        mask = list(seg.loss_mask)
        for i, on in enumerate(seg.loss_mask):
            if on and (i == 0 or not seg.loss_mask[i - 1]):
                run += 1
            mask[i] = on and run not in turns
        segments.append(dataclasses.replace(seg, loss_mask=tuple(mask)))
    return dataclasses.replace(traj, segments=tuple(segments))


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
