"""What every stage of a real-time cycle shares: the command's inputs, the live context,
the cycle's typed state, and the one seam a measurement plugs into.

`stages.py` runs the stages, `cycle.py` drives them. Each stage returns a dataclass that
`CycleState` keeps under that stage's name; the state is saved after every stage
(`cycle.py`, by pydantic's `TypeAdapter`), so a rerun resumes from typed results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from shadowrl.episode import EpisodeSpec
from shadowrl.eval import ConfigPins, Evaluate
from shadowrl.eval.config import EvalConfig
from shadowrl.eval.gate import Verdict
from shadowrl.models import ModelConfig
from shadowrl.realtime.checks import WatchResult
from shadowrl.realtime.config import RealtimeConfig
from shadowrl.realtime.mix import OpenPolicy
from shadowrl.realtime.process import ServerProcess
from shadowrl.realtime.record import CycleRow, MeasuredRow, MixCounts
from shadowrl.realtime.rewards import RewardSummary
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.realtime.training import Arm, ArmResult, TrainInput
from shadowrl.rl import Leaves, StepCheck
from shadowrl.rl.config import TrainConfig
from shadowrl.serve.store import TraceStore
from shadowrl.tasks import Task

# what evaluates a checkpoint: in this process, or the Ray evaluator actor (backend ray)
OpenEvaluator = Callable[[str], AbstractAsyncContextManager[Evaluate]]


def user_id(cycle: int, i: int) -> str:
    """The id of cycle `cycle`'s `i`-th user (`c001-u003`): a simulated user's seed and
    workspace name, so a rerun runs only the users whose sessions are missing."""
    return f"c{cycle:03d}-u{i:03d}"


class Users(Protocol):
    """Simulated users: they bring a cycle's sessions (None in `Deps`: real users do)."""

    async def bring(self, url: str, ids: Sequence[str]) -> None:
        """Run the users `ids` against the server at `url`, each one session with feedback."""


class Brancher(Protocol):
    """Branching from production (`realtime/branch_stage.py`; None in `Deps`: off): the
    train stage's judged continuation groups of the cycle's sessions, and their counts."""

    async def groups(
        self, ctx: Ctx, since: datetime, until: datetime, checkpoint: str, version: int,
        sessions: Sequence[ProductionSession],
    ) -> Branched:  # fmt: skip
        """Groups continued by `checkpoint` (registry `version`) from the faithful branch
        points of the sessions created in [since, until]; `sessions`, that window's rows,
        come back cut where a group trains their tokens."""


@dataclass(frozen=True)
class BranchStats:
    """What the branching stage did in a cycle (its `cycles.jsonl` fields)."""

    negative: int  # sessions with negative feedback
    points: int  # branch points picked from them
    faithful: int
    unfaithful: int
    unjudged: int  # faithful points the judge cannot score (no tests): no branch point
    continuations: int
    groups: int
    with_contrast: int  # groups whose continuations were judged differently
    no_point_why: dict[str, int] = field(default_factory=dict)  # reason -> sessions
    unfaithful_why: dict[str, int] = field(default_factory=dict)  # reason -> points
    unjudged_why: dict[str, int] = field(default_factory=dict)  # reason -> points
    unlabeled: int = 0  # continuations the judge gave no label (not group members)
    recorded: int = 0  # groups the session's own continuation joined, re-judged
    recorded_why: dict[str, int] = field(default_factory=dict)  # why it did not -> groups
    generated: int = 0  # tokens the fresh continuations generated, labeled or not (compute)


@dataclass(frozen=True)
class Branched:
    """What the branching stage hands the train stage: its groups, the cycle's session
    rows with each token a group trains left out of its session's row (every token is
    trained once, with one advantage), and its counts (None: branching is off)."""

    sessions: Sequence[ProductionSession]
    groups: list[Leaves] = field(default_factory=list)
    stats: BranchStats | None = None


class Measurement(Protocol):
    """An experiment's hooks into the cycle, built once from its config (None in `Deps`:
    no experiment). The cycle calls them and writes what `row` returns beside its own
    fields; it never reads what they measure."""

    async def rewarded(self, ctx: Ctx, st: CycleState) -> None:
        """After the reward stage (its sessions: `stages.cycle_sessions`)."""

    async def trained(self, ctx: Ctx, st: CycleState, arm: Arm, data: TrainInput) -> None:
        """After the candidate was trained from `arm` on `data` (inside the train stage)."""

    async def measure(self, ctx: Ctx, st: CycleState) -> None:
        """The `measure` stage, between train and eval, timed as its own."""

    @property
    def row_type(self) -> type[MeasuredRow]:
        """The type of what `row` returns (`record.from_json` reads it back)."""

    def row(self, ctx: Ctx, st: CycleState) -> MeasuredRow:
        """Its fields of the cycle's `cycles.jsonl` row (`record.CycleRow.measured`)."""

    def report(self, root: Path, rows: Sequence[CycleRow[Any]]) -> list[str]:
        """Its section of the report (markdown lines; none: nothing measured), from the
        rows read back with `row_type`."""


@dataclass(frozen=True)
class Deps:
    """What the command hands the loop: config sections, tasks, and how to open a policy."""

    run_dir: Path
    rt: RealtimeConfig
    eval: EvalConfig
    train: TrainConfig
    model: ModelConfig
    spec: EpisodeSpec
    pins: ConfigPins
    tokenizer: Any
    open_evaluator: OpenEvaluator
    open_policy: OpenPolicy  # the mixed-in rollouts' policy (in this process)
    pinned: list[Task]
    mix_tasks: list[Task]  # train tasks rollouts may be mixed in on (`mix.mix_tasks`)
    cache_dir: Path
    workspaces: Path  # the server's serve.workspaces_root (simulated users check out there)
    seed: int = 0
    users: Users | None = None  # None: real users (wait for their sessions)
    measurement: Measurement | None = None
    brancher: Brancher | None = None  # realtime.branching.enabled
    checks: tuple[StepCheck, ...] = ()  # of a candidate's training (`rl/contributions.py`)
    private_keys: frozenset[str] = frozenset()  # serve.api_keys' private keys: never collected


@dataclass
class Ctx:
    deps: Deps
    store: TraceStore
    server: ServerProcess

    @property
    def root(self) -> Path:
        return self.deps.run_dir / "realtime"


# ------------------------------------------------------------- stage results


@dataclass(frozen=True)
class Collected:
    until: str  # ISO time collection ended: the cycle's sessions are those before it
    live: str  # the checkpoint that served them


@dataclass(frozen=True)
class Rewarded:
    summary: RewardSummary
    with_feedback: int  # sessions with a signal other than silence


@dataclass(frozen=True)
class Trained:
    candidate: ArmResult
    mix: MixCounts
    branching: BranchStats | None = None  # None: branching is off


@dataclass(frozen=True)
class Evaluated:
    incumbent: str  # directory of the incumbent's eval.json
    candidate: str


@dataclass(frozen=True)
class Deployed:
    deployed: bool
    reason: str


@dataclass
class CycleState:
    """Where the current cycle is and what its finished stages returned (None: not run,
    or, for eval, gate and watch, nothing to do)."""

    cycle: int
    stage: str
    since: str  # ISO time: this cycle's sessions are the ones created after it
    collected: Collected | None = None
    rewarded: Rewarded | None = None
    trained: Trained | None = None
    evaluated: Evaluated | None = None
    verdict: Verdict | None = None
    deployed: Deployed | None = None
    watched: WatchResult | None = None
    times: dict[str, float] = field(default_factory=dict)


def now() -> datetime:
    return datetime.now(UTC)
