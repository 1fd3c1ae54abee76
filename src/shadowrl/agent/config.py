"""Agent loop settings."""

from pydantic import BaseModel, ConfigDict, Field


class AgentConfig(BaseModel):
    """Budgets and rendering of one agent episode (same for serve, train and eval)."""

    model_config = ConfigDict(extra="forbid")
    max_turns: int = Field(12, description="Assistant turns before the episode is cut off.")
    max_new_tokens: int = Field(384, description="Tokens the model may generate per turn.")
    max_context_tokens: int = Field(4096, description="Context window the episode may fill.")
    max_episode_tokens: int = Field(3072, description="Generated tokens per episode, all turns.")
    tool_output_chars: int = Field(4000, description="Cap on one tool result shown to the model.")
    run_timeout_s: float = Field(30.0, description="Wall-clock limit of one `run` tool call.")
    episode_timeout_s: float = Field(600.0, description="Wall-clock limit of one episode.")
    temperature: float = Field(1.0, description="Sampling temperature (0 = greedy).")
    top_p: float = Field(1.0, description="Nucleus sampling mass.")
