"""Simulated users: they work with the served agent on real tasks and react like users.

Each user opens one session on a task drawn from a suite, lets the agent work (the one
harness, `episode.graded_episode`, driven through the server so every request is
recorded under the session's `X-Session-Id`), looks at the result and gives feedback
through `/v1/feedback` as a person would:

* accept when the task's hidden tests pass on the agent's work, reject otherwise
  (`judge`, replaceable), and reject a diff larger than `max_diff_lines` even when it
  passes (a planted preference the tests do not encode: `realtime/preference.py`);
* flip that decision with probability `flip` (people misjudge);
* stay silent with probability `silent` (no feedback at all);
* after an accept, keep a fraction of the changed lines, uniform in [`keep_low`, 1];
* after a reject, send a dissatisfied follow-up with probability `followup`.

Every draw comes from a generator seeded by (`seed`, session id), so the same seed
gives the same tasks and the same reactions to the same outcomes; what the model
samples is the server's business. The agent runs client-side here: this is how an
IDE drives a model endpoint, and it keeps the users independent of the agent-session
API (issue 19 §1), which a later change can switch them to.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from shadowrl.episode import EpisodeSpec, episode_in_new_sandbox
from shadowrl.eval.behaviour import episode_behaviour
from shadowrl.realtime.config import UsersConfig
from shadowrl.realtime.preference import within_preference
from shadowrl.serve.remote import RemotePolicy
from shadowrl.tasks.prepare import prepare
from shadowrl.tasks.task import Task

log = logging.getLogger(__name__)

# (hidden tests passed, policy version that served the session) -> accept?
Judge = Callable[[bool, int], bool]


def tests_judge(resolved: bool, _version: int) -> bool:
    """The default user: accepts exactly when the hidden tests pass."""
    return resolved


@dataclass(frozen=True)
class UserOutcome:
    """What one user saw and said."""

    session_id: str
    task_id: str
    resolved: bool
    version: int
    signals: tuple[str, ...]
    diff_lines: int = 0  # lines the agent's edits changed (what the planted preference reads)


def reactions(rng: random.Random, accept: bool, cfg: UsersConfig) -> list[dict[str, Any]]:
    """The feedback bodies (without session id) one user sends for one decision."""
    if rng.random() < cfg.flip:
        accept = not accept
    if rng.random() < cfg.silent:
        return []
    if accept:
        kept = rng.uniform(cfg.keep_low, 1.0)
        return [{"signal": "accept"}, {"signal": "keep", "value": round(kept, 4)}]
    out: list[dict[str, Any]] = [{"signal": "reject"}]
    if rng.random() < cfg.followup:
        out.append({"signal": "followup_dissatisfied"})
    return out


async def served_model(url: str) -> str:
    """The `model` id the server answers to."""
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.get(f"{url.rstrip('/')}/v1/models")
        resp.raise_for_status()
        return str(resp.json()["data"][0]["id"])


@dataclass(frozen=True)
class Users:
    """Everything the users of one run share."""

    url: str
    tasks: Sequence[Task]
    spec: EpisodeSpec
    tokenizer: Any
    cfg: UsersConfig
    cache_dir: Path
    judge: Judge = tests_judge

    async def session(self, sid: str, model: str) -> UserOutcome:
        """One user's whole session: pick a task, let the agent work, react."""
        rng = random.Random(f"{self.cfg.seed}:{sid}")
        task = self.tasks[rng.randrange(len(self.tasks))]
        prepared = await asyncio.to_thread(prepare, task, self.cache_dir)
        policy = RemotePolicy(self.url, model, tokenizer=self.tokenizer)
        policy.headers["X-Session-Id"] = sid  # the server records every turn under it
        try:
            traj, verdict = await episode_in_new_sandbox(
                policy, prepared, tokenizer=self.tokenizer, spec=self.spec
            )
        finally:
            await policy.aclose()
        versions = [
            v for s in traj.segments for v, m in zip(s.versions, s.loss_mask, strict=True) if m
        ]
        version = max(versions, default=-1)
        lines = episode_behaviour(traj).diff_lines
        judged = self.judge(verdict.resolved, version)
        said = reactions(
            rng, judged and within_preference(lines, self.cfg.max_diff_lines), self.cfg
        )
        async with httpx.AsyncClient(timeout=30) as client:
            for k, body in enumerate(said):
                resp = await client.post(
                    f"{self.url.rstrip('/')}/v1/feedback",
                    json={"session_id": sid, **body},
                    headers={"Idempotency-Key": f"{sid}:{k}"},  # a rerun sends nothing twice
                )
                resp.raise_for_status()
        signals = tuple(b["signal"] for b in said)
        return UserOutcome(sid, task.instance_id, verdict.resolved, version, signals, lines)

    async def run(
        self, session_ids: Sequence[str], on_done: Callable[[UserOutcome], None] | None = None
    ) -> list[UserOutcome]:
        """Run these sessions, at most `cfg.concurrency` at once, in id order of results."""
        model = await served_model(self.url)
        gate = asyncio.Semaphore(self.cfg.concurrency)

        async def one(sid: str) -> UserOutcome:
            async with gate:
                out = await self.session(sid, model)
            if on_done is not None:
                on_done(out)
            return out

        return list(await asyncio.gather(*(one(sid) for sid in session_ids)))
