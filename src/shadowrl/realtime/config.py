"""The product loop's part of the `realtime:` section: cycle sizes, the gate's checks, rows.

Kept free of heavy imports (torch, the harness; `eval/gate.py` is pure statistics): the
CLI loads every config section before it knows which command runs. `RowsConfig` is read by `rows.py`, `RewardConfig`
lives with the pure reward functions in `rewards.py`. The measurement's settings (simulated
users, panel, control) extend this class in `experiments/config.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.eval.gate import GateChecks
from shadowrl.realtime.rewards import RewardConfig

Cohort = Literal["checkpoint", "task"]
JudgeName = Literal["tests", "preference", "reaction"]  # realtime/judges.py


class RowsConfig(BaseModel):
    """Which production sessions become training rows, and how they are grouped."""

    model_config = ConfigDict(extra="forbid")
    cohort: Cohort = Field(
        "checkpoint",
        description="Advantage baseline: the mean of sessions of the same serving checkpoint "
        "in the cycle ('checkpoint') or of the same task ('task', a prompt cluster).",
    )
    max_staleness: int = Field(
        1,
        ge=0,
        description="Drop sessions whose oldest token is more than this many policy versions "
        "behind the checkpoint being trained.",
    )
    temperature: float = Field(
        1.0,
        gt=0,
        description="Training temperature: only sessions served at it with top-p 1 are trained on.",
    )


class BranchConfig(BaseModel):
    """Branching production sessions the user pushed back on (`realtime/branch.py`)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(
        False,
        description="Each cycle, rebuild the faithful branch points of its sessions with "
        "negative feedback and train on K judged continuations of each, beside the "
        "whole-session rows.",
    )
    k: int = Field(4, ge=2, description="Continuations per branch point (one group).")
    keep_below: float = Field(
        0.5, ge=0, le=1, description="A `keep` signal below this fraction counts as negative."
    )
    max_points: int = Field(
        8, ge=1, description="Most judged faithful branch points continued per cycle."
    )
    judge_timeout_s: float = Field(
        120.0, gt=0, description="Limit of one grader run of a session's own tests, seconds."
    )
    judge: JudgeName = Field(
        "tests",
        description="What scores a continuation (realtime/judges.py): 'tests', the session "
        "workspace's own tests through the grader; for experiments with simulated users, "
        "'preference', their planted preference before noise (the task's hidden tests and "
        "the planted limits), or 'reaction', their whole reaction function (noise "
        "included) through the loop's signal -> reward mapping.",
    )


class RealtimeConfig(BaseModel):
    """`shadowrl realtime`: collect → reward → train → eval → gate → deploy/reject → watch."""

    model_config = ConfigDict(extra="forbid")
    cycles: int = Field(3, ge=1, description="Cycles to run (a rerun resumes and runs the rest).")
    sessions: int = Field(
        16, ge=1, description="Sessions with feedback to collect per cycle before training."
    )
    collect_timeout_s: float = Field(
        3600.0, gt=0, description="Stop collecting after this long even if short of sessions."
    )
    suite: str = Field(
        "easy:heldout", description="The pinned suite the gate compares on (suite[:split])."
    )
    mix: float = Field(
        0.0,
        ge=0,
        description="Rollout episodes on the pinned suite's train split per production "
        "session trained on, in groups of train.group_size, each group its own cohort "
        "(realtime/mix.py); 0: production rows only. Pinned tasks never enter.",
    )
    eval_limit: int | None = Field(
        None, ge=1, description="Evaluate only the first N tasks of the pinned suite."
    )
    require_power: bool = Field(
        True,
        description="Refuse to promote when the smallest regression the pinned suite can "
        "detect exceeds eval.margin (False: promote anyway, recorded as underpowered).",
    )
    power: float = Field(
        0.8, gt=0, lt=1, description="Power the detectable regression is sized at."
    )
    max_malformed_increase: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Alarm: candidate − incumbent share of episodes with a malformed call.",
    )
    max_no_edit_increase: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Alarm: candidate − incumbent share of episodes that edit nothing.",
    )
    max_clarifying_increase: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Alarm: candidate − incumbent share of pinned-eval episodes that ask a "
        "question instead of acting.",
    )
    alarm_alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="Level of the rate alarms' one-sided Fisher exact tests: a rate alarm "
        "fires only when the rise exceeds its limit and p < this.",
    )
    max_kl: float = Field(
        1.0,
        gt=0,
        description="Alarm: nats per token from the serving weights to the candidate, on the "
        "sessions it was trained on.",
    )
    max_mtp_acceptance_drop: float = Field(
        0.1,
        ge=0,
        le=1,
        description="Alarm: the largest drop, over draft positions, of the MTP heads' greedy "
        "acceptance (parent's heads on the parent vs the candidate's on the candidate, on "
        "the cycle's sessions). Only when the live checkpoint has heads.",
    )
    watch_sessions: int = Field(
        8, ge=0, description="Sessions watched after a deploy before it is final (0: no watch)."
    )
    watch_alpha: float = Field(
        0.05, gt=0, lt=1, description="Level of the watch's one-sided tests (roll back below it)."
    )
    admin_token: str = Field(
        "",
        description="Bearer token of the /admin routes of the server this loop starts; empty: "
        "a random one made on the run's first start and kept in <run_dir>/realtime/admin_token "
        "(mode 0600). The server reads it from that file, never from its command line.",
    )
    port: int = Field(
        0, ge=0, le=65535, description="Port of the server it starts (0: a free one)."
    )
    keep_serving: bool = Field(
        False, description="Leave the server running after the last cycle (else stop it)."
    )
    train_steps: int = Field(
        1, ge=1, description="Optimizer steps a candidate takes on its cycle's batch."
    )
    rewards: RewardConfig = Field(
        default_factory=RewardConfig, description="Signal → reward weights."
    )
    rows: RowsConfig = Field(
        default_factory=RowsConfig, description="Which sessions become training rows."
    )
    branching: BranchConfig = Field(
        default_factory=BranchConfig,
        description="Counterfactual continuations of sessions the user pushed back on.",
    )

    def gate_checks(self, component_alarms: tuple[str, ...] = ()) -> GateChecks:
        """The gate's checks besides the paired test, from these settings (`eval/gate.py`);
        `component_alarms`: those the run's components add (`rl/contributions.py`), which
        read their own limits among these settings."""
        return GateChecks(
            power=self.power, require_power=self.require_power, alarm_alpha=self.alarm_alpha,
            max_malformed_increase=self.max_malformed_increase,
            max_no_edit_increase=self.max_no_edit_increase,
            max_clarifying_increase=self.max_clarifying_increase, max_kl=self.max_kl,
            component_alarms=component_alarms,
        )  # fmt: skip
