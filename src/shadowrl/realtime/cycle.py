"""`shadowrl realtime`: the cycle, repeated, surviving its own faults.

    ┌──────────── server (own process, serves the live checkpoint throughout) ───────────┐
    │ users ──► sessions + feedback ──► trace store ◄── registry (candidate/deployed/...) │
    └────────────────────────────────────────────────────────────────────────────────────┘
        collect ─► reward ─► train ─► eval (pinned suite) ─► gate (paired, alarms, power)
              ▲                                                  │ promote     │ refuse
              │          watch ◄── deploy (hot swap) ◄───────────┘             ▼
              │            │ significant drop: roll back (hot swap)         rejected
              └────────────┴──── next cycle: sessions since this one's collect ended

The driver owns no state it cannot lose: the registry and the sessions are in the
trace store, the cycle's progress in `realtime/state.json` (written after every stage,
atomically), finished cycles in `realtime/cycles.jsonl`. Killed during any stage, a
rerun finds the server still serving (`process.py`) and resumes that cycle at that
stage. Each stage's duration and the cycle's go to `cycles.jsonl`, the run's metrics
and the report (`report.py`). A measurement (`context.Measurement`) adds its fields to
each row and its section to the report; the driver does not read them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from shadowrl.atomic import write_json
from shadowrl.metrics import MetricsLogger
from shadowrl.realtime import record, stages
from shadowrl.realtime.context import Ctx, CycleState, Deps, now
from shadowrl.realtime.process import ServerProcess, find_server, free_port, start_server
from shadowrl.realtime.record import BranchRow, CycleRow
from shadowrl.realtime.report import write_report
from shadowrl.realtime.stages import STAGES, need
from shadowrl.serve.store import CheckpointRecord, TraceStore, registry

log = logging.getLogger(__name__)

# (checkpoint path, policy version, port) -> the `shadowrl serve` command line
ServerArgv = Callable[[str, int, int], list[str]]


STATE = TypeAdapter(CycleState)


def load_state(root: Path) -> CycleState | None:
    path = root / "state.json"
    if not path.exists():
        return None
    if "out" in json.loads(path.read_text()):  # the untyped state of earlier versions
        raise RuntimeError(
            f"{path} holds a cycle saved by an earlier shadowrl (untyped stage results): "
            "finish it with that version, or delete the file to rerun that cycle from its start"
        )
    return STATE.validate_json(path.read_text())


def save_state(root: Path, st: CycleState) -> None:
    write_json(root / "state.json", STATE.dump_python(st, mode="json"))


def written_cycles(root: Path) -> set[int]:
    rows: list[CycleRow[Any]] = record.read_cycles(root)
    return {r.cycle for r in rows}


def bootstrap(deps: Deps, store: TraceStore, initial: Callable[[Path], str]) -> None:
    """Register the first deployed checkpoint (`initial` writes it as an HF directory)."""
    if registry.live(store.engine) is not None:
        return
    path = initial(deps.run_dir / "realtime" / "checkpoints" / "initial")
    record = CheckpointRecord(
        path, 0, "deployed", reason="initial checkpoint", cycle=0, deployed_at=now()
    )
    if registry.get(store.engine, path) is None:
        store.writer.submit(record).result()


def ensure_server(deps: Deps, store: TraceStore, argv: ServerArgv) -> ServerProcess:
    """The running server, or a new one serving the registry's live checkpoint."""
    root = deps.run_dir / "realtime"
    found = find_server(root / "server.json", deps.rt.admin_token)
    if found is not None:
        log.info("reusing the server at %s (pid %d)", found.url, found.pid)
        return found
    live = registry.live(store.engine)
    assert live is not None
    port = deps.rt.port or free_port()
    log.info("starting the server on port %d serving %s (v%d)", port, live.path, live.version)
    return start_server(
        argv(live.path, live.version, port), port, root / "server.json", root / "server.log",
        deps.rt.admin_token,
    )  # fmt: skip


def cycle_row(st: CycleState, ctx: Ctx) -> CycleRow[Any]:
    """One line of `cycles.jsonl` (the issue's fields first, then the details)."""
    t, r, arm = st.times, need(st.rewarded).summary, need(st.trained).candidate
    g, watch, branching = st.verdict, st.watched, need(st.trained).branching
    measurement = ctx.deps.measurement
    return CycleRow(
        cycle=st.cycle,
        deployed_before=need(st.collected).live,
        candidate=arm.candidate,
        sessions=r.sessions,
        with_feedback=need(st.rewarded).with_feedback,
        reward_mean=r.reward_mean,
        accept_rate=r.accept_rate,
        collect_s=t.get("collect", 0.0),
        train_s=t.get("reward", 0.0) + t.get("train", 0.0),
        eval_s=t.get("eval", 0.0),
        gate=None if g is None else ("promote" if g.promote else "reject"),
        deployed_after=stages.live(ctx).path,
        cycle_s=sum(t.values()),
        gate_s=t.get("gate", 0.0),
        deploy_s=t.get("deploy", 0.0),
        watch_s=t.get("watch", 0.0),
        caught_by=None if g is None else g.caught_by,
        reason=need(st.deployed).reason,
        rolled_back=bool(watch and watch.roll_back),
        watch=watch,
        rows=arm.rows,
        mix=need(st.trained).mix,  # rollouts on pinned train tasks
        branching=None if branching is None else BranchRow(**dataclasses.asdict(branching)),
        kl=arm.kl,
        clarifying_rate=r.clarifying_rate,
        broken_rate=r.broken_rate,
        no_edit_rate=r.no_edit_rate,
        min_detectable_drop=None if g is None else g.min_detectable_drop,
        alarm_tests=None if g is None or g.paired is None else g.rates,  # counts and Fisher p
        train_tokens=arm.tokens,
        measured=None if measurement is None else measurement.row(ctx, st),
    )


async def run_cycles(
    deps: Deps,
    store: TraceStore,
    argv: ServerArgv,
    initial: Callable[[Path], str],
    stop_after: str | None = None,
) -> list[CycleRow[Any]]:
    """Run (or resume) cycles until `deps.rt.cycles` are done; the rows written this call.

    `stop_after` (tests): return right after that stage is saved, as a kill would.
    """
    root = deps.run_dir / "realtime"
    root.mkdir(parents=True, exist_ok=True)
    deps.workspaces.mkdir(parents=True, exist_ok=True)  # the server's agent API needs it
    bootstrap(deps, store, initial)
    server = ensure_server(deps, store, argv)
    ctx = Ctx(deps, store, server)
    st = load_state(root) or CycleState(1, STAGES[0], now().isoformat())
    rows: list[CycleRow[Any]] = []
    with MetricsLogger(deps.run_dir) as metrics:
        while st.cycle <= deps.rt.cycles:
            todo = STAGES[STAGES.index(st.stage) :] if st.stage in STAGES else ()
            for i, stage in enumerate(todo, start=len(STAGES) - len(todo)):
                log.info("cycle %d: %s", st.cycle, stage)
                start = time.perf_counter()
                await stages.STEPS[stage](ctx, st)
                st.times[stage] = time.perf_counter() - start
                st.stage = STAGES[i + 1] if i + 1 < len(STAGES) else "done"
                save_state(root, st)
                if stop_after == stage:
                    return rows
            row = cycle_row(st, ctx)
            if st.cycle not in written_cycles(root):  # killed after the row, before the state
                with (root / "cycles.jsonl").open("a") as f:
                    f.write(record.to_json(row) + "\n")
                metrics.log("realtime", st.cycle, record.jsonable(row))
            rows.append(row)
            log.info("cycle %d: %s in %.0f s (%s)", st.cycle, row.gate, row.cycle_s, row.reason)
            st = CycleState(st.cycle + 1, STAGES[0], need(st.collected).until)
            save_state(root, st)
            write_report(root, registry.history(store.engine), deps.measurement)
    if not deps.rt.keep_serving:
        server.stop()
    return rows
