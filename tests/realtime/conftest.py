"""The real-time tests' shared fixtures: recorded agent sessions served over HTTP (`served.py`)
and, from elsewhere, the page tests' headless Chromium."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chromium import browser  # noqa: F401
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.episode import EpisodeSpec
from shadowrl.models import load_tokenizer
from shadowrl.serve import AgentSettings
from shadowrl.serve.app import create_app
from shadowrl.serve.auth import KeyRing, add_key
from shadowrl.serve.store import open_store
from shadowrl.serve.threaded import serve_in_thread

from .served import AGENT, DEMO, SANDBOX, Served, scripted


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("tiny")


@pytest.fixture
def served(tmp_path: Path, tokenizer: Any) -> Iterator[Served]:
    root = tmp_path / "root"
    shutil.copytree(DEMO, root / "demo")
    path, keys, ids = tmp_path / "keys.json", {}, {}
    for name, private in (("alice", False), ("quiet", True)):
        entry, keys[name] = add_key(path, name, private)
        ids[name] = entry.id
    store = open_store("traces.db", tmp_path)
    settings = AgentSettings(root, EpisodeSpec(agent=AGENT, sandbox=SANDBOX))
    app = create_app(
        ScriptedPolicy(tokenizer, scripted), tokenizer, "tiny-test", traces=store.writer,
        agent=settings, keys=KeyRing(path), max_context_tokens=4096,
    )  # fmt: skip
    try:
        with serve_in_thread(app) as url:
            yield Served(url, store, root, keys, ids)
    finally:
        store.close()
