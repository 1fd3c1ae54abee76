"""The agent as a service: an HTTP session runs the training loop token for token, and
its messages, events, cancel, apply, budgets and workspace rules behave as documented."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import EpisodeState, run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.episode import EpisodeSpec
from shadowrl.sandbox import create_sandbox
from shadowrl.sandbox.base import SandboxConfig
from shadowrl.serve.agent_sessions import AgentSettings
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.export import training_rows
from shadowrl.serve.store.queries import get_session
from shadowrl.types import Trajectory

DEMO_REPO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
TASK = "median() is wrong on unsorted input. Fix it."
FOLLOWUP = "Thanks. Where else is len(values) used?"


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


# The scripted user-facing conversation: fix, check, submit; then a follow-up turn.
REPLIES = [
    "Let me look. " + call("read_file", path="stats.py"),
    call("edit_file", path="stats.py", old="    n = len(values)\n    mid", new=(
        "    values = sorted(values)\n    n = len(values)\n    mid"
    )),
    call("run", command="python -c 'from stats import median; print(median([3, 1, 2]))'"),
    call("submit"),
    call("grep", pattern="len(values)", path="stats.py"),
    "Lines 6 and 12. " + call("submit"),
]  # fmt: skip


def scripted(prompt: str) -> str:
    """The reply to a prompt: by how many assistant turns it holds, so every session
    (concurrent ones too) plays the same conversation."""
    return REPLIES[prompt.count("<|im_start|>assistant") - 1]


SPEC = EpisodeSpec(agent=AgentConfig(max_turns=5), sandbox=SandboxConfig(backend="local"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "root" / "demo"
    shutil.copytree(DEMO_REPO, ws)
    return ws.parent


def start(serve: Any, tokenizer: Any, root: Path, store: TraceStore | None, **kw: Any) -> str:
    settings = AgentSettings(root, kw.pop("spec", SPEC), kw.pop("max_sessions", 4))
    policy = kw.pop("policy", None) or ScriptedPolicy(tokenizer, scripted)
    traces = None if store is None else store.writer
    _, url = serve(policy, traces=traces, agent=settings, **kw)
    return url


def wait_done(http: httpx.Client, sid: str) -> dict[str, Any]:
    """Follow the session's events to their end, then return its state."""
    with http.stream("GET", f"/v1/agent/sessions/{sid}/events") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        kinds = [line[7:] for line in r.iter_lines() if line.startswith("event: ")]
    assert kinds[-1] == "end"
    return http.get(f"/v1/agent/sessions/{sid}", params={"tokens": True}).json()


def direct(tokenizer: Any, workspace: Path) -> tuple[Trajectory, Trajectory]:
    """The same conversation through `run_episode` itself, no server."""
    policy = ScriptedPolicy(tokenizer, scripted)
    sandbox = create_sandbox(workspace, backend="local")
    state = EpisodeState()
    run = lambda text: run_episode(  # noqa: E731
        policy, sandbox, text, tokenizer=tokenizer, config=SPEC.agent, state=state
    )
    try:
        return asyncio.run(run(TASK)), asyncio.run(run(FOLLOWUP))
    finally:
        sandbox.close()


def test_session_is_the_training_loop_token_for_token(
    serve: Any, tokenizer: Any, root: Path, open_store: Callable[..., TraceStore]
) -> None:
    store = open_store()
    url = start(serve, tokenizer, root, store)
    first, second = direct(tokenizer, DEMO_REPO)
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post("/v1/agent/sessions", json={"workspace": "demo", "task": TASK})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        one = wait_done(http, sid)
        assert (one["status"], one["end"]) == ("done", "submitted")
        assert one["token_ids"] == list(first.segments[0].token_ids)
        assert one["loss_mask"] == list(first.segments[0].loss_mask)
        assert "+    values = sorted(values)" in one["diff"]
        assert one["steps"][2]["results"][0]["output"] == first.steps[2].results[0].output

        assert (
            http.post(f"/v1/agent/sessions/{sid}/messages", json={"content": FOLLOWUP}).status_code
            == 202
        )
        two = wait_done(http, sid)
    assert (two["status"], len(two["steps"])) == ("done", 6)
    seg = second.segments[0]
    assert two["token_ids"] == list(seg.token_ids) and two["loss_mask"] == list(seg.loss_mask)
    outputs = [[r["output"] for r in s["results"]] for s in two["steps"]]
    assert outputs == [[r.output for r in s.results] for s in second.steps]
    assert two["usage"]["generated"] == sum(seg.loss_mask)

    # the store holds it: steps, the diff, and the training export is the episode's segment
    view = get_session(store.engine, sid)
    assert view is not None and view.session.kind == "agent"
    assert [s.index for s in view.steps] == list(range(6))
    assert view.steps[2].results == [{**vars(second.steps[2].results[0])}]
    assert view.session.diff == two["diff"] and view.session.status == "done"
    (row,) = training_rows(view)
    assert row["token_exact"] and len(row["segments"]) == 1
    exported = row["segments"][0]
    assert tuple(exported["token_ids"]) == seg.token_ids  # no trailing context: it submitted
    assert tuple(exported["loss_mask"]) == seg.loss_mask
    assert exported["logprobs"] == pytest.approx(list(seg.logprobs), abs=1e-6)


def test_apply_writes_the_diff_unless_the_workspace_changed(
    serve: Any, tokenizer: Any, root: Path, sqlite_trace_store: TraceStore
) -> None:
    url = start(serve, tokenizer, root, sqlite_trace_store)
    real = root / "demo" / "stats.py"
    before = real.read_text()
    with httpx.Client(base_url=url, timeout=60) as http:
        sids = []
        for _ in range(2):
            sids.append(
                http.post("/v1/agent/sessions", json={"workspace": "demo", "task": TASK}).json()[
                    "id"
                ]
            )
            wait_done(http, sids[-1])
        assert real.read_text() == before, "a session never touches the real workspace"
        r = http.post(f"/v1/agent/sessions/{sids[0]}/apply")
        assert r.status_code == 200, r.text
        assert r.json()["applied"] == ["stats.py"]
        assert "values = sorted(values)" in real.read_text()
        # the second session started from the old file: applying it now is refused
        r = http.post(f"/v1/agent/sessions/{sids[1]}/apply")
        assert r.status_code == 409 and "changed" in r.json()["error"]["message"]
        fb = http.post("/v1/feedback", json={"session_id": sids[0], "signal": "accept"})
        assert fb.status_code == 200, fb.text
