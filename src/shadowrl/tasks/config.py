"""Task suite, preparation cache and reward settings."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Source edits that have no business in a bug fix but are how graders get fooled:
# importing the test framework, killing the interpreter, rewriting modules or argv.
DEFAULT_FORBIDDEN = (
    r"\b_?pytest\b",
    r"\bpluggy\b",
    r"\bjunit",
    r"\bos\._exit\b",
    r"\batexit\b",
    r"\bsys\.modules\b",
    r"\bsys\.argv\b",
    r"\bsettrace\b",
    r"\bbuiltins\b",
    r"\b_getframe\b",
)


class ShapingConfig(BaseModel):
    """Optional terms added to the 0/1 outcome reward (all off by default)."""

    model_config = ConfigDict(extra="forbid")
    tool_error: float = Field(
        default=0.0, ge=0, description="Penalty subtracted per malformed tool call."
    )
    max_penalty: float = Field(
        default=0.5, ge=0, description="Cap on the total shaping penalty of one episode."
    )
    forbidden_patterns: tuple[str, ...] = Field(
        default=DEFAULT_FORBIDDEN,
        description="Regexes that, newly added to a non-test file, void the episode (reward 0).",
    )


class TasksConfig(BaseModel):
    """Which tasks to run, where prepared workspaces/envs are cached, how rewards are shaped."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field(default="easy", description="Built-in suite name or a JSONL path.")
    split: Literal["train", "heldout", "all"] = Field(
        default="train", description="Which split of the suite a command uses."
    )
    cache_dir: str = Field(
        default="~/.cache/shadowrl/tasks",
        description="Where sdists, workspaces and test envs are built.",
    )
    shaping: ShapingConfig = Field(default_factory=ShapingConfig, description="Reward shaping.")
