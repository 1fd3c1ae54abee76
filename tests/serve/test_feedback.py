"""`POST /v1/feedback` over HTTP (validated, idempotent, stored with its session) and
silence as a state (`finalize_silent`, and the server's periodic task)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL, ScriptedPolicy

from shadowrl.serve.store import FeedbackRecord, NewSession, TraceStore
from shadowrl.serve.store.queries import finalize_silent, get_session, unanswered_sessions


def chat_once(client: Any, **kw: Any) -> Any:
    return client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], **kw
    )


def test_feedback_is_stored_with_the_session_once_per_key(
    serve: Any, tokenizer: Any, open_store: Callable[..., TraceStore]
) -> None:
    store = open_store()
    client, url = serve(ScriptedPolicy(tokenizer, "Done."), traces=store.writer)
    resp = chat_once(client)
    view = get_session(store.engine, resp.id)
    assert view is not None
    sid = view.session.id

    thumbs = httpx.post(f"{url}/v1/feedback", json={"response_id": resp.id, "signal": "thumbs_up"})
    assert thumbs.status_code == 200, thumbs.text
    assert thumbs.json()["session_id"] == sid and thumbs.json()["response_id"] == resp.id
    body = {"session_id": sid, "signal": "keep", "value": 0.75, "at": "2026-11-30T10:00:00+01:00"}
    key = {"Idempotency-Key": "edit-42"}
    first = httpx.post(f"{url}/v1/feedback", json=body, headers=key)
    again = httpx.post(f"{url}/v1/feedback", json={**body, "value": 0.1}, headers=key)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()  # the same stored row, not the repeat's body
    assert first.json()["id"] != thumbs.json()["id"]
    assert first.json()["value"] == 0.75

    stored = get_session(store.engine, sid)
    assert stored is not None
    rows = [(f.signal, f.value, f.response_id) for f in stored.feedback]
    assert rows == [("keep", 0.75, None), ("thumbs_up", None, resp.id)]  # ordered by `at`
    assert stored.feedback[0].at == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"signal": "accept"}, None),  # no id
        ({"session_id": "s", "response_id": "r", "signal": "accept"}, None),  # both
        ({"session_id": "s", "signal": "keep"}, None),  # keep without value
        ({"session_id": "s", "signal": "accept", "value": 0.5}, None),  # value on accept
        ({"session_id": "s", "signal": "keep", "value": 1.5}, "value"),
        ({"session_id": "s", "signal": "silent"}, "signal"),  # the server's, not a user's
        ({"session_id": "s", "signal": "like"}, "signal"),
        ({"session_id": "s", "signal": "accept", "at": "yesterday"}, "at"),
        ({"session_id": "s", "signal": "accept", "extra": 1}, "extra"),
    ],
)
def test_bad_feedback_is_a_400(
    serve: Any, tokenizer: Any, sqlite_trace_store: TraceStore, body: dict[str, Any], param: Any
) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "x"), traces=sqlite_trace_store.writer)
    r = httpx.post(f"{url}/v1/feedback", json=body)
    assert r.status_code == 400, r.text
    if param is not None:
        assert r.json()["error"]["param"] == param


def test_unknown_session_or_response_is_a_404(
    serve: Any, tokenizer: Any, sqlite_trace_store: TraceStore
) -> None:
    _, url = serve(ScriptedPolicy(tokenizer, "x"), traces=sqlite_trace_store.writer)
    for body in (
        {"session_id": "nope", "signal": "accept"},
        {"response_id": "nope", "signal": "revert"},
    ):
        r = httpx.post(f"{url}/v1/feedback", json=body)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text
    _, bare = serve(ScriptedPolicy(tokenizer, "x"))  # no store: no feedback route
    r = httpx.post(f"{bare}/v1/feedback", json={"session_id": "a", "signal": "accept"})
    assert r.status_code == 404


def test_finalize_silent_writes_one_silent_row_per_quiet_session(
    open_store: Callable[..., TraceStore],
) -> None:
    store = open_store()
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    w = store.writer
    for sid, minutes in (("quiet", 0), ("recent", 50), ("answered", 0)):
        w.submit(NewSession(sid, created_at=t0 + timedelta(minutes=minutes))).result()
    w.submit(FeedbackRecord("answered", "accept", at=t0)).result()
    now = t0 + timedelta(hours=1)
    assert finalize_silent(w, now, window_s=1800) == ["quiet"]
    assert finalize_silent(w, now, window_s=1800) == []  # already final
    view = get_session(store.engine, "quiet")
    assert view is not None
    assert [(f.signal, f.at) for f in view.feedback] == [("silent", t0 + timedelta(minutes=30))]
    assert finalize_silent(w, now + timedelta(hours=1), window_s=1800) == ["recent"]


def test_the_server_finalizes_silent_sessions_while_it_runs(
    serve: Any, tokenizer: Any, sqlite_trace_store: TraceStore
) -> None:
    store = sqlite_trace_store
    client, _ = serve(ScriptedPolicy(tokenizer, "ok"), traces=store.writer, feedback_window=0.05)
    resp = chat_once(client)
    for _ in range(500):  # the loop runs every few ms; poll the store, never a clock
        if not unanswered_sessions(store.engine, datetime.now(UTC) + timedelta(days=1)):
            break
        time.sleep(0.01)
    view = get_session(store.engine, resp.id)
    assert view is not None and [f.signal for f in view.feedback] == ["silent"]
