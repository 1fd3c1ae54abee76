"""The judges besides the session's tests, and the recorded continuation in its group.

A real recorded session (served over HTTP, rejected) is branched before its edit and
continued twice by a scripted policy: a fix in four turns, a bare submit in three.
The session's own continuation (read, probe, edit, probe, submit: five turns, a fix) is
re-run from the point, checked and re-judged by the same judge. The simulated user is
the experiment's own (`experiments.reaction.react`, `measure.planted_judge`, grading
diffs with `users.grade_diff`, the grader users grade with), wrapped as the command
wraps it (`commands/branch_user.py`) in the loop's `judges.UserModel`: with a planted
limit of four turns the preference rejects the recorded fix the tests accept, so the
group's advantages (hand-computed) differ from the tests judge's. Silence is no label; a rest that does
not re-run as recorded keeps the recorded continuation out, with its reason; the
stage counts continuations without a label and drops a point left with no group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from shadowrl.agent.tools import ToolSet
from shadowrl.commands import branch_user
from shadowrl.episode import EpisodeSpec, SharedPolicy
from shadowrl.experiments.config import UsersConfig
from shadowrl.realtime import branch_stage
from shadowrl.realtime.branch import store_points
from shadowrl.realtime.config import BranchConfig
from shadowrl.realtime.context import Ctx, Deps
from shadowrl.realtime.continuations import BranchGroup, continue_point
from shadowrl.realtime.judge import RECORDED, NotJudged, Scorer, SessionTests
from shadowrl.realtime.judges import UserModel, build_judge
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.realtime.recorded import NOT_ONE_RUN, recorded
from shadowrl.realtime.rewards import RewardConfig
from shadowrl.realtime.sessions import read_sessions
from shadowrl.rl.batch import rows_from_groups
from shadowrl.serve.store.schema import TraceStep
from shadowrl.tasks import PreparedTask
from shadowrl.tasks.config import ShapingConfig

from .served import AGENT, CACHE, NEW, OLD, SANDBOX, Continuations, Served, call

TASK = "demo-median"
SCHEMAS = ToolSet.from_names(AGENT.tools).schemas()
SPEC = EpisodeSpec(agent=AGENT, sandbox=SANDBOX)


def user_model(users: UsersConfig, prepared: PreparedTask, log: Path | None = None) -> UserModel:
    """The experiment's simulated user behind the loop's seam, as `realtime` injects it;
    the session's task is the demo workspace's own tests, prepared by the grader."""
    return branch_user.user_model(
        users, RewardConfig(), SPEC, lambda task_id: prepared if task_id == TASK else None, 0,
        log,
    )  # fmt: skip


def branched(at: Served, tok: Any) -> Rebuilt:
    sid = at.session("FIX the median", task_id=TASK)
    assert at.feedback(session_id=sid, signal="reject") == 200
    (point,) = store_points(at.store.engine, tok, AGENT, SANDBOX)
    assert point.turn == 2
    return point


def continued(point: Rebuilt, tok: Any, score: Scorer) -> BranchGroup:
    edit = call("edit_file", path="stats.py", old=OLD, new=NEW)
    policy = Continuations(tok, [edit, call("submit")]).policy
    return asyncio.run(continue_point(point, policy, tok, 2, score))


def advantages(group: BranchGroup) -> list[tuple[int, float | None, float]]:
    """(turns, reward, advantage) of each member as trained: the fresh ones, the one in
    more turns first (they finish in any order), then the recorded one."""
    rows, _ = rows_from_groups([group.leaves()])
    got = [(len(t.steps), t.reward, r.advantage)
           for t, r in zip(group.trajectories, rows, strict=True)]  # fmt: skip
    return [*sorted(got[:-1], reverse=True), got[-1]]


def test_the_users_judges_score_the_recorded_continuation_with_its_siblings(
    served: Served,
    tokenizer: Any,
    tmp_path: Path,
) -> None:
    point = branched(served, tokenizer)
    log = tmp_path / branch_user.JUDGED
    try:
        task = SessionTests(CACHE, SANDBOX).task(point)
        assert isinstance(task, PreparedTask), task
        strict = UsersConfig(max_turns=4, flip=0.0, silent=0.0, followup=0.0, keep_low=1.0)
        user = user_model(strict, task, log)
        tests = SessionTests(CACHE, SANDBOX)
        by_tests = build_judge("tests", tests, None).scorer(point)
        by_pref = build_judge("preference", tests, user).scorer(point)
        by_reaction = build_judge("reaction", tests, user).scorer(point)
        assert not isinstance(by_pref, NotJudged) and not isinstance(by_reaction, NotJudged)
        assert not isinstance(by_tests, NotJudged)
        groups = [continued(point, tokenizer, s) for s in (by_tests, by_pref, by_reaction)]
    finally:
        point.close()
    for g in groups:
        assert g.recorded and g.recorded_why == "" and g.run == 2
    # (turns, reward, advantage): the 4-turn fix, the 3-turn submit, the recorded 5-turn fix
    # tests: both fixes pass; mean 2/3
    assert advantages(groups[0]) == [(4, 1.0, pytest.approx(1 / 3)), (3, 0.0, pytest.approx(-2 / 3)),
                                     (5, 1.0, pytest.approx(1 / 3))]  # fmt: skip
    # preference (at most 4 turns): the recorded fix is rejected; mean 1/3
    assert advantages(groups[1]) == [(4, 1.0, pytest.approx(2 / 3)), (3, 0.0, pytest.approx(-1 / 3)),
                                     (5, 0.0, pytest.approx(-1 / 3))]  # fmt: skip
    # reaction: accept + keep all lines = 1 + 1; reject = -1; mean 0
    assert advantages(groups[2]) == [(4, 2.0, 2.0), (3, -1.0, -1.0), (5, -1.0, -1.0)]
    # the log: each user judgement, its verdict before noise beside the reward given
    judged = [json.loads(line) for line in log.read_text().splitlines()]
    assert {j["session_id"] for j in judged} == {point.session_id}
    assert {j["turn"] for j in judged} == {point.turn}
    by_judge = judged[:3], judged[3:]  # preference's group, then reaction's
    for rows, rewards in zip(by_judge, ((1.0, 0.0, 0.0), (2.0, -1.0, -1.0)), strict=True):
        assert [j["index"] for j in rows][-1] == RECORDED
        got = sorted((j["accepted"], j["reward"]) for j in rows)
        assert got == sorted(zip((True, False, False), rewards, strict=True))
        # both fixes pass the tests; the preference rejects the recorded one for its turns
        assert sorted(j["resolved"] for j in rows) == [False, True, True]
        assert all(j["tokens"] > 0 for j in rows)


def test_silence_is_no_label_and_a_judge_needs_its_user(
    served: Served,
    tokenizer: Any,
    tmp_path: Path,
) -> None:
    point = branched(served, tokenizer)
    log = tmp_path / branch_user.JUDGED
    try:
        task = SessionTests(CACHE, SANDBOX).task(point)
        assert isinstance(task, PreparedTask), task
        silent = user_model(UsersConfig(silent=1.0), task, log)
        tests = SessionTests(CACHE, SANDBOX)
        score = build_judge("reaction", tests, silent).scorer(point)
        assert not isinstance(score, NotJudged)
        group = continued(point, tokenizer, score)
        stranger = UserModel(lambda _: None, silent.accepts, silent.react, RewardConfig())
        assert build_judge("preference", tests, stranger).scorer(point) == NotJudged(
            "the session's task is not one the simulated users bring"
        )
    finally:
        point.close()
    assert (group.run, group.trajectories, group.recorded) == (2, (), False)
    # silent: no label, but the log keeps the verdicts (the 4-turn fix passes, the submit not)
    judged = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted((j["accepted"], j["reward"]) for j in judged) == [
        (False, None),
        (True, None),
        (True, None),
    ]
    assert group.recorded_why == "the judge gave the recorded continuation no label"
    with pytest.raises(ValueError, match="needs them"):
        build_judge("reaction", tests, None)


def test_a_recorded_rest_that_does_not_rerun_as_recorded_stays_out(
    served: Served,
    tokenizer: Any,
) -> None:
    point = branched(served, tokenizer)
    sid = point.session_id
    point.close()
    engine = served.store.engine

    def set_step(index: int, **values: Any) -> None:
        with engine.begin() as conn:
            where = (TraceStep.session_id == sid) & (TraceStep.index == index)
            conn.execute(update(TraceStep).where(where).values(**values))

    def judged() -> str | float | None:
        (again,) = store_points(engine, tokenizer, AGENT, SANDBOX)
        try:
            score = SessionTests(CACHE, SANDBOX).scorer(again)
            assert not isinstance(score, NotJudged), score
            got = recorded(again, score)
        finally:
            again.close()
        return got if isinstance(got, str) else got.reward

    step = {s.index: s for s in served.view(sid).steps}
    assert judged() == 1.0, "as recorded: it joins, judged by the session's tests"
    set_step(3, workspace_hash="0" * 64)
    assert judged() == "turn 4 re-run: the workspace after the step differs from the recorded one"
    set_step(3, workspace_hash=step[3].workspace_hash)
    set_step(4, workspace_hash="0" * 64)  # the last step, a bare submit: its hash alone
    assert judged() == "turn 5 re-run: the workspace differs from the recorded one"
    set_step(4, workspace_hash=step[4].workspace_hash)
    # an output the model saw changed: its later prompts no longer re-render from it
    set_step(3, results=[{**step[3].results[0], "output": "2 3 9\n"}])
    assert judged() == NOT_ONE_RUN


def test_the_stage_counts_silent_continuations_and_drops_their_point(
    served: Served,
    tokenizer: Any,
) -> None:
    since = datetime.now(UTC)
    point = branched(served, tokenizer)
    try:
        task = SessionTests(CACHE, SANDBOX).task(point)
    finally:
        point.close()
    assert isinstance(task, PreparedTask), task
    edit = call("edit_file", path="stats.py", old=OLD, new=NEW)
    policy = Continuations(tokenizer, [edit, call("submit")]).policy

    @contextlib.asynccontextmanager
    async def open_policy(checkpoint: str) -> AsyncIterator[SharedPolicy]:
        yield SharedPolicy(policy, tokenizer, "scripted")

    unused = dict.fromkeys(["run_dir", "rt", "eval", "train", "model", "pins", "open_evaluator",
                            "pinned", "mix_tasks", "cache_dir", "workspaces"])  # fmt: skip
    deps = Deps(**unused, spec=SPEC, tokenizer=tokenizer, open_policy=open_policy)  # type: ignore[arg-type]  # fmt: skip
    ctx = Ctx(deps, served.store, None)  # type: ignore[arg-type]
    cfg = BranchConfig(enabled=True, k=2, judge="reaction")
    silent = user_model(UsersConfig(silent=1.0), task)
    brancher = branch_stage.build_brancher(cfg, CACHE, SANDBOX, ShapingConfig(), silent)
    assert brancher is not None
    sessions = list(read_sessions(served.store.engine, tokenizer, SCHEMAS, since))
    got = asyncio.run(brancher.groups(ctx, since, datetime.now(UTC), "ckpt-1", 1, sessions))
    stats = got.stats
    assert got.groups == [] and stats is not None
    assert got.sessions == sessions, "no group: the session's row is trained whole"
    assert (stats.faithful, stats.continuations, stats.unlabeled, stats.groups) == (1, 2, 2, 0)
    assert stats.unjudged_why == {branch_stage.FEW: 1} and stats.recorded == 0
