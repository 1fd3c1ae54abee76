"""Training settings (SFT and RL)."""

from pydantic import BaseModel, ConfigDict, Field


class TrainConfig(BaseModel):
    """The trainer and the orchestrator."""

    model_config = ConfigDict(extra="forbid")
    group_size: int = Field(8, description="Rollouts per task (G of GRPO).")
    lr: float = Field(1e-6, description="AdamW learning rate.")
    max_staleness: int = Field(2, description="Oldest policy lag (versions) a sample may have.")
