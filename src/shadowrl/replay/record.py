"""The record format of a replayable episode, the checkpoint at any of its turns rebuilt
from it, and the writers of records.

A record is one JSON file: the messages, steps and token segments of a trajectory, and
(from `shadowrl run --save` only) after each turn the files the agent had changed so
far (path → text, null when deleted). `checkpoint_at(record, k, sandbox)` rebuilds the
`EpisodeCheckpoint` right before turn k: the token state is cut from the recorded
segments (nothing re-rendered), the workspace is the task's fresh one with turn k-1's
files written in. A record without per-turn files (training rollouts, eval episodes,
served sessions) gets its workspace by re-running the recorded calls that change it
(`rerun_edits`: edits, writes, shell commands) in order. `checkpoint_from` is the token
half alone, for a caller that rebuilt the workspace itself (branching re-runs and checks
every call, `realtime/rebuild.py`).

`RecordedOutputs` answers a continuation's tool calls with the recorded outputs (real
output carries timings, so a re-run tail would drift at the first test run). The
writers: `save` with `changed_files` after each step (`shadowrl run --save`),
`episode_saver` (`eval --save-dir`) and `RolloutRecorder` (every episode of a training
group, `train.save_rollouts`, built by `replay.build_recorder`).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from shadowrl.agent import (
    CUT_OFF,
    NUDGE,
    Chain,
    EpisodeCheckpoint,
    EpisodeState,
    Tokens,
    ToolContext,
    ToolSet,
    parse_tool_calls,
)
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.summary import SUMMARY_REQUEST, degeneracy, touched_files
from shadowrl.episode import EpisodeSpec
from shadowrl.sandbox import Sandbox
from shadowrl.tasks import Task
from shadowrl.types import Message, Segment, Step, ToolCall, ToolResult, Trajectory

FORMAT = 1
ROLLOUTS_DIR = "rollouts"  # a training run's records, under its run_dir


@dataclass(frozen=True)
class Record:
    """A trajectory as saved, plus the workspace after each turn and where it came from."""

    trajectory: Trajectory
    files_after: tuple[dict[str, str | None], ...]  # per step: changed path → text
    meta: dict[str, Any]  # task spec and id, model, config: what replay reopens


def changed_files(sandbox: Sandbox) -> dict[str, str | None]:
    present = set(sandbox.list_files())
    return {
        p: sandbox.read_file(p).decode(errors="replace") if p in present else None
        for p in sandbox.changed_files()
        if not p.endswith(".pyc") and "__pycache__" not in p
    }


def save(
    path: Path, traj: Trajectory, files_after: list[dict[str, str | None]], **meta: Any
) -> None:
    data = {
        "format": FORMAT, "meta": meta, "task_id": traj.task_id, "end": traj.end,
        "reward": traj.reward, "tool_errors": traj.tool_errors, "info": traj.info,
        "messages": [asdict(m) for m in traj.messages],
        "steps": [asdict(s) for s in traj.steps],
        "segments": [asdict(s) for s in traj.segments],
        "files_after": files_after,
    }  # fmt: skip
    path.write_text(json.dumps(data, default=str))


def _call(d: dict[str, Any]) -> ToolCall:
    return ToolCall(d["id"], d["name"], d["arguments"])


def _message(d: dict[str, Any]) -> Message:
    return Message(**{**d, "tool_calls": tuple(_call(c) for c in d["tool_calls"])})


def _step(d: dict[str, Any]) -> Step:
    return Step(
        d["text"], tuple(_call(c) for c in d["tool_calls"]),
        tuple(ToolResult(**r) for r in d["results"]), tuple(d["parse_errors"]), d["num_generated"],
        tuple(d.get("entropies", ())),
    )  # fmt: skip


def load(path: Path) -> Record:
    """Read a saved episode; a file that is not one raises ValueError with the reason."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a saved trajectory ({e})") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a shadowrl trajectory (format {FORMAT})")
    segs = tuple(Segment(**{k: tuple(v) for k, v in s.items()}) for s in data["segments"])
    traj = Trajectory(
        task_id=data["task_id"], messages=tuple(_message(m) for m in data["messages"]),
        steps=tuple(_step(s) for s in data["steps"]), segments=segs, end=data["end"],
        tool_errors=data["tool_errors"], reward=data["reward"], info=data["info"],
    )  # fmt: skip
    return Record(traj, tuple(data["files_after"]), data["meta"])


def generated_runs(segments: tuple[Segment, ...]) -> list[tuple[int, int, int]]:
    """(segment, start, end) of every generation in order: one per step."""
    runs: list[tuple[int, int, int]] = []
    for s, seg in enumerate(segments):
        start = None
        for i, m in enumerate((*seg.loss_mask, False)):
            if m and start is None:
                start = i
            elif not m and start is not None:
                runs, start = [*runs, (s, start, i)], None
    return runs


def _tokens(seg: Segment, end: int) -> Tokens:
    t = Tokens(
        list(seg.token_ids[:end]), list(seg.loss_mask[:end]),
        list(seg.logprobs[:end]), list(seg.versions[:end]),
    )  # fmt: skip
    t.num_generated, t.routes = sum(t.mask), [tuple(r) for r in seg.routes[:end]]
    return t


def _summaries(traj: Trajectory, replies: list[int], turn: int) -> list[dict[str, Any]]:
    """The loop's summary notes before `turn`, recomputed (a summary cut at its token
    budget is not marked over budget: the record does not say why a generation ended)."""
    task, out = traj.messages[1].content, []
    for k in range(turn):
        if traj.messages[replies[k] - 1].content == SUMMARY_REQUEST:
            text = parse_tool_calls(traj.steps[k].text).content
            bad = degeneracy(
                text, prompt=task + "\n" + SUMMARY_REQUEST, over_budget=False,
                files=touched_files(traj.steps[:k]),
            )  # fmt: skip
            out.append({"tokens": traj.steps[k].num_generated, "degenerate": bad, "text": text})
    return out


# calls that end or reshape the episode rather than the workspace: never re-run
NOT_RERUN = frozenset({"submit", "summarize"})


def rerun_edits(
    sandbox: Sandbox, steps: tuple[Step, ...], tools: ToolSet, config: AgentConfig
) -> int:
    """Re-run, in order, every recorded call of `steps` that may change the workspace
    (the tools that are not read-only); returns how many ran. A call that fails now but
    had succeeded (or the reverse) means the workspace differs from the recorded one."""
    ctx, ran = ToolContext(sandbox, config), 0
    for step in steps:
        for call, recorded in zip(step.tool_calls, step.results, strict=False):
            if call.name in NOT_RERUN or tools.is_read_only(call.name):
                continue
            result = tools.execute(ctx, call)
            if result.is_error != recorded.is_error and call.name != "run":
                raise ValueError(
                    f"re-running {call.name} ({call.id}) on the fresh workspace gave "
                    f"{result.output[:120]!r}: the workspace is not the recorded one"
                )
            ran += 1
    return ran


def checkpoint_at(
    record: Record, turn: int, sandbox: Sandbox, config: AgentConfig | None = None
) -> EpisodeCheckpoint:
    """The checkpoint right before step `turn` (0-based; 0 is the first generation).

    `sandbox` is the task's fresh workspace; turn-1's files are written into it (or,
    for a record without them, the calls before `turn` re-run under the agent config
    `config`) and it is snapshotted (the caller closes it).
    """
    traj = record.trajectory
    if not 0 < turn < len(traj.steps):
        raise ValueError(
            f"--from-turn must be in 1..{len(traj.steps) - 1} (the record has {len(traj.steps)} turns)"
        )
    if record.files_after:
        for path, text in record.files_after[turn - 1].items():
            if text is None:
                sandbox.exec(f"rm -f -- {shlex.quote(path)}")
            else:
                sandbox.write_file(path, text)
    else:
        if config is None:
            raise ValueError("a record without per-turn files needs the agent config to re-run")
        rerun_edits(sandbox, traj.steps[:turn], ToolSet.from_names(config.tools), config)
    return checkpoint_from(record, turn, sandbox)


def checkpoint_from(record: Record, turn: int, sandbox: Sandbox) -> EpisodeCheckpoint:
    """The checkpoint right before step `turn` (0-based; 0: before the first generation)
    on `sandbox`, whose workspace the caller has already brought to where step `turn - 1`
    left it; it is snapshotted. Counters and budgets are recounted from the steps before
    `turn`; summary notes are recomputed (`_summaries`)."""
    traj, runs = record.trajectory, generated_runs(record.trajectory.segments)
    if not 0 <= turn < len(traj.steps) or len(runs) != len(traj.steps):
        raise ValueError(f"no checkpoint before turn {turn} of a {len(traj.steps)}-turn record")
    replies = [i for i, m in enumerate(traj.messages) if m.role == "assistant"]
    if traj.messages[replies[turn] - 1].content == SUMMARY_REQUEST:
        # the loop asks for a summary inside a turn: no checkpoint falls between the two
        raise ValueError(f"turn {turn} is a summary: replay from turn {turn - 1} or {turn + 1}")
    seg, start, _ = runs[turn]
    steps = list(traj.steps[:turn])
    firsts = [i for i, m in enumerate(traj.messages) if m.role == "system"]
    before = traj.messages[firsts[seg] : replies[turn]]
    in_segment = [r for r in runs[:turn] if r[0] == seg]
    last = [s.results for s in steps if s.results and s.results[0].name != "summarize"]
    state = EpisodeState(
        task=traj.messages[1].content, messages=list(before),
        history=list(traj.messages[: firsts[seg]]), steps=steps,
        chain=Chain(_tokens(traj.segments[seg], start), list(traj.segments[:seg])),
        counters=(
            sum(len(s.parse_errors) for s in steps),
            sum(r.is_error for s in steps for r in s.results),
            sum(m.role == "user" and m.content in (NUDGE, CUT_OFF) for m in traj.messages[: replies[turn]]),
        ),
        summaries=_summaries(traj, replies, turn),
        last_results=list(last[-1]) if last else [],
        last_generated=tuple(traj.segments[seg].token_ids[in_segment[-1][1] : in_segment[-1][2]]) if in_segment else (),
        generated_end=in_segment[-1][2] if in_segment else 0,
    )  # fmt: skip
    generated = sum(s.num_generated for s in steps)
    return EpisodeCheckpoint(state, sandbox.snapshot(), turn, generated, 0.0)


class RecordedOutputs(ToolSet):
    """`tools`, answering each call with the result `steps` recorded for it.

    Every call still executes (the workspace changes as it did, `submit` still ends the
    episode), but the answer is the output recorded under the same call id and tool
    name; a call the record does not have (the continuation diverged) gets its real one.
    """

    def __init__(self, tools: ToolSet, steps: Sequence[Step]):
        super().__init__(tools.tools.values())
        self.recorded = {r.call_id: r for s in steps for r in s.results}

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        result = super().execute(ctx, call)
        recorded = self.recorded.get(call.id)
        return recorded if recorded is not None and recorded.name == call.name else result


def episode_saver(
    out: Path, policy: str, spec: EpisodeSpec
) -> Callable[[Task, int, Trajectory], None]:
    """`eval --save-dir`'s writer: each graded episode as `<task>-s<sample>.json` (no
    per-turn files: replay re-runs the recorded edits on the task's fresh workspace)."""
    out.mkdir(parents=True, exist_ok=True)
    agent = spec.agent.model_dump(mode="json")

    def keep(task: Task, sample: int, traj: Trajectory) -> None:
        save(
            out / f"{task.instance_id}-s{sample}.json", traj, [],
            task=task.instance_id, id=task.instance_id, task_json=task.model_dump(mode="json"),
            model=policy, agent=agent, source="eval",
        )  # fmt: skip

    return keep


class Scored(Protocol):
    """A scored group as a recorder reads it (`rl.rollout.Group`, which replay sits below)."""

    @property
    def trajectories(self) -> Sequence[Trajectory]: ...


class RolloutRecorder:
    """Writes each group's episodes as `v<version>-<task>-<group>-<leaf>.json` files.

    No per-turn files: replay re-runs the recorded edits on the task's fresh workspace.
    The meta holds the task itself, the agent config the episode ran under, the base
    model and the weight store, so replay can teacher-force the recorded tail through
    the exact policy version each token was sampled from (the store keeps every version
    it published).
    """

    def __init__(self, root: Path, spec: EpisodeSpec, model_path: str, weights_url: str):
        self.root, self.spec = root, spec
        self.model_path, self.weights_url = model_path, weights_url
        root.mkdir(parents=True, exist_ok=True)

    def __call__(self, task: Task, group: Scored, version: int) -> list[Path]:
        tag, out = uuid.uuid4().hex[:8], []
        for i, traj in enumerate(group.trajectories):
            path = self.root / f"v{version:05d}-{task.instance_id}-{tag}-{i}.json"
            save(
                path, traj, [],
                task=task.instance_id, id=task.instance_id, task_json=task.model_dump(mode="json"),
                model=self.model_path, weights=self.weights_url, version=version,
                agent=self.spec.agent.model_dump(mode="json"), source="rollout",
            )  # fmt: skip
            out.append(path)
        return out

    async def keep(self, task: Task, group: Scored, version: int) -> None:
        await asyncio.to_thread(self, task, group, version)  # file writes, off the event loop
