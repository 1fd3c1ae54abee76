"""Optional capabilities of an RL run stay out of its code paths when they are off: with
`train.branching`, `train.save_rollouts` and `agent.summary` off, the run's wiring, its
rollouts, its step metrics and the batch builder never import tree rollouts, the
rollout records or self-summarisation (checked in a fresh interpreter, where nothing
else has imported them yet); a tree group still brings its own credit assignment to
the batch builder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from shadowrl.rl.batch import rows_from_groups
from shadowrl.rl.credit_tree import Leaves, Subtree, tree_rows
from shadowrl.rl.row import OwnCredit
from shadowrl.types import Segment, Trajectory

WIRING = """
import json, sys
from pathlib import Path
import shadowrl.rl.run  # the run's wiring, in this process
from shadowrl.rl.batch import build_rl_batch
from shadowrl.agent.config import AgentConfig
from shadowrl.replay import build_recorder
from shadowrl.rl.capabilities import build_episode_metrics, build_rollouts
from shadowrl.rl.config import TrainConfig
from shadowrl.types import Segment, Trajectory

train = TrainConfig.model_validate(json.loads(sys.argv[1]))
agent = AgentConfig.model_validate(json.loads(sys.argv[3]))
seg = Segment((1, 2, 3), (False, True, True), (0.0, -0.5, -0.5), (-1, 0, 0))
group = [Trajectory("t", (), (), (seg,), "submitted", reward=r) for r in (1.0, 0.0)]
batch = build_rl_batch([group], trainer_version=0, max_staleness=1, microbatch_tokens=64)
build_rollouts(None, train, None, None, None)
build_recorder(train.save_rollouts, Path(sys.argv[2]), None, "tiny", train.weights.url)
metrics = build_episode_metrics(agent)(group)
loaded = sorted(m for m in sys.modules if m.startswith("shadowrl."))
print(json.dumps({"rows": len(batch.microbatches), "metrics": metrics, "modules": loaded}))
"""
OPTIONAL = (
    "shadowrl.rl.tree",
    "shadowrl.rl.credit_tree",
    "shadowrl.replay.record",  # replay's record format and its recorders
    "shadowrl.agent.summary",
)
SUMMARY_ON = {"summary": {"enabled": True, "trigger_tokens": 3000}}


def wired(train: dict[str, object], agent: dict[str, object], run_dir: Path) -> dict[str, Any]:
    """What a fresh interpreter loaded to wire a run, batch a group and take its metrics."""
    out = subprocess.run(
        [sys.executable, "-c", WIRING, json.dumps(train), str(run_dir), json.dumps(agent)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    assert result["rows"] == 1
    return result


def test_trees_records_and_summaries_off_are_never_imported(tmp_path: Path) -> None:
    off = wired({}, {}, tmp_path)
    assert "shadowrl.rl.run" in off["modules"] and not set(OPTIONAL) & set(off["modules"])
    assert off["metrics"] == {}
    on = wired({"branching": {"enabled": True}, "save_rollouts": True}, SUMMARY_ON, tmp_path)
    assert set(OPTIONAL) <= set(on["modules"])
    assert on["metrics"]["summaries_per_episode"] == 0.0
    # probed groups (flat only, so never beside trees): their module only when on
    assert "shadowrl.rl.probe" not in off["modules"] + on["modules"]
    assert "shadowrl.rl.probe" in wired({"probe": 2}, {}, tmp_path)["modules"]


def _traj(reward: float, *gen: int) -> Trajectory:
    ids = (1, 2, *gen)
    seg = Segment(ids, (False, False, *(True,) * len(gen)), (0.0,) * len(ids), (0,) * len(ids))
    return Trajectory("t", (), (), (seg,), "submitted", reward=reward)


def test_a_tree_group_assigns_its_own_credit() -> None:
    trees = [Subtree((_traj(1.0, 5, 6), _traj(0.0, 5, 7)), (0, 3)), Subtree((_traj(0.0, 8),))]
    leaves = Leaves(t for s in trees for t in s.leaves)
    leaves.subtrees = trees
    assert isinstance(leaves, OwnCredit) and not isinstance(list(leaves), OwnCredit)
    flat = [_traj(1.0, 4), _traj(0.0, 4)]
    rows, _ = rows_from_groups([flat, leaves])
    own = tree_rows(trees, first_chain=2)  # chains numbered after the flat group's two
    assert rows[2:] == own and {r.chain for r in own} == {2, 3}
