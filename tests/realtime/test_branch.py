"""Branch points of real recorded sessions: agent sessions served over HTTP (a scripted
policy, the local sandbox, a SQLite trace store) with feedback posted to `/v1/feedback`.
The turn picked follows the rule; a faithful point rebuilds to the recorded tokens and
workspace; a nondeterministic step, a planted output or hash mismatch and a changed
plain-directory workspace are each caught, skipped and counted; a `@commit` workspace
rebuilds exactly whatever the directory holds now; a private key's session never gives
a point. Continuations from a point carry the recorded prefix token for token and
masked, are judged by the workspace's pristine tests and credited against their
siblings (hand-computed); the stage behind `Deps.brancher` does all of it on the
serving checkpoint and counts it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import subprocess
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from shadowrl.episode import EpisodeSpec, SharedPolicy
from shadowrl.realtime import branch_stage
from shadowrl.realtime.branch import BranchCounts, BranchPoint, NoPoint, pick, store_points
from shadowrl.realtime.config import BranchConfig
from shadowrl.realtime.context import BranchStats, Ctx, Deps
from shadowrl.realtime.continuations import continue_point
from shadowrl.realtime.judge import NotJudged, SessionTests
from shadowrl.realtime.rebuild import (
    Rebuilt,
    Unfaithful,
    check_prefix,
    normalise,
    rebuild,
    request_chain,
)
from shadowrl.realtime.sessions import read_sessions
from shadowrl.rl.batch import rows_from_groups
from shadowrl.sandbox import create_sandbox
from shadowrl.serve.store.queries import SessionView
from shadowrl.serve.store.schema import Feedback, TraceStep
from shadowrl.serve.workspaces import ContentHasher
from shadowrl.tasks.config import ShapingConfig

from .served import (
    AGENT,
    CACHE,
    DEMO,
    NEW,
    OLD,
    SANDBOX,
    SCHEMAS,
    Continuations,
    Served,
    call,
)


def rebuilt(served: Served, sid: str, tokenizer: Any, turn: int) -> Rebuilt | Unfaithful:
    return rebuild(served.view(sid), turn, tokenizer, AGENT, SANDBOX)


def test_normalise_hides_timings_temp_paths_and_addresses_only() -> None:
    a = "/tmp/shadowrl-local-ab12/workspace 2 0.000123s\nRan 3 tests in 0.004s <obj at 0x7f3a9c>"
    b = "/tmp/shadowrl-local-zz99/workspace 2 0.5s\nRan 3 tests in 12 ms <obj at 0x7fffff>"
    assert normalise(a) == normalise(b) == "<tmp> 2 <t>\nRan 3 tests in <t> <obj at 0x<addr>>"
    assert normalise("Ran 3 tests") != normalise("Ran 4 tests")
    assert normalise("exit code 1") != normalise("exit code 0")


def test_the_turn_is_the_first_edit_the_signal_concerns(served: Served, tokenizer: Any) -> None:
    sid = served.session("FIX the median")
    view = served.view(sid)
    assert pick(view, 0.5) is None, "no feedback, no branch point"

    def with_signals(*fb: Feedback) -> SessionView:
        return dataclasses.replace(view, feedback=fb)

    def on(k: int, signal: str = "thumbs_down") -> Feedback:
        return Feedback(signal=signal, response_id=f"{sid}-t{k}")

    assert pick(with_signals(Feedback(signal="reject")), 0.5) == BranchPoint(sid, 2, "reject", True)
    assert pick(with_signals(Feedback(signal="keep", value=0.9)), 0.5) is None, "kept: fine"
    assert pick(with_signals(Feedback(signal="keep", value=0.2)), 0.5) == BranchPoint(
        sid, 2, "keep", True
    )
    assert pick(with_signals(on(3)), 0.5) == BranchPoint(sid, 2, "thumbs_down", True)
    # a reply before any edit: nothing changed yet, so that reply itself is redone
    assert pick(with_signals(on(1)), 0.5) == BranchPoint(sid, 1, "thumbs_down", False)
    assert pick(with_signals(on(3), on(0)), 0.5) == BranchPoint(sid, 0, "thumbs_down", False)
    assert pick(with_signals(on(1, "thumbs_up")), 0.5) is None
    # served at temperature 1, top-p 1: a cycle training at another temperature gets no point
    reject = with_signals(Feedback(signal="reject"))
    assert pick(reject, 0.5, temperature=1.0) == BranchPoint(sid, 2, "reject", True)
    assert pick(reject, 0.5, temperature=0.6) == NoPoint(sid, "served at another temperature")


def test_a_rejected_session_rebuilds_faithfully_before_its_edit(
    served: Served, tokenizer: Any
) -> None:
    sid = served.session("FIX the median")
    assert served.feedback(session_id=sid, signal="reject") == 200
    counts = BranchCounts()
    engine = served.store.engine
    (point,) = list(store_points(engine, tokenizer, AGENT, SANDBOX, counts=counts))
    try:
        assert (point.session_id, point.turn) == (sid, 2)
        chain = request_chain(served.view(sid))
        # the recorded prefix, token-exact: the tokens the served model saw at turn 2
        assert point.checkpoint.state.tokens.ids == list(chain[2].prompt_ids)
        assert [s.tool_calls[0].name for s in point.checkpoint.state.steps] == ["read_file", "run"]
        fork = point.checkpoint.fork()
        try:
            assert b"sorted(values)" not in fork.read_file("stats.py"), "before the edit"
        finally:
            fork.close()
    finally:
        point.close()
    assert (counts.negative, counts.points, counts.faithful, counts.unfaithful) == (1, 1, 1, 0)
    start = rebuilt(served, sid, tokenizer, 0)  # before the first turn: nothing re-run
    assert isinstance(start, Rebuilt)
    start.close()
    assert start.checkpoint.state.tokens.ids == list(chain[0].prompt_ids)


def test_unfaithful_points_are_caught_skipped_and_counted(served: Served, tokenizer: Any) -> None:
    noisy = served.session("NOISY: fix the median")
    fix = served.session("FIX the median")
    for sid in (noisy, fix):
        assert served.feedback(session_id=sid, signal="revert") == 200
    counts = BranchCounts()
    engine = served.store.engine
    (point,) = store_points(engine, tokenizer, AGENT, SANDBOX, counts=counts)
    assert (point.session_id, point.turn) == (fix, 2)
    point.close()
    assert (counts.points, counts.faithful, counts.unfaithful) == (2, 1, 1)
    assert counts.unfaithful_why == {"run (call_0_0): output differs from the recorded one": 1}

    def set_step(**values: Any) -> None:
        with engine.begin() as conn:
            where = (TraceStep.session_id == fix) & (TraceStep.index == 1)
            conn.execute(update(TraceStep).where(where).values(**values))

    def unfaithful() -> Unfaithful:
        got = rebuilt(served, fix, tokenizer, 2)
        if isinstance(got, Rebuilt):
            got.close()
        assert isinstance(got, Unfaithful), got
        return got

    step1 = next(s for s in served.view(fix).steps if s.index == 1)
    good = {"workspace_hash": step1.workspace_hash, "results": step1.results}
    set_step(workspace_hash="0" * 64)
    bad = unfaithful()
    assert (bad.step, bad.reason) == (
        1,
        "the workspace after the step differs from the recorded one",
    )
    # a planted output is what the model saw, too: the recorded prompts no longer render
    planted = [{**step1.results[0], "output": "2 3 9\n"}]
    set_step(**{**good, "results": planted})
    assert unfaithful().reason.startswith("its messages do not re-render the recorded prompts")
    # ... and the re-run itself tells it apart
    steps = sorted(served.view(fix).steps, key=lambda r: r.index)[:2]
    copy = served.root.parent / "copy"
    shutil.copytree(DEMO, copy)
    with create_sandbox(copy, backend="local") as box:  # type: ignore[attr-defined]
        got = check_prefix(box, ContentHasher(copy), steps, AGENT)
    assert got == (1, "run (call_1_0): output differs from the recorded one")
    set_step(**{**good, "workspace_hash": None})
    assert unfaithful().reason == "the step was recorded without a workspace hash"
    set_step(**good)
    again = rebuilt(served, fix, tokenizer, 2)
    assert isinstance(again, Rebuilt), "the record restored, the point is faithful again"
    again.close()
    # a plain directory rebuilds as it is now: changed since, it is not the session's
    (served.root / "demo" / "notes.txt").write_text("the user's own file\n")
    bad = unfaithful()
    assert (
        bad.step == -1 and bad.reason == "the workspace differs from the one the session started on"
    )


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_commit_workspace_rebuilds_whatever_the_directory_holds_now(
    served: Served, tokenizer: Any
) -> None:
    repo = served.root / "demo"
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    sid = served.session("FIX the median", commit=git(repo, "rev-parse", "HEAD"))
    (repo / "stats.py").write_text("# rewritten since\n")
    got = rebuilt(served, sid, tokenizer, 2)
    assert isinstance(got, Rebuilt), got
    got.close()


def test_a_private_keys_session_is_never_a_branch_point(served: Served, tokenizer: Any) -> None:
    quiet = served.session("FIX the median", key="quiet")
    assert served.feedback(key="quiet", session_id=quiet, signal="reject") == 404
    mine = served.session("FIX the median")
    assert served.feedback(session_id=mine, signal="reject") == 200
    counts = BranchCounts()
    engine = served.store.engine
    points = list(store_points(engine, tokenizer, AGENT, SANDBOX, counts=counts))
    assert [p.session_id for p in points] == [mine] and counts.negative == 1
    for p in points:
        p.close()
    # a key made private after it was recorded: its sessions are refused too
    private = {served.ids["alice"]}
    assert pick(served.view(mine), 0.5, private) == NoPoint(mine, "private")
    assert not list(store_points(engine, tokenizer, AGENT, SANDBOX, private=private))


def test_continuations_are_masked_token_exact_judged_and_credited(
    served: Served, tokenizer: Any
) -> None:
    sid = served.session("FIX the median")
    assert served.feedback(session_id=sid, signal="reject") == 200
    (point,) = store_points(served.store.engine, tokenizer, AGENT, SANDBOX)
    edit = call("edit_file", path="stats.py", old=OLD, new=NEW)
    # a test rewritten to pass: the grader restores the pristine one before it runs
    hack = call("write_file", path="test_stats.py", content="def test_ok():\n    pass\n")
    policy = Continuations(tokenizer, [edit, call("submit"), hack]).policy
    try:
        score = SessionTests(CACHE, SANDBOX).scorer(point)
        assert not isinstance(score, NotJudged), score
        # the session's tests as the grader found them on the pristine workspace
        task = score.args[0].task  # type: ignore[attr-defined]
        assert task.FAIL_TO_PASS == ("test_stats.py::TestStats::test_median_unsorted",)
        assert len(task.PASS_TO_PASS) == 2
        group = asyncio.run(continue_point(point, policy, tokenizer, 3, score))
    finally:
        point.close()
    assert group.contrast
    fresh = sorted(float(t.reward or 0.0) for t in group.fresh)
    assert fresh == [0.0, 0.0, 1.0], "only the fix passes the session's tests"
    # the session's own continuation (its edit) re-judged by the same tests: a member too
    assert group.recorded and group.trajectories[-1].reward == 1.0
    prompt = request_chain(served.view(sid))[2].prompt_ids
    p = len(prompt)
    assert group.prefix == p
    for traj in group.trajectories:
        (seg,) = traj.segments
        assert seg.token_ids[:p] == prompt, "the recorded prefix, token for token"
        assert not any(seg.loss_mask[:p]), "context only"
        assert seg.loss_mask[p], "the fresh reply is trained"
    rows, _ = rows_from_groups([group.leaves()])
    # hand-computed: mean reward (0 + 0 + 1 + 1)/4; each branch's own tokens get r − 1/2
    pairs = sorted((t.reward, r.advantage) for r, t in zip(rows, group.trajectories, strict=True))
    assert [r for r, _ in pairs] == [0.0, 0.0, 1.0, 1.0]
    assert [a for _, a in pairs] == pytest.approx([-0.5, -0.5, 0.5, 0.5])
    assert all(not any(r.segment.loss_mask[:p]) for r in rows)


def test_a_workspace_without_tests_or_with_broken_ones_is_not_judged(
    served: Served, tokenizer: Any
) -> None:
    for name in ("broken", "bare"):
        shutil.copytree(DEMO, served.root / name)
    # a collection error: no verdict on anything
    (served.root / "broken" / "test_stats.py").write_text("import no_such_module\n")
    (served.root / "bare" / "test_stats.py").unlink()
    broken = served.session("FIX the median", workspace="broken")
    bare = served.session("FIX the median", workspace="bare")
    for sid in (broken, bare):
        assert served.feedback(session_id=sid, signal="reject") == 200
    judge, why = SessionTests(CACHE, SANDBOX), {}
    for point in store_points(served.store.engine, tokenizer, AGENT, SANDBOX):
        try:
            why[point.session_id] = judge.scorer(point)
        finally:
            point.close()
    assert why == {
        bare: NotJudged("the workspace has no tests"),
        broken: NotJudged("the workspace's tests do not run as they are (collection_error)"),
    }


def test_the_stage_continues_the_cycles_points_on_the_serving_checkpoint(
    served: Served, tokenizer: Any
) -> None:
    since = datetime.now(UTC)
    fix, noisy = served.session("FIX the median"), served.session("NOISY: fix the median")
    for sid in (fix, noisy):
        assert served.feedback(session_id=sid, signal="reject") == 200
    edit = call("edit_file", path="stats.py", old=OLD, new=NEW)
    policy = Continuations(tokenizer, [edit, call("submit")]).policy
    opened: list[str] = []

    @contextlib.asynccontextmanager
    async def open_policy(checkpoint: str) -> AsyncIterator[SharedPolicy]:
        opened.append(checkpoint)
        yield SharedPolicy(policy, tokenizer, "scripted")

    unused = dict.fromkeys(["run_dir", "rt", "eval", "train", "model", "pins", "open_evaluator",
                            "pinned", "mix_tasks", "cache_dir", "workspaces"])  # fmt: skip
    deps = Deps(**unused, spec=EpisodeSpec(agent=AGENT, sandbox=SANDBOX), tokenizer=tokenizer,
                open_policy=open_policy)  # type: ignore[arg-type]  # fmt: skip
    ctx = Ctx(deps, served.store, None)  # type: ignore[arg-type]
    grading = (CACHE, SANDBOX, ShapingConfig())
    assert branch_stage.build_brancher(BranchConfig(), *grading) is None, (
        "off: no brancher, nothing runs"
    )
    brancher = branch_stage.build_brancher(BranchConfig(enabled=True, k=2), *grading)
    assert brancher is not None
    until = datetime.now(UTC)
    sessions = list(read_sessions(served.store.engine, tokenizer, SCHEMAS, since, until))
    got = asyncio.run(brancher.groups(ctx, since, until, "ckpt-3", 3, sessions))
    groups, stats = got.groups, got.stats
    assert opened == ["ckpt-3"]
    why = {"run (call_0_0): output differs from the recorded one": 1}
    assert stats == BranchStats(negative=2, points=2, faithful=1, unfaithful=1, unjudged=0,
                                continuations=2, groups=1, with_contrast=1, unfaithful_why=why,
                                recorded=1, generated=stats.generated)  # fmt: skip
    (group,) = groups
    assert stats.generated == sum(t.num_generated for t in group[:2]) > 0, "the fresh tokens"
    # the two fresh ones, then the session's own edit, re-judged: it passes too
    assert [t.reward for t in group][2] == 1.0
    assert sorted(t.reward for t in group[:2]) == [0.0, 1.0]
    for traj in group[:2]:  # stamped with the serving checkpoint's registry version
        (seg,) = traj.segments
        assert {v for v, m in zip(seg.versions, seg.loss_mask, strict=True) if m} == {3}
    (seg,) = group[2].segments
    assert 3 not in seg.versions, "the recorded continuation keeps its recorded versions"
    rows, _ = rows_from_groups([group])
    assert sorted(r.advantage for r in rows) == pytest.approx([-2 / 3, 1 / 3, 1 / 3])
    # each token trained once: the session's row keeps its tokens before the turn only
    before = {s.id: s for s in sessions}
    after = {s.id: s for s in got.sessions}
    assert after[noisy] == before[noisy], "no group (unfaithful): its row is whole"
    (whole,) = before[fix].trajectory.segments
    (cut,) = after[fix].trajectory.segments
    p = len(request_chain(served.view(fix))[2].prompt_ids)
    assert cut.token_ids == whole.token_ids and any(cut.loss_mask[:p])
    assert cut.loss_mask == whole.loss_mask[:p] + (False,) * (len(whole.token_ids) - p)
    assert [a or b for a, b in zip(cut.loss_mask, seg.loss_mask, strict=True)] == list(
        whole.loss_mask
    ), "together, the session's row and its group member train every generated token"
    # the same sessions, their key private now: never a branch point, nothing continued
    private = dataclasses.replace(deps, private_keys=frozenset({served.ids["alice"]}))
    ctx = Ctx(private, served.store, None)  # type: ignore[arg-type]
    got = asyncio.run(brancher.groups(ctx, since, until, "ckpt-3", 3, sessions))
    assert got.groups == [] and got.stats is not None
    assert (got.stats.negative, got.stats.points) == (0, 0) and got.sessions == sessions
    assert opened == ["ckpt-3"], "no policy opened for nothing"
