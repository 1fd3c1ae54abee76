"""Agent loop settings: the budgets and prompt of one episode.

The same section drives `serve`, `train` and `eval`, so a model is trained under
exactly the budgets and tools it is later served with.
"""

from pydantic import BaseModel, ConfigDict, Field

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


class AgentConfig(BaseModel):
    """Budgets and rendering of one agent episode (same for serve, train and eval)."""

    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(6, description="Assistant turns before the episode is cut off.")
    max_new_tokens: int = Field(256, description="Tokens the model may generate per turn.")
    max_context_tokens: int = Field(4096, description="Context window the episode may fill.")
    max_episode_tokens: int = Field(3072, description="Generated tokens per episode, all turns.")
    tool_output_chars: int = Field(4000, description="Cap on one tool result shown to the model.")
    run_timeout_s: float = Field(30.0, description="Wall-clock limit of one `run` tool call.")
    episode_timeout_s: float = Field(600.0, description="Wall-clock limit of one episode.")
    temperature: float = Field(1.0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(1.0, description="Nucleus sampling mass.")
    tools: tuple[str, ...] = Field(
        DEFAULT_TOOLS, description="Names of the tools offered to the model (see agent.tools)."
    )
    system_prompt: str = Field(
        DEFAULT_SYSTEM_PROMPT, description="System message; keep it short, every token is paid."
    )
    read_file_lines: int = Field(200, description="Most lines one read_file call returns.")
    grep_max_hits: int = Field(50, description="Most matching lines one grep call returns.")
