"""A private key's traffic is served and never recorded, so never exported nor collected:
chat, completions, agent sessions with their follow-up messages, and feedback, over
real HTTP to the app, with the trace store on SQLite and PostgreSQL. A store written
before that held (private rows in it) is still never exported. The real-time loop's
admin token never appears on a command line."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL
from sqlalchemy import select
from test_agent_sessions import FOLLOWUP, SPEC, TASK, scripted, wait_done

from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.commands.config import load_config
from shadowrl.commands.keys import private_keys
from shadowrl.commands.main import main
from shadowrl.commands.serve import admin_token
from shadowrl.realtime.process import read_admin_token, run_admin_token
from shadowrl.serve import AgentSettings
from shadowrl.serve.auth import KeyRing, add_key, private_key_ids
from shadowrl.serve.store import NewSession, RequestRecord, TraceStore
from shadowrl.serve.store.export import export_swebench, export_training
from shadowrl.serve.store.queries import iter_sessions
from shadowrl.serve.store.schema import Feedback, TraceRequest, TraceSession, TraceStep

DEMO = Path(__file__).parents[2] / "src" / "shadowrl" / "data" / "demo" / "repo"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, str]]:
    """alice (recorded) and quiet (private): (key file, name -> key, name -> id)."""
    path = tmp_path / "keys.json"
    secret, ids = {}, {}
    for name, private in (("alice", False), ("quiet", True)):
        entry, secret[name] = add_key(path, name, private)
        ids[name] = entry.id
    return path, secret, ids


def agent_session(http: httpx.Client) -> dict[str, Any]:
    """A session with a follow-up message, both turns run to their end."""
    made = http.post("/v1/agent/sessions", json={"workspace": "demo", "task": TASK})
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    assert wait_done(http, sid)["status"] == "done"
    more = http.post(f"/v1/agent/sessions/{sid}/messages", json={"content": FOLLOWUP})
    assert more.status_code == 202, more.text
    return wait_done(http, sid)


def talk(http: httpx.Client) -> tuple[str, str]:
    """A chat and a completion; returns their response ids."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    chat = http.post("/v1/chat/completions", json=body, headers={"X-Session-Id": "s-1"})
    done = http.post("/v1/completions", json={"model": MODEL, "prompt": "def f():"})
    assert chat.status_code == 200 and done.status_code == 200, (chat.text, done.text)
    return chat.json()["id"], done.json()["id"]


def test_a_private_key_leaves_no_trace_in_the_store_or_the_exports(
    serve: Any,
    tokenizer: Any,
    keys: Any,
    tmp_path: Path,
    open_store: Callable[..., TraceStore],
) -> None:
    path, secret, ids = keys
    shutil.copytree(DEMO, tmp_path / "root" / "demo")
    store = open_store()
    settings = AgentSettings(tmp_path / "root", SPEC, 4)
    policy = ScriptedPolicy(tokenizer, scripted)
    _, url = serve(policy, keys=KeyRing(path), traces=store.writer, agent=settings)
    quiet = httpx.Client(base_url=url, headers=bearer(secret["quiet"]), timeout=60)
    alice = httpx.Client(base_url=url, headers=bearer(secret["alice"]), timeout=60)
    with quiet, alice:
        # the private key is served in full: chat, completions, an agent session, a follow-up
        chat_id, _ = talk(quiet)
        served = agent_session(quiet)
        assert served["diff"] and len(served["steps"]) == 6
        # ... and its feedback is refused: there is nothing recorded of it to rate
        for body in ({"response_id": chat_id}, {"session_id": served["id"]}):
            r = quiet.post("/v1/feedback", json={**body, "signal": "reject"})
            assert r.status_code == 404 and "never recorded" in r.json()["error"]["message"]
        # alice, the control, is recorded as always
        talk(alice)
        mine = agent_session(alice)
        ok = alice.post("/v1/feedback", json={"session_id": mine["id"], "signal": "accept"})
        assert ok.status_code == 200, ok.text
    with store.engine.connect() as conn:
        owners = set(conn.scalars(select(TraceSession.api_key_id)))
        requests = set(conn.scalars(select(TraceRequest.api_key_id)))
        rated = set(conn.scalars(select(Feedback.api_key_id)))
        stepped = set(conn.scalars(select(TraceStep.session_id)))
    assert owners == requests == rated == {ids["alice"]}
    assert stepped == {mine["id"]} and served["id"] not in stepped
    exported = list(export_training(store.engine))
    assert exported and all(row["session_id"] != served["id"] for row in exported)
    assert [p["instance_id"] for p in export_swebench(store.engine)] == [mine["id"]]


def test_a_private_keys_rows_in_an_older_store_are_never_exported(
    keys: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store written before private agent sessions stopped being recorded still holds
    some: `traces export` (and the real-time loop's reads) leave them out by key."""
    path, _, ids = keys
    db = tmp_path / "traces.db"
    from shadowrl.serve.store import open_store

    with open_store(f"sqlite:///{db}", tmp_path) as store:
        for owner in ("alice", "quiet"):
            sid = f"{owner}-old"
            store.writer.submit(NewSession(sid, "chat", ids[owner], "done")).result()
            record = RequestRecord(
                id=f"{sid}-r", response_id=f"{sid}-r", session_id=sid, endpoint="chat",
                model=MODEL, prompt_ids=[1, 2], generated_ids=[3], logprobs=[-0.5],
                versions=[0], finish_reason="stop", temperature=1.0, top_p=1.0,
                api_key_id=ids[owner],
            )  # fmt: skip
            store.writer.submit(record).result()
        assert {v.session.id for v in iter_sessions(store.engine)} == {"alice-old", "quiet-old"}
        private = private_key_ids(path)
        assert private == {ids["quiet"]}
        kept = [v.session.id for v in iter_sessions(store.engine, None, private)]
        assert kept == ["alice-old"]
    out = tmp_path / "rows.jsonl"
    flags = [f"--serve.traces=sqlite:///{db}", f"--serve.api_keys={path}", f"--run_dir={tmp_path}"]
    assert main(["traces", "export", "--format", "training", "--out", str(out), *flags]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["session_id"] for r in rows] == ["alice-old"]
    config = load_config([], flags)
    assert private_keys(config) == {ids["quiet"]}  # what the real-time loop leaves out


def test_the_admin_token_is_made_per_run_and_travels_by_file(tmp_path: Path) -> None:
    root = tmp_path / "realtime"
    first = run_admin_token(root)
    token = read_admin_token(first)
    assert len(token) >= 32 and stat.S_IMODE(first.stat().st_mode) == 0o600
    assert read_admin_token(run_admin_token(root)) == token  # a resumed run keeps it
    assert read_admin_token(run_admin_token(tmp_path / "other")) != token  # another run: new
    assert read_admin_token(run_admin_token(root, "given")) == "given"
    # `serve` reads it from the file; both ways at once, or an empty file, is a usage error
    cfg = load_config([], [f"--serve.admin_token_file={first}"]).serve
    assert admin_token(cfg) == "given"
    from shadowrl.commands.errors import UsageError

    both = cfg.model_copy(update={"admin_token": "x"})
    (tmp_path / "empty").write_text("\n")
    empty = cfg.model_copy(update={"admin_token_file": str(tmp_path / "empty")})
    for bad in (both, empty):
        with pytest.raises(UsageError):
            admin_token(bad)
