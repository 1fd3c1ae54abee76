"""Tree rollouts on the Ray backend (`train.branching`): each of a group's `roots`
subtrees runs whole on one environment worker (`EnvWorker.subtree`), where its
checkpoints' snapshots are. `backend.py` builds this instead of the flat
`ClusterRollouts` only when branching is on."""

from __future__ import annotations

from typing import Any

from shadowrl.rl.cluster.proxies import ClusterRollouts
from shadowrl.rl.cluster.workers import WorkerPool
from shadowrl.rl.config import BranchingConfig
from shadowrl.rl.rollout import Group
from shadowrl.rl.tree import tree_group


class ClusterTreeRollouts(ClusterRollouts):
    """`RolloutFn`: a group's `roots` subtrees over the worker pool; a lost subtree is
    masked whole, like a lost episode."""

    def __init__(self, pool: WorkerPool, branching: BranchingConfig, retries: int) -> None:
        super().__init__(pool, branching.roots, retries)
        self.branching = branching

    def group(
        self, task_id: str, results: list[Any], version: int, wall_s: float, lost: int
    ) -> Group:
        return tree_group(task_id, results, version, wall_s, lost)

    def run_on(self, worker: Any, task: Any, prepared: Any) -> Any:
        return worker.subtree.remote(task, prepared, self.branching)
