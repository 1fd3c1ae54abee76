"""The `ray:` section: where the Ray backend connects and how many of each actor it starts.

Importing this module never imports Ray, so `shadowrl --help` and the in-process
backend work without the `ray` extra.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ElasticConfig(BaseModel):
    """How the environment workers follow the queue of waiting episodes (`ray.elastic:`)."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["fixed", "elastic"] = Field(
        "fixed",
        description="'fixed' keeps `ray.env_workers` workers for the whole run; 'elastic' "
        "starts with `min_workers` and grows and shrinks between `min_workers` and "
        "`max_workers` with the episodes waiting for a slot (`rl/cluster/scaling.py`).",
    )
    min_workers: int = Field(1, ge=1, description="Workers kept even when no episode waits.")
    max_workers: int = Field(4, ge=1, description="Most workers at once (the burst ceiling).")
    slots: int = Field(
        4,
        ge=1,
        description="Episodes one worker runs at once; more wait in the pool's queue, and the "
        "queue is what makes the pool grow (elastic mode only: fixed workers take any number).",
    )
    up_cooldown_s: float = Field(
        0.0, ge=0, description="Seconds after a change before the pool may grow again."
    )
    idle_s: float = Field(
        10.0,
        ge=0,
        description="Seconds the workers must have had a spare worker's worth of slots before "
        "one is drained (hysteresis: a short lull between bursts shrinks nothing).",
    )
    down_cooldown_s: float = Field(
        5.0, ge=0, description="Seconds after a change before the pool may shrink again."
    )
    down_step: int = Field(1, ge=1, description="Workers drained at most per shrink.")
    tick_s: float = Field(
        0.5, gt=0, description="How often the pool re-applies the policy while it is in use."
    )

    @model_validator(mode="after")
    def _ordered(self) -> ElasticConfig:
        if self.max_workers < self.min_workers:
            raise ValueError(f"max_workers {self.max_workers} < min_workers {self.min_workers}")
        return self


class RayConfig(BaseModel):
    """How `--backend=ray` lays the RL services out on a Ray cluster."""

    model_config = ConfigDict(extra="forbid")
    address: str = Field(
        "auto",
        description="'auto' joins the cluster `ray start` runs on this machine (or RAY_ADDRESS), "
        "'HOST:PORT' a remote head's GCS, 'local' starts a throwaway one-node Ray in-process.",
    )
    engines: int = Field(1, ge=1, description="Inference engine actors (N).")
    env_workers: int = Field(
        2, ge=1, description="Environment worker actors (M), each with its own sandboxes."
    )
    elastic: ElasticConfig = Field(
        default_factory=ElasticConfig,
        description="Fixed or elastic environment workers (elastic: between min and max with "
        "the queue of waiting episodes).",
    )
    episode_retries: int = Field(
        2,
        ge=0,
        description="Further tries, on other workers, of an episode whose worker or engine died; "
        "after them the episode is lost: masked out of its group and counted, never scored 0.",
    )
    actor_restarts: int = Field(
        3,
        ge=0,
        description="Times Ray restarts a dead engine or environment worker in place (the "
        "trainer restarts from the last checkpoint, `trainer_restarts`).",
    )
    trainer_restarts: int = Field(
        2,
        ge=0,
        description="Times a lost trainer actor is restarted from the last checkpoint and "
        "weight-store version before the run fails.",
    )
    trainer_cpus: float = Field(1.0, ge=0, description="CPUs Ray reserves for the trainer.")
    engine_cpus: float = Field(1.0, ge=0, description="CPUs Ray reserves for each engine.")
    env_cpus: float = Field(
        0.5, ge=0, description="CPUs Ray reserves for each environment worker (mostly waiting)."
    )
    evaluator_cpus: float = Field(
        0.25, ge=0, description="CPUs Ray reserves for the evaluator (it schedules, workers run)."
    )
    trainer_gpus: float = Field(0.0, ge=0, description="GPUs for the trainer (0 on CPU).")
    engine_gpus: float = Field(0.0, ge=0, description="GPUs for each engine (0 on CPU).")
    trainer_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Custom Ray resources the trainer needs (e.g. {trainer: 1}): pins it to the "
        "nodes started with `ray start --resources` that advertise them.",
    )
    engine_resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources each engine needs."
    )
    env_resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources each environment worker needs."
    )
    evaluator_resources: dict[str, float] = Field(
        default_factory=dict, description="Custom Ray resources the evaluator needs."
    )
    torch_threads: int = Field(
        0,
        ge=0,
        description="torch intra-op threads in the trainer and engine actors (0 = Ray's default, "
        "one per reserved CPU). Set it to the in-process run's count to compare updates.",
    )
