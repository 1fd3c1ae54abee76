"""The measurement's part of the `realtime:` section: simulated users, the panel, the control.

`MeasuredRealtimeConfig` is the product loop's `RealtimeConfig` with these fields added,
so the config tree keeps one `realtime:` section while the loop's own class knows
nothing of them. Kept free of heavy imports, like every config section.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shadowrl.realtime.config import RealtimeConfig


class UsersConfig(BaseModel):
    """How simulated users pick tasks and react (see `experiments/users.py`)."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field("easy:train", description="Tasks users bring (suite[:split]).")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks of the suite.")
    population: int = Field(
        0,
        description="Which simulated population: each user's task and reactions are drawn "
        "from (population, user name). Apart from the run `seed` so that two runs or arms "
        "(other seeds, other policies) can meet the same users.",
    )
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
        "(experiments/preference.py). None: every task of the suite.",
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
        "count is sized to detect (`realtime --plan`, experiments/power.py).",
    )


class PanelConfig(BaseModel):
    """The fixed panel of users replayed on each checkpoint (`experiments/panel.py`)."""

    model_config = ConfigDict(extra="forbid")
    tasks: int = Field(8, ge=1, description="Panel users: the first N tasks of the users' pool.")
    samples: int = Field(2, ge=1, description="Episodes per panel task (fixed sample indices).")
    effect: float = Field(
        0.1,
        gt=0,
        lt=1,
        description="Rise in the panel's accept rate the run is sized to detect: the power "
        "calculation (`realtime --plan`, experiments/power.py) says how many episodes that needs.",
    )


class MeasuredRealtimeConfig(RealtimeConfig):
    """`shadowrl realtime`: the loop's settings, and those of what measures it."""

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
    users: UsersConfig = Field(
        default_factory=UsersConfig, description="Simulated users (--simulate-users)."
    )

    @model_validator(mode="after")
    def _control_needs_panel(self) -> MeasuredRealtimeConfig:
        if self.control and self.panel is None:
            raise ValueError("realtime.control needs realtime.panel: nothing else compares it")
        return self
