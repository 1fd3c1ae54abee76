"""The optional capabilities of an RL run, each built once from its config.

`run.py` wires what these return and never asks about the capability again; a
capability that is off is never imported (replay's recorder, `train.save_rollouts`, is
built the same way by its own package: `replay.build_recorder`):

    train.branching     tree rollouts (`tree.py`, credit in `credit_tree.py`) instead of
                        flat groups of `train.group_size` episodes
    train.probe         flat groups extended only past a probe that solved the task
                        (`probe.py`)
    agent.summary       self-summarisation's per-step metrics (`agent/summary.py`; in
                        the episode itself it is the loop's `agent/compaction.py`)
    train.mtp           MTP draft heads re-distilled beside the policy: the trainer's
                        `Companion`, from `companion.build_companion` (`rl/mtp_rl.py`,
                        imported only with heads); the engine's side is
                        `inference/speculation.py`
"""

from __future__ import annotations

from typing import Any

from shadowrl.agent.config import AgentConfig
from shadowrl.episode import EpisodeSpec
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.orchestrator import EpisodeMetrics, RolloutFn
from shadowrl.rl.rollout import Group, rollout_group
from shadowrl.rl.roots import SandboxRoots


def build_rollouts(
    policy: Any, train: TrainConfig, tokenizer: Any, spec: EpisodeSpec, roots: SandboxRoots | None
) -> RolloutFn:
    """Flat groups, tree rollouts with `train.branching` (`rl/tree.py`, imported only then),
    or flat groups behind a probe with `train.probe` (`rl/probe.py`, likewise)."""
    if train.branching.enabled:
        from shadowrl.rl.tree import rollout_tree

        async def tree(task: Any, prep: Any, version: int) -> Group:
            return await rollout_tree(
                policy, task, prep, branching=train.branching, tokenizer=tokenizer,
                spec=spec, version=version, roots=roots,
            )  # fmt: skip

        return tree

    async def flat_n(task: Any, prep: Any, version: int, n: int) -> Group:
        return await rollout_group(
            policy, task, prep, group_size=n, tokenizer=tokenizer,
            spec=spec, version=version, roots=roots,
        )  # fmt: skip

    if train.probe:
        from shadowrl.rl.probe import probing

        return probing(flat_n, train.probe, train.group_size)

    async def flat(task: Any, prep: Any, version: int) -> Group:
        return await flat_n(task, prep, version, train.group_size)

    return flat


def build_episode_metrics(agent: AgentConfig) -> EpisodeMetrics:
    """Per-step summary metrics with `agent.summary` on (`agent/summary.py`, imported only
    then); none when off, as no episode summarises."""
    if not agent.summary.enabled:
        return lambda trajectories: {}
    from shadowrl.agent.summary import summary_metrics

    return summary_metrics
