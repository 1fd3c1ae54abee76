"""The `realtime:` section of the config tree: cycle sizes, the gate's checks, users."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.realtime.rewards import RewardConfig
from shadowrl.realtime.rows import RowsConfig
from shadowrl.realtime.users import UsersConfig


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
    max_kl: float = Field(
        1.0,
        gt=0,
        description="Alarm: nats per token from the serving weights to the candidate, on the "
        "sessions it was trained on.",
    )
    watch_sessions: int = Field(
        8, ge=0, description="Sessions watched after a deploy before it is final (0: no watch)."
    )
    watch_alpha: float = Field(
        0.05, gt=0, lt=1, description="Level of the watch's one-sided tests (roll back below it)."
    )
    admin_token: str = Field(
        "realtime-local", description="Bearer token of the server's /admin routes this loop uses."
    )
    port: int = Field(
        0, ge=0, le=65535, description="Port of the server it starts (0: a free one)."
    )
    keep_serving: bool = Field(
        False, description="Leave the server running after the last cycle (else stop it)."
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
