"""The branching counts as `cycles.jsonl` records them (the stage's `BranchStats` as a
`record.BranchRow`, as `cycle.cycle_row` writes it) and as the report shows them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from shadowrl.realtime.context import BranchStats
from shadowrl.realtime.record import read_cycles, to_json
from shadowrl.realtime.report import branching_section

from .rows import a_row

STATS = BranchStats(
    negative=3, points=2, faithful=1, unfaithful=1, unjudged=0, continuations=4, groups=1,
    with_contrast=1, unfaithful_why={"run (call_0_0): output differs": 1}, unlabeled=1,
    recorded=0, recorded_why={"the judge gave the recorded continuation no label": 1},
    generated=80,
)  # fmt: skip


def test_every_branching_count_is_a_column_of_the_cycle_report(tmp_path: Path) -> None:
    old = dataclasses.asdict(STATS)
    for added in ("unlabeled", "recorded", "recorded_why", "generated"):
        del old[added]  # a row an earlier version wrote
    rows = [
        json.loads(to_json(a_row(1))) | {"branching": dataclasses.asdict(STATS)},
        json.loads(to_json(a_row(2))),  # branching off
        json.loads(to_json(a_row(3))) | {"branching": old},
    ]
    (tmp_path / "cycles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = branching_section(read_cycles(tmp_path))
    assert "## Branching" in lines
    header = ("| cycle | negative | points | faithful | unfaithful | unjudged | continuations "
              "| unlabeled | generated | groups | with_contrast | recorded |")  # fmt: skip
    assert header in lines
    assert "| 1 | 3 | 2 | 1 | 1 | 0 | 4 | 1 | 80 | 1 | 1 | 0 |" in lines
    assert "| 3 | 3 | 2 | 1 | 1 | 0 | 4 | — | — | 1 | 1 | — |" in lines, "unknown, not 0"
    assert not any(line.startswith("| 2 |") for line in lines)
    assert "- cycle 1, unfaithful: 1 × run (call_0_0): output differs" in lines
    assert (
        "- cycle 1, recorded continuation left out: 1 × "
        "the judge gave the recorded continuation no label" in lines
    )
    assert branching_section([a_row(1)]) == [], "off: no section"
