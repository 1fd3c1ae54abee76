"""The stages of one real-time cycle: typed functions, each returning a dataclass.

    collect ─► reward ─► train ─► [measure] ─► eval ─► gate ─► deploy | reject ─► watch (─► roll back)

Each stage reads the typed results of earlier stages from `CycleState` and returns its
own (`context.py`); `STEPS` stores each under its name. The driver (`cycle.py`) saves
the state after each stage, so a stage is the unit of resume and must be safe to run
again from its start: collect runs only the sessions still missing, train re-saves the
same candidate path, eval and deploy check what is already on disk and in the registry.
`measure` and the hooks inside reward and train belong to a measurement
(`context.Measurement`); without one they do nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from shadowrl.agent import ToolSet
from shadowrl.eval import EvalResult, write_report
from shadowrl.eval import gate as the_gate
from shadowrl.realtime import checks
from shadowrl.realtime.context import (
    Branched,
    Collected,
    Ctx,
    CycleState,
    Deployed,
    Evaluated,
    Rewarded,
    Trained,
    now,
    user_id,
)
from shadowrl.realtime.mix import mix_plan, rollouts
from shadowrl.realtime.record import MixCounts
from shadowrl.realtime.rewards import DECISIONS, session_reward, summarize
from shadowrl.realtime.rows import cohort_groups
from shadowrl.realtime.sessions import ProductionSession, read_sessions
from shadowrl.realtime.training import Arm, ArmResult, TrainInput, train_arm
from shadowrl.serve.store import CheckpointRecord, CheckpointUpdate, registry

T = TypeVar("T")


def need(x: T | None) -> T:
    """An earlier stage's result, which the stage order guarantees."""
    assert x is not None
    return x


def schemas(ctx: Ctx) -> list[dict[str, Any]]:
    return ToolSet.from_names(ctx.deps.spec.agent.tools).schemas()


def sessions_between(ctx: Ctx, since: str, until: str | None) -> list[ProductionSession]:
    end = None if until is None else datetime.fromisoformat(until)
    found = read_sessions(
        ctx.store.engine, ctx.deps.tokenizer, schemas(ctx), datetime.fromisoformat(since), end,
        ctx.deps.private_keys,
    )  # fmt: skip
    return list(found)


def cycle_sessions(ctx: Ctx, st: CycleState) -> list[ProductionSession]:
    """The sessions collected for this cycle."""
    return sessions_between(ctx, st.since, need(st.collected).until)


def has_feedback(s: ProductionSession) -> bool:
    return any(sig.kind != "silent" for sig in s.signals)


def live(ctx: Ctx) -> registry.CheckpointView:
    found = registry.live(ctx.store.engine)
    if found is None:
        raise RuntimeError("the registry has no deployed checkpoint")
    return found


# ----------------------------------------------------------------- collect


async def gather_sessions(ctx: Ctx, ids: list[str], since: str) -> None:
    """Simulated users run the ids not in the store yet; real users are waited for."""
    users = ctx.deps.users
    if users is None:
        deadline = time.monotonic() + ctx.deps.rt.collect_timeout_s
        while time.monotonic() < deadline:
            got = [s for s in sessions_between(ctx, since, None) if has_feedback(s)]
            if len(got) >= len(ids):
                return
            await asyncio.sleep(5.0)
        return
    have = {Path(s.workspace).name for s in sessions_between(ctx, since, None) if s.workspace}
    await users.bring(ctx.server.url, [u for u in ids if u not in have])


async def collect(ctx: Ctx, cycle: int, since: str) -> Collected:
    ids = [user_id(cycle, i) for i in range(ctx.deps.rt.sessions)]
    await gather_sessions(ctx, ids, since)
    return Collected(until=now().isoformat(), live=live(ctx).path)


# ------------------------------------------------------------------ reward


def reward(ctx: Ctx, sessions: list[ProductionSession]) -> Rewarded:
    cfg = ctx.deps.rt.rewards
    rewards = [session_reward(s.signals, s.conduct, cfg) for s in sessions]
    summary = summarize([s.signals for s in sessions], [s.conduct for s in sessions], rewards)
    return Rewarded(summary, with_feedback=sum(has_feedback(s) for s in sessions))


# ------------------------------------------------------------------- train


def train_candidate(ctx: Ctx, cycle: int, arm: Arm, data: TrainInput) -> ArmResult:
    """The candidate, trained and registered."""
    out = train_arm(arm, data, ctx.root / f"cycle-{cycle:03d}" / "candidate")
    path = out.candidate
    if path is not None and registry.get(ctx.store.engine, path) is None:
        record = CheckpointRecord(path, arm.version, "candidate", parent=arm.parent, cycle=cycle)
        ctx.store.writer.submit(record).result()
    return out


async def train(ctx: Ctx, st: CycleState) -> Trained:
    deps, serving = ctx.deps, live(ctx)
    sessions = await asyncio.to_thread(cycle_sessions, ctx, st)
    rewards = [session_reward(s.signals, s.conduct, deps.rt.rewards) for s in sessions]
    # how many production rows the cycle trains on: what `realtime.mix` is a ratio of
    _, counts = cohort_groups(sessions, rewards, trainer_version=serving.version, cfg=deps.rt.rows)
    plan = mix_plan(counts.trained, deps.rt.mix, deps.train.group_size, deps.mix_tasks,
                    seed=f"{deps.seed}:{st.cycle}")  # fmt: skip
    mixed, spoiled = await rollouts(
        deps.open_policy, serving.path, serving.version, plan, group_size=deps.train.group_size,
        spec=deps.spec, cache_dir=deps.cache_dir,
    )  # fmt: skip
    arm = Arm(
        serving.path, serving.version, registry.next_version(ctx.store.engine), deps.model,
        deps.train, deps.rt.rows, deps.rt.train_steps, deps.checks, deps.seed,
    )  # fmt: skip
    branched = await branch(ctx, st, serving.path, serving.version, sessions)
    data = TrainInput(branched.sessions, rewards, mixed, branched.groups)
    out = await asyncio.to_thread(train_candidate, ctx, st.cycle, arm, data)
    if deps.measurement is not None and out.candidate is not None:
        await deps.measurement.trained(ctx, st, arm, data)
    mix = MixCounts(tuple(t.instance_id for t in plan), len(mixed), sum(map(len, mixed)), spoiled)
    return Trained(out, mix, branched.stats)


async def branch(
    ctx: Ctx, st: CycleState, checkpoint: str, version: int, sessions: list[ProductionSession]
) -> Branched:
    """Continuation groups of the cycle's sessions, by `realtime.branching` (off: none),
    and the sessions' rows without the tokens those groups train."""
    if ctx.deps.brancher is None:
        return Branched(sessions)
    since, until = (
        datetime.fromisoformat(st.since),
        datetime.fromisoformat(need(st.collected).until),
    )
    return await ctx.deps.brancher.groups(ctx, since, until, checkpoint, version, sessions)


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


async def evaluate(ctx: Ctx, cycle: int, candidate: str) -> Evaluated:
    """The live checkpoint (once per version) and the candidate on the pinned suite."""
    serving = live(ctx)
    inc_dir = ctx.root / "evals" / f"v{serving.version:04d}"
    cand_dir = ctx.root / f"cycle-{cycle:03d}" / "eval"
    await eval_policy(ctx, serving.path, inc_dir)
    await eval_policy(ctx, candidate, cand_dir)
    return Evaluated(str(inc_dir), str(cand_dir))


# -------------------------------------------------------------------- gate


def gate(ctx: Ctx, evaluated: Evaluated, arm: ArmResult) -> the_gate.Verdict:
    """The one decision rule (`eval/gate.decide`) with the trainer's evidence."""
    ev = ctx.deps.eval
    try:
        return the_gate.decide(
            EvalResult.load(evaluated.candidate), EvalResult.load(evaluated.incumbent),
            margin=ev.margin, alpha=ev.alpha, checks=ctx.deps.rt.gate_checks(),
            training=arm.evidence(), test=ev.test, resamples=ev.resamples,
            seed=ctx.deps.seed,
        )  # fmt: skip
    except the_gate.PinMismatch as e:
        return the_gate.Verdict.incomparable(e)


# ------------------------------------------------------------------ deploy


async def deploy(ctx: Ctx, verdict: the_gate.Verdict | None, arm: ArmResult) -> Deployed:
    if verdict is None:
        return Deployed(False, arm.reason or "no candidate")
    path, version = need(arm.candidate), need(arm.version)
    current = need(registry.get(ctx.store.engine, path))
    record = verdict.record()
    if verdict.promote:
        if current.status != "deployed":
            await asyncio.to_thread(ctx.server.load_weights, path, version)
            await ctx.store.writer.write(CheckpointUpdate(path, "deployed", record, verdict.reason))
    elif current.status == "candidate":
        await ctx.store.writer.write(CheckpointUpdate(path, "rejected", record, verdict.reason))
    return Deployed(verdict.promote, verdict.reason)


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


async def watch(ctx: Ctx, st: CycleState, path: str) -> checks.WatchResult:
    """The first sessions `path` serves against the previous checkpoint's in this cycle;
    a significant change for the worse rolls back."""
    collected = need(st.collected)
    ids = [f"c{st.cycle:03d}-w{i:03d}" for i in range(ctx.deps.rt.watch_sessions)]
    await gather_sessions(ctx, ids, collected.until)
    new = [s for s in sessions_between(ctx, collected.until, None) if s.checkpoint == path]
    old = [s for s in cycle_sessions(ctx, st) if s.checkpoint == collected.live]
    result = checks.watch(live_counts(new), live_counts(old), alpha=ctx.deps.rt.watch_alpha)
    if result.roll_back and need(registry.get(ctx.store.engine, path)).status == "deployed":
        target = need(registry.rollback_target(ctx.store.engine))
        assert target[0].path == path
        await asyncio.to_thread(ctx.server.load_weights, target[1].path, target[1].version)
        update = CheckpointUpdate(path, "rolled_back", reason=f"watch: {result.reason}")
        await ctx.store.writer.write(update)
    return result


# ------------------------------------------------------------- the wiring


async def collect_step(ctx: Ctx, st: CycleState) -> None:
    st.collected = await collect(ctx, st.cycle, st.since)


async def reward_step(ctx: Ctx, st: CycleState) -> None:
    st.rewarded = reward(ctx, await asyncio.to_thread(cycle_sessions, ctx, st))
    if ctx.deps.measurement is not None:
        await ctx.deps.measurement.rewarded(ctx, st)


async def train_step(ctx: Ctx, st: CycleState) -> None:
    st.trained = await train(ctx, st)


async def measure_step(ctx: Ctx, st: CycleState) -> None:
    if ctx.deps.measurement is not None:
        await ctx.deps.measurement.measure(ctx, st)


async def eval_step(ctx: Ctx, st: CycleState) -> None:
    candidate = need(st.trained).candidate.candidate
    st.evaluated = None if candidate is None else await evaluate(ctx, st.cycle, candidate)


async def gate_step(ctx: Ctx, st: CycleState) -> None:
    arm = need(st.trained).candidate
    st.verdict = None if st.evaluated is None else gate(ctx, st.evaluated, arm)


async def deploy_step(ctx: Ctx, st: CycleState) -> None:
    st.deployed = await deploy(ctx, st.verdict, need(st.trained).candidate)


async def watch_step(ctx: Ctx, st: CycleState) -> None:
    path = need(st.trained).candidate.candidate
    on = need(st.deployed).deployed and ctx.deps.rt.watch_sessions > 0
    st.watched = await watch(ctx, st, need(path)) if on else None


Step = Callable[[Ctx, CycleState], Awaitable[None]]
STEPS: dict[str, Step] = {
    "collect": collect_step, "reward": reward_step, "train": train_step,
    "measure": measure_step, "eval": eval_step, "gate": gate_step, "deploy": deploy_step,
    "watch": watch_step,
}  # fmt: skip
STAGES = tuple(STEPS)
