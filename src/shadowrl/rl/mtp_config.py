"""Settings of MTP self-distillation (`shadowrl mtp distill`, `rl/mtp_distill.py`)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class DistillConfig(BaseModel):
    """How the draft heads are trained on the model's own generations."""

    model_config = ConfigDict(extra="forbid")
    k: int = Field(3, ge=1, le=8, description="Draft heads to train (tokens t+2..t+k+1).")
    kind: Literal["sequential", "medusa"] = Field(
        "sequential",
        description="'sequential': each head also reads the token drafted before it "
        "(default, see inference/mtp.py); 'medusa': every head reads only the backbone's state.",
    )
    draft_vocab: int = Field(
        4096,
        ge=0,
        description="Draft only from this many tokens, the most frequent in the distillation "
        "data (FR-Spec): a draft step then scores V' rows of the LM head instead of all "
        "49,152 (SmolLM2). Verification stays exact over the full vocabulary; a token "
        "outside is never drafted, only produced by the main model. 0 = full vocabulary.",
    )
    data: Literal["sft", "traces", "rollouts"] = Field(
        "sft",
        description="Where prompts come from: 'sft' = code prompts built from the task "
        "suites' train split (`suite`); 'traces' = a `shadowrl traces export --format "
        "training` JSONL; 'rollouts' = a demo-store JSONL of RL/eval trajectories (`source`). "
        "Completions are always the model's own, generated fresh.",
    )
    suite: str = Field("easy", description="Task suite for data='sft'.")
    source: str = Field("", description="JSONL file for data='traces' or 'rollouts'.")
    prompts: int = Field(64, ge=1, description="Prompts to generate from.")
    samples_per_prompt: int = Field(2, ge=1, description="Completions generated per prompt.")
    new_tokens: int = Field(192, ge=8, description="Tokens generated per completion.")
    temperature: float = Field(
        1.0, ge=0.0, description="Sampling temperature of the generations (rollouts use 1)."
    )
    steps: int = Field(600, ge=1, description="Optimizer steps at most.")
    time_budget_s: float = Field(
        0.0, ge=0.0, description="Stop training after this many seconds (0 = no limit)."
    )
    batch_windows: int = Field(
        128, ge=1, description="Training windows (a position and its k future tokens) per step."
    )
    lr: float = Field(
        2e-3,
        gt=0.0,
        description="AdamW learning rate of the heads trained from scratch here (constant); "
        "their re-distillation during RL has its own, `train.mtp.lr`.",
    )
    heldout_fraction: float = Field(
        0.1, ge=0.0, lt=1.0, description="Generations kept out of training for the report."
    )


class RLDistillConfig(BaseModel):
    """`train.mtp`: re-distilling the draft heads during RL, after policy updates."""

    model_config = ConfigDict(extra="forbid")
    every: int = Field(
        1,
        ge=0,
        description="Re-distil the heads after every N-th policy update (0 = never). Active "
        "only when the run has heads: `heads`, else mtp.safetensors beside the starting "
        "checkpoint (model.path) or the RL checkpoint resumed from (`shadowrl mtp distill` "
        "makes them).",
    )
    heads: str = Field(
        "", description="Heads to start from (a file or a directory holding mtp.safetensors)."
    )
    steps: int = Field(
        4, ge=1, description="Distillation steps each time (M), on windows of the step's batch."
    )
    batch_windows: int = Field(
        128, ge=1, description="Windows per distillation step, and windows scored for acceptance."
    )
    rows: int = Field(
        2,
        ge=1,
        description="Batch rows whose hidden states are recomputed for it (one no-grad forward "
        "of the updated policy over them): bounds the cost of a re-distillation.",
    )
    lr: float = Field(
        1e-3,
        gt=0.0,
        description="AdamW learning rate of the heads' re-distillation during RL (constant): "
        "heads already trained by `shadowrl mtp distill`, whose rate is `mtp.lr`.",
    )
