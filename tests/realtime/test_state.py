"""The cycle's state survives a save and a load typed (a resumed cycle reads dataclasses,
not string-keyed dicts), and the untyped state of earlier versions is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.builders import make_result, rows
from shadowrl.eval.gate import GateChecks, decide
from shadowrl.realtime.checks import LiveCounts, watch
from shadowrl.realtime.context import (
    BranchStats,
    Collected,
    CycleState,
    Rewarded,
    Trained,
)
from shadowrl.realtime.cycle import load_state, save_state
from shadowrl.realtime.record import MixCounts
from shadowrl.realtime.rewards import RewardSummary
from shadowrl.realtime.rows import RowCounts
from shadowrl.realtime.training import ArmResult
from shadowrl.rl.companion import Moved


def test_a_saved_cycle_loads_back_equal_and_typed(tmp_path: Path) -> None:
    moved = Moved("mtp", "mtp_acceptance_drop", 0.1, 0.1, (0.5,), (0.4,))
    arm = ArmResult(RowCounts(4, 3, 1, 0, 0, 2), "parent", "cand", version=1, kl=5.0,
                    metrics={"loss": 1.0}, tokens=10, steps=1, checks=(moved,))  # fmt: skip
    verdict = decide(
        make_result(rows(10, 2)), make_result(rows(10, 1)), margin=0.02, alpha=0.05,
        checks=GateChecks(require_power=False), training=arm.evidence(),
    )  # fmt: skip
    assert verdict.caught_by == "alarm:kl_to_deployed"
    summary = RewardSummary(4, 3, 1, 0, 2, 1, 0.5, 0.67, 0.0, 0.0, 0.25)
    st = CycleState(
        3, "watch", "2026-01-01T00:00:00+00:00", Collected("2026-01-01T01:00:00+00:00", "parent"),
        Rewarded(summary, 3), Trained(arm, MixCounts(("t1",), 1, 2, 0), BranchStats(3, 2, 1, 1, 0, 2, 1, 1)),
        None, verdict, None,
        watch(LiveCounts(4, 2, 4, 0, 0), LiveCounts(4, 3, 4, 0, 0), alpha=0.05),
        {"collect": 1.5, "train": 2.0},
    )  # fmt: skip
    save_state(tmp_path, st)
    back = load_state(tmp_path)
    assert back == st
    assert back is not None and back.verdict is not None and back.trained is not None
    assert back.verdict.alarms[0].name == "kl_to_deployed"
    assert back.trained.branching == BranchStats(3, 2, 1, 1, 0, 2, 1, 1)
    assert back.verdict.record() == verdict.record()
    assert back.trained.candidate.to_json()["mtp"] == {"parent": [0.5], "candidate": [0.4]}
    assert back.trained.candidate.checks == (moved,)


def test_the_untyped_state_of_an_earlier_version_is_refused(tmp_path: Path) -> None:
    old = {"cycle": 1, "stage": "eval", "since": "2026-01-01T00:00:00+00:00", "out": {}}
    (tmp_path / "state.json").write_text(json.dumps(old))
    with pytest.raises(RuntimeError, match="earlier shadowrl"):
        load_state(tmp_path)
    assert load_state(tmp_path / "none") is None
