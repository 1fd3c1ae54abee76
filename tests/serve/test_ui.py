"""The `/ui` review page: its JSON routes over HTTP, and the page itself end to end in a
real headless Chromium (Debian's `chromium` + `chromium-driver`, driven by selenium,
pointed at /usr/bin explicitly so Selenium Manager never looks for a download)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL, WEATHER, ScriptedPolicy
from sqlalchemy import select

from shadowrl.serve.auth import KeyRing, add_key
from shadowrl.serve.store import NewSession, SessionUpdate, StepRecord, TraceStore
from shadowrl.serve.store.schema import Feedback

REPLY = '<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>'


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def keys(tmp_path: Path) -> tuple[KeyRing, str, str]:
    path = tmp_path / "keys.json"
    _, alice = add_key(path, "alice")
    _, bob = add_key(path, "bob")
    return KeyRing(path), alice, bob


def record_chat(url: str, key: str, session: str) -> dict[str, Any]:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER],
    }
    head = {**bearer(key), "X-Session-Id": session}
    r = httpx.post(f"{url}/v1/chat/completions", json=body, headers=head, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_page_is_public_and_its_data_is_per_key(
    serve: Any, tokenizer: Any, keys: Any, sqlite_trace_store: TraceStore
) -> None:
    ring, alice, bob = keys
    store = sqlite_trace_store
    _, url = serve(ScriptedPolicy(tokenizer, REPLY), keys=ring, traces=store.writer)
    record_chat(url, alice, "alice-chat")
    # an agent session as the agent service records one: steps and a diff
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    owner = ring.lookup(alice)
    assert owner is not None
    store.writer.submit(NewSession("alice-agent", "agent", owner.id)).result()
    step = StepRecord(
        "alice-agent",
        0,
        [{"name": "bash", "arguments": {"cmd": "ls"}}],
        [{"call_id": "c", "name": "bash", "output": "x.py", "is_error": False}],
    )
    store.writer.submit(step).result()
    store.writer.submit(SessionUpdate("alice-agent", status="done", diff=diff)).result()

    for path in ("/ui", "/ui/sessions/alice-chat", "/ui/static/app.js"):
        assert httpx.get(f"{url}{path}").status_code == 200  # no data in them: no key needed
    assert httpx.get(f"{url}/ui/api/sessions").status_code == 401
    listed = httpx.get(f"{url}/ui/api/sessions", headers=bearer(alice)).json()["data"]
    assert {s["id"] for s in listed} == {"alice-chat", "alice-agent"}
    assert httpx.get(f"{url}/ui/api/sessions", headers=bearer(bob)).json()["data"] == []
    assert httpx.get(f"{url}/ui/api/sessions/alice-chat", headers=bearer(bob)).status_code == 404

    chat = httpx.get(f"{url}/ui/api/sessions/alice-chat", headers=bearer(alice)).json()
    [turn] = chat["requests"]
    assert "Weather in Paris?" in turn["prompt"] and REPLY in turn["reply"]
    assert turn["tool_calls"][0]["function"]["name"] == "get_weather" and turn["token_exact"]
    agent = httpx.get(f"{url}/ui/api/sessions/alice-agent", headers=bearer(alice)).json()
    assert agent["diff"] == diff and agent["status"] == "done"
    assert agent["steps"][0]["results"][0]["output"] == "x.py"


def test_review_in_a_real_browser_accepts_a_recorded_session(
    serve: Any, tokenizer: Any, keys: Any, sqlite_trace_store: TraceStore, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    ring, alice, _ = keys
    store = sqlite_trace_store
    _, url = serve(ScriptedPolicy(tokenizer, REPLY), keys=ring, traces=store.writer)
    record_chat(url, alice, "review-me")
    wait = WebDriverWait(browser, 30)

    browser.get(f"{url}/ui")
    key_input = wait.until(ec.visibility_of_element_located((By.ID, "key-input")))
    key_input.send_keys(alice)
    browser.find_element(By.ID, "key-save").click()
    row = wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, 'tr[data-session="review-me"]')))
    assert "chat" in row.text and "open" in row.text
    row.click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "title"), "review-me"))
    transcript = browser.find_element(By.ID, "transcript").text
    assert "Weather in Paris?" in transcript and "get_weather" in transcript
    browser.find_element(By.ID, "accept").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "feedback-status"), "accept recorded"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "feedback"), "accept"))

    with store.engine.connect() as conn:
        rows = conn.execute(select(Feedback.session_id, Feedback.signal)).all()
    assert rows == [("review-me", "accept")]
    assert browser.execute_script("return sessionStorage.getItem('shadowrl-api-key')") == alice
