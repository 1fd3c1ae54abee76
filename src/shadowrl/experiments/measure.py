"""The learning-from-feedback measurement, plugged into the real-time loop through its one
seam (`realtime.context.Measurement`, and `Users` for the simulated users).

* `SimulatedUsers` bring each cycle's sessions (`users.py`), judging with the tests and
  the planted preference (`preference.py`), and log every outcome (`learning.py`).
* After the reward stage: the preference's bite over the cycle's sessions.
* After the candidate is trained: the permuted-feedback control (`control.py`), from the
  same parent on the same rows, session and branch-group rewards permuted (`realtime.control`).
* The `measure` stage replays the fixed panel (`panel.py`) on the checkpoint that served
  the cycle (once per version), on the candidate and on the control, and compares them
  in pairs: candidate − deployed says whether the step helped the panel's users,
  candidate − control whether it helped *because of* their feedback.

What it measures is kept per cycle in `cycle-NNN/measured.json`, so a resumed cycle
finds it; `row` and `report` read it back for `cycles.jsonl` and the report.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from shadowrl import atomic
from shadowrl.episode import EpisodeSpec
from shadowrl.eval import EvalResult
from shadowrl.eval.config import EvalConfig
from shadowrl.experiments import panel
from shadowrl.experiments.config import MeasuredRealtimeConfig, UsersConfig
from shadowrl.experiments.control import permuted_groups, permuted_rewards
from shadowrl.experiments.learning import outcome_recorder, preference_counts, read_outcomes
from shadowrl.experiments.preference import Preference, Work
from shadowrl.experiments.reaction import Judge, Outcome, tests_judge
from shadowrl.experiments.report import learning_section
from shadowrl.experiments.row import PANEL, ArmRow, LearningRow, PreferenceCounts
from shadowrl.experiments.users import Users
from shadowrl.realtime import (
    Arm,
    ArmResult,
    Ctx,
    CycleRow,
    CycleState,
    TrainInput,
    cycle_sessions,
    need,
    train_arm,
)
from shadowrl.serve.store import registry
from shadowrl.tasks import Task

PAIRS = (("candidate", "deployed"), ("candidate", "control"), ("control", "deployed"))


def planted_judge(pref: Preference, judge: Judge = tests_judge) -> Judge:
    """`judge`, and the planted preference on top of it."""

    def accepts(o: Outcome) -> bool:
        return judge(o) and not pref.broken(Work(o.resolved, o.diff_lines, o.turns, o.tokens))

    return accepts


@dataclass(frozen=True)
class SimulatedUsers:
    """`realtime.context.Users` by simulated users, each outcome logged under `root`."""

    tasks: Sequence[Task]
    workspaces: Path
    spec: EpisodeSpec
    cfg: UsersConfig
    cache_dir: Path
    root: Path  # the run's realtime/ directory (users.jsonl)
    judge: Judge = tests_judge

    async def bring(self, url: str, ids: Sequence[str]) -> None:
        users = Users(url, self.tasks, self.workspaces, self.spec, self.cfg, self.cache_dir,
                      self.judge)  # fmt: skip
        await users.run(ids, outcome_recorder(self.root))


@dataclass(frozen=True)
class PanelResult:
    """One cycle's panel: each arm's replay scored, and the arms compared in pairs."""

    scores: dict[str, panel.PanelScore]
    pairs: dict[str, panel.Comparison]  # "candidate_vs_deployed", ...

    def to_json(self) -> dict[str, Any]:
        scores = {k: dataclasses.asdict(s) for k, s in self.scores.items()}
        return {"scores": scores, **{k: c.to_json() for k, c in self.pairs.items()}}


@dataclass
class Measured:
    """What one cycle measured so far (None: not measured)."""

    preference: dict[str, int] | None = None
    control: ArmResult | None = None
    panel: PanelResult | None = None


MEASURED = TypeAdapter(Measured)


@dataclass(frozen=True)
class LearningMeasurement:
    """`realtime.context.Measurement`: the planted preference's bite, the control, the panel."""

    cfg: MeasuredRealtimeConfig
    panel_tasks: Sequence[Task]

    @property
    def preference(self) -> Preference:
        return Preference.of(self.cfg.users)

    def path(self, ctx: Ctx, cycle: int) -> Path:
        return ctx.root / f"cycle-{cycle:03d}" / "measured.json"

    def load(self, ctx: Ctx, cycle: int) -> Measured:
        path = self.path(ctx, cycle)
        return MEASURED.validate_json(path.read_text()) if path.exists() else Measured()

    def save(self, ctx: Ctx, cycle: int, m: Measured) -> None:
        atomic.write_file(self.path(ctx, cycle), MEASURED.dump_json(m, indent=1))

    async def rewarded(self, ctx: Ctx, st: CycleState) -> None:
        if not self.preference.planted:
            return
        ids = [s.id for s in await asyncio.to_thread(cycle_sessions, ctx, st)]
        m = self.load(ctx, st.cycle)
        m.preference = preference_counts(read_outcomes(ctx.root), ids, self.preference)
        self.save(ctx, st.cycle, m)

    async def trained(self, ctx: Ctx, st: CycleState, arm: Arm, data: TrainInput) -> None:
        if not self.cfg.control:
            return
        shuffled = permuted_rewards(data.sessions, data.rewards, self.cfg.rows.cohort, st.cycle)
        dest = ctx.root / f"cycle-{st.cycle:03d}" / "control"
        # the same rows: session and branch-group rewards permuted; rollout groups as trained
        branched = permuted_groups(data.branched, st.cycle)
        control = dataclasses.replace(data, rewards=shuffled, branched=branched)
        m = self.load(ctx, st.cycle)
        m.control = await asyncio.to_thread(train_arm, arm, control, dest)
        self.save(ctx, st.cycle, m)

    async def replay_on(self, ctx: Ctx, path: str, out: Path) -> EvalResult:
        deps, cfg = ctx.deps, need(self.cfg.panel)
        settings = EvalConfig(**{**deps.eval.model_dump(), "samples": cfg.samples})
        async with deps.open_policy(path) as factory:
            return await panel.replay(
                self.panel_tasks, factory, deps.spec, settings=settings,
                cache_dir=deps.cache_dir, pins=deps.pins, seed=deps.seed, out=out,
            )  # fmt: skip

    async def measure(self, ctx: Ctx, st: CycleState) -> None:
        """Replay the panel on the deployed checkpoint, candidate and control; compare."""
        if self.cfg.panel is None:
            return
        live = need(registry.live(ctx.store.engine))
        m, cycle_dir = self.load(ctx, st.cycle), ctx.root / f"cycle-{st.cycle:03d}"
        arms = {"deployed": await self.replay_on(ctx, live.path,
                                                 ctx.root / "panel" / f"v{live.version:04d}")}  # fmt: skip
        candidate = need(st.trained).candidate.candidate
        if candidate is not None:
            arms["candidate"] = await self.replay_on(ctx, candidate, cycle_dir / "panel")
        if m.control is not None and m.control.candidate is not None:
            arms["control"] = await self.replay_on(ctx, m.control.candidate,
                                                   cycle_dir / "control-panel")  # fmt: skip
        pref, seed = self.preference, ctx.deps.seed
        m.panel = PanelResult(
            {k: panel.score(r, pref) for k, r in arms.items()},
            {f"{a}_vs_{b}": panel.compare(arms[a], arms[b], pref, seed=seed)
             for a, b in PAIRS if a in arms and b in arms},
        )  # fmt: skip
        self.save(ctx, st.cycle, m)

    @property
    def row_type(self) -> type[LearningRow]:
        return LearningRow

    def row(self, ctx: Ctx, st: CycleState) -> LearningRow:
        m = self.load(ctx, st.cycle)
        return LearningRow(
            panel_s=st.times.get("measure", 0.0),
            panel=None if m.panel is None else PANEL.validate_python(m.panel.to_json()),
            preference=None if m.preference is None else PreferenceCounts(**m.preference),
            control=None if m.control is None else ArmRow.of(m.control),
        )

    def report(self, root: Path, rows: Sequence[CycleRow[LearningRow]]) -> list[str]:
        return learning_section(root, rows, self.preference)


def build_measurement(
    cfg: MeasuredRealtimeConfig, panel_tasks: Sequence[Task]
) -> LearningMeasurement | None:
    """The measurement `cfg` asks for; None when it measures nothing (no planted
    preference, no panel, no control)."""
    if cfg.panel is None and not cfg.control and not Preference.of(cfg.users).planted:
        return None
    return LearningMeasurement(cfg, panel_tasks)
