"""Evaluation and gate settings."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EvalConfig(BaseModel):
    """How a benchmark is run and how the gate decides."""

    model_config = ConfigDict(extra="forbid")
    samples: int = Field(1, ge=1, description="Episodes per task (k of pass@k).")
    concurrency: int = Field(
        16,
        ge=1,
        description="Episodes run at once (the engine decodes their turns in one batch).",
    )
    margin: float = Field(
        0.02, ge=0, le=1, description="Largest pass-rate drop the gate tolerates."
    )
    alpha: float = Field(
        0.05, gt=0, lt=1, description="Significance level of the gate's paired test."
    )
    test: Literal["bootstrap", "sign"] = Field(
        "bootstrap", description="Gate test: 'bootstrap' (paired, over tasks) or 'sign' (McNemar)."
    )
    resamples: int = Field(
        5000, ge=1, description="Bootstrap resamples for intervals and the gate."
    )
