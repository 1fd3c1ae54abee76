"""Simulated users: they bring real tasks to the agent service and react like users.

Each user is an id (`c001-u003`) that seeds every draw it makes. It picks a task from
its suite, checks the task's buggy workspace out into `<workspaces_root>/<user id>`
(the server's `serve.workspaces_root`: user and server share the machine, as an IDE
and a local agent do), and opens an agent session on it through
`POST /v1/agent/sessions` with the task's prompt as its request. It follows the
session's event stream until the run ends, reads the diff, and judges it as a careful
user would: the task's hidden tests are run on a fresh copy of the workspace with the
diff applied (`grade_diff`, the grader of training and eval). Then it reacts
(`reaction.react`, a pure function): accept → `…/apply` writes the changes into its
workspace and it sends accept and the kept-lines fraction to `/v1/feedback`; reject
→ a reject, and sometimes a dissatisfied follow-up message through `…/messages`
(the agent works on, in the same token stream) with its feedback signal; silence →
nothing. It cancels the session at the end, freeing the server's sandbox.

The server records the session as `kind="agent"` with every turn token-exact, which
is what the real-time cycle trains on. Same seed, same tasks and same reactions to
the same outcomes; what the model samples is the server's business.
"""

from __future__ import annotations

import asyncio
import logging
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from shadowrl.episode import EpisodeSpec
from shadowrl.experiments.config import UsersConfig
from shadowrl.experiments.reaction import (
    Judge,
    Outcome,
    Reaction,
    followup_message,
    react,
    tests_judge,
)
from shadowrl.tasks import Task, apply_patch, touched_paths
from shadowrl.tasks.prepare import PreparedTask, prepare, task_prompt
from shadowrl.tasks.verify import Verdict, verify

log = logging.getLogger(__name__)

SESSIONS = "/v1/agent/sessions"


def cycle_of(user: str) -> int:
    """The cycle a user id like `c001-u003` (`realtime.context.user_id`) was drawn for."""
    if not (user.startswith("c") and user[4:6] == "-u" and user[1:4].isdigit()):
        raise ValueError(f"{user!r} is not a user id like c001-u003")
    return int(user[1:4])


@dataclass(frozen=True)
class UserOutcome:
    """What one user saw and said."""

    user: str  # the user's id: its seed and its workspace's name
    session_id: str  # the agent session the server opened
    task_id: str
    resolved: bool
    version: int
    signals: tuple[str, ...]  # the feedback sent, in order (none: silent)
    diff_lines: int  # lines the agent's diff changed
    reaction: Reaction
    turns: int = 0  # assistant turns the agent took before the user judged
    tokens: int = 0  # tokens the agent generated before the user judged


def grade_diff(prepared: PreparedTask, diff: str, spec: EpisodeSpec) -> Verdict:
    """The task's hidden tests on its pristine workspace with `diff` applied."""
    sandbox = spec.open_sandbox(prepared)
    try:
        if diff.strip():
            files = {p: t for p in touched_paths(diff) if (t := prepared.read(p)) is not None}
            for path, text in apply_patch(files, diff).items():
                if text is None:
                    sandbox.exec(f"rm -f -- '{path}'")
                else:
                    sandbox.write_file(path, text)
        return verify(prepared.task, prepared, sandbox, shaping=spec.shaping)
    finally:
        sandbox.close()


def checkout(prepared: PreparedTask, into: Path) -> None:
    """A fresh copy of the task's buggy workspace at `into` (the user's own checkout)."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(prepared.workspace, into, symlinks=True)


async def post(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], key: str | None = None
) -> dict[str, Any]:
    """POST, waiting out the server's 429 (all its agent slots busy) with backoff."""
    delay, headers = 0.2, {"Idempotency-Key": key} if key else None
    while True:
        resp = await client.post(path, json=body, headers=headers)
        if resp.status_code != 429:
            resp.raise_for_status()
            out: dict[str, Any] = resp.json()
            return out
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)


async def finished(client: httpx.AsyncClient, sid: str, after: int) -> tuple[dict[str, Any], int]:
    """Follow the session's events past id `after` until its run ends; the session then,
    and the last event id seen."""
    async with client.stream("GET", f"{SESSIONS}/{sid}/events", params={"after": after}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("id: "):
                after = int(line[4:])
    resp = await client.get(f"{SESSIONS}/{sid}")
    resp.raise_for_status()
    return resp.json(), after


@dataclass(frozen=True)
class Users:
    """Everything the users of one run share."""

    url: str
    tasks: Sequence[Task]
    workspaces: Path  # the server's serve.workspaces_root
    spec: EpisodeSpec  # the sandbox and shaping the user's grader runs with
    cfg: UsersConfig
    cache_dir: Path
    judge: Judge = tests_judge
    headers: dict[str, str] | None = None  # e.g. an API key's Authorization

    async def session(self, user: str, client: httpx.AsyncClient) -> UserOutcome:
        """One user's whole session: pick a task, let the agent work, judge, react."""
        rng = random.Random(f"{self.cfg.population}:{user}")
        task = self.tasks[rng.randrange(len(self.tasks))]
        prepared = await asyncio.to_thread(prepare, task, self.cache_dir)
        await asyncio.to_thread(checkout, prepared, self.workspaces / user)
        body = {"workspace": user, "task": task_prompt(task), "task_id": task.instance_id}
        sid = str((await post(client, SESSIONS, body))["id"])
        try:
            view, seen = await finished(client, sid, -1)
            verdict = await asyncio.to_thread(grade_diff, prepared, view["diff"], self.spec)
            version = max(view["versions"], default=-1)
            outcome = Outcome(
                verdict.resolved, view["diff"], version, len(view["steps"]),
                view["usage"]["generated"],
            )  # fmt: skip
            said = react(outcome, rng, self.cfg, self.judge)
            await self.respond(client, sid, said, seen, view["status"] == "done", outcome)
        finally:
            await client.post(f"{SESSIONS}/{sid}/cancel")  # frees the server's sandbox
        signals = tuple(b["signal"] for b in said.feedback())
        return UserOutcome(
            user,
            sid,
            task.instance_id,
            verdict.resolved,
            version,
            signals,
            outcome.diff_lines,
            said,
            outcome.turns,
            outcome.tokens,
        )

    async def respond(
        self, client: httpx.AsyncClient, sid: str, said: Reaction, seen: int, done: bool,
        outcome: Outcome,
    ) -> None:  # fmt: skip
        """Act on the reaction through the agent routes and `/v1/feedback` (a run that
        ended in an error has nothing to apply and takes no message: feedback only)."""
        if said.decision == "accept" and done:
            await post(client, f"{SESSIONS}/{sid}/apply", {})
        bodies = said.feedback()
        if said.followup and done:  # the message first: the agent works on, then the signal
            await post(client, f"{SESSIONS}/{sid}/messages", {"content": followup_message(outcome)})
            await finished(client, sid, seen)
        for k, body in enumerate(bodies):  # keyed: a retried request is not counted twice
            await post(client, "/v1/feedback", {"session_id": sid, **body}, key=f"{sid}:{k}")

    async def run(
        self, users: Sequence[str], on_done: Callable[[UserOutcome], None] | None = None
    ) -> list[UserOutcome]:
        """Run these users, at most `cfg.concurrency` at once, results in input order."""
        gate = asyncio.Semaphore(self.cfg.concurrency)
        self.workspaces.mkdir(parents=True, exist_ok=True)
        timeout = httpx.Timeout(30.0, read=None)  # an event stream is quiet while a turn runs
        async with httpx.AsyncClient(
            base_url=self.url.rstrip("/"), timeout=timeout, headers=self.headers
        ) as client:

            async def one(user: str) -> UserOutcome:
                async with gate:
                    out = await self.session(user, client)
                if on_done is not None:
                    on_done(out)
                return out

            return list(await asyncio.gather(*(one(u) for u in users)))
