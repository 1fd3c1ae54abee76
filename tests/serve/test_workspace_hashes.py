"""The trace store keeps the content hash of an agent session's starting workspace and of
the workspace after every step (SQLite and PostgreSQL), computed as `ContentHasher`
defines it: a step that only reads or runs keeps the hash, an edit changes it to the
hash of the edited tree, bytecode caches never count."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_agent_sessions import SPEC, TASK, call, wait_done

from required import require
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.sandbox import create_sandbox
from shadowrl.sandbox.overlay import unavailable_reason
from shadowrl.serve import AgentSettings
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.queries import get_session
from shadowrl.serve.workspaces import ContentHasher

DEMO = Path(__file__).parents[2] / "src" / "shadowrl" / "data" / "demo" / "repo"
OLD, NEW = (
    "    n = len(values)\n    mid",
    "    values = sorted(values)\n    n = len(values)\n    mid",
)
REPLIES = [
    call("read_file", path="stats.py"),
    call("run", command="python -c 'from stats import median; print(median([3, 1, 2]))'"),
    call("edit_file", path="stats.py", old=OLD, new=NEW),
    call("submit"),
]


def test_every_step_records_the_workspace_hash(
    serve: Any, tokenizer: Any, tmp_path: Path, open_store: Callable[..., TraceStore]
) -> None:
    shutil.copytree(DEMO, tmp_path / "root" / "demo")
    store = open_store()
    policy = ScriptedPolicy(tokenizer, lambda p: REPLIES[p.count("<|im_start|>assistant") - 1])
    settings = AgentSettings(tmp_path / "root", SPEC)
    _, url = serve(policy, traces=store.writer, agent=settings)
    with httpx.Client(base_url=url, timeout=60) as http:
        sid = http.post("/v1/agent/sessions", json={"workspace": "demo", "task": TASK}).json()["id"]
        assert wait_done(http, sid)["end"] == "submitted"
    view = get_session(store.engine, sid)
    assert view is not None
    start = ContentHasher(DEMO).start()
    assert view.session.workspace_hash == start
    edited = tmp_path / "edited"
    shutil.copytree(DEMO, edited)
    (edited / "stats.py").write_text((DEMO / "stats.py").read_text().replace(OLD, NEW))
    after = ContentHasher(edited).start()
    hashes = [s.workspace_hash for s in sorted(view.steps, key=lambda s: s.index)]
    # read and run (which left a __pycache__ behind) keep it; the edit moves it; submit keeps it
    assert hashes == [start, start, after, after] and after != start


@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_the_hash_sees_contents_additions_and_deletions_but_not_caches(
    tmp_path: Path, backend: str
) -> None:
    if backend == "overlay":
        require(unavailable_reason(), "overlay sandbox")
    shutil.copytree(DEMO, tmp_path / "ws")
    hasher = ContentHasher(tmp_path / "ws")
    with create_sandbox(tmp_path / "ws", backend=backend) as box:  # type: ignore[attr-defined]
        assert hasher.of(box) == hasher.start()
        box.write_file("__pycache__/stats.cpython-311.pyc", b"\0bytecode")
        box.write_file("pkg/mod.pyc", b"\0bytecode")
        assert hasher.of(box) == hasher.start()
        seen = {hasher.start()}
        for change in ("echo x >> stats.py", "echo y > new.txt", "rm test_stats.py"):
            assert box.exec(change).exit_code == 0
            seen.add(hasher.of(box))
        assert len(seen) == 4, "each change gives a new hash"
        box.exec("rm new.txt && sed -i '$ d' stats.py")
        box.write_file("test_stats.py", (DEMO / "test_stats.py").read_bytes())
        assert hasher.of(box) == hasher.start(), "undone changes hash as the start"
