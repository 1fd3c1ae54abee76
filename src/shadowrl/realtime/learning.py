"""The cycle's learning-from-feedback measurement: the users' outcomes and the panel stage.

* Every simulated user's outcome (task, tests passed, changed lines, what they said)
  is appended to `realtime/users.jsonl`, so the planted preference's bite (passing
  work rejected for its size or its length) is counted over every session of every cycle.
* The `panel` stage replays the fixed panel (`panel.py`) on the checkpoint that served
  the cycle (once per version), on the candidate and on the permuted-feedback control,
  and compares them in pairs: candidate − deployed says whether the step helped the
  panel's users, candidate − control whether it helped *because of* their feedback.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from shadowrl.eval.config import EvalConfig
from shadowrl.eval.result import EvalResult
from shadowrl.realtime import panel
from shadowrl.realtime.context import Ctx, CycleState
from shadowrl.realtime.preference import MEASURES, Preference, Work
from shadowrl.realtime.users import UserOutcome
from shadowrl.serve.store import registry

OUTCOMES = "users.jsonl"


def outcome_recorder(root: Path) -> Callable[[UserOutcome], None]:
    """Append each finished user's outcome to `root/users.jsonl` (a rerun may repeat one)."""

    def record(out: UserOutcome) -> None:
        with (root / OUTCOMES).open("a") as f:
            f.write(json.dumps(dataclasses.asdict(out)) + "\n")

    return record


def read_outcomes(root: Path) -> dict[str, dict[str, Any]]:
    """The last recorded outcome of each session id."""
    path = root / OUTCOMES
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["session_id"]: r for r in rows}


def work_of(outcome: dict[str, Any]) -> Work:
    """What the user judged in a recorded outcome (rows logged before turns and tokens
    were recorded read 0 for them)."""
    o = outcome
    return Work(bool(o["resolved"]), o["diff_lines"], o.get("turns", 0), o.get("tokens", 0))


def preference_counts(
    outcomes: dict[str, dict[str, Any]], session_ids: Sequence[str], pref: Preference
) -> dict[str, int]:
    """Over these sessions: how many had an outcome, passed, and were rejected only for the
    preference (in all, and per limit broken: `over_diff_lines`, `over_turns`, ...)."""
    seen = [outcomes[i] for i in session_ids if i in outcomes]
    work = [work_of(o) for o in seen]
    bitten = [pref.broken(w) for w in work if pref.rejects_passing(w)]
    return {
        "sessions": len(seen),
        "resolved": sum(w.resolved for w in work),
        "rejected_by_preference": len(bitten),
        **{f"over_{m}": sum(m in b for b in bitten) for m in MEASURES},
    }


async def replay_on(ctx: Ctx, path: str, out: Path) -> EvalResult:
    deps, cfg = ctx.deps, ctx.deps.rt.panel
    assert cfg is not None
    settings = EvalConfig(**{**deps.eval.model_dump(), "samples": cfg.samples})
    async with deps.open_policy(path) as factory:
        return await panel.replay(
            deps.panel, factory, deps.spec, settings=settings, cache_dir=deps.cache_dir,
            pins=deps.pins, seed=deps.seed, out=out,
        )  # fmt: skip


async def panel_stage(ctx: Ctx, st: CycleState) -> None:
    """Replay the panel on the deployed checkpoint, candidate and control; compare in pairs."""
    if ctx.deps.rt.panel is None:
        st.out["panel"] = None
        return
    live = registry.live(ctx.store.engine)
    assert live is not None
    train, cycle_dir = st.out["train"], ctx.root / f"cycle-{st.cycle:03d}"
    arms = {
        "deployed": await replay_on(ctx, live.path, ctx.root / "panel" / f"v{live.version:04d}")
    }
    if train["candidate"] is not None:
        arms["candidate"] = await replay_on(ctx, train["candidate"], cycle_dir / "panel")
    control = train.get("control") or {}
    if control.get("candidate") is not None:
        arms["control"] = await replay_on(ctx, control["candidate"], cycle_dir / "control-panel")
    pref, seed = Preference.of(ctx.deps.rt.users), ctx.deps.seed
    pairs = [("candidate", "deployed"), ("candidate", "control"), ("control", "deployed")]
    st.out["panel"] = {
        "scores": {k: dataclasses.asdict(panel.score(r, pref)) for k, r in arms.items()},
        **{
            f"{a}_vs_{b}": panel.compare(arms[a], arms[b], pref, seed=seed).to_json()
            for a, b in pairs
            if a in arms and b in arms
        },
    }
