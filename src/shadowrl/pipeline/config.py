"""The `pipeline:` section (which stages `shadowrl train` runs, on how many tasks) and
`TrainRun`, the typed bundle of config sections the stages read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shadowrl.episode import EpisodeSpec
from shadowrl.eval import ConfigPins
from shadowrl.eval.config import EvalConfig
from shadowrl.inference.config import EngineConfig
from shadowrl.rl import OrchestratorConfig
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.config import TrainConfig
from shadowrl.tasks.config import TasksConfig


class PipelineConfig(BaseModel):
    """Sizes of the stages of `shadowrl train` (`pipeline:` in the config tree)."""

    model_config = ConfigDict(extra="forbid")
    train_tasks: int = Field(0, ge=0, description="Train tasks used (0 = all of `train_suite`).")
    sft_tasks: int = Field(
        32,
        ge=0,
        description="How many of those tasks (from the front) give SFT its expert demos (0 = all).",
    )
    rl_tasks: Literal["all", "unseen"] = Field(
        "unseen",
        description="RL on every train task, or only on those SFT had no demo of ('unseen'): "
        "then the RL reward is not the recall of a gold patch SFT was fitted on (without SFT, "
        "every train task is unseen).",
    )
    eval_tasks: int = Field(0, ge=0, description="Held-out tasks evaluated (0 = all).")
    eval_samples: int = Field(2, ge=1, description="Episodes per held-out task (k of pass@k).")
    eval_base: bool = Field(
        True,
        description="Also evaluate the starting model (slow on CPU: it rambles to every budget).",
    )
    base_samples: int = Field(
        1,
        ge=0,
        description="Episodes per held-out task in the base model's eval (0 = eval_samples); "
        "fewer keep it affordable, since the base model uses every turn and token budget.",
    )
    screen_samples: int = Field(
        0,
        ge=0,
        description="Before RL, run the starting policy this many times on each RL task and "
        "train only on the tasks it solves sometimes but not always (0 = off): a group that "
        "all fails or all passes has no outcome advantage, so it costs rollouts and teaches "
        "nothing about solving. Written to run_dir/screen/.",
    )
    sft: bool = Field(True, description="Warm-start with SFT on expert demonstrations.")
    sft_dev_tasks: int = Field(
        8,
        ge=0,
        description="Expert demos of this many dev tasks validate SFT: their NLL is scored every "
        "`sft_check_every` steps, SFT stops after `sft_patience` checks without a new best and "
        "keeps the best check's weights; their entropy is reported per policy (0 = no checks: "
        "SFT runs its `train.sft.epochs`). Dev tasks come from `dev_suite`; without one, the "
        "last tasks of the train split, which then no stage trains on.",
    )
    train_suite: str = Field(
        "family:train@48",
        description="The suite SFT, RL and SFT-more draw train tasks from ('name' or "
        "'name:train'); '' = the train split of `tasks.suite`.",
    )
    dev_suite: str = Field(
        "family:dev@8",
        description="The suite dev tasks come from (e.g. 'family:dev': templates no other "
        "split has); '' = the tail of the train split.",
    )
    sft_check_every: int = Field(8, ge=1, description="SFT optimizer steps between checks.")
    sft_patience: int = Field(
        3, ge=0, description="Checks without a new best dev NLL before SFT stops (0 = never)."
    )
    sft_more: bool = Field(
        False,
        description="Also train SFT-more: the SFT checkpoint continued on expert demos of RL's "
        "tasks for RL's wall time, evaluated on the same held-out tasks, so a gain of RL over "
        "an under-trained start is not taken for RL's. Needs rl_tasks='unseen' (fresh demos).",
    )
    eval_suite: str = Field(
        "family:heldout-templates@16",
        description="The suite held-out evals draw from ('name' or 'name:heldout', e.g. "
        "'family:heldout-templates@152'); '' = the heldout split of `tasks.suite`.",
    )
    target_gain: float = Field(
        0.10,
        gt=0,
        le=1,
        description="The RL − SFT gain the report sizes an eval for when this run cannot show one.",
    )
    experts: dict[str, float] = Field(
        default_factory=lambda: {"scripted": 1.0},
        description="The reference policies (`tasks/reference.py`) whose episodes are SFT's "
        "demonstrations, with weights: each task's demo comes from one, drawn by a hash of "
        "its id. 'scripted' edits and runs the visible tests; 'reproduce' also checks the "
        "report's call against its expected outcome before and after the edit; 'recover' "
        "first makes a mistake (an edit the tool refuses, or a wrong one the check catches), "
        "which SFT does not train on, then the right edit (e.g. {reproduce: 2, recover: 1}).",
    )
    demos_from: list[str] = Field(
        default_factory=list, description="Extra demonstration JSONL files (e.g. successes.jsonl)."
    )
    rl_stream: bool = Field(
        False,
        description="RL draws fresh instances of the family's train part, never one twice and "
        "never a bug of the run's train tasks (SFT's demos) (`pipeline/rl_source.py`; logged to "
        "run_dir/rl_stream.jsonl), instead of epochs over the train tasks.",
    )
    rl_templates: list[str] = Field(
        default_factory=list,
        description="With rl_stream: the train templates (ids, e.g. 'tax_brackets') the stream "
        "draws from; empty = every train template. A curriculum chosen from train-part "
        "outcomes only (a held-out seed is an instance of a train template, so choosing by "
        "held-out outcomes would leak).",
    )

    rl_operators: list[str] = Field(
        default_factory=list,
        description="With rl_stream: the mutation operators (`tasks/mutate.py`: comparison, "
        "binary, boolean, constant, slice, call_args, return_none, guard) the stream's bugs "
        "come from; empty = all. Keeps one easy edit shape from dominating RL's successes "
        "(dev pilots 19-20: return_none fixes spread to other kinds of held-out bugs).",
    )

    @property
    def needs_rl_share(self) -> bool:
        """Whether RL's share of the train suite is used: not when RL draws from the stream,
        unless SFT-more takes its fresh demos from that share."""
        return not self.rl_stream or self.sft_more

    @model_validator(mode="after")
    def _rl_has_tasks(self) -> PipelineConfig:
        if not self.needs_rl_share:
            return self
        if self.rl_tasks == "unseen" and self.sft and not self.sft_tasks:
            raise ValueError("rl_tasks='unseen' needs sft on a subset: set sft_tasks > 0")
        if self.rl_tasks == "unseen" and self.train_tasks and self.sft_tasks >= self.train_tasks:
            raise ValueError(f"sft_tasks={self.sft_tasks} leaves none of {self.train_tasks} for RL")
        if self.sft_more and not self.sft:
            raise ValueError("sft_more continues the SFT checkpoint: it needs sft")
        if self.sft_more and self.rl_tasks != "unseen":
            raise ValueError("sft_more trains on RL's tasks' demos: set rl_tasks='unseen'")
        return self

    @model_validator(mode="after")
    def _experts_are_known(self) -> PipelineConfig:
        from shadowrl.tasks.reference import REFERENCE_POLICIES

        if unknown := sorted(set(self.experts) - set(REFERENCE_POLICIES)):
            raise ValueError(f"unknown experts {unknown}; choose from {sorted(REFERENCE_POLICIES)}")
        if not self.experts or min(self.experts.values()) <= 0:
            raise ValueError("experts needs at least one expert, each with a weight > 0")
        return self

    @model_validator(mode="after")
    def _stream_has_no_list(self) -> PipelineConfig:
        if self.rl_stream and self.screen_samples:
            raise ValueError("rl_stream draws fresh tasks: there is no fixed list to screen")
        if self.rl_templates and not self.rl_stream:
            raise ValueError("rl_templates picks the stream's templates: it needs rl_stream")
        if self.rl_operators and not self.rl_stream:
            raise ValueError("rl_operators picks the stream's bugs: it needs rl_stream")
        if self.rl_operators:  # the tasks package is imported only when operators are named
            from shadowrl.tasks import check_mutation_operators

            check_mutation_operators(self.rl_operators, "rl_operators")
        if self.rl_templates:
            from shadowrl.tasks.family.catalog import pick  # loads the family: only when named

            pick("train", self.rl_templates)
        return self


@dataclass(frozen=True)
class TrainRun:
    """What the pipeline's stages read: the run's config sections, typed."""

    run_dir: Path
    seed: int
    model_path: str
    engine: EngineConfig
    tasks: TasksConfig
    eval: EvalConfig
    train: TrainConfig
    orchestrator: OrchestratorConfig
    pipeline: PipelineConfig
    episode: EpisodeSpec
    pins: ConfigPins
    ray: RayConfig | None = None  # RL's services as Ray actors; None = in this process


class PipelineError(RuntimeError):
    """A stage cannot go on (no tasks left, no demonstration solved)."""
