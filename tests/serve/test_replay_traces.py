"""`shadowrl replay <trace id>` on a real trace store (SQLite and PostgreSQL): a served
agent session (tiny model, greedy, on the engine) is rebuilt at turn K from the store and
continued, regenerating the recorded tail, and its recorded tokens teacher-forced through
the same weights give the recorded logprobs within 1e-4; a chat request is regenerated
and checked the same way; unknown ids and sessions without tokens are one-line errors."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_agent_sessions import DEMO_REPO, TASK, wait_done

from shadowrl.agent.config import AgentConfig
from shadowrl.commands.main import main
from shadowrl.episode import EpisodeSpec
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve import AgentSettings
from shadowrl.serve.store import NewSession, TraceStore

GREEDY = AgentConfig(max_turns=3, max_new_tokens=16, temperature=0.0)


def gap(out: str) -> float:
    return float(out.split("max |Δ logprob| = ")[1].split()[0])


def replay(store_url: str, *args: str) -> list[str]:
    return ["replay", *args, f"--serve.traces={store_url}", "--sandbox.backend=local"]


def test_served_agent_session_replays_from_the_store(
    serve: Any, engine: Any, tmp_path: Path, store_url: str,
    open_store: Callable[..., TraceStore], capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    root = tmp_path / "root"
    shutil.copytree(DEMO_REPO, root / "demo")
    spec = EpisodeSpec(agent=GREEDY, sandbox=SandboxConfig(backend="local"))
    _, url = serve(engine, traces=open_store().writer, agent=AgentSettings(root, spec))
    with httpx.Client(base_url=url, timeout=120) as http:
        r = http.post("/v1/agent/sessions", json={"workspace": "demo", "task": TASK})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        done = wait_done(http, sid)
        chat = http.post(
            "/v1/chat/completions",
            json={"model": "tiny-test", "messages": [{"role": "user", "content": "hi"}],
                  "max_tokens": 12, "temperature": 0},
        ).json()  # fmt: skip
    assert len(done["steps"]) == 3
    capsys.readouterr()
    # the served model is named tiny-test here; --model tiny is the same weights (seed 0)
    assert main(replay(store_url, sid, "--from-turn", "2", "--model", "tiny")) == 0
    out = capsys.readouterr().out
    assert "replay from turn 2" in out and "turn 2 " in out and "turn 1 " not in out
    assert "regenerated the recorded tail token for token" in out, out
    assert gap(out) < 1e-4 and "over 32 tokens" in out  # turns 2 and 3, 16 tokens each

    assert main(replay(store_url, chat["id"], "--from-turn", "1", "--model", "tiny")) == 0
    out = capsys.readouterr().out
    assert "regenerated token for token" in out and gap(out) < 1e-4


def test_trace_id_errors(
    store_url: str, open_store: Callable[..., TraceStore], capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store()
    store.writer.submit(NewSession("sess-empty", "chat")).result()
    assert main(replay(store_url, "sess-nope", "--from-turn", "1")) == 2
    err = capsys.readouterr().err
    assert "has no session, request or response" in err and len(err.strip().splitlines()) == 1
    assert main(replay(store_url, "sess-empty", "--from-turn", "1")) == 2
    assert "holds no recorded tokens" in capsys.readouterr().err
    assert main(["replay", "sess-empty", "--from-turn", "1", "--serve.traces=null"]) == 2
    assert "tracing is off" in capsys.readouterr().err
