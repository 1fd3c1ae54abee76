"""The agent as a service: HTTP sessions running the one agent loop on the served policy.

A session is what `shadowrl run` does, with a user on the other end: a private copy
of a workspace (`workspaces.py`), a sandbox on it with the run's `EpisodeSpec`
(sandbox backend and limits, agent budgets, tools and prompt: the same config as
training and eval), and `agent.loop.run_episode` against the server's own `Policy`,
so its tokens share the engine's continuous batching and prefix cache with every
chat request. A follow-up message continues the same episode (`EpisodeState`): the
token stream grows, never re-rendered. Cancel stops the loop and frees the sandbox.

Concurrency: at most `max_sessions` sessions run their loop at once; a create or a
message beyond that is refused with 429 (no queue: the client retries). A finished
session keeps its sandbox, for follow-ups and apply, until it is cancelled or the
server stops.

With a trace store, a session is a `kind="agent"` session row; each model turn is a
request row (token-exact, chained by `parent_id`, so `shadowrl traces export` gives
the episode's training segment) and each turn's calls and results a step row, with the
content hash of the workspace after the step (`workspaces.ContentHasher`; the session
row holds the starting copy's). The hash is taken off the event loop, right before the
next turn's generation (no tool runs in between) or when the run ends, so the step row
is written then; a run cancelled or failed in between writes it without a hash. The
row's diff and info are updated when a run ends; feedback works on it as on any
session. `owner` (an API key id) is kept for the auth layer: a key sees its own. A
private key's session has no writer: its turns, steps, follow-ups and end are served
and never recorded, so no export or real-time cycle can ever read them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from shadowrl.agent import EpisodeState, ToolSet, run_episode
from shadowrl.agent.config import AgentConfig
from shadowrl.sandbox import Sandbox, create_sandbox
from shadowrl.serve import workspaces
from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.config import AgentSettings
from shadowrl.serve.errors import APIError
from shadowrl.serve.store import NewSession, RequestRecord, SessionUpdate, StepRecord, TraceWriter
from shadowrl.types import Generation, Policy, SamplingParams, Step

log = logging.getLogger(__name__)

Status = Literal["running", "done", "cancelled", "error"]


class RecordingPolicy:
    """The served policy, each turn recorded as a token-exact request of the session."""

    def __init__(self, session: AgentSession, policy: Callable[[], Policy]) -> None:
        self.session, self.policy = session, policy

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        s = self.session
        await s.flush_step()  # the last step's workspace, before anything else can change it
        gen = await self.policy().generate(prompt_ids, sampling)
        s.generated += len(gen.token_ids)
        s.versions.update(gen.versions)
        s.context = len(prompt_ids) + len(gen.token_ids)
        if s.writer is not None:  # committed before the loop goes on
            rid = f"{s.id}-t{s.recorded}"
            s.recorded += 1
            await s.writer.write(s.request_record(rid, prompt_ids, gen, sampling))
            s.last_request = rid
        return gen


class AgentSession:
    """One session: its snapshot, sandbox, episode state, steps and event log."""

    def __init__(
        self,
        sid: str,
        task: str,
        snapshot: workspaces.Snapshot,
        sandbox: Sandbox,
        config: AgentConfig,
        writer: TraceWriter | None,
        owner: str | None,
        model: str,
        checkpoint: str | None,
        hasher: workspaces.ContentHasher | None = None,
    ) -> None:
        self.id, self.task, self.snapshot, self.sandbox = sid, task, snapshot, sandbox
        self.config, self.writer, self.owner = config, writer, owner
        self.hasher = hasher  # set when recording: each step row gets the workspace's hash
        self.pending: StepRecord | None = None  # a step row waiting for its hash
        self.model, self.checkpoint = model, checkpoint
        self.tools = ToolSet.from_names(config.tools)
        self.schemas = self.tools.schemas()
        self.status: Status = "running"
        self.state = EpisodeState()
        self.changed: dict[str, bytes | None] = {}
        self.diff = ""
        self.error: str | None = None
        self.end: str | None = None  # how the last run ended (an EpisodeEnd, or cancelled)
        self.steps: list[dict[str, Any]] = []  # as the API shows them, live
        self.events: list[dict[str, Any]] = []
        self.wake = asyncio.Event()
        self.run_task: asyncio.Task[None] | None = None
        self.last_request: str | None = None  # the parent of the next turn's request
        self.generated = self.context = self.recorded = 0
        self.versions: set[int] = set()  # policy versions that generated its tokens
        self.created = time.time()
        self.sandbox_closed = False

    # ------------------------------------------------------------- recording

    def request_record(
        self,
        rid: str,
        prompt: Sequence[int],
        gen: Generation,
        sp: SamplingParams,
    ) -> RequestRecord:
        return RequestRecord(
            id=rid, response_id=rid, session_id=self.id, endpoint="chat", model=self.model,
            prompt_ids=prompt, generated_ids=gen.token_ids, logprobs=gen.logprobs,
            versions=gen.versions, finish_reason=gen.finish_reason,
            temperature=sp.temperature, top_p=sp.top_p, seed=sp.seed,
            max_tokens=sp.max_new_tokens, tools=self.schemas, parent_id=self.last_request,
            api_key_id=self.owner, checkpoint=self.checkpoint,
        )  # fmt: skip

    def _record(self, write: Any) -> None:
        if self.writer is not None:  # applied in submission order, after its request
            self.writer.submit(write)

    async def flush_step(self) -> None:
        """Write the pending step row with the hash of the workspace as the step left it."""
        step = self.pending
        if step is None or self.hasher is None:
            return
        digest = await asyncio.to_thread(self.hasher.of, self.sandbox)
        self.pending = None  # cancelled while hashing: `_finish` writes it without a hash
        self._record(dataclasses.replace(step, workspace_hash=digest))

    def _flush_unhashed(self) -> None:
        """A run that stopped mid-way: its last step is recorded without a hash."""
        step, self.pending = self.pending, None
        if step is not None:
            self._record(step)

    # ---------------------------------------------------------------- events

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append({"id": len(self.events), "event": kind, "data": data})
        self.wake.set()  # everything runs on the event loop: no lock needed
        self.wake = asyncio.Event()

    async def follow(self, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """Events with id > `after`, as they come, until the running loop ends."""
        seen = max(after + 1, 0)
        while True:
            if seen < len(self.events):
                seen += 1
                yield self.events[seen - 1]
            elif self.status != "running":
                return
            else:
                await self.wake.wait()

    # ------------------------------------------------------------------- run

    def start(self, message: str, policy: Callable[[], Policy], tokenizer: Any) -> None:
        self.status, self.error, self.end = "running", None, None
        self.run_task = asyncio.create_task(self._run(message, policy, tokenizer))

    async def _run(self, message: str, policy: Callable[[], Policy], tokenizer: Any) -> None:
        def on_step(step: Step) -> None:  # called on the event loop, inside run_episode
            index = len(self.steps)
            self.steps.append({"index": index, **step_json(step)})
            calls, results = step_calls_results(step)
            if self.writer is not None:  # written by `flush_step`, with the workspace hash
                self.pending = StepRecord(self.id, index, calls, results, self.last_request)
            self.publish("step", self.steps[-1])

        self.publish("message", {"role": "user", "content": message})
        try:
            traj = await run_episode(
                RecordingPolicy(self, policy), self.sandbox, message, tokenizer=tokenizer,
                config=self.config, tools=self.tools, task_id=self.id, on_step=on_step,
                state=self.state,
            )  # fmt: skip
            await self.flush_step()
            self.changed = await asyncio.to_thread(workspaces.changes, self.sandbox, self.snapshot)
            self.diff = await asyncio.to_thread(workspaces.diff_of, self.changed, self.snapshot)
            self._finish("done", traj.end)
        except asyncio.CancelledError:
            self._finish("cancelled", "cancelled")
            raise
        except Exception as e:  # a broken sandbox or policy: the session reports it
            log.exception("agent session %s failed", self.id)
            self.error = f"{type(e).__name__}: {e}"
            self._finish("error", "error")

    def _finish(self, status: Status, end: str) -> None:
        self._flush_unhashed()
        self.status, self.end = status, end
        self._record(SessionUpdate(self.id, status=status, diff=self.diff, info=self.info(end)))
        self.publish("end", {"status": status, "end": end})

    def info(self, end: str) -> dict[str, Any]:
        return {
            "end": end,
            "turns": len(self.steps),
            "tokens": self.token_counts(),
            "budgets": self.config.model_dump(include=set(BUDGETS)),
            "error": self.error,
        }

    def token_counts(self) -> dict[str, int]:
        """Tokens of the whole conversation: in context, generated by the model, the rest."""
        if self.status == "running" or not self.state.tokens.ids:  # live, from the policy
            context, generated = self.context, self.generated
        else:
            context, generated = len(self.state.tokens.ids), self.state.tokens.num_generated
        return {"context": context, "generated": generated, "prompt": context - generated}

    async def close(self) -> None:
        self.sandbox_closed = True
        if self.run_task is not None and not self.run_task.done():
            self.run_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.run_task
        await asyncio.to_thread(self.sandbox.close)
        await asyncio.to_thread(shutil.rmtree, self.snapshot.copy.parent, True)  # our mkdtemp


BUDGETS = ("max_turns", "max_new_tokens", "max_episode_tokens", "episode_timeout_s")


def step_calls_results(step: Step) -> tuple[list[Any], list[Any]]:
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    return calls, [dataclasses.asdict(r) for r in step.results]


def step_json(step: Step) -> dict[str, Any]:
    calls, results = step_calls_results(step)
    return {
        "text": step.text,
        "tool_calls": calls,
        "results": results,
        "parse_errors": list(step.parse_errors),
        "num_generated": step.num_generated,
    }


class AgentSessions:
    """Every live session of one server, and the `max_sessions` bound on running ones."""

    def __init__(
        self,
        settings: AgentSettings,
        policy: Callable[[], Policy],
        tokenizer: Any,
        model: str,
        writer: TraceWriter | None = None,
        checkpoint: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.settings, self.policy, self.tokenizer = settings, policy, tokenizer
        self.model, self.writer, self.checkpoint = model, writer, checkpoint
        self.sessions: dict[str, AgentSession] = {}

    def running(self) -> int:
        return sum(s.status == "running" for s in self.sessions.values())

    def _room(self) -> None:
        if self.running() >= self.settings.max_sessions:
            msg = f"{self.settings.max_sessions} agent sessions are running (serve.max_sessions)"
            raise APIError(429, msg + "; retry when one ends", None, "too_many_sessions")

    def get(self, sid: str, caller: Caller = ANONYMOUS) -> AgentSession:
        s = self.sessions.get(sid)
        if s is None or s.owner != caller.key_id:  # another key's session does not exist for it
            raise APIError(404, f"no agent session {sid!r}", "session_id", "not_found")
        return s

    async def create(
        self,
        workspace: str,
        task: str,
        commit: str | None = None,
        budgets: dict[str, Any] | None = None,
        caller: Caller = ANONYMOUS,
        task_id: str | None = None,
    ) -> AgentSession:
        self._room()
        owner = caller.key_id
        writer = None if caller.private else self.writer  # private: served, never recorded
        config = self.settings.spec.agent.model_copy(update=budgets or {})
        sid = f"agent-{uuid.uuid4().hex}"
        base = self.settings.snapshots_dir
        into = Path(tempfile.mkdtemp(prefix=f"{sid}-", dir=base)) / "workspace"
        try:
            snap = await asyncio.to_thread(
                workspaces.take_snapshot, self.settings.workspaces_root, workspace, commit, into
            )
        except workspaces.WorkspaceError as e:
            shutil.rmtree(into.parent, ignore_errors=True)
            raise APIError(400, str(e), "workspace", "invalid_workspace") from e
        sb = self.settings.spec.sandbox
        sandbox = await asyncio.to_thread(create_sandbox, snap.copy, sb.backend, sb.limits)
        hasher = None  # private: nothing recorded, nothing hashed
        if writer is not None:
            hasher = await asyncio.to_thread(workspaces.ContentHasher, snap.copy)
        session = AgentSession(
            sid, task, snap, sandbox, config, writer, owner, self.model, self.checkpoint(),
            hasher,
        )  # fmt: skip
        self._room()  # the snapshot took a while: check again, nothing awaited after this
        self.sessions[sid] = session
        info = {"budgets": config.model_dump(include=set(BUDGETS))}
        start = hasher.start() if hasher is not None else None
        row = NewSession(
            sid, "agent", owner, "running", task, task_id, snap.label, session.checkpoint, info,
            start,
        )  # fmt: skip
        if writer is not None:  # committed first: feedback may name it at once
            await writer.write(row)
        session.start(task, self.policy, self.tokenizer)
        return session

    async def message(self, session: AgentSession, content: str) -> None:
        if session.status != "done":
            raise APIError(409, f"session is {session.status}: a message needs a finished turn")
        self._room()
        session.start(content, self.policy, self.tokenizer)

    async def cancel(self, session: AgentSession) -> None:
        """Stop the loop if it runs and free the sandbox; a closed session stays closed."""
        if session.status in ("cancelled", "error") and session.sandbox_closed:
            return
        idle = session.status != "running"
        await session.close()
        if idle and session.status == "done":
            session._finish("cancelled", "cancelled")

    async def apply(self, session: AgentSession) -> list[str]:
        if session.status != "done":
            raise APIError(409, f"session is {session.status}: apply needs a finished turn")
        try:
            return await asyncio.to_thread(
                workspaces.apply_changes, session.snapshot, session.changed
            )
        except workspaces.WorkspaceChanged as e:
            raise APIError(409, str(e), "workspace", "workspace_changed") from e

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sessions.values()), return_exceptions=True)
