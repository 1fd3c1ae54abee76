"""Training rollouts kept as replayable records (`train.save_rollouts`).

Every episode of every group is written to `run_dir/rollouts/` in the format of
`shadowrl run --save` (`agent/record.py`), without the per-turn files: `shadowrl
replay` rebuilds the workspace at a turn by re-running the recorded edits on the
task's fresh one. The meta holds the task itself, the agent config the episode ran
under, the base model (architecture and tokenizer) and the weight store, so replay
can teacher-force the recorded tail through the exact policy version each token was
sampled from (the store keeps every version it published).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from shadowrl.agent import record
from shadowrl.episode import EpisodeSpec
from shadowrl.rl.rollout import Group
from shadowrl.tasks import Task

ROLLOUTS_DIR = "rollouts"


class RolloutRecorder:
    """Writes each group's episodes as `v<version>-<task>-<group>-<leaf>.json` files."""

    def __init__(self, root: Path, spec: EpisodeSpec, model_path: str, weights_url: str):
        self.root, self.spec = root, spec
        self.model_path, self.weights_url = model_path, weights_url
        root.mkdir(parents=True, exist_ok=True)

    def __call__(self, task: Task, group: Group, version: int) -> list[Path]:
        tag, out = uuid.uuid4().hex[:8], []
        for i, traj in enumerate(group.trajectories):
            path = self.root / f"v{version:05d}-{task.instance_id}-{tag}-{i}.json"
            record.save(
                path, traj, [],
                task=task.instance_id, id=task.instance_id, task_json=task.model_dump(mode="json"),
                model=self.model_path, weights=self.weights_url, version=version,
                agent=self.spec.agent.model_dump(mode="json"), source="rollout",
            )  # fmt: skip
            out.append(path)
        return out
