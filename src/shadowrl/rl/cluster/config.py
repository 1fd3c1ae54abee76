"""The `ray:` section: where the Ray backend connects and how many of each actor it starts.

Importing this module never imports Ray, so `shadowrl --help` and the in-process
backend work without the `ray` extra.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
    torch_threads: int = Field(
        0,
        ge=0,
        description="torch intra-op threads in the trainer and engine actors (0 = Ray's default, "
        "one per reserved CPU). Set it to the in-process run's count to compare updates.",
    )
