"""The agent as a service: an HTTP session runs the training loop token for token, and
its messages, events, cancel, apply, budgets and workspace rules behave as documented."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
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
from shadowrl.sandbox import SandboxConfig, create_sandbox
from shadowrl.serve import AgentSettings
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


def test_workspaces_only_under_the_root(
    serve: Any, tokenizer: Any, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    shutil.copytree(DEMO_REPO, outside)
    (root / "link").symlink_to(outside)
    url = start(serve, tokenizer, root, None)
    with httpx.Client(base_url=url, timeout=60) as http:
        for bad in [
            str(outside),
            "link",
            "demo/../demo",
            "../elsewhere",
            "missing",
            "demo/stats.py",
        ]:
            r = http.post("/v1/agent/sessions", json={"workspace": bad, "task": TASK})
            assert r.status_code == 400, (bad, r.text)
            assert r.json()["error"]["param"] == "workspace"
        r = http.post("/v1/agent/sessions", json={"workspace": str(root / "demo"), "task": TASK})
        assert r.status_code == 201, "an absolute path inside the root is fine"
        wait_done(http, r.json()["id"])
    _, off = serve(ScriptedPolicy(tokenizer, scripted))
    r = httpx.post(f"{off}/v1/agent/sessions", json={"workspace": "demo", "task": TASK})
    assert r.status_code == 404 and "workspaces_root" in r.json()["error"]["message"]


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_git_commit_as_workspace(serve: Any, tokenizer: Any, root: Path) -> None:
    repo = root / "demo"
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "notes.txt").write_text("uncommitted, not in the snapshot\n")
    url = start(serve, tokenizer, root, None)
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post(
            "/v1/agent/sessions", json={"workspace": "demo", "commit": "nope", "task": TASK}
        )
        assert r.status_code == 400 and "no commit" in r.json()["error"]["message"]
        body = {"workspace": "demo", "commit": commit, "task": TASK}
        sid = http.post("/v1/agent/sessions", json=body).json()["id"]
        done = wait_done(http, sid)
        assert done["workspace"] == f"{repo}@{commit}"
        assert done["diff"].startswith("diff --git a/stats.py b/stats.py")
        assert http.post(f"/v1/agent/sessions/{sid}/apply").json()["applied"] == ["stats.py"]
    assert "sorted(values)" in git(repo, "diff")


class Held:
    """The scripted policy, each turn held until the test lets it go."""

    def __init__(self, tokenizer: Any) -> None:
        self.inner = ScriptedPolicy(tokenizer, scripted)
        self.release, self.waiting = threading.Event(), 0

    async def generate(self, prompt_ids: Any, sampling: Any) -> Any:
        self.waiting += 1
        while not self.release.is_set():
            await asyncio.sleep(0.01)
        return await self.inner.generate(prompt_ids, sampling)


def test_cancel_limits_and_budgets(serve: Any, tokenizer: Any, root: Path) -> None:
    held = Held(tokenizer)
    url = start(serve, tokenizer, root, None, policy=held, max_sessions=1)
    body = {"workspace": "demo", "task": TASK}
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post("/v1/agent/sessions", json={**body, "budgets": {"max_turns": 99}})
        assert r.status_code == 400 and r.json()["error"]["param"] == "budgets.max_turns"
        sid = http.post("/v1/agent/sessions", json={**body, "budgets": {"max_turns": 2}}).json()[
            "id"
        ]
        assert http.get(f"/v1/agent/sessions/{sid}").json()["budgets"]["max_turns"] == 2
        assert http.post("/v1/agent/sessions", json=body).status_code == 429  # max_sessions=1
        r = http.post(f"/v1/agent/sessions/{sid}/messages", json={"content": "more"})
        assert r.status_code == 409, "a running session takes no message"
        assert http.post(f"/v1/agent/sessions/{sid}/apply").status_code == 409
        r = http.post(f"/v1/agent/sessions/{sid}/cancel")
        assert (r.json()["status"], r.json()["end"], held.waiting) == ("cancelled", "cancelled", 1)
        assert wait_done(http, sid)["status"] == "cancelled"
        assert http.get("/v1/agent/sessions/agent-nope").status_code == 404
        held.release.set()
        sid2 = http.post("/v1/agent/sessions", json={**body, "budgets": {"max_turns": 2}}).json()[
            "id"
        ]
        two = wait_done(http, sid2)
    assert (two["status"], two["end"], len(two["steps"])) == ("done", "max_turns", 2)
    with httpx.Client(base_url=url, timeout=60) as http:  # a finished session replays, bounded
        r = http.get(f"/v1/agent/sessions/{sid2}/events", params={"after": 1})
    ids = [int(line[4:]) for line in r.text.splitlines() if line.startswith("id: ")]
    assert ids == [2, 3] and r.text.rstrip().endswith('"end": "max_turns"}')


class Gathered:
    """The real engine; the first `n` generations are held until all `n` have arrived,
    so the sessions' first turns are in the engine's batch together."""

    def __init__(self, engine: Any, n: int) -> None:
        self.engine, self.n, self.arrived, self.in_flight, self.peak = engine, n, 0, 0, 0

    async def generate(self, prompt_ids: Any, sampling: Any) -> Any:
        self.arrived += 1
        while self.arrived < self.n:
            await asyncio.sleep(0.01)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            return await self.engine.generate(prompt_ids, sampling)
        finally:
            self.in_flight -= 1


def test_concurrent_sessions_share_the_engine(
    serve: Any, tokenizer: Any, engine: Any, root: Path, sqlite_trace_store: TraceStore
) -> None:
    agent = AgentConfig(max_turns=2, max_new_tokens=8, temperature=0.0)
    spec = EpisodeSpec(agent=agent, sandbox=SandboxConfig(backend="local"))
    policy = Gathered(engine, 3)
    url = start(
        serve, tokenizer, root, sqlite_trace_store, policy=policy, spec=spec, max_sessions=3
    )
    with httpx.Client(base_url=url, timeout=120) as http:
        body = {"workspace": "demo", "task": TASK}
        sids = [http.post("/v1/agent/sessions", json=body).json()["id"] for _ in range(3)]
        views = [wait_done(http, sid) for sid in sids]
    assert policy.peak == 3, "the three sessions' turns were in flight together"
    for sid, v in zip(sids, views, strict=True):
        assert v["status"] == "done" and v["end"] == "max_turns"
        stored = get_session(sqlite_trace_store.engine, sid)
        assert stored is not None and len(stored.requests) == 2
        generated = sum(len(r.generated_ids) for r in stored.requests)
        assert generated == v["usage"]["generated"] == sum(v["loss_mask"])
