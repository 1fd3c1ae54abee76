"""One graded episode: the agent harness on a task in a sandbox, then the hidden-test verifier.

RL rollouts, evaluation and the SFT expert all run exactly this, so the policy sees the
same prompt, tools (semantic search included) and budgets everywhere and every episode
is graded by the same rule. Callers own the sandbox: they fork, close and count crashes
in their own way.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.types import Policy, Trajectory

if TYPE_CHECKING:
    from shadowrl.agent.config import AgentConfig
    from shadowrl.sandbox.base import Sandbox
    from shadowrl.search import SemanticIndex
    from shadowrl.search.config import SearchConfig
    from shadowrl.tasks import PreparedTask
    from shadowrl.tasks.config import ShapingConfig
    from shadowrl.tasks.verify import Verdict

_INDEXES: dict[Path, SemanticIndex] = {}


def prepared_index(prepared: PreparedTask, search: SearchConfig) -> SemanticIndex:
    """The semantic index of a prepared workspace: built (or loaded) once, shared by forks."""
    from shadowrl.search import build_or_load_index, directory_texts, get_embedder

    if prepared.workspace not in _INDEXES:
        files = directory_texts(prepared.workspace)
        cache = Path(search.cache_dir).expanduser()
        _INDEXES[prepared.workspace] = build_or_load_index(
            files, cache, get_embedder(search.embedder), search.chunk
        )
    return _INDEXES[prepared.workspace]


async def graded_episode(
    policy: Policy,
    sandbox: Sandbox,
    prepared: PreparedTask,
    *,
    tokenizer: Any,
    agent: AgentConfig,
    shaping: ShapingConfig | None = None,
    search: SearchConfig | None = None,
) -> tuple[Trajectory, Verdict]:
    """Run the harness on `prepared.task` in `sandbox`, grade it; reward and `resolved` set.

    The semantic-search index is built only if the agent has that tool (`search` config,
    default settings if None).
    """
    from shadowrl.agent.loop import run_episode
    from shadowrl.search.config import SearchConfig
    from shadowrl.tasks import task_prompt
    from shadowrl.tasks.verify import verify

    task = prepared.task
    index = None
    if "semantic_search" in agent.tools:
        index = await asyncio.to_thread(prepared_index, prepared, search or SearchConfig())
    traj = await run_episode(
        policy,
        sandbox,
        task_prompt(task),
        tokenizer=tokenizer,
        config=agent,
        task_id=task.instance_id,
        index=index,
    )
    verdict = await asyncio.to_thread(
        verify, task, prepared, sandbox, shaping=shaping, trajectory=traj
    )
    info = {**traj.info, "resolved": verdict.resolved}
    return dataclasses.replace(traj, reward=verdict.reward, info=info), verdict
