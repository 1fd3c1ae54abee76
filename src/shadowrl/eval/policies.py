"""What `--policy` can name, turned into a `PolicyFactory` for the evaluator.

    gold | noop                 scripted reference policies (validate a suite end to end)
    http(s)://host:port/v1      a served model, through its OpenAI-compatible endpoint
    smollm2 | tiny | <path>     weights loaded here and served by the batched engine

Reference policies are made per episode (they replay one task's gold patch); a model
is loaded once and shared by every episode, so the engine batches them together.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadowrl.types import Policy

if TYPE_CHECKING:
    from shadowrl.config import Config
    from shadowrl.eval.runner import PolicyFactory
    from shadowrl.tasks.prepare import PreparedTask
    from shadowrl.tasks.task import Task

REFERENCE = ("gold", "noop")


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
    """A fresh scripted `gold` or `noop` policy for each episode of a task."""

    name: str
    tokenizer: Any

    @property
    def description(self) -> str:
        return f"reference:{self.name}"

    def __call__(self, task: Task, prepared: PreparedTask) -> Policy:
        from shadowrl.tasks.reference import reference_policy

        return reference_policy(self.name, task, prepared, self.tokenizer)


@contextlib.asynccontextmanager
async def _reference(spec: str, config: Config) -> AsyncIterator[PolicyFactory]:
    from shadowrl.models import load_tokenizer

    yield ReferencePolicy(spec, load_tokenizer(config.model.path))


@contextlib.asynccontextmanager
async def _remote(spec: str, config: Config) -> AsyncIterator[PolicyFactory]:
    from shadowrl.inference.remote import RemotePolicy
    from shadowrl.models import load_tokenizer

    tokenizer = load_tokenizer(config.model.path)
    policy = RemotePolicy(spec, config.model.path, tokenizer=tokenizer)
    try:
        yield SharedPolicy(policy, tokenizer, f"remote:{spec} ({config.model.path})")
    finally:
        await policy.aclose()


@contextlib.asynccontextmanager
async def _local(spec: str, config: Config) -> AsyncIterator[PolicyFactory]:
    from shadowrl.inference.engine import Engine
    from shadowrl.models import load_model

    model, tokenizer = load_model(config.model.model_copy(update={"path": spec}))
    with Engine(model, tokenizer, config.engine, seed=config.seed) as engine:  # decode thread
        yield SharedPolicy(engine, tokenizer, f"model:{spec}")


Opener = Callable[[str, "Config"], contextlib.AbstractAsyncContextManager["PolicyFactory"]]
OPENERS: dict[str, Opener] = {"reference": _reference, "remote": _remote, "local": _local}


def policy_kind(spec: str) -> str:
    """Which opener a `--policy` value needs."""
    if spec in REFERENCE:
        return "reference"
    if spec.startswith(("http://", "https://")):
        return "remote"
    return "local"


def open_policy(spec: str, config: Config) -> contextlib.AbstractAsyncContextManager[PolicyFactory]:
    """`async with open_policy(spec, config) as factory:` runs whatever serves the policy."""
    return OPENERS[policy_kind(spec)](spec, config)
