"""A served session of the trace store as a replay record, and its sandbox rebuilt at a
turn and checked faithful.

The record (what `shadowrl replay` continues or checks, and what branching starts
from): the store keeps, per model turn, a token-exact request row (prompt ids,
generated ids, logprobs, policy versions, sampling; chained by `parent_id`) and, for
agent sessions, a step row (the turn's tool calls and results); the session row keeps
the task, the workspace label and the budgets. `agent_record` turns an agent session
into a `replay.record.Record`: its segments are the chain's tokens
(`store.export.branch_segments`), each step's text is its generated ids decoded, and
its messages are rebuilt the way the loop builds them (reply, results in call order, a
parse error or a nudge). The rebuild is checked: rendering the rebuilt messages must
give every next request's prompt token for token. A session with a follow-up message
or a summary fails that check (the store does not keep those messages): its recorded
tokens can still be teacher-forced, but the loop cannot continue it. Chat and
completions sessions have no loop to continue: `request_segment` gives each request's
generation for the teacher-forced check.

The sandbox:

A branch point is worth training on only if the sandbox the continuations start from
is the one the served agent had there. The store keeps what is needed to check that:
the content hash of the session's starting workspace, and per step the tool calls,
their results and the hash of the workspace after the step (`serve/workspaces.py`,
`ContentHasher`). `rebuild` takes a fresh copy of the session's workspace
(`workspaces.reopen`: a `path@commit` workspace comes back byte for byte; a plain
directory comes back as it is today, so it is faithful only while nobody changed it,
which the starting hash catches), re-runs every recorded call of the steps before the
turn, in order, under the served agent config, and compares, step by step:

- each call's result: same tool, same error flag, and the same output after
  `normalise` (timings and temporary paths differ between two faithful runs);
- the workspace's content hash after the step, to the recorded one.

The first difference makes the point unfaithful (`Unfaithful`, with the step and the
reason); a faithful one comes back as an `EpisodeCheckpoint` (`replay.record`): the
recorded tokens up to the turn, cut from the trace (nothing re-rendered), and a
snapshot of the rebuilt sandbox to fork continuations from. Only the prefix is
rebuilt: the store keeps no follow-up messages, so a session whose messages stop
re-rendering its prompts before the turn (a follow-up, a summary) is unfaithful too.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowrl.agent import (
    EpisodeCheckpoint,
    Renderer,
    ToolContext,
    ToolSet,
    feedback_messages,
    parse_tool_calls,
)
from shadowrl.agent.config import AgentConfig
from shadowrl.replay.record import NOT_RERUN, Record, checkpoint_from
from shadowrl.sandbox import Sandbox, SandboxConfig, create_sandbox
from shadowrl.serve import workspaces
from shadowrl.serve.store.export import branch_segments, branches
from shadowrl.serve.store.queries import RequestView, SessionView
from shadowrl.serve.store.schema import TraceStep
from shadowrl.types import Message, Segment, Step, ToolCall, ToolResult, Trajectory

TEMP_ROOT = re.escape(tempfile.gettempdir().rstrip("/"))
# (pattern, replacement), applied in order; see `normalise`
NORMALISERS = (
    (re.compile(TEMP_ROOT + r"/[^\s'\":,()\[\]]*"), "<tmp>"),
    (re.compile(r"\b\d+m\d+(?:\.\d+)?s\b"), "<t>"),  # `time`: 0m0.004s
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b"), "<t>"),
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<addr>"),
)


def normalise(output: str) -> str:
    """A tool output with what differs between two faithful runs replaced:

    - any path under the temporary directory (`/tmp/...`, up to a space, quote, colon,
      comma or bracket) becomes `<tmp>`: the `local` backend's workspace lives there,
      and so do the files tests and tools make;
    - a duration (`0.003s`, `12 ms`, `1.5 seconds`, `0m0.004s`) becomes `<t>`;
    - a memory address of six or more hex digits (`0x7f3a...` in a repr) becomes `0x<addr>`.

    Nothing else is touched: a different line count, exit code or value is a difference.
    """
    for pattern, replacement in NORMALISERS:
        output = pattern.sub(replacement, output)
    return output


@dataclass(frozen=True)
class Unfaithful:
    """Why a branch point could not be rebuilt as recorded (`step` -1: before any step)."""

    session_id: str
    turn: int
    step: int
    reason: str


@dataclass
class Rebuilt:
    """A faithful branch point: the checkpoint before `turn`, on a rebuilt sandbox.
    `close` releases the snapshot, the sandbox and the workspace copy."""

    session_id: str
    turn: int
    record: AgentRecord
    agent: AgentConfig
    checkpoint: EpisodeCheckpoint
    sandbox: Sandbox
    copy: Path
    workspace_hash: str = ""  # the session's starting workspace's (`copy` has it)
    rest: tuple[TraceStep, ...] = ()  # the recorded steps from `turn` on (`recorded.py`)

    def close(self) -> None:
        self.checkpoint.release()
        self.sandbox.close()
        shutil.rmtree(self.copy.parent, ignore_errors=True)


def _mismatch(calls: list[ToolCall], recorded: list[ToolResult], now: list[ToolResult]) -> str:
    """How the re-run results of one step differ from the recorded ones ('' if they do not)."""
    if len(now) != len(recorded):
        return f"{len(now)} results re-run, {len(recorded)} recorded"
    for call, r, n in zip(calls, recorded, now, strict=True):
        if (n.name, n.is_error) != (r.name, r.is_error):
            return f"{call.name} ({call.id}): error {n.is_error}, recorded {r.is_error}"
        if normalise(n.output) != normalise(r.output):
            return f"{call.name} ({call.id}): output differs from the recorded one"
    return ""


def _rerun_step(ctx: ToolContext, tools: ToolSet, row: TraceStep) -> tuple[str, list[ToolCall]]:
    calls = [ToolCall(c["id"], c["name"], c["arguments"]) for c in row.tool_calls]
    recorded = [ToolResult(**d) for d in row.results]
    if any(c.name in NOT_RERUN for c in calls):
        return f"step calls {sorted({c.name for c in calls} & NOT_RERUN)}: not re-run", calls
    now = [tools.execute(ctx, c) for c in calls]  # in call order, one at a time
    return _mismatch(calls, recorded, now), calls


def check_prefix(
    sandbox: Sandbox, hasher: workspaces.ContentHasher, steps: list[TraceStep], agent: AgentConfig
) -> tuple[int, str] | None:
    """Re-run `steps` on `sandbox` (the session's fresh workspace) and compare each with
    its record; the first (step, reason) that differs, None when all are faithful."""
    tools, ctx = ToolSet.from_names(agent.tools), ToolContext(sandbox, agent)
    for row in steps:
        if row.workspace_hash is None:
            return row.index, "the step was recorded without a workspace hash"
        why, _ = _rerun_step(ctx, tools, row)
        if why:
            return row.index, why
        if hasher.of(sandbox) != row.workspace_hash:
            return row.index, "the workspace after the step differs from the recorded one"
    return None


def rebuild(
    view: SessionView, turn: int, tokenizer: Any, base: AgentConfig, sandbox: SandboxConfig
) -> Rebuilt | Unfaithful:
    """Session `view`'s sandbox right before step `turn`, checked (module docstring)."""
    sid = view.session.id

    def unfaithful(step: int, reason: str) -> Unfaithful:
        return Unfaithful(sid, turn, step, reason)

    agent = served_agent_config(view, base)
    record = agent_record(view, tokenizer, agent)
    if record.exact_prefix <= turn:
        return unfaithful(-1, "its messages do not re-render the recorded prompts up to the turn")
    if view.session.workspace is None or view.session.workspace_hash is None:
        return unfaithful(-1, "the session records no workspace or no starting hash")
    into = Path(tempfile.mkdtemp(prefix=f"branch-{sid}-")) / "workspace"
    try:
        snap = workspaces.reopen(view.session.workspace, into)
        hasher = workspaces.ContentHasher(snap.copy)
    except (workspaces.WorkspaceError, OSError) as e:
        shutil.rmtree(into.parent, ignore_errors=True)
        return unfaithful(-1, f"the workspace cannot be reopened: {e}")
    if hasher.start() != view.session.workspace_hash:
        shutil.rmtree(into.parent, ignore_errors=True)
        return unfaithful(-1, "the workspace differs from the one the session started on")
    box = create_sandbox(snap.copy, sandbox.backend, sandbox.limits)
    try:
        checkpoint = _checkpoint(view, turn, box, hasher, record, agent)
    except BaseException as e:
        box.close()
        shutil.rmtree(into.parent, ignore_errors=True)
        if isinstance(e, _Skip):
            return unfaithful(e.step, e.reason)
        raise
    start, rest = view.session.workspace_hash, sorted(view.steps, key=lambda r: r.index)[turn:]
    return Rebuilt(sid, turn, record, agent, checkpoint, box, snap.copy, start, tuple(rest))


class _Skip(Exception):
    def __init__(self, step: int, reason: str) -> None:
        super().__init__(reason)
        self.step, self.reason = step, reason


def _checkpoint(
    view: SessionView,
    turn: int,
    box: Sandbox,
    hasher: workspaces.ContentHasher,
    record: AgentRecord,
    agent: AgentConfig,
) -> EpisodeCheckpoint:
    """Re-run and check the steps before `turn` on `box`, then freeze it there."""
    steps = sorted(view.steps, key=lambda r: r.index)[:turn]
    if [r.index for r in steps] != list(range(turn)):
        raise _Skip(-1, "the store does not hold every step before the turn")
    if (bad := check_prefix(box, hasher, steps, agent)) is not None:
        raise _Skip(*bad)
    try:
        return checkpoint_from(record.record, turn, box)
    except ValueError as e:  # e.g. the turn is a summary's
        raise _Skip(turn, str(e)) from e


# ------------------------------------------------------------------ a served session as a record


class NotReplayable(ValueError):
    """A session the store cannot give back as tokens (nothing recorded, torn history)."""


@dataclass(frozen=True)
class AgentRecord:
    """An agent session rebuilt: the record, and whether its messages re-render exactly."""

    record: Record
    chain: tuple[RequestView, ...]
    exact: bool  # rendering the rebuilt messages gives every recorded prompt
    exact_prefix: int  # how many leading requests' prompts the rebuilt messages give


def request_chain(view: SessionView) -> list[RequestView]:
    """The session's longest root-to-leaf chain of requests (an agent session has one)."""
    chains = branches(view.requests)
    if not chains:
        raise NotReplayable(
            f"session {view.session.id} holds no recorded tokens (no request was recorded in it; "
            "a private API key's traffic is never recorded)"
        )
    return max(chains, key=len)


def _calls(row: Any) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in row.tool_calls)


def agent_record(view: SessionView, tokenizer: Any, agent: AgentConfig) -> AgentRecord:
    """Session `view` (kind "agent") as a record `replay` can continue (see the docstring)."""
    s, chain = view.session, request_chain(view)
    steps_of = {st.request_id: st for st in view.steps}
    schemas = ToolSet.from_names(agent.tools).schemas()
    renderer = Renderer(tokenizer, schemas)
    messages = [Message("system", agent.system_prompt), Message("user", s.task or "")]
    exact = list(chain[0].prompt_ids) == renderer.prompt_ids(messages)
    exact_prefix = int(exact)
    steps: list[Step] = []
    for k, r in enumerate(chain):
        text = tokenizer.decode(r.generated_ids, skip_special_tokens=True)
        reply = parse_tool_calls(text, schemas, id_prefix=f"call_{k}")
        row = steps_of.get(r.id)
        calls = _calls(row) if row is not None else reply.calls
        results = tuple(ToolResult(**d) for d in row.results) if row is not None else ()
        steps.append(Step(text, calls, results, tuple(reply.errors), len(r.generated_ids)))
        conv = [*messages, Message("assistant", reply.content, calls)]
        feedback = feedback_messages(reply, results, cut_off=r.finish_reason == "length")
        if k + 1 < len(chain) and exact:
            more = renderer.continuation_ids(conv, feedback, r.generated_ids)
            exact = list(chain[k + 1].prompt_ids) == [*r.prompt_ids, *r.generated_ids, *more]
            exact_prefix += exact
        messages = [*conv, *feedback]
    traj = Trajectory(
        task_id=s.task_id or s.id, messages=tuple(messages), steps=tuple(steps),
        segments=tuple(branch_segments(chain)), end=s.info.get("end", "max_turns"),
        tool_errors=sum(len(st.parse_errors) for st in steps),
    )  # fmt: skip
    meta = {
        "source": "trace", "session": s.id, "workspace": s.workspace,
        "model": chain[0].row.model, "checkpoint": chain[0].checkpoint,
        "agent": agent.model_dump(mode="json"),
    }  # fmt: skip
    return AgentRecord(Record(traj, (), meta), tuple(chain), exact, exact_prefix)


def served_agent_config(view: SessionView, base: AgentConfig) -> AgentConfig:
    """The agent config a session was served with: `base`, with the session's budgets
    and its first request's sampling."""
    first = request_chain(view)[0].row
    recorded = {"temperature": first.temperature, "top_p": first.top_p}
    budgets = view.session.info.get("budgets", {})
    return AgentConfig.model_validate({**base.model_dump(), **budgets, **recorded})


def request_segment(r: RequestView) -> Segment:
    """One request as a segment: its prompt (context), then what it generated."""
    n, g = len(r.prompt_ids), len(r.generated_ids)
    return Segment(
        (*r.prompt_ids, *r.generated_ids), (False,) * n + (True,) * g,
        (0.0,) * n + tuple(r.logprobs), (-1,) * n + tuple(r.versions),
    )  # fmt: skip
