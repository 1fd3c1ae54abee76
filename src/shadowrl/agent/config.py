"""Agent loop settings: the budgets and prompt of one episode.

The same section drives `serve`, `train` and `eval`, so a model is trained under
exactly the budgets and tools it is later served with.
"""

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_TOOLS = (
    "read_file",
    "edit_file",
    "write_file",
    "list_dir",
    "grep",
    "semantic_search",
    "lint",
    "run",
    "submit",
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in a repository. Use the tools to inspect and edit "
    "files and run commands. Make the smallest correct change, check it, then call submit."
)


# Tokens the summary request message and its template wrapping take (measured ~40 on SmolLM2).
SUMMARY_REQUEST_TOKENS = 64
# "Well below the trigger": a fresh segment's worst case may fill at most this share of it.
SUMMARY_HEADROOM = 0.75


class SummaryConfig(BaseModel):
    """Self-summarisation: when the context grows past `trigger_tokens` the model writes a
    summary that replaces its history, and the episode goes on as a new segment."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(False, description="Summarise instead of running out of context.")
    trigger_tokens: int = Field(
        1792, gt=0, description="Context length at which the loop asks for a summary."
    )
    max_tokens: int = Field(192, gt=0, description="Most tokens one summary may take.")
    carried_result_tokens: int = Field(
        128, ge=0, description="Cap on the most recent tool result carried into a new segment."
    )
    prompt_reserve_tokens: int = Field(
        768,
        gt=0,
        description="Worst case of the system prompt with tool schemas (~650 on SmolLM2) "
        "plus the task: what every new segment starts with before the summary.",
    )

    def segment_worst_case(self, max_new_tokens: int) -> int:
        """Tokens a new segment holds after its first reply, at worst."""
        return (
            self.prompt_reserve_tokens
            + self.max_tokens
            + self.carried_result_tokens
            + max_new_tokens
        )


class AgentConfig(BaseModel):
    """Budgets and rendering of one agent episode (same for serve, train and eval)."""

    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(6, ge=1, description="Assistant turns before the episode is cut off.")
    max_new_tokens: int = Field(
        160,
        ge=1,
        description="Tokens the model may generate per turn (the expert demonstrations' longest "
        "turn is 128; a base model that rambles spends every turn's budget).",
    )
    max_context_tokens: int = Field(4096, ge=1, description="Context window the episode may fill.")
    max_episode_tokens: int = Field(
        3072, ge=1, description="Generated tokens per episode, all turns."
    )
    tool_output_chars: int = Field(
        4000, ge=1, description="Cap on one tool result shown to the model."
    )
    run_timeout_s: float = Field(30.0, gt=0, description="Wall-clock limit of one `run` tool call.")
    episode_timeout_s: float = Field(600.0, gt=0, description="Wall-clock limit of one episode.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    tools: tuple[str, ...] = Field(
        DEFAULT_TOOLS, description="Names of the tools offered to the model (see agent.tools)."
    )
    system_prompt: str = Field(
        DEFAULT_SYSTEM_PROMPT, description="System message; keep it short, every token is paid."
    )
    read_file_lines: int = Field(200, ge=1, description="Most lines one read_file call returns.")
    grep_max_hits: int = Field(50, ge=1, description="Most matching lines one grep call returns.")
    summary: SummaryConfig = Field(
        default_factory=SummaryConfig, description="Self-summarisation (off by default)."
    )

    @model_validator(mode="after")
    def _summary_fits(self) -> Self:
        """A summary must fit before the context is full, and a fresh segment must start
        well below the trigger, or the model would summarise every turn."""
        s = self.summary
        if "summarize" in self.tools and not s.enabled:
            raise ValueError("agent.tools offers `summarize` but agent.summary.enabled is false")
        if not s.enabled:
            return self
        need = s.trigger_tokens + SUMMARY_REQUEST_TOKENS + s.max_tokens
        if need > self.max_context_tokens:
            raise ValueError(
                f"agent.summary: trigger_tokens ({s.trigger_tokens}) + request "
                f"({SUMMARY_REQUEST_TOKENS}) + max_tokens ({s.max_tokens}) = {need} exceeds "
                f"max_context_tokens ({self.max_context_tokens})"
            )
        worst = s.segment_worst_case(self.max_new_tokens)
        if worst > SUMMARY_HEADROOM * s.trigger_tokens:
            raise ValueError(
                f"agent.summary: a new segment's worst case (prompt_reserve_tokens "
                f"{s.prompt_reserve_tokens} + max_tokens {s.max_tokens} + carried_result_tokens "
                f"{s.carried_result_tokens} + max_new_tokens {self.max_new_tokens} = {worst}) "
                f"must stay under {SUMMARY_HEADROOM:.0%} of trigger_tokens ({s.trigger_tokens})"
            )
        return self
