"""Group commit: every acknowledged write is in the store, batches share transactions,
one bad record fails only itself. Run on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from sqlalchemy import Connection, func, select
from sqlalchemy.exc import IntegrityError
from store_builders import request

from shadowrl.serve.store import (
    FeedbackRecord,
    NewSession,
    SessionUpdate,
    TraceStore,
    WriterClosed,
)
from shadowrl.serve.store.queries import get_session
from shadowrl.serve.store.schema import Feedback, TraceRequest


async def test_concurrent_sessions_all_land(open_store: Callable[..., TraceStore]) -> None:
    """20 concurrent chat sessions of 10 turns each (asyncio), plus 4 threads of feedback."""
    store = open_store()
    w = store.writer

    async def session(s: int) -> None:
        sid = f"s{s}"
        await w.write(NewSession(sid))
        parent = None
        for t in range(10):
            rid = f"{sid}-r{t}"
            await w.write(request(rid, sid, prompt=(s, t), generated=(t, s, 7), parent_id=parent))
            parent = rid
        await w.write(SessionUpdate(sid, status="done"))

    await asyncio.gather(*(session(s) for s in range(20)))

    def feedback(k: int) -> None:
        for s in range(k, 20, 4):
            w.submit(FeedbackRecord(f"s{s}", "thumbs_up", idempotency_key=f"fb{s}")).result()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(feedback, range(4)))
    store.close()
    assert w.committed == 20 * 12 + 20

    for s in range(20):
        view = get_session(store.engine, f"s{s}")
        assert view is not None and view.session.status == "done"
        assert [r.id for r in view.requests] == [f"s{s}-r{t}" for t in range(10)]
        assert [r.generated_ids for r in view.requests] == [(t, s, 7) for t in range(10)]
        assert [r.logprobs for r in view.requests] == [(-t / 8, -s / 8, -7 / 8) for t in range(10)]
        assert [f.signal for f in view.feedback] == ["thumbs_up"]


@dataclass(frozen=True)
class Gate:
    """A write that holds its transaction open until released (fake: the batch's timing)."""

    entered: threading.Event
    release: threading.Event

    def apply(self, conn: Connection) -> None:
        self.entered.set()
        assert self.release.wait(30)


def test_writes_queued_during_a_commit_share_the_next_transaction(
    open_store: Callable[..., TraceStore],
) -> None:
    store = open_store()
    w = store.writer
    entered, release = threading.Event(), threading.Event()
    first = w.submit(Gate(entered, release))
    assert entered.wait(30)
    futures = [w.submit(NewSession(f"s{i}")) for i in range(50)]
    release.set()
    for f in [first, *futures]:
        f.result(30)
    assert (w.transactions, w.committed) == (2, 51)  # not one transaction per write


def test_bad_record_fails_alone(open_store: Callable[..., TraceStore]) -> None:
    store = open_store()
    w = store.writer
    w.submit(NewSession("s")).result()
    entered, release = threading.Event(), threading.Event()
    w.submit(Gate(entered, release))
    assert entered.wait(30)
    good1 = w.submit(request("r1", "s"))
    dup = w.submit(request("r1", "s"))  # same primary key: the database refuses it
    good2 = w.submit(request("r2", "s"))
    release.set()
    good1.result(30), good2.result(30)
    with pytest.raises(IntegrityError):
        dup.result(30)
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(TraceRequest)) == 2


def test_feedback_idempotency_key_stores_once(open_store: Callable[..., TraceStore]) -> None:
    store = open_store()
    w = store.writer
    w.submit(NewSession("s")).result()
    for signal in ("accept", "accept", "reject"):
        w.submit(FeedbackRecord("s", signal, idempotency_key="key-1")).result()  # type: ignore[arg-type]
    w.submit(FeedbackRecord("s", "keep", value=0.5)).result()
    with store.engine.connect() as conn:
        rows = conn.execute(select(Feedback.signal, Feedback.value).order_by(Feedback.id)).all()
    assert [tuple(r) for r in rows] == [("accept", None), ("keep", 0.5)]


async def test_cancelled_waiter_still_writes(open_store: Callable[..., TraceStore]) -> None:
    """A client that hangs up while its record waits for the commit loses nothing."""
    store = open_store()
    w = store.writer
    entered, release = threading.Event(), threading.Event()
    w.submit(Gate(entered, release))
    assert entered.wait(30)
    waiter = asyncio.create_task(w.write(NewSession("kept")))
    await asyncio.sleep(0)
    waiter.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    store.close()
    assert get_session(store.engine, "kept") is not None


def test_submit_after_close_is_refused(open_store: Callable[..., TraceStore]) -> None:
    store = open_store()
    pending = [store.writer.submit(NewSession(f"s{i}")) for i in range(5)]
    store.writer.close()
    assert all(f.done() and f.exception() is None for f in pending)  # close commits first
    with pytest.raises(WriterClosed):
        store.writer.submit(NewSession("late"))
