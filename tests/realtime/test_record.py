"""`cycles.jsonl` rows are typed (`realtime/record.py`): written with the keys they have
always had, read back into the same types, and a row that lacks a field or holds a wrong
one fails at load with an error naming it, not in the report."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from shadowrl.eval.alarms import RateTest
from shadowrl.experiments.row import LearningRow, PreferenceCounts
from shadowrl.realtime.checks import WatchResult
from shadowrl.realtime.record import BranchRow, from_json, read_cycles, to_json

from .rows import a_row

WATCH = WatchResult(6, 0.0, 1.0, 0.01, 0.0, 0.0, 1.0, 0.0, 0.0, True, "accepts fell")
BRANCH = BranchRow(3, 2, 1, 1, 0, 4, 1, 1, unfaithful_why={"differs": 1}, generated=80)
RATES = {"no_edit": RateTest("no_edit_rate_increase", (1, 8), (0, 8), 0.125, 0.5)}


def test_a_row_reads_back_as_it_was_written_with_the_keys_rows_always_had() -> None:
    row = a_row(2, watch=WATCH, branching=BRANCH, alarm_tests=RATES, rolled_back=True)
    line = to_json(row)
    obj = json.loads(line)
    assert obj["watch"]["previous_accept_rate"] == 1.0 and obj["rows"]["trained"] == 3
    assert obj["alarm_tests"]["no_edit"]["candidate"] == [1, 8]
    assert "measured" not in obj  # a measurement's fields are written flat, not nested
    assert from_json(line) == row


def test_a_measurements_fields_are_flat_and_read_back_by_its_type() -> None:
    pref = PreferenceCounts(10, 8, 6, 0, 0, 6)
    row = a_row(1, measured=LearningRow(panel_s=4.0, preference=pref))
    obj = json.loads(to_json(row))
    assert obj["panel_s"] == 4.0 and obj["preference"]["rejected_by_preference"] == 6
    assert from_json(to_json(row), LearningRow) == row
    # read without the measurement's type, or a row without its fields: nothing measured
    assert from_json(to_json(row)).measured is None
    assert from_json(to_json(a_row(1)), LearningRow).measured is None


def test_an_old_branching_row_loads_with_its_later_counts_unknown(tmp_path: Path) -> None:
    obj = json.loads(to_json(a_row(1, branching=BRANCH)))
    for added in ("unlabeled", "recorded", "recorded_why", "generated"):
        del obj["branching"][added]  # a row an earlier version wrote
    (tmp_path / "cycles.jsonl").write_text(json.dumps(obj) + "\n\n")
    (row,) = read_cycles(tmp_path)
    assert row.branching is not None and row.branching.generated is None  # unknown, not 0
    assert row.branching.points == 2


@pytest.mark.parametrize(
    ("change", "named"),
    [({"gate": None, "cycle_s": "slow"}, "cycle_s"), ({"sessions": None}, "sessions")],
)
def test_a_wrong_field_fails_at_load_naming_it(change: dict[str, object], named: str) -> None:
    obj = json.loads(to_json(a_row(3))) | change
    with pytest.raises(ValueError, match=named) as e:
        from_json(json.dumps(obj))
    assert "cycle 3" in str(e.value)


def test_a_missing_field_fails_at_load_naming_it() -> None:
    obj = json.loads(to_json(a_row(3)))
    del obj["reason"]
    with pytest.raises(ValueError, match="reason"):
        from_json(json.dumps(obj))


def test_stage_times_are_the_seconds_fields_with_the_measurements() -> None:
    row = dataclasses.replace(a_row(1), measured=LearningRow(panel_s=4.0))
    assert row.seconds() == {
        "collect": 1.0, "train": 2.0, "eval": 3.0, "gate": 0.5, "deploy": 0.0, "watch": 0.0,
        "panel": 4.0,
    }  # fmt: skip
