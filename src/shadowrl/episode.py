"""One graded episode: the agent harness on a task in a sandbox, then the hidden-test verifier.

RL rollouts, evaluation, SFT demonstrations, suite validation and `shadowrl run` all
run exactly this, with one `EpisodeSpec` built once by the command, so the policy sees
the same prompt, tools (semantic search included), budgets and reward shaping
everywhere, and every episode is graded by the same rule. Callers own the sandbox:
they fork, close and count crashes in their own way. The semantic index is an aid, not
a precondition: if building it fails, the episode runs without it (the search tool then
indexes the sandbox itself) and the failure is logged and recorded in the trajectory's
`info["index_error"]`.

A `PolicyFactory` says which policy plays each episode: one shared model (the engine
or a server batches every episode) or a fresh scripted reference per task.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from shadowrl.agent import Checkpoints, EpisodeCheckpoint, run_episode
from shadowrl.agent.config import AgentConfig
from shadowrl.sandbox import Sandbox, SandboxConfig
from shadowrl.search import SemanticIndex, build_or_load_index, directory_texts, get_embedder
from shadowrl.search.config import SearchConfig
from shadowrl.tasks import PreparedTask, Task, Verdict, task_prompt, verify
from shadowrl.tasks.config import ShapingConfig
from shadowrl.tasks.reference import reference_agent_config, reference_policy
from shadowrl.types import Policy, Step, Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything every episode of a run shares, built once from the config tree."""

    agent: AgentConfig = field(default_factory=AgentConfig)
    shaping: ShapingConfig = field(default_factory=ShapingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)

    def open_sandbox(self, prepared: PreparedTask) -> Sandbox:
        """A fresh root sandbox on `prepared`'s workspace with this spec's backend and limits."""
        return prepared.sandbox(self.sandbox.backend, self.sandbox.limits)

    def for_reference(self) -> EpisodeSpec:
        """The same spec with budgets large enough for a scripted policy to type in whole
        files (prompt, tools and shaping unchanged)."""
        budgets = reference_agent_config().model_dump(include=REFERENCE_BUDGETS)
        return dataclasses.replace(self, agent=self.agent.model_copy(update=budgets))


# Agent budgets the scripted reference policies need; prompt and tools stay as configured.
REFERENCE_BUDGETS = {"max_turns", "max_new_tokens", "max_context_tokens", "max_episode_tokens"}

log = logging.getLogger(__name__)
_INDEXES: dict[Path, SemanticIndex] = {}


def prepared_index(prepared: PreparedTask, search: SearchConfig) -> SemanticIndex:
    """The semantic index of a prepared workspace: built (or loaded) once, shared by forks."""
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
    spec: EpisodeSpec,
    on_step: Callable[[Step], None] | None = None,
    start: EpisodeCheckpoint | None = None,
    checkpoints: Checkpoints | None = None,
) -> tuple[Trajectory, Verdict]:
    """Run the harness on `prepared.task` in `sandbox`, grade it; reward and `resolved` set.

    The semantic-search index is built only if the agent has that tool. `start` and
    `checkpoints` are `run_episode`'s (tree rollouts branch with them).
    """
    task = prepared.task
    index, index_error = None, None
    if "semantic_search" in spec.agent.tools:
        index, index_error = await asyncio.to_thread(_index_or_none, prepared, spec.search)
    traj = await run_episode(
        policy,
        sandbox,
        task_prompt(task),
        tokenizer=tokenizer,
        config=spec.agent,
        task_id=task.instance_id,
        index=index,
        on_step=on_step,
        start=start,
        checkpoints=checkpoints,
    )
    verdict = await asyncio.to_thread(
        verify, task, prepared, sandbox, shaping=spec.shaping, trajectory=traj
    )
    info = {**traj.info, "resolved": verdict.resolved, "voided_by": verdict.voided_by}
    if verdict.voided_by:  # which layer caught a hack attempt, and why (issue 18)
        info["voided_why"] = list(verdict.tampered)[:5]
    if index_error is not None:
        info["index_error"] = index_error
    return dataclasses.replace(traj, reward=verdict.reward, info=info), verdict


async def episode_in_new_sandbox(
    policy: Policy,
    prepared: PreparedTask,
    *,
    tokenizer: Any,
    spec: EpisodeSpec,
    on_step: Callable[[Step], None] | None = None,
) -> tuple[Trajectory, Verdict]:
    """`graded_episode` in a root sandbox of its own, closed afterwards."""
    sandbox = await asyncio.to_thread(spec.open_sandbox, prepared)
    try:
        return await graded_episode(
            policy, sandbox, prepared, tokenizer=tokenizer, spec=spec, on_step=on_step
        )
    finally:
        await asyncio.to_thread(sandbox.close)


async def reference_verdict(
    name: str, prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec | None = None
) -> Verdict:
    """The verifier's verdict on reference policy `name` on one prepared task, via the real
    loop. A reference episode that does not end cleanly (not submitted, or a malformed
    call) is a broken task or harness, not a score: it raises."""
    spec = (spec or EpisodeSpec()).for_reference()
    policy = reference_policy(name, prepared.task, prepared, tokenizer)
    traj, verdict = await episode_in_new_sandbox(policy, prepared, tokenizer=tokenizer, spec=spec)
    if traj.end != "submitted" or traj.tool_errors:
        raise RuntimeError(
            f"{prepared.task.instance_id}: {name} episode ended {traj.end!r}, "
            f"{traj.tool_errors} tool errors"
        )
    return verdict


async def run_reference(
    name: str, prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec | None = None
) -> tuple[bool, float]:
    """(resolved, reward) of reference policy `name` on one prepared task (`reference_verdict`)."""
    verdict = await reference_verdict(name, prepared, tokenizer, spec)
    return verdict.resolved, verdict.reward


class PolicyFactory(Protocol):
    """Makes the policy for one episode of a task, and says what it is."""

    @property
    def description(self) -> str:
        """What the policy is, recorded as a pin (e.g. 'model:runs/rl/ckpt-40')."""
        ...

    @property
    def tokenizer(self) -> Any:
        """The transformers tokenizer whose chat template the harness renders with."""
        ...

    def __call__(self, task: Task, prepared: PreparedTask) -> Policy: ...


@dataclass
class SharedPolicy:
    """One policy object serves every episode (an engine or a server batches them)."""

    policy: Policy
    tokenizer: Any
    description: str

    def __call__(self, task: Task, prepared: PreparedTask) -> Policy:
        return self.policy


@dataclass
class ReferencePolicy:
    """A fresh scripted policy (`gold`, `noop` or the `scripted` expert) for each episode."""

    name: str
    tokenizer: Any

    @property
    def description(self) -> str:
        return f"reference:{self.name}"

    def __call__(self, task: Task, prepared: PreparedTask) -> Policy:
        return reference_policy(self.name, task, prepared, self.tokenizer)
