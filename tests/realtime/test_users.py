"""Simulated users: their reactions, deterministic by seed, and `shadowrl users simulate`
against a real server whose store then holds their sessions and feedback."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowrl.commands.main import main
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.engine import Engine
from shadowrl.models import tiny_model
from shadowrl.realtime.config import UsersConfig
from shadowrl.realtime.users import reactions
from shadowrl.serve.app import create_app
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.store.queries import get_session
from shadowrl.serve.threaded import serve_in_thread


def kinds(accept: bool, seed: str = "s", **cfg: float) -> list[str]:
    return [b["signal"] for b in reactions(random.Random(seed), accept, UsersConfig(**cfg))]


def test_reactions_follow_the_configured_probabilities_at_their_extremes() -> None:
    sure = {"flip": 0.0, "silent": 0.0, "followup": 0.0}
    assert kinds(True, **sure) == ["accept", "keep"]
    assert kinds(False, **sure) == ["reject"]
    assert kinds(True, **(sure | {"flip": 1.0})) == ["reject"]
    assert kinds(False, **(sure | {"followup": 1.0})) == ["reject", "followup_dissatisfied"]
    assert kinds(True, **(sure | {"silent": 1.0})) == []
    body = reactions(random.Random("s"), True, UsersConfig(keep_low=0.9, flip=0, silent=0))
    assert 0.9 <= body[1]["value"] <= 1.0


def test_the_same_seed_gives_the_same_reactions() -> None:
    runs = [[kinds(i % 2 == 0, f"7:u{i}") for i in range(40)] for _ in range(2)]
    assert runs[0] == runs[1]
    assert len({tuple(k) for k in runs[0]}) > 1  # and they do vary between users


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, TraceStore]]:
    model, tok = tiny_model(seed=0)
    store = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    cfg = EngineConfig(max_batch=4, max_seq_len=2048, initial_kv_len=256)
    with Engine(model, tok, cfg) as engine:
        app = create_app(engine, tok, "tiny", max_context_tokens=2048, traces=store.writer)
        with serve_in_thread(app) as url:
            yield url, store
    store.close()


@pytest.mark.slow  # a real engine behind a real server: ~20-60 s
def test_users_simulate_records_sessions_and_their_feedback(
    served: tuple[str, TraceStore], capsys: pytest.CaptureFixture[str]
) -> None:
    url, store = served
    argv = ["users", "simulate", "--server", url, "--suite", "demo", "--sessions", "2",
            "--prefix", "t", "--model.path=tiny", "--agent.max_turns=1",
            "--agent.max_new_tokens=16", "--realtime.users.silent=0"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for sid in ("t-000", "t-001"):
        view = get_session(store.engine, sid)
        assert view is not None and view.requests  # the agent's turns, under the user's id
        said = [f.signal for f in view.feedback]
        assert said and said[0] in ("accept", "reject")
        assert f"{sid}: demo" in printed and ", ".join(said) in printed
