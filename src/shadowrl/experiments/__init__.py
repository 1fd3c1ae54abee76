"""Measurements built on the real-time loop: simulated users, a planted preference, a
permuted-feedback control, a fixed panel, power and trend tests.

The loop never imports this package; it calls what `build_measurement` (`measure.py`)
returns through `realtime.context.Measurement`. Other packages import from here, never
from its modules; names are imported on first use (`shadowrl.lazy`).
"""

from typing import TYPE_CHECKING

from shadowrl.lazy import exports

if TYPE_CHECKING:
    from shadowrl.experiments.learning import jsonl_appender as jsonl_appender
    from shadowrl.experiments.measure import LearningMeasurement as LearningMeasurement
    from shadowrl.experiments.measure import SimulatedUsers as SimulatedUsers
    from shadowrl.experiments.measure import build_measurement as build_measurement
    from shadowrl.experiments.measure import planted_judge as planted_judge
    from shadowrl.experiments.panel import panel_tasks as panel_tasks
    from shadowrl.experiments.plan import write_plans as write_plans
    from shadowrl.experiments.preference import Preference as Preference
    from shadowrl.experiments.preference import learnable as learnable
    from shadowrl.experiments.reaction import Outcome as Outcome
    from shadowrl.experiments.reaction import react as react
    from shadowrl.experiments.users import UserOutcome as UserOutcome
    from shadowrl.experiments.users import Users as Users
    from shadowrl.experiments.users import grade_diff as grade_diff

_WHERE = {
    "jsonl_appender": "learning",
    "LearningMeasurement": "measure",
    "SimulatedUsers": "measure",
    "build_measurement": "measure",
    "planted_judge": "measure",
    "panel_tasks": "panel",
    "write_plans": "plan",
    "Preference": "preference",
    "learnable": "preference",
    "Outcome": "reaction",
    "react": "reaction",
    "UserOutcome": "users",
    "Users": "users",
    "grade_diff": "users",
}
if not TYPE_CHECKING:
    __getattr__ = exports(__name__, _WHERE)
