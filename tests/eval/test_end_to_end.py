"""`shadowrl eval` of the gold and noop policies on built-in easy tasks, then `shadowrl gate`.

Everything is real: task preparation, sandboxes, the agent harness, the hidden-test
verifier. Gold must resolve every task and noop none; the gate must then reject
noop as a candidate against gold and promote gold against noop. Slow because the
first run builds task workspaces and test envs (cached across runs).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from shadowrl.commands import eval as eval_command
from shadowrl.commands import gate as gate_command
from shadowrl.commands.config import Config
from shadowrl.eval.result import EvalResult
from shadowrl.tasks.task import SUITES_DIR

pytestmark = pytest.mark.slow

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)
TASKS = 5  # the fewest for which an exact one-sided sign test can reach p < 0.05 (1/32)


def _parse(add: Callable[[argparse.ArgumentParser], None], argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add(parser)
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not (SUITES_DIR / "easy.jsonl").exists():
        pytest.skip("built-in easy suite not generated yet")
    config = Config.model_validate({"tasks": {"cache_dir": str(CACHE)}})
    out = {}
    for policy in ("gold", "noop"):
        out[policy] = tmp_path_factory.mktemp(policy)
        argv = ["--suite", "easy", "--policy", policy, "--limit", str(TASKS), "--concurrency", "2"]
        args = _parse(eval_command.add_args, [*argv, "--out", str(out[policy]), "--no-progress"])
        assert eval_command.run(args, config) == 0
    return out


def test_gold_resolves_everything_and_noop_nothing(runs: dict[str, Path]) -> None:
    gold = EvalResult.load(runs["gold"] / "eval.json")
    noop = EvalResult.load(runs["noop"] / "eval.json")
    assert gold.overall.tasks == noop.overall.tasks == TASKS
    assert (gold.overall.errors, noop.overall.errors) == (0, 0)
    assert gold.overall.pass1.value == 1.0 and noop.overall.pass1.value == 0.0
    assert all(s.end == "submitted" for t in gold.tasks for s in t.samples)
    assert gold.behaviour.tokens_per_resolved is not None and gold.behaviour.files_edited >= 1
    assert noop.behaviour.tokens_per_resolved is None and noop.behaviour.diff_lines == 0
    assert gold.pins.suite_hash == noop.pins.suite_hash
    assert gold.pins.harness_version == noop.pins.harness_version
    assert "| **all** | 5 | 5 | 100.0%" in (runs["gold"] / "report.md").read_text()


def test_gate_rejects_noop_and_promotes_gold(runs: dict[str, Path]) -> None:
    # noop solves nothing: no regression from it is detectable, so the loop's rule
    # refuses to promote over it while power is required
    gold, noop = str(runs["gold"] / "eval.json"), str(runs["noop"] / "eval.json")
    strict = Config.model_validate({})
    args = _parse(gate_command.add_args, ["--candidate", gold, "--incumbent", noop])
    assert gate_command.run(args, strict) == 1
    config = Config.model_validate({"realtime": {"require_power": False}})
    assert (
        gate_command.run(
            _parse(gate_command.add_args, ["--candidate", noop, "--incumbent", gold]), config
        )
        == 1
    )
    assert (
        gate_command.run(
            _parse(gate_command.add_args, ["--candidate", gold, "--incumbent", noop]), config
        )
        == 0
    )
    sign = ["--test", "sign"]
    assert (
        gate_command.run(
            _parse(gate_command.add_args, ["--candidate", noop, "--incumbent", gold, *sign]), config
        )
        == 1
    )
