"""Recorded production sessions, read back from the trace store as what training needs.

A session in the store is raw: requests with their token ids, logprobs and versions,
and feedback rows. Here each one becomes a `ProductionSession`: its signals (for
`rewards.py`), the agent's conduct (did its last reply hold a broken tool call, did
it ever edit, did it ask a question instead of acting), its sampling (which decides
whether its recorded logprobs are those of the training distribution) and one
`Trajectory` whose segments are the session's branches, token-exact, as
`serve/store/export.py` builds them for `shadowrl traces export --format training`.

Conduct is read from the generated text with the harness's own parser and tool
schemas, so a served session and a rollout count a malformed call the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from shadowrl.agent import parse_tool_calls
from shadowrl.eval import EDIT_TOOLS, asks_instead_of_acting
from shadowrl.realtime.rewards import Conduct, Signal
from shadowrl.serve.store.export import branch_segments, branches
from shadowrl.serve.store.queries import RequestView, SessionView, iter_sessions
from shadowrl.types import Trajectory


def sampled_at(sampling: Iterable[tuple[float, float]], temperature: float) -> bool:
    """Whether every (temperature, top-p) of `sampling` draws from π itself at `temperature`:
    that temperature, top-p 1, not greedy (what a cycle can train on)."""
    return temperature > 0 and all(t == temperature and p == 1.0 for t, p in sampling)


def sampling_of(view: SessionView) -> tuple[tuple[float, float], ...]:
    """(temperature, top-p) of every request of a stored session."""
    return tuple((r.row.temperature, r.row.top_p) for r in view.requests)


def view_sampled_at(view: SessionView, temperature: float) -> bool:
    """`sampled_at` over every request of a stored session."""
    return sampled_at(sampling_of(view), temperature)


@dataclass(frozen=True)
class ProductionSession:
    """One served session, ready to be rewarded and trained on."""

    id: str
    task_id: str | None
    checkpoint: str | None
    workspace: str | None  # an agent session's workspace (None for chat/completions)
    signals: tuple[Signal, ...]
    conduct: Conduct
    sampling: tuple[tuple[float, float], ...]  # (temperature, top_p) of every request
    trajectory: Trajectory  # reward None; one segment per branch

    @property
    def min_version(self) -> int | None:
        """The oldest policy version that generated any of its tokens."""
        vs = [v for s in self.trajectory.segments if (v := s.min_version()) is not None]
        return min(vs) if vs else None

    def served_at(self, temperature: float) -> bool:
        """Whether every request sampled from π itself: `temperature`, top-p 1, not greedy."""
        return sampled_at(self.sampling, temperature)


def conduct_of(replies: Sequence[str], schemas: Sequence[dict[str, Any]]) -> Conduct:
    """The agent's conduct from its replies' text, in order (see the module docstring)."""
    parsed = [parse_tool_calls(text, schemas) for text in replies]
    edited = any(c.name in EDIT_TOOLS for p in parsed for c in p.calls)
    broken = bool(parsed) and bool(parsed[-1].errors)
    return Conduct(broken_end=broken, clarifying=asks_instead_of_acting(parsed), edited=edited)


def chains(requests: Sequence[RequestView]) -> list[list[RequestView]]:
    """The branches of a session; requests with no parent links (`/v1/completions` turns of
    one agent, grouped by `X-Session-Id`) form one chain in order, so a turn whose prompt
    extends the previous turn's ids joins its segment and the shared prefix is trained once."""
    if any(r.parent_id for r in requests):
        return branches(requests)
    return [list(requests)] if requests else []


def production_session(
    view: SessionView, tokenizer: Any, schemas: Sequence[dict[str, Any]]
) -> ProductionSession:
    """A store `SessionView` as a `ProductionSession`."""
    s = view.session
    replies = [
        tokenizer.decode(list(r.generated_ids), skip_special_tokens=True) for r in view.requests
    ]
    segments = tuple(seg for chain in chains(view.requests) for seg in branch_segments(chain))
    traj = Trajectory(s.task_id or s.id, (), (), segments, "submitted")
    return ProductionSession(
        id=s.id,
        task_id=s.task_id,
        checkpoint=s.checkpoint
        or next((r.checkpoint for r in view.requests if r.checkpoint), None),
        workspace=s.workspace,
        signals=tuple(Signal(f.signal, f.value) for f in view.feedback),
        conduct=conduct_of(replies, schemas),
        sampling=sampling_of(view),
        trajectory=traj,
    )


def read_sessions(
    engine: Engine,
    tokenizer: Any,
    schemas: Sequence[dict[str, Any]],
    since: datetime | None = None,
    until: datetime | None = None,
    exclude_keys: Collection[str] = (),
) -> Iterator[ProductionSession]:
    """Every session created in [since, until] that made at least one request, none of a
    key in `exclude_keys` (the private keys)."""
    for view in iter_sessions(engine, since, exclude_keys):
        created = view.session.created_at
        if not view.requests or (since is not None and created < since):
            continue
        if until is None or created <= until:
            yield production_session(view, tokenizer, schemas)
