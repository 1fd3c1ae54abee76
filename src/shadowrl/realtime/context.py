"""What every stage of a real-time cycle shares: the command's inputs, the live context and
the cycle's persisted state (`stages.py` runs the stages, `cycle.py` drives them).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shadowrl.episode import EpisodeSpec
from shadowrl.eval.config import EvalConfig
from shadowrl.eval.pins import ConfigPins
from shadowrl.eval.runner import Evaluate
from shadowrl.models import ModelConfig
from shadowrl.realtime.config import RealtimeConfig
from shadowrl.realtime.mix import OpenPolicy
from shadowrl.realtime.process import ServerProcess
from shadowrl.realtime.reaction import Judge, tests_judge
from shadowrl.rl.config import TrainConfig
from shadowrl.serve.store import TraceStore
from shadowrl.tasks.task import Task

# what evaluates a checkpoint: in this process, or the Ray evaluator actor (backend ray)
OpenEvaluator = Callable[[str], AbstractAsyncContextManager[Evaluate]]


@dataclass(frozen=True)
class Deps:
    """What the command hands the loop: config sections, tasks, and how to open a policy."""

    run_dir: Path
    rt: RealtimeConfig
    eval: EvalConfig
    train: TrainConfig
    model: ModelConfig
    spec: EpisodeSpec
    pins: ConfigPins
    tokenizer: Any
    open_evaluator: OpenEvaluator
    open_policy: OpenPolicy  # the mixed-in rollouts' policy (in this process)
    pinned: list[Task]
    user_tasks: list[Task] | None  # None: real users (wait for their sessions)
    mix_tasks: list[Task]  # train tasks rollouts may be mixed in on (`mix.mix_tasks`)
    cache_dir: Path
    workspaces: Path  # the server's serve.workspaces_root (simulated users check out there)
    seed: int = 0
    judge: Judge = tests_judge
    panel: list[Task] = field(default_factory=list)  # the panel's users (realtime.panel)
    private_keys: frozenset[str] = frozenset()  # serve.api_keys' private keys: never collected


@dataclass
class Ctx:
    deps: Deps
    store: TraceStore
    server: ServerProcess

    @property
    def root(self) -> Path:
        return self.deps.run_dir / "realtime"


@dataclass
class CycleState:
    """Where the current cycle is: persisted after every stage (`cycle.py`)."""

    cycle: int
    stage: str
    since: str  # ISO time: this cycle's sessions are the ones created after it
    out: dict[str, Any] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)


def now() -> datetime:
    return datetime.now(UTC)
