"""One graded episode: the agent harness on a task in a sandbox, then the hidden-test verifier.

RL rollouts, evaluation and the SFT expert all run exactly this, so the policy sees the
same prompt, tools (semantic search included) and budgets everywhere and every episode
is graded by the same rule. Callers own the sandbox: they fork, close and count crashes
in their own way. The semantic index is an aid, not a precondition: if building it
fails, the episode runs without it (the search tool then indexes the sandbox itself)
and the failure is logged and recorded in the trajectory's `info["index_error"]`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
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

log = logging.getLogger(__name__)
_INDEXES: dict[Path, SemanticIndex] = {}


def prepared_index(prepared: PreparedTask, search: SearchConfig) -> SemanticIndex:
    """The semantic index of a prepared workspace: built (or loaded) once, shared by forks."""
    from shadowrl.search import build_or_load_index, directory_texts, get_embedder

    if prepared.workspace not in _INDEXES:
        files = directory_texts(prepared.workspace)
        cache = Path(search.cache_dir).expanduser()
        index = build_or_load_index(files, cache, get_embedder(search.embedder), search.chunk)
        if index.unparsed:
            log.warning(
                "%s: %d Python file(s) did not parse and are indexed as line windows: %s",
                prepared.task.instance_id, len(index.unparsed), ", ".join(index.unparsed[:5]),
            )  # fmt: skip
        _INDEXES[prepared.workspace] = index
    return _INDEXES[prepared.workspace]


def _index_or_none(
    prepared: PreparedTask, search: SearchConfig
) -> tuple[SemanticIndex | None, str | None]:
    """(index, None), or (None, the error) when building it failed: never a crashed episode."""
    try:
        return prepared_index(prepared, search), None
    except Exception as err:
        log.exception(
            "%s: semantic index failed; episode runs without it", prepared.task.instance_id
        )
        return None, f"{type(err).__name__}: {err}"


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
    index, index_error = None, None
    if "semantic_search" in agent.tools:
        index, index_error = await asyncio.to_thread(
            _index_or_none, prepared, search or SearchConfig()
        )
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
    if index_error is not None:
        info["index_error"] = index_error
    return dataclasses.replace(traj, reward=verdict.reward, info=info), verdict
