"""`shadowrl eval --ablate`: both arms on the same tasks and seed, the paired difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shadowrl.commands.main import main


@pytest.mark.slow  # ~15 s of CPU, a minute of wall time on a busy box
def test_ablating_the_edit_tool_costs_the_scripted_expert_every_episode(tmp_path: Path) -> None:
    out = tmp_path / "abl"
    argv = ["eval", "--suite", "demo", "--policy", "scripted", "--samples", "1",
            "--ablate", "agent.tools=-edit_file", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    r = json.loads((out / "ablation.json").read_text())
    assert (r["field"], r["value"], r["tasks"], r["samples"]) == ("agent.tools", "-edit_file", 1, 1)
    assert (r["base_rate"], r["ablated_rate"]) == (1.0, 0.0)  # the expert edits with edit_file
    assert r["delta"]["mean"] == -1.0 and r["sign"]["worse"] == 1
    base = json.loads((out / "base" / "eval.json").read_text())
    ablated = json.loads((out / "ablated" / "eval.json").read_text())
    assert base["pins"]["suite_hash"] == ablated["pins"]["suite_hash"]
    assert base["pins"]["config_digest"] != ablated["pins"]["config_digest"]


@pytest.mark.parametrize("spec", ["agent.nope=1", "agent.tools=-not_a_tool", "agent.tools"])
def test_a_bad_ablation_is_a_usage_error(tmp_path: Path, spec: str) -> None:
    argv = ["eval", "--suite", "demo", "--policy", "noop", "--ablate", spec, "--out", str(tmp_path)]
    assert main(argv) == 2
