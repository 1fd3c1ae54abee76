"""Who may do what (`serve/auth.py`): API keys on every route, each key its own sessions,
private keys never recorded, admin refused without a token, and an open server kept on
loopback. Over real HTTP to the app, with the trace store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_fakes import MODEL, ScriptedPolicy
from sqlalchemy import select

from shadowrl.commands.main import main
from shadowrl.serve import auth
from shadowrl.serve.auth import KeyRing, add_key, read_keys, revoke_key
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.schema import Feedback, TraceRequest, TraceSession

HI = [{"role": "user", "content": "hi"}]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def chat(url: str, key: str | None, messages: list[Any] = HI, **headers: str) -> httpx.Response:
    head = {**(bearer(key) if key else {}), **headers}
    body = {"model": MODEL, "messages": messages}
    return httpx.post(f"{url}/v1/chat/completions", json=body, headers=head, timeout=30)


@pytest.fixture
def keyring(tmp_path: Path) -> tuple[KeyRing, dict[str, str], dict[str, str]]:
    """A key file with alice, bob and a private key: (ring, name -> key, name -> key id)."""
    path = tmp_path / "keys.json"
    keys, ids = {}, {}
    for name, private in (("alice", False), ("bob", False), ("quiet", True)):
        entry, keys[name] = add_key(path, name, private)
        ids[name] = entry.id
    return KeyRing(path), keys, ids


def test_the_key_file_holds_digests_only_and_revoking_drops_a_key(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    entry, key = add_key(path, "alice", private=True)
    text = path.read_text()
    assert key not in text and auth.digest(key) in text
    assert path.stat().st_mode & 0o077 == 0  # owner only
    assert read_keys(path) == [entry] and entry.private
    ring = KeyRing(path)
    assert ring.lookup(key) == entry and ring.lookup(key + "x") is None
    assert revoke_key(path, entry.id) == entry
    assert read_keys(path) == []
    with pytest.raises(KeyError):
        revoke_key(path, entry.id)


def test_every_route_needs_a_valid_key(serve: Any, tokenizer: Any, keyring: Any) -> None:
    ring, keys, _ = keyring
    _, url = serve(ScriptedPolicy(tokenizer, "ok"), keys=ring)
    for method, path in [("GET", "/v1/models"), ("GET", "/health"), ("GET", "/openapi.json")]:
        for head in ({}, bearer("srl-not-a-key"), {"Authorization": "Basic YTpi"}):
            r = httpx.request(method, f"{url}{path}", headers=head)
            assert r.status_code == 401, (path, head, r.text)
            assert r.json()["error"]["type"] == "authentication_error"
        assert httpx.request(method, f"{url}{path}", headers=bearer(keys["alice"])).is_success
    assert chat(url, None).status_code == 401
    ok = chat(url, keys["bob"])
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "ok"
    schema = httpx.get(f"{url}/openapi.json", headers=bearer(keys["bob"])).json()
    assert "HTTPBearer" in schema["components"]["securitySchemes"]


def test_a_key_sees_and_rates_only_its_own_sessions(
    serve: Any, tokenizer: Any, keyring: Any, open_store: Callable[..., TraceStore]
) -> None:
    ring, keys, ids = keyring
    store = open_store()
    _, url = serve(ScriptedPolicy(tokenizer, "Done."), keys=ring, traces=store.writer)
    mine = chat(url, keys["alice"], **{"X-Session-Id": "alice-1"})
    assert mine.status_code == 200, mine.text
    # bob cannot add to alice's session, nor rate it by session or by response id
    theirs = chat(url, keys["bob"], **{"X-Session-Id": "alice-1"})
    assert theirs.status_code == 404 and theirs.json()["error"]["param"] == "X-Session-Id"
    for body in ({"session_id": "alice-1"}, {"response_id": mine.json()["id"]}):
        r = httpx.post(
            f"{url}/v1/feedback", json={**body, "signal": "accept"}, headers=bearer(keys["bob"])
        )
        assert r.status_code == 404, r.text
    ok = httpx.post(
        f"{url}/v1/feedback",
        json={"session_id": "alice-1", "signal": "accept"},
        headers=bearer(keys["alice"]),
    )
    assert ok.status_code == 200, ok.text
    # bob echoing alice's conversation does not join it: prefix matching is per key
    reply = {"role": "assistant", "content": "Done."}
    echo = chat(url, keys["bob"], [*HI, reply, {"role": "user", "content": "more"}])
    assert echo.status_code == 200
    with store.engine.connect() as conn:
        sessions = dict(conn.execute(select(TraceSession.id, TraceSession.api_key_id)).all())
        requests = conn.execute(
            select(TraceRequest.session_id, TraceRequest.api_key_id, TraceRequest.parent_id)
        ).all()
        rated = conn.execute(select(Feedback.session_id, Feedback.api_key_id)).all()
    assert sessions.pop("alice-1") == ids["alice"]
    assert list(sessions.values()) == [ids["bob"]]  # bob's echo: a session of its own
    assert sorted(requests) == sorted(
        [("alice-1", ids["alice"], None), (*sessions, ids["bob"], None)]
    )
    assert rated == [("alice-1", ids["alice"])]


def test_a_private_key_is_served_but_never_recorded(
    serve: Any, tokenizer: Any, keyring: Any, open_store: Callable[..., TraceStore]
) -> None:
    ring, keys, _ = keyring
    store = open_store()
    _, url = serve(ScriptedPolicy(tokenizer, "secret"), keys=ring, traces=store.writer)
    r = chat(url, keys["quiet"], **{"X-Session-Id": "quiet-1"})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "secret"
    assert chat(url, keys["alice"]).status_code == 200
    with store.engine.connect() as conn:
        assert conn.execute(select(TraceSession.id)).scalars().all() != []
        assert conn.execute(select(TraceSession.id).where(TraceSession.id == "quiet-1")).all() == []
        assert len(conn.execute(select(TraceRequest.id)).all()) == 1  # alice's only


def test_a_revoked_key_is_refused_without_a_restart(
    serve: Any, tokenizer: Any, keyring: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "RELOAD_EVERY_S", 0.0)  # look at the file on every request
    ring, keys, ids = keyring
    _, url = serve(ScriptedPolicy(tokenizer, "ok"), keys=ring)
    assert chat(url, keys["bob"]).status_code == 200
    revoke_key(ring.path, ids["bob"])
    assert chat(url, keys["bob"]).status_code == 401
    assert chat(url, keys["alice"]).status_code == 200


def test_admin_is_refused_without_a_token_and_needs_the_right_one(
    serve: Any, tokenizer: Any, keyring: Any, tmp_path: Path
) -> None:
    body = {"path": str(tmp_path / "nope")}
    _, open_url = serve(ScriptedPolicy(tokenizer, "ok"))  # no keys, no admin token
    for head in ({}, bearer("anything")):
        r = httpx.post(f"{open_url}/admin/load_weights", json=body, headers=head)
        assert r.status_code == 403 and r.json()["error"]["code"] == "admin_disabled"
    ring, keys, _ = keyring
    _, url = serve(ScriptedPolicy(tokenizer, "ok"), keys=ring, admin_token="s3cret")
    for head in ({}, bearer(keys["alice"]), bearer("s3cre")):
        assert httpx.post(f"{url}/admin/load_weights", json=body, headers=head).status_code == 401
    r = httpx.post(f"{url}/admin/load_weights", json=body, headers=bearer("s3cret"))
    assert r.status_code == 400 and r.json()["error"]["param"] == "path"  # past the check
    assert chat(url, "s3cret").status_code == 200  # the admin token stands in for a key


def test_keys_cli_adds_lists_and_revokes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (cwd := tmp_path / "here").mkdir()
    monkeypatch.chdir(cwd)  # a path typed on the command line is relative to where it runs
    flags = [f"--run_dir={tmp_path / 'run'}", "--serve.api_keys=keys.json"]
    assert main(["keys", "add", "--name", "ci", "--private", *flags]) == 0
    head, key = capsys.readouterr().out.strip().splitlines()
    key_id = head.split()[0]
    assert not (tmp_path / "run" / "keys.json").exists()
    stored = json.loads((cwd / "keys.json").read_text())["keys"]
    assert [k["id"] for k in stored] == [key_id] and key.startswith(auth.KEY_PREFIX)
    assert main(["keys", "list", *flags]) == 0
    listed = capsys.readouterr().out
    assert key_id in listed and "private" in listed and key not in listed
    assert main(["keys", "revoke", key_id, *flags]) == 0
    assert main(["keys", "revoke", key_id, *flags]) == 2
    assert "no key" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.org"])
def test_an_open_server_will_not_listen_beyond_loopback(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", f"--serve.host={host}", "--serve.traces=null"]) == 2  # before the model
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--insecure" in err[0] and "api_keys" in err[0]


def test_insecure_or_keys_or_loopback_lets_it_start() -> None:
    from shadowrl.commands.serve import check_exposure
    from shadowrl.serve.config import ServeConfig

    check_exposure(ServeConfig(host="0.0.0.0"), insecure=True)
    check_exposure(ServeConfig(host="0.0.0.0", api_keys="keys.json"), insecure=False)
    for host in ("127.0.0.1", "localhost", "::1"):
        check_exposure(ServeConfig(host=host), insecure=False)


def test_a_refused_request_leaves_no_session_behind(
    serve: Any, tokenizer: Any, keyring: Any, sqlite_trace_store: TraceStore
) -> None:
    ring, keys, _ = keyring
    store = sqlite_trace_store
    _, url = serve(ScriptedPolicy(tokenizer, "ok"), keys=ring, traces=store.writer)
    body = {"model": MODEL, "messages": HI, "stop": ["a"] * 5, "max_tokens": 10**6}
    head = {**bearer(keys["alice"]), "X-Session-Id": "never"}
    r = httpx.post(f"{url}/v1/chat/completions", json=body, headers=head)
    assert r.status_code == 400, r.text
    assert chat(url, keys["alice"], **{"X-Session-Id": "kept"}).status_code == 200
    with store.engine.connect() as conn:
        assert conn.execute(select(TraceSession.id)).scalars().all() == ["kept"]
