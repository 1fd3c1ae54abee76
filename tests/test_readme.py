"""The README's dataflow table: each stage names at most three files, each one real."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).parents[1]


def dataflow_files() -> dict[str, list[str]]:
    """stage -> the paths its `file` column names (in backticks)."""
    text = (REPO / "README.md").read_text()
    table = text.split("## The dataflow, stage by stage", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]  # no header
    return {
        row.split(" | ", 1)[0].removeprefix("| "): re.findall(r"`([^`]+)`", row.rsplit(" | ", 1)[1])
        for row in rows
    }


def test_every_stage_names_at_most_three_files_that_exist() -> None:
    stages = dataflow_files()
    assert len(stages) > 20  # the table was found and read
    crowded = {stage: files for stage, files in stages.items() if len(files) > 3}
    assert not crowded, crowded
    for stage, files in stages.items():
        for f in files:
            assert (REPO / "src" / "shadowrl" / f).exists() or (REPO / f).exists(), (stage, f)
