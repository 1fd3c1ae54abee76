"""Branch points: the turn of a recorded session the user pushed back on to sample again from.

A whole-session reward says a session was bad, not where. For an agent session with
negative feedback (`reject`, `revert`, `thumbs_down`, `followup_dissatisfied`, a
`keep` below `keep_below`) this module picks one turn, and `rebuild.py` restores the
sandbox right before it, checked against the record, so fresh continuations from there
can be compared with each other (issue 35).

The rule: **branch right before the first turn that changed the workspace among the
turns the signal concerns**; when none of them changed it, right before the last
of them.

- The turns a signal concerns: a signal on a response (`response_id`, one model turn)
  concerns that turn and those before it (what the user had been shown); a signal on
  the session concerns all of its turns (a reject or a revert judges the final diff).
- A turn changed the workspace when its recorded content hash differs from the one
  before it (the session's starting hash for turn 0). The hash, not the tool name,
  decides: a `run` that rewrites a file is an edit, an `edit_file` that failed is not.

Why there: feedback on an agent session is about its changes. Branching after the
first disliked edit would keep part of what the user rejected fixed in every
continuation's context; branching earlier would re-sample reads and exploration the
signal says nothing against, and spend compute on turns that are not in question. The
turns before the first edit are kept as recorded context (masked from the loss), so
every continuation re-decides all of the change and nothing else. A session that never
changed anything was judged on its answer (a question instead of a fix, a wrong
"done"), so its last concerned turn is the one to redo. With several negative signals
the earliest such turn wins: it covers what each of them concerns.

A session sampled at another temperature than the cycle trains at (a client's own
`temperature` or `top_p`, a greedy request) is no point either: its continuations would
sample as it did, and the trainer scores its rows at the training temperature.

A private key's session is never a branch point: its traffic is never recorded, and a
session of a key made private later is refused here too (`private`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from shadowrl.agent.config import AgentConfig
from shadowrl.realtime.rebuild import Rebuilt, Unfaithful, rebuild
from shadowrl.realtime.sessions import view_sampled_at
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve.store.queries import SessionView, iter_sessions
from shadowrl.serve.store.schema import Feedback

NEGATIVE = frozenset({"reject", "revert", "thumbs_down", "followup_dissatisfied"})


@dataclass(frozen=True)
class BranchPoint:
    """Where to branch a session: right before step `turn` (0-based); the steps before
    it are the recorded prefix. `edit`: the turn changed the workspace (see the rule)."""

    session_id: str
    turn: int
    signal: str
    edit: bool


@dataclass(frozen=True)
class NoPoint:
    """A session with negative feedback that gives no branch point, and why."""

    session_id: str
    reason: str


@dataclass
class BranchCounts:
    """What a pass over the store found: sessions with negative feedback, the points
    picked from them, how many rebuilt faithfully, and why the others did not."""

    negative: int = 0
    points: int = 0
    faithful: int = 0
    unfaithful: int = 0
    no_point: Counter[str] = field(default_factory=Counter)
    unfaithful_why: Counter[str] = field(default_factory=Counter)

    def row(self) -> dict[str, Any]:
        return {
            "negative": self.negative,
            "points": self.points,
            "faithful": self.faithful,
            "unfaithful": self.unfaithful,
            "no_point": dict(self.no_point),
            "unfaithful_why": dict(self.unfaithful_why),
        }


def is_negative(fb: Feedback, keep_below: float) -> bool:
    if fb.signal == "keep":
        return fb.value is not None and fb.value < keep_below
    return fb.signal in NEGATIVE


def edit_turns(view: SessionView) -> list[int] | None:
    """Indices of the steps whose workspace hash differs from the one before; None when
    a step (or the start) was recorded without one."""
    before, out = view.session.workspace_hash, []
    for row in sorted(view.steps, key=lambda r: r.index):
        if before is None or row.workspace_hash is None:
            return None
        if row.workspace_hash != before:
            out.append(row.index)
        before = row.workspace_hash
    return out


def _last_concerned(view: SessionView, fb: Feedback) -> int | None:
    """The last step a signal concerns: the step of its response, or the session's last."""
    if fb.response_id is None:
        return max((r.index for r in view.steps), default=None)
    return next((r.index for r in view.steps if r.request_id == fb.response_id), None)


def pick(
    view: SessionView,
    keep_below: float,
    private: Collection[str] = (),
    temperature: float | None = None,
) -> BranchPoint | NoPoint | None:
    """Session `view`'s branch point by the rule (module docstring); None when it has
    no negative feedback. With `temperature` (the cycle's training temperature), a
    session sampled otherwise is no point: its continuations would sample at its own
    temperature, which the trainer does not score."""
    s = view.session
    negative = [fb for fb in view.feedback if is_negative(fb, keep_below)]
    if not negative:
        return None
    if s.api_key_id is not None and s.api_key_id in private:
        return NoPoint(s.id, "private")
    if s.kind != "agent" or not view.steps:
        return NoPoint(s.id, "not an agent session with steps")
    if temperature is not None and not view_sampled_at(view, temperature):
        return NoPoint(s.id, "served at another temperature")
    edits = edit_turns(view)
    if edits is None:
        return NoPoint(s.id, "recorded without workspace hashes")
    points = []
    for fb in negative:
        last = _last_concerned(view, fb)
        if last is None:
            continue
        first = next((k for k in edits if k <= last), None)
        turn = last if first is None else first
        points.append(BranchPoint(s.id, turn, fb.signal, first is not None))
    if not points:
        return NoPoint(s.id, "the feedback names no turn of the session")
    return min(points, key=lambda p: p.turn)


def rebuild_points(
    views: Iterable[SessionView],
    tokenizer: Any,
    agent: AgentConfig,
    sandbox: SandboxConfig,
    keep_below: float = 0.5,
    private: Collection[str] = (),
    counts: BranchCounts | None = None,
) -> Iterator[Rebuilt]:
    """The faithful branch points of `views`, rebuilt, one at a time (the caller closes
    each); unfaithful ones are skipped and counted in `counts`. A session not sampled at
    `agent.temperature` (the cycle's: `realtime` requires it to equal the training
    temperature when branching) gives no point."""
    counts = counts if counts is not None else BranchCounts()
    for view in views:
        point = pick(view, keep_below, private, agent.temperature)
        if point is None:
            continue
        counts.negative += 1
        if isinstance(point, NoPoint):
            counts.no_point[point.reason] += 1
            continue
        counts.points += 1
        built = rebuild(view, point.turn, tokenizer, agent, sandbox)
        if isinstance(built, Unfaithful):
            counts.unfaithful += 1
            counts.unfaithful_why[built.reason] += 1
            continue
        counts.faithful += 1
        yield built


def store_points(
    engine: Engine,
    tokenizer: Any,
    agent: AgentConfig,
    sandbox: SandboxConfig,
    since: datetime | None = None,
    keep_below: float = 0.5,
    private: Collection[str] = (),
    counts: BranchCounts | None = None,
    until: datetime | None = None,
) -> Iterator[Rebuilt]:
    """`rebuild_points` over the store's sessions updated since `since` and created by
    `until`, private keys' excluded."""
    views = iter_sessions(engine, since, exclude_keys=private)
    if until is not None:
        views = (v for v in views if v.session.created_at <= until)
    yield from rebuild_points(views, tokenizer, agent, sandbox, keep_below, private, counts)
