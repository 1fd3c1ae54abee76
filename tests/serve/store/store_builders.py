"""Small record builders shared by the trace-store tests (and the crash-test child)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from shadowrl.serve.store import (
    FeedbackRecord,
    NewSession,
    RequestRecord,
    SessionUpdate,
    StepRecord,
    TraceWriter,
    Write,
)


def request(
    rid: str,
    session_id: str,
    prompt: Sequence[int] = (1, 2, 3),
    generated: Sequence[int] = (4, 5),
    parent_id: str | None = None,
    **extra: Any,
) -> RequestRecord:
    """A chat request whose logprobs and versions are derived from its tokens (checkable)."""
    return RequestRecord(
        id=rid,
        response_id=extra.pop("response_id", rid),
        session_id=session_id,
        endpoint="chat",
        model="tiny-test",
        prompt_ids=tuple(prompt),
        generated_ids=tuple(generated),
        logprobs=tuple(-t / 8 for t in generated),  # exact in float32
        versions=tuple(t % 3 for t in generated),
        finish_reason=extra.pop("finish_reason", "stop"),
        temperature=0.7,
        top_p=0.95,
        seed=11,
        parent_id=parent_id,
        **extra,
    )


OLD = datetime(2026, 1, 1, tzinfo=UTC)
NEW = datetime(2026, 11, 1, tzinfo=UTC)


def write_scenario(writer: TraceWriter) -> None:
    """chat1: a 2-turn conversation whose first reply has two continuations (2 branches),
    with feedback; chat2 (old): a client rewrote history; agent1: a run with a diff."""
    at = {"created_at": NEW}
    writes: list[Write] = [
        NewSession("chat1", **at),
        request("r1", "chat1", (1, 2, 3), (4, 5), **at),
        request("r2", "chat1", (1, 2, 3, 4, 5, 6, 7), (8,), parent_id="r1", **at),
        request("r3", "chat1", (1, 2, 3, 4, 5, 9), (10, 11), parent_id="r1", **at),
        FeedbackRecord("chat1", "thumbs_up", response_id="r2", at=NEW),
        NewSession("chat2", created_at=OLD),
        request("q1", "chat2", (1, 2), (3,), created_at=OLD),
        request("q2", "chat2", (1, 9, 9), (4,), "q1", token_exact=False, created_at=OLD),
        NewSession("agent1", kind="agent", task="fix it", task_id="repo__1", **at),
        StepRecord("agent1", 0, [{"name": "bash", "arguments": {"cmd": "ls"}}], ["a.py"], **at),
        SessionUpdate("agent1", status="done", diff="--- a/a.py\n+++ b/a.py\n", at=NEW),
    ]
    for w in writes:
        writer.submit(w).result()
