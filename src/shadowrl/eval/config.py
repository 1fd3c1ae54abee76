"""Evaluation and gate settings."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EvalConfig(BaseModel):
    """How a benchmark is run and how the gate decides."""

    model_config = ConfigDict(extra="forbid")
    samples: int = Field(1, description="Episodes per task (k of pass@k).")
    concurrency: int = Field(4, description="Episodes run at once.")
    margin: float = Field(0.02, description="Largest pass-rate drop the gate tolerates.")
    alpha: float = Field(0.05, description="Significance level of the gate's paired test.")
    test: Literal["bootstrap", "sign"] = Field(
        "bootstrap", description="Gate test: 'bootstrap' (paired, over tasks) or 'sign' (McNemar)."
    )
    resamples: int = Field(5000, description="Bootstrap resamples for intervals and the gate.")
