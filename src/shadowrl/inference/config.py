"""Inference engine settings."""

from pydantic import BaseModel, ConfigDict, Field


class EngineConfig(BaseModel):
    """The batched generation engine."""

    model_config = ConfigDict(extra="forbid")
    max_batch: int = Field(32, description="Sequences decoded together in one step.")
    recompute_kv_on_swap: bool = Field(
        False, description="Re-run the KV cache of running requests after a weight swap."
    )
