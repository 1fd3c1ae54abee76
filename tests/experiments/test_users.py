"""Simulated users: their reactions (a pure function, deterministic by seed), the grader
they judge diffs with, and whole sessions through a real server's agent service whose
store then holds `kind="agent"` sessions, token-exact in one segment, with feedback."""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.tools import ToolSet
from shadowrl.commands.main import main
from shadowrl.episode import EpisodeSpec
from shadowrl.experiments.config import UsersConfig
from shadowrl.experiments.reaction import FOLLOWUP, Outcome, followup_message, react
from shadowrl.experiments.users import Users, grade_diff
from shadowrl.models import load_tokenizer
from shadowrl.realtime.sessions import read_sessions
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve import AgentSettings
from shadowrl.serve.app import create_app
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.store.queries import get_session
from shadowrl.serve.threaded import serve_in_thread
from shadowrl.tasks.load import load_suite
from shadowrl.tasks.prepare import prepare

CACHE = Path(  # the task envs other suites build too: built once per machine
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)
SURE = {"flip": 0.0, "silent": 0.0, "followup": 0.0}
SPEC = EpisodeSpec(agent=AgentConfig(max_turns=4), sandbox=SandboxConfig(backend="local"))
FIX = {"path": "stats.py", "old": "    n = len(values)\n", "new": "    values = sorted(values)\n    n = len(values)\n"}  # fmt: skip
GOLD_DIFF_LINE = "+    values = sorted(values)"


def kinds(resolved: bool, seed: str = "s", **cfg: float) -> list[str]:
    said = react(Outcome(resolved, "", 0), random.Random(seed), UsersConfig(**cfg))
    return [b["signal"] for b in said.feedback()]


def test_reactions_follow_the_configured_probabilities_at_their_extremes() -> None:
    assert kinds(True, **SURE) == ["accept", "keep"]
    assert kinds(False, **SURE) == ["reject"]
    assert kinds(True, **(SURE | {"flip": 1.0})) == ["reject"]
    assert kinds(False, **(SURE | {"followup": 1.0})) == ["reject", "followup_dissatisfied"]
    assert kinds(True, **(SURE | {"silent": 1.0})) == []
    said = react(Outcome(True, "", 0), random.Random("s"), UsersConfig(keep_low=0.9, **SURE))
    assert said.kept is not None and 0.9 <= said.kept <= 1.0


def test_the_same_seed_gives_the_same_reactions_and_a_judge_can_plant_a_preference() -> None:
    runs = [[kinds(i % 2 == 0, f"7:u{i}") for i in range(40)] for _ in range(2)]
    assert runs[0] == runs[1]
    assert len({tuple(k) for k in runs[0]}) > 1  # and they do vary between users
    small = lambda o: o.resolved and o.diff_lines <= 2  # noqa: E731
    big = Outcome(True, "--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-0\n+1\n+2\n", 0)
    assert big.diff_lines == 3  # one removed, two added; the file headers are not lines
    said = react(big, random.Random("s"), UsersConfig(**SURE), judge=small)
    assert (said.decision, said.judged) == ("reject", False)


def test_the_followup_says_the_tests_fail_only_when_they_do() -> None:
    assert followup_message(Outcome(False, "", 0)) == FOLLOWUP
    passing = followup_message(Outcome(True, "", 0))  # rejected for a preference or a flip
    assert passing != FOLLOWUP and "tests" not in passing


def test_the_grader_passes_the_gold_fix_and_fails_no_change(tmp_path: Path) -> None:
    (task,) = load_suite("demo")
    prepared = prepare(task, CACHE)
    assert grade_diff(prepared, task.patch, SPEC).resolved
    assert not grade_diff(prepared, "", SPEC).resolved


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def fixer(prompt: str) -> str:
    """Fixes the demo task in its first turn, submits in its second."""
    turns = prompt.count("<|im_start|>assistant") - 1
    return call("edit_file", **FIX) if turns == 0 else call("submit")


def idler(prompt: str) -> str:
    """Submits without changing anything, to the request and to any follow-up."""
    return call("submit")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[[Callable[[str], str]], tuple[str, TraceStore]]]:
    tok = load_tokenizer("tiny")
    stack: list[Any] = []
    store = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    (tmp_path / "ws").mkdir()

    def start(script: Callable[[str], str]) -> tuple[str, TraceStore]:
        agent = AgentSettings(tmp_path / "ws", SPEC, max_sessions=1)  # users queue on 429
        app = create_app(
            ScriptedPolicy(tok, script), tok, "tiny", max_context_tokens=4096,
            traces=store.writer, agent=agent,
        )  # fmt: skip
        ctx = serve_in_thread(app)
        stack.append(ctx)
        return ctx.__enter__(), store

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)
    store.close()


def users(url: str, tmp_path: Path, **cfg: float) -> Users:
    return Users(
        url, load_suite("demo"), tmp_path / "ws", SPEC, UsersConfig(**(SURE | cfg)),
        CACHE,
    )  # fmt: skip


def test_a_user_who_sees_the_tests_pass_applies_and_accepts_token_exact(
    server: Any, tmp_path: Path
) -> None:
    url, store = server(fixer)
    done = asyncio.run(users(url, tmp_path).run(["u-000", "u-001"]))
    assert [o.signals for o in done] == [("accept", "keep")] * 2
    assert all(o.resolved and o.task_id == "demo-median" and o.diff_lines == 1 for o in done)
    applied = (tmp_path / "ws" / "u-000" / "stats.py").read_text()
    assert "values = sorted(values)" in applied  # `…/apply` wrote it into the user's checkout
    tok = load_tokenizer("tiny")
    schemas = ToolSet.from_names(SPEC.agent.tools).schemas()
    found = {s.id: s for s in read_sessions(store.engine, tok, schemas)}
    for o in done:
        view = get_session(store.engine, o.session_id)
        assert view is not None and view.session.kind == "agent"
        assert [f.signal for f in view.feedback] == ["accept", "keep"]
        served = httpx.get(f"{url}/v1/agent/sessions/{o.session_id}?tokens=true").json()
        assert GOLD_DIFF_LINE in served["diff"] and served["status"] == "cancelled"
        (segment,) = found[o.session_id].trajectory.segments
        assert list(segment.token_ids) == served["token_ids"]  # token for token
        assert list(segment.loss_mask) == served["loss_mask"]
        assert found[o.session_id].task_id == "demo-median"
        assert Path(found[o.session_id].workspace or "").name == o.user


def test_a_dissatisfied_user_rejects_and_follows_up_in_the_same_session(
    server: Any, tmp_path: Path
) -> None:
    url, store = server(idler)
    (o,) = asyncio.run(users(url, tmp_path, followup=1.0).run(["u-007"]))
    assert not o.resolved and o.signals == ("reject", "followup_dissatisfied")
    served = httpx.get(f"{url}/v1/agent/sessions/{o.session_id}?tokens=true").json()
    assert len(served["steps"]) == 2  # the agent answered the follow-up too
    tok = load_tokenizer("tiny")
    (s,) = read_sessions(store.engine, tok, ToolSet.from_names(SPEC.agent.tools).schemas())
    (segment,) = s.trajectory.segments  # one growing token stream, not two episodes
    assert FOLLOWUP in tok.decode(list(segment.token_ids))
    assert list(segment.token_ids) == served["token_ids"]
    assert "sorted" not in (tmp_path / "ws" / "u-007" / "stats.py").read_text()  # not applied


def test_users_simulate_prints_each_users_session_and_the_totals(
    server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = server(idler)
    argv = ["users", "simulate", "--server", url, "--suite", "demo", "--sessions", "1",
            "--prefix", "cli", "--workspaces", str(tmp_path / "ws"), "--sandbox.backend=local",
            f"--tasks.cache_dir={CACHE}", "--realtime.users.silent=0",
            "--realtime.users.flip=0", "--realtime.users.followup=0"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "cli-000 (agent-" in out and "demo-median resolved=False v0: reject" in out
    assert "1 sessions, 0 resolved; {'reject': 1}" in out
    assert main([*argv[:2], "--server", url, "--suite", "demo"]) == 2  # no workspaces root
