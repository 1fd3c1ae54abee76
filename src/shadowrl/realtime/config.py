"""The `realtime:` section of the config tree: cycle sizes, the gate's checks, rows, users.

Kept free of heavy imports (torch, the harness): the CLI loads every config section
before it knows which command runs. `RowsConfig` is read by `rows.py`, `UsersConfig` by
`users.py`, `RewardConfig` lives with the pure reward functions in `rewards.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shadowrl.realtime.rewards import RewardConfig

Cohort = Literal["checkpoint", "task"]


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


class UsersConfig(BaseModel):
    """How simulated users pick tasks and react (see `realtime/users.py`)."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field("easy:train", description="Tasks users bring (suite[:split]).")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks of the suite.")
    seed: int = Field(0, description="Seed of every user's draws (tasks and reactions).")
    silent: float = Field(0.1, ge=0, le=1, description="Probability a user gives no feedback.")
    flip: float = Field(0.1, ge=0, le=1, description="Probability a user flips the decision.")
    keep_low: float = Field(
        0.5, ge=0, le=1, description="After an accept, kept-lines fraction ~ U[keep_low, 1]."
    )
    followup: float = Field(
        0.3, ge=0, le=1, description="Probability of a dissatisfied follow-up after a reject."
    )
    concurrency: int = Field(4, ge=1, description="Users working at once.")
    screen: str | None = Field(
        None,
        description="eval.json of a screen of the starting policy on `suite` (`shadowrl eval "
        "--samples K`): users bring only the tasks it accepted sometimes but not always "
        "(realtime/preference.py). None: every task of the suite.",
    )
    screen_by: Literal["user", "tests"] = Field(
        "user",
        description="What the screen keeps a task for: 'user', the users accepted some of "
        "its screened samples but not all (tests and planted preference); 'tests', its "
        "hidden tests passed on some but not all, so a preference the policy breaks "
        "whenever it passes (a per-task habit) still bites on it.",
    )
    max_diff_lines: int | None = Field(
        None,
        ge=0,
        description="Planted preference the tests do not encode: reject a passing diff that "
        "changes more lines than this (None: no such preference).",
    )
    max_turns: int | None = Field(
        None,
        ge=1,
        description="Planted preference the tests do not encode: reject passing work the "
        "agent took more assistant turns than this to finish (None: no such preference).",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Planted preference the tests do not encode: reject passing work for "
        "which the agent generated more tokens than this (None: no such preference).",
    )
    bite_fall: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Fall in the planted preference's bite rate (passing sessions it alone "
        "rejects) from the run's first half of sessions to its second that the session "
        "count is sized to detect (`realtime --plan`, realtime/power.py).",
    )


class PanelConfig(BaseModel):
    """The fixed panel of users replayed on each checkpoint (`realtime/panel.py`)."""

    model_config = ConfigDict(extra="forbid")
    tasks: int = Field(8, ge=1, description="Panel users: the first N tasks of the users' pool.")
    samples: int = Field(2, ge=1, description="Episodes per panel task (fixed sample indices).")
    effect: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="Rise in the panel's accept rate the run is sized to detect: the power "
        "calculation (`realtime --plan`, realtime/power.py) says how many episodes that needs.",
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
        description="Alarm: candidate − incumbent share of episodes with a malformed call.",
    )
    max_no_edit_increase: float = Field(
        0.1, ge=0, description="Alarm: candidate − incumbent share of episodes that edit nothing."
    )
    max_clarifying_increase: float = Field(
        0.1,
        ge=0,
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
    panel: PanelConfig | None = Field(
        None,
        description="Replay a fixed panel of users on the deployed checkpoint, the candidate "
        "and the control, and compare them in pairs (None: no panel).",
    )
    control: bool = Field(
        False,
        description="Also train a control on the cycle's sessions with their rewards permuted "
        "within each cohort, at equal compute (needs the panel to be compared).",
    )
    rewards: RewardConfig = Field(
        default_factory=RewardConfig, description="Signal → reward weights."
    )
    rows: RowsConfig = Field(
        default_factory=RowsConfig, description="Which sessions become training rows."
    )
    users: UsersConfig = Field(
        default_factory=UsersConfig, description="Simulated users (--simulate-users)."
    )

    @model_validator(mode="after")
    def _control_needs_panel(self) -> RealtimeConfig:
        if self.control and self.panel is None:
            raise ValueError("realtime.control needs realtime.panel: nothing else compares it")
        return self
