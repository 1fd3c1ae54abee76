"""The stages of one real-time cycle, each a function of the shared context and the state.

    collect ─► reward ─► train ─► [panel] ─► eval ─► gate ─► deploy | reject ─► watch (─► roll back)

Every stage reads what earlier stages left in `CycleState.out` and adds its own
result there; the driver (`cycle.py`) saves the state after each stage, so a stage is
the unit of resume and must be safe to run again from its start: collect runs only the
sessions still missing, train re-saves the same candidate path, eval and deploy check
what is already on disk and in the registry.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from shadowrl.agent.tools import ToolSet
from shadowrl.eval import gate as paired_gate
from shadowrl.eval.report import write_report
from shadowrl.eval.result import EvalResult
from shadowrl.realtime import checks
from shadowrl.realtime.context import Ctx, CycleState, now
from shadowrl.realtime.control import permuted_rewards
from shadowrl.realtime.learning import (
    outcome_recorder,
    panel_stage,
    preference_counts,
    read_outcomes,
)
from shadowrl.realtime.mix import mix_plan, rollouts
from shadowrl.realtime.preference import Preference, Work
from shadowrl.realtime.reaction import Outcome
from shadowrl.realtime.rewards import DECISIONS, Reward, session_reward, summarize
from shadowrl.realtime.rows import cohort_groups
from shadowrl.realtime.sessions import ProductionSession, read_sessions
from shadowrl.realtime.training import Arm, train_arm
from shadowrl.realtime.users import Users, user_id
from shadowrl.serve.store import CheckpointRecord, CheckpointUpdate, registry

STAGES = ("collect", "reward", "train", "panel", "eval", "gate", "deploy", "watch")


def schemas(ctx: Ctx) -> list[dict[str, Any]]:
    return ToolSet.from_names(ctx.deps.spec.agent.tools).schemas()


def sessions_between(ctx: Ctx, since: str, until: str | None) -> list[ProductionSession]:
    end = None if until is None else datetime.fromisoformat(until)
    found = read_sessions(
        ctx.store.engine, ctx.deps.tokenizer, schemas(ctx), datetime.fromisoformat(since), end,
        ctx.deps.private_keys,
    )  # fmt: skip
    return list(found)


# ----------------------------------------------------------------- collect


async def gather_sessions(ctx: Ctx, ids: list[str], since: str) -> None:
    """Simulated users run the ids not in the store yet; real users are waited for."""
    deps = ctx.deps
    if deps.user_tasks is None:
        deadline = time.monotonic() + deps.rt.collect_timeout_s
        while time.monotonic() < deadline:
            got = [s for s in sessions_between(ctx, since, None) if has_feedback(s)]
            if len(got) >= len(ids):
                return
            await asyncio.sleep(5.0)
        return
    have = {Path(s.workspace).name for s in sessions_between(ctx, since, None) if s.workspace}
    pref = Preference.of(deps.rt.users)

    def judge(o: Outcome) -> bool:  # the tests, and the planted preference
        return deps.judge(o) and not pref.broken(Work(o.resolved, o.diff_lines, o.turns, o.tokens))

    users = Users(
        ctx.server.url, deps.user_tasks, deps.workspaces, deps.spec, deps.rt.users,
        deps.cache_dir, judge,
    )  # fmt: skip
    await users.run([u for u in ids if u not in have], outcome_recorder(ctx.root))


def has_feedback(s: ProductionSession) -> bool:
    return any(sig.kind != "silent" for sig in s.signals)


async def collect(ctx: Ctx, st: CycleState) -> None:
    ids = [user_id(st.cycle, i) for i in range(ctx.deps.rt.sessions)]
    await gather_sessions(ctx, ids, st.since)
    st.out["collect"] = {"until": now().isoformat(), "live": live_path(ctx)}


def live_path(ctx: Ctx) -> str:
    live = registry.live(ctx.store.engine)
    if live is None:
        raise RuntimeError("the registry has no deployed checkpoint")
    return live.path


# ------------------------------------------------------------------ reward


def cycle_sessions(ctx: Ctx, st: CycleState) -> list[ProductionSession]:
    return sessions_between(ctx, st.since, st.out["collect"]["until"])


async def reward(ctx: Ctx, st: CycleState) -> None:
    sessions = cycle_sessions(ctx, st)
    cfg = ctx.deps.rt.rewards
    rewards = [session_reward(s.signals, s.conduct, cfg) for s in sessions]
    summary = summarize([s.signals for s in sessions], [s.conduct for s in sessions], rewards)
    st.out["reward"] = {
        **dataclasses.asdict(summary),
        "with_feedback": sum(has_feedback(s) for s in sessions),
        "preference": None if not (pref := Preference.of(ctx.deps.rt.users)).planted
        else preference_counts(read_outcomes(ctx.root), [s.id for s in sessions], pref),
    }  # fmt: skip


# ------------------------------------------------------------------- train


def train_candidate(
    ctx: Ctx,
    st: CycleState,
    sessions: list[ProductionSession],
    rewards: list[Reward],
    mixed: list[Any],
) -> dict[str, Any]:
    """The candidate, registered; and the permuted-feedback control when configured (both
    with the same `mixed` rollout groups)."""
    deps = ctx.deps
    live = registry.live(ctx.store.engine)
    assert live is not None
    arm = Arm(
        live.path, live.version, registry.next_version(ctx.store.engine), deps.model,
        deps.train, deps.rt.rows, deps.rt.train_steps,
    )  # fmt: skip
    cycle_dir = ctx.root / f"cycle-{st.cycle:03d}"
    out = train_arm(arm, sessions, rewards, cycle_dir / "candidate", mixed)
    path = out["candidate"]
    if path is not None and registry.get(ctx.store.engine, path) is None:
        record = CheckpointRecord(path, arm.version, "candidate", parent=live.path, cycle=st.cycle)
        ctx.store.writer.submit(record).result()
    if deps.rt.control and path is not None:
        shuffled = permuted_rewards(sessions, rewards, deps.rt.rows.cohort, seed=st.cycle)
        out["control"] = train_arm(arm, sessions, shuffled, cycle_dir / "control", mixed)
    return out


async def train(ctx: Ctx, st: CycleState) -> None:
    deps = ctx.deps
    live = registry.live(ctx.store.engine)
    assert live is not None
    sessions = await asyncio.to_thread(cycle_sessions, ctx, st)
    rewards = [session_reward(s.signals, s.conduct, deps.rt.rewards) for s in sessions]
    # how many production rows the cycle trains on: what `realtime.mix` is a ratio of
    _, counts = cohort_groups(sessions, rewards, trainer_version=live.version, cfg=deps.rt.rows)
    trained = counts.trained
    plan = mix_plan(trained, deps.rt.mix, deps.train.group_size, deps.mix_tasks,
                    seed=f"{deps.seed}:{st.cycle}")  # fmt: skip
    mixed, spoiled = await rollouts(
        deps.open_policy, live.path, live.version, plan, group_size=deps.train.group_size,
        spec=deps.spec, cache_dir=deps.cache_dir,
    )  # fmt: skip
    out = await asyncio.to_thread(train_candidate, ctx, st, sessions, rewards, mixed)
    out["mix"] = {"tasks": [t.instance_id for t in plan], "groups": len(mixed),
                  "episodes": sum(map(len, mixed)), "spoiled": spoiled}  # fmt: skip
    st.out["train"] = out


# -------------------------------------------------------------------- eval


async def eval_policy(ctx: Ctx, path: str, out: Path) -> EvalResult:
    """The pinned suite on `path`, through the serving harness; reused if already on disk."""
    if (out / "eval.json").exists():
        return EvalResult.load(out / "eval.json")
    deps = ctx.deps
    async with deps.open_evaluator(path) as run_eval:
        result = await run_eval(
            deps.pinned, settings=deps.eval, cache_dir=str(deps.cache_dir),
            config_pins=deps.pins, seed=deps.seed, suite=deps.rt.suite,
        )  # fmt: skip
    write_report(result, out)
    return result


def incumbent_dir(ctx: Ctx, version: int) -> Path:
    return ctx.root / "evals" / f"v{version:04d}"


async def evaluate_stage(ctx: Ctx, st: CycleState) -> None:
    cand = st.out["train"]["candidate"]
    if cand is None:
        st.out["eval"] = None
        return
    live = registry.live(ctx.store.engine)
    assert live is not None
    inc_dir = incumbent_dir(ctx, live.version)
    cand_dir = ctx.root / f"cycle-{st.cycle:03d}" / "eval"
    await eval_policy(ctx, live.path, inc_dir)
    await eval_policy(ctx, cand, cand_dir)
    st.out["eval"] = {"incumbent": str(inc_dir), "candidate": str(cand_dir)}


# -------------------------------------------------------------------- gate


def decide(ctx: Ctx, st: CycleState) -> dict[str, Any]:
    deps, ev = ctx.deps, ctx.deps.eval
    cand = EvalResult.load(st.out["eval"]["candidate"])
    inc = EvalResult.load(st.out["eval"]["incumbent"])
    try:
        d = paired_gate.gate(
            cand, inc, margin=ev.margin, alpha=ev.alpha, test=ev.test,
            resamples=ev.resamples, seed=deps.seed,
        )  # fmt: skip
    except paired_gate.PinMismatch as e:
        return {"promote": False, "caught_by": "pins", "reason": f"reject: {e}"}
    mde = checks.min_detectable_drop(
        d.incumbent_rate, checks.episodes(inc), alpha=ev.alpha, power=deps.rt.power
    )
    underpowered = mde > ev.margin
    mtp = st.out["train"].get("mtp")
    fired = checks.alarms(
        cand, inc, st.out["train"]["kl"],
        max_malformed_increase=deps.rt.max_malformed_increase,
        max_no_edit_increase=deps.rt.max_no_edit_increase,
        max_clarifying_increase=deps.rt.max_clarifying_increase, max_kl=deps.rt.max_kl,
        alpha=deps.rt.alarm_alpha, mtp=None if mtp is None else (mtp["parent"], mtp["candidate"]),
        max_mtp_drop=deps.rt.max_mtp_acceptance_drop,
    )  # fmt: skip
    power_note = (
        f"smallest detectable drop {mde:.3f}" if math.isfinite(mde)
        else "not even a collapse to 0 is detectable"
    )  # fmt: skip
    if not d.promote:
        caught, reason = "gate", d.reason
    elif fired:
        caught, reason = f"alarm:{fired[0].name}", "reject: alarm " + "; ".join(map(str, fired))
    elif underpowered and deps.rt.require_power:
        caught = "power"
        reason = f"reject: the pinned suite is underpowered ({power_note} > margin {ev.margin})"
    else:
        caught, reason = (
            None,
            d.reason + ("" if not underpowered else f" (UNDERPOWERED: {power_note})"),
        )
    return {
        "promote": caught is None,
        "caught_by": caught,
        "reason": reason,
        "paired": d.model_dump(),
        "min_detectable_drop": mde if math.isfinite(mde) else None,
        "underpowered": underpowered,
        "alarms": [dataclasses.asdict(a) for a in fired],
        "rates": {  # counts and one-sided Fisher p of each behaviour, fired or not
            b: dataclasses.asdict(checks.rate_test(cand, inc, b)) for b in checks.BEHAVIOURS
        },
    }


async def gate(ctx: Ctx, st: CycleState) -> None:
    st.out["gate"] = None if st.out["eval"] is None else decide(ctx, st)


# ------------------------------------------------------------------ deploy


async def deploy(ctx: Ctx, st: CycleState) -> None:
    g, train_out = st.out["gate"], st.out["train"]
    if g is None:
        st.out["deploy"] = {"deployed": False, "reason": train_out["reason"]}
        return
    path, version = train_out["candidate"], train_out["version"]
    current = registry.get(ctx.store.engine, path)
    assert current is not None
    if g["promote"]:
        if current.status != "deployed":
            await asyncio.to_thread(ctx.server.load_weights, path, version)
            await ctx.store.writer.write(CheckpointUpdate(path, "deployed", g, g["reason"]))
    elif current.status == "candidate":
        await ctx.store.writer.write(CheckpointUpdate(path, "rejected", g, g["reason"]))
    st.out["deploy"] = {"deployed": bool(g["promote"]), "reason": g["reason"]}


# ------------------------------------------------------------------- watch


def live_counts(sessions: list[ProductionSession]) -> checks.LiveCounts:
    last = [
        next((x.kind for x in reversed(s.signals) if x.kind in DECISIONS), None) for s in sessions
    ]
    return checks.LiveCounts(
        sessions=len(sessions),
        accepted=last.count("accept"),
        decided=sum(x is not None for x in last),
        broken=sum(s.conduct.broken_end for s in sessions),
        clarifying=sum(s.conduct.clarifying for s in sessions),
    )


async def watch(ctx: Ctx, st: CycleState) -> None:
    n = ctx.deps.rt.watch_sessions
    if not st.out["deploy"]["deployed"] or n == 0:
        st.out["watch"] = None
        return
    path = st.out["train"]["candidate"]
    start = st.out["collect"]["until"]
    ids = [f"c{st.cycle:03d}-w{i:03d}" for i in range(n)]
    await gather_sessions(ctx, ids, start)
    new = [s for s in sessions_between(ctx, start, None) if s.checkpoint == path]
    old = [s for s in cycle_sessions(ctx, st) if s.checkpoint == st.out["collect"]["live"]]
    result = checks.watch(live_counts(new), live_counts(old), alpha=ctx.deps.rt.watch_alpha)
    if result.roll_back and registry.get(ctx.store.engine, path).status == "deployed":  # type: ignore[union-attr]
        target = registry.rollback_target(ctx.store.engine)
        assert target is not None and target[0].path == path
        await asyncio.to_thread(ctx.server.load_weights, target[1].path, target[1].version)
        update = CheckpointUpdate(path, "rolled_back", reason=f"watch: {result.reason}")
        await ctx.store.writer.write(update)
    st.out["watch"] = result.to_json()


RUN = {
    "collect": collect, "reward": reward, "train": train, "panel": panel_stage,
    "eval": evaluate_stage, "gate": gate, "deploy": deploy, "watch": watch,
}  # fmt: skip
