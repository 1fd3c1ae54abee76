"""What one RL run's loop drives: the same boxes in this process or on a Ray cluster.

`run.local_services` builds them here, `cluster.backend.ray_services` as actor proxies;
`run.run_rl` drives either through this one record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shadowrl.rl.orchestrator import RolloutFn, WeightPublisher
from shadowrl.types import WeightSink


@dataclass
class Services:
    """The boxes the orchestrator drives: objects in this process or Ray actor proxies.

    `trainer` is a `TrainerService` that also checkpoints (`save`, `step_count`);
    `extra_metrics` adds backend numbers to each step's record; `final_model` gives the
    trained policy back as a model in this process.
    """

    trainer: Any
    store: WeightPublisher
    engine: WeightSink
    rollout: RolloutFn
    extra_metrics: Callable[[], dict[str, Any]]
    final_model: Callable[[], Any]
