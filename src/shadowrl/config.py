"""One validated config tree for every command, loaded from YAML plus CLI overrides.

Each component owns its section (a pydantic model with a description on every
field, defined next to the code it configures); this module only composes them,
loads `configs/*.yaml` and applies `--section.key=value` overrides.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from shadowrl.agent.config import AgentConfig
from shadowrl.eval.config import EvalConfig
from shadowrl.inference.config import EngineConfig
from shadowrl.inference.serve_cli import ServeConfig
from shadowrl.models import ModelConfig
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.orchestrator import OrchestratorConfig
from shadowrl.rl.train_cli import PipelineConfig
from shadowrl.sandbox.base import Limits
from shadowrl.search.config import SearchConfig
from shadowrl.tasks.config import TasksConfig


class SandboxConfig(BaseModel):
    """Where agent commands run."""

    model_config = ConfigDict(extra="forbid")
    backend: str = Field(
        "auto", description="'overlay' (namespaces + overlayfs), 'local' (no isolation) or 'auto'."
    )
    limits: Limits = Field(default_factory=Limits, description="Resource limits per sandbox.")


class Config(BaseModel):
    """The whole configuration of a shadowrl run."""

    model_config = ConfigDict(extra="forbid")
    run_dir: str = Field(
        "runs/default", description="Directory for metrics, checkpoints and reports."
    )
    seed: int = Field(0, description="Global random seed.")
    model: ModelConfig = Field(
        default_factory=ModelConfig, description="Which policy weights to load."
    )
    engine: EngineConfig = Field(
        default_factory=EngineConfig, description="Inference engine settings."
    )
    sandbox: SandboxConfig = Field(
        default_factory=SandboxConfig, description="Sandbox backend and limits."
    )
    agent: AgentConfig = Field(
        default_factory=AgentConfig, description="Agent loop budgets and prompt."
    )
    tasks: TasksConfig = Field(
        default_factory=TasksConfig, description="Task suites and environments."
    )
    eval: EvalConfig = Field(
        default_factory=EvalConfig, description="Evaluation and gate settings."
    )
    train: TrainConfig = Field(
        default_factory=TrainConfig, description="SFT and RL training settings."
    )
    loop: OrchestratorConfig = Field(
        default_factory=OrchestratorConfig,
        description="How rollouts and training steps interleave.",
    )
    pipeline: PipelineConfig = Field(
        default_factory=PipelineConfig, description="Stages and sizes of `shadowrl train`."
    )
    serve: ServeConfig = Field(
        default_factory=ServeConfig, description="OpenAI-compatible server settings."
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig, description="Semantic code search index."
    )

    def digest(self) -> str:
        """Stable short hash of the config, recorded with every result."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _set_path(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {dotted!r}: {key!r} is not a section")
    node[keys[-1]] = value


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_overrides(args: Iterable[str]) -> dict[str, Any]:
    """Turn `--section.key=value` strings into a nested dict (values parsed as YAML)."""
    tree: dict[str, Any] = {}
    for arg in args:
        if not arg.startswith("--") or "=" not in arg:
            raise ValueError(f"expected --section.key=value, got {arg!r}")
        key, raw = arg[2:].split("=", 1)
        _set_path(tree, key, yaml.safe_load(raw) if raw else "")
    return tree


def load_config(paths: Iterable[str | Path] = (), overrides: Iterable[str] = ()) -> Config:
    """Merge YAML files left to right, then overrides; validate the result."""
    tree: dict[str, Any] = {}
    for path in paths:
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{path}: top level must be a mapping")
        tree = _merge(tree, data)
    tree = _merge(tree, parse_overrides(overrides))
    return Config.model_validate(tree)
