"""Served requests into the trace store, token-exact, and token-in/token-out continuations.

Every choice of every `/v1/chat/completions` and `/v1/completions` call becomes one
`RequestRecord`: the prompt ids the policy ran on, the generated ids untrimmed (a
reply cut at a stop string keeps, in the store, what the model produced), logprobs,
policy versions, sampling, forced ids, tools, parsed calls and timings. The handler
awaits the write (group commit, `store/writer.py`) before the response's last byte,
so a response the client got is a response the store holds.

Sessions: an `X-Session-Id` header names one; otherwise a chat request whose messages
extend a recorded reply's conversation joins that reply's session, with the reply's
request as `parent_id` (each of n choices is its own branch). Such a continuation is
served token-in/token-out: the prompt is the earlier prompt + the ids the model
generated + the template's rendering of the new messages (`Renderer.continuation_ids`,
what `agent/loop.py` appends), never a re-render of the history, which differs token
for token whenever the client echoes a turn in other words (compact JSON, say). A
request whose history holds an assistant turn the server did not generate (edited or
made up) is rendered from its messages and recorded with `token_exact=False`.
A completions call joins a session only by the header; otherwise it is its own.
With API keys (`auth.py`) everything is per key: a session is recorded under the key
that opened it, a conversation extends only that key's replies, an `X-Session-Id` of
another key's session is a 404 (before anything is generated), and a private key's
requests are not recorded at all (`Recorder.trace` gives None).
If a write fails the request fails with it (a 500, or a stream that ends without
`[DONE]`): nothing is delivered that the store does not hold.

Matching is by content: role, stripped text, tool calls as (name, parsed arguments),
`tool_call_id` and `name`; tool call ids of assistant turns are not compared (the
Hermes rendering does not show them). The index of recent conversations lives in
memory (`index_size` entries, least recently used dropped): after a restart, a
continuation of an older conversation is re-rendered (token_exact=False) and starts
a new session unless the client sends `X-Session-Id`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shadowrl.agent import Renderer
from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.errors import APIError
from shadowrl.serve.openai_api import Job, Served, tool_call_json
from shadowrl.serve.store import NewSession, RequestRecord, TraceWriter
from shadowrl.serve.store.queries import session_owner
from shadowrl.serve.store.schema import Endpoint, utcnow
from shadowrl.types import Message

SESSION_ID_MAX = 64  # sessions.id is a String(64)


@dataclass(frozen=True)
class Turn:
    """One recorded chat choice, as a continuation reuses it."""

    request_id: str
    session_id: str
    messages: tuple[Message, ...]  # the conversation, ending with the reply as served
    ids: tuple[int, ...]  # prompt + generated (untrimmed): the token stream so far
    generated: tuple[int, ...]


def message_key(m: Message) -> str:
    calls = [[c.name, c.arguments] for c in m.tool_calls]
    return json.dumps(
        [m.role, m.content.strip(), calls, m.tool_call_id, m.name], sort_keys=True, default=str
    )


def prefix_keys(
    tools: Sequence[dict[str, Any]], messages: Sequence[Message], scope: str | None = None
) -> list[str]:
    """A hash for each prefix of `messages` (entry k: the first k+1), chained from the tools
    and the API key id (`scope`), so one key's conversations never match another's."""
    h = hashlib.sha256(json.dumps([scope, list(tools)], sort_keys=True).encode()).hexdigest()
    out = []
    for m in messages:
        h = hashlib.sha256(f"{h}\0{message_key(m)}".encode()).hexdigest()
        out.append(h)
    return out


class ConversationIndex:
    """Recent recorded conversations by the hash of their messages (bounded LRU)."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.turns: OrderedDict[str, Turn] = OrderedDict()

    def add(self, tools: Sequence[dict[str, Any]], turn: Turn, scope: str | None = None) -> None:
        key = prefix_keys(tools, turn.messages, scope)[-1]
        self.turns[key] = turn
        self.turns.move_to_end(key)
        while len(self.turns) > self.size:
            self.turns.popitem(last=False)

    def longest(
        self, tools: Sequence[dict[str, Any]], messages: Sequence[Message], scope: str | None = None
    ) -> tuple[int, Turn] | None:
        """The longest prefix of `messages` ending in a recorded reply: (its length, turn)."""
        keys = prefix_keys(tools, messages, scope)
        for k in range(len(messages), 0, -1):
            turn = self.turns.get(keys[k - 1]) if messages[k - 1].role == "assistant" else None
            if turn is not None:
                self.turns.move_to_end(keys[k - 1])
                return k, turn
        return None


class Recorder:
    """The server's side of the store: sessions, the conversation index, the writes."""

    def __init__(
        self,
        writer: TraceWriter,
        model: str,
        checkpoint: str | None = None,
        index_size: int = 4096,
    ) -> None:
        self.writer, self.model, self.checkpoint = writer, model, checkpoint
        self.index = ConversationIndex(index_size)
        # session id -> (a future of) the key id it belongs to, once it is known to exist
        self.sessions: OrderedDict[str, asyncio.Future[str | None]] = OrderedDict()
        self.index_size = index_size

    async def trace(self, session_header: str | None, caller: Caller = ANONYMOUS) -> Trace | None:
        """A request's record in the making (None: a private key's, never recorded); a named
        session is opened, or checked to be the caller's (404 otherwise), before any work."""
        if caller.private:
            return None
        if session_header is not None and not 0 < len(session_header) <= SESSION_ID_MAX:
            msg = f"X-Session-Id must be 1 to {SESSION_ID_MAX} characters"
            raise APIError(400, msg, "X-Session-Id")
        if session_header is not None:
            await self.check_owner(session_header, caller)
        return Trace(self, session_header, caller)

    async def check_owner(self, sid: str, caller: Caller) -> None:
        """404 unless session `sid` is new or the caller's (it is created at the first write,
        so a request refused as invalid leaves no empty session behind)."""
        task = self.sessions.get(sid)
        if task is not None and task.done() and not task.cancelled() and not task.exception():
            found, owner = True, task.result()
        else:
            found, owner = await asyncio.to_thread(session_owner, self.writer.engine, sid)
        if found and not caller.may_see(owner):
            raise APIError(404, f"no session {sid!r}", "X-Session-Id", "not_found")

    async def open_session(self, sid: str, fresh: bool, caller: Caller) -> None:
        """Make sure session `sid` exists before its requests land (once per id), and that
        the caller may add to it."""
        task = self.sessions.get(sid)
        if task is None:
            task = self.sessions[sid] = asyncio.ensure_future(self._open(sid, fresh, caller))
            while len(self.sessions) > self.index_size:
                self.sessions.popitem(last=False)
        try:
            owner = await task
        except Exception:
            self.sessions.pop(sid, None)  # the next request tries again
            raise
        if not caller.may_see(owner):  # another key named it first
            raise APIError(404, f"no session {sid!r}", "X-Session-Id", "not_found")

    async def _open(self, sid: str, fresh: bool, caller: Caller) -> str | None:
        if not fresh:
            found, owner = await asyncio.to_thread(session_owner, self.writer.engine, sid)
            if found:
                return owner
        # not awaited: the writer applies in submission order, so it precedes its requests
        new = NewSession(sid, "chat", api_key_id=caller.key_id, checkpoint=self.checkpoint)
        self.writer.submit(new)
        return caller.key_id


class Trace:
    """The record of one request in the making: its session, parent and timings."""

    def __init__(
        self, recorder: Recorder, session_header: str | None, caller: Caller = ANONYMOUS
    ) -> None:
        self.rec, self.named, self.caller = recorder, session_header, caller
        self.new_id = f"sess-{uuid.uuid4().hex}"  # if it neither names nor extends one
        self.t0, self.created = time.perf_counter(), utcnow()
        self.first: dict[int, float] = {}
        self.parent: Turn | None = None
        self.token_exact = True
        self.messages: tuple[Message, ...] = ()  # the history as recorded (chat)

    def render(self, renderer: Renderer, messages: Sequence[Message]) -> list[int]:
        """Prompt ids for a chat request: reused ids where it extends a recorded reply."""
        self.messages = tuple(messages)
        found = self.rec.index.longest(renderer.tools, messages, self.caller.key_id)
        k, self.parent = found if found is not None else (0, None)
        later = list(messages[k:])
        if any(m.role == "assistant" for m in later):  # history the server did not generate
            self.token_exact = False
        elif self.parent is not None:
            turn = self.parent
            try:
                more = renderer.continuation_ids(turn.messages, later, turn.generated)
            except ValueError:  # a template that is not prefix-stable
                self.token_exact = False
            else:
                self.messages = (*turn.messages, *later)
                return [*turn.ids, *more]
        return renderer.prompt_ids(messages)

    def first_token(self, choice: int) -> None:
        self.first.setdefault(choice, time.perf_counter() - self.t0)

    async def record_chat(self, job: Job, served: Sequence[Served], response_id: str) -> None:
        """Write every choice; return once committed, then index them for continuations."""
        records = [self._record("chat", response_id, i, job, s) for i, s in enumerate(served)]
        await self._write(records)
        for r, s in zip(records, served, strict=True):
            reply = Message("assistant", s.text, s.calls)
            ids = (*r.prompt_ids, *r.generated_ids)
            turn = Turn(r.id, r.session_id, (*self.messages, reply), ids, tuple(r.generated_ids))
            self.rec.index.add(job.tools or [], turn, self.caller.key_id)

    async def record_completions(
        self, jobs: Sequence[Job], served: Sequence[Served], response_id: str
    ) -> None:
        pairs = [(j, sp) for j in jobs for sp in j.samplings]
        await self._write(
            [
                self._record("completions", response_id, k, j, s)
                for k, ((j, _), s) in enumerate(zip(pairs, served, strict=True))
            ]
        )

    @property
    def session_id(self) -> str:
        if self.named is not None:
            return self.named
        return self.new_id if self.parent is None else self.parent.session_id

    async def _write(self, records: list[RequestRecord]) -> None:
        fresh = self.named is None and self.parent is None
        await self.rec.open_session(self.session_id, fresh, self.caller)
        futures = [self.rec.writer.submit(r) for r in records]
        await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))

    def _record(
        self, endpoint: Endpoint, response_id: str, i: int, job: Job, s: Served
    ) -> RequestRecord:
        sp, gen = job.samplings[i % len(job.samplings)], s.gen
        return RequestRecord(
            id=f"{response_id}-{i}",
            response_id=response_id,
            session_id=self.session_id,
            endpoint=endpoint,
            model=self.rec.model,
            prompt_ids=job.prompt,
            generated_ids=gen.token_ids,
            logprobs=gen.logprobs,
            versions=gen.versions,
            finish_reason=s.finish,
            temperature=sp.temperature,
            top_p=sp.top_p,
            choice_index=i,
            seed=sp.seed,
            max_tokens=sp.max_new_tokens,
            forced_ids=job.forced,
            tools=job.tools,
            tool_calls=[tool_call_json(c) for c in s.calls] if job.tools is not None else None,
            token_exact=self.token_exact,
            parent_id=None if self.parent is None else self.parent.request_id,
            api_key_id=self.caller.key_id,
            checkpoint=self.rec.checkpoint,
            first_token_s=self.first.get(i),
            total_s=time.perf_counter() - self.t0,
            created_at=self.created,
        )
