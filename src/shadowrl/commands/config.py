"""One validated config tree for every command, loaded from YAML plus CLI overrides.

Each component owns its section (a pydantic model with a description on every field,
defined next to the code it configures); this module only composes them, loads
`configs/*.yaml` and applies `--section.key=value` overrides. Keys that were renamed
still load, with a warning naming the new key; keys that were removed because another
field means the same thing fail to load, with an error naming that field.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from shadowrl.agent.config import AgentConfig
from shadowrl.commands.errors import UsageError
from shadowrl.episode import EpisodeSpec
from shadowrl.eval import config_pins
from shadowrl.eval.config import EvalConfig
from shadowrl.experiments.config import MeasuredRealtimeConfig
from shadowrl.inference.config import EngineConfig
from shadowrl.models import ModelConfig
from shadowrl.pipeline.config import PipelineConfig, TrainRun
from shadowrl.rl import DistillConfig, OrchestratorConfig
from shadowrl.rl.cluster.config import RayConfig
from shadowrl.rl.config import MOVED, TrainConfig
from shadowrl.sandbox import SandboxConfig
from shadowrl.search.config import SearchConfig
from shadowrl.serve.config import ServeConfig
from shadowrl.tasks.config import TasksConfig

log = logging.getLogger(__name__)

# old key -> new one (dotted paths); loading an old file warns instead of failing
RENAMED = {"loop": "orchestrator", **{f"train.{a}": f"train.{b}" for a, b in MOVED.items()}}
# removed key -> the field that replaces it: one field per meaning, no dead fields kept
RUN_SEED = "seed (the run seed: every component derives its own stream from it, seeds.py)"
REPLACED = {
    "model.seed": RUN_SEED,
    "train.seed": RUN_SEED,
    "mtp.seed": RUN_SEED,
    "model.dtype": "train.dtype (the trainer's copy) or engine.dtype (the serving copy)",
    "realtime.users.seed": "realtime.users.population",
}
# files a config file names relative to run_dir; on the command line, relative to the
# directory the command runs in (where the user typed the path)
RUN_DIR_FILES = (("serve", "api_keys"), ("serve", "traces"))


class Config(BaseModel):
    """The whole configuration of a shadowrl run."""

    model_config = ConfigDict(extra="forbid")
    run_dir: str = Field(
        "runs/default", description="Directory for metrics, checkpoints and reports."
    )
    seed: int = Field(
        0,
        description="The run seed: the engine's sampling, the eval bootstrap, the task stream "
        "and the real-time task mix read it directly; every other component that draws "
        "random numbers (a tiny model's weights, the trainer, the MTP heads) derives its own "
        "stream from it (seeds.py).",
    )
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
    orchestrator: OrchestratorConfig = Field(
        default_factory=OrchestratorConfig,
        description="How rollouts and training steps interleave.",
    )
    pipeline: PipelineConfig = Field(
        default_factory=PipelineConfig, description="Stages and sizes of `shadowrl train`."
    )
    mtp: DistillConfig = Field(
        default_factory=DistillConfig, description="MTP draft heads' self-distillation."
    )
    serve: ServeConfig = Field(
        default_factory=ServeConfig, description="OpenAI-compatible server settings."
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig, description="Semantic code search index."
    )
    backend: Literal["local", "ray"] = Field(
        "local",
        description="Where the services run: 'local' in this process, 'ray' as actors on a "
        "Ray cluster (the `ray:` section; needs the `ray` extra): RL's trainer, engines and "
        "environment workers for `train`, the evaluator and its workers for `eval` and the "
        "pinned evals of `realtime`.",
    )
    ray: RayConfig = Field(
        default_factory=RayConfig, description="Ray cluster address and actor counts."
    )
    realtime: MeasuredRealtimeConfig = Field(
        default_factory=MeasuredRealtimeConfig,
        description="`shadowrl realtime`: cycles, gate checks, rewards, simulated users.",
    )

    def digest(self) -> str:
        """Stable short hash of the config, recorded with every result."""
        return config_pins(self).digest


def _set_path(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise UsageError(f"override --{dotted}: {key!r} is not a section")
    node[keys[-1]] = value


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _section(tree: dict[str, Any], dotted: str) -> tuple[dict[str, Any] | None, str]:
    """The mapping that holds `dotted`'s last key (None if a section on the way is
    missing or not a mapping), and that key."""
    *path, key = dotted.split(".")
    node: Any = tree
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return (node if isinstance(node, dict) else None), key


def _renamed(tree: dict[str, Any], where: str) -> dict[str, Any]:
    """`tree` with every key of `RENAMED` moved to its new name, each with a warning;
    a key of `REPLACED` raises, naming the field to set instead."""
    for old, new in REPLACED.items():
        node, key = _section(tree, old)
        if node is not None and key in node:
            raise UsageError(f"{where}: config key {old!r} was removed; set {new}")
    for old, new in RENAMED.items():
        node, key = _section(tree, old)
        if node is None or key not in node:
            continue
        target, new_key = _section(tree, new)
        if target is not None and new_key in target:
            raise UsageError(f"{where}: both {old!r} and its new name {new!r} are set")
        log.warning("%s: config key %r is now %r; please rename it", where, old, new)
        _set_path(tree, new, node.pop(key))
    return tree


def parse_overrides(args: Iterable[str]) -> dict[str, Any]:
    """Turn `--section.key=value` strings into a nested dict (values parsed as YAML)."""
    tree: dict[str, Any] = {}
    for arg in args:
        if not arg.startswith("--") or "=" not in arg:
            raise UsageError(f"unrecognised argument {arg!r}: overrides are --section.key=value")
        key, raw = arg[2:].split("=", 1)
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as e:
            raise UsageError(f"override --{key}: value {raw!r} is not YAML ({e})") from e
        _set_path(tree, key, value)
    return tree


def _from_cwd(tree: dict[str, Any]) -> dict[str, Any]:
    """`tree` (the command line's overrides) with its relative `RUN_DIR_FILES` made
    absolute against the working directory."""
    for section, key in RUN_DIR_FILES:
        node = tree.get(section)
        value = node.get(key) if isinstance(node, dict) else None
        relative = isinstance(value, str) and "://" not in value
        if relative and value and not Path(value).expanduser().is_absolute():
            node[key] = str(Path.cwd() / value)  # type: ignore[index]
    return tree


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as e:
        raise UsageError(f"config file {path} does not exist") from e
    except yaml.YAMLError as e:
        raise UsageError(f"config file {path} is not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise UsageError(f"config file {path}: the top level must be a mapping")
    return _renamed(data, str(path))


def load_config(paths: Iterable[str | Path] = (), overrides: Iterable[str] = ()) -> Config:
    """Merge YAML files left to right, then overrides; validate the result.

    A bad value raises `pydantic.ValidationError`; `errors.describe_validation` turns it
    into one line that names the key, the value and what is allowed.
    """
    tree: dict[str, Any] = {}
    for path in paths:
        tree = _merge(tree, _read_yaml(Path(path)))
    tree = _merge(tree, _from_cwd(_renamed(parse_overrides(overrides), "command line")))
    return Config.model_validate(tree)


def episode_spec(config: Config) -> EpisodeSpec:
    """The one `EpisodeSpec` of a command: every episode it runs shares it."""
    return EpisodeSpec(
        agent=config.agent,
        shaping=config.tasks.shaping,
        search=config.search,
        sandbox=config.sandbox,
    )


def train_run(config: Config) -> TrainRun:
    """The sections the training pipeline reads, typed."""
    return TrainRun(
        run_dir=Path(config.run_dir),
        seed=config.seed,
        model_path=config.model.path,
        engine=config.engine,
        tasks=config.tasks,
        eval=config.eval,
        train=config.train,
        orchestrator=config.orchestrator,
        pipeline=config.pipeline,
        episode=episode_spec(config),
        pins=config_pins(config),
        ray=config.ray if config.backend == "ray" else None,
    )
