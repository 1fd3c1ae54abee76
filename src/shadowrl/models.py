"""Model loading: Hugging Face directories, GGUF files and the bundled SmolLM2."""

from pydantic import BaseModel, ConfigDict, Field


class ModelConfig(BaseModel):
    """Which policy weights to load and how."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        "smollm2",
        description="'smollm2' (bundled SmolLM2-135M-Instruct), 'tiny' (random, for tests), "
        "a Hugging Face directory or a .gguf file.",
    )
    dtype: str = Field("float32", description="'float32' or 'bfloat16'.")
    device: str = Field("cpu", description="'cpu', 'cuda' or 'cuda:N'.")
