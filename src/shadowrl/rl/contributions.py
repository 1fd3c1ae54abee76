"""What an optional component adds to the deploy gate and to a run report, built once
here: the core sees it only through these, so the core's own files never name it.

    build_step_checks   checks of a companion across a candidate's training step
                        (`companion.StepCheck`): `realtime/training.py` measures them,
                        the deploy gate (`eval/gate.py`) alarms on how far they fell
    report_sections     each component's part of a run report's RL section, from the
                        per-step metrics rows (`pipeline/report.py`)

The one component today is the MTP draft heads (`mtp_evidence.py`: their acceptance per
draft position, and its table in the report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from shadowrl.rl.config import TrainConfig

if TYPE_CHECKING:
    from shadowrl.rl.companion import StepCheck
    from shadowrl.rl.mtp_evidence import Limits

# A component's lines of a run report from its per-step metrics rows ([]: none logged).
Section = Callable[[Sequence[Mapping[str, Any]]], list[str]]


def build_step_checks(train: TrainConfig, limits: Limits) -> tuple[StepCheck, ...]:
    """The checks of the components `train` turns on, each with its gate limit read from
    `limits` (the `realtime` settings); () when none is on."""
    from shadowrl.rl.mtp_evidence import heads_check

    found = heads_check(train.mtp, limits)
    return () if found is None else (found,)


def report_sections() -> tuple[Section, ...]:
    """Every component's part of a run report. Each is empty for a run that logged none
    of its metrics, so a run without the component reports nothing of it."""
    from shadowrl.rl.mtp_evidence import heads_table

    return (heads_table,)
