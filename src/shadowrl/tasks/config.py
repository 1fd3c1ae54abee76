"""Task suite settings."""

from pydantic import BaseModel, ConfigDict, Field


class TasksConfig(BaseModel):
    """Which tasks to run and where prepared environments are cached."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field("easy", description="Built-in suite name or a JSONL path.")
    split: str = Field("train", description="'train' or 'heldout'.")
