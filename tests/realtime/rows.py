"""A `cycles.jsonl` row to write in tests: every field a finished cycle records, with
plain values; a test overrides the ones it reads."""

from __future__ import annotations

from typing import Any

from shadowrl.realtime.record import CycleRow, MixCounts
from shadowrl.realtime.rows import RowCounts


def a_row(cycle: int, **fields: Any) -> CycleRow[Any]:
    values: dict[str, Any] = {
        "cycle": cycle, "deployed_before": "ckpt/v0", "candidate": f"ckpt/v{cycle}",
        "sessions": 4, "with_feedback": 3, "reward_mean": 0.5, "accept_rate": 0.5,
        "collect_s": 1.0, "train_s": 2.0, "eval_s": 3.0, "gate": "reject",
        "deployed_after": "ckpt/v0", "cycle_s": 7.0, "gate_s": 0.5, "deploy_s": 0.0,
        "watch_s": 0.0, "caught_by": None, "reason": "not better", "rolled_back": False,
        "watch": None, "rows": RowCounts(4, 3, 1, 0, 0, 2),
        "mix": MixCounts((), 0, 0, 0), "branching": None, "kl": 0.01,
        "clarifying_rate": 0.0, "broken_rate": 0.0, "no_edit_rate": 0.25,
        "min_detectable_drop": None, "alarm_tests": None, "train_tokens": 100,
    }  # fmt: skip
    return CycleRow(**(values | fields))
